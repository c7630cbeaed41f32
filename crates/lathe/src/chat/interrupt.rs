//! Ctrl-C as a stream of interrupts: the first stops the current turn (running commands are
//! killed through cancellation), the second exits.

use std::io::Write;
use std::sync::Arc;

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

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

/// Ends the process at once after a second Ctrl-C: running commands are killed first (the tool
/// session's shutdown), the stored session is marked interrupted, so nothing is left behind.
pub fn exit_now(tools: &Arc<Session>, store: &Store, id: &SessionId) -> ! {
    tools.shutdown();
    if let Err(err) = store.update_session_status(id, SessionStatus::Interrupted) {
        tracing::warn!("cannot mark session {id} interrupted: {err}");
    }
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err);
    let _ = err.flush();
    std::process::exit(EXIT_INTERRUPTED)
}
