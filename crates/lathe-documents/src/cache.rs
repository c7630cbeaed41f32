//! Conversions kept on disk, so that paging through a large document parses it once: keyed by
//! the SHA-256 of the file's bytes and the normalised selection (`"1-3,7"` and `"7,1-3"` share
//! an entry).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::{Document, Selection};

/// Bumped when the conversion or the entry format changes, so old entries are not read.
const VERSION: u32 = 1;

/// A directory of conversions (a session's state directory's `documents/`).
#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    /// A cache in `dir`, created when the first entry is stored.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Cache { dir: dir.into() }
    }

    /// Where the entry for `bytes` and `selection` lives.
    pub fn entry(&self, bytes: &[u8], selection: &Selection) -> PathBuf {
        let hash = Sha256::digest(bytes);
        let hex: String = hash.iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!(
            "v{VERSION}-{hex}-{}.json",
            selection.to_string().replace(',', "_")
        ))
    }

    /// The stored conversion, if there is a readable one.
    pub fn get(&self, bytes: &[u8], selection: &Selection) -> Option<Document> {
        let text = std::fs::read(self.entry(bytes, selection)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Stores a conversion (atomically: a reader never sees half an entry). A cache that
    /// cannot be written is only slower, so the error is for the caller to log, not to fail on.
    pub fn put(
        &self,
        bytes: &[u8],
        selection: &Selection,
        document: &Document,
    ) -> std::io::Result<()> {
        std::fs::create_dir_all(&self.dir)?;
        let path = self.entry(bytes, selection);
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)?;
        serde_json::to_writer(&mut file, document)?;
        file.persist(&path).map_err(|e| e.error)?;
        Ok(())
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}
