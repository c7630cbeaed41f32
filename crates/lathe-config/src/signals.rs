//! Signals that end the process. Commands run in their own sessions and process groups, so a
//! signal sent to Lathe (by `timeout`, a closed terminal, a client stopping its server, `kill`)
//! never reaches them: each command of the binary listens for these and kills what it started
//! before it exits, as it would at a normal end.

use std::sync::atomic::{AtomicI32, Ordering};

use tokio::signal::unix::{Signal, SignalKind, signal};

/// The termination signal being acted on, 0 while none.
static TERMINATED_BY: AtomicI32 = AtomicI32::new(0);

/// The exit code the process owes a termination signal it received (128 + its number), if it
/// received one: whichever of the signal's cleanup and the normal end finishes first, the
/// process reports the signal.
pub fn exit_code() -> Option<u8> {
    match TERMINATED_BY.load(Ordering::SeqCst) {
        0 => None,
        signo => u8::try_from(128 + signo).ok(),
    }
}

/// The signals that ask a process to end: SIGTERM and SIGHUP. (SIGINT is Ctrl-C, which each
/// command treats in its own way; SIGKILL cannot be caught.)
pub const TERMINATION: [SignalKind; 2] = [SignalKind::terminate(), SignalKind::hangup()];

/// Signals being listened for. From its creation on, they no longer end the process by their
/// default action: they are queued here.
pub struct Listener {
    streams: Vec<(SignalKind, Signal)>,
}

/// Starts listening for `kinds`. A kind the runtime refuses is logged and left out.
pub fn listen(kinds: &[SignalKind]) -> Listener {
    let mut streams = Vec::new();
    for &kind in kinds {
        match signal(kind) {
            Ok(stream) => streams.push((kind, stream)),
            Err(err) => tracing::warn!("cannot listen for signal {kind:?}: {err}"),
        }
    }
    Listener { streams }
}

impl Listener {
    /// Waits for the first signal and returns its number (for ever if none could be listened
    /// for).
    pub async fn recv(mut self) -> i32 {
        if self.streams.is_empty() {
            return std::future::pending().await;
        }
        let waits = self.streams.iter_mut().map(|(kind, stream)| {
            let signo = kind.as_raw_value();
            Box::pin(async move {
                stream.recv().await;
                signo
            })
        });
        let (signo, _, _) = futures::future::select_all(waits).await;
        tracing::info!("signal {signo} received; ending");
        signo
    }
}

/// From now on, SIGTERM or SIGHUP runs `cleanup` (which must kill every command started) and
/// exits with 128 + the signal's number, as a shell reports a process ended by it. Abort the
/// returned task when the work is done and the normal end does its own cleanup.
pub fn exit_on_termination(cleanup: impl FnOnce() + Send + 'static) -> tokio::task::JoinHandle<()> {
    // Listening starts before this returns, so a signal right after cannot be missed.
    let listener = listen(&TERMINATION);
    tokio::spawn(async move {
        let signo = listener.recv().await;
        TERMINATED_BY.store(signo, Ordering::SeqCst);
        // The cleanup waits for the commands to die (a grace period after SIGTERM): off the
        // async workers.
        let _ = tokio::task::spawn_blocking(cleanup).await;
        std::process::exit(128 + signo);
    })
}
