//! File checkpoints: a file's contents as they were before a turn changed it, kept for undo.

use std::path::{Path, PathBuf};

use rusqlite::{TransactionBehavior, params};

use crate::path::{self, SqlPath};
use crate::{Result, SessionId, Store, Timestamp, ensure_session, touch};

/// A file as it was before a change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileSnapshot {
    /// The file did not exist: undoing the change deletes it.
    Absent,
    /// The file's bytes.
    Contents(Vec<u8>),
}

/// What a checkpoint row records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckpointKind {
    /// The file before the turn first changed it.
    Before,
    /// The file as the turn left it.
    After,
    /// A mark: the turn was undone (the path names the undo).
    Undo,
    /// A mark: an undo of the turn was taken back (the path names the undo).
    Redo,
}

impl CheckpointKind {
    fn as_str(self) -> &'static str {
        match self {
            CheckpointKind::Before => "before",
            CheckpointKind::After => "after",
            CheckpointKind::Undo => "undo",
            CheckpointKind::Redo => "redo",
        }
    }

    fn parse(text: &str) -> CheckpointKind {
        match text {
            "after" => CheckpointKind::After,
            "undo" => CheckpointKind::Undo,
            "redo" => CheckpointKind::Redo,
            _ => CheckpointKind::Before,
        }
    }
}

/// A stored checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    /// Its id: checkpoints of a session are returned in increasing id order, the order they were
    /// saved.
    pub id: i64,
    /// The turn that was about to change the file.
    pub turn: u32,
    /// What the row records.
    pub kind: CheckpointKind,
    /// The file, as the caller gave it (exact bytes, even when not UTF-8).
    pub path: PathBuf,
    /// What the file held.
    pub snapshot: FileSnapshot,
    /// When it was saved.
    pub created_at: Timestamp,
}

impl Store {
    /// Saves the state of `path` before `turn` changes it, and returns the checkpoint's id.
    ///
    /// Fails with [`Error::NoSession`](crate::Error::NoSession) if the session does not exist.
    pub fn save_checkpoint(
        &self,
        session: &SessionId,
        turn: u32,
        path: &Path,
        snapshot: &FileSnapshot,
    ) -> Result<i64> {
        self.save_file_state(session, turn, CheckpointKind::Before, path, snapshot)
    }

    /// Saves a row of `kind` for `path` in `turn`, and returns its id.
    ///
    /// Fails with [`Error::NoSession`](crate::Error::NoSession) if the session does not exist.
    pub fn save_file_state(
        &self,
        session: &SessionId,
        turn: u32,
        kind: CheckpointKind,
        path: &Path,
        snapshot: &FileSnapshot,
    ) -> Result<i64> {
        let content = match snapshot {
            FileSnapshot::Absent => None,
            FileSnapshot::Contents(bytes) => Some(bytes.as_slice()),
        };
        let now = Timestamp::now();
        let mut conn = self.conn();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        touch(&tx, session, now)?;
        tx.prepare_cached(
            "INSERT INTO checkpoints (session_id, turn, path, content, created_at, kind) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            session,
            turn,
            path::to_sql(path),
            content,
            now,
            kind.as_str()
        ])?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    /// A session's checkpoints, oldest first.
    pub fn checkpoints(&self, session: &SessionId) -> Result<Vec<Checkpoint>> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        ensure_session(&tx, session)?;
        let checkpoints = tx
            .prepare_cached(
                "SELECT id, turn, path, content, created_at, kind FROM checkpoints \
                 WHERE session_id = ?1 ORDER BY id",
            )?
            .query_map([session], |row| {
                let content: Option<Vec<u8>> = row.get(3)?;
                Ok(Checkpoint {
                    id: row.get(0)?,
                    turn: row.get(1)?,
                    kind: CheckpointKind::parse(&row.get::<_, String>(5)?),
                    path: row.get::<_, SqlPath>(2)?.0,
                    snapshot: content.map_or(FileSnapshot::Absent, FileSnapshot::Contents),
                    created_at: row.get(4)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        tx.commit()?;
        Ok(checkpoints)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, NewSession};

    #[test]
    fn checkpoints_come_back_in_order_with_their_contents() {
        let store = Store::open_in_memory().unwrap();
        let id = store.create_session(NewSession::default()).unwrap();
        let other = store.create_session(NewSession::default()).unwrap();
        let saves = [
            (1, "src/new.rs", FileSnapshot::Absent),
            (
                1,
                "src/main.rs",
                FileSnapshot::Contents(b"fn main() {}\n".to_vec()),
            ),
            (2, "empty.txt", FileSnapshot::Contents(Vec::new())),
            (
                3,
                "bin.dat",
                FileSnapshot::Contents(vec![0, 255, 0, 10, 13]),
            ),
        ];
        let mut ids = Vec::new();
        for (turn, path, snapshot) in &saves {
            ids.push(
                store
                    .save_checkpoint(&id, *turn, Path::new(path), snapshot)
                    .unwrap(),
            );
        }
        store
            .save_checkpoint(&other, 1, Path::new("x"), &FileSnapshot::Absent)
            .unwrap();

        let checkpoints = store.checkpoints(&id).unwrap();
        assert_eq!(checkpoints.iter().map(|c| c.id).collect::<Vec<_>>(), ids);
        let got: Vec<(u32, PathBuf, FileSnapshot)> = checkpoints
            .into_iter()
            .map(|c| (c.turn, c.path, c.snapshot))
            .collect();
        let want: Vec<(u32, PathBuf, FileSnapshot)> = saves
            .into_iter()
            .map(|(turn, path, snapshot)| (turn, PathBuf::from(path), snapshot))
            .collect();
        assert_eq!(got, want);
        assert_eq!(store.checkpoints(&other).unwrap().len(), 1);
    }

    #[test]
    fn each_row_keeps_its_kind_and_plain_saves_are_before_copies() {
        let store = Store::open_in_memory().unwrap();
        let id = store.create_session(NewSession::default()).unwrap();
        let before = FileSnapshot::Contents(b"old".to_vec());
        store
            .save_checkpoint(&id, 1, Path::new("a"), &before)
            .unwrap();
        for kind in [
            CheckpointKind::After,
            CheckpointKind::Undo,
            CheckpointKind::Redo,
        ] {
            store
                .save_file_state(&id, 1, kind, Path::new("a"), &FileSnapshot::Absent)
                .unwrap();
        }
        let kinds: Vec<CheckpointKind> = store
            .checkpoints(&id)
            .unwrap()
            .into_iter()
            .map(|c| c.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                CheckpointKind::Before,
                CheckpointKind::After,
                CheckpointKind::Undo,
                CheckpointKind::Redo
            ]
        );
    }

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_restore_to_the_same_file() {
        use std::os::unix::ffi::OsStrExt;
        let store = Store::open_in_memory().unwrap();
        let id = store.create_session(NewSession::default()).unwrap();
        let path = Path::new(std::ffi::OsStr::from_bytes(b"caf\xe9.txt"));
        store
            .save_checkpoint(&id, 0, path, &FileSnapshot::Absent)
            .unwrap();
        assert_eq!(store.checkpoints(&id).unwrap()[0].path, path);
    }

    #[test]
    fn checkpoints_of_a_missing_session_are_errors() {
        let store = Store::open_in_memory().unwrap();
        let ghost = SessionId::from("ghost");
        let err = store
            .save_checkpoint(&ghost, 0, Path::new("a"), &FileSnapshot::Absent)
            .unwrap_err();
        assert_eq!(err.to_string(), "no session matches 'ghost'");
        assert!(matches!(
            store.checkpoints(&ghost),
            Err(Error::NoSession(_))
        ));
    }
}
