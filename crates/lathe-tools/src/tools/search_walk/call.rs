//! Running a search as a tool call: on a blocking thread that the call's cancellation stops.

use tokio_util::sync::CancellationToken;

use crate::tool::ToolOutput;

/// After a cancellation, how long a search thread is given to notice it and stop; it checks
/// the token between files and between reads, so this is only reached on a stuck file system.
const CANCEL_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs a search on a blocking thread (never on the async runtime) and waits for it, or for the
/// call to be cancelled. The search sees the same token and stops by itself; its own result
/// (which says it was cancelled and how far it got) is returned when it arrives in time.
pub(crate) async fn run_blocking<F>(
    tool: &'static str,
    cancel: &CancellationToken,
    job: F,
) -> ToolOutput
where
    F: FnOnce() -> ToolOutput + Send + 'static,
{
    let mut handle = tokio::task::spawn_blocking(job);
    let joined = tokio::select! {
        joined = &mut handle => joined,
        () = cancel.cancelled() => match tokio::time::timeout(CANCEL_GRACE, &mut handle).await {
            Ok(joined) => joined,
            Err(_) => return ToolOutput::error(format!("{tool} was cancelled")),
        },
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
            ToolOutput::error(format!(
                "internal error in `{tool}`: {what}. This is a bug in Lathe, not in the call; try another way"
            ))
        }
    }
}
