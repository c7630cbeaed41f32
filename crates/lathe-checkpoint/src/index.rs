//! Reading a session's git index file in-process, for its stat cache: which paths it holds,
//! with the mode and the `lstat` data git recorded when it last hashed each one.
//!
//! Versions 2, 3 and 4 of the format (git's `Documentation/gitformat-index.txt`; version 4
//! prefix-compresses the paths). Object ids are not kept, and the trailing checksum is not
//! checked: the index is the session's own, and anything unexpected only costs a fallback to
//! git, which reads it itself. Anything this reader does not understand (another version, a
//! split index's `link` extension, a sparse index, conflict stages, flags that change what
//! the entry means) is [`Read::Unsupported`].

use std::path::Path;

/// The `lstat` fields git compares, truncated to 32 bits as the index stores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub(crate) ctime: (u32, u32),
    pub(crate) mtime: (u32, u32),
    pub(crate) ino: u32,
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
            && self.ino == other.ino
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
            ino: meta.ino() as u32,
            size: meta.size() as u32,
            mode,
        })
    }
}

/// One entry: a path (bytes, `/`-separated, relative to the work tree) and its stat data.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) path: Vec<u8>,
    pub(crate) stat: Stat,
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
        Ok((entries, _)) => Read::Parsed(Index {
            entries,
            mtime: (meta.mtime(), meta.mtime_nsec()),
        }),
        Err(why) => Read::Unsupported(why),
    }
}

/// Parses an index file's bytes: its entries and version.
pub(crate) fn parse(bytes: &[u8]) -> Result<(Vec<Entry>, u32), String> {
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
            ino: word(5),
            mode: word(6),
            size: word(9),
        };
        r.take(HASH_LEN)?;
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
        entries.push(Entry { path, stat });
    }
    // Extensions, up to the trailing checksum: an optional one (its signature starts with an
    // upper-case letter) can be skipped; any other changes what the entries mean.
    let end = bytes.len().saturating_sub(HASH_LEN).max(r.at);
    while r.at + 8 <= end {
        let signature = r.take(4)?;
        let size = r.u32()? as usize;
        if !signature[0].is_ascii_uppercase() {
            return Err(format!(
                "the index extension '{}'",
                String::from_utf8_lossy(signature)
            ));
        }
        r.take(size)?;
    }
    Ok((entries, version))
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err("the index ends early".into());
        };
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_be_bytes(
            self.take(4)?.try_into().expect("four bytes"),
        ))
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().expect("two bytes"),
        ))
    }

    /// Bytes up to a NUL, which is consumed.
    fn until_nul(&mut self) -> Result<&'a [u8], String> {
        let rest = &self.bytes[self.at..];
        let Some(n) = rest.iter().position(|b| *b == 0) else {
            return Err("the index ends inside a path".into());
        };
        self.at += n + 1;
        Ok(&rest[..n])
    }

    /// git's offset encoding (varint.c): seven bits a byte, most significant first, each
    /// continuation adding one.
    fn varint(&mut self) -> Result<usize, String> {
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
        assert!(parse(b"DIRC\0\0\0\x02\0\0\0\0").unwrap().0.is_empty());
    }
}
