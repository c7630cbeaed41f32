//! Finding `old_string` in a file: exactly first, then, only when that finds nothing, tolerant
//! strategies in a fixed order. The first strategy that finds anything decides; every match it
//! finds is returned, so the caller can insist on uniqueness.

use serde::Serialize;

use super::escapes;
use super::indent::{indent, keep_unchanged_lines, reindent};

/// How `old_string` was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// Byte for byte (line endings aside).
    Exact,
    /// Each line compared with its leading and trailing whitespace ignored.
    TrimmedLines,
    /// Every run of spaces and tabs compared as one space; line breaks and the indentation of
    /// the lines after the first must be as in `old_string`.
    CollapsedWhitespace,
    /// Double-escaped text (`\\n`, `\\t`, `\\"`) unescaped first.
    Unescaped,
}

impl Strategy {
    /// The name in results and metadata.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::TrimmedLines => "trimmed_lines",
            Strategy::CollapsedWhitespace => "collapsed_whitespace",
            Strategy::Unescaped => "unescaped",
        }
    }

    /// What it means, for the model.
    pub fn describe(self) -> &'static str {
        match self {
            Strategy::Exact => "matched exactly",
            Strategy::TrimmedLines => {
                "matched with leading/trailing whitespace on each line ignored (strategy trimmed_lines)"
            }
            Strategy::CollapsedWhitespace => {
                "matched with runs of whitespace treated as one space (strategy collapsed_whitespace)"
            }
            Strategy::Unescaped => {
                "matched after unescaping double-escaped text such as \\\\n (strategy unescaped)"
            }
        }
    }
}

/// One place `old_string` was found, in view positions, with the text to put there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Start (byte position in the view).
    pub start: usize,
    /// End, exclusive.
    pub end: usize,
    /// The replacement (adjusted to the strategy: indentation, escapes, edges).
    pub replacement: String,
}

type Finder = fn(&str, &str, &str) -> Option<Vec<Match>>;

/// Finds `old` in `text` (both with `\n` line endings) and says how; `new` is shaped to fit.
///
/// `old` and `new` arrive as the model wrote them (no double-escape repair; the caller repairs
/// `new` when the evidence says so), so the text as given is tried first: a `\n` escape the
/// file really holds is found where it is. Text that only matches once unescaped comes last;
/// `new` is then unescaped too, unless it is plainly meant as written (`\textbf`).
pub fn find(text: &str, old: &str, new: &str) -> Option<(Strategy, Vec<Match>)> {
    let plain: [(Strategy, Finder); 3] = [
        (Strategy::Exact, exact),
        (Strategy::TrimmedLines, trimmed_lines),
        (Strategy::CollapsedWhitespace, collapsed_whitespace),
    ];
    for (strategy, finder) in plain {
        if let Some(found) = finder(text, old, new) {
            return Some((strategy, found));
        }
    }
    if let Some(old_unescaped) = escapes::unescape(old) {
        let new_unescaped = if lathe_runtime::args::meant_literally(new) {
            new.to_owned()
        } else {
            escapes::unescape(new).unwrap_or_else(|| new.to_owned())
        };
        for (_, finder) in plain {
            if let Some(found) = finder(text, &old_unescaped, &new_unescaped) {
                return Some((Strategy::Unescaped, found));
            }
        }
    }
    None
}

/// The 1-based lines of view positions `positions`, counted in one pass when they come in
/// order (a file with many matches must not be rescanned from the start for each one).
pub fn lines_of(text: &str, positions: impl IntoIterator<Item = usize>) -> Vec<usize> {
    let bytes = text.as_bytes();
    let (mut at, mut line) = (0usize, 1usize);
    positions
        .into_iter()
        .map(|pos| {
            if pos < at {
                (at, line) = (0, 1);
            }
            line += bytes[at..pos].iter().filter(|&&b| b == b'\n').count();
            at = pos;
            line
        })
        .collect()
}

pub(super) fn non_empty(found: Vec<Match>) -> Option<Vec<Match>> {
    (!found.is_empty()).then_some(found)
}

fn exact(text: &str, old: &str, new: &str) -> Option<Vec<Match>> {
    if old.is_empty() {
        return None;
    }
    non_empty(
        text.match_indices(old)
            .map(|(i, _)| Match {
                start: i,
                end: i + old.len(),
                replacement: new.to_owned(),
            })
            .collect(),
    )
}

/// Byte spans of the lines of `text`, without their `\n`.
pub fn line_spans(text: &str) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = 0;
    for (i, _) in text.match_indices('\n') {
        spans.push((start, i));
        start = i + 1;
    }
    if start < text.len() {
        spans.push((start, text.len()));
    }
    spans
}

fn trimmed_lines(text: &str, old: &str, new: &str) -> Option<Vec<Match>> {
    let ends_with_newline = old.ends_with('\n');
    let body = old.strip_suffix('\n').unwrap_or(old);
    let old_lines: Vec<&str> = body.split('\n').collect();
    if old_lines.iter().all(|l| l.trim().is_empty()) {
        return None;
    }
    let spans = line_spans(text);
    let k = old_lines.len();
    let mut found = Vec::new();
    let mut i = 0;
    while i + k <= spans.len() {
        let line = |j: usize| &text[spans[i + j].0..spans[i + j].1];
        if !(0..k).all(|j| line(j).trim() == old_lines[j].trim()) {
            i += 1;
            continue;
        }
        let start = spans[i].0;
        let mut end = spans[i + k - 1].1;
        let has_newline = end < text.len();
        if ends_with_newline && has_newline {
            end += 1;
        }
        let file_lines: Vec<&str> = (0..k).map(line).collect();
        let Some(reindented) = reindent(new, &old_lines, &file_lines) else {
            // The lines match, but not by one consistent indentation change: placing `new`
            // would be a guess. Not a match for this strategy.
            i += 1;
            continue;
        };
        let mut replacement = keep_unchanged_lines(new, &reindented, &old_lines, &file_lines);
        if ends_with_newline && !has_newline && replacement.ends_with('\n') {
            replacement.pop();
        }
        found.push(Match {
            start,
            end,
            replacement,
        });
        i += k;
    }
    non_empty(found)
}

/// `text` with each whitespace run as one space, and for each byte of it, where its character
/// starts in `text`.
fn collapse_with_starts(text: &str) -> (String, Vec<u32>) {
    let mut out = String::with_capacity(text.len());
    let mut starts = Vec::with_capacity(text.len());
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        if c.is_whitespace() {
            if !in_space {
                out.push(' ');
                starts.push(i as u32);
            }
            in_space = true;
        } else {
            out.push(c);
            starts.extend(std::iter::repeat_n(i as u32, c.len_utf8()));
            in_space = false;
        }
    }
    (out, starts)
}

fn collapse(text: &str) -> String {
    collapse_with_starts(text).0
}

fn collapsed_whitespace(text: &str, old: &str, new: &str) -> Option<Vec<Match>> {
    let needle = collapse(old.trim());
    if needle.is_empty() || u32::try_from(text.len()).is_err() {
        return None;
    }
    let (hay, starts) = collapse_with_starts(text);
    let lead = &old[..old.len() - old.trim_start().len()];
    let trail = &old[old.trim_end().len()..];
    let mut replacement = new;
    if !lead.is_empty() {
        replacement = replacement
            .strip_prefix(lead)
            .unwrap_or(replacement.trim_start());
    }
    if !trail.is_empty() {
        replacement = replacement
            .strip_suffix(trail)
            .unwrap_or(replacement.trim_end());
    }
    let last_char_len = needle.chars().next_back().map_or(1, char::len_utf8);
    // Whitespace runs may differ, line breaks may not: `foo bar` must not match `foo\nbar` and
    // join two lines (two statements) into one.
    let old_breaks = old.trim().matches('\n').count();
    non_empty(
        hay.match_indices(&needle)
            .map(|(i, _)| {
                let last = i + needle.len() - last_char_len;
                Match {
                    start: starts[i] as usize,
                    end: starts[last] as usize + last_char_len,
                    replacement: replacement.to_owned(),
                }
            })
            .filter(|m| {
                let found = &text[m.start..m.end];
                // Same line breaks, and every line after the first at the same indentation:
                // the replacement is written as given, so a different indentation would be a
                // guess at where its lines belong.
                found.matches('\n').count() == old_breaks
                    && found
                        .split('\n')
                        .zip(old.trim().split('\n'))
                        .skip(1)
                        .all(|(f, o)| indent(f) == indent(o))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str, old: &str, new: &str) -> (Strategy, String) {
        let (strategy, found) = find(text, old, new).expect("a match");
        assert_eq!(found.len(), 1, "{found:?}");
        let m = &found[0];
        let out = format!("{}{}{}", &text[..m.start], m.replacement, &text[m.end..]);
        (strategy, out)
    }

    #[test]
    fn exact_wins_and_finds_every_occurrence() {
        let (strategy, found) = find("a b a b", "a", "x").unwrap();
        assert_eq!(strategy, Strategy::Exact);
        assert_eq!(found.len(), 2);
        assert_eq!(find("abc", "zzz", "y"), None);
    }

    #[test]
    fn trimmed_lines_reindents_the_replacement() {
        let text = "fn a() {\n        let x = 1;\n        let y = 2;\n}\n";
        let (strategy, out) = one(
            text,
            "let x = 1;\nlet y = 2;\n",
            "let x = 10;\nlet y = 20;\n",
        );
        assert_eq!(strategy, Strategy::TrimmedLines);
        assert_eq!(
            out,
            "fn a() {\n        let x = 10;\n        let y = 20;\n}\n"
        );
        // Trailing whitespace in the model's copy.
        let (strategy, out) = one("a\nb\n", "a  \nb\t", "c\nd");
        assert_eq!(strategy, Strategy::TrimmedLines);
        assert_eq!(out, "c\nd\n");
    }

    #[test]
    fn trimmed_lines_keeps_a_missing_final_newline() {
        let (_, out) = one("x\nlast", "  last\n", "  LAST\n");
        assert_eq!(out, "x\nlast".replace("last", "LAST"));
    }

    #[test]
    fn first_line_fragment_keeps_its_indentation() {
        let text = "    if ok {\n        go();\n    }\n";
        let want = "    if ready {\n        go();\n    }\n";
        // Everything dedented by four spaces.
        let (strategy, out) = one(text, "if ok {\n    go();\n}", "if ready {\n    go();\n}");
        assert_eq!(strategy, Strategy::TrimmedLines);
        assert_eq!(out, want);
        // Only the first line lost its indentation (and gained a trailing space).
        let (strategy, out) = one(
            text,
            "if ok { \n        go();\n    }",
            "if ready {\n        go();\n    }",
        );
        assert_eq!(strategy, Strategy::TrimmedLines);
        assert_eq!(out, want);
    }

    #[test]
    fn spaces_become_the_files_tabs_and_back() {
        let text = "func f() {\n\tif x {\n\t\treturn\n\t}\n}\n";
        let (strategy, out) = one(
            text,
            "    if x {\n        return\n    }",
            "    if y {\n        return\n    }",
        );
        assert_eq!(strategy, Strategy::TrimmedLines);
        assert_eq!(out, "func f() {\n\tif y {\n\t\treturn\n\t}\n}\n");
        let text = "def f():\n    if x:\n        pass\n";
        let (_, out) = one(text, "\tif x:\n\t\tpass", "\tif y:\n\t\tpass");
        assert_eq!(out, "def f():\n    if y:\n        pass\n");
    }

    #[test]
    fn collapsed_whitespace_keeps_line_breaks_and_edges() {
        let text = "call(a,   b);\nnext\n";
        let (strategy, out) = one(text, "call(a, b);", "call(a, c);");
        assert_eq!(strategy, Strategy::CollapsedWhitespace);
        assert_eq!(out, "call(a, c);\nnext\n");
        // A one-line old_string does not match two lines: replacing would join them (two
        // statements in Python or shell).
        assert_eq!(find("return foo\nbar()\n", "foo bar", "foo_bar"), None);
        assert_eq!(
            find("call(a,\n     b);\n", "call(a, b);", "call(a, c);"),
            None
        );
        let (_, out) = one("  x  =  1;\n", "  x = 1;\n", "  x = 2;\n  y = 3;\n");
        assert_eq!(out, "  x = 2;\n  y = 3;\n");
    }

    #[test]
    fn trimmed_lines_keep_untouched_lines_and_refuse_inconsistent_indentation() {
        // The unchanged first line keeps the file's trailing spaces (a Markdown line break).
        let (strategy, out) = one("x  \ny\n", "x\ny", "x\nz");
        assert_eq!(strategy, Strategy::TrimmedLines);
        assert_eq!(out, "x  \nz\n");
        // Lines that need different indentation changes have no one right placement.
        let text = "def b():\n    if x:\n            return 1\n    return 3\n";
        assert_eq!(
            find(
                text,
                "if x:\n    return 1\nreturn 3",
                "if y:\n    return 9\nreturn 4"
            ),
            None
        );
        // One consistent change is applied to every line.
        let text = "def b():\n    if x:\n        return 1\n    return 3\n";
        let (_, out) = one(
            text,
            "if x:\n    return 1\nreturn 3",
            "if y:\n    return 9\nreturn 4",
        );
        assert_eq!(out, "def b():\n    if y:\n        return 9\n    return 4\n");
    }

    #[test]
    fn double_escaped_old_string_is_unescaped() {
        let text = "line one\n\tsay(\"hi\");\n";
        let (strategy, out) = one(
            text,
            r#"line one\n\tsay(\"hi\");"#,
            r#"line one\n\tsay(\"bye\");"#,
        );
        assert_eq!(strategy, Strategy::Unescaped);
        assert_eq!(out, "line one\n\tsay(\"bye\");\n");
    }

    #[test]
    fn unescaped_match_keeps_a_new_string_meant_as_written() {
        // old_string only matches unescaped; new_string has a single backslash before `theta`,
        // which text escaped twice would have doubled: it is LaTeX, kept as written.
        let text = "x = 1\ny = 2\n";
        let (strategy, out) = one(text, r"x = 1\ny = 2", r"$\theta \neq 0$");
        assert_eq!(strategy, Strategy::Unescaped);
        assert_eq!(out, "$\\theta \\neq 0$\n");
    }

    #[test]
    fn blank_old_strings_do_not_match_by_tolerance() {
        assert_eq!(find("a\n\nb", "  \n", "x"), None);
    }

    #[test]
    fn line_numbers() {
        assert_eq!(lines_of("a\nb\nc", [0]), [1]);
        assert_eq!(lines_of("a\nb\nc", [4]), [3]);
        assert_eq!(lines_of("a\nb\nc\nd", [0, 2, 2, 6, 1]), [1, 2, 2, 4, 1]);
        assert_eq!(line_spans("a\n\nb"), vec![(0, 1), (2, 2), (3, 4)]);
        assert_eq!(line_spans("a\n"), vec![(0, 1)]);
    }
}
