//! Killing is total: no process of a command survives a hard timeout, cancellation, a kill, or
//! the end of the session, however it forked. Checked by scanning `/proc` for markers.

use std::time::Duration;

use lathe_exec::{CommandSpec, CommandStatus, KillOutcome, KillReason};
use tokio_util::sync::CancellationToken;

use crate::common::{builder, marker, processes_with, sleeps_with, supervisor, wait_until};

/// Sleeps that escape in every common way, all carrying `m`, plus one in the foreground:
/// a plain background job, a subshell's orphan (double fork), nohup, setsid (its own session),
/// setsid inside a double fork, one that ignores SIGTERM, and one with an emptied environment
/// in its own session.
fn escaping_tree(m: &str) -> String {
    format!(
        "sleep {m}1 & \
         (sleep {m}2 &) ; \
         nohup sleep {m}3 >/dev/null 2>&1 & \
         setsid sleep {m}4 & \
         sh -c '(setsid sleep {m}5 &) &' ; \
         bash -c 'trap \"\" TERM; exec sleep {m}6' & \
         setsid env -i sleep {m}7 & \
         echo tree-started; sleep {m}8"
    )
}

const TREE_SLEEPS: usize = 8;

fn assert_no_survivors(m: &str) {
    let left = processes_with(m);
    assert!(left.is_empty(), "processes survived: {left:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_timeout_kills_the_whole_tree() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path())
        .command_timeout(Some(Duration::from_secs(2)))
        .build()
        .unwrap();
    let m = marker();
    let report = sup
        .run(
            CommandSpec::new(escaping_tree(&m), "/"),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        matches!(report.status, CommandStatus::TimedOut { .. }),
        "{:?}",
        report.status
    );
    assert_eq!(report.preview.head, "tree-started\n");
    assert_no_survivors(&m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_the_whole_tree() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watched = m.clone();
    tokio::spawn(async move {
        wait_until(|| sleeps_with(&watched) == TREE_SLEEPS).await;
        trigger.cancel();
    });
    let report = sup
        .run(CommandSpec::new(escaping_tree(&m), "/"), &cancel)
        .await
        .unwrap();
    assert_eq!(
        report.status,
        CommandStatus::Killed {
            reason: KillReason::Cancelled
        }
    );
    assert_no_survivors(&m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_command_kills_the_whole_tree() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let report = sup
        .run(
            CommandSpec::new(escaping_tree(&m), "/").background(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert!(
        wait_until(|| sleeps_with(&m) == TREE_SLEEPS).await,
        "{:#?}",
        processes_with(&m)
    );
    let outcome = sup.kill(report.id).await.unwrap();
    assert!(
        matches!(
            outcome,
            KillOutcome::Killed {
                status: CommandStatus::Killed { .. },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_no_survivors(&m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_a_finished_command_takes_its_leftovers() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let report = sup
        .run(
            CommandSpec::new(
                format!("sleep {m}1 & (nohup sleep {m}2 >/dev/null 2>&1 &); setsid sleep {m}3 &"),
                "/",
            ),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(report.status, CommandStatus::Exited { code: 0 });
    assert!(wait_until(|| sleeps_with(&m) == 3).await);
    let outcome = sup.kill(report.id).await.unwrap();
    assert_eq!(
        outcome,
        KillOutcome::AlreadyFinished {
            id: report.id,
            status: CommandStatus::Exited { code: 0 },
            leftovers_killed: 3
        }
    );
    assert_no_survivors(&m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_end_kills_running_commands_and_leftovers() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let (running, finished) = (marker(), marker());
    let spec = CommandSpec::new(escaping_tree(&running), "/").background();
    sup.run(spec, &CancellationToken::new()).await.unwrap();
    // A finished command whose background children outlived it.
    let spec = CommandSpec::new(
        format!("sleep {finished}1 & setsid sleep {finished}2 &"),
        "/",
    );
    sup.run(spec, &CancellationToken::new()).await.unwrap();
    assert!(wait_until(|| sleeps_with(&running) == TREE_SLEEPS).await);
    assert!(wait_until(|| sleeps_with(&finished) == 2).await);
    sup.shutdown().await;
    assert_no_survivors(&running);
    assert_no_survivors(&finished);
    let statuses: Vec<_> = sup.list().into_iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        [
            CommandStatus::Killed {
                reason: KillReason::Shutdown
            },
            CommandStatus::Exited { code: 0 }
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_supervisor_kills_everything() {
    let state = tempfile::tempdir().unwrap();
    let m = marker();
    {
        let sup = supervisor(state.path());
        let spec =
            CommandSpec::new(escaping_tree(&m), "/").soft_timeout(Duration::from_millis(300));
        let report = sup.run(spec, &CancellationToken::new()).await.unwrap();
        assert!(report.status.is_running());
        assert!(wait_until(|| sleeps_with(&m) == TREE_SLEEPS).await);
    }
    assert_no_survivors(&m);
}
