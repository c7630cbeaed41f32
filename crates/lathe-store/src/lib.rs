//! Lathe's persistence: sessions, their messages and events, file checkpoints, and trusted
//! workspace configurations, in one SQLite database (bundled SQLite, WAL mode) that several
//! Lathe processes may use at once.
//!
//! Each session has two append-only logs, messages (the model-facing history) and events (every
//! user-visible step). Sequence numbers are dense per session and per log, start at 1, and are
//! assigned inside a write transaction, so concurrent writers never collide.
//!
//! The API is synchronous: async callers use `spawn_blocking` or a dedicated thread. [`Store`] is
//! cheap to clone; clones share one connection.
//!
//! ```
//! use lathe_store::{NewSession, SessionStatus, Store};
//! use serde_json::json;
//!
//! let store = Store::open_in_memory()?;
//! let id = store.create_session(NewSession {
//!     workspace: "/home/me/project".into(),
//!     provider: "ollama".into(),
//!     model: "qwen3".into(),
//!     approval: "ask".into(),
//!     ..NewSession::default()
//! })?;
//! store.append_message(&id, "user", &json!({"content": "fix the build"}))?;
//! assert_eq!(store.append_event(&id, "turn_started", &json!({}))?, 1);
//! assert_eq!(store.append_event(&id, "turn_finished", &json!({}))?, 2);
//! store.update_session_status(&id, SessionStatus::Completed)?;
//!
//! // A unique prefix finds the session, like a git commit.
//! let session = store.session(&id.as_str()[..8])?;
//! assert_eq!(session.status, SessionStatus::Completed);
//! assert_eq!(store.events(&id)?.len(), 2);
//! # Ok::<(), lathe_store::Error>(())
//! ```
#![deny(missing_docs)]

mod checkpoint;
mod error;
mod id;
mod log;
mod path;
mod schema;
mod session;
mod status;
mod time;
mod trust;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rusqlite::{Connection, Transaction, params};

pub use checkpoint::{Checkpoint, CheckpointKind, FileSnapshot};
pub use error::{Error, Result};
pub use id::SessionId;
pub use log::{Event, Message};
pub use session::{NewSession, Session, SessionFilter};
pub use status::SessionStatus;
pub use time::Timestamp;
pub use trust::TrustRecord;

/// The file name of the sessions database inside Lathe's data directory.
const DATABASE_FILE: &str = "sessions.sqlite3";

/// Where the sessions database lives, given Lathe's own data directory (for example
/// `~/.local/share/lathe`, which the binary works out for the platform).
pub fn default_database_path(data_dir: &Path) -> PathBuf {
    data_dir.join(DATABASE_FILE)
}

/// A handle on the sessions database. Clones share one connection; use them from any thread.
#[derive(Clone, Debug)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, creating its parent directories,
    /// switching it to WAL mode and migrating its schema to the current version.
    ///
    /// Fails with [`Error::SchemaTooNew`] if a newer Lathe has written the file.
    pub fn open(path: impl AsRef<Path>) -> Result<Store> {
        let path = path.as_ref();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            create_private_dir(parent).map_err(|source| Error::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
        }
        let conn = Connection::open(path).map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        Store::prepare(conn, path)
    }

    /// Opens a private database in memory, gone when the last clone is dropped. For tests and
    /// one-off runs.
    pub fn open_in_memory() -> Result<Store> {
        let path = Path::new(":memory:");
        let conn = Connection::open_in_memory().map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        Store::prepare(conn, path)
    }

    fn prepare(mut conn: Connection, path: &Path) -> Result<Store> {
        schema::configure(&conn).map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?;
        schema::migrate(&mut conn, path)?;
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// The shared connection. A panic while it was held cannot leave a transaction open (the
    /// transaction rolls back on drop), so a poisoned lock is still safe to use.
    fn conn(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Marks `session` as changed at `now`; fails with [`Error::NoSession`] if it does not exist.
/// Every write to a session goes through here, inside its transaction.
fn touch(tx: &Transaction<'_>, session: &SessionId, now: Timestamp) -> Result<()> {
    let changed = tx
        .prepare_cached("UPDATE sessions SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
        .execute(params![session, now])?;
    if changed == 0 {
        return Err(Error::NoSession(session.to_string()));
    }
    Ok(())
}

/// Fails with [`Error::NoSession`] unless `session` exists.
fn ensure_session(conn: &Connection, session: &SessionId) -> Result<()> {
    let found = conn
        .prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")?
        .exists([session])?;
    if found {
        Ok(())
    } else {
        Err(Error::NoSession(session.to_string()))
    }
}

/// Session transcripts are private: directories we create are for the user only.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_path_is_inside_the_data_dir() {
        let path = default_database_path(Path::new("/data/lathe"));
        assert_eq!(path, Path::new("/data/lathe/sessions.sqlite3"));
    }

    #[test]
    fn open_creates_parent_directories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/c/sessions.sqlite3");
        let store = Store::open(&path).unwrap();
        drop(store);
        assert!(path.is_file());
    }

    #[test]
    fn open_reports_a_file_that_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junk.db");
        std::fs::write(&path, vec![0x5a; 4096]).unwrap();
        let err = Store::open(&path).unwrap_err();
        assert!(matches!(err, Error::Open { .. }), "{err:?}");
        assert!(err.to_string().contains("junk.db"), "{err}");
    }

    #[test]
    fn open_reports_a_parent_that_is_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        let err = Store::open(file.join("sessions.sqlite3")).unwrap_err();
        assert!(
            matches!(err, Error::CreateDir { ref path, .. } if *path == file),
            "{err:?}"
        );
    }

    #[test]
    fn store_is_send_and_sync() {
        fn check<T: Send + Sync + Clone>() {}
        check::<Store>();
    }
}
