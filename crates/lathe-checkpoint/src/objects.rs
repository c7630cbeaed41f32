//! Git objects written in-process into the shadow repository's object store, as git writes
//! loose objects (`Documentation/gitformat-loose.txt`): the id is the SHA-1 of
//! `<kind> <length>\0<bytes>`, and the file `objects/<2 hex>/<38 hex>` holds the same bytes
//! in a zlib stream. A file is written aside (`objects/<2 hex>/tmp_obj_*`, where git makes its
//! own, which `git gc` clears when left behind) and renamed into place, so a reader never sees
//! half an object; an object already there, loose or in a pack (looked up in the packs' `.idx`
//! files, version 2), is not written again. Objects are read back the same ways: loose ones inflated, packed
//! ones through `crate::pack`.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::pack::Pack;
use crate::{Error, Result};

/// Objects up to this size are written loose without compression.
const STORED_UP_TO: usize = 1 << 20;

/// An object id: a SHA-1.
pub(crate) type Oid = [u8; 20];

/// The kinds of object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Blob,
    Tree,
    Commit,
    Tag,
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Blob => "blob",
            Kind::Tree => "tree",
            Kind::Commit => "commit",
            Kind::Tag => "tag",
        }
    }

    fn parse(name: &[u8]) -> Option<Kind> {
        Some(match name {
            b"blob" => Kind::Blob,
            b"tree" => Kind::Tree,
            b"commit" => Kind::Commit,
            b"tag" => Kind::Tag,
            _ => return None,
        })
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
#[derive(Debug)]
pub(crate) struct Objects {
    dir: PathBuf,
    /// The packs, opened at the first object not found loose, and again when an object is
    /// found nowhere (`git gc` may have packed it since).
    packs: std::sync::Mutex<Option<std::sync::Arc<Vec<Pack>>>>,
}

impl Objects {
    pub(crate) fn new(git_dir: &Path) -> Objects {
        Objects {
            dir: git_dir.join("objects"),
            packs: std::sync::Mutex::new(None),
        }
    }

    /// The packs, opened now if `reload` or never yet.
    fn packs(&self, reload: bool) -> std::sync::Arc<Vec<Pack>> {
        let mut packs = self.packs.lock().unwrap_or_else(|e| e.into_inner());
        if reload || packs.is_none() {
            *packs = Some(std::sync::Arc::new(Pack::all(&self.dir.join("pack"))));
        }
        std::sync::Arc::clone(packs.as_ref().expect("just opened"))
    }

    /// Whether the object is there, loose or packed.
    pub(crate) fn has(&self, oid: &Oid) -> bool {
        self.has_loose(oid) || self.packs(false).iter().any(|pack| pack.contains(oid))
    }

    /// The object `oid`, loose or packed: its kind and bytes. `None` when this reader
    /// cannot find or read it (not there, or in a form it does not know): the caller asks git.
    pub(crate) fn read(&self, oid: &Oid) -> Option<(Kind, Vec<u8>)> {
        if let Some(object) = self.read_loose(oid) {
            return Some(object);
        }
        for reload in [false, true] {
            for pack in self.packs(reload).iter() {
                match pack.read(oid, &|base| self.read(base)) {
                    Ok(Some(object)) => return Some(object),
                    Ok(None) => {}
                    Err(why) => {
                        tracing::debug!("reading {} from a pack: {why}", hex(oid));
                        return None;
                    }
                }
            }
            // Packed while we looked (`git gc` packs, then removes the loose copies).
            if let Some(object) = self.read_loose(oid) {
                return Some(object);
            }
        }
        None
    }

    fn read_loose(&self, oid: &Oid) -> Option<(Kind, Vec<u8>)> {
        use std::io::Read;
        let file = std::fs::File::open(self.path(oid)).ok()?;
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(std::io::BufReader::new(file))
            .read_to_end(&mut raw)
            .ok()?;
        let nul = raw.iter().position(|&b| b == 0)?;
        let head = &raw[..nul];
        let space = head.iter().position(|&b| b == b' ')?;
        let kind = Kind::parse(&head[..space])?;
        let len: usize = std::str::from_utf8(&head[space + 1..]).ok()?.parse().ok()?;
        if raw.len() - nul - 1 != len {
            return None;
        }
        raw.drain(..=nul);
        Some((kind, raw))
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
        if self.has(&oid) {
            return Ok(oid);
        }
        let path = self.path(&oid);
        let fan = path.parent().expect("objects/xx");
        match std::fs::create_dir(fan) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io(fan, e)),
        }
        // A snapshot waits for this: objects up to a megabyte are stored without compression (a
        // valid zlib stream git reads as any other; a millisecond saved on a 100 KB file),
        // larger ones at level 1, git's own default for loose objects. `git gc` compresses them
        // all when it packs. Made in memory, then written at once.
        let head = header(kind, bytes.len());
        let data = if bytes.len() <= STORED_UP_TO {
            zlib_stored(head.as_bytes(), bytes)
        } else {
            let mut data = Vec::with_capacity(bytes.len() / 2 + 64);
            let mut deflate =
                flate2::write::ZlibEncoder::new(&mut data, flate2::Compression::fast());
            deflate
                .write_all(head.as_bytes())
                .and_then(|()| deflate.write_all(bytes))
                .and_then(|()| deflate.finish().map(drop))
                .map_err(|e| Error::io(&path, e))?;
            data
        };
        // Beside its final name, as git makes its own (`objects/xx/tmp_obj_*`, which `git gc`
        // clears when left behind), read-only from the start, as git leaves its objects.
        let mut file = {
            use std::os::unix::fs::PermissionsExt;
            tempfile::Builder::new()
                .prefix("tmp_obj_")
                .permissions(std::fs::Permissions::from_mode(0o444))
                .tempfile_in(fan)
                .map_err(|e| Error::io(fan, e))?
        };
        file.write_all(&data)
            .map_err(|e| Error::io(file.path(), e))?;
        // Another process storing the same object at once renames the same bytes into place.
        file.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(oid)
    }
}

/// `head` then `body` as a zlib stream of stored (uncompressed) deflate blocks, made directly:
/// a compressor set up to store would first allocate and clear its dictionary and hash tables,
/// which costs more than the copy on a file of a few kilobytes.
fn zlib_stored(head: &[u8], body: &[u8]) -> Vec<u8> {
    const BLOCK: usize = 0xffff;
    let len = head.len() + body.len();
    let mut out = Vec::with_capacity(2 + len + 5 * (len / BLOCK + 1) + 4);
    // CMF: deflate, 32 KiB window; FLG: fastest, check bits making CMF*256+FLG a multiple of 31.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut rest = Chain(head, body);
    loop {
        let take = rest.remaining().min(BLOCK);
        let last = take == rest.remaining();
        out.push(u8::from(last));
        out.extend_from_slice(&(take as u16).to_le_bytes());
        out.extend_from_slice(&(!(take as u16)).to_le_bytes());
        rest.copy_into(take, &mut out);
        if last {
            break;
        }
    }
    let mut adler = adler2::Adler32::new();
    adler.write_slice(head);
    adler.write_slice(body);
    out.extend_from_slice(&adler.checksum().to_be_bytes());
    out
}

/// Two slices read as one, for [`zlib_stored`]'s blocks, which may span both.
struct Chain<'a>(&'a [u8], &'a [u8]);

impl Chain<'_> {
    fn remaining(&self) -> usize {
        self.0.len() + self.1.len()
    }

    /// Appends the next `n` bytes to `out`.
    fn copy_into(&mut self, n: usize, out: &mut Vec<u8>) {
        let first = n.min(self.0.len());
        out.extend_from_slice(&self.0[..first]);
        self.0 = &self.0[first..];
        let second = n - first;
        out.extend_from_slice(&self.1[..second]);
        self.1 = &self.1[second..];
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

    /// The stored zlib streams, across block boundaries, are what zlib reads back, and git
    /// (whose inflate checks the Adler-32 at the end) reads and checks them as its own.
    #[test]
    fn stored_objects_are_valid_zlib_git_reads() {
        assert_eq!(adler2::adler32_slice(b"Wikipedia"), 0x11e6_0398);
        let dir = tempfile::tempdir().unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q", "--bare"])
            .arg(dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap();
        assert!(status.success());
        let objects = Objects::new(dir.path());
        // Around one block (65,535 bytes, the header included) and several, and over zlib's
        // 5,552-byte checksum run with bytes that make its sums large.
        for len in [0, 1, 65_520, 65_525, 65_535, 65_536, 200_003, STORED_UP_TO] {
            let bytes: Vec<u8> = (0..len).map(|i| 255 - (i % 7) as u8).collect();
            let oid = objects.write(Kind::Blob, &bytes).unwrap();
            let raw = std::fs::read(objects.path(&oid)).unwrap();
            let mut inflated = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::read::ZlibDecoder::new(raw.as_slice()),
                &mut inflated,
            )
            .unwrap();
            let mut expected = header(Kind::Blob, len).into_bytes();
            expected.extend_from_slice(&bytes);
            assert!(inflated == expected, "{len} bytes");
            let out = std::process::Command::new("git")
                .args(["cat-file", "blob", &hex(&oid)])
                .env("GIT_DIR", dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .output()
                .unwrap();
            assert!(out.status.success(), "{len} bytes: {out:?}");
            assert!(out.stdout == bytes, "{len} bytes");
        }
        let fsck = std::process::Command::new("git")
            .args(["fsck", "--strict"])
            .env("GIT_DIR", dir.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(fsck.status.success(), "{fsck:?}");
    }

    /// An object git packed (and removed loose) is found in the pack and not written again.
    #[test]
    fn a_packed_object_is_not_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str], input: Option<&[u8]>| {
            let mut child = std::process::Command::new("git")
                .args(args)
                .env("GIT_DIR", dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            stdin.write_all(input.unwrap_or_default()).unwrap();
            drop(stdin);
            let out = child.wait_with_output().unwrap();
            assert!(out.status.success(), "{args:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q", "--bare"], None);
        let objects = Objects::new(dir.path());
        let mut ids = Vec::new();
        for i in 0..40 {
            ids.push(
                objects
                    .write(Kind::Blob, format!("{i}\n").as_bytes())
                    .unwrap(),
            );
        }
        // Each id as git computes it, and readable by git.
        assert_eq!(
            git(&["hash-object", "--stdin"], Some(b"7\n")).trim(),
            hex(&ids[7])
        );
        assert_eq!(git(&["cat-file", "-p", &hex(&ids[7])], None), "7\n");
        let list: String = ids.iter().map(|id| hex(id) + "\n").collect();
        git(
            &[
                "pack-objects",
                "-q",
                &format!("{}/objects/pack/pack", dir.path().display()),
            ],
            Some(list.as_bytes()),
        );
        git(&["prune-packed"], None);
        let objects = Objects::new(dir.path());
        for id in &ids {
            assert!(!objects.has_loose(id));
            assert!(objects.has(id), "{}", hex(id));
        }
        assert!(!objects.has(&id(Kind::Blob, b"not there")));
        objects.write(Kind::Blob, b"7\n").unwrap();
        assert!(
            !objects.has_loose(&ids[7]),
            "found packed: not written loose"
        );
    }
}
