//! The guard: a small process that kills a supervisor's commands if this process dies without
//! ending them (SIGKILL, a crash, an abort), when none of our own cleanup can run.
//!
//! # Why a separate process
//!
//! `PR_SET_PDEATHSIG` on a command reaches only its shell, not what the shell started, and it
//! fires when the *thread* that forked dies, which in an async runtime is not this process's
//! end. A cgroup would do, but needs a delegated cgroup subtree we usually do not have. So each
//! supervisor starts, before its first command (or, for one-shot use, a moment after it: see
//! [`crate::SupervisorBuilder::guard_delay`]), one `sh` holding the read end of a pipe whose
//! write end only this process holds (close-on-exec: commands never inherit it). The kernel
//! closes that end however we end. The guard then reads either `done` (the supervisor ended
//! normally, after killing everything itself: the guard just exits) or end of file (we died):
//! it kills, with SIGKILL, every process whose environment carries the supervisor's tag, and
//! repeats until a scan finds none, so that processes forked meanwhile die too.
//!
//! The guard is in our session but its own process group, so the terminal's Ctrl-C and hang-up
//! (sent to the foreground group) do not end it, and the orphan sweep and reaper of the `tree`
//! module (which take only processes outside our session) leave it alone. Processes that
//! cleared their environment escape it; that is the price of having no cgroup.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The guard's program, run by `sh -c SCRIPT lathe-guard TAG_NAME`. `grep -z` reads each environment
/// entry as one record, so `^TAG=` matches the entry's start only.
const SCRIPT: &str = r#"# lathe guard: kills the session's commands if lathe dies without ending them
IFS= read -r word || word=
[ "$word" = done ] && exit 0
rounds=0
while [ "$rounds" -lt 100 ]; do
    found=
    for file in $(LC_ALL=C grep -lzas -e "^$1=" /proc/[0-9]*/environ); do
        pid=${file#/proc/}
        kill -s KILL "${pid%/environ}" 2>/dev/null && found=1
    done
    [ -n "$found" ] || exit 0
    rounds=$((rounds + 1))
done
"#;

/// A guard being started or running. [`release`](Self::release) it once the supervisor has
/// killed its commands.
#[derive(Debug)]
pub(crate) struct Guard {
    release: std::sync::mpsc::Sender<()>,
}

impl Guard {
    /// Starts the guard for commands tagged `tag_name`, with `env` (the commands' environment
    /// without the tag: the guard must not find itself). Without a `delay` the shell is
    /// started before this returns, so no command runs unguarded; with one, a thread starts it
    /// after `delay` unless released before (a session that short needs none). Either way a
    /// thread of its own then waits for the release and reaps the guard.
    pub(crate) fn start(
        fallback_shell: &Path,
        env: &[(OsString, OsString)],
        tag_name: &str,
        delay: Option<Duration>,
    ) -> std::io::Result<Guard> {
        // The script is POSIX: the system's `sh` (often dash) starts faster than bash.
        let shell = Some(Path::new("/bin/sh"))
            .filter(|sh| sh.exists())
            .unwrap_or(fallback_shell)
            .to_owned();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new().name("lathe-guard".to_owned());
        match delay {
            None => {
                let child = spawn(&shell, env, tag_name)?;
                thread.spawn(move || supervise(child, &released))?;
            }
            Some(delay) => {
                let env = env.to_vec();
                let tag_name = tag_name.to_owned();
                thread.spawn(move || {
                    if !matches!(
                        released.recv_timeout(delay),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                    ) {
                        return;
                    }
                    match spawn(&shell, &env, &tag_name) {
                        Ok(child) => supervise(child, &released),
                        Err(error) => tracing::warn!(
                            "cannot start the guard that kills commands if lathe is killed \
                             ({}): {error}",
                            shell.display()
                        ),
                    }
                })?;
            }
        }
        Ok(Guard { release })
    }

    /// Tells the guard that everything is dead already; it exits at once, and its thread reaps
    /// it. Nothing waits for either.
    pub(crate) fn release(self) {
        let _ = self.release.send(());
    }
}

fn spawn(shell: &Path, env: &[(OsString, OsString)], tag_name: &str) -> std::io::Result<Child> {
    Command::new(shell)
        .arg("-c")
        .arg(SCRIPT)
        .arg("lathe-guard")
        .arg(tag_name)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
}

/// Waits for the release (or the supervisor gone without one: either way it ended normally),
/// says `done`, and reaps the guard.
fn supervise(mut child: Child, released: &std::sync::mpsc::Receiver<()>) {
    let _ = released.recv();
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"done\n");
    }
    let _ = child.wait();
}
