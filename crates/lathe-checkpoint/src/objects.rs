//! Git objects written in-process into the shadow repository's object store, as git writes
//! loose objects (`Documentation/gitformat-loose.txt`): the id is the SHA-1 of
//! `<kind> <length>\0<bytes>`, and the file `objects/<2 hex>/<38 hex>` holds the same bytes
//! zlib-deflated. A file is written aside (`objects/tmp_obj_*`, the name git's own leftovers
//! have, which `git gc` clears) and renamed into place, so a reader never sees half an object;
//! an object already there (loose) is not written again. One already packed only is written
//! again, loose: a duplicate git tolerates and the next `git gc` drops.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::{Error, Result};

/// An object id: a SHA-1.
pub(crate) type Oid = [u8; 20];

/// The kinds of object a snapshot writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Blob,
    Tree,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Blob => "blob",
            Kind::Tree => "tree",
        }
    }
}

/// The id git gives `bytes` as an object of `kind` (`git hash-object -t KIND`).
pub(crate) fn id(kind: Kind, bytes: &[u8]) -> Oid {
    let mut hasher = Sha1::new();
    hasher.update(header(kind, bytes.len()).as_bytes());
    hasher.update(bytes);
    hasher.finalize().into()
}

fn header(kind: Kind, len: usize) -> String {
    format!("{} {len}\0", kind.name())
}

/// An id as forty lower-case hex digits.
pub(crate) fn hex(oid: &Oid) -> String {
    let mut out = String::with_capacity(40);
    for b in oid {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// A repository's object directory.
#[derive(Debug, Clone)]
pub(crate) struct Objects {
    dir: PathBuf,
}

impl Objects {
    pub(crate) fn new(git_dir: &Path) -> Objects {
        Objects {
            dir: git_dir.join("objects"),
        }
    }

    fn path(&self, oid: &Oid) -> PathBuf {
        let hex = hex(oid);
        self.dir.join(&hex[..2]).join(&hex[2..])
    }

    /// Whether the object is there loose.
    pub(crate) fn has_loose(&self, oid: &Oid) -> bool {
        std::fs::symlink_metadata(self.path(oid)).is_ok()
    }

    /// Stores `bytes` as an object of `kind` (unless it is there already) and returns its id.
    pub(crate) fn write(&self, kind: Kind, bytes: &[u8]) -> Result<Oid> {
        let oid = id(kind, bytes);
        if self.has_loose(&oid) {
            return Ok(oid);
        }
        let path = self.path(&oid);
        let fan = path.parent().expect("objects/xx");
        match std::fs::create_dir(fan) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(fan, e)),
        }
        let mut file = tempfile::Builder::new()
            .prefix("tmp_obj_")
            .tempfile_in(&self.dir)
            .map_err(|e| Error::io(&self.dir, e))?;
        {
            // Level 1, git's default for loose objects (`core.looseCompression`).
            let mut deflate =
                flate2::write::ZlibEncoder::new(file.as_file_mut(), flate2::Compression::fast());
            deflate
                .write_all(header(kind, bytes.len()).as_bytes())
                .and_then(|()| deflate.write_all(bytes))
                .and_then(|()| deflate.finish().map(drop))
                .map_err(|e| Error::io(file.path(), e))?;
        }
        {
            use std::os::unix::fs::PermissionsExt;
            // Read-only, as git leaves its objects.
            let _ = file
                .as_file()
                .set_permissions(std::fs::Permissions::from_mode(0o444));
        }
        // Another process storing the same object at once renames the same bytes into place.
        file.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(oid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_gits() {
        // `git hash-object -t blob /dev/null` and `printf 'hello\n' | git hash-object --stdin`,
        // and the empty tree.
        assert_eq!(
            hex(&id(Kind::Blob, b"")),
            "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
        );
        assert_eq!(
            hex(&id(Kind::Blob, b"hello\n")),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
        assert_eq!(
            hex(&id(Kind::Tree, b"")),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
        );
    }
}
