//! A session's two append-only logs: messages (the model-facing history) and events (every
//! user-visible step, in the order shown).

use rusqlite::types::Type;
use rusqlite::{Row, TransactionBehavior, params};
use serde::Serialize;

use crate::{Result, SessionId, Store, Timestamp, ensure_session, touch};

/// One message of a session's history.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Message {
    /// Its place in the session's messages: 1, 2, 3, ... with no gaps.
    pub seq: u64,
    /// Who said it (`system`, `user`, `assistant`, `tool`).
    pub role: String,
    /// The message as the agent stored it.
    pub body: serde_json::Value,
    /// When it was stored.
    pub created_at: Timestamp,
}

/// One event of a session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Event {
    /// Its place in the session's events: 1, 2, 3, ... with no gaps.
    pub seq: u64,
    /// What happened (`turn_started`, `text_delta`, ...).
    pub kind: String,
    /// The event's data as the agent stored it.
    pub payload: serde_json::Value,
    /// When it was stored.
    pub created_at: Timestamp,
}

/// The SQL of one log table. Table names cannot be parameters, so each log spells its own.
struct Log {
    /// Params: session, label, JSON, time. The next seq is computed inside the statement, and
    /// the statement runs inside a write transaction, so no two writers can take the same one.
    append: &'static str,
    /// Params: session.
    read: &'static str,
}

const MESSAGES: Log = Log {
    append: "INSERT INTO messages (session_id, seq, role, body, created_at) \
             SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4 FROM messages WHERE session_id = ?1 \
             RETURNING seq",
    read: "SELECT seq, role, body, created_at FROM messages WHERE session_id = ?1 ORDER BY seq",
};

const EVENTS: Log = Log {
    append: "INSERT INTO events (session_id, seq, kind, payload, created_at) \
             SELECT ?1, coalesce(max(seq), 0) + 1, ?2, ?3, ?4 FROM events WHERE session_id = ?1 \
             RETURNING seq",
    read: "SELECT seq, kind, payload, created_at FROM events WHERE session_id = ?1 ORDER BY seq",
};

impl Store {
    /// Appends a message to a session's history and returns its seq (1 for the first).
    ///
    /// Fails with [`Error::NoSession`](crate::Error::NoSession) if the session does not exist.
    pub fn append_message(
        &self,
        session: &SessionId,
        role: &str,
        body: &serde_json::Value,
    ) -> Result<u64> {
        self.append(&MESSAGES, session, role, body)
    }

    /// A session's messages, in order.
    pub fn messages(&self, session: &SessionId) -> Result<Vec<Message>> {
        self.read(&MESSAGES, session, |row| {
            Ok(Message {
                seq: seq_column(row, 0)?,
                role: row.get(1)?,
                body: json_column(row, 2)?,
                created_at: row.get(3)?,
            })
        })
    }

    /// Appends an event to a session and returns its seq (1 for the first).
    ///
    /// Fails with [`Error::NoSession`](crate::Error::NoSession) if the session does not exist.
    pub fn append_event(
        &self,
        session: &SessionId,
        kind: &str,
        payload: &serde_json::Value,
    ) -> Result<u64> {
        self.append(&EVENTS, session, kind, payload)
    }

    /// A session's events, in order.
    pub fn events(&self, session: &SessionId) -> Result<Vec<Event>> {
        self.read(&EVENTS, session, |row| {
            Ok(Event {
                seq: seq_column(row, 0)?,
                kind: row.get(1)?,
                payload: json_column(row, 2)?,
                created_at: row.get(3)?,
            })
        })
    }

    fn append(
        &self,
        log: &Log,
        session: &SessionId,
        label: &str,
        json: &serde_json::Value,
    ) -> Result<u64> {
        let json = serde_json::to_string(json)?;
        let now = Timestamp::now();
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        touch(&tx, session, now)?;
        let seq = tx
            .prepare_cached(log.append)?
            .query_row(params![session, label, json, now], |row| seq_column(row, 0))?;
        tx.commit()?;
        Ok(seq)
    }

    fn read<T>(
        &self,
        log: &Log,
        session: &SessionId,
        map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>> {
        let mut conn = self.conn();
        // One snapshot for the check and the rows.
        let tx = conn.transaction()?;
        ensure_session(&tx, session)?;
        let rows = tx
            .prepare_cached(log.read)?
            .query_map([session], map)?
            .collect::<rusqlite::Result<_>>()?;
        tx.commit()?;
        Ok(rows)
    }
}

/// Reads a JSON text column; a value that does not parse is reported with its column.
pub(crate) fn json_column(row: &Row<'_>, index: usize) -> rusqlite::Result<serde_json::Value> {
    let text = row.get_ref(index)?.as_str()?;
    serde_json::from_str(text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(e)))
}

/// Reads a sequence number: SQLite integers are signed, ours never are.
fn seq_column(row: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    let value: i64 = row.get(index)?;
    u64::try_from(value).map_err(|_| rusqlite::Error::IntegralValueOutOfRange(index, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, NewSession};
    use serde_json::json;

    fn store_with_session() -> (Store, SessionId) {
        let store = Store::open_in_memory().unwrap();
        let id = store
            .create_session(NewSession {
                workspace: "/w".into(),
                ..NewSession::default()
            })
            .unwrap();
        (store, id)
    }

    #[test]
    fn messages_and_events_have_their_own_dense_seqs_per_session() {
        let (store, a) = store_with_session();
        let b = store.create_session(NewSession::default()).unwrap();
        assert_eq!(
            store.append_message(&a, "system", &json!("sys")).unwrap(),
            1
        );
        assert_eq!(
            store.append_event(&a, "turn_started", &json!({})).unwrap(),
            1
        );
        assert_eq!(
            store
                .append_message(&a, "user", &json!({"c": "hi"}))
                .unwrap(),
            2
        );
        assert_eq!(
            store
                .append_event(&b, "turn_started", &json!(null))
                .unwrap(),
            1
        );
        assert_eq!(
            store
                .append_event(&a, "text_delta", &json!({"t": "x"}))
                .unwrap(),
            2
        );

        let messages = store.messages(&a).unwrap();
        let summary: Vec<(u64, &str, &serde_json::Value)> = messages
            .iter()
            .map(|m| (m.seq, m.role.as_str(), &m.body))
            .collect();
        assert_eq!(
            summary,
            vec![
                (1, "system", &json!("sys")),
                (2, "user", &json!({"c": "hi"}))
            ]
        );
        let events = store.events(&a).unwrap();
        let kinds: Vec<(u64, &str)> = events.iter().map(|e| (e.seq, e.kind.as_str())).collect();
        assert_eq!(kinds, vec![(1, "turn_started"), (2, "text_delta")]);
        assert_eq!(events[1].payload, json!({"t": "x"}));
        assert_eq!(store.events(&b).unwrap()[0].payload, json!(null));
        assert!(store.messages(&b).unwrap().is_empty());
    }

    #[test]
    fn json_is_kept_faithfully() {
        let (store, id) = store_with_session();
        let body = json!({
            "z": 1, "a": [1.5, -2, u64::MAX, i64::MIN],
            "text": "line\nbreak \"quoted\" \u{1f980} \u{0}",
            "nested": {"empty": {}, "list": []}
        });
        store.append_message(&id, "assistant", &body).unwrap();
        let stored = &store.messages(&id).unwrap()[0].body;
        assert_eq!(stored, &body);
        // Key order is part of faithful history (requests are rebuilt from it).
        assert_eq!(
            serde_json::to_string(stored).unwrap(),
            serde_json::to_string(&body).unwrap()
        );
    }

    #[test]
    fn appending_touches_the_session() {
        let (store, id) = store_with_session();
        let before = store.session(id.as_str()).unwrap().updated_at;
        store.append_event(&id, "x", &json!({})).unwrap();
        let after = store.session(id.as_str()).unwrap().updated_at;
        assert!(after >= before);
        assert!(store.events(&id).unwrap()[0].created_at >= before);
    }

    #[test]
    fn logs_of_a_missing_session_are_errors() {
        let store = Store::open_in_memory().unwrap();
        let ghost = SessionId::from("ghost");
        let errors = [
            store
                .append_message(&ghost, "user", &json!({}))
                .unwrap_err(),
            store.append_event(&ghost, "x", &json!({})).unwrap_err(),
            store.messages(&ghost).unwrap_err(),
            store.events(&ghost).unwrap_err(),
        ];
        for err in errors {
            assert!(
                matches!(err, Error::NoSession(ref id) if id == "ghost"),
                "{err:?}"
            );
        }
    }

    #[test]
    fn corrupt_stored_json_is_an_error_not_a_panic() {
        let (store, id) = store_with_session();
        store.append_event(&id, "x", &json!({})).unwrap();
        store
            .conn()
            .execute("UPDATE events SET payload = '{broken'", [])
            .unwrap();
        let err = store.events(&id).unwrap_err();
        assert!(matches!(err, Error::Sqlite(_)), "{err:?}");
    }

    #[test]
    fn threads_sharing_a_store_get_dense_seqs() {
        let (store, id) = store_with_session();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let (store, id) = (store.clone(), id.clone());
                std::thread::spawn(move || {
                    (0..50)
                        .map(|i| store.append_event(&id, "w", &json!([t, i])).unwrap())
                        .collect::<Vec<u64>>()
                })
            })
            .collect();
        let mut seqs: Vec<u64> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=200).collect::<Vec<u64>>());
        let stored: Vec<u64> = store.events(&id).unwrap().iter().map(|e| e.seq).collect();
        assert_eq!(stored, seqs);
    }
}
