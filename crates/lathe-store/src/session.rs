//! Sessions: creating, finding (by id or unique prefix), listing and updating them.

use std::path::PathBuf;

use rusqlite::types::{ToSql, Value};
use rusqlite::{OptionalExtension, Row, TransactionBehavior, params};
use serde::Serialize;

use crate::log::json_column;
use crate::path::{self, SqlPath};
use crate::{Error, Result, SessionId, SessionStatus, Store, Timestamp, touch};

/// How many ids an ambiguous-prefix error names.
const AMBIGUOUS_SHOWN: usize = 5;
const AMBIGUOUS_FETCH: i64 = AMBIGUOUS_SHOWN as i64 + 1;
/// A fresh id collides with an existing one about once in a million same-millisecond creations;
/// retrying a few times makes a failure practically impossible.
const ID_ATTEMPTS: usize = 8;

const COLUMNS: &str = "id, parent_id, title, workspace, provider, model, approval, status, \
                       created_at, updated_at, extra";

/// What a new session starts with. Its status is [`SessionStatus::Running`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NewSession {
    /// The workspace root it works in.
    pub workspace: PathBuf,
    /// The model provider (`ollama`, `openai`, ...).
    pub provider: String,
    /// The model name.
    pub model: String,
    /// The approval mode (`read-only`, `ask`, `auto`, `full`).
    pub approval: String,
    /// A title, if known yet; see [`Store::set_title`].
    pub title: Option<String>,
    /// The session that spawned this one, for a sub-agent.
    pub parent: Option<SessionId>,
    /// Anything else worth keeping, as JSON. By default, `null`.
    pub extra: serde_json::Value,
}

/// A stored session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Session {
    /// Its id.
    pub id: SessionId,
    /// The session that spawned it, for a sub-agent.
    pub parent: Option<SessionId>,
    /// Its title, once set.
    pub title: Option<String>,
    /// The workspace root it works in.
    #[serde(serialize_with = "path::serialize_lossy")]
    pub workspace: PathBuf,
    /// The model provider.
    pub provider: String,
    /// The model name.
    pub model: String,
    /// The approval mode it was started with.
    pub approval: String,
    /// Where it stands.
    pub status: SessionStatus,
    /// When it was created.
    pub created_at: Timestamp,
    /// When anything about it (status, title, a message, an event, a checkpoint) last changed.
    pub updated_at: Timestamp,
    /// Free-form metadata given at creation.
    pub extra: serde_json::Value,
}

impl Session {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<Session> {
        Ok(Session {
            id: row.get(0)?,
            parent: row.get(1)?,
            title: row.get(2)?,
            workspace: row.get::<_, SqlPath>(3)?.0,
            provider: row.get(4)?,
            model: row.get(5)?,
            approval: row.get(6)?,
            status: row.get(7)?,
            created_at: row.get(8)?,
            updated_at: row.get(9)?,
            extra: json_column(row, 10)?,
        })
    }
}

/// Which sessions [`Store::list_sessions`] returns. By default, all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// Only sessions in this workspace (compared exactly, as given at creation).
    pub workspace: Option<PathBuf>,
    /// At most this many, the newest first.
    pub limit: Option<usize>,
}

impl Store {
    /// Creates a session and returns its new id.
    ///
    /// Fails with [`Error::UnknownParent`] if `new.parent` names no session.
    pub fn create_session(&self, new: NewSession) -> Result<SessionId> {
        let extra = serde_json::to_string(&new.extra)?;
        let workspace = path::to_sql(&new.workspace);
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(parent) = &new.parent {
            crate::ensure_session(&tx, parent).map_err(|e| match e {
                Error::NoSession(_) => Error::UnknownParent(parent.clone()),
                other => other,
            })?;
        }
        let now = Timestamp::now();
        let mut insert = tx.prepare_cached(
            "INSERT INTO sessions (id, parent_id, title, workspace, provider, model, approval, \
             status, created_at, updated_at, extra) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?10) ON CONFLICT (id) DO NOTHING",
        )?;
        for _ in 0..ID_ATTEMPTS {
            let id = SessionId::generate(now);
            let inserted = insert.execute(params![
                id,
                new.parent,
                new.title,
                workspace,
                new.provider,
                new.model,
                new.approval,
                SessionStatus::Running,
                now,
                extra,
            ])?;
            if inserted == 1 {
                drop(insert);
                tx.commit()?;
                return Ok(id);
            }
        }
        Err(Error::NoFreeId {
            attempts: ID_ATTEMPTS,
        })
    }

    /// Sets a session's status.
    pub fn update_session_status(&self, id: &SessionId, status: SessionStatus) -> Result<()> {
        self.update_session(id, "UPDATE sessions SET status = ?2 WHERE id = ?1", &status)
    }

    /// Sets a session's title.
    pub fn set_title(&self, id: &SessionId, title: &str) -> Result<()> {
        self.update_session(id, "UPDATE sessions SET title = ?2 WHERE id = ?1", &title)
    }

    fn update_session(&self, id: &SessionId, sql: &str, value: &dyn ToSql) -> Result<()> {
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        touch(&tx, id, Timestamp::now())?;
        tx.prepare_cached(sql)?.execute(params![id, value])?;
        tx.commit()?;
        Ok(())
    }

    /// The session whose id is `query`, or whose id alone starts with `query` (case does not
    /// matter), like a git commit.
    ///
    /// Fails with [`Error::NoSession`], [`Error::AmbiguousPrefix`] or [`Error::EmptyId`].
    pub fn session(&self, query: &str) -> Result<Session> {
        if query.is_empty() {
            return Err(Error::EmptyId);
        }
        let wanted = query.to_ascii_lowercase();
        let conn = self.conn();
        let exact = conn
            .prepare_cached(&format!("SELECT {COLUMNS} FROM sessions WHERE id = ?1"))?
            .query_row([&wanted], Session::from_row)
            .optional()?;
        if let Some(session) = exact {
            return Ok(session);
        }
        // substr, not LIKE or GLOB: the query is text to match, never a pattern.
        let prefix_filter = "substr(id, 1, length(?1)) = ?1";
        let mut matches: Vec<Session> = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE {prefix_filter} ORDER BY id LIMIT ?2"
            ))?
            .query_map(params![wanted, AMBIGUOUS_FETCH], Session::from_row)?
            .collect::<rusqlite::Result<_>>()?;
        match matches.len() {
            0 => Err(Error::NoSession(query.to_owned())),
            1 => Ok(matches.remove(0)),
            _ => {
                let total: i64 = conn
                    .prepare_cached(&format!(
                        "SELECT count(*) FROM sessions WHERE {prefix_filter}"
                    ))?
                    .query_row([&wanted], |row| row.get(0))?;
                matches.truncate(AMBIGUOUS_SHOWN);
                Err(Error::AmbiguousPrefix {
                    prefix: query.to_owned(),
                    more: usize::try_from(total)
                        .unwrap_or(0)
                        .saturating_sub(matches.len()),
                    matches: matches.into_iter().map(|s| s.id).collect(),
                })
            }
        }
    }

    /// Sessions matching `filter`, the most recently created first (ids sort by creation).
    pub fn list_sessions(&self, filter: &SessionFilter) -> Result<Vec<Session>> {
        let workspace = filter
            .workspace
            .as_deref()
            .map_or(Value::Null, path::to_sql);
        // SQLite reads a negative LIMIT as "no limit".
        let limit = filter
            .limit
            .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let conn = self.conn();
        let sessions = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE ?1 IS NULL OR workspace = ?1 \
                 ORDER BY id DESC LIMIT ?2"
            ))?
            .query_map(params![workspace, limit], Session::from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(sessions)
    }

    /// The sessions whose parent is `parent` (its sub-agents), oldest first.
    pub fn children(&self, parent: &SessionId) -> Result<Vec<Session>> {
        let conn = self.conn();
        let sessions = conn
            .prepare_cached(&format!(
                "SELECT {COLUMNS} FROM sessions WHERE parent_id = ?1 ORDER BY id"
            ))?
            .query_map(params![parent.as_str()], Session::from_row)?
            .collect::<rusqlite::Result<_>>()?;
        Ok(sessions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn new(workspace: &str) -> NewSession {
        NewSession {
            workspace: workspace.into(),
            provider: "ollama".into(),
            model: "qwen3".into(),
            approval: "ask".into(),
            ..NewSession::default()
        }
    }

    /// Inserts a session with a chosen id, to test prefix lookup.
    fn insert_with_id(store: &Store, id: &str) {
        store
            .conn()
            .execute(
                "INSERT INTO sessions (id, workspace, provider, model, approval, status, \
                 created_at, updated_at) VALUES (?1, '/w', 'p', 'm', 'ask', 'running', 0, 0)",
                [id],
            )
            .unwrap();
    }

    #[test]
    fn children_are_the_sessions_that_name_the_parent_oldest_first() {
        let store = Store::open_in_memory().unwrap();
        let parent = store.create_session(new("/w")).unwrap();
        let other = store.create_session(new("/w")).unwrap();
        let child = |parent: &SessionId| {
            store
                .create_session(NewSession {
                    parent: Some(parent.clone()),
                    ..new("/w")
                })
                .unwrap()
        };
        let first = child(&parent);
        let _elsewhere = child(&other);
        let second = child(&parent);
        let ids: Vec<SessionId> = store
            .children(&parent)
            .unwrap()
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, [first.clone(), second]);
        assert!(store.children(&first).unwrap().is_empty());
    }

    #[test]
    fn created_session_reads_back() {
        let store = Store::open_in_memory().unwrap();
        let id = store
            .create_session(NewSession {
                title: Some("fix the build".into()),
                extra: json!({"argv": ["exec", "hi"], "n": 1}),
                ..new("/home/me/p")
            })
            .unwrap();
        let session = store.session(id.as_str()).unwrap();
        assert_eq!(session.id, id);
        assert_eq!(session.parent, None);
        assert_eq!(session.title.as_deref(), Some("fix the build"));
        assert_eq!(session.workspace, PathBuf::from("/home/me/p"));
        assert_eq!(
            (
                session.provider.as_str(),
                session.model.as_str(),
                session.approval.as_str()
            ),
            ("ollama", "qwen3", "ask")
        );
        assert_eq!(session.status, SessionStatus::Running);
        assert_eq!(session.created_at, session.updated_at);
        assert_eq!(session.extra, json!({"argv": ["exec", "hi"], "n": 1}));
    }

    #[test]
    fn status_and_title_updates_persist_and_touch() {
        let store = Store::open_in_memory().unwrap();
        let id = store.create_session(new("/w")).unwrap();
        for status in SessionStatus::ALL {
            store.update_session_status(&id, status).unwrap();
            assert_eq!(store.session(id.as_str()).unwrap().status, status);
        }
        store.set_title(&id, "it's a 'title' %_").unwrap();
        let session = store.session(id.as_str()).unwrap();
        assert_eq!(session.title.as_deref(), Some("it's a 'title' %_"));
        assert!(session.updated_at >= session.created_at);
    }

    #[test]
    fn updates_to_a_missing_session_fail_with_its_id() {
        let store = Store::open_in_memory().unwrap();
        let missing = SessionId::from("nope");
        let err = store
            .update_session_status(&missing, SessionStatus::Failed)
            .unwrap_err();
        assert_eq!(err.to_string(), "no session matches 'nope'");
        let err = store.set_title(&missing, "t").unwrap_err();
        assert!(
            matches!(err, Error::NoSession(ref id) if id == "nope"),
            "{err:?}"
        );
    }

    #[test]
    fn unknown_stored_status_is_an_error_not_a_panic() {
        let store = Store::open_in_memory().unwrap();
        insert_with_id(&store, "x1");
        store
            .conn()
            .execute("UPDATE sessions SET status = 'paused'", [])
            .unwrap();
        let err = store.session("x1").unwrap_err();
        assert!(
            err.to_string().contains("unknown session status 'paused'"),
            "{err}"
        );
    }

    #[test]
    fn prefix_lookup_is_unique_exact_first_and_case_insensitive() {
        let store = Store::open_in_memory().unwrap();
        for id in ["a1", "a1x", "a2", "b7"] {
            insert_with_id(&store, id);
        }
        assert_eq!(store.session("b").unwrap().id.as_str(), "b7");
        assert_eq!(store.session("B7").unwrap().id.as_str(), "b7");
        assert_eq!(store.session("a1x").unwrap().id.as_str(), "a1x");
        // An exact id wins even though it is also a prefix of another.
        assert_eq!(store.session("a1").unwrap().id.as_str(), "a1");

        let err = store.session("a").unwrap_err();
        assert_eq!(
            err.to_string(),
            "session prefix 'a' is ambiguous: a1, a1x, a2"
        );
        for query in ["c", "%", "_1", "a%", "*", "a1xx"] {
            let err = store.session(query).unwrap_err();
            assert_eq!(err.to_string(), format!("no session matches '{query}'"));
        }
        assert!(matches!(store.session(""), Err(Error::EmptyId)));
    }

    #[test]
    fn ambiguous_prefix_names_five_and_counts_the_rest() {
        let store = Store::open_in_memory().unwrap();
        for n in 0..8 {
            insert_with_id(&store, &format!("k{n}"));
        }
        let err = store.session("k").unwrap_err();
        match &err {
            Error::AmbiguousPrefix { matches, more, .. } => {
                assert_eq!(matches.len(), 5);
                assert_eq!(*more, 3);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            err.to_string(),
            "session prefix 'k' is ambiguous: k0, k1, k2, k3, k4 and 3 more"
        );
    }

    #[test]
    fn generated_id_prefixes_resolve() {
        let store = Store::open_in_memory().unwrap();
        let id = store.create_session(new("/w")).unwrap();
        let upper = id.as_str().to_ascii_uppercase();
        assert_eq!(store.session(&upper).unwrap().id, id);
    }

    #[test]
    fn list_filters_by_workspace_newest_first_with_limit() {
        let store = Store::open_in_memory().unwrap();
        let a1 = store.create_session(new("/a")).unwrap();
        let b1 = store.create_session(new("/b")).unwrap();
        let a2 = store.create_session(new("/a")).unwrap();
        let a3 = store.create_session(new("/a")).unwrap();

        let ids = |filter: SessionFilter| -> Vec<SessionId> {
            let sessions = store.list_sessions(&filter).unwrap();
            sessions.into_iter().map(|s| s.id).collect()
        };
        assert_eq!(
            ids(SessionFilter::default()),
            vec![a3.clone(), a2.clone(), b1.clone(), a1.clone()]
        );
        let in_a = SessionFilter {
            workspace: Some("/a".into()),
            ..SessionFilter::default()
        };
        assert_eq!(ids(in_a.clone()), vec![a3.clone(), a2.clone(), a1]);
        assert_eq!(
            ids(SessionFilter {
                limit: Some(2),
                ..in_a
            }),
            vec![a3, a2]
        );
        assert_eq!(
            ids(SessionFilter {
                workspace: Some("/b".into()),
                limit: Some(0),
            }),
            vec![]
        );
        assert_eq!(
            ids(SessionFilter {
                workspace: Some("/c".into()),
                limit: Some(usize::MAX),
            }),
            vec![]
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_workspace_is_kept_exactly() {
        use std::os::unix::ffi::OsStrExt;
        let store = Store::open_in_memory().unwrap();
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/w/\xff"));
        let lossy = PathBuf::from("/w/\u{fffd}");
        let id = store
            .create_session(NewSession {
                workspace: odd.clone(),
                ..new("")
            })
            .unwrap();
        store.create_session(new(lossy.to_str().unwrap())).unwrap();
        let session = store.session(id.as_str()).unwrap();
        assert_eq!(session.workspace, odd);
        let filter = SessionFilter {
            workspace: Some(odd),
            ..SessionFilter::default()
        };
        let listed = store.list_sessions(&filter).unwrap();
        assert_eq!(listed.len(), 1);
        // JSON output replaces what is not UTF-8 rather than failing.
        let json = serde_json::to_value(&session).unwrap();
        assert_eq!(json["workspace"], json!("/w/\u{fffd}"));
    }

    #[test]
    fn sub_agent_sessions_name_an_existing_parent() {
        let store = Store::open_in_memory().unwrap();
        let parent = store.create_session(new("/w")).unwrap();
        let child = store
            .create_session(NewSession {
                parent: Some(parent.clone()),
                ..new("/w")
            })
            .unwrap();
        assert_eq!(store.session(child.as_str()).unwrap().parent, Some(parent));

        let err = store
            .create_session(NewSession {
                parent: Some("ghost".into()),
                ..new("/w")
            })
            .unwrap_err();
        assert_eq!(err.to_string(), "parent session 'ghost' does not exist");
        assert_eq!(
            store
                .list_sessions(&SessionFilter::default())
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn session_serializes_for_json_output() {
        let store = Store::open_in_memory().unwrap();
        let id = store.create_session(new("/w")).unwrap();
        store
            .update_session_status(&id, SessionStatus::MaxTurns)
            .unwrap();
        let json = serde_json::to_value(store.session(id.as_str()).unwrap()).unwrap();
        assert_eq!(json["id"], json!(id.as_str()));
        assert_eq!(json["status"], json!("max_turns"));
        assert_eq!(json["workspace"], json!("/w"));
        assert_eq!(json["parent"], json!(null));
        assert!(
            json["created_at"].as_str().unwrap().ends_with('Z'),
            "{json}"
        );
    }

    #[test]
    fn clones_share_the_database() {
        let store = Store::open_in_memory().unwrap();
        let other = store.clone();
        let id = store.create_session(new("/w")).unwrap();
        assert_eq!(other.session(id.as_str()).unwrap().id, id);
    }
}
