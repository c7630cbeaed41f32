//! Searching one file. The head of the file (most source files whole) is read into a buffer
//! first: a NUL byte there marks a binary file before any line is searched, and a file that fits
//! is searched as one slice, the searcher's fastest path. Longer files continue as a stream.
//!
//! Reading the head ourselves also settles a ripgrep quirk: its reader hands the first three
//! bytes over on their own (to look for a byte-order mark), so a match in them could be
//! reported before the rest of the first buffer was checked for binary data.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink};

use nix::fcntl::OFlag;

use crate::search_walk::Stop;
use lathe_runtime::workspace::Beneath;

/// Bytes read before searching: the whole of most source files.
const HEAD_BYTES: usize = 64 * 1024;

/// ripgrep's test for binary files found by a walk: a NUL byte.
const BINARY_BYTE: u8 = 0;

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// The most a searcher may hold in memory for one line (or, in multi-line mode, one file): a
/// pathological file (a gigabyte on one line) is reported as unreadable instead of exhausting
/// memory. Each search thread has its own searcher.
const HEAP_LIMIT: usize = 256 * 1024 * 1024;

/// What reading a file found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// Searched as text (the sink may still have been told of binary data further on).
    Text,
    /// Binary data in the head: not searched.
    Binary,
}

/// Searches files one at a time, reusing its buffers (one per thread).
pub(super) struct FileSearcher {
    /// For files without a byte-order mark.
    plain: Searcher,
    /// For UTF-16 files, which the searcher transcodes (their text is full of NUL bytes).
    transcoding: Searcher,
    head: Vec<u8>,
}

impl FileSearcher {
    /// A searcher configured by `builder` (line numbers, context, multi-line); binary detection
    /// and encoding handling are set here.
    pub fn new(builder: &SearcherBuilder) -> FileSearcher {
        let mut plain = builder.clone();
        plain
            .binary_detection(BinaryDetection::quit(BINARY_BYTE))
            .heap_limit(Some(HEAP_LIMIT))
            .bom_sniffing(false);
        let mut transcoding = builder.clone();
        transcoding
            .binary_detection(BinaryDetection::quit(BINARY_BYTE))
            .heap_limit(Some(HEAP_LIMIT))
            .bom_sniffing(true);
        FileSearcher {
            plain: plain.build(),
            transcoding: transcoding.build(),
            head: vec![0; HEAD_BYTES],
        }
    }

    /// Searches the file at `path`, opened beneath its root with no symlink on the way, and
    /// reports to `sink`.
    pub fn search<S>(
        &mut self,
        path: &Path,
        beneath: &Beneath,
        matcher: &RegexMatcher,
        stop: &Stop,
        sink: S,
    ) -> io::Result<Verdict>
    where
        S: Sink<Error = io::Error>,
    {
        let mut file = open(beneath, path)?;
        let mut filled = 0;
        let complete = loop {
            check(stop)?;
            match file.read(&mut self.head[filled..]) {
                Ok(0) => break true,
                Ok(n) => {
                    filled += n;
                    if filled == self.head.len() {
                        break false;
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        };
        let head = &self.head[..filled];
        let rest = CancelReader { inner: file, stop };
        if head.starts_with(b"\xFF\xFE") || head.starts_with(b"\xFE\xFF") {
            let searcher = &mut self.transcoding;
            if complete {
                searcher.search_slice(matcher, head, sink)?;
            } else {
                searcher.search_reader(matcher, head.chain(rest), sink)?;
            }
            return Ok(Verdict::Text);
        }
        if memchr::memchr(BINARY_BYTE, head).is_some() {
            return Ok(Verdict::Binary);
        }
        let body = head.strip_prefix(UTF8_BOM).unwrap_or(head);
        if complete {
            self.plain.search_slice(matcher, body, sink)?;
        } else {
            self.plain.search_reader(matcher, body.chain(rest), sink)?;
        }
        Ok(Verdict::Text)
    }
}

/// Opens a file found by the walk beneath its root: a symlink swapped in since, in any component
/// of the path, makes the open fail instead of reading what it points to. A FIFO swapped in does
/// not block the open (`O_NONBLOCK` changes nothing for regular files).
fn open(beneath: &Beneath, path: &Path) -> io::Result<File> {
    beneath.open(path, OFlag::O_RDONLY | OFlag::O_NOCTTY | OFlag::O_NONBLOCK)
}

fn check(stop: &Stop) -> io::Result<()> {
    if stop.is_set() {
        Err(io::Error::other("search cancelled"))
    } else {
        Ok(())
    }
}

/// A reader that fails once the call is cancelled, so that even one huge file stops promptly.
struct CancelReader<'a> {
    inner: File,
    stop: &'a Stop,
}

impl Read for CancelReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        check(self.stop)?;
        self.inner.read(buf)
    }
}
