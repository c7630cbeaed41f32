//! Finishing a command: the output pipe drained within a bound whatever leftovers hold it, and
//! an artifact that cannot be written reported without losing the result.

use lathe_exec::{CommandSpec, CommandStatus, KillOutcome};
use tokio_util::sync::CancellationToken;

use crate::common::{self, builder, marker, sleeps_with, supervisor, wait_until};

fn never() -> CancellationToken {
    CancellationToken::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_grandchild_holding_the_pipe_does_not_hang() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let spec = CommandSpec::new(format!("sleep {m} & echo started"), "/");
    let report = sup.run(spec, &never()).await.unwrap();
    // It returned while the sleep still runs: it did not wait for the pipe to close.
    assert_eq!(report.status, CommandStatus::Exited { code: 0 });
    assert_eq!(report.preview.head, "started\n");
    assert!(
        wait_until(|| sleeps_with(&m) == 1).await,
        "the background sleep is still running"
    );
    sup.shutdown().await;
    assert_eq!(sleeps_with(&m), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_output_of_a_leftover_still_reaches_the_artifact() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let spec = CommandSpec::new("(sleep 0.3; echo late) & echo early", "/");
    let report = sup.run(spec, &never()).await.unwrap();
    assert_eq!(report.preview.head, "early\n");
    let id = report.id;
    assert!(
        wait_until(|| std::fs::read(&report.artifact.path).unwrap_or_default() == b"early\nlate\n")
            .await
    );
    let page = sup.read_output(id, 0, None).await.unwrap();
    assert_eq!(page.bytes, b"early\nlate\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_printing_without_pause_does_not_hold_the_result() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path()).artifact_cap(1 << 20).build().unwrap();
    let m = marker();
    let spec = CommandSpec::new(
        format!("bash -c 'exec -a yes-{m} yes leftover' & sleep 0.3; echo started"),
        "/",
    );
    let report = sup.run(spec, &never()).await.unwrap();
    // Returned (after at most the drain bound) while `yes` keeps writing into the pipe.
    assert_eq!(report.status, CommandStatus::Exited { code: 0 });
    assert!(report.total_bytes > 1 << 20, "{}", report.total_bytes);
    assert!(report.preview.head.starts_with("leftover\n"));
    let outcome = sup.kill(report.id).await.unwrap();
    assert!(
        matches!(
            outcome,
            KillOutcome::AlreadyFinished {
                leftovers_killed: 1,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert!(common::processes_with(&format!("yes-{m}")).is_empty());
    assert_eq!(
        std::fs::metadata(&report.artifact.path).unwrap().len(),
        1 << 20,
        "the artifact stops at its cap"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_artifact_that_cannot_be_written_is_reported_not_fatal() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    // The next command is number 1; a directory in the way makes its artifact unwritable.
    std::fs::create_dir(state.path().join("cmd-1")).unwrap();
    let report = sup
        .run(CommandSpec::new("seq 1 5000", "/"), &never())
        .await
        .unwrap();
    assert_eq!(report.status, CommandStatus::Exited { code: 0 });
    assert!(report.artifact.error.is_some());
    assert!(report.preview.head.starts_with("1\n2\n"));
    assert!(report.preview.tail.ends_with("5000\n"));
    let page = sup.read_output(report.id, 0, None).await.unwrap();
    assert!(page.bytes.is_empty());
}
