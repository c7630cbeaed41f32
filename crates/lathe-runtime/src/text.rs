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

/// The most characters of an argument (a path, a command line, a pattern) a tool's title shows.
pub const TITLE_ARG_CHARS: usize = 100;

/// A tool's title: its name and what the call works on (`read_file src/main.rs`), on one line
/// (see [`one_line`]) with the subject cut at [`TITLE_ARG_CHARS`]; only the name when the
/// subject is blank.
pub fn title(name: &str, subject: &str) -> String {
    let subject = one_line(subject, TITLE_ARG_CHARS);
    if subject.is_empty() {
        name.to_owned()
    } else {
        format!("{name} {subject}")
    }
}

/// A title's subject for a search: `what in path`, or only `what` when the path is the
/// workspace root (not given, blank or `.`).
pub fn in_path(what: &str, path: &Option<String>) -> String {
    match path.as_deref().map(str::trim) {
        Some(path) if !path.is_empty() && path != "." => format!("{what} in {path}"),
        _ => what.to_owned(),
    }
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

/// A change's unified diff and its line counts, computed once and cut to as many lines as each
/// reader keeps: the model's result shows a short cut, the recorded
/// [`FileChange`](crate::FileChange) a long one, and both come from the same diff.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct UnifiedDiff {
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// The whole diff.
    full: String,
}

impl UnifiedDiff {
    /// The diff of `old` -> `new` labelled `a/{shown}` and `b/{shown}`, with `context` lines
    /// around each change; empty when they are equal.
    pub fn new(old: &str, new: &str, shown: &str, context: usize) -> UnifiedDiff {
        let text_diff = line_diff(old, new);
        let (added, removed) = count_changes(&text_diff);
        let full = text_diff
            .unified_diff()
            .context_radius(context)
            .header(&format!("a/{shown}"), &format!("b/{shown}"))
            .to_string();
        UnifiedDiff {
            added,
            removed,
            full,
        }
    }

    /// The diff cut after `max_lines` lines, with a last line saying how many more there were.
    pub fn cut(&self, max_lines: usize) -> String {
        let total_lines = self.full.lines().count();
        if total_lines <= max_lines {
            return self.full.clone();
        }
        let mut cut: String = self.full.split_inclusive('\n').take(max_lines).collect();
        if !cut.ends_with('\n') {
            cut.push('\n');
        }
        cut.push_str(&format!(
            "... (diff cut: {} more lines; read the file to see the rest)\n",
            total_lines - max_lines
        ));
        cut
    }
}

/// Counts added and removed lines between `old` and `new`.
pub fn diff_counts(old: &str, new: &str) -> (usize, usize) {
    count_changes(&line_diff(old, new))
}

fn count_changes(diff: &TextDiff<'_, '_, str>) -> (usize, usize) {
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
    fn titles_are_one_line_with_the_subject_cut() {
        assert_eq!(title("shell", "cargo test"), "shell cargo test");
        assert_eq!(title("shell", "\n  make\nmake install\n"), "shell make …");
        assert_eq!(title("list_files", "  "), "list_files");
        let long = title("shell", &"x".repeat(300));
        assert_eq!(long.chars().count(), "shell ".len() + TITLE_ARG_CHARS + 1);
        assert!(long.ends_with('…'));
        assert_eq!(in_path("*.rs", &Some("src".into())), "*.rs in src");
        assert_eq!(in_path("*.rs", &Some(".".into())), "*.rs");
        assert_eq!(in_path("*.rs", &None), "*.rs");
    }

    #[test]
    fn diff_counts_and_cuts() {
        let old = "a\nb\nc\n";
        let new = "a\nB\nc\nd\n";
        let diff = UnifiedDiff::new(old, new, "f.txt", 3);
        assert_eq!((diff.added, diff.removed), (2, 1));
        assert_eq!(diff_counts(old, new), (2, 1));
        let whole = diff.cut(100);
        assert!(whole.starts_with("--- a/f.txt\n+++ b/f.txt\n@@"), "{whole}");
        assert!(whole.contains("-b\n+B\n"), "{whole}");
        let cut = diff.cut(3);
        assert!(cut.contains("diff cut: "), "{cut}");
        assert_eq!(cut.lines().count(), 4);
        assert!(whole.starts_with(cut.lines().next().unwrap()));
        assert_eq!(UnifiedDiff::new(old, old, "f.txt", 3).cut(10), "");
    }
}
