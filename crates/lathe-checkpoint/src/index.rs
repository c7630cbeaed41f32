//! A session's git index file, read and written in-process: its stat cache (which paths it
//! holds, with the mode, the `lstat` data git recorded when it last hashed each one, and the
//! blob's id) and its cache of tree ids (the `TREE` extension).
//!
//! Versions 2, 3 and 4 of the format are read (git's `Documentation/gitformat-index.txt`;
//! version 4 prefix-compresses the paths); version 4 is written, with the `TREE` extension and
//! a null trailing checksum (as git with `index.skipHash`), under `<index>.lock` renamed into
//! place as git does. Other optional
//! extensions (an untracked cache, resolve-undo data) are left out when it is written: they are
//! caches git rebuilds. The trailing checksum is not checked on reading: the index is the
//! session's own, and anything unexpected only costs a fallback to git, which reads it itself.
//! Anything this reader does not understand (another version, a split index's `link`
//! extension, a sparse index, conflict stages, flags that change what the entry means) is
//! [`Read::Unsupported`].

use std::io::Write;
use std::path::Path;

use crate::objects::Oid;
use crate::tree::CacheTree;
use crate::{Error, Result};

/// The `lstat` fields git compares, truncated to 32 bits as the index stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) ctime: (u32, u32),
    pub(crate) mtime: (u32, u32),
    pub(crate) dev: u32,
    pub(crate) ino: u32,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) size: u32,
    /// The git mode: 0o100644, 0o100755, 0o120000 (a symbolic link) or 0o160000.
    pub(crate) mode: u32,
}

impl Stat {
    /// Whether `other` differs from this only in the nanoseconds of its times: a change git
    /// built without `USE_NSEC` does not see (it compares whole seconds), so it would keep the
    /// old entry unless the entry is taken out first.
    pub(crate) fn differs_below_seconds(&self, other: &Stat) -> bool {
        self != other
            && self.ctime.0 == other.ctime.0
            && self.mtime.0 == other.mtime.0
            && self.dev == other.dev
            && self.ino == other.ino
            && self.uid == other.uid
            && self.gid == other.gid
            && self.size == other.size
            && self.mode == other.mode
    }

    /// A file's `lstat` data as git records it; `None` for what git does not track (a
    /// directory, a socket, a FIFO).
    pub(crate) fn of(meta: &std::fs::Metadata) -> Option<Stat> {
        use std::os::unix::fs::MetadataExt;
        let kind = meta.file_type();
        let mode = if kind.is_symlink() {
            0o120000
        } else if kind.is_file() {
            // As git: the owner's exec bit decides.
            if meta.mode() & 0o100 != 0 {
                0o100755
            } else {
                0o100644
            }
        } else {
            return None;
        };
        Some(Stat {
            ctime: (meta.ctime() as u32, meta.ctime_nsec() as u32),
            mtime: (meta.mtime() as u32, meta.mtime_nsec() as u32),
            dev: meta.dev() as u32,
            ino: meta.ino() as u32,
            uid: meta.uid(),
            gid: meta.gid(),
            size: meta.size() as u32,
            mode,
        })
    }
}

/// One entry: a path (bytes, `/`-separated, relative to the work tree), its stat data and its
/// object's id.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) path: Vec<u8>,
    pub(crate) stat: Stat,
    pub(crate) oid: Oid,
}

/// A parsed index.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    /// Sorted by path bytes, as git keeps them.
    pub(crate) entries: Vec<Entry>,
    /// The index file's own modification time (seconds, nanoseconds): an entry whose file was
    /// modified at or after it is *racy* (changed within the same tick as it was hashed, its
    /// stat data can match while its bytes differ), and must be hashed again
    /// ([`Index::is_racy`]).
    pub(crate) mtime: (i64, i64),
    /// The `TREE` extension: the tree ids of the directories whose entries did not change
    /// since they were last computed.
    pub(crate) tree: Option<CacheTree>,
}

impl Index {
    /// Whether an entry whose file was last modified at `mtime_seconds` is racy: modified in
    /// the second the index was written, or later. Whole seconds, as git compares them when
    /// built without `USE_NSEC` (Debian's is): then `git update-index` hashes such a file
    /// again, and so it must be given to it.
    pub(crate) fn is_racy(&self, mtime_seconds: u32) -> bool {
        i64::from(mtime_seconds) >= self.mtime.0
    }
}

/// What reading the index found.
#[derive(Debug)]
pub(crate) enum Read {
    /// No index file yet: every file is new.
    Missing,
    /// An index this reader does not understand, and why (git must read it).
    Unsupported(String),
    Parsed(Index),
}

const HASH_LEN: usize = 20;
/// ctime, mtime (4 words), dev, ino, mode, uid, gid, size: ten 32-bit words.
const STAT_LEN: usize = 40;

/// Reads the index file at `path`.
pub(crate) fn read(path: &Path) -> Read {
    use std::os::unix::fs::MetadataExt;
    let mut file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Read::Missing,
        Err(e) => return Read::Unsupported(format!("cannot open it: {e}")),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(e) => return Read::Unsupported(format!("cannot stat it: {e}")),
    };
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    if let Err(e) = std::io::Read::read_to_end(&mut file, &mut bytes) {
        return Read::Unsupported(format!("cannot read it: {e}"));
    }
    match parse(&bytes) {
        Ok(parsed) => Read::Parsed(Index {
            entries: parsed.entries,
            mtime: (meta.mtime(), meta.mtime_nsec()),
            tree: parsed.tree,
        }),
        Err(why) => Read::Unsupported(why),
    }
}

/// What an index file holds.
#[derive(Debug)]
pub(crate) struct Parsed {
    pub(crate) entries: Vec<Entry>,
    pub(crate) tree: Option<CacheTree>,
}

/// Parses an index file's bytes.
pub(crate) fn parse(bytes: &[u8]) -> std::result::Result<Parsed, String> {
    let mut r = Reader { bytes, at: 0 };
    if r.take(4)? != b"DIRC" {
        return Err("not a git index (no DIRC signature)".into());
    }
    let version = r.u32()?;
    if !(2..=4).contains(&version) {
        return Err(format!("index version {version}"));
    }
    let count = r.u32()? as usize;
    // An entry takes at least 62 bytes: a count that cannot fit is garbage.
    if count > bytes.len() / 62 + 1 {
        return Err(format!(
            "{count} entries cannot fit in {} bytes",
            bytes.len()
        ));
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(count);
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = r.at;
        let words = r.take(STAT_LEN)?;
        let word =
            |i: usize| u32::from_be_bytes(words[i * 4..i * 4 + 4].try_into().expect("four bytes"));
        let stat = Stat {
            ctime: (word(0), word(1)),
            mtime: (word(2), word(3)),
            dev: word(4),
            ino: word(5),
            mode: word(6),
            uid: word(7),
            gid: word(8),
            size: word(9),
        };
        let oid: Oid = r.take(HASH_LEN)?.try_into().expect("twenty bytes");
        let flags = r.u16()?;
        if flags & 0x8000 != 0 {
            return Err("an entry marked assume-unchanged".into());
        }
        if flags & 0x3000 != 0 {
            return Err("an entry with a conflict stage".into());
        }
        let extended = flags & 0x4000 != 0;
        if extended {
            if version < 3 {
                return Err("extended flags in a version 2 index".into());
            }
            let more = r.u16()?;
            if more & 0x6000 != 0 {
                return Err("a skip-worktree or intent-to-add entry".into());
            }
        }
        if !matches!(stat.mode, 0o100644 | 0o100755 | 0o120000 | 0o160000) {
            return Err(format!("an entry of mode {:o}", stat.mode));
        }
        let path = if version == 4 {
            let strip = r.varint()?;
            if strip > previous.len() {
                return Err("a path prefix longer than the previous path".into());
            }
            let mut path = previous[..previous.len() - strip].to_vec();
            path.extend_from_slice(r.until_nul()?);
            path
        } else {
            let name = r.until_nul()?.to_vec();
            // NUL padding to a multiple of eight bytes from the entry's start (one NUL at
            // least, already taken).
            let len = r.at - start;
            let padded = len.div_ceil(8) * 8;
            r.take(padded - len)?;
            name
        };
        if path.is_empty() || entries.last().is_some_and(|e| e.path >= path) {
            return Err("entries out of order".into());
        }
        previous.clone_from(&path);
        entries.push(Entry { path, stat, oid });
    }
    // Extensions, up to the trailing checksum: an optional one (its signature starts with an
    // upper-case letter) can be skipped; any other changes what the entries mean.
    let end = bytes.len().saturating_sub(HASH_LEN).max(r.at);
    let mut tree = None;
    while r.at + 8 <= end {
        let signature = r.take(4)?;
        let size = r.u32()? as usize;
        if !signature[0].is_ascii_uppercase() {
            return Err(format!(
                "the index extension '{}'",
                String::from_utf8_lossy(signature)
            ));
        }
        let data = r.take(size)?;
        if signature == b"TREE" {
            // A cache: one that does not parse is only rebuilt.
            tree = CacheTree::parse(data).ok();
        }
    }
    Ok(Parsed { entries, tree })
}

/// Writes a version 4 index of `entries` (sorted, stage 0) and the cache of tree ids to
/// `path`: into `<path>.lock`, created exclusively as git does (a writer there already, git or
/// another Lathe, makes this fail), then renamed over `path`.
pub(crate) fn write(path: &Path, entries: &[Entry], tree: Option<&CacheTree>) -> Result<()> {
    let mut out = Vec::with_capacity(entries.len() * 72 + 64);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&4u32.to_be_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
    let mut previous: &[u8] = &[];
    for entry in entries {
        let s = &entry.stat;
        for word in [
            s.ctime.0, s.ctime.1, s.mtime.0, s.mtime.1, s.dev, s.ino, s.mode, s.uid, s.gid, s.size,
        ] {
            out.extend_from_slice(&word.to_be_bytes());
        }
        out.extend_from_slice(&entry.oid);
        let flags = entry.path.len().min(0xfff) as u16;
        out.extend_from_slice(&flags.to_be_bytes());
        let common = previous
            .iter()
            .zip(&entry.path)
            .take_while(|(a, b)| a == b)
            .count();
        put_varint(&mut out, previous.len() - common);
        out.extend_from_slice(&entry.path[common..]);
        out.push(0);
        previous = &entry.path;
    }
    if let Some(tree) = tree {
        let mut data = Vec::new();
        tree.write(&[], &mut data);
        out.extend_from_slice(b"TREE");
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        out.extend_from_slice(&data);
    }
    // No checksum, as git writes with `index.skipHash` (its readers skip a null one): a SHA-1 of
    // the whole index on every snapshot is milliseconds on a large tree.
    out.extend_from_slice(&[0u8; HASH_LEN]);

    let mut lock_name = path.as_os_str().to_owned();
    lock_name.push(".lock");
    let lock = std::path::PathBuf::from(lock_name);
    let mut file = match std::fs::File::options()
        .write(true)
        .create_new(true)
        .open(&lock)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(Error::io(
                &lock,
                std::io::Error::new(
                    e.kind(),
                    "another process is writing this session's checkpoint index; if none is \
                     running (one was killed), remove this lock file and try again",
                ),
            ));
        }
        Err(e) => return Err(Error::io(&lock, e)),
    };
    let written = file.write_all(&out).and_then(|()| {
        drop(file);
        // The old index goes first, so that the rename replaces nothing: ext4 flushes a file
        // renamed over another at once (`auto_da_alloc`), a disk write in every snapshot. The
        // index is a cache: a reader that finds none, or after a crash an empty one, rebuilds
        // it from the work tree.
        let _ = std::fs::remove_file(path);
        std::fs::rename(&lock, path)
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&lock);
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// git's offset encoding (varint.c), the inverse of [`Reader::varint`].
fn put_varint(out: &mut Vec<u8>, mut value: usize) {
    let mut bytes = [0u8; 16];
    let mut at = bytes.len() - 1;
    bytes[at] = (value & 0x7f) as u8;
    value >>= 7;
    while value != 0 {
        value -= 1;
        at -= 1;
        bytes[at] = 0x80 | (value & 0x7f) as u8;
        value >>= 7;
    }
    out.extend_from_slice(&bytes[at..]);
}

pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err("the index ends early".into());
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("four bytes"),
        ))
    }

    fn u16(&mut self) -> std::result::Result<u16, String> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().expect("two bytes"),
        ))
    }

    /// Bytes up to a NUL, which is consumed.
    pub(crate) fn until_nul(&mut self) -> std::result::Result<&'a [u8], String> {
        self.until(0)
    }

    /// Bytes up to `end`, which is consumed.
    pub(crate) fn until(&mut self, end: u8) -> std::result::Result<&'a [u8], String> {
        let rest = &self.bytes[self.at..];
        let Some(n) = rest.iter().position(|b| *b == end) else {
            return Err("the index ends inside a path".into());
        };
        self.at += n + 1;
        Ok(&rest[..n])
    }

    /// git's offset encoding (varint.c): seven bits a byte, most significant first, each
    /// continuation adding one.
    fn varint(&mut self) -> std::result::Result<usize, String> {
        let mut byte = self.take(1)?[0];
        let mut value = (byte & 0x7f) as usize;
        while byte & 0x80 != 0 {
            value = value
                .checked_add(1)
                .and_then(|v| v.checked_mul(128))
                .ok_or("a path prefix length overflows")?;
            byte = self.take(1)?[0];
            value += (byte & 0x7f) as usize;
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_decode_as_git_writes_them() {
        // From git's varint.c: 127 is one byte, 128 is 0x80 0x00, 16511 is 0xff 0x7f.
        for (bytes, value) in [
            (&[0x00u8][..], 0usize),
            (&[0x7f], 127),
            (&[0x80, 0x00], 128),
            (&[0xff, 0x7f], 16511),
            (&[0x80, 0x80, 0x00], 16512),
        ] {
            let mut r = Reader { bytes, at: 0 };
            assert_eq!(r.varint().unwrap(), value, "{bytes:?}");
            assert_eq!(r.at, bytes.len());
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out, bytes, "{value}");
        }
    }

    #[test]
    fn garbage_is_unsupported_not_a_panic() {
        for bytes in [
            &b""[..],
            b"DIRC",
            b"DIRC\0\0\0\x05\0\0\0\0",
            b"DIRC\0\0\0\x02\xff\xff\xff\xff",
            b"DIRC\0\0\0\x02\0\0\0\x01\0\0",
        ] {
            assert!(parse(bytes).is_err(), "{bytes:?}");
        }
        assert!(parse(b"DIRC\0\0\0\x02\0\0\0\0").unwrap().entries.is_empty());
    }
}
