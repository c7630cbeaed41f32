//! Ctrl-C as a stream of interrupts: the first stops the current turn (running commands are
//! killed through cancellation), the second exits.

use std::io::Write;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use lathe_store::{SessionId, SessionStatus, Store};
use lathe_tools::Session;

/// Exit code after an interrupt, as shells report SIGINT.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Interrupts as they arrive.
pub struct Interrupts {
    rx: UnboundedReceiver<()>,
}

impl Interrupts {
    /// Starts listening for Ctrl-C (SIGINT). From now on SIGINT no longer kills the process.
    pub fn listen() -> Self {
        let (tx, rx) = unbounded_channel();
        tokio::spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        Interrupts { rx }
    }

    /// The next interrupt.
    pub async fn next(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// Kills the session's commands (the tool session's shutdown) and marks the stored session
/// interrupted, so that nothing is left behind and `lathe sessions` tells the truth.
fn end_interrupted(tools: &Session, store: &Store, id: &SessionId) {
    tools.shutdown();
    if let Err(err) = store.update_session_status(id, SessionStatus::Interrupted) {
        tracing::warn!("cannot mark session {id} interrupted: {err}");
    }
}

/// Ends the process at once after a second Ctrl-C, ending the session first.
pub fn exit_now(tools: &Arc<Session>, store: &Store, id: &SessionId) -> ! {
    end_interrupted(tools, store, id);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err);
    let _ = err.flush();
    std::process::exit(EXIT_INTERRUPTED)
}

/// SIGTERM or SIGHUP end the session as a second Ctrl-C does, with the signal's exit code.
/// `run` is cancelled first, so that the agent asks the model nothing more meanwhile.
pub fn end_on_termination(
    tools: Arc<Session>,
    store: Store,
    id: SessionId,
    run: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    crate::signals::exit_on_termination(move || {
        run.cancel();
        end_interrupted(&tools, &store, &id);
    })
}
