//! Reading a command's artifact, running or finished: by byte range, or by regex. Memory stays
//! bounded however large the artifact: it is read in chunks, never loaded whole.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use crate::capture::count_newlines;
use crate::command::{CommandId, CommandStatus};
use crate::report::plural;

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

    /// The model-facing text: a header line, the bytes (invalid UTF-8 replaced), and what to do
    /// next.
    pub fn to_text(&self) -> String {
        let id = self.id;
        let status = status_phrase(self.status);
        if self.bytes.is_empty() {
            let mut out = if self.available == 0 {
                format!("[command {id} ({status}): no output yet]")
            } else if self.status.is_running() && self.offset >= self.available {
                format!(
                    "[command {id} ({status}): no output past byte {} yet]",
                    self.available
                )
            } else {
                format!(
                    "[command {id} ({status}): offset {} is at or past the end of the output ({} bytes); \
                     use an offset below {}]",
                    self.offset, self.available, self.available
                )
            };
            if self.status.is_running() {
                out.push_str(&format!(
                    "\n[command {id} is still running: read again later with command_output {{\"id\": {id}, \"offset\": {}}}]",
                    self.available.min(self.offset)
                ));
            }
            return out;
        }
        let mut out = format!(
            "[command {id} ({status}): bytes {}-{} of {}, lines {}-{}]\n",
            self.offset,
            self.end(),
            self.available,
            self.first_line,
            self.last_line()
        );
        out.push_str(&String::from_utf8_lossy(&self.bytes));
        if !out.ends_with('\n') {
            out.push('\n');
        }
        if self.more() {
            out.push_str(&format!(
                "[{} more bytes: command_output {{\"id\": {id}, \"offset\": {}}}]",
                self.available - self.end(),
                self.end()
            ));
        } else if self.status.is_running() || !self.complete {
            out.push_str(&format!(
                "[end of the output so far; command {id} is still writing: read what comes next with \
                 command_output {{\"id\": {id}, \"offset\": {}}}]",
                self.end()
            ));
        } else if self.total_bytes > self.available {
            out.push_str(&format!(
                "[end of the artifact: the other {} bytes passed the artifact cap and were not kept]",
                self.total_bytes - self.available
            ));
        } else {
            out.push_str("[end of output]");
        }
        out
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

impl SearchResult {
    /// Drops matches from the end until [`to_text`](Self::to_text) is at most `max_chars`
    /// characters (keeping at least one), and points `next_offset` at the first one dropped.
    pub fn fit(&mut self, max_chars: usize) {
        while self.matches.len() > 1 && self.to_text().chars().count() > max_chars {
            if let Some(dropped) = self.matches.pop() {
                self.next_offset = Some(dropped.offset);
            }
        }
    }

    /// The model-facing text: numbered matching lines (`N:text`, as `grep -n` prints them).
    pub fn to_text(&self) -> String {
        let id = self.id;
        let mut out = format!(
            "[command {id} ({}): {} matching /{}/ (case-insensitive) in bytes {}-{}",
            status_phrase(self.status),
            plural(self.total_matches, "line", "lines"),
            self.pattern,
            self.start,
            self.end
        );
        if self.total_matches > self.matches.len() as u64 {
            out.push_str(&format!(", showing the first {}", self.matches.len()));
        }
        out.push_str("]\n");
        if let Some(reason) = &self.literal_because {
            out.push_str(&format!(
                "[the pattern is not a valid regex ({reason}); it was searched as literal text]\n"
            ));
        }
        for m in &self.matches {
            out.push_str(&format!("{}:{}\n", m.line, m.text));
        }
        if let Some(next) = self.next_offset {
            out.push_str(&format!(
                "[more matches: command_output {{\"id\": {id}, \"search\": {}, \"offset\": {next}}}]\n",
                serde_json_string(&self.pattern)
            ));
        }
        if self.status.is_running() {
            out.push_str(&format!(
                "[command {id} is still running: its output may grow; search again later]\n"
            ));
        } else if self.total_bytes > self.end {
            out.push_str(&format!(
                "[the other {} bytes passed the artifact cap and were not kept, so they were not \
                 searched; the result's preview shows the output's last lines]\n",
                self.total_bytes - self.end
            ));
        }
        out.pop();
        out
    }
}

fn status_phrase(status: CommandStatus) -> String {
    match status {
        CommandStatus::Running => "running".to_owned(),
        other => other.to_string(),
    }
}

/// A JSON string literal, for the "how to continue" hints.
fn serde_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
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
    fn ends_of_output_say_what_to_do() {
        let page = |offset, status| OutputPage {
            id: CommandId(4),
            offset,
            bytes: Vec::new(),
            first_line: 1,
            available: 42,
            total_bytes: 42,
            status,
            complete: false,
        };
        // Running, read up to its end: nothing new yet, read on from there (not "use an offset
        // below 42", which would contradict the hint).
        let text = page(42, CommandStatus::Running).to_text();
        assert!(
            text.starts_with("[command 4 (running): no output past byte 42 yet]"),
            "{text}"
        );
        assert!(text.contains("\"offset\": 42}"), "{text}");
        assert!(!text.contains("below"), "{text}");
        let text = page(50, CommandStatus::Exited { code: 0 }).to_text();
        assert!(text.contains("use an offset below 42"), "{text}");
        // A search that stopped at the artifact cap says the rest was not searched.
        let search = SearchResult {
            id: CommandId(4),
            pattern: "final".into(),
            literal_because: None,
            start: 0,
            end: 1000,
            total_bytes: 1500,
            matches: Vec::new(),
            total_matches: 0,
            next_offset: None,
            status: CommandStatus::Exited { code: 0 },
        };
        let text = search.to_text();
        assert!(
            text.contains("the other 500 bytes passed the artifact cap")
                && text.contains("not searched"),
            "{text}"
        );
    }

    #[test]
    fn search_results_fit_a_budget_and_point_at_the_rest() {
        let mut result = SearchResult {
            id: CommandId(1),
            pattern: "x".into(),
            literal_because: None,
            start: 0,
            end: 10_000,
            total_bytes: 10_000,
            matches: (0..50)
                .map(|i| SearchMatch {
                    line: i + 1,
                    offset: i * 100,
                    text: "x".repeat(90),
                })
                .collect(),
            total_matches: 50,
            next_offset: None,
            status: CommandStatus::Exited { code: 0 },
        };
        let full = result.to_text().chars().count();
        result.fit(full);
        assert_eq!(result.matches.len(), 50);
        assert_eq!(result.next_offset, None);
        result.fit(1000);
        assert!(result.to_text().chars().count() <= 1000);
        let kept = result.matches.len() as u64;
        assert!((1..50).contains(&kept));
        assert_eq!(result.next_offset, Some(kept * 100));
        assert!(
            result
                .to_text()
                .contains(&format!("\"offset\": {}", kept * 100))
        );
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
