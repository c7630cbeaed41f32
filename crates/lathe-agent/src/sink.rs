//! The one place events go: each is persisted to the session's store, then handed to the user
//! interface, so what is stored and what was shown can neither disagree nor reorder, even when
//! parallel tool calls report at once.
//!
//! [`EventSink::emit`] only sends the event down a channel; one writer thread per sink takes
//! events (and history messages and status changes) off it in the order they were sent, stores
//! each and then shows it. So no async worker waits on SQLite or on a slow terminal, and every
//! emitter, on any thread, sees one total order that the store and the user interface share.
//! [`EventSink::flush`] waits until everything sent before it has been stored and shown; the
//! executor flushes at the end of each run, and dropping the last handle drains the channel
//! and joins the thread.
//!
//! The channel is unbounded: an emitter never waits, and what a slow user interface has not
//! shown yet waits in memory (live tool output is capped per call, see
//! [`crate::runner::LIVE_OUTPUT_CAP`]).

mod writer;

use std::sync::Arc;
use std::sync::mpsc::{self, Sender};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use lathe_store::{SessionId, SessionStatus, Store};

use crate::events::Event;
use crate::message::Message;
use writer::{Done, Op, Report, Writer};

pub use crate::stored::{stored_history, stored_history_seqs};

/// What the user interface does with an event (print it, forward it, collect it). It is called
/// on the sink's writer thread, one event at a time, each after it was stored.
pub type EventHandler = Arc<dyn Fn(&Event) + Send + Sync>;

/// Records a sink could not save (events, messages, status changes), counted since it started.
/// The first failure is also shown once, as an [`Event::Error`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsaved {
    /// How many records were lost.
    pub count: u64,
    /// Why the first one was.
    pub first_error: String,
}

/// What every handle of one sink shares.
struct Shared {
    ops: Sender<Op>,
    target: Option<(Store, SessionId)>,
    report: Arc<Report>,
    writer: Option<JoinHandle<()>>,
    writer_id: ThreadId,
    /// The seq of the newest message recorded (stored, or queued to be).
    recorded: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn send(&self, op: Op) {
        // The writer stops only after `Close`, which is sent when the last handle is dropped.
        if self.ops.send(op).is_err() {
            tracing::error!("the event writer thread is gone; an event was lost");
        }
    }

    fn on_writer_thread(&self) -> bool {
        std::thread::current().id() == self.writer_id
    }

    /// Raises again, in the calling code, a panic of the user interface.
    fn raise_panic(&self) {
        if let Some(payload) = self.report.take_panic() {
            std::panic::resume_unwind(payload);
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = self.ops.send(Op::Close);
        // The writer cannot wait for itself (a handler that kept the last handle).
        if self.on_writer_thread() {
            return;
        }
        if let Some(writer) = self.writer.take()
            && writer.join().is_err()
        {
            tracing::error!("the event writer thread panicked");
        }
        if !std::thread::panicking() {
            self.raise_panic();
        }
    }
}

/// Persists events and hands them to the user interface, through one writer thread. Cheap to
/// clone; clones share the thread and its order. The thread ends, after it has done everything
/// sent to it, when the last clone is dropped (which waits for it).
#[derive(Clone)]
pub struct EventSink {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink")
            .field("session", &self.session().map(|id| id.to_string()))
            .finish_non_exhaustive()
    }
}

impl EventSink {
    /// A sink that stores events in `session` of `store`, then hands them to `ui`.
    pub fn new(store: Store, session: SessionId, ui: EventHandler) -> Self {
        Self::build(Some((store, session)), ui)
    }

    /// A sink that only hands events to `ui` (benchmarks, sub-steps that are not recorded).
    pub fn detached(ui: EventHandler) -> Self {
        Self::build(None, ui)
    }

    fn build(target: Option<(Store, SessionId)>, ui: EventHandler) -> Self {
        let recorded = target
            .as_ref()
            .and_then(|(store, id)| store.messages(id).ok())
            .and_then(|rows| rows.last().map(|row| row.seq))
            .unwrap_or(0);
        let (ops, rx) = mpsc::channel();
        let report = Arc::new(Report::default());
        let writer = Writer {
            target: target.clone(),
            ui: Some(ui),
            report: Arc::clone(&report),
        };
        let thread = std::thread::Builder::new()
            .name("lathe-events".into())
            .spawn(move || writer.run(rx))
            .expect("cannot start the event writer thread");
        EventSink {
            shared: Arc::new(Shared {
                ops,
                target,
                report,
                writer_id: thread.thread().id(),
                writer: Some(thread),
                recorded: std::sync::atomic::AtomicU64::new(recorded),
            }),
        }
    }

    /// The session events are stored in, if any.
    pub fn session(&self) -> Option<SessionId> {
        self.shared.target.as_ref().map(|(_, id)| id.clone())
    }

    /// The store, if any.
    pub fn store(&self) -> Option<Store> {
        self.shared.target.as_ref().map(|(store, _)| store.clone())
    }

    /// Queues `event` to be stored, then shown; returns at once. A store that fails is reported
    /// once, as an error event shown (and not stored, as storing is what failed), and counted
    /// in [`EventSink::unsaved`]; the run goes on.
    pub fn emit(&self, event: Event) {
        self.shared.send(Op::Event(event));
    }

    /// Queues `message` for the session's stored history (no-op when detached). The role is the
    /// message's own; the body is the whole message as JSON, so it reads back as a [`Message`].
    pub fn record_message(&self, message: &Message) {
        if self.shared.target.is_some() {
            self.shared
                .recorded
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.shared.send(Op::Message(message.clone()));
        }
    }

    /// The seq the newest recorded message has (or will have, once stored) in the session's
    /// history: 0 before the first, and always 0 when detached.
    pub fn recorded_messages(&self) -> u64 {
        self.shared
            .recorded
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Queues a change of the stored session's status (no-op when detached), in order with the
    /// events: a run's last events are stored before the status that ends it.
    pub fn update_status(&self, status: SessionStatus) {
        if self.shared.target.is_some() {
            self.shared.send(Op::Status(status));
        }
    }

    /// Waits until everything emitted or recorded before this call (by any clone, on any
    /// thread) has been stored and shown. Raises here a panic of the user interface.
    ///
    /// Called from the user interface itself it returns at once, as it cannot wait for itself.
    pub async fn flush(&self) {
        if self.shared.on_writer_thread() {
            return;
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.shared.send(Op::Flush(Done::Async(tx)));
        // An error means the writer is gone: nothing is left to wait for.
        let _ = rx.await;
        self.shared.raise_panic();
    }

    /// [`EventSink::flush`] for code that is not async (exit paths, tests): blocks the calling
    /// thread for at most `limit`, and says whether everything was done within it. Raises here
    /// a panic of the user interface.
    pub fn flush_within(&self, limit: Duration) -> bool {
        if self.shared.on_writer_thread() {
            return false;
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.shared.send(Op::Flush(Done::Blocking(tx)));
        let done = rx.recv_timeout(limit).is_ok();
        self.shared.raise_panic();
        done
    }

    /// What could not be saved so far, if anything (after [`EventSink::flush`], everything
    /// emitted before it is counted).
    pub fn unsaved(&self) -> Option<Unsaved> {
        self.shared.report.unsaved()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;
    use std::path::PathBuf;
    use std::sync::Mutex;
    use std::time::Instant;

    use super::*;
    use lathe_store::NewSession;

    /// Long enough for anything these tests wait for, on a loaded machine.
    const PATIENCE: Duration = Duration::from_secs(30);

    /// A store on a file of its own, with one session.
    struct Db {
        _dir: tempfile::TempDir,
        path: PathBuf,
        store: Store,
        id: SessionId,
    }

    fn db() -> Db {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.sqlite3");
        let store = Store::open(&path).unwrap();
        let id = store
            .create_session(NewSession {
                workspace: "/w".into(),
                provider: "ollama".into(),
                model: "m".into(),
                approval: "ask".into(),
                ..NewSession::default()
            })
            .unwrap();
        Db {
            _dir: dir,
            path,
            store,
            id,
        }
    }

    /// A handler that keeps what it was shown.
    fn collector() -> (EventHandler, Arc<Mutex<Vec<Event>>>) {
        let shown = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&shown);
        let handler: EventHandler = Arc::new(move |e: &Event| seen.lock().unwrap().push(e.clone()));
        (handler, shown)
    }

    fn text(text: impl Into<String>) -> Event {
        Event::TextDelta { text: text.into() }
    }

    fn stored(store: &Store, id: &SessionId) -> Vec<Event> {
        store
            .events(id)
            .unwrap()
            .into_iter()
            .map(|row| serde_json::from_value(row.payload).unwrap())
            .collect()
    }

    #[test]
    fn each_event_is_stored_before_it_is_shown() {
        let db = db();
        let check_store = db.store.clone();
        let check_id = db.id.clone();
        let shown = Arc::new(Mutex::new(0));
        let count = Arc::clone(&shown);
        let sink = EventSink::new(
            db.store.clone(),
            db.id.clone(),
            Arc::new(move |event: &Event| {
                let stored = stored(&check_store, &check_id);
                assert_eq!(stored.last(), Some(event));
                *count.lock().unwrap() += 1;
            }),
        );
        for i in 0..20 {
            sink.emit(text(i.to_string()));
        }
        assert!(sink.flush_within(PATIENCE));
        assert_eq!(*shown.lock().unwrap(), 20);
        assert_eq!(db.store.events(&db.id).unwrap()[0].kind, "text_delta");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_emitters_share_one_order_in_the_store_and_the_ui() {
        const TASKS: usize = 16;
        const EACH: usize = 100;
        let db = db();
        let (ui, shown) = collector();
        let sink = EventSink::new(db.store.clone(), db.id.clone(), ui);
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let sink = sink.clone();
                tokio::spawn(async move {
                    for i in 0..EACH {
                        sink.emit(text(format!("{t}-{i}")));
                        if i % 7 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        sink.flush().await;
        let stored = stored(&db.store, &db.id);
        assert_eq!(stored.len(), TASKS * EACH);
        assert_eq!(*shown.lock().unwrap(), stored);
        // Each emitter's own events keep the order it emitted them in.
        for t in 0..TASKS {
            let prefix = format!("{t}-");
            let mine: Vec<usize> = stored
                .iter()
                .filter_map(|e| match e {
                    Event::TextDelta { text } => text.strip_prefix(&prefix)?.parse().ok(),
                    _ => None,
                })
                .collect();
            assert_eq!(mine, (0..EACH).collect::<Vec<_>>(), "emitter {t}");
        }
    }

    #[tokio::test]
    async fn after_a_flush_another_connection_sees_everything_sent_before() {
        let db = db();
        let (ui, shown) = collector();
        let sink = EventSink::new(db.store.clone(), db.id.clone(), ui);
        for i in 0..50 {
            sink.emit(text(i.to_string()));
        }
        sink.record_message(&Message::user("u"));
        sink.update_status(SessionStatus::Completed);
        sink.flush().await;
        // What `lathe sessions show` in another process would read.
        let reader = Store::open(&db.path).unwrap();
        assert_eq!(stored(&reader, &db.id).len(), 50);
        assert_eq!(
            stored_history(&reader, &db.id).unwrap(),
            [Message::user("u")]
        );
        assert_eq!(
            reader.session(db.id.as_str()).unwrap().status,
            SessionStatus::Completed
        );
        assert_eq!(shown.lock().unwrap().len(), 50);
        assert_eq!(sink.unsaved(), None);
    }

    #[test]
    fn emit_does_not_wait_for_a_handler_that_blocks() {
        const EVENTS: usize = 1000;
        let db = db();
        let (entered_tx, entered) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let released = Mutex::new(released);
        let (collect, shown) = collector();
        let sink = EventSink::new(
            db.store.clone(),
            db.id.clone(),
            Arc::new(move |event: &Event| {
                if shown_first(event) {
                    let _ = entered_tx.send(());
                    let _ = released.lock().unwrap().recv_timeout(PATIENCE);
                }
                collect(event);
            }),
        );
        let started = Instant::now();
        for i in 0..EVENTS {
            sink.emit(text(i.to_string()));
        }
        let emitting = started.elapsed();
        entered.recv_timeout(PATIENCE).unwrap();
        // The handler is stuck on the first event, which was stored before it was shown; the
        // emitter went on regardless.
        assert_eq!(db.store.events(&db.id).unwrap().len(), 1);
        assert!(emitting < Duration::from_secs(5), "{emitting:?}");
        release.send(()).unwrap();
        assert!(sink.flush_within(PATIENCE));
        let shown = shown.lock().unwrap();
        assert_eq!(shown.len(), EVENTS);
        assert_eq!(*shown, stored(&db.store, &db.id));
    }

    fn shown_first(event: &Event) -> bool {
        matches!(event, Event::TextDelta { text } if text == "0")
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a synchronous test")]
    fn dropping_the_last_handle_stores_and_shows_what_is_queued() {
        let db = db();
        let (collect, shown) = collector();
        // A slow terminal, so that the queue is still full when the handles go.
        let sink = EventSink::new(
            db.store.clone(),
            db.id.clone(),
            Arc::new(move |event: &Event| {
                std::thread::sleep(Duration::from_micros(200));
                collect(event);
            }),
        );
        let other = sink.clone();
        for i in 0..100 {
            sink.emit(text(format!("a{i}")));
            other.emit(text(format!("b{i}")));
        }
        other.record_message(&Message::assistant("done"));
        drop(other);
        drop(sink);
        let stored = stored(&db.store, &db.id);
        assert_eq!(stored.len(), 200);
        assert_eq!(*shown.lock().unwrap(), stored);
        assert_eq!(stored_history(&db.store, &db.id).unwrap().len(), 1);
    }

    #[test]
    fn messages_round_trip_through_the_store() {
        let db = db();
        let sink = EventSink::new(db.store.clone(), db.id.clone(), Arc::new(|_: &Event| {}));
        let history = vec![
            Message::system("s"),
            Message::user("u"),
            Message::assistant("a"),
        ];
        for message in &history {
            sink.record_message(message);
        }
        assert!(sink.flush_within(PATIENCE));
        assert_eq!(stored_history(&db.store, &db.id).unwrap(), history);
        assert_eq!(db.store.messages(&db.id).unwrap()[1].role, "user");
    }

    #[test]
    fn a_failing_store_is_reported_once_counted_and_events_still_shown() {
        let db = db();
        let missing: SessionId = {
            let other = Store::open_in_memory().unwrap();
            other.create_session(NewSession::default()).unwrap()
        };
        let (ui, shown) = collector();
        let sink = EventSink::new(db.store.clone(), missing, ui);
        sink.emit(text("a"));
        sink.emit(text("b"));
        sink.record_message(&Message::user("u"));
        sink.update_status(SessionStatus::Completed);
        assert!(sink.flush_within(PATIENCE));
        let shown = shown.lock().unwrap();
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert!(
            matches!(&shown[0], Event::Error { message } if message.contains("cannot save the session's events")),
            "{shown:?}"
        );
        assert_eq!(shown[1..], [text("a"), text("b")]);
        let unsaved = sink.unsaved().unwrap();
        assert_eq!(unsaved.count, 4);
        assert!(
            unsaved.first_error.contains("no session matches"),
            "{unsaved:?}"
        );
    }

    #[test]
    fn a_panicking_handler_is_raised_at_the_next_flush_and_storing_goes_on() {
        let db = db();
        let (collect, shown) = collector();
        let sink = EventSink::new(
            db.store.clone(),
            db.id.clone(),
            Arc::new(move |event: &Event| {
                if *event == text("boom") {
                    panic!("the terminal is gone");
                }
                collect(event);
            }),
        );
        for event in ["a", "boom", "c"] {
            sink.emit(text(event));
        }
        let raised =
            std::panic::catch_unwind(AssertUnwindSafe(|| sink.flush_within(PATIENCE))).unwrap_err();
        assert_eq!(raised.downcast_ref::<&str>(), Some(&"the terminal is gone"));
        assert_eq!(stored(&db.store, &db.id).len(), 3);
        assert_eq!(*shown.lock().unwrap(), [text("a")]);
        // Raised once; the sink goes on storing.
        sink.emit(text("d"));
        assert!(sink.flush_within(PATIENCE));
        assert_eq!(stored(&db.store, &db.id).len(), 4);
    }

    #[test]
    fn a_handler_that_flushes_does_not_wait_for_itself() {
        let (collect, shown) = collector();
        let inner: Arc<Mutex<Option<EventSink>>> = Arc::default();
        let held = Arc::clone(&inner);
        let sink = EventSink::detached(Arc::new(move |event: &Event| {
            collect(event);
            if *event == text("ping")
                && let Some(sink) = held.lock().unwrap().take()
            {
                sink.emit(text("pong"));
                assert!(!sink.flush_within(PATIENCE));
            }
        }));
        *inner.lock().unwrap() = Some(sink.clone());
        sink.emit(text("ping"));
        // The first flush may overtake "pong", which is sent while "ping" is shown.
        assert!(sink.flush_within(PATIENCE));
        assert!(sink.flush_within(PATIENCE));
        assert_eq!(*shown.lock().unwrap(), [text("ping"), text("pong")]);
    }
}
