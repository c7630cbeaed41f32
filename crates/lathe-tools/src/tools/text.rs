//! Text helpers shared by the file tools: the UTF-8 byte-order mark, line endings, line counts,
//! sizes as people read them, and unified diffs with their +/- counts.

use std::time::Duration;

use similar::{ChangeTag, TextDiff};

/// The UTF-8 byte-order mark.
pub const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// How long a diff may search for the smallest edit before settling for a correct, larger one.
/// Diffs are for people and counts; a pathological input must not stall a tool call.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// A sample with more than this share of control bytes is binary.
const MAX_CONTROL_SHARE: f64 = 0.3;

/// What a binary sample (the first 8 KiB, say) looks like, or `None` for text: binary means a NUL
/// byte, or mostly control bytes.
pub fn binary_kind(sample: &[u8]) -> Option<String> {
    const MAGIC: &[(&[u8], &str)] = &[
        (b"\x89PNG", "PNG image"),
        (b"\xFF\xD8\xFF", "JPEG image"),
        (b"GIF8", "GIF image"),
        (b"%PDF", "PDF document"),
        (b"PK\x03\x04", "zip archive"),
        (b"\x1F\x8B", "gzip data"),
        (b"\x7FELF", "ELF executable"),
        (b"SQLite format 3\0", "SQLite database"),
        (b"\0asm", "WebAssembly module"),
        (b"\xFF\xFE", "UTF-16 text, which read_file cannot show"),
        (b"\xFE\xFF", "UTF-16 text, which read_file cannot show"),
    ];
    let has_nul = sample.contains(&0);
    let control = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0C | 0x1B)) || b == 0x7F)
        .count();
    let mostly_control =
        !sample.is_empty() && control as f64 / sample.len() as f64 > MAX_CONTROL_SHARE;
    if !has_nul && !mostly_control {
        return None;
    }
    let kind = MAGIC
        .iter()
        .find(|(magic, _)| sample.starts_with(magic))
        .map_or("binary data", |(_, kind)| kind);
    Some(kind.to_owned())
}

/// Counts `\n` bytes (memchr's vectorised counter).
pub fn count_newlines(bytes: &[u8]) -> u64 {
    memchr::memchr_iter(b'\n', bytes).count() as u64
}

/// `text` as one shell word: as it is when it has only characters no shell treats specially,
/// else in single quotes (a `'` inside becomes `'\''`).
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./+,:@%=".contains(&b));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// The number of lines as `read_file` numbers them: every `\n` ends a line, and text after the
/// last `\n` is one more line.
pub fn line_count(text: &str) -> usize {
    let newlines = count_newlines(text.as_bytes()) as usize;
    if text.is_empty() || text.ends_with('\n') {
        newlines
    } else {
        newlines + 1
    }
}

/// `12345` -> `12,345`.
pub fn group(n: u64) -> String {
    crate::budget::group(n as usize)
}

/// A size as people read it: `812 bytes`, `4.2 KiB (4,301 bytes)`, `1.5 GiB (1,610,612,736 bytes)`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64;
    let mut unit = "";
    for name in UNITS {
        value /= 1024.0;
        unit = name;
        if value < 1024.0 {
            break;
        }
    }
    format!("{value:.1} {unit} ({} bytes)", group(bytes))
}

/// Removes `\r` directly before each `\n` (CRLF -> LF); a lone `\r` stays.
pub fn crlf_to_lf(text: &str) -> String {
    if !text.contains("\r\n") {
        return text.to_owned();
    }
    text.replace("\r\n", "\n")
}

/// For a tool that writes a file: the refusal when `path` ends with `/` (it names a directory,
/// and writing it would make a file of that name instead).
pub fn names_a_directory(path: &str) -> Option<String> {
    let trimmed = path.trim();
    (trimmed.ends_with('/') && trimmed.len() > 1).then(|| {
        format!("'{trimmed}' ends with '/', so it names a directory; give the path of a file")
    })
}

/// `text` as one line for a title: its first non-blank line (with ` …` when more follow), cut
/// to `max_chars` characters (with `…`).
pub fn one_line(text: &str, max_chars: usize) -> String {
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let mut line = match first.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &first[..i]),
        None => first.to_owned(),
    };
    if lines.next().is_some() {
        line.push_str(" …");
    }
    line
}

/// Line counts of a change, and its unified diff.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiffSummary {
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The unified diff, cut to the requested number of lines (with a note saying so).
    pub unified: String,
}

/// Counts added and removed lines between `old` and `new`.
pub fn diff_counts(old: &str, new: &str) -> (usize, usize) {
    let diff = line_diff(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    (added, removed)
}

/// The unified diff of `old` -> `new` labelled with `shown`, with `context` lines around each
/// change, cut after `max_lines` lines, and its counts.
pub fn diff(old: &str, new: &str, shown: &str, context: usize, max_lines: usize) -> DiffSummary {
    let text_diff = line_diff(old, new);
    let (added, removed) = diff_counts(old, new);
    let full = text_diff
        .unified_diff()
        .context_radius(context)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let total_lines = full.lines().count();
    let unified = if total_lines > max_lines {
        let mut cut: String = full.split_inclusive('\n').take(max_lines).collect();
        if !cut.ends_with('\n') {
            cut.push('\n');
        }
        cut.push_str(&format!(
            "... (diff cut: {} more lines; read the file to see the rest)\n",
            total_lines - max_lines
        ));
        cut
    } else {
        full
    };
    DiffSummary {
        added,
        removed,
        unified,
    }
}

fn line_diff<'a>(old: &'a str, new: &'a str) -> TextDiff<'a, 'a, str> {
    TextDiff::configure()
        .timeout(DIFF_TIMEOUT)
        .diff_lines(old, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_detection() {
        assert_eq!(binary_kind(b"fn main() {}\n\ttab\r\n"), None);
        assert_eq!(binary_kind(b"").as_deref(), None);
        assert_eq!(
            binary_kind(b"\x89PNG\r\n\x1a\n\0\0").as_deref(),
            Some("PNG image")
        );
        assert_eq!(binary_kind(b"abc\0def").as_deref(), Some("binary data"));
        let controls: Vec<u8> = (0..100)
            .map(|i| if i % 2 == 0 { 1 } else { b'a' })
            .collect();
        assert!(binary_kind(&controls).is_some());
        let few: Vec<u8> = (0..100)
            .map(|i| if i % 10 == 0 { 1 } else { b'a' })
            .collect();
        assert_eq!(binary_kind(&few), None);
        let ansi = b"\x1b[31mred\x1b[0m\n".repeat(10);
        assert_eq!(binary_kind(&ansi), None);
    }

    #[test]
    fn newlines_are_counted_across_blocks() {
        let text = "a\n".repeat(1000) + "tail";
        assert_eq!(count_newlines(text.as_bytes()), 1000);
        assert_eq!(count_newlines(&[b'\n'; 600]), 600);
        assert_eq!(count_newlines(b""), 0);
    }

    #[test]
    fn shell_quote_leaves_plain_words_and_quotes_the_rest() {
        assert_eq!(shell_quote("src/main.rs"), "src/main.rs");
        assert_eq!(shell_quote("a b.txt"), "'a b.txt'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote("$HOME;rm"), "'$HOME;rm'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn line_counts_follow_read_file_numbering() {
        assert_eq!(line_count(""), 0);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
        assert_eq!(line_count("\n\n"), 2);
    }

    #[test]
    fn sizes() {
        assert_eq!(human_size(0), "0 bytes");
        assert_eq!(human_size(1023), "1023 bytes");
        assert_eq!(human_size(1536), "1.5 KiB (1,536 bytes)");
        assert_eq!(human_size(3 << 30), "3.0 GiB (3,221,225,472 bytes)");
    }

    #[test]
    fn directory_paths_are_spotted() {
        assert!(names_a_directory("src/").is_some());
        assert!(names_a_directory("src/a.rs").is_none());
    }

    #[test]
    fn crlf_becomes_lf_but_lone_cr_stays() {
        assert_eq!(crlf_to_lf("a\r\nb\rc\r\n"), "a\nb\rc\n");
    }

    #[test]
    fn diff_counts_and_cuts() {
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\nd\n";
        let summary = diff(old, new, "f.txt", 3, 100);
        assert_eq!((summary.added, summary.removed), (2, 1));
        assert!(
            summary.unified.starts_with("--- a/f.txt\n+++ b/f.txt\n@@"),
            "{}",
            summary.unified
        );
        assert!(summary.unified.contains("-b\n+B\n"), "{}", summary.unified);
        let cut = diff(old, new, "f.txt", 3, 3);
        assert!(cut.unified.contains("diff cut: "), "{}", cut.unified);
        assert_eq!(cut.unified.lines().count(), 4);
    }
}
