//! Reading objects out of the shadow repository's packs (`Documentation/gitformat-pack.txt`),
//! which `git gc --auto` makes of the loose objects snapshots leave: an index file (version 2:
//! a fan-out table of 256 counts, the sorted ids, their CRCs, their offsets, the offsets over
//! 2 GiB) and the pack it indexes, whose entries are zlib-deflated whole objects or deltas
//! against another entry (by offset in the same pack, or by id). Both files are read with reads
//! at offsets (a large pack's index is megabytes), never whole.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::objects::{Kind, Oid};

/// An object: its kind and its bytes.
pub(crate) type Object = (Kind, Vec<u8>);
/// Where a delta's base outside the pack is read.
pub(crate) type Base<'a> = dyn Fn(&Oid) -> Option<Object> + 'a;

/// Entries whose deltas chain deeper than this are refused (git's own default depth is 50).
const MAX_CHAIN: usize = 10_000;

/// One pack: its index and its data.
#[derive(Debug)]
pub(crate) struct Pack {
    index: File,
    data: File,
    fanout: Vec<u32>,
}

/// An entry's kind as a pack stores it.
enum Stored {
    Whole(Kind),
    /// A delta against the entry this many bytes before it.
    OffsetDelta(u64),
    /// A delta against the object with this id.
    RefDelta(Oid),
}

impl Pack {
    /// The packs in `dir`, each with its `.pack`; one this reader does not know (an index of
    /// another version) is skipped.
    pub(crate) fn all(dir: &Path) -> Vec<Pack> {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "idx"))
            .filter_map(|p| Pack::open(&p))
            .collect()
    }

    fn open(index_path: &Path) -> Option<Pack> {
        let index = File::open(index_path).ok()?;
        let data = File::open(index_path.with_extension("pack")).ok()?;
        let mut head = [0u8; 8 + 256 * 4];
        index.read_exact_at(&mut head, 0).ok()?;
        if head[..8] != *b"\xfftOc\0\0\0\x02" {
            return None;
        }
        let fanout = head[8..]
            .chunks(4)
            .map(|c| u32::from_be_bytes(c.try_into().expect("four bytes")))
            .collect();
        Some(Pack {
            index,
            data,
            fanout,
        })
    }

    fn count(&self) -> u64 {
        u64::from(self.fanout[255])
    }

    /// The position of `oid` among the index's sorted ids.
    fn position(&self, oid: &Oid) -> Option<u64> {
        let first = oid[0] as usize;
        let (mut lo, mut hi) = (
            if first == 0 {
                0
            } else {
                self.fanout[first - 1]
            },
            self.fanout[first],
        );
        let mut id = [0u8; 20];
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let at = 8 + 256 * 4 + u64::from(mid) * 20;
            self.index.read_exact_at(&mut id, at).ok()?;
            match id.cmp(oid) {
                std::cmp::Ordering::Equal => return Some(u64::from(mid)),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        None
    }

    pub(crate) fn contains(&self, oid: &Oid) -> bool {
        self.position(oid).is_some()
    }

    /// Where in the pack the entry at `position` starts.
    fn offset(&self, position: u64) -> Option<u64> {
        let n = self.count();
        let table = 8 + 256 * 4 + n * 20 + n * 4;
        let mut word = [0u8; 4];
        self.index
            .read_exact_at(&mut word, table + position * 4)
            .ok()?;
        let small = u32::from_be_bytes(word);
        if small & 0x8000_0000 == 0 {
            return Some(u64::from(small));
        }
        let mut large = [0u8; 8];
        let at = table + n * 4 + u64::from(small & 0x7fff_ffff) * 8;
        self.index.read_exact_at(&mut large, at).ok()?;
        Some(u64::from_be_bytes(large))
    }

    /// The object `oid` if this pack has it: its kind and its bytes. A delta against an object
    /// of another pack or a loose one asks `base` for it. `Err` for a pack this reader cannot
    /// make sense of (the caller asks git).
    pub(crate) fn read(&self, oid: &Oid, base: &Base<'_>) -> Result<Option<Object>, String> {
        let Some(position) = self.position(oid) else {
            return Ok(None);
        };
        let offset = self.offset(position).ok_or("the pack index is cut short")?;
        self.read_at(offset, base, 0).map(Some)
    }

    fn read_at(&self, offset: u64, base: &Base<'_>, depth: usize) -> Result<Object, String> {
        if depth > MAX_CHAIN {
            return Err("a delta chain too deep".into());
        }
        let (stored, size, start) = self.header(offset)?;
        let data = self.inflate(start, size)?;
        let (kind, source) = match stored {
            Stored::Whole(kind) => return Ok((kind, data)),
            Stored::OffsetDelta(back) => {
                let at = offset
                    .checked_sub(back)
                    .ok_or("a delta base before the pack's start")?;
                self.read_at(at, base, depth + 1)?
            }
            Stored::RefDelta(id) => match self.position(&id) {
                Some(position) => {
                    let at = self.offset(position).ok_or("the pack index is cut short")?;
                    self.read_at(at, base, depth + 1)?
                }
                None => base(&id).ok_or("a delta base that is nowhere")?,
            },
        };
        Ok((kind, apply_delta(&source, &data)?))
    }

    /// An entry's kind, its (inflated) size, and where its deflated data starts.
    fn header(&self, offset: u64) -> Result<(Stored, usize, u64), String> {
        let mut head = [0u8; 40];
        let got = self
            .data
            .read_at(&mut head, offset)
            .map_err(|e| e.to_string())?;
        let head = &head[..got];
        let mut at = 0;
        let byte = |at: usize| head.get(at).copied().ok_or("an entry cut short");
        let mut b = byte(at)?;
        at += 1;
        let kind = (b >> 4) & 7;
        let mut size = u64::from(b & 15);
        let mut shift = 4;
        while b & 0x80 != 0 {
            b = byte(at)?;
            at += 1;
            size |= u64::from(b & 0x7f)
                .checked_shl(shift)
                .ok_or("a size too large")?;
            shift += 7;
        }
        let stored = match kind {
            1 => Stored::Whole(Kind::Commit),
            2 => Stored::Whole(Kind::Tree),
            3 => Stored::Whole(Kind::Blob),
            4 => Stored::Whole(Kind::Tag),
            6 => {
                let mut b = byte(at)?;
                at += 1;
                let mut back = u64::from(b & 0x7f);
                while b & 0x80 != 0 {
                    b = byte(at)?;
                    at += 1;
                    back = (back + 1)
                        .checked_shl(7)
                        .ok_or("a delta offset too large")?
                        | u64::from(b & 0x7f);
                }
                Stored::OffsetDelta(back)
            }
            7 => {
                let id: Oid = head
                    .get(at..at + 20)
                    .ok_or("an entry cut short")?
                    .try_into()
                    .expect("twenty bytes");
                at += 20;
                Stored::RefDelta(id)
            }
            other => return Err(format!("an entry of unknown type {other}")),
        };
        let size = usize::try_from(size).map_err(|_| "a size too large")?;
        Ok((stored, size, offset + at as u64))
    }

    fn inflate(&self, start: u64, size: usize) -> Result<Vec<u8>, String> {
        let reader = At {
            file: &self.data,
            pos: start,
        };
        let mut out = Vec::with_capacity(size);
        flate2::read::ZlibDecoder::new(reader)
            .take(size as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        if out.len() != size {
            return Err(format!(
                "an entry of {} bytes where its header says {size}",
                out.len()
            ));
        }
        Ok(out)
    }
}

/// A file read from a position on.
struct At<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for At<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// A size as a delta gives it: seven bits a byte, least significant first.
fn varint(data: &[u8], at: &mut usize) -> Result<usize, String> {
    let mut value: usize = 0;
    let mut shift = 0u32;
    loop {
        let b = *data.get(*at).ok_or("a delta cut short")?;
        *at += 1;
        value |= usize::from(b & 0x7f)
            .checked_shl(shift)
            .ok_or("a delta size too large")?;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(value);
        }
    }
}

/// The object `delta` makes of `source`: copies of ranges of the source and inserted bytes.
pub(crate) fn apply_delta(source: &[u8], delta: &[u8]) -> Result<Vec<u8>, String> {
    let mut at = 0;
    if varint(delta, &mut at)? != source.len() {
        return Err("a delta for a base of another size".into());
    }
    let size = varint(delta, &mut at)?;
    let mut out = Vec::with_capacity(size);
    while at < delta.len() {
        let op = delta[at];
        at += 1;
        if op & 0x80 != 0 {
            let mut field = |bits: u8, first: u32| -> Result<usize, String> {
                let mut value = 0usize;
                for i in 0..bits {
                    if op & (1 << (first + u32::from(i))) != 0 {
                        let b = *delta.get(at).ok_or("a delta cut short")?;
                        at += 1;
                        value |= usize::from(b) << (8 * u32::from(i));
                    }
                }
                Ok(value)
            };
            let offset = field(4, 0)?;
            let len = match field(3, 4)? {
                0 => 0x10000,
                n => n,
            };
            let range = source
                .get(offset..offset.checked_add(len).ok_or("a copy out of range")?)
                .ok_or("a copy out of the base's range")?;
            out.extend_from_slice(range);
        } else if op != 0 {
            let len = usize::from(op);
            out.extend_from_slice(delta.get(at..at + len).ok_or("a delta cut short")?);
            at += len;
        } else {
            return Err("a delta with a zero instruction".into());
        }
    }
    if out.len() != size {
        return Err("a delta that makes an object of another size".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_copy_and_insert() {
        let source = b"hello, world\n";
        // Sizes 13 and 19; copy 7 bytes from offset 0, insert "there\n ", copy "world\n" (6 at 7).
        let mut delta = vec![13, 20];
        delta.extend([0x80 | 0x10, 7]);
        delta.push(7);
        delta.extend(b"there, ");
        delta.extend([0x80 | 0x01 | 0x10, 7, 6]);
        assert_eq!(
            apply_delta(source, &delta).unwrap(),
            b"hello, there, world\n"
        );
        assert!(apply_delta(b"short", &delta).is_err());
        assert!(apply_delta(source, &[13, 1, 0]).is_err());
    }
}
