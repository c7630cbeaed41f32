//! Running a search as a tool call: on a blocking thread that the call's cancellation stops.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use lathe_runtime::tool::{ToolError, ToolResult};

/// The stop signal a search checks between files and between reads. A plain atomic: checking
/// a [`CancellationToken`] takes a lock, which the search threads would contend for on every
/// file; the call's token is relayed to it once, when it fires.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stop(Arc<AtomicBool>);

impl Stop {
    /// True once the call was cancelled.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// After a cancellation, how long a search thread is given to notice it and stop; it checks
/// the token between files and between reads, so this is only reached on a stuck file system.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs a search on a blocking thread (never on the async runtime) and waits for it, or for the
/// call to be cancelled: then the search's [`Stop`] is set, it stops by itself, and its own
/// result (which says it was cancelled and how far it got) is returned when it arrives in time.
pub(crate) async fn run_blocking<F>(
    tool: &'static str,
    cancel: &CancellationToken,
    job: F,
) -> ToolResult
where
    F: FnOnce(&Stop) -> ToolResult + Send + 'static,
{
    let stop = Stop::default();
    if cancel.is_cancelled() {
        stop.set();
    }
    let job_stop = stop.clone();
    let mut handle = tokio::task::spawn_blocking(move || job(&job_stop));
    let joined = tokio::select! {
        joined = &mut handle => joined,
        () = cancel.cancelled() => {
            stop.set();
            match tokio::time::timeout(CANCEL_GRACE, &mut handle).await {
                Ok(joined) => joined,
                Err(_) => return Err(ToolError::new(format!("{tool} was cancelled"))),
            }
        }
    };
    match joined {
        Ok(output) => output,
        Err(err) => {
            let what = match err.try_into_panic() {
                Ok(panic) => panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_else(|| "unknown panic".to_owned()),
                Err(err) => err.to_string(),
            };
            Err(ToolError::new(format!(
                "internal error in `{tool}`: {what}. This is a bug in Lathe, not in the call; try another way"
            )))
        }
    }
}
