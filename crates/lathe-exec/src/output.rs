//! Reading a command's artifact, running or finished: by byte range, or by regex. Memory stays
//! bounded however large the artifact: it is read in chunks, never loaded whole.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::capture::count_newlines;
use crate::command::{CommandId, CommandStatus};

/// Bytes returned by a read when the caller gives no limit.
pub const DEFAULT_READ_LIMIT: usize = 40 * 1024;
/// The most bytes one read returns, whatever the caller asks: keeps memory bounded.
pub const MAX_READ_LIMIT: usize = 4 << 20;
/// Matching lines returned by a search when the caller gives no limit.
pub const DEFAULT_SEARCH_LIMIT: usize = 100;
/// Bytes read per step when counting newlines or searching.
pub(crate) const CHUNK: usize = 1 << 20;

/// A byte range of a command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputPage {
    /// The command.
    pub id: CommandId,
    /// Offset of the first byte returned.
    pub offset: u64,
    /// The raw bytes, exactly as in the artifact.
    pub bytes: Vec<u8>,
    /// The line (1-based) holding the first byte returned.
    pub first_line: u64,
    /// Bytes readable in the artifact when the read was made.
    pub available: u64,
    /// Bytes the command printed, including any past the artifact cap.
    pub total_bytes: u64,
    /// The command's status when the read was made.
    pub status: CommandStatus,
    /// Whether the output is complete (every writer closed the pipe): nothing more will come.
    pub complete: bool,
}

impl OutputPage {
    /// Offset just past the last byte returned.
    pub fn end(&self) -> u64 {
        self.offset + self.bytes.len() as u64
    }

    /// Whether the artifact holds more bytes past this page.
    pub fn more(&self) -> bool {
        self.end() < self.available
    }

    /// The line holding the last byte returned.
    pub fn last_line(&self) -> u64 {
        match self.bytes.split_last() {
            Some((_, before)) => self.first_line + count_newlines(before),
            None => self.first_line,
        }
    }
}

/// One line matching a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchMatch {
    /// Its line number (1-based).
    pub line: u64,
    /// Offset of its first byte.
    pub offset: u64,
    /// The line, cleaned for reading and cut when very long.
    pub text: String,
}

/// The lines of a command's output matching a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResult {
    /// The command.
    pub id: CommandId,
    /// The pattern as given.
    pub pattern: String,
    /// Why the pattern was searched as literal text (it is not a valid regex).
    pub literal_because: Option<String>,
    /// Offset where the search started.
    pub start: u64,
    /// Offset where it stopped (the readable end of the artifact).
    pub end: u64,
    /// Bytes the command printed, including any past the artifact cap (never searched).
    pub total_bytes: u64,
    /// The first matching lines, up to the limit.
    pub matches: Vec<SearchMatch>,
    /// All matching lines in the searched range.
    pub total_matches: u64,
    /// Where to start the next search to see the matches past the limit.
    pub next_offset: Option<u64>,
    /// The command's status when the search ran.
    pub status: CommandStatus,
}

/// Fills `buf` from `offset` as far as the file allows; returns the bytes read.
pub(crate) fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// Newlines in the file's bytes `from..to`, counted a chunk at a time.
pub(crate) fn count_newlines_in(file: &File, from: u64, to: u64) -> io::Result<u64> {
    let mut buf = vec![0u8; CHUNK.min(usize::try_from(to.saturating_sub(from)).unwrap_or(CHUNK))];
    let mut pos = from;
    let mut count = 0;
    while pos < to {
        let want = usize::try_from(to - pos)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let n = read_full_at(file, &mut buf[..want], pos)?;
        if n == 0 {
            break;
        }
        count += count_newlines(&buf[..n]);
        pos += n as u64;
    }
    Ok(count)
}

/// Reads `offset..offset+limit` (within `available`) and the number of the line it starts in,
/// counting from an indexed position (`base_offset`, `base_newlines`).
pub(crate) fn read_page(
    file: &File,
    offset: u64,
    limit: usize,
    available: u64,
    (base_offset, base_newlines): (u64, u64),
) -> io::Result<(Vec<u8>, u64)> {
    let offset = offset.min(available);
    let newlines = base_newlines + count_newlines_in(file, base_offset.min(offset), offset)?;
    let len = usize::try_from(available - offset)
        .unwrap_or(usize::MAX)
        .min(limit);
    let mut bytes = vec![0u8; len];
    let n = read_full_at(file, &mut bytes, offset)?;
    bytes.truncate(n);
    Ok((bytes, newlines + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn file_with(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn pages_count_lines_from_any_base() {
        let bytes: Vec<u8> = (1..=500)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let file = file_with(&bytes);
        let len = bytes.len() as u64;
        for offset in [0u64, 1, 7, 100, 1234, len - 1, len] {
            let (page, first_line) = read_page(&file, offset, 50, len, (0, 0)).unwrap();
            let expected_line = count_newlines(&bytes[..offset as usize]) + 1;
            assert_eq!(first_line, expected_line, "offset {offset}");
            let end = (offset as usize + 50).min(bytes.len());
            assert_eq!(page, &bytes[offset as usize..end]);
        }
        // Starting from an indexed base gives the same answer.
        let base = (100, count_newlines(&bytes[..100]));
        assert_eq!(
            read_page(&file, 1234, 10, len, base).unwrap().1,
            count_newlines(&bytes[..1234]) + 1
        );
    }
}
