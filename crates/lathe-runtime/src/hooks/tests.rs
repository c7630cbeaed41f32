//! Project hooks with real `sh` processes: what a hook starts does not outlive it, whether it ends by
//! itself or is killed past its timeout, and it reads the same stdin and environment as ever.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;

/// A number like `1000.<pid><n>`: a valid `sleep` duration unique to this test process and call.
fn marker() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "1000.{}{:03}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `PreToolUse` hooks running `command` with `timeout` seconds in `dir`, and the notes they
/// leave.
fn hooks(dir: &Path, command: &str, timeout: u64) -> (ProjectHooks, Arc<Mutex<Vec<String>>>) {
    let config = HooksConfig {
        pre_tool_use: vec![HookGroup {
            command: Some(command.to_owned()),
            timeout: Some(timeout),
            ..HookGroup::default()
        }],
        ..HooksConfig::default()
    };
    let notes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notes);
    let hooks = ProjectHooks::new(
        &config,
        dir.to_path_buf(),
        "session-1",
        Arc::new(move |note: &str| sink.lock().unwrap().push(note.to_owned())),
    )
    .unwrap();
    (hooks, notes)
}

async fn run_pre_tool_use(hooks: &ProjectHooks) -> HookAnswer {
    hooks
        .run(
            HookEvent::PreToolUse,
            Some("shell"),
            json!({ "tool_name": "shell", "tool_input": { "command": "true" } }),
        )
        .await
}

/// The pid a hook wrote to `file`.
fn pid_in(dir: &Path, file: &str) -> i32 {
    let text = std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|e| panic!("the hook wrote no {file}: {e}"));
    text.trim()
        .parse()
        .unwrap_or_else(|e| panic!("{file} holds {text:?}: {e}"))
}

/// Whether `pid` still runs as the process we started: `kill(pid, 0)` finds it, it is no
/// zombie, and its command line still carries `marker` (so a reused pid does not count).
fn runs(pid: i32, marker: &str) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    if stat.is_empty() || state.starts_with('Z') {
        return false;
    }
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).contains(marker)
}

/// Waits (up to 10 s) for `pid` to stop running; kills it and fails if it does not.
async fn assert_gone(pid: i32, marker: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while runs(pid, marker) {
        if Instant::now() > deadline {
            // SAFETY: a plain system call on the process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("{what} (pid {pid}) outlived the hook");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_hook_leaves_running_is_killed_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    // A background job, a double fork in a session of its own, both with their output
    // elsewhere (so the hook's pipes close at its end), and a hook that exits 0 at once.
    let command = format!(
        "sleep {m}1 >/dev/null 2>&1 & echo $! > job.pid; \
         (setsid sleep {m}2 >/dev/null 2>&1 & echo $! > daemon.pid); exit 0"
    );
    let (hooks, notes) = hooks(dir.path(), &command, 30);
    let answer = run_pre_tool_use(&hooks).await;
    assert_eq!(answer, HookAnswer::default());
    assert!(notes.lock().unwrap().is_empty(), "{:?}", notes.lock());
    assert_gone(pid_in(dir.path(), "job.pid"), &m, "the background job").await;
    assert_gone(pid_in(dir.path(), "daemon.pid"), &m, "the daemon").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_s_answer_counts_though_a_child_it_left_holds_its_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    // The child keeps the hook's stdout open: the answer is read when the hook itself ends.
    let command = format!(
        "echo '{{\"hookSpecificOutput\":{{\"additionalContext\":\"still here\"}}}}'; \
         sleep {m} & echo $! > job.pid; exit 0"
    );
    let (hooks, notes) = hooks(dir.path(), &command, 30);
    let answer = run_pre_tool_use(&hooks).await;
    assert!(notes.lock().unwrap().is_empty(), "{:?}", notes.lock());
    assert_eq!(answer.context, ["still here"]);
    assert_gone(pid_in(dir.path(), "job.pid"), &m, "the background job").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_past_its_timeout_is_killed_with_every_child() {
    let dir = tempfile::tempdir().unwrap();
    let m = marker();
    // A child in the hook's group, one in a session of its own, an orphan of a subshell; the
    // hook waits for ever.
    let command = format!(
        "sleep {m}1 & echo $! > job.pid; \
         setsid sleep {m}2 & echo $! > session.pid; \
         (sleep {m}3 & echo $! > orphan.pid); \
         wait"
    );
    let (hooks, notes) = hooks(dir.path(), &command, 2);
    let answer = run_pre_tool_use(&hooks).await;
    assert_eq!(answer, HookAnswer::default());
    let notes = notes.lock().unwrap().clone();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains(
            "ran past its timeout of 2s and was killed; the run goes on (raise `timeout` in its \
             [hooks] entry if it needs longer)"
        ),
        "{notes:?}"
    );
    assert_gone(pid_in(dir.path(), "job.pid"), &m, "the child in its group").await;
    assert_gone(
        pid_in(dir.path(), "session.pid"),
        &m,
        "the child in a new session",
    )
    .await;
    assert_gone(
        pid_in(dir.path(), "orphan.pid"),
        &m,
        "the subshell's orphan",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hook_reads_the_event_on_stdin_in_this_process_s_environment() {
    let dir = tempfile::tempdir().unwrap();
    // `/proc/$$/environ` is the environment the shell was started with, before it changed any.
    let (hooks, notes) = hooks(
        dir.path(),
        "cat > input.json; cat /proc/$$/environ > environ; pwd > cwd; \
         echo 'not this way' >&2; exit 2",
        30,
    );
    let answer = run_pre_tool_use(&hooks).await;
    assert!(notes.lock().unwrap().is_empty(), "{:?}", notes.lock());
    assert_eq!(answer.block.as_deref(), Some("not this way"));
    let input: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("input.json")).unwrap())
            .unwrap();
    assert_eq!(input["session_id"], "session-1");
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "shell");
    assert_eq!(input["tool_input"]["command"], "true");
    assert_eq!(input["cwd"], dir.path().to_str().unwrap());
    let cwd = std::fs::read_to_string(dir.path().join("cwd")).unwrap();
    assert_eq!(
        Path::new(cwd.trim()).canonicalize().unwrap(),
        dir.path().canonicalize().unwrap()
    );
    // This process's environment, as it is: nothing removed, nothing changed; the only entry
    // added is the mark that finds the hook's processes.
    let mut ours: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .map(|(k, v)| (k.into_encoded_bytes(), v.into_encoded_bytes()))
        .collect();
    ours.sort();
    let environ = std::fs::read(dir.path().join("environ")).unwrap();
    let mut seen: Vec<(Vec<u8>, Vec<u8>)> = environ
        .split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let at = entry.iter().position(|&b| b == b'=').unwrap_or(entry.len());
            (
                entry[..at].to_vec(),
                entry.get(at + 1..).unwrap_or_default().to_vec(),
            )
        })
        .filter(|(name, _)| {
            !name.starts_with(b"LATHE_CMD_") || ours.iter().any(|(ours, _)| ours == name)
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen.iter()
            .map(|(k, v)| format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            ))
            .collect::<Vec<_>>(),
        ours.iter()
            .map(|(k, v)| format!(
                "{}={}",
                String::from_utf8_lossy(k),
                String::from_utf8_lossy(v)
            ))
            .collect::<Vec<_>>()
    );
}
