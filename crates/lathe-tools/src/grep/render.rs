//! How lines look to the model: terminators removed, invalid UTF-8 replaced, long lines cut
//! around the match, and the `path:line: text` / `path-line- text` / `--` layout.

use std::ops::Range;

use super::search::PageLine;
use lathe_runtime::budget::group;

/// Longest line shown whole, in characters.
pub(super) const MAX_LINE_CHARS: usize = 500;

/// When a long line is cut, characters kept before the match so that it reads in context.
const LEAD_CHARS: usize = 100;

/// The text of one line as shown: without `\n` or `\r\n`, lossy UTF-8, and at most
/// [`MAX_LINE_CHARS`] characters around `focus` (the match, in bytes) with markers that count
/// what was cut.
pub(super) fn line_text(bytes: &[u8], focus: Option<Range<usize>>) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.len() <= MAX_LINE_CHARS || char_count(bytes) <= MAX_LINE_CHARS {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let focus_start = focus.map_or(0, |f| f.start.min(bytes.len()));
    let mut start = back_chars(bytes, char_start(bytes, focus_start), LEAD_CHARS);
    let end = forward_chars(bytes, start, MAX_LINE_CHARS);
    if end == bytes.len() {
        start = back_chars(bytes, end, MAX_LINE_CHARS);
    }
    let mut out = String::with_capacity(MAX_LINE_CHARS + 80);
    if start > 0 {
        out.push_str(&format!(
            "[... {} chars cut ...] ",
            group(char_count(&bytes[..start]))
        ));
    }
    out.push_str(&String::from_utf8_lossy(&bytes[start..end]));
    if end < bytes.len() {
        out.push_str(&format!(
            " [... {} chars cut ...]",
            group(char_count(&bytes[end..]))
        ));
    }
    out
}

/// Not a UTF-8 continuation byte: each character (or invalid byte) starts with one.
fn starts_char(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| starts_char(b)).count()
}

/// The start of the character holding byte `at`.
fn char_start(bytes: &[u8], mut at: usize) -> usize {
    while at > 0 && at < bytes.len() && !starts_char(bytes[at]) {
        at -= 1;
    }
    at
}

/// The byte `n` characters before `from` (or 0).
fn back_chars(bytes: &[u8], from: usize, n: usize) -> usize {
    let mut at = from;
    let mut count = 0;
    while at > 0 && count < n {
        at -= 1;
        if starts_char(bytes[at]) {
            count += 1;
        }
    }
    at
}

/// The byte `n` characters after `from` (or the end).
fn forward_chars(bytes: &[u8], from: usize, n: usize) -> usize {
    let mut count = 0;
    let mut at = from;
    while at < bytes.len() {
        if starts_char(bytes[at]) {
            if count == n {
                break;
            }
            count += 1;
        }
        at += 1;
    }
    at
}

/// Writes one file's page lines. With context, non-adjacent groups (and files) are separated by
/// `--`, as ripgrep does.
pub(super) fn push_file_lines(out: &mut String, path: &str, lines: &[PageLine], separators: bool) {
    let mut previous: Option<u64> = None;
    for line in lines {
        let gap = previous.is_none_or(|p| line.number != p + 1);
        if separators && gap && !out.is_empty() {
            out.push_str("--\n");
        }
        previous = Some(line.number);
        out.push_str(path);
        out.push(if line.is_match { ':' } else { '-' });
        out.push_str(&line.number.to_string());
        out.push_str(if line.is_match { ": " } else { "- " });
        out.push_str(&line.text);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminators_are_dropped() {
        assert_eq!(line_text(b"a\r\n", None), "a");
        assert_eq!(line_text(b"a\n", None), "a");
        assert_eq!(line_text(b"a", None), "a");
        assert_eq!(line_text(b"\xffa\n", None), "\u{fffd}a");
    }

    #[test]
    fn long_lines_are_cut_around_the_match() {
        let mut line = "x".repeat(10_000);
        line.push_str("NEEDLE");
        line.push_str(&"y".repeat(10_000));
        let start = 10_000;
        let text = line_text(line.as_bytes(), Some(start..start + 6));
        assert!(text.contains("NEEDLE"), "{text}");
        assert!(text.starts_with("[... 9,900 chars cut ...] "), "{text}");
        assert!(text.ends_with(" [... 9,606 chars cut ...]"), "{text}");
        let kept = text.split("] ").nth(1).unwrap().split(" [").next().unwrap();
        assert_eq!(kept.chars().count(), MAX_LINE_CHARS);
    }

    #[test]
    fn cut_near_the_end_keeps_a_full_window_and_whole_characters() {
        let line = "é".repeat(2_000);
        let text = line_text(line.as_bytes(), Some(3_998..4_000));
        assert!(text.starts_with("[... 1,500 chars cut ...] "), "{text}");
        assert!(!text.contains('\u{fffd}'));
        assert!(!text.ends_with(']'));
        let text = line_text(line.as_bytes(), None);
        assert!(text.ends_with(" [... 1,500 chars cut ...]"), "{text}");
    }

    #[test]
    fn layout_with_and_without_separators() {
        let lines = vec![
            PageLine {
                number: 1,
                is_match: false,
                text: "a".into(),
            },
            PageLine {
                number: 2,
                is_match: true,
                text: "b".into(),
            },
            PageLine {
                number: 9,
                is_match: true,
                text: "c".into(),
            },
        ];
        let mut out = String::new();
        push_file_lines(&mut out, "f.rs", &lines, true);
        push_file_lines(&mut out, "g.rs", &lines[2..], true);
        assert_eq!(out, "f.rs-1- a\nf.rs:2: b\n--\nf.rs:9: c\n--\ng.rs:9: c\n");
        let mut out = String::new();
        push_file_lines(&mut out, "f.rs", &lines[1..], false);
        assert_eq!(out, "f.rs:2: b\nf.rs:9: c\n");
    }
}
