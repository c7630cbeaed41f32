//! Applying an update's hunks to a file's text: each hunk is found after the one before it,
//! exactly, then with trailing whitespace ignored, then with surrounding whitespace ignored
//! (the first of these that finds it anywhere decides), and replaced. Pure: text in, text or a
//! model-facing refusal out.

use super::parse::{Chunk, HunkLine};
use crate::edit_file::closest::closest;

/// Lines of the nearest region shown when a hunk is not found.
const MAX_NEAREST_LINES: usize = 12;
/// Lines of a hunk quoted back when it is not found.
const MAX_WANTED_LINES: usize = 20;

/// How a hunk's lines were found, from the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strategy {
    /// Byte for byte (line endings aside).
    Exact,
    /// Trailing spaces and tabs on each line ignored.
    TrailingWhitespace,
    /// Leading and trailing whitespace on each line ignored.
    SurroundingWhitespace,
}

impl Strategy {
    /// The words in results.
    pub fn describe(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::TrailingWhitespace => "trailing whitespace ignored",
            Strategy::SurroundingWhitespace => "surrounding whitespace ignored",
        }
    }

    /// The name in metadata.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Exact => "exact",
            Strategy::TrailingWhitespace => "trailing_whitespace",
            Strategy::SurroundingWhitespace => "surrounding_whitespace",
        }
    }

    fn same(self, file: &str, wanted: &str) -> bool {
        match self {
            Strategy::Exact => file == wanted,
            Strategy::TrailingWhitespace => file.trim_end() == wanted.trim_end(),
            Strategy::SurroundingWhitespace => file.trim() == wanted.trim(),
        }
    }
}

const STRATEGIES: [Strategy; 3] = [
    Strategy::Exact,
    Strategy::TrailingWhitespace,
    Strategy::SurroundingWhitespace,
];

/// One line of the file: its text (no line ending) and its ending (`\n`, `\r\n`, or none for
/// a last line without one).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Line {
    text: String,
    ending: &'static str,
}

fn split_lines(text: &str) -> Vec<Line> {
    text.split_inclusive('\n')
        .map(|l| {
            if let Some(t) = l.strip_suffix("\r\n") {
                Line {
                    text: t.to_owned(),
                    ending: "\r\n",
                }
            } else if let Some(t) = l.strip_suffix('\n') {
                Line {
                    text: t.to_owned(),
                    ending: "\n",
                }
            } else {
                Line {
                    text: l.to_owned(),
                    ending: "",
                }
            }
        })
        .collect()
}

/// Why the hunks cannot be applied.
#[derive(Debug, Clone, PartialEq)]
pub enum HunkError {
    /// An `@@` anchor line is not in the file (after the hunks before it).
    AnchorNotFound {
        /// 0-based hunk index.
        hunk: usize,
        /// The anchor as written.
        anchor: String,
        /// The 1-based file line after which it was looked for (0: from the start).
        after: usize,
    },
    /// A hunk's context and removed lines are not in the file.
    NotFound {
        /// 0-based hunk index.
        hunk: usize,
        /// The lines looked for.
        wanted: Vec<String>,
        /// The 1-based file line after which they were looked for (0: from the start).
        after: usize,
        /// It was marked `*** End of File`, so only the end of the file was tried.
        end_of_file: bool,
        /// The nearest region of the file, numbered, when there is one like it.
        nearest: Option<String>,
    },
}

impl HunkError {
    /// The model-facing text, for the file shown as `shown` updated by `total` hunks of which
    /// the first starts at patch line `first_line`.
    pub fn message(&self, shown: &str, chunks: &[Chunk]) -> String {
        let total = chunks.len();
        let which = |hunk: usize| {
            format!(
                "hunk {} of {total} (patch line {})",
                hunk + 1,
                chunks[hunk].line
            )
        };
        let after = |line: usize| {
            if line == 0 {
                String::new()
            } else {
                format!(" after line {line}")
            }
        };
        match self {
            HunkError::AnchorNotFound {
                hunk,
                anchor,
                after: from,
            } => format!(
                "{shown}: {}: the line `@@ {anchor}` names was not found in {shown}{} (not even \
                 ignoring surrounding whitespace). The text after `@@` must be a line of the \
                 file (a class or function header) that comes before the hunk; read {shown} \
                 again and copy it exactly, or use `@@` alone.",
                which(*hunk),
                after(*from)
            ),
            HunkError::NotFound {
                hunk,
                wanted,
                after: from,
                end_of_file,
                nearest,
            } => {
                let mut text = format!(
                    "{shown}: {}: its context and '-' lines were not found in {shown}{}{} (not \
                     even ignoring surrounding whitespace). It looked for:\n",
                    which(*hunk),
                    if *end_of_file {
                        " at the end of the file (the hunk says `*** End of File`)".to_owned()
                    } else {
                        after(*from)
                    },
                    if *hunk > 0 {
                        ", after the hunks before it"
                    } else {
                        ""
                    },
                );
                for line in wanted.iter().take(MAX_WANTED_LINES) {
                    text.push_str("  ");
                    text.push_str(line);
                    text.push('\n');
                }
                if wanted.len() > MAX_WANTED_LINES {
                    text.push_str(&format!(
                        "  ... ({} more lines)\n",
                        wanted.len() - MAX_WANTED_LINES
                    ));
                }
                match nearest {
                    Some(nearest) => {
                        text.push_str(&format!("The nearest lines in {shown} are:\n{nearest}"));
                    }
                    None => text.push_str(&format!("Nothing in {shown} is like them.\n")),
                }
                text.push_str(&format!(
                    "Read {shown} again and write the hunk's ' ' and '-' lines exactly as the file \
                     has them."
                ));
                text
            }
        }
    }
}

/// The first place at or after `from` where `wanted` matches, by the first strategy that
/// finds it anywhere; with `at_end`, only the place where it ends the file.
fn seek(lines: &[Line], wanted: &[&str], from: usize, at_end: bool) -> Option<(usize, Strategy)> {
    if wanted.len() > lines.len() {
        return None;
    }
    let last = lines.len() - wanted.len();
    let starts = if at_end { last..=last } else { from..=last };
    if *starts.start() > last || (at_end && last < from) {
        return None;
    }
    for strategy in STRATEGIES {
        for start in starts.clone() {
            if wanted
                .iter()
                .enumerate()
                .all(|(k, w)| strategy.same(&lines[start + k].text, w))
            {
                return Some((start, strategy));
            }
        }
    }
    None
}

/// The updated text, and how each hunk was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Updated {
    /// The new text.
    pub text: String,
    /// One per hunk.
    pub strategies: Vec<Strategy>,
}

impl Updated {
    /// The loosest strategy any hunk needed (`Exact` when there were none).
    pub fn loosest(&self) -> Strategy {
        self.strategies
            .iter()
            .copied()
            .max()
            .unwrap_or(Strategy::Exact)
    }
}

/// Applies `chunks` to `text` (the file's text: its line endings kept; new lines get the
/// file's usual ending).
pub fn apply(text: &str, chunks: &[Chunk]) -> Result<Updated, HunkError> {
    let lines = split_lines(text);
    let crlf = lines.iter().filter(|l| l.ending == "\r\n").count();
    let lf = lines.iter().filter(|l| l.ending == "\n").count();
    let usual: &'static str = if crlf > lf { "\r\n" } else { "\n" };
    // (start, how many lines it replaces, the lines put there)
    let mut replacements: Vec<(usize, usize, Vec<Line>)> = Vec::new();
    let mut strategies = Vec::with_capacity(chunks.len());
    let mut at = 0;
    for (hunk, chunk) in chunks.iter().enumerate() {
        for anchor in &chunk.anchors {
            match seek(&lines, &[anchor.as_str()], at, false) {
                Some((found, _)) => at = found + 1,
                None => {
                    return Err(HunkError::AnchorNotFound {
                        hunk,
                        anchor: anchor.clone(),
                        after: at,
                    });
                }
            }
        }
        let mut ops: &[HunkLine] = &chunk.lines;
        let new_line = |t: &str| Line {
            text: t.to_owned(),
            ending: usual,
        };
        let old: Vec<&str> = chunk.old_lines();
        if old.is_empty() {
            // Only added lines: after the anchor when there is one, else at the end.
            let insert_at = if chunk.anchors.is_empty() {
                lines.len()
            } else {
                at
            };
            let added = ops
                .iter()
                .filter_map(|l| match l {
                    HunkLine::Add(t) => Some(new_line(t)),
                    _ => None,
                })
                .collect();
            replacements.push((insert_at, 0, added));
            strategies.push(Strategy::Exact);
            // At the end without an anchor: the hunks after it are still looked for from here.
            if !chunk.anchors.is_empty() {
                at = insert_at;
            }
            continue;
        }
        let mut found = seek(&lines, &old, at, chunk.end_of_file);
        // A blank context line the model put at the end of a hunk stands for the end of the
        // file more often than for an empty line: retried without it.
        while found.is_none() && matches!(ops.last(), Some(HunkLine::Context(t)) if t.is_empty()) {
            ops = &ops[..ops.len() - 1];
            let old: Vec<&str> = ops
                .iter()
                .filter_map(|l| match l {
                    HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                    HunkLine::Add(_) => None,
                })
                .collect();
            if old.is_empty() {
                break;
            }
            found = seek(&lines, &old, at, chunk.end_of_file);
        }
        let Some((start, strategy)) = found else {
            let file_text: String = lines.iter().map(|l| format!("{}\n", l.text)).collect();
            return Err(HunkError::NotFound {
                hunk,
                wanted: old.iter().map(|s| (*s).to_owned()).collect(),
                after: at,
                end_of_file: chunk.end_of_file,
                nearest: nearest(&file_text, &lines, &old.join("\n")),
            });
        };
        // Context lines stay as the file has them (a tolerant match must not rewrite them).
        let mut k = start;
        let mut put = Vec::new();
        for op in ops {
            match op {
                HunkLine::Context(_) => {
                    put.push(lines[k].clone());
                    k += 1;
                }
                HunkLine::Remove(_) => k += 1,
                HunkLine::Add(t) => put.push(new_line(t)),
            }
        }
        replacements.push((start, k - start, put));
        strategies.push(strategy);
        at = k;
    }
    replacements.sort_by_key(|r| r.0);
    let mut out_lines: Vec<Line> = Vec::with_capacity(lines.len());
    let mut next = 0;
    for (start, len, put) in replacements {
        out_lines.extend_from_slice(&lines[next..start]);
        out_lines.extend(put);
        next = start + len;
    }
    out_lines.extend_from_slice(&lines[next..]);
    // Only the last line may lack an ending: one that now has lines after it gets the usual.
    let count = out_lines.len();
    for line in out_lines.iter_mut().take(count.saturating_sub(1)) {
        if line.ending.is_empty() {
            line.ending = usual;
        }
    }
    let mut text = String::with_capacity(text.len() + 64);
    for line in &out_lines {
        text.push_str(&line.text);
        text.push_str(line.ending);
    }
    Ok(Updated { text, strategies })
}

/// The region of the file most like `wanted`, numbered, when it is somewhat like it.
fn nearest(file_text: &str, lines: &[Line], wanted: &str) -> Option<String> {
    let region = closest(file_text, wanted)?;
    if region.similarity < 0.3 {
        return None;
    }
    let last = region.last.min(region.first + MAX_NEAREST_LINES - 1);
    let mut out = String::new();
    for n in region.first..=last {
        out.push_str(&format!("{n:>6}\t{}\n", lines[n - 1].text));
    }
    if last < region.last {
        out.push_str(&format!("  ... ({} more lines)\n", region.last - last));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::super::parse::{FileOp, parse};
    use super::*;

    fn chunks(body: &str) -> Vec<Chunk> {
        let patch = parse(&format!(
            "*** Begin Patch\n*** Update File: f\n{body}\n*** End Patch"
        ))
        .unwrap();
        match patch.ops.into_iter().next() {
            Some(FileOp::Update { chunks, .. }) => chunks,
            other => panic!("{other:?}"),
        }
    }

    fn run(text: &str, body: &str) -> Updated {
        apply(text, &chunks(body)).unwrap_or_else(|e| panic!("{}", e.message("f", &chunks(body))))
    }

    #[test]
    fn exact_then_trailing_then_surrounding_whitespace() {
        let up = run("a\nb\nc\n", "@@\n a\n-b\n+B\n c");
        assert_eq!(up.text, "a\nB\nc\n");
        assert_eq!(up.strategies, [Strategy::Exact]);

        // The file has trailing spaces the model left out: kept on the context line.
        let up = run("a  \nb\t\nc\n", "@@\n a\n-b\n+B");
        assert_eq!(up.text, "a  \nB\nc\n");
        assert_eq!(up.strategies, [Strategy::TrailingWhitespace]);

        let up = run("    a\n    b\n", "@@\n a\n-b\n+    B");
        assert_eq!(up.text, "    a\n    B\n");
        assert_eq!(up.loosest(), Strategy::SurroundingWhitespace);
    }

    #[test]
    fn anchors_place_hunks_and_hunks_go_in_order() {
        let text = "def f():\n    x = 1\ndef g():\n    x = 1\n";
        let up = run(text, "@@ def g():\n-    x = 1\n+    x = 2");
        assert_eq!(up.text, "def f():\n    x = 1\ndef g():\n    x = 2\n");
        // Two hunks with the same lines: the second is found after the first.
        let up = run(
            text,
            "@@\n-    x = 1\n+    x = 3\n@@\n-    x = 1\n+    x = 4",
        );
        assert_eq!(up.text, "def f():\n    x = 3\ndef g():\n    x = 4\n");
        // Several anchors in a row.
        let text = "class A:\n  def f():\n    pass\nclass B:\n  def f():\n    pass\n";
        let up = run(text, "@@ class B:\n@@   def f():\n-    pass\n+    return 1");
        assert!(up.text.ends_with("class B:\n  def f():\n    return 1\n"));
    }

    #[test]
    fn pure_additions_go_after_the_anchor_or_at_the_end() {
        assert_eq!(run("a\nb\n", "@@\n+c").text, "a\nb\nc\n");
        assert_eq!(run("a\nb\n", "@@ a\n+x").text, "a\nx\nb\n");
        assert_eq!(run("a", "@@\n+b").text, "a\nb\n");
    }

    #[test]
    fn end_of_file_endings_and_the_trailing_blank_retry() {
        let up = run("x\nlast\nx\nlast\n", "@@\n-last\n+LAST\n*** End of File");
        assert_eq!(up.text, "x\nlast\nx\nLAST\n");
        // CRLF files keep CRLF, new lines too.
        assert_eq!(
            run("a\r\nb\r\n", "@@\n a\n-b\n+c\n+d").text,
            "a\r\nc\r\nd\r\n"
        );
        // A last line without a newline, untouched, stays without one.
        assert_eq!(run("a\nb", "@@\n-a\n+A\n b").text, "A\nb");
        // A trailing blank context line that stands for the end of the file.
        assert_eq!(run("a\nb\n", "@@\n-b\n+c\n").text, "a\nc\n");
    }

    #[test]
    fn a_hunk_that_is_not_there_says_what_it_looked_for_and_what_is_near() {
        let text = "fn main() {\n    let total = 1;\n    println!(\"{total}\");\n}\n";
        let body = "@@\n     let totl = 1;\n-    println!(\"{total}\");\n+    dbg!(total);";
        let err = apply(text, &chunks(body)).unwrap_err();
        let message = err.message("src/main.rs", &chunks(body));
        assert!(
            message.starts_with("src/main.rs: hunk 1 of 1 (patch line 3): its context"),
            "{message}"
        );
        assert!(message.contains("  let totl = 1;\n"), "{message}");
        assert!(
            message.contains("nearest lines in src/main.rs are:\n     2\t    let total = 1;\n"),
            "{message}"
        );
        let err = apply(text, &chunks("@@ fn other() {\n-}\n+};")).unwrap_err();
        assert!(matches!(err, HunkError::AnchorNotFound { hunk: 0, .. }));
        let err = apply("a\nb\n", &chunks("@@\n-a\n+A\n*** End of File")).unwrap_err();
        assert!(
            err.message("f", &chunks("@@\n-a\n+A\n*** End of File"))
                .contains("at the end of the file"),
        );
    }
}
