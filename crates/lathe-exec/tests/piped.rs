//! `Supervisor::run_piped`: a program fed on stdin, its stdout and stderr apart, and nothing it
//! starts outliving it: not what it leaves running when it ends, not its tree past the timeout,
//! not when the caller drops the run or the session ends.

use std::ffi::OsString;
use std::time::Duration;

use lathe_exec::{CommandStatus, ExecError, KillReason, PipedSpec};

use crate::common::{marker, processes_with, sleeps_with, supervisor, wait_until};

fn sh(command: &str) -> PipedSpec {
    PipedSpec::new("sh", "/").arg("-c").arg(command)
}

fn assert_no_survivors(m: &str) {
    let left = processes_with(m);
    assert!(left.is_empty(), "processes survived: {left:#?}");
}

/// The entries of an environment block (`/proc/<pid>/environ`), sorted, without the
/// supervisor's mark.
fn entries(block: &[u8]) -> Vec<String> {
    let mut entries: Vec<String> = block
        .split(|&b| b == 0)
        .filter(|entry| !entry.is_empty())
        .map(|entry| String::from_utf8_lossy(entry).into_owned())
        .collect();
    entries.sort();
    entries
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_goes_in_and_stdout_and_stderr_come_back_apart() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let out = sup
        .run_piped(sh("cat; echo oops >&2; echo after; exit 3").stdin(b"hello\n".to_vec()))
        .await
        .unwrap();
    assert_eq!(out.status, CommandStatus::Exited { code: 3 });
    assert_eq!(out.stdout, b"hello\nafter\n");
    assert_eq!(out.stderr, b"oops\n");
    assert_eq!(out.killed, 0);
    // A program that never reads its stdin is no error, whatever the size of the input.
    let out = sup
        .run_piped(sh("echo ignored").stdin(vec![b'x'; 1 << 20]))
        .await
        .unwrap();
    assert_eq!(out.status, CommandStatus::Exited { code: 0 });
    assert_eq!(out.stdout, b"ignored\n");
    // No artifact: the state directory stays empty.
    assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_this_process_s_or_exactly_the_one_given() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let mark = |entry: &String| entry.starts_with("LATHE_CMD_");
    // `/proc/$$/environ`: what the shell was started with, before it changed anything.
    let out = sup.run_piped(sh("cat /proc/$$/environ")).await.unwrap();
    let (marks, seen): (Vec<String>, Vec<String>) =
        entries(&out.stdout).into_iter().partition(mark);
    let ours: Vec<String> = {
        let mut ours: Vec<String> = std::env::vars_os()
            .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
            .filter(|entry| !mark(entry))
            .collect();
        ours.sort();
        ours
    };
    assert_eq!(seen, ours);
    assert_eq!(marks.len(), 1, "{marks:?}");
    let given = vec![(OsString::from("ONLY"), OsString::from("this one"))];
    let out = sup
        .run_piped(
            PipedSpec::new("/bin/sh", "/")
                .arg("-c")
                .arg("cat /proc/$$/environ")
                .env(given),
        )
        .await
        .unwrap();
    let (marks, seen): (Vec<String>, Vec<String>) =
        entries(&out.stdout).into_iter().partition(mark);
    assert_eq!(seen, ["ONLY=this one"]);
    assert_eq!(marks.len(), 1, "{marks:?}");
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_past_the_cap_is_not_kept() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let out = sup
        .run_piped(sh("head -c 300000 /dev/zero; head -c 5000 /dev/zero >&2").output_cap(1000))
        .await
        .unwrap();
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(out.stderr.len(), 1000);
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_program_leaves_running_is_killed_when_it_ends() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    // The background job keeps stdout and stderr open: the call still returns when the shell
    // exits, with its output.
    let out = sup
        .run_piped(sh(&format!(
            "sleep {m}1 & \
             (sleep {m}2 &) ; \
             nohup sleep {m}3 >/dev/null 2>&1 & \
             setsid sleep {m}4 & \
             sh -c '(setsid sleep {m}5 &) &' ; \
             bash -c 'trap \"\" TERM; exec sleep {m}6' & \
             echo started"
        )))
        .await
        .unwrap();
    assert_eq!(out.status, CommandStatus::Exited { code: 0 });
    assert_eq!(out.stdout, b"started\n");
    assert!(out.killed >= 6, "{out:?}");
    assert_no_survivors(&m);
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_timeout_the_whole_tree_is_killed() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let out = sup
        .run_piped(
            sh(&format!(
                "sleep {m}1 & setsid sleep {m}2 & (sleep {m}3 &); echo started; wait"
            ))
            .timeout(Duration::from_secs(1)),
        )
        .await
        .unwrap();
    assert_eq!(
        out.status,
        CommandStatus::TimedOut {
            limit: Duration::from_secs(1)
        }
    );
    assert_eq!(out.stdout, b"started\n");
    assert_no_survivors(&m);
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_run_kills_the_tree() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let mut run = Box::pin(sup.run_piped(sh(&format!("setsid sleep {m}1 & sleep {m}2"))));
    tokio::select! {
        out = &mut run => panic!("ended by itself: {out:?}"),
        started = wait_until(|| sleeps_with(&m) == 2) => assert!(started),
    }
    drop(run);
    assert_no_survivors(&m);
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_end_of_the_session_kills_a_running_program_and_refuses_more() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let (out, ()) = tokio::join!(
        sup.run_piped(sh(&format!("setsid sleep {m}1 & sleep {m}2"))),
        async {
            assert!(wait_until(|| sleeps_with(&m) == 2).await);
            sup.shutdown().await;
        }
    );
    assert_eq!(
        out.unwrap().status,
        CommandStatus::Killed {
            reason: KillReason::Shutdown
        }
    );
    assert_no_survivors(&m);
    assert!(matches!(
        sup.run_piped(sh("true")).await,
        Err(ExecError::ShutDown)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_that_cannot_start_is_a_spawn_error_with_the_system_s_reason() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    for spec in [
        PipedSpec::new("/nonexistent/program", "/"),
        PipedSpec::new("sh", state.path().join("missing")),
    ] {
        match sup.run_piped(spec).await {
            Err(ExecError::Spawn { source, .. }) => {
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound, "{source}");
            }
            other => panic!("{other:?}"),
        }
    }
    sup.shutdown().await;
}
