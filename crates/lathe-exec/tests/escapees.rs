//! Processes that clear their environment (no tag), leave the command's session and lose their
//! parent are re-parented to us, attributed to their command, and killed with it. Run alone in
//! a child process of the test binary (`alone!`): with the commands of several supervisors
//! running, an orphan is rightly attributed to none of them.

use std::time::Duration;

use lathe_exec::{CommandSpec, KillOutcome};
use tokio_util::sync::CancellationToken;

use crate::common::{marker, processes_with, sleeps_with, supervisor, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapees_without_environment_die_with_their_command() {
    if !lathe_testkit::alone!().await {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let cancel = CancellationToken::new();

    // Finished at once: `setsid` forks (the shell leads its group), its parent exits, and the
    // orphans live on without the tag, in sessions of their own.
    for command in [
        "env -i setsid sh -c 'sleep {m}'",
        "env -i setsid sh -c '(sleep {m} &)'",
        "env -i nohup setsid sleep {m} >/dev/null 2>&1 &",
    ] {
        let m = marker();
        let spec = CommandSpec::new(command.replace("{m}", &m), "/");
        let report = sup.run(spec, &cancel).await.unwrap();
        assert!(!report.status.is_running(), "{command}");
        assert!(wait_until(|| sleeps_with(&m) == 1).await, "{command}");
        let outcome = sup.kill(report.id).await.unwrap();
        assert!(
            matches!(outcome, KillOutcome::AlreadyFinished { .. }),
            "{command}: {outcome:?}"
        );
        let left = processes_with(&m);
        assert!(left.is_empty(), "{command}: left behind: {left:#?}");
    }

    // Still running: the escapee's parent (a subshell) is gone, the command's shell is not.
    let m = marker();
    let spec = CommandSpec::new(format!("(env -i setsid sleep {m}1 &); sleep {m}2"), "/")
        .soft_timeout(Duration::from_millis(100));
    let report = sup.run(spec, &cancel).await.unwrap();
    assert!(wait_until(|| sleeps_with(&m) == 2).await);
    let outcome = sup.kill(report.id).await.unwrap();
    assert!(matches!(outcome, KillOutcome::Killed { .. }), "{outcome:?}");
    let left = processes_with(&m);
    assert!(left.is_empty(), "left behind: {left:#?}");
    sup.shutdown().await;
}
