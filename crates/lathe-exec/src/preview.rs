//! The model's view of a command's output: the head half and the tail half of a budget, the
//! exact omitted range between them, and text cleaned of terminal control sequences.

use crate::capture::{CaptureSnapshot, count_newlines};

/// Longest run the cleaner treats as one OSC/DCS string before deciding the terminator is
/// missing; an unterminated `ESC ]` must not swallow the rest of the output.
const MAX_ESCAPE_STRING: usize = 4096;

/// What the model sees of a command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// The start of the output, cleaned; all of it when nothing was cut.
    pub head: String,
    /// What was left out between `head` and `tail`; `None` when the whole output is shown.
    pub omitted: Option<Omission>,
    /// The end of the output, cleaned; empty when nothing was cut.
    pub tail: String,
}

/// The part of the output a preview leaves out, in raw bytes of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Omission {
    /// Offset of the first omitted byte.
    pub start: u64,
    /// Offset just past the last omitted byte.
    pub end: u64,
    /// The line (1-based) holding the first omitted byte.
    pub first_line: u64,
    /// The line holding the last omitted byte.
    pub last_line: u64,
}

impl Omission {
    /// How many bytes were left out.
    pub fn bytes(&self) -> u64 {
        self.end - self.start
    }
}

impl Preview {
    /// Builds the preview of `snapshot` within `budget` bytes of raw output.
    pub(crate) fn build(snapshot: &CaptureSnapshot, budget: usize) -> Preview {
        let total = snapshot.total_bytes;
        if total <= budget as u64 && snapshot.head.len() as u64 == total {
            return Preview {
                head: readable(&snapshot.head),
                omitted: None,
                tail: String::new(),
            };
        }
        let half = (budget / 2).max(1);
        let head = &snapshot.head;
        let mut h = half.min(head.len());
        match head[..h].iter().rposition(|&b| b == b'\n') {
            // End on a line boundary unless that throws away more than half of the head.
            Some(newline) if newline + 1 >= h / 2 => h = newline + 1,
            _ => {
                let floor = h.saturating_sub(3);
                while h > floor && h < head.len() && is_continuation(head[h]) {
                    h -= 1;
                }
            }
        }
        let h = settle_head_cut(head, h);
        let tail = &snapshot.tail;
        let room = usize::try_from(total - h as u64).unwrap_or(usize::MAX);
        let t_max = half.min(tail.len()).min(room);
        let mut s = tail.len() - t_max;
        if s == 0 || tail[s - 1] != b'\n' {
            match tail[s..].iter().position(|&b| b == b'\n') {
                Some(p) if p < t_max / 2 => s += p + 1,
                _ => {
                    let limit = (s + 3).min(tail.len());
                    while s < limit && is_continuation(tail[s]) {
                        s += 1;
                    }
                }
            }
        }
        let s = settle_tail_cut(tail, s);
        let tail_part = &tail[s..];
        let start = h as u64;
        let end = total - tail_part.len() as u64;
        let first_line = count_newlines(&head[..h]) + 1;
        let newlines_before_end = snapshot.total_newlines - count_newlines(tail_part);
        let ends_line = s > 0 && tail[s - 1] == b'\n';
        let last_line = newlines_before_end + 1 - u64::from(ends_line && newlines_before_end > 0);
        Preview {
            head: readable(&head[..h]),
            omitted: Some(Omission {
                start,
                end: end.max(start),
                first_line,
                last_line: last_line.max(first_line),
            }),
            tail: readable(tail_part),
        }
    }
}

/// Longest escape sequence a cut is moved across (a longer one is an unterminated string:
/// cleaning drops what remains of it anyway).
const MAX_SETTLE: usize = 256;

/// Moves the end of the head off the middle of a line's last progress state (back to just
/// after its `\r`, so the head shows the last complete state rather than `progr`) and off the
/// middle of an escape sequence (back to its start, so no `[31` is left behind).
fn settle_head_cut(head: &[u8], mut h: usize) -> usize {
    if h == 0 || h >= head.len() || head[h - 1] == b'\n' {
        return h;
    }
    let line_start = head[..h]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let from = line_start.max(h.saturating_sub(MAX_SETTLE));
    if let Some(e) = head[from..h].iter().rposition(|&b| b == 0x1b) {
        let e = from + e;
        if skip_escape(head, e) > h {
            h = e;
        }
    }
    if let Some(r) = head[line_start..h].iter().rposition(|&b| b == b'\r')
        && line_start + r + 1 < h
    {
        h = line_start + r + 1;
    }
    h
}

/// Moves the start of the tail past an escape sequence it would begin inside of.
fn settle_tail_cut(tail: &[u8], s: usize) -> usize {
    let from = s.saturating_sub(MAX_SETTLE);
    match tail[from..s].iter().rposition(|&b| b == 0x1b) {
        Some(e) => {
            let end = skip_escape(tail, from + e);
            if end > s && end - s <= MAX_SETTLE {
                end.min(tail.len())
            } else {
                s
            }
        }
        None => s,
    }
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

/// `bytes` cleaned for reading ([`clean`]), or, when they are binary data (a NUL byte, or a
/// third of them not UTF-8), a note saying so instead of a screen of U+FFFD.
fn readable(bytes: &[u8]) -> String {
    let text = clean(bytes);
    let replaced = text
        .chars()
        .filter(|&c| c == char::REPLACEMENT_CHARACTER)
        .count();
    if memchr::memchr(0, bytes).is_some() || replaced * 3 > text.chars().count().max(1) {
        format!(
            "[{} bytes of binary data (not text), not shown; the artifact keeps them byte for byte]\n",
            bytes.len()
        )
    } else {
        text
    }
}

/// Cleans output for a model to read: terminal escape sequences and control characters (other
/// than tab and newline) removed, each carriage-return progress line collapsed to its last state,
/// and invalid UTF-8 replaced by U+FFFD.
pub fn clean(bytes: &[u8]) -> String {
    let stripped = strip_escapes(bytes);
    let collapsed = collapse_carriage_returns(&stripped);
    String::from_utf8_lossy(&collapsed).into_owned()
}

fn strip_escapes(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b => i = skip_escape(bytes, i),
            b'\n' | b'\t' | b'\r' => {
                out.push(bytes[i]);
                i += 1;
            }
            0x00..=0x1f | 0x7f => i += 1,
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// Returns the index just past the escape sequence starting at `i` (an `ESC`).
fn skip_escape(bytes: &[u8], i: usize) -> usize {
    let len = bytes.len();
    let Some(&kind) = bytes.get(i + 1) else {
        return len;
    };
    match kind {
        // CSI: parameter and intermediate bytes, then one final byte.
        b'[' => {
            let mut j = i + 2;
            while j < len && (0x20..=0x3f).contains(&bytes[j]) {
                j += 1;
            }
            if j < len && (0x40..=0x7e).contains(&bytes[j]) {
                j + 1
            } else {
                j
            }
        }
        // OSC, DCS, SOS, PM, APC: a string ended by BEL or ST (`ESC \`).
        b']' | b'P' | b'X' | b'^' | b'_' => {
            let limit = (i + 2 + MAX_ESCAPE_STRING).min(len);
            let mut j = i + 2;
            while j < limit {
                match bytes[j] {
                    0x07 => return j + 1,
                    0x1b if bytes.get(j + 1) == Some(&b'\\') => return j + 2,
                    b'\n' => return i + 2,
                    _ => j += 1,
                }
            }
            if limit == len { len } else { i + 2 }
        }
        // nF sequences: intermediate bytes, then a final byte (e.g. `ESC ( B`).
        0x20..=0x2f => {
            let mut j = i + 1;
            while j < len && (0x20..=0x2f).contains(&bytes[j]) {
                j += 1;
            }
            (j + 1).min(len)
        }
        // Two-byte sequences (`ESC 7`, `ESC =`, `ESC c`, ...).
        _ => i + 2,
    }
}

/// Keeps, for each line, what follows its last carriage return: a progress bar redrawn a
/// hundred times shows as its final state. A `\r` just before the newline (CRLF) is dropped.
fn collapse_carriage_returns(bytes: &[u8]) -> Vec<u8> {
    if !bytes.contains(&b'\r') {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let (mut body, newline) = match line.split_last() {
            Some((b'\n', body)) => (body, true),
            _ => (line, false),
        };
        while let Some((b'\r', rest)) = body.split_last() {
            body = rest;
        }
        if let Some(p) = body.iter().rposition(|&b| b == b'\r') {
            body = &body[p + 1..];
        }
        out.extend_from_slice(body);
        if newline {
            out.push(b'\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;

    fn preview_of(output: &[u8], budget: usize) -> Preview {
        let mut capture = Capture::new(budget, budget + 1);
        for chunk in output.chunks(97) {
            capture.push(chunk, chunk.len());
        }
        Preview::build(&capture.snapshot(), budget)
    }

    #[test]
    fn cuts_do_not_leave_escape_or_progress_fragments() {
        // Progress states on one line: the head ends with a complete state.
        let mut progress = Vec::new();
        for i in 0..2000 {
            progress.extend_from_slice(format!("\rprogress {i}%").as_bytes());
        }
        progress.extend_from_slice(b"\rdone\n");
        let p = preview_of(&progress, 1000);
        assert!(
            p.head.starts_with("progress ") && p.head.ends_with('%'),
            "{:?}",
            p.head
        );
        assert_eq!(p.tail, "done\n");
        // An escape sequence across either cut: neither side shows a piece of it.
        let budget = 1000;
        for shift in 0..12 {
            let mut colored = Vec::new();
            while colored.len() < 3 * budget {
                colored.extend_from_slice(b"\x1b[31mred\x1b[0m ");
                if colored.len() % 7 == shift {
                    colored.push(b'x');
                }
            }
            let p = preview_of(&colored, budget);
            for part in [&p.head, &p.tail] {
                assert!(
                    !part.contains('[') && !part.contains('\x1b'),
                    "{shift}: {part:?}"
                );
            }
            let omitted = p.omitted.expect("cut");
            // The omitted range still adds up with what is shown.
            assert!(omitted.start > 0 && omitted.end < colored.len() as u64);
        }
    }

    #[test]
    fn binary_output_is_named_not_shown() {
        let zeros = preview_of(&[0u8; 100], 1000);
        assert_eq!(
            zeros.head,
            "[100 bytes of binary data (not text), not shown; the artifact keeps them byte for byte]\n"
        );
        let noise: Vec<u8> = (0..5000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80)
            .collect();
        let cut = preview_of(&noise, 1000);
        assert!(cut.head.contains("bytes of binary data"), "{}", cut.head);
        assert!(cut.tail.contains("bytes of binary data"), "{}", cut.tail);
        // Text with a stray invalid byte is still text.
        let text = preview_of(b"caf\xe9 au lait, one invalid byte among many\n", 1000);
        assert_eq!(
            text.head,
            "caf\u{FFFD} au lait, one invalid byte among many\n"
        );
    }

    fn line_of(output: &[u8], offset: u64) -> u64 {
        count_newlines(&output[..offset as usize]) + 1
    }

    #[test]
    fn strips_ansi_and_controls() {
        let input = b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ \x1b(Bdone\x1b7\x07\x08\tend\x1b";
        assert_eq!(clean(input), "red oklink done\tend");
        // An unterminated OSC does not swallow the following lines.
        assert_eq!(clean(b"a\x1b]oops\nnext line\n"), "aoops\nnext line\n");
    }

    #[test]
    fn collapses_progress_lines_and_keeps_crlf_lines() {
        assert_eq!(clean(b"10%\r50%\r100%\ndone\r\n"), "100%\ndone\n");
        assert_eq!(clean(b"\x1b[2K\r 3/3 files\r"), " 3/3 files");
        assert_eq!(clean(b"plain\n"), "plain\n");
    }

    #[test]
    fn invalid_utf8_is_replaced_not_dropped() {
        assert_eq!(clean(b"a\xffb"), "a\u{fffd}b");
    }

    #[test]
    fn output_that_fits_is_shown_whole() {
        let preview = preview_of(b"one\ntwo\n", 64);
        assert_eq!(preview.head, "one\ntwo\n");
        assert_eq!(preview.omitted, None);
        assert_eq!(preview.tail, "");
        let empty = preview_of(b"", 64);
        assert_eq!(empty.head, "");
        assert_eq!(empty.omitted, None);
    }

    #[test]
    fn omitted_range_is_exact_for_many_shapes() {
        let mut shapes: Vec<Vec<u8>> = Vec::new();
        for width in [0usize, 1, 3, 7, 40, 200, 5000] {
            let mut out = Vec::new();
            let mut n = 0u32;
            while out.len() < 3000 {
                out.extend(std::iter::repeat_n(b'x', width));
                out.extend(format!("{n}").bytes());
                out.push(b'\n');
                n += 1;
            }
            shapes.push(out.clone());
            out.pop();
            shapes.push(out);
        }
        shapes.push("é".repeat(2000).into_bytes());
        shapes.push(vec![b'\n'; 3000]);
        for output in &shapes {
            for budget in [64usize, 100, 1000, 2999] {
                let preview = preview_of(output, budget);
                if output.len() <= budget {
                    assert_eq!(preview.omitted, None);
                    assert_eq!(preview.head, clean(output));
                    continue;
                }
                let omission = preview.omitted.expect("output is larger than the budget");
                assert!(omission.start < omission.end, "budget {budget}");
                assert!(omission.start as usize <= budget / 2);
                assert!(output.len() as u64 - omission.end <= (budget / 2) as u64);
                assert_eq!(preview.head, clean(&output[..omission.start as usize]));
                assert_eq!(preview.tail, clean(&output[omission.end as usize..]));
                assert_eq!(omission.first_line, line_of(output, omission.start));
                assert_eq!(omission.last_line, line_of(output, omission.end - 1));
                assert!(
                    !preview.head.contains('\u{fffd}'),
                    "head cut inside a character"
                );
                assert!(
                    !preview.tail.contains('\u{fffd}'),
                    "tail cut inside a character"
                );
            }
        }
    }

    #[test]
    fn head_and_tail_end_on_line_boundaries_when_lines_are_short() {
        let output: Vec<u8> = (0..1000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let preview = preview_of(&output, 200);
        assert!(preview.head.starts_with("line 0\n"));
        assert!(preview.head.ends_with('\n'));
        assert!(preview.tail.starts_with("line "));
        assert!(preview.tail.ends_with("line 999\n"));
        let omission = preview.omitted.unwrap();
        let last_head_line = preview.head.lines().count() as u64;
        assert_eq!(omission.first_line, last_head_line + 1);
        assert_eq!(
            omission.last_line,
            1000 - preview.tail.lines().count() as u64
        );
    }
}
