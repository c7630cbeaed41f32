//! When the last supervisor of the process ends, even an orphan that cleared its environment
//! and started its own session (no mark attributes it) is killed, and every orphan re-parented
//! to us is reaped. Run alone in a child process of the test binary (`alone!`): with other
//! supervisors alive it is, rightly, left to them.

use lathe_exec::CommandSpec;
use tokio_util::sync::CancellationToken;

use crate::common::{marker, processes_with, sleeps_with, supervisor, wait_until};

/// Zombie children of this process (orphans re-parented to us and not yet reaped).
fn our_zombies() -> Vec<i32> {
    let me = std::process::id().to_string();
    let mut zombies = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.first() == Some(&"Z") && fields.get(1) == Some(&me.as_str()) {
            zombies.extend(
                entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok()),
            );
        }
    }
    zombies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn last_supervisor_kills_unmarked_orphans_and_reaps_them() {
    if !lathe_testkit::alone!().await {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    // The shell exits at once: its children are orphans, one of them with no environment.
    let spec = CommandSpec::new(
        format!("setsid env -i sleep {m}1 & (sleep {m}2 &); sleep {m}3 &"),
        "/",
    );
    sup.run(spec, &CancellationToken::new()).await.unwrap();
    assert!(
        wait_until(|| sleeps_with(&m) == 3).await,
        "{:#?}",
        processes_with(&m)
    );
    sup.shutdown().await;
    let left = processes_with(&m);
    assert!(left.is_empty(), "processes survived: {left:#?}");
    assert!(
        wait_until(|| our_zombies().is_empty()).await,
        "zombies left unreaped: {:?}",
        our_zombies()
    );
}
