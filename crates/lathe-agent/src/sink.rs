//! The one place events go: each is persisted to the session's store, then handed to the user
//! interface, under one lock, so what is stored and what was shown can neither disagree nor
//! reorder, even when parallel tool calls report at once.

use std::sync::{Arc, Mutex, PoisonError};

use lathe_store::{SessionId, Store};

use crate::events::Event;
use crate::message::Message;

/// What the user interface does with an event (print it, forward it, collect it).
pub type EventHandler = Arc<dyn Fn(&Event) + Send + Sync>;

struct Inner {
    target: Option<(Store, SessionId)>,
    ui: EventHandler,
    /// The first persistence failure, reported once to the user.
    failed: bool,
}

/// Persists events and hands them to the user interface. Cheap to clone; clones share one lock.
#[derive(Clone)]
pub struct EventSink {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let inner = self.lock();
        f.debug_struct("EventSink")
            .field(
                "session",
                &inner.target.as_ref().map(|(_, id)| id.to_string()),
            )
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
        EventSink {
            inner: Arc::new(Mutex::new(Inner {
                target,
                ui,
                failed: false,
            })),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session events are stored in, if any.
    pub fn session(&self) -> Option<SessionId> {
        self.lock().target.as_ref().map(|(_, id)| id.clone())
    }

    /// The store, if any.
    pub fn store(&self) -> Option<Store> {
        self.lock().target.as_ref().map(|(store, _)| store.clone())
    }

    /// Stores `event`, then shows it. A store that fails is reported once, as an error event
    /// shown (and not stored, as storing is what failed); the run goes on.
    pub fn emit(&self, event: Event) {
        let mut inner = self.lock();
        let mut failure = None;
        if let Some((store, session)) = &inner.target {
            match serde_json::to_value(&event) {
                Ok(payload) => {
                    let kind = payload["type"].as_str().unwrap_or("event").to_owned();
                    if let Err(err) = store.append_event(session, &kind, &payload) {
                        failure = Some(format!("cannot save the session's events: {err}"));
                    }
                }
                Err(err) => failure = Some(format!("cannot encode an event: {err}")),
            }
        }
        if let Some(message) = failure.filter(|_| !inner.failed) {
            inner.failed = true;
            tracing::warn!("{message}");
            (inner.ui)(&Event::Error { message });
        }
        (inner.ui)(&event);
    }

    /// Appends `message` to the session's stored history (no-op when detached). The role is the
    /// message's own; the body is the whole message as JSON, so it reads back as a [`Message`].
    pub fn record_message(&self, message: &Message) {
        let inner = self.lock();
        let Some((store, session)) = &inner.target else {
            return;
        };
        let result = serde_json::to_value(message)
            .map_err(|e| e.to_string())
            .and_then(|body| {
                let role = body["role"].as_str().unwrap_or("unknown").to_owned();
                store
                    .append_message(session, &role, &body)
                    .map_err(|e| e.to_string())
            });
        if let Err(err) = result {
            tracing::warn!("cannot save a message of session {session}: {err}");
        }
    }
}

/// The stored history of `session`, as messages (rows that do not read back are skipped with a
/// warning: a newer Lathe may have written them).
pub fn stored_history(store: &Store, session: &SessionId) -> lathe_store::Result<Vec<Message>> {
    let rows = store.messages(session)?;
    Ok(rows
        .into_iter()
        .filter_map(|row| match serde_json::from_value::<Message>(row.body) {
            Ok(message) => Some(message),
            Err(err) => {
                tracing::warn!("skipping message {} of session {session}: {err}", row.seq);
                None
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_store::NewSession;

    fn store_and_session() -> (Store, SessionId) {
        let store = Store::open_in_memory().unwrap();
        let id = store
            .create_session(NewSession {
                workspace: "/w".into(),
                provider: "ollama".into(),
                model: "m".into(),
                approval: "ask".into(),
                ..NewSession::default()
            })
            .unwrap();
        (store, id)
    }

    #[test]
    fn events_are_stored_then_shown_in_the_same_order() {
        let (store, id) = store_and_session();
        let shown = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&shown);
        let check_store = store.clone();
        let check_id = id.clone();
        let sink = EventSink::new(
            store.clone(),
            id.clone(),
            Arc::new(move |event: &Event| {
                // Stored before it is shown.
                let stored = check_store.events(&check_id).unwrap();
                assert_eq!(
                    stored.last().unwrap().payload,
                    serde_json::to_value(event).unwrap()
                );
                seen.lock()
                    .unwrap()
                    .push(serde_json::to_value(event).unwrap());
            }),
        );
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let sink = sink.clone();
                std::thread::spawn(move || {
                    for i in 0..25 {
                        sink.emit(Event::TextDelta {
                            text: format!("{t}-{i}"),
                        });
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        let stored: Vec<_> = store
            .events(&id)
            .unwrap()
            .into_iter()
            .map(|e| e.payload)
            .collect();
        assert_eq!(stored.len(), 100);
        assert_eq!(*shown.lock().unwrap(), stored);
        assert_eq!(store.events(&id).unwrap()[0].kind, "text_delta");
    }

    #[test]
    fn messages_round_trip_through_the_store() {
        let (store, id) = store_and_session();
        let sink = EventSink::new(store.clone(), id.clone(), Arc::new(|_: &Event| {}));
        let history = vec![
            Message::system("s"),
            Message::user("u"),
            Message::assistant("a"),
        ];
        for message in &history {
            sink.record_message(message);
        }
        assert_eq!(stored_history(&store, &id).unwrap(), history);
        assert_eq!(store.messages(&id).unwrap()[1].role, "user");
    }

    #[test]
    fn a_failing_store_is_reported_once_and_events_still_shown() {
        let (store, _) = store_and_session();
        let missing: SessionId = {
            let other = Store::open_in_memory().unwrap();
            other.create_session(NewSession::default()).unwrap()
        };
        let shown = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&shown);
        let sink = EventSink::new(
            store,
            missing,
            Arc::new(move |e: &Event| seen.lock().unwrap().push(e.clone())),
        );
        sink.emit(Event::TextDelta { text: "a".into() });
        sink.emit(Event::TextDelta { text: "b".into() });
        let shown = shown.lock().unwrap();
        assert_eq!(shown.len(), 3, "{shown:?}");
        assert!(matches!(&shown[0], Event::Error { message } if message.contains("cannot save")));
    }
}
