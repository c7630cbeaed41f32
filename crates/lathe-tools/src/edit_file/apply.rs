//! Applying a list of edits to a file's text, in order, all or none. Pure: text in, text or a
//! model-facing refusal out.

use super::EditInput;
use super::closest::{Closest, closest};
use super::document::{View, normalize_input};
use super::matching::{Match, Strategy, find, line_spans, lines_of};
use lathe_runtime::args::{self, FileKind};

/// Lines of the closest region shown when nothing matched.
const MAX_CLOSEST_LINES: usize = 20;

/// What one edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditReport {
    /// How it matched (`None` when it created the file).
    pub strategy: Option<Strategy>,
    /// Replacements made.
    pub count: usize,
    /// The line of each replacement (in the text the edit was applied to).
    pub lines: Vec<usize>,
    /// `new_string` arrived double-escaped on one line and was written with real line breaks.
    pub unescaped_new: bool,
}

/// The edited text and what each edit did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The new text (BOM and raw bytes still to be encoded).
    pub text: String,
    /// One report per edit.
    pub reports: Vec<EditReport>,
}

impl Outcome {
    /// Whether any edit's `new_string` was written with its double escapes undone.
    pub fn unescaped_new(&self) -> bool {
        self.reports.iter().any(|r| r.unescaped_new)
    }

    /// "1 replacement at line 12, matched exactly" (one part per edit).
    pub fn summary(&self) -> String {
        let parts: Vec<String> = self.reports.iter().map(describe).collect();
        match parts.as_slice() {
            [one] => one.clone(),
            _ => {
                let listed: Vec<String> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, p)| format!("edits[{i}]: {p}"))
                    .collect();
                format!("{} edits; {}", parts.len(), listed.join("; "))
            }
        }
    }
}

fn describe(report: &EditReport) -> String {
    let Some(strategy) = report.strategy else {
        return "created the file".to_owned();
    };
    format!(
        "{} replacement{} at {} {}, {}",
        report.count,
        plural(report.count),
        if report.lines.len() == 1 {
            "line"
        } else {
            "lines"
        },
        list(&report.lines),
        strategy.describe()
    )
}

/// Why the edits were refused.
#[derive(Debug, Clone, PartialEq)]
pub enum EditError {
    /// old_string == new_string.
    Same {
        /// Which edit.
        index: usize,
    },
    /// They differ only in `\r\n` vs `\n` (or a BOM).
    LineEndingsOnly {
        /// Which edit.
        index: usize,
    },
    /// An empty old_string on a file that exists.
    EmptyOld {
        /// Which edit.
        index: usize,
    },
    /// Nothing matched, not even tolerantly.
    NotFound {
        /// Which edit.
        index: usize,
        /// The closest region and its numbered lines.
        closest: Option<(Closest, String)>,
        /// Hints on likely causes.
        hints: Vec<String>,
    },
    /// More than one match without replace_all.
    Ambiguous {
        /// Which edit.
        index: usize,
        /// How they matched.
        strategy: Strategy,
        /// The line of each match.
        lines: Vec<usize>,
    },
}

impl EditError {
    /// The model-facing text for a call that had `total` edits on the file shown as `shown`.
    pub fn message(&self, shown: &str, total: usize) -> String {
        let (index, body) = match self {
            EditError::Same { index } => (
                *index,
                "old_string and new_string are identical, so the edit would change nothing; \
                 put the new text in new_string"
                    .to_owned(),
            ),
            EditError::LineEndingsOnly { index } => (
                *index,
                "old_string and new_string differ only in line endings; edit_file keeps the \
                 file's line endings (use write_file to change them)"
                    .to_owned(),
            ),
            EditError::EmptyOld { index } => (
                *index,
                format!(
                    "old_string is empty, but {shown} already exists: an empty old_string only \
                     creates a new file. Give the exact text to replace, or use write_file to \
                     replace the whole file"
                ),
            ),
            EditError::NotFound {
                index,
                closest,
                hints,
            } => {
                let mut text = format!(
                    "old_string was not found in {shown} (not even ignoring whitespace, \
                     indentation or escaping differences)."
                );
                for hint in hints {
                    text.push(' ');
                    text.push_str(hint);
                }
                match closest {
                    Some((region, lines)) => {
                        let after = if *index > 0 {
                            ", after the earlier edits"
                        } else {
                            ""
                        };
                        text.push_str(&format!(
                            "\nThe most similar text is at lines {}-{} ({:.0}% similar{after}):\n{lines}",
                            region.first,
                            region.last,
                            region.similarity * 100.0
                        ));
                        text.push_str(&format!(
                            "Read the file again with read_file (offset={}) and copy the exact \
                             text, without the line numbers, into old_string.",
                            region.first
                        ));
                    }
                    None => text.push_str(
                        "\nRead the file again with read_file and copy the exact text, without \
                         the line numbers, into old_string.",
                    ),
                }
                (*index, text)
            }
            EditError::Ambiguous {
                index,
                strategy,
                lines,
            } => {
                let how = match strategy {
                    Strategy::Exact => String::new(),
                    other => format!("; {}", other.describe()),
                };
                (
                    *index,
                    format!(
                        "old_string matches {} places in {shown} (lines {}{how}). Add more \
                         surrounding lines to old_string so that it matches only one, or set \
                         replace_all=true to replace all {}.",
                        lines.len(),
                        list(lines),
                        lines.len()
                    ),
                )
            }
        };
        if total > 1 {
            format!(
                "edits[{index}]: {body} No edit was applied: the edits apply all together or not at all."
            )
        } else {
            body
        }
    }
}

/// Applies `edits` in order to `before` (`None`: the file does not exist, and the first edit
/// has an empty old_string and creates it), for a file of `kind` (which decides whether a
/// double-escaped `new_string` is repaired).
pub fn apply_edits(
    before: Option<&str>,
    edits: &[EditInput],
    kind: FileKind,
) -> Result<Outcome, EditError> {
    let mut reports = Vec::with_capacity(edits.len());
    let mut text = String::new();
    let mut rest = edits;
    match before {
        Some(existing) => text.push_str(existing),
        None => {
            let (first, others) = edits.split_first().expect("at least one edit");
            let repaired = args::undo_double_escape(&first.new_string, kind);
            text.push_str(repaired.as_deref().unwrap_or(&first.new_string));
            reports.push(EditReport {
                strategy: None,
                count: 1,
                lines: vec![1],
                unescaped_new: repaired.is_some(),
            });
            rest = others;
        }
    }
    let offset = edits.len() - rest.len();
    for (i, edit) in rest.iter().enumerate() {
        let (next, report) = apply_one(&text, edit, offset + i, kind)?;
        text = next;
        reports.push(report);
    }
    Ok(Outcome { text, reports })
}

fn apply_one(
    raw: &str,
    edit: &EditInput,
    index: usize,
    kind: FileKind,
) -> Result<(String, EditReport), EditError> {
    if edit.old_string.is_empty() {
        return Err(EditError::EmptyOld { index });
    }
    if edit.old_string == edit.new_string {
        return Err(EditError::Same { index });
    }
    let old = normalize_input(&edit.old_string);
    let new = normalize_input(&edit.new_string);
    if old == new {
        return Err(EditError::LineEndingsOnly { index });
    }
    // A `\n` escape in old_string says the file holds such escapes, so new_string's are meant
    // as written too; otherwise a double-escaped new_string is repaired when the evidence says
    // so (`\newcommand` is not).
    let repaired = if old.contains("\\n") {
        None
    } else {
        args::undo_double_escape(&new, kind)
    };
    let new = repaired.as_deref().unwrap_or(&new);
    let view = View::of(raw);
    let Some((strategy, matches)) = find(&view.text, &old, new) else {
        return Err(not_found(&view.text, &old, index));
    };
    let lines = lines_of(&view.text, matches.iter().map(|m| m.start));
    if matches.len() > 1 && !edit.replace_all.unwrap_or(false) {
        return Err(EditError::Ambiguous {
            index,
            strategy,
            lines,
        });
    }
    let mut out = String::with_capacity(raw.len() + new.len());
    let mut done = 0;
    for m in &matches {
        let replacement = keep_final_newline(&view.text, m);
        let start = view.raw_pos(m.start);
        out.push_str(&raw[done..start]);
        out.push_str(&view.raw_replacement(m.start, m.end, &replacement));
        done = view.raw_pos(m.end);
    }
    out.push_str(&raw[done..]);
    let report = EditReport {
        strategy: Some(strategy),
        count: matches.len(),
        lines,
        unescaped_new: repaired.is_some(),
    };
    Ok((out, report))
}

/// A replacement at the very end of the file keeps the file's final newline, or its absence,
/// unless adding or removing that newline is all the edit does.
fn keep_final_newline(text: &str, m: &Match) -> String {
    let mut replacement = m.replacement.clone();
    if m.end != text.len() || text.is_empty() {
        return replacement;
    }
    let matched = &text[m.start..m.end];
    if text.ends_with('\n') {
        let result_ends_with_newline = if replacement.is_empty() {
            m.start == 0 || text[..m.start].ends_with('\n')
        } else {
            replacement.ends_with('\n')
        };
        if !result_ends_with_newline && format!("{replacement}\n") != matched {
            replacement.push('\n');
        }
    } else if replacement.ends_with('\n') && replacement[..replacement.len() - 1] != *matched {
        replacement.pop();
    }
    replacement
}

fn not_found(text: &str, old: &str, index: usize) -> EditError {
    let mut hints = Vec::new();
    let numbered = old.lines().filter(|l| !l.trim().is_empty()).all(|l| {
        let t = l.trim_start();
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        digits > 0 && (t[digits..].starts_with('\t') || t[digits..].starts_with('→'))
    });
    if numbered && !old.trim().is_empty() {
        hints.push(
            "old_string seems to include read_file's line numbers at the start of its lines; \
             leave them out."
                .to_owned(),
        );
    }
    if old.contains('\u{FFFD}') {
        hints.push(
            "old_string contains \u{FFFD}, which read_file shows for bytes that are not UTF-8; \
             those bytes cannot be typed, so choose text next to them instead."
                .to_owned(),
        );
    }
    let closest = closest(text, old)
        .filter(|c| c.similarity >= 0.3)
        .map(|region| {
            let spans = line_spans(text);
            let last = region.last.min(region.first + MAX_CLOSEST_LINES - 1);
            let mut lines = String::new();
            for n in region.first..=last {
                let (s, e) = spans[n - 1];
                lines.push_str(&format!("{n:>6}\t{}\n", &text[s..e]));
            }
            if last < region.last {
                lines.push_str(&format!("   ...\t({} more lines)\n", region.last - last));
            }
            (region, lines)
        });
    EditError::NotFound {
        index,
        closest,
        hints,
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `4`, `4 and 9`, `4, 9 and 12` (at most 20 listed).
fn list(numbers: &[usize]) -> String {
    const MAX: usize = 20;
    let shown: Vec<String> = numbers.iter().take(MAX).map(usize::to_string).collect();
    let mut text = match shown.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    };
    if numbers.len() > MAX {
        text = format!("{}, ... ({} in all)", shown.join(", "), numbers.len());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> EditInput {
        EditInput {
            old_string: old.to_owned(),
            new_string: new.to_owned(),
            replace_all: None,
        }
    }

    #[test]
    fn crlf_file_stays_crlf_when_new_string_uses_lf() {
        let out = apply_edits(
            Some("a\r\nb\r\nc\r\n"),
            &[edit("b\n", "B1\nB2\n")],
            FileKind::Other,
        )
        .unwrap();
        assert_eq!(out.text, "a\r\nB1\r\nB2\r\nc\r\n");
        let out = apply_edits(
            Some("a\r\nb\r\n"),
            &[edit("a\r\nb", "x\ny")],
            FileKind::Other,
        )
        .unwrap();
        assert_eq!(out.text, "x\r\ny\r\n");
    }

    #[test]
    fn final_newline_is_kept_or_kept_absent() {
        let out = apply_edits(Some("a\nb"), &[edit("b", "c\n")], FileKind::Other).unwrap();
        assert_eq!(out.text, "a\nc");
        let out = apply_edits(Some("a\nb\n"), &[edit("b\n", "c")], FileKind::Other).unwrap();
        assert_eq!(out.text, "a\nc\n");
        let out = apply_edits(Some("a\nb\n"), &[edit("\nb\n", "")], FileKind::Other).unwrap();
        assert_eq!(out.text, "a\n");
        // Adding the missing final newline on purpose is honoured.
        let out = apply_edits(Some("a\nb"), &[edit("b", "b\n")], FileKind::Other).unwrap();
        assert_eq!(out.text, "a\nb\n");
    }

    #[test]
    fn edits_apply_in_order_or_not_at_all() {
        let out = apply_edits(
            Some("one two three"),
            &[edit("one", "1"), edit("1 two", "12")],
            FileKind::Other,
        )
        .unwrap();
        assert_eq!(out.text, "12 three");
        assert_eq!(out.summary().matches("matched exactly").count(), 2);
        let err = apply_edits(
            Some("one two"),
            &[edit("one", "1"), edit("zzz", "y")],
            FileKind::Other,
        )
        .unwrap_err();
        let message = err.message("f.txt", 2);
        assert!(
            message.starts_with("edits[1]: old_string was not found in f.txt"),
            "{message}"
        );
        assert!(message.contains("No edit was applied"), "{message}");
    }

    #[test]
    fn ambiguity_lists_every_line_and_replace_all_replaces_all() {
        let text = "x = 1\ny = 2\nx = 1\n\nx = 1\n";
        let err = apply_edits(Some(text), &[edit("x = 1", "x = 3")], FileKind::Other).unwrap_err();
        assert_eq!(
            err,
            EditError::Ambiguous {
                index: 0,
                strategy: Strategy::Exact,
                lines: vec![1, 3, 5]
            }
        );
        let message = err.message("f", 1);
        assert!(
            message.contains("matches 3 places in f (lines 1, 3 and 5)"),
            "{message}"
        );
        assert!(message.contains("replace_all=true"), "{message}");
        let all = EditInput {
            replace_all: Some(true),
            ..edit("x = 1", "x = 3")
        };
        let out = apply_edits(Some(text), &[all], FileKind::Other).unwrap();
        assert_eq!(out.text, text.replace("x = 1", "x = 3"));
        assert_eq!(out.reports[0].count, 3);
    }

    #[test]
    fn refusals_name_their_reason() {
        let same = apply_edits(Some("a"), &[edit("a", "a")], FileKind::Other).unwrap_err();
        assert!(same.message("f", 1).contains("identical"));
        let endings =
            apply_edits(Some("a\nb"), &[edit("a\r\nb", "a\nb")], FileKind::Other).unwrap_err();
        assert!(endings.message("f", 1).contains("only in line endings"));
        let empty = apply_edits(Some("a"), &[edit("", "x")], FileKind::Other).unwrap_err();
        assert!(empty.message("f", 1).contains("already exists"));
    }

    #[test]
    fn creation_then_more_edits() {
        let out = apply_edits(
            None,
            &[edit("", "hello world\n"), edit("world", "there")],
            FileKind::Other,
        )
        .unwrap();
        assert_eq!(out.text, "hello there\n");
        assert_eq!(out.reports[0].strategy, None);
    }

    #[test]
    fn not_found_shows_the_closest_lines_and_hints() {
        let text = "fn main() {\n    println!(\"hello\");\n}\n";
        let err = apply_edits(
            Some(text),
            &[edit("    println!(\"helo\");\n}", "x")],
            FileKind::Other,
        )
        .unwrap_err();
        let message = err.message("src/main.rs", 1);
        assert!(message.contains("lines 2-3"), "{message}");
        assert!(
            message.contains("     2\t    println!(\"hello\");\n"),
            "{message}"
        );
        assert!(message.contains("read_file (offset=2)"), "{message}");
        let numbered = apply_edits(
            Some(text),
            &[edit("     2\tprintln!(\"x\");", "y")],
            FileKind::Other,
        )
        .unwrap_err();
        assert!(
            numbered.message("f", 1).contains("line numbers"),
            "{}",
            numbered.message("f", 1)
        );
    }

    #[test]
    fn lists() {
        assert_eq!(list(&[4]), "4");
        assert_eq!(list(&[4, 9]), "4 and 9");
        assert_eq!(list(&[4, 9, 12]), "4, 9 and 12");
        assert!(list(&(1..=30).collect::<Vec<_>>()).ends_with("(30 in all)"));
    }
}
