//! Trusted workspace configurations: which exact `.lathe/config.toml` (by its SHA-256) the user
//! accepted for a workspace. One record per workspace; trusting again replaces it, so a changed
//! file is untrusted until the user trusts the new bytes.

use std::path::{Path, PathBuf};

use rusqlite::{OptionalExtension, params};

use crate::path::{self, SqlPath};
use crate::{Result, Store, Timestamp};

/// A stored trust record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustRecord {
    /// The workspace, as the caller gave it (Lathe gives its canonical path).
    pub workspace: PathBuf,
    /// The SHA-256 of the trusted file's bytes, in lowercase hex.
    pub sha256: String,
    /// When the user trusted it.
    pub trusted_at: Timestamp,
}

impl Store {
    /// Records that the configuration of `workspace` with hash `sha256` is trusted, replacing
    /// any earlier record of that workspace.
    pub fn trust_config(&self, workspace: &Path, sha256: &str) -> Result<TrustRecord> {
        let now = Timestamp::now();
        self.conn()
            .prepare_cached(
                "INSERT INTO trusted_configs (workspace, sha256, trusted_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (workspace) DO UPDATE SET sha256 = excluded.sha256, \
                 trusted_at = excluded.trusted_at",
            )?
            .execute(params![path::to_sql(workspace), sha256, now])?;
        Ok(TrustRecord {
            workspace: workspace.to_owned(),
            sha256: sha256.to_owned(),
            trusted_at: now,
        })
    }

    /// The trust record of `workspace`, if there is one.
    pub fn trust_record(&self, workspace: &Path) -> Result<Option<TrustRecord>> {
        let record = self
            .conn()
            .prepare_cached(
                "SELECT workspace, sha256, trusted_at FROM trusted_configs WHERE workspace = ?1",
            )?
            .query_row([path::to_sql(workspace)], record_from_row)
            .optional()?;
        Ok(record)
    }

    /// Every trust record, by workspace.
    pub fn trust_records(&self) -> Result<Vec<TrustRecord>> {
        let conn = self.conn();
        let mut statement = conn.prepare_cached(
            "SELECT workspace, sha256, trusted_at FROM trusted_configs ORDER BY workspace",
        )?;
        let records = statement
            .query_map([], record_from_row)?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(records)
    }

    /// Removes the trust record of `workspace`; `false` when there was none.
    pub fn revoke_trust(&self, workspace: &Path) -> Result<bool> {
        let removed = self
            .conn()
            .prepare_cached("DELETE FROM trusted_configs WHERE workspace = ?1")?
            .execute([path::to_sql(workspace)])?;
        Ok(removed > 0)
    }
}

fn record_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TrustRecord> {
    Ok(TrustRecord {
        workspace: row.get::<_, SqlPath>(0)?.0,
        sha256: row.get(1)?,
        trusted_at: row.get(2)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_per_workspace_and_trusting_again_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.sqlite3");
        let store = Store::open(&db).unwrap();
        let ws = Path::new("/home/me/project");
        assert_eq!(store.trust_record(ws).unwrap(), None);
        let first = store.trust_config(ws, "aa").unwrap();
        assert_eq!(store.trust_record(ws).unwrap(), Some(first));
        store.trust_config(ws, "bb").unwrap();
        store.trust_config(Path::new("/other"), "cc").unwrap();
        drop(store);

        // Records survive a reopen: they live in the file.
        let store = Store::open(&db).unwrap();
        assert_eq!(store.trust_record(ws).unwrap().unwrap().sha256, "bb");
        let all = store.trust_records().unwrap();
        let listed: Vec<_> = all
            .iter()
            .map(|r| (r.workspace.to_str().unwrap(), r.sha256.as_str()))
            .collect();
        assert_eq!(listed, [("/home/me/project", "bb"), ("/other", "cc")]);
        assert!(store.revoke_trust(ws).unwrap());
        assert!(!store.revoke_trust(ws).unwrap());
        assert_eq!(store.trust_record(ws).unwrap(), None);
        assert_eq!(store.trust_records().unwrap().len(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn a_workspace_that_is_not_utf8_is_kept_exactly() {
        use std::os::unix::ffi::OsStrExt;
        let store = Store::open_in_memory().unwrap();
        let ws = Path::new(std::ffi::OsStr::from_bytes(b"/w/\xff"));
        store.trust_config(ws, "dd").unwrap();
        assert_eq!(store.trust_record(ws).unwrap().unwrap().workspace, ws);
        assert_eq!(store.trust_record(Path::new("/w/\u{fffd}")).unwrap(), None);
    }
}
