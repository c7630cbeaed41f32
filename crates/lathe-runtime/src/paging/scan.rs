//! One streaming pass over a file: skip to the first wanted line, keep the wanted lines (each
//! cut to a bounded size), count the rest, and hash everything for the session's staleness
//! check. Memory stays bounded by the window, whatever the file's size.
//!
//! Speed: lines before and after the window are only counted, 256 KiB at a time with a
//! vectorised counter, so a read near the end of a gigabyte file costs about one pass of
//! `wc -l` plus the hash, with no per-line work.

use std::io::{self, Read};

use tokio_util::sync::CancellationToken;

use crate::session::{FileStamp, StampBuilder};
use crate::text::{UTF8_BOM, count_newlines};

/// Bytes read per system call.
const CHUNK: usize = 256 * 1024;

/// Which lines to keep.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    /// The first line to keep (1-based).
    pub offset: u64,
    /// How many lines to keep at most.
    pub limit: u64,
    /// Lines longer than this many characters are cut.
    pub max_line_chars: usize,
    /// Once the kept lines hold this many bytes, the window ends early (at a line boundary),
    /// so even a huge `limit` keeps memory bounded.
    pub max_kept_bytes: usize,
}

/// A kept line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its 1-based number.
    pub number: u64,
    /// Its text: lossy UTF-8, without the line ending (and without a BOM on line 1), cut to
    /// `max_line_chars`.
    pub text: String,
    /// When the line was cut: how many characters it has in all.
    pub cut_from: Option<u64>,
}

/// What one pass found.
#[derive(Debug, Clone)]
pub struct Scan {
    /// Lines in the file (a last line without `\n` counts).
    pub total_lines: u64,
    /// Bytes read.
    pub bytes: u64,
    /// The kept lines.
    pub lines: Vec<Line>,
    /// A kept line held bytes that are not UTF-8.
    pub invalid_utf8: bool,
    /// A kept line ended with `\r\n`.
    pub crlf: bool,
    /// A line ended with a bare `\n` (with `crlf`: the endings are mixed).
    pub lf: bool,
    /// The file does not end with `\n`.
    pub no_final_newline: bool,
    /// The stamp of the whole content, unless the file changed size while it was read.
    pub stamp: Option<FileStamp>,
}

/// Scans `reader`, whose first bytes (`prefix`) were already read, expecting `len` bytes in all.
/// Stops with `ErrorKind::Interrupted` when `cancel` fires.
pub fn scan(
    reader: &mut impl Read,
    prefix: &[u8],
    len: u64,
    request: Request,
    cancel: &CancellationToken,
) -> io::Result<Scan> {
    let mut scanner = Scanner::new(request, len);
    scanner.feed(prefix);
    let mut buf = vec![0u8; CHUNK];
    loop {
        if cancel.is_cancelled() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        scanner.feed(&buf[..n]);
    }
    Ok(scanner.finish())
}

struct Scanner {
    request: Request,
    /// The number of the line the next byte belongs to.
    line_no: u64,
    /// Bytes of the kept line in progress, at most `keep_bytes`.
    current: Vec<u8>,
    /// Characters (UTF-8 lead bytes) of the line in progress.
    current_chars: u64,
    /// The last byte of the line in progress (to spot `\r\n` when the tail was not kept).
    current_last: Option<u8>,
    keep_bytes: usize,
    lines: Vec<Line>,
    /// Text bytes in `lines`.
    kept_bytes: usize,
    invalid_utf8: bool,
    crlf: bool,
    lf: bool,
    last_byte: Option<u8>,
    bytes: u64,
    stamp: StampBuilder,
}

impl Scanner {
    fn new(request: Request, len: u64) -> Self {
        Scanner {
            request,
            line_no: 1,
            current: Vec::new(),
            current_chars: 0,
            current_last: None,
            // Enough for `max_line_chars` characters of up to 4 bytes, plus a BOM.
            keep_bytes: request.max_line_chars.saturating_mul(4).saturating_add(8),
            lines: Vec::new(),
            kept_bytes: 0,
            invalid_utf8: false,
            crlf: false,
            lf: false,
            last_byte: None,
            bytes: 0,
            stamp: StampBuilder::new(len),
        }
    }

    /// The first line number after the window.
    fn window_end(&self) -> u64 {
        self.request.offset.saturating_add(self.request.limit)
    }

    fn feed(&mut self, buf: &[u8]) {
        if buf.is_empty() {
            return;
        }
        self.stamp.update(buf);
        self.bytes += buf.len() as u64;
        let mut pos = 0;
        while pos < buf.len() {
            let rest = &buf[pos..];
            if self.line_no < self.request.offset {
                let need = self.request.offset - self.line_no;
                let count = count_newlines(rest);
                if count < need {
                    self.line_no += count;
                    break;
                }
                let nl = memchr::memchr_iter(b'\n', rest)
                    .nth((need - 1) as usize)
                    .expect("counted enough newlines");
                self.line_no += need;
                pos += nl + 1;
            } else if self.line_no < self.window_end() {
                match memchr::memchr(b'\n', rest) {
                    Some(nl) => {
                        self.push(&rest[..nl]);
                        self.end_line(true);
                        pos += nl + 1;
                    }
                    None => {
                        self.push(rest);
                        break;
                    }
                }
            } else {
                self.line_no += count_newlines(rest);
                break;
            }
        }
        self.last_byte = buf.last().copied();
    }

    fn push(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let room = self.keep_bytes.saturating_sub(self.current.len());
        self.current
            .extend_from_slice(&bytes[..room.min(bytes.len())]);
        self.current_chars += bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count() as u64;
        self.current_last = bytes.last().copied();
    }

    fn end_line(&mut self, terminated: bool) {
        let mut kept: &[u8] = &self.current;
        let mut chars = self.current_chars;
        if self.line_no == 1 && kept.starts_with(UTF8_BOM) {
            kept = &kept[UTF8_BOM.len()..];
            chars -= 1;
        }
        let whole = self.current.len() < self.keep_bytes;
        if terminated && self.current_last != Some(b'\r') {
            self.lf = true;
        }
        if terminated && self.current_last == Some(b'\r') {
            self.crlf = true;
            chars -= 1;
            if whole {
                kept = &kept[..kept.len() - 1];
            }
        }
        if !whole {
            kept = without_partial_char(kept);
        }
        let decoded = String::from_utf8_lossy(kept);
        if matches!(decoded, std::borrow::Cow::Owned(_)) {
            self.invalid_utf8 = true;
        }
        let max = self.request.max_line_chars;
        let (text, cut_from) = if chars > max as u64 {
            (decoded.chars().take(max).collect(), Some(chars))
        } else {
            (decoded.into_owned(), None)
        };
        self.kept_bytes += text.len();
        self.lines.push(Line {
            number: self.line_no,
            text,
            cut_from,
        });
        if self.kept_bytes >= self.request.max_kept_bytes {
            // End the window after this line: what follows is only counted.
            self.request.limit = self.line_no + 1 - self.request.offset;
        }
        self.current.clear();
        self.current_chars = 0;
        self.current_last = None;
        self.line_no += 1;
    }

    fn finish(mut self) -> Scan {
        let unterminated = self.last_byte.is_some_and(|b| b != b'\n');
        if unterminated && self.line_no >= self.request.offset && self.line_no < self.window_end() {
            self.end_line(false);
            // end_line moved past the last line; the count below is of lines, not of the next.
            self.line_no -= 1;
        } else if !unterminated {
            self.line_no -= 1;
        }
        Scan {
            total_lines: self.line_no,
            bytes: self.bytes,
            lines: self.lines,
            invalid_utf8: self.invalid_utf8,
            crlf: self.crlf,
            lf: self.lf,
            no_final_newline: unterminated,
            stamp: self.stamp.finish(),
        }
    }
}

/// Drops an incomplete UTF-8 sequence at the end of a cut buffer, so the cut itself does not
/// look like invalid UTF-8.
fn without_partial_char(bytes: &[u8]) -> &[u8] {
    let start = bytes.len().saturating_sub(4);
    for i in (start..bytes.len()).rev() {
        let b = bytes[i];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let width = match b {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        return if i + width > bytes.len() {
            &bytes[..i]
        } else {
            bytes
        };
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(content: &[u8], offset: u64, limit: u64, max: usize) -> Scan {
        let request = Request {
            offset,
            limit,
            max_line_chars: max,
            max_kept_bytes: usize::MAX,
        };
        let cancel = CancellationToken::new();
        // Feed a prefix and the rest separately, as read_file does.
        let split = content.len().min(5);
        let mut rest = &content[split..];
        scan(
            &mut rest,
            &content[..split],
            content.len() as u64,
            request,
            &cancel,
        )
        .unwrap()
    }

    fn texts(scan: &Scan) -> Vec<(u64, &str)> {
        scan.lines
            .iter()
            .map(|l| (l.number, l.text.as_str()))
            .collect()
    }

    #[test]
    fn window_and_totals() {
        let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let s = run(content.as_bytes(), 4, 3, 100);
        assert_eq!(texts(&s), vec![(4, "line 4"), (5, "line 5"), (6, "line 6")]);
        assert_eq!(s.total_lines, 10);
        assert!(!s.no_final_newline);
        assert_eq!(s.stamp, Some(FileStamp::of(content.as_bytes())));
        let s = run(b"a\nb", 1, 10, 100);
        assert_eq!(texts(&s), vec![(1, "a"), (2, "b")]);
        assert_eq!(s.total_lines, 2);
        assert!(s.no_final_newline);
        let s = run(b"", 1, 10, 100);
        assert_eq!(s.total_lines, 0);
        assert!(s.lines.is_empty());
        let s = run(b"\n\n", 1, 10, 100);
        assert_eq!(texts(&s), vec![(1, ""), (2, "")]);
    }

    #[test]
    fn past_the_end_keeps_nothing_but_counts() {
        let s = run(b"a\nb\nc", 7, 10, 100);
        assert!(s.lines.is_empty());
        assert_eq!(s.total_lines, 3);
        let s = run(b"a\nb\nc\n", 3, 10, 100);
        assert_eq!(texts(&s), vec![(3, "c")]);
    }

    #[test]
    fn crlf_bom_and_lone_cr() {
        let s = run(b"\xEF\xBB\xBFa\r\nb\rc\r\nd\r", 1, 10, 100);
        assert_eq!(texts(&s), vec![(1, "a"), (2, "b\rc"), (3, "d\r")]);
        assert!(s.crlf);
    }

    #[test]
    fn long_lines_are_cut_with_their_length() {
        let long = "é".repeat(50) + "\nshort\n";
        let s = run(long.as_bytes(), 1, 10, 10);
        assert_eq!(s.lines[0].text, "é".repeat(10));
        assert_eq!(s.lines[0].cut_from, Some(50));
        assert_eq!(s.lines[1].cut_from, None);
        assert!(
            !s.invalid_utf8,
            "a cut inside a character is not invalid UTF-8"
        );
        let crlf_long = "x".repeat(40) + "\r\n";
        let s = run(crlf_long.as_bytes(), 1, 10, 10);
        assert_eq!(s.lines[0].cut_from, Some(40));
        assert!(s.crlf);
    }

    #[test]
    fn invalid_utf8_is_lossy_and_flagged() {
        let s = run(b"ok\n\xFF\xFEbad\n", 1, 10, 100);
        assert_eq!(s.lines[1].text, "\u{FFFD}\u{FFFD}bad");
        assert!(s.invalid_utf8);
    }

    #[test]
    fn chunk_boundaries_do_not_matter() {
        let content: String = (1..=5000)
            .map(|i| format!("{i:>width$}\n", width = i % 300))
            .collect();
        let bytes = content.as_bytes();
        for (offset, limit) in [(1, 5000), (4000, 3), (4998, 10), (1, 1)] {
            let s = run(bytes, offset, limit, 1000);
            assert_eq!(s.total_lines, 5000);
            let want: Vec<String> = content
                .lines()
                .skip(offset as usize - 1)
                .take(limit as usize)
                .map(str::to_owned)
                .collect();
            let got: Vec<String> = s.lines.iter().map(|l| l.text.clone()).collect();
            assert_eq!(got, want, "offset {offset} limit {limit}");
        }
    }

    #[test]
    fn a_huge_limit_still_keeps_bounded_bytes() {
        let content: String = (1..=100).map(|i| format!("{i:09}\n")).collect();
        let request = Request {
            offset: 11,
            limit: u64::MAX,
            max_line_chars: 100,
            max_kept_bytes: 45,
        };
        let cancel = CancellationToken::new();
        let mut reader = content.as_bytes();
        let s = scan(&mut reader, b"", content.len() as u64, request, &cancel).unwrap();
        // 9 bytes a line: the fifth line reaches 45 bytes and ends the window.
        assert_eq!(s.lines.len(), 5);
        assert_eq!(s.lines[4].number, 15);
        assert_eq!(s.total_lines, 100);
        assert_eq!(s.stamp, Some(FileStamp::of(content.as_bytes())));
    }

    #[test]
    fn cancellation_stops_the_scan() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let request = Request {
            offset: 1,
            limit: 1,
            max_line_chars: 10,
            max_kept_bytes: usize::MAX,
        };
        let mut reader: &[u8] = b"a\nb\n";
        let err = scan(&mut reader, b"", 4, request, &cancel).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Interrupted);
    }

    #[test]
    fn partial_char_trim() {
        assert_eq!(without_partial_char("ab".as_bytes()), b"ab");
        let e = "é".as_bytes();
        assert_eq!(without_partial_char(&[b'a', e[0]]), b"a");
        assert_eq!(
            without_partial_char(&[b'a', e[0], e[1]]),
            &[b'a', e[0], e[1]]
        );
    }
}
