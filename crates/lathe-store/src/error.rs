//! The store's error type.

use std::path::PathBuf;

use crate::SessionId;

/// A fault of the session store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No session has this id, or this id prefix.
    #[error("no session matches '{0}'")]
    NoSession(String),
    /// More than one session id starts with this prefix.
    #[error(
        "session prefix '{prefix}' is ambiguous: {}{}",
        join(matches),
        more_suffix(*more)
    )]
    AmbiguousPrefix {
        /// The prefix that was looked up.
        prefix: String,
        /// The first few matching ids, in order.
        matches: Vec<SessionId>,
        /// How many further ids match beyond `matches`.
        more: usize,
    },
    /// A session id (or prefix) to look up was empty.
    #[error("session id is empty")]
    EmptyId,
    /// A new session named a parent that does not exist.
    #[error("parent session '{0}' does not exist")]
    UnknownParent(SessionId),
    /// Every fresh session id collided with an existing one (practically impossible).
    #[error("no free session id after {attempts} attempts")]
    NoFreeId {
        /// How many ids were tried.
        attempts: usize,
    },
    /// A status name that is not one of [`SessionStatus`](crate::SessionStatus)'s.
    #[error("unknown session status '{0}'")]
    UnknownStatus(String),
    /// The parent directory of the database could not be created.
    #[error("cannot create directory '{}': {source}", path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The database could not be opened or prepared (pragmas, migrations).
    #[error("cannot open session database '{}': {source}", path.display())]
    Open {
        /// The database file (`:memory:` for an in-memory one).
        path: PathBuf,
        /// Why it failed.
        source: rusqlite::Error,
    },
    /// The database was written by a newer Lathe with a schema this one does not know.
    #[error(
        "session database '{}' has schema version {found}, newer than the {supported} this lathe supports",
        path.display()
    )]
    SchemaTooNew {
        /// The database file.
        path: PathBuf,
        /// The version found in the file.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// A JSON value could not be encoded for storage.
    #[error("cannot encode JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Any other SQLite failure.
    #[error("session database: {0}")]
    Sqlite(#[from] rusqlite::Error),
}

/// The store's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn join(ids: &[SessionId]) -> String {
    ids.iter()
        .map(SessionId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

fn more_suffix(more: usize) -> String {
    if more == 0 {
        String::new()
    } else {
        format!(" and {more} more")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_message_lists_matches_and_counts_the_rest() {
        let err = Error::AmbiguousPrefix {
            prefix: "a".into(),
            matches: vec!["a1".into(), "a2".into()],
            more: 0,
        };
        assert_eq!(err.to_string(), "session prefix 'a' is ambiguous: a1, a2");
        let err = Error::AmbiguousPrefix {
            prefix: "a".into(),
            matches: vec!["a1".into()],
            more: 3,
        };
        assert_eq!(
            err.to_string(),
            "session prefix 'a' is ambiguous: a1 and 3 more"
        );
    }
}
