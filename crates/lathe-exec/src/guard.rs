//! The guard: a small process that kills a supervisor's commands if this process dies without
//! ending them (SIGKILL, a crash, an abort), when none of our own cleanup can run.
//!
//! # Why a separate process
//!
//! `PR_SET_PDEATHSIG` on a command reaches only its shell, not what the shell started, and it
//! fires when the *thread* that forked dies, which in an async runtime is not this process's
//! end. A cgroup would do, but needs a delegated cgroup subtree we usually do not have. So each
//! supervisor starts, 20 ms after its first command (see [`START_DELAY`]), one `sh` holding the
//! read end of a pipe whose write end only this process holds (close-on-exec: commands never
//! inherit it). The kernel closes that end however we end. The guard then reads either `done`
//! (the supervisor ended normally, after killing everything itself: the guard just exits) or
//! end of file (we died): it kills, with SIGKILL, every process whose environment carries the
//! supervisor's tag, and repeats until a scan finds none, so that processes forked meanwhile die
//! too.
//!
//! The guard is in our session but its own process group, so the terminal's Ctrl-C and hang-up
//! (sent to the foreground group) do not end it, and the orphan sweep and reaper of the `tree`
//! module (which take only processes outside our session) leave it alone. Processes that
//! cleared their environment escape it; that is the price of having no cgroup.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// How long a session runs before its guard starts. A shell's start costs about a millisecond
/// of CPU, which on a small machine is a quarter of what a whole one-shot `lathe tool shell`
/// call costs; a session that ends sooner (most one-shot calls do) needs no guard, since it
/// kills its commands itself. The price is a window at the very start of a session in which a
/// SIGKILL of this process would leave its commands running.
const START_DELAY: std::time::Duration = std::time::Duration::from_millis(20);

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
    /// without the tag: the guard must not find itself). The shell starts after
    /// [`START_DELAY`], unless released before, on a thread of its own (off the path of the
    /// command being started); that thread then waits for the release and reaps the guard.
    pub(crate) fn start(
        fallback_shell: &Path,
        env: &[(OsString, OsString)],
        tag_name: &str,
    ) -> std::io::Result<Guard> {
        // The script is POSIX: the system's `sh` (often dash) starts faster than bash.
        let shell = Some(Path::new("/bin/sh"))
            .filter(|sh| sh.exists())
            .unwrap_or(fallback_shell)
            .to_owned();
        let env = env.to_vec();
        let tag_name = tag_name.to_owned();
        let (release, released) = std::sync::mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("lathe-guard".to_owned())
            .spawn(move || {
                // A session that ends within the delay has killed its commands itself.
                if !matches!(
                    released.recv_timeout(START_DELAY),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                ) {
                    return;
                }
                let spawned = Command::new(&shell)
                    .arg("-c")
                    .arg(SCRIPT)
                    .arg("lathe-guard")
                    .arg(&tag_name)
                    .env_clear()
                    .envs(env)
                    .current_dir("/")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .process_group(0)
                    .spawn();
                let mut child = match spawned {
                    Ok(child) => child,
                    Err(error) => {
                        tracing::warn!(
                            "cannot start the guard that kills commands if lathe is killed \
                             ({}): {error}",
                            shell.display()
                        );
                        return;
                    }
                };
                // A release, or the supervisor gone without one: either way it ended normally.
                let _ = released.recv();
                if let Some(mut stdin) = child.stdin.take() {
                    let _ = stdin.write_all(b"done\n");
                }
                let _ = child.wait();
            })?;
        Ok(Guard { release })
    }

    /// Tells the guard that everything is dead already; it exits at once, and its thread reaps
    /// it. Nothing waits for either.
    pub(crate) fn release(self) {
        let _ = self.release.send(());
    }
}
