//! The sink's writer thread: the only place a sink touches SQLite or calls the user interface.
//! It takes one record at a time off the channel, saves it, then (for an event) shows it, so the
//! order records were sent in is the order they are stored and shown in.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Mutex, MutexGuard, PoisonError};

use lathe_store::{SessionId, SessionStatus, Store};

use super::{EventHandler, Unsaved};
use crate::events::Event;
use crate::message::Message;

/// One thing for the writer to do, in the order it was sent.
pub(super) enum Op {
    /// Store an event, then show it.
    Event(Event),
    /// Store a message of the history.
    Message(Message),
    /// Set the stored session's status.
    Status(SessionStatus),
    /// Answer once everything sent before has been done.
    Flush(Done),
    /// Stop (the last handle is gone); nothing is sent after this.
    Close,
}

/// Who waits for a flush.
pub(super) enum Done {
    /// An async caller.
    Async(tokio::sync::oneshot::Sender<()>),
    /// A blocking caller.
    Blocking(SyncSender<()>),
}

impl Done {
    fn send(self) {
        // A caller that stopped waiting has nothing left to hear.
        match self {
            Done::Async(tx) => {
                let _ = tx.send(());
            }
            Done::Blocking(tx) => {
                let _ = tx.send(());
            }
        }
    }
}

/// What the writer reports back to the handles.
#[derive(Default)]
pub(super) struct Report {
    inner: Mutex<ReportInner>,
}

#[derive(Default)]
struct ReportInner {
    unsaved: Option<Unsaved>,
    /// A panic of the user interface, to raise again in the emitting code.
    panic: Option<Box<dyn Any + Send>>,
}

impl Report {
    fn lock(&self) -> MutexGuard<'_, ReportInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn unsaved(&self) -> Option<Unsaved> {
        self.lock().unsaved.clone()
    }

    pub(super) fn take_panic(&self) -> Option<Box<dyn Any + Send>> {
        self.lock().panic.take()
    }

    /// Counts a failure; true for the first one.
    fn failed(&self, error: &str) -> bool {
        let mut inner = self.lock();
        match &mut inner.unsaved {
            Some(unsaved) => {
                unsaved.count += 1;
                false
            }
            None => {
                inner.unsaved = Some(Unsaved {
                    count: 1,
                    first_error: error.to_owned(),
                });
                true
            }
        }
    }

    fn panicked(&self, payload: Box<dyn Any + Send>) {
        self.lock().panic.get_or_insert(payload);
    }
}

/// The writer's own state; it lives on the writer thread.
pub(super) struct Writer {
    pub(super) target: Option<(Store, SessionId)>,
    /// `None` once it panicked: it is not called again.
    pub(super) ui: Option<EventHandler>,
    pub(super) report: std::sync::Arc<Report>,
}

impl Writer {
    /// Does what arrives until told to stop.
    pub(super) fn run(mut self, ops: Receiver<Op>) {
        // Every handle sends `Close` before it lets go of the sender, so `recv` ends with it.
        while let Ok(op) = ops.recv() {
            match op {
                Op::Event(event) => {
                    self.save_event(&event);
                    self.show(&event);
                }
                Op::Message(message) => self.save_message(&message),
                Op::Status(status) => self.save_status(status),
                Op::Flush(done) => done.send(),
                Op::Close => break,
            }
        }
        if let Some(unsaved) = self.report.unsaved().filter(|u| u.count > 1) {
            tracing::warn!(
                "{} records of the session were not saved; the first failure: {}",
                unsaved.count,
                unsaved.first_error
            );
        }
    }

    fn save_event(&mut self, event: &Event) {
        let Some((store, session)) = &self.target else {
            return;
        };
        let result = match serde_json::to_value(event) {
            Ok(payload) => {
                let kind = payload["type"].as_str().unwrap_or("event").to_owned();
                store
                    .append_event(session, &kind, &payload)
                    .map(drop)
                    .map_err(|err| format!("cannot save the session's events: {err}"))
            }
            Err(err) => Err(format!("cannot encode an event: {err}")),
        };
        if let Err(message) = result {
            self.fail(message);
        }
    }

    fn save_message(&mut self, message: &Message) {
        let Some((store, session)) = &self.target else {
            return;
        };
        let result = serde_json::to_value(message)
            .map_err(|err| format!("cannot encode a message: {err}"))
            .and_then(|body| {
                let role = body["role"].as_str().unwrap_or("unknown").to_owned();
                store
                    .append_message(session, &role, &body)
                    .map(drop)
                    .map_err(|err| format!("cannot save the session's messages: {err}"))
            });
        if let Err(message) = result {
            self.fail(message);
        }
    }

    fn save_status(&mut self, status: SessionStatus) {
        let Some((store, session)) = &self.target else {
            return;
        };
        if let Err(err) = store.update_session_status(session, status) {
            self.fail(format!(
                "cannot update the status of session {session}: {err}"
            ));
        }
    }

    /// The first failure is shown as an error event (not stored: storing is what failed);
    /// every one is counted, and the count is logged at the end.
    fn fail(&mut self, message: String) {
        if self.report.failed(&message) {
            tracing::warn!("{message}");
            self.show(&Event::Error { message });
        } else {
            tracing::debug!("{message}");
        }
    }

    fn show(&mut self, event: &Event) {
        let Some(ui) = &self.ui else {
            return;
        };
        // A panic here would end the thread and with it the saving of every later event; keep
        // it for the emitting code to raise at its next flush, and stop calling the handler.
        if let Err(payload) = catch_unwind(AssertUnwindSafe(|| ui(event))) {
            self.ui = None;
            self.report.panicked(payload);
        }
    }
}
