//! Searching a command's artifact for lines matching a regex, in chunks, in bounded memory.

use std::fs::File;
use std::io;

use regex::bytes::{Regex, RegexBuilder};

use crate::capture::count_newlines;
use crate::output::{CHUNK, SearchMatch, read_full_at};
use crate::preview::clean;

/// A line longer than this is searched in windows of this size (overlapping by
/// `WINDOW_OVERLAP`) so that a gigabyte without a newline cannot take a gigabyte of memory.
const MAX_LINE: usize = 1 << 20;
const WINDOW_OVERLAP: usize = 4096;
/// A matching line longer than this is shown cut, with the number of bytes left out.
const MAX_SHOWN_LINE: usize = 2000;

/// The part of a matching line shown: all of it when short, else `MAX_SHOWN_LINE` bytes
/// around the first match (a quarter before it), cut at character boundaries, so that what was
/// searched for is in view however far into the line it is.
fn shown_range(regex: &Regex, bytes: &[u8]) -> (usize, usize) {
    if bytes.len() <= MAX_SHOWN_LINE {
        return (0, bytes.len());
    }
    let at = regex.find(bytes).map_or(0, |m| m.start());
    let mut from = at.saturating_sub(MAX_SHOWN_LINE / 4);
    let mut to = (from + MAX_SHOWN_LINE).min(bytes.len());
    from = to.saturating_sub(MAX_SHOWN_LINE).min(from);
    let continuation = |i: usize| bytes.get(i).is_some_and(|b| b & 0xC0 == 0x80);
    while from > 0 && continuation(from) {
        from -= 1;
    }
    while to < bytes.len() && continuation(to) {
        to -= 1;
    }
    (from, to)
}

/// Compiles `pattern` case-insensitively, with `^` and `$` at line boundaries. An invalid regex
/// is taken as literal text; the second value then says why.
pub fn compile_pattern(pattern: &str) -> (Regex, Option<String>) {
    let build = |p: &str| {
        RegexBuilder::new(p)
            .case_insensitive(true)
            .multi_line(true)
            .crlf(true)
            .build()
    };
    match build(pattern) {
        Ok(regex) => (regex, None),
        Err(error) => {
            let reason = error
                .to_string()
                .lines()
                .last()
                .unwrap_or("invalid regex")
                .trim()
                .to_owned();
            match build(&regex::escape(pattern)) {
                Ok(regex) => (regex, Some(reason)),
                // Only a pattern too large for the engine gets here: it matches nothing.
                Err(_) => (
                    Regex::new(r"[^\s\S]").expect("a constant regex compiles"),
                    Some(reason),
                ),
            }
        }
    }
}

/// The outcome of scanning a range for a pattern.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    pub(crate) matches: Vec<SearchMatch>,
    pub(crate) total: u64,
    pub(crate) next_offset: Option<u64>,
}

struct Scanner<'a> {
    regex: &'a Regex,
    limit: usize,
    scan: Scan,
}

/// State of a line longer than `MAX_LINE` that is being searched in windows.
#[derive(Debug, Clone, Copy)]
struct LongLine {
    start: u64,
    matched: bool,
}

impl Scanner<'_> {
    fn record(&mut self, line: u64, offset: u64, bytes: &[u8], cut_before: bool) {
        self.scan.total += 1;
        if self.scan.matches.len() < self.limit {
            let (from, to) = shown_range(self.regex, bytes);
            let mut text = clean(&bytes[from..to]);
            if from > 0 {
                text.insert_str(0, &format!("[{from} bytes before] ... "));
            }
            if cut_before {
                text.insert_str(0, "...");
            }
            if bytes.len() > to {
                text.push_str(&format!(" ... [{} more bytes]", bytes.len() - to));
            }
            self.scan.matches.push(SearchMatch { line, offset, text });
        } else if self.scan.next_offset.is_none() {
            self.scan.next_offset = Some(offset);
        }
    }

    /// Searches complete lines `region` (starting at `region_start`, line `first_line`).
    fn region(
        &mut self,
        region: &[u8],
        region_start: u64,
        first_line: u64,
        long: Option<LongLine>,
    ) {
        let mut pos = 0;
        let mut cursor = 0;
        let mut cursor_line = first_line;
        if let Some(state) = long {
            // The region begins with the end of a long line already partly searched.
            let end = region
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(region.len());
            if !state.matched && self.regex.is_match(&region[..end]) {
                self.record(first_line, state.start, &region[..end], true);
            }
            pos = end + 1;
            cursor = pos.min(region.len());
            cursor_line = first_line + u64::from(end < region.len());
        }
        while pos < region.len() {
            let Some(found) = self.regex.find_at(region, pos) else {
                break;
            };
            let p = found.start();
            let line_start = region[pos..p]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(pos, |i| pos + i + 1);
            let line_end = region[p..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(region.len(), |i| p + i);
            if self.regex.is_match(&region[line_start..line_end]) {
                cursor_line += count_newlines(&region[cursor..line_start]);
                cursor = line_start;
                self.record(
                    cursor_line,
                    region_start + line_start as u64,
                    &region[line_start..line_end],
                    false,
                );
            }
            pos = line_end + 1;
        }
    }
}

/// Finds the lines of `start..end` matching `regex`; `first_line` is the number of the line
/// holding `start`. Counts every match, keeps the first `limit`.
pub(crate) fn search_range(
    file: &File,
    start: u64,
    end: u64,
    first_line: u64,
    regex: &Regex,
    limit: usize,
) -> io::Result<Scan> {
    let mut scanner = Scanner {
        regex,
        limit,
        scan: Scan::default(),
    };
    let mut chunk = vec![0u8; CHUNK];
    let mut buf: Vec<u8> = Vec::new();
    let mut buf_start = start;
    let mut line = first_line;
    let mut long: Option<LongLine> = None;
    let mut pos = start;
    loop {
        let want = usize::try_from(end.saturating_sub(pos))
            .unwrap_or(usize::MAX)
            .min(CHUNK);
        let n = if want == 0 {
            0
        } else {
            read_full_at(file, &mut chunk[..want], pos)?
        };
        pos += n as u64;
        buf.extend_from_slice(&chunk[..n]);
        let at_end = n < want || pos >= end;
        let complete = if at_end {
            buf.len()
        } else {
            buf.iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
        };
        if complete > 0 {
            scanner.region(&buf[..complete], buf_start, line, long.take());
            line += count_newlines(&buf[..complete]);
            buf.drain(..complete);
            buf_start += complete as u64;
        }
        if !at_end && buf.len() > MAX_LINE {
            let state = long.get_or_insert(LongLine {
                start: buf_start,
                matched: false,
            });
            if !state.matched && regex.is_match(&buf) {
                state.matched = true;
                let start = state.start;
                let cut_before = buf_start > start;
                scanner.record(line, start, &buf, cut_before);
            }
            let cut = buf.len() - WINDOW_OVERLAP.min(buf.len());
            buf.drain(..cut);
            buf_start += cut as u64;
        }
        if at_end {
            break;
        }
    }
    Ok(scanner.scan)
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

    fn grep_n(bytes: &[u8], regex: &Regex) -> Vec<u64> {
        bytes
            .split(|&b| b == b'\n')
            .enumerate()
            .filter(|(i, line)| {
                // A final empty piece after the last newline is not a line.
                !(line.is_empty() && *i == bytes.split(|&b| b == b'\n').count() - 1)
                    && regex.is_match(line)
            })
            .map(|(i, _)| i as u64 + 1)
            .collect()
    }

    #[test]
    fn invalid_regex_is_taken_literally() {
        let (regex, why) = compile_pattern("foo(bar");
        assert!(why.is_some());
        assert!(regex.is_match(b"xx FOO(BAR yy"));
        let (regex, why) = compile_pattern("err(or)?");
        assert!(why.is_none());
        assert!(regex.is_match(b"ERROR"));
    }

    #[test]
    fn search_matches_grep_across_chunk_boundaries_and_long_lines() {
        // Lines of varied length, some crossing the 1 MiB chunk boundary, and one longer than
        // a window, with matches inside it.
        let mut bytes = Vec::new();
        let mut i = 0u64;
        while bytes.len() < 3 * CHUNK + 12345 {
            let width = (i * 7919) % 3000;
            bytes.extend(std::iter::repeat_n(b'.', width as usize));
            if i.is_multiple_of(13) {
                bytes.extend_from_slice(b"Needle");
            }
            bytes.extend_from_slice(format!(" {i}\r\n").as_bytes());
            i += 1;
            if i == 400 {
                bytes.extend(std::iter::repeat_n(b'x', MAX_LINE * 2 + 100));
                bytes.extend_from_slice(b"needle inside the long line\n");
            }
        }
        bytes.extend_from_slice(b"last needle without newline");
        let file = file_with(&bytes);
        let (regex, _) = compile_pattern("needle");
        let expected = grep_n(&bytes, &regex);
        let scan = search_range(&file, 0, bytes.len() as u64, 1, &regex, usize::MAX).unwrap();
        let lines: Vec<u64> = scan.matches.iter().map(|m| m.line).collect();
        assert_eq!(lines, expected);
        assert_eq!(scan.total, expected.len() as u64);
        for m in &scan.matches {
            let before = count_newlines(&bytes[..m.offset as usize]);
            assert_eq!(before + 1, m.line);
            assert!(m.offset == 0 || bytes[m.offset as usize - 1] == b'\n');
        }
        let limited = search_range(&file, 0, bytes.len() as u64, 1, &regex, 3).unwrap();
        assert_eq!(limited.matches.len(), 3);
        assert_eq!(limited.total, expected.len() as u64);
        assert_eq!(limited.next_offset, Some(scan.matches[3].offset));
        // Resuming from the offset continues with the right line numbers.
        let resumed_from = limited.next_offset.unwrap();
        let first_line = count_newlines(&bytes[..resumed_from as usize]) + 1;
        let rest = search_range(
            &file,
            resumed_from,
            bytes.len() as u64,
            first_line,
            &regex,
            usize::MAX,
        )
        .unwrap();
        assert_eq!(
            rest.matches.iter().map(|m| m.line).collect::<Vec<_>>(),
            expected[3..]
        );
    }

    #[test]
    fn a_long_matching_line_is_shown_around_its_match() {
        let mut bytes = Vec::new();
        bytes.extend(std::iter::repeat_n(b'x', 64 * 1024));
        bytes.extend_from_slice("é NEEDLE é".as_bytes());
        bytes.extend(std::iter::repeat_n(b'y', 3000));
        bytes.extend_from_slice(b"\nshort needle\n");
        let file = file_with(&bytes);
        let (regex, _) = compile_pattern("needle");
        let scan = search_range(&file, 0, bytes.len() as u64, 1, &regex, 10).unwrap();
        let long = &scan.matches[0].text;
        assert!(long.contains("é NEEDLE é"), "{long}");
        assert!(long.starts_with("[65039 bytes before] ... xxx"), "{long}");
        assert!(long.ends_with("more bytes]"), "{long}");
        assert!(!long.contains('\u{FFFD}'), "cut inside a character: {long}");
        assert_eq!(scan.matches[1].text, "short needle");
        // A match near the end of a long line: the window ends with the line.
        let mut tail = vec![b'z'; 10_000];
        tail.extend_from_slice(b"END\n");
        let file = file_with(&tail);
        let (regex, _) = compile_pattern("end$");
        let scan = search_range(&file, 0, tail.len() as u64, 1, &regex, 10).unwrap();
        let text = &scan.matches[0].text;
        assert!(text.ends_with("zzzEND"), "{text}");
        assert!(text.starts_with("[8003 bytes before] ... "), "{text}");
    }

    #[test]
    fn anchors_work_per_line() {
        let bytes = b"error: a\nno error\nERROR: b\n  error\n";
        let file = file_with(bytes);
        let (regex, _) = compile_pattern("^error");
        let scan = search_range(&file, 0, bytes.len() as u64, 1, &regex, 10).unwrap();
        assert_eq!(
            scan.matches.iter().map(|m| m.line).collect::<Vec<_>>(),
            [1, 3]
        );
        assert_eq!(scan.matches[1].text, "ERROR: b");
        let (regex, _) = compile_pattern("error$");
        let scan = search_range(&file, 0, bytes.len() as u64, 1, &regex, 10).unwrap();
        assert_eq!(
            scan.matches.iter().map(|m| m.line).collect::<Vec<_>>(),
            [2, 4]
        );
    }
}
