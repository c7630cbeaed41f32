//! Connection settings and schema migrations, versioned by `PRAGMA user_version`.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, TransactionBehavior};

use crate::{Error, Result};

/// Other Lathe processes hold the write lock for one short transaction at a time; waiting longer
/// than this means one of them is stuck, and the caller should hear about it.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long to wait before retrying the switch to WAL while another process holds the lock.
const WAL_SWITCH_RETRY: Duration = Duration::from_millis(10);

/// Version 1: sessions with their message and event logs.
const V1: &str = "
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY NOT NULL,
    title      TEXT,
    workspace  NOT NULL, -- no type: TEXT, or BLOB for a path that is not UTF-8
    provider   TEXT NOT NULL,
    model      TEXT NOT NULL,
    approval   TEXT NOT NULL,
    status     TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX sessions_by_workspace ON sessions (workspace, id);

CREATE TABLE messages (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE events (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    payload    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
";

/// Version 2: sub-agent sessions, free-form session metadata, and file checkpoints for undo.
const V2: &str = "
ALTER TABLE sessions ADD COLUMN parent_id TEXT REFERENCES sessions (id) ON DELETE SET NULL;
ALTER TABLE sessions ADD COLUMN extra TEXT NOT NULL DEFAULT 'null';
CREATE INDEX sessions_by_parent ON sessions (parent_id);

CREATE TABLE checkpoints (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    turn       INTEGER NOT NULL,
    path       NOT NULL, -- no type: TEXT, or BLOB for a path that is not UTF-8
    content    BLOB, -- NULL: the file did not exist
    created_at INTEGER NOT NULL
);
CREATE INDEX checkpoints_by_session ON checkpoints (session_id, id);
";

/// Version 3: trusted workspace configurations (`lathe trust`), one per workspace.
const V3: &str = "
CREATE TABLE trusted_configs (
    workspace  PRIMARY KEY NOT NULL, -- no type: TEXT, or BLOB for a path that is not UTF-8
    sha256     TEXT NOT NULL,
    trusted_at INTEGER NOT NULL
);
";

/// Version 4: what a checkpoint row records (a file before or after a turn, or an undo or redo
/// mark), for the checkpoints' fallback without git.
const V4: &str = "
ALTER TABLE checkpoints ADD COLUMN kind TEXT NOT NULL DEFAULT 'before';
";

/// Migration `i` takes a database from version `i` to version `i + 1`. Append only: a released
/// migration never changes.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4];

/// The schema version this build writes.
pub(crate) const LATEST: i64 = MIGRATIONS.len() as i64;

/// Sets the per-connection pragmas.
pub(crate) fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.pragma_update(None, "foreign_keys", true)?;
    // Durable across process crashes; a power loss may lose the last commits, never corrupt.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    enable_wal(conn)
}

/// Switches the file to WAL (persistent in the file, so only the first opener does it): readers
/// never block the writer. An in-memory database stays in "memory" mode.
///
/// The switch needs an exclusive lock, and when several processes open a new database at once it
/// fails at once with SQLITE_BUSY (the busy handler does not cover it), so the losers retry here.
#[expect(
    clippy::disallowed_methods,
    reason = "a short back-off while opening the database, on the store's own thread"
)]
fn enable_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = Instant::now() + BUSY_TIMEOUT;
    loop {
        let mode: String = conn.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
        if mode.eq_ignore_ascii_case("wal") || mode.eq_ignore_ascii_case("memory") {
            return Ok(());
        }
        // A file system without shared memory refuses WAL by answering with the old mode; the
        // rollback journal with the busy timeout still serialises writers correctly.
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |_| Ok(())) {
            Err(err)
                if err.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(WAL_SWITCH_RETRY);
            }
            result => return result,
        }
    }
}

/// Brings the schema up to [`LATEST`]. Safe when several processes open a new database at once:
/// the version is read and advanced under the write lock.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    migrate_to(conn, path, LATEST)
}

pub(crate) fn migrate_to(conn: &mut Connection, path: &Path, target: i64) -> Result<()> {
    let open_err = |source| Error::Open {
        path: path.to_owned(),
        source,
    };
    let current = user_version(conn).map_err(open_err)?;
    if current == target {
        return Ok(());
    }
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(open_err)?;
    let current = user_version(&tx).map_err(open_err)?;
    if current > LATEST {
        return Err(Error::SchemaTooNew {
            path: path.to_owned(),
            found: current,
            supported: LATEST,
        });
    }
    for version in current.max(0)..target {
        let sql = MIGRATIONS[usize::try_from(version).unwrap_or(0)];
        tx.execute_batch(sql).map_err(open_err)?;
    }
    if current < target {
        tx.pragma_update(None, "user_version", target)
            .map_err(open_err)?;
    }
    tx.commit().map_err(open_err)
}

fn user_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.pragma_query_value(None, "user_version", |row| row.get(0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FileSnapshot, NewSession, SessionStatus, Store};
    use serde_json::json;
    use std::sync::{Arc, Barrier};

    #[test]
    fn fresh_database_reaches_latest_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        configure(&conn).unwrap();
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        assert_eq!(user_version(&conn).unwrap(), LATEST);
        // Idempotent.
        migrate(&mut conn, Path::new(":memory:")).unwrap();
        assert_eq!(user_version(&conn).unwrap(), LATEST);
    }

    #[test]
    fn newer_schema_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", LATEST + 5)
            .unwrap();
        let err = migrate(&mut conn, Path::new("x.db")).unwrap_err();
        assert!(
            matches!(err, Error::SchemaTooNew { found, supported, .. } if found == LATEST + 5 && supported == LATEST),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "session database 'x.db' has schema version {}, newer than the {LATEST} this lathe supports",
                LATEST + 5
            )
        );
    }

    #[test]
    fn file_database_uses_wal() {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("s.db")).unwrap();
        configure(&conn).unwrap();
        let mode: String = conn
            .pragma_query_value(None, "journal_mode", |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        let fk: i64 = conn
            .pragma_query_value(None, "foreign_keys", |r| r.get(0))
            .unwrap();
        assert_eq!(fk, 1);
    }

    /// A database left by a Lathe that knew only schema version 1 opens, keeps its data, and
    /// gains what versions 2 and 3 added.
    #[test]
    fn version_1_database_migrates_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.sqlite3");
        {
            let mut conn = Connection::open(&path).unwrap();
            configure(&conn).unwrap();
            migrate_to(&mut conn, &path, 1).unwrap();
            conn.execute_batch(
                "INSERT INTO sessions (id, title, workspace, provider, model, approval, status, \
                 created_at, updated_at) \
                 VALUES ('old1', 'old one', '/w', 'ollama', 'm', 'ask', 'completed', 10, 20);
                 INSERT INTO events VALUES ('old1', 1, 'turn_started', '{}', 11);
                 INSERT INTO messages VALUES ('old1', 1, 'user', '\"hi\"', 12);",
            )
            .unwrap();
            assert_eq!(user_version(&conn).unwrap(), 1);
        }

        let store = Store::open(&path).unwrap();
        let old = store.session("old").unwrap();
        assert_eq!(old.title.as_deref(), Some("old one"));
        assert_eq!(old.status, SessionStatus::Completed);
        assert_eq!(old.parent, None);
        assert_eq!(old.extra, json!(null));
        assert_eq!(store.events(&old.id).unwrap()[0].kind, "turn_started");
        assert_eq!(store.messages(&old.id).unwrap()[0].body, json!("hi"));
        // The old log continues where it stopped.
        assert_eq!(store.append_event(&old.id, "x", &json!({})).unwrap(), 2);
        // What version 2 added works.
        let child = store
            .create_session(NewSession {
                parent: Some(old.id.clone()),
                ..NewSession::default()
            })
            .unwrap();
        assert_eq!(
            store.session(child.as_str()).unwrap().parent,
            Some(old.id.clone())
        );
        store
            .save_checkpoint(&old.id, 1, Path::new("a"), &FileSnapshot::Absent)
            .unwrap();
        // And what version 3 added.
        store.trust_config(Path::new("/w"), "ab").unwrap();
        assert_eq!(
            store.trust_record(Path::new("/w")).unwrap().unwrap().sha256,
            "ab"
        );
        drop(store);

        let conn = Connection::open(&path).unwrap();
        assert_eq!(user_version(&conn).unwrap(), LATEST);
    }

    /// Several connections switching a new database to WAL at the same moment: each reads
    /// the file (a shared lock) and then needs the write lock to switch, and SQLite refuses the
    /// upgrade at once with "database is locked" rather than deadlock in the busy handler. The
    /// losers must retry. (Found as a flaky failure of the multi-process test.)
    #[test]
    fn simultaneous_first_opens_all_succeed() {
        const OPENERS: usize = 8;
        const ROUNDS: usize = 20;
        let dir = tempfile::tempdir().unwrap();
        for round in 0..ROUNDS {
            let path = dir.path().join(format!("s{round}.db"));
            let barrier = Arc::new(Barrier::new(OPENERS));
            let openers: Vec<_> = (0..OPENERS)
                .map(|_| {
                    let (path, barrier) = (path.clone(), Arc::clone(&barrier));
                    std::thread::spawn(move || {
                        let mut conn = Connection::open(&path)?;
                        barrier.wait();
                        configure(&conn)?;
                        migrate(&mut conn, &path).map_err(|e| match e {
                            Error::Open { source, .. } => source,
                            other => panic!("{other}"),
                        })?;
                        conn.pragma_query_value(None, "journal_mode", |r| r.get::<_, String>(0))
                    })
                })
                .collect();
            for opener in openers {
                let mode = opener.join().unwrap();
                assert_eq!(
                    mode.as_deref().map_err(|e| e.to_string()),
                    Ok("wal"),
                    "round {round}"
                );
            }
        }
    }
}
