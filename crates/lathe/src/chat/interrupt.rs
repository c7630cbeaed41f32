//! Ctrl-C as a stream of interrupts: the first stops the current turn (running commands are
//! killed through cancellation), the second exits. "Second" means within a few seconds and with
//! nothing typed in between ([`Rearm`]).

use std::io::Write;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio_util::sync::CancellationToken;

use lathe_agent::sink::EventSink;
use lathe_runtime::Session;
use lathe_store::SessionStatus;

/// Exit code after an interrupt, as shells report SIGINT.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Interrupts as they arrive.
pub struct Interrupts {
    rx: UnboundedReceiver<()>,
}

impl Interrupts {
    /// Starts listening for Ctrl-C (SIGINT). From now on SIGINT no longer kills the process.
    ///
    /// The handler is in place when this returns: the line editor sets a SIGINT handler of its
    /// own while it reads a line and puts back the one it found, so this must come first.
    pub fn listen() -> Self {
        let (tx, rx) = unbounded_channel();
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(mut signals) => {
                tokio::spawn(async move {
                    while signals.recv().await.is_some() {
                        if tx.send(()).is_err() {
                            break;
                        }
                    }
                });
            }
            Err(err) => tracing::warn!("cannot listen for Ctrl-C: {err}"),
        }
        Interrupts { rx }
    }

    /// The next interrupt.
    pub async fn next(&mut self) {
        if self.rx.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// How long a Ctrl-C waits for the second one that exits.
pub const REARM_WINDOW: Duration = Duration::from_secs(3);

/// For tests only: the re-arm window in milliseconds, instead of [`REARM_WINDOW`].
pub const REARM_WINDOW_ENV: &str = "LATHE_CHAT_CTRL_C_WINDOW_MS";

/// The "press Ctrl-C again to exit" state: set by a Ctrl-C, it lasts [`REARM_WINDOW`] and ends
/// at any other input, so that a Ctrl-C long after the last one (to clear a draft, say) does
/// not exit.
#[derive(Debug)]
pub struct Rearm {
    window: Duration,
    since: Option<Instant>,
}

impl Rearm {
    /// Not armed; the window from [`REARM_WINDOW_ENV`] when set.
    pub fn new() -> Self {
        let window = std::env::var(REARM_WINDOW_ENV)
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(REARM_WINDOW);
        Rearm {
            window,
            since: None,
        }
    }

    /// A Ctrl-C: the next one within the window exits.
    pub fn arm(&mut self) {
        self.since = Some(Instant::now());
    }

    /// Other input: the next Ctrl-C is a first one again.
    pub fn disarm(&mut self) {
        self.since = None;
    }

    /// Whether a Ctrl-C now is the second one.
    pub fn armed(&self) -> bool {
        self.since
            .is_some_and(|since| since.elapsed() < self.window)
    }
}

impl Default for Rearm {
    fn default() -> Self {
        Rearm::new()
    }
}

/// How long ending the session waits for the events queued before it to be saved: a second
/// Ctrl-C means now, and a terminal that stopped reading must not hold the exit up.
const EXIT_DRAIN: Duration = Duration::from_secs(2);

/// Kills the session's commands (the tool session's shutdown) and marks the stored session
/// interrupted, after the events emitted so far, so that nothing is left behind and
/// `lathe sessions` tells the truth.
fn end_interrupted(tools: &Session, sink: &EventSink) {
    super::input::restore_terminal();
    tools.shutdown();
    sink.update_status(SessionStatus::Interrupted);
    // On the way out a panic of the terminal renderer (raised again by the flush) must not
    // stop the exit.
    let saved = catch_unwind(AssertUnwindSafe(|| sink.flush_within(EXIT_DRAIN))).unwrap_or(false);
    if saved {
        return;
    }
    // The writer is stuck (on a terminal that stopped reading): mark the session directly.
    if let (Some(store), Some(id)) = (sink.store(), sink.session())
        && let Err(err) = store.update_session_status(&id, SessionStatus::Interrupted)
    {
        tracing::warn!("cannot mark session {id} interrupted: {err}");
    }
}

/// Ends the process at once after a second Ctrl-C, ending the session first.
pub fn exit_now(tools: &Arc<Session>, sink: &EventSink) -> ! {
    end_interrupted(tools, sink);
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err);
    let _ = err.flush();
    std::process::exit(EXIT_INTERRUPTED)
}

/// SIGTERM or SIGHUP end the session as a second Ctrl-C does, with the signal's exit code.
/// `run` is cancelled first, so that the agent asks the model nothing more meanwhile.
pub fn end_on_termination(
    tools: Arc<Session>,
    sink: EventSink,
    run: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    lathe_config::signals::exit_on_termination(move || {
        run.cancel();
        end_interrupted(&tools, &sink);
    })
}
