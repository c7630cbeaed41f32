//! Reading a patch in the format Codex and OpenCode use, leniently where models are known to
//! stray and precisely where they are wrong: every refusal names the patch line and what was
//! expected there.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH            then its lines, each starting with '+'
//! *** Delete File: PATH         nothing follows
//! *** Update File: PATH
//! *** Move to: NEW PATH         optional: the file is renamed
//! @@ CONTEXT LINE               optional anchor (a class, a function); `@@` alone is none
//!  context line                 ' ', '-' and '+' lines: the hunk
//! -removed line
//! +added line
//! *** End of File               optional: the hunk ends at the end of the file
//! *** End Patch
//! ```
//!
//! Tolerated: whitespace around the markers, a patch wrapped in a code fence or in a heredoc
//! (`apply_patch <<'EOF'` ... `EOF`, or `<<EOF` alone), `\r\n` line endings, a missing
//! `*** End Patch` (or `*** Begin Patch` before a file header), several `@@` anchors in a row
//! (each found after the one before), unified-diff hunk headers (`@@ -12,7 +12,8 @@ fn f()`:
//! the numbers are ignored, the text after them is the anchor), a first hunk without `@@`,
//! `-` lines after `*** Delete File:` (the content being deleted), blank lines between an
//! added file's `+` lines (kept as empty lines), and git's `\ No newline at end of file`.

/// The line that opens a patch.
pub const BEGIN: &str = "*** Begin Patch";
/// The line that closes a patch.
pub const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";

/// A parsed patch: its file operations in order, and the leniencies it needed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patch {
    /// The operations, in the order written.
    pub ops: Vec<FileOp>,
    /// What was tolerated, for the result ("the patch had no `*** End Patch` line").
    pub notes: Vec<String>,
}

/// One file operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileOp {
    /// `*** Add File:`: a new file with this content.
    Add {
        /// The path as written.
        path: String,
        /// The patch line of the header (1-based).
        line: usize,
        /// The content, each line ending in `\n`.
        content: String,
    },
    /// `*** Delete File:`.
    Delete {
        /// The path as written.
        path: String,
        /// The patch line of the header.
        line: usize,
    },
    /// `*** Update File:`, maybe with `*** Move to:`.
    Update {
        /// The path as written.
        path: String,
        /// The patch line of the header.
        line: usize,
        /// The new path, for a rename.
        move_to: Option<String>,
        /// The hunks, in file order.
        chunks: Vec<Chunk>,
    },
}

impl FileOp {
    /// The patch line of its header.
    pub fn line(&self) -> usize {
        match self {
            FileOp::Add { line, .. }
            | FileOp::Delete { line, .. }
            | FileOp::Update { line, .. } => *line,
        }
    }

    /// The path the operation starts from, as written.
    pub fn path(&self) -> &str {
        match self {
            FileOp::Add { path, .. }
            | FileOp::Delete { path, .. }
            | FileOp::Update { path, .. } => path,
        }
    }
}

/// One hunk of an update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The patch line where it starts (its first `@@`, or its first line).
    pub line: usize,
    /// `@@ ANCHOR` lines: each is found after the one before, and the hunk after the last.
    pub anchors: Vec<String>,
    /// Its lines, in order.
    pub lines: Vec<HunkLine>,
    /// `*** End of File` closed it: its lines are the last of the file.
    pub end_of_file: bool,
}

impl Chunk {
    /// The lines the file holds now (context and removed lines).
    pub fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }
}

/// A line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HunkLine {
    /// ` line`: kept.
    Context(String),
    /// `-line`: removed.
    Remove(String),
    /// `+line`: added.
    Add(String),
}

/// Why a patch cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The 1-based patch line, when one is to blame.
    pub line: Option<usize>,
    /// What is wrong and what was expected, for the model.
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line} of the patch: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line: Some(line),
        message: message.into(),
    }
}

/// Shows a patch line in a message: quoted, cut when long.
fn quoted(line: &str) -> String {
    const MAX: usize = 120;
    if line.chars().count() > MAX {
        let cut: String = line.chars().take(MAX).collect();
        format!("`{cut}…`")
    } else {
        format!("`{line}`")
    }
}

/// `path` after a header marker, or why it is missing.
fn header_path(rest: &str, line: usize, marker: &str) -> Result<String, ParseError> {
    let path = rest.trim();
    if path.is_empty() {
        return Err(error(
            line,
            format!("`{marker}` names no file; write `{marker} path/to/file`"),
        ));
    }
    Ok(path.to_owned())
}

/// Whether a (trimmed) line is a file header or the end of the patch: where a hunk stops.
fn is_boundary(trimmed: &str) -> bool {
    trimmed == END
        || trimmed.starts_with(ADD)
        || trimmed.starts_with(DELETE)
        || trimmed.starts_with(UPDATE)
}

/// The heredoc delimiter of a first line such as `apply_patch <<'EOF'` or `<<EOF`.
pub fn heredoc_start(line: &str) -> Option<String> {
    let t = line.trim();
    let t = t
        .strip_prefix("apply_patch")
        .or_else(|| t.strip_prefix("applypatch"))
        .unwrap_or(t)
        .trim_start();
    let word = t.strip_prefix("<<")?.trim_start();
    let word = word.strip_prefix('-').unwrap_or(word);
    let unquoted = word
        .strip_prefix('\'')
        .and_then(|w| w.strip_suffix('\''))
        .or_else(|| word.strip_prefix('"').and_then(|w| w.strip_suffix('"')))
        .unwrap_or(word);
    (!unquoted.is_empty()
        && unquoted
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| unquoted.to_owned())
}

/// Reads `text` as a patch.
pub fn parse(text: &str) -> Result<Patch, ParseError> {
    let text = text.replace("\r\n", "\n");
    let lines: Vec<&str> = text.split('\n').collect();
    let mut notes = Vec::new();
    let blank = |i: usize| lines[i].trim().is_empty();
    let (mut lo, mut hi) = (0, lines.len());
    let trim = |lo: &mut usize, hi: &mut usize| {
        while *lo < *hi && blank(*lo) {
            *lo += 1;
        }
        while *hi > *lo && blank(*hi - 1) {
            *hi -= 1;
        }
    };
    trim(&mut lo, &mut hi);
    if lo == hi {
        return Err(ParseError {
            line: None,
            message: format!(
                "the patch is empty; write `{BEGIN}`, the file operations, then `{END}`"
            ),
        });
    }
    // A fence around the patch (```diff ... ```), then a heredoc (apply_patch <<'EOF' ... EOF).
    let first = lines[lo].trim_start();
    if first.starts_with("```") || first.starts_with("~~~") {
        let fence = &first[..3];
        lo += 1;
        if hi > lo && lines[hi - 1].trim().starts_with(fence) {
            hi -= 1;
        }
        trim(&mut lo, &mut hi);
    }
    if lo < hi
        && let Some(word) = heredoc_start(lines[lo])
    {
        lo += 1;
        if hi > lo && lines[hi - 1].trim() == word {
            hi -= 1;
        }
        trim(&mut lo, &mut hi);
    }
    if lo == hi {
        return Err(error(
            lo.max(1),
            format!("the patch holds nothing; write `{BEGIN}`, the file operations, then `{END}`"),
        ));
    }
    let first = lines[lo].trim();
    if first == BEGIN {
        lo += 1;
    } else if is_boundary(first) && first != END {
        notes.push(format!("the patch had no `{BEGIN}` line"));
    } else {
        return Err(error(
            lo + 1,
            format!(
                "a patch starts with `{BEGIN}`, found {}. Write `{BEGIN}`, then `*** Update \
                 File: PATH` (or Add File / Delete File) and its hunks, then `{END}`",
                quoted(lines[lo])
            ),
        ));
    }
    let mut parser = Parser {
        lines: &lines,
        at: lo,
        end: hi,
    };
    let ops = parser.ops(&mut notes)?;
    if ops.is_empty() {
        return Err(error(
            lo.min(hi),
            "the patch has no file operations; add `*** Update File: PATH` with its hunks (or \
             Add File / Delete File) between the begin and end lines",
        ));
    }
    Ok(Patch { ops, notes })
}

struct Parser<'a> {
    lines: &'a [&'a str],
    /// The next line (0-based).
    at: usize,
    /// One past the last line.
    end: usize,
}

impl Parser<'_> {
    fn skip_blank(&mut self) {
        while self.at < self.end && self.lines[self.at].trim().is_empty() {
            self.at += 1;
        }
    }

    fn ops(&mut self, notes: &mut Vec<String>) -> Result<Vec<FileOp>, ParseError> {
        let mut ops = Vec::new();
        loop {
            self.skip_blank();
            if self.at >= self.end {
                notes.push(format!("the patch had no `{END}` line"));
                return Ok(ops);
            }
            let number = self.at + 1;
            let raw = self.lines[self.at];
            let line = raw.trim();
            if line == END {
                self.at += 1;
                self.skip_blank();
                if self.at < self.end {
                    return Err(error(
                        self.at + 1,
                        format!(
                            "text after `{END}`: {}. Put every file operation before `{END}`, \
                             and send one patch per call",
                            quoted(self.lines[self.at])
                        ),
                    ));
                }
                return Ok(ops);
            }
            if let Some(rest) = line.strip_prefix(ADD) {
                let path = header_path(rest, number, ADD)?;
                self.at += 1;
                let content = self.added_lines();
                ops.push(FileOp::Add {
                    path,
                    line: number,
                    content,
                });
            } else if let Some(rest) = line.strip_prefix(DELETE) {
                let path = header_path(rest, number, DELETE)?;
                self.at += 1;
                // The content being deleted, as some models list it: nothing to do with it.
                while self.at < self.end && self.lines[self.at].starts_with('-') {
                    self.at += 1;
                }
                ops.push(FileOp::Delete { path, line: number });
            } else if let Some(rest) = line.strip_prefix(UPDATE) {
                let path = header_path(rest, number, UPDATE)?;
                self.at += 1;
                let mut move_to = None;
                if self.at < self.end
                    && let Some(rest) = self.lines[self.at].trim().strip_prefix(MOVE)
                {
                    move_to = Some(header_path(rest, self.at + 1, MOVE)?);
                    self.at += 1;
                }
                let chunks = self.chunks(&path)?;
                if chunks.is_empty() && move_to.is_none() {
                    return Err(error(
                        number,
                        format!(
                            "`{UPDATE} {path}` has no hunks; follow it with `@@` and the lines \
                             to change (' ' context, '-' removed, '+' added), or with \
                             `{MOVE} NEW PATH` to rename it"
                        ),
                    ));
                }
                ops.push(FileOp::Update {
                    path,
                    line: number,
                    move_to,
                    chunks,
                });
            } else {
                let after = match ops.last() {
                    Some(FileOp::Add { path, .. }) => format!(
                        " (every line of the added file {path} starts with '+', an empty line \
                         too)"
                    ),
                    Some(FileOp::Delete { path, .. }) => {
                        format!(" (`{DELETE} {path}` takes no lines after it)")
                    }
                    _ => String::new(),
                };
                return Err(error(
                    number,
                    format!(
                        "expected a file header (`{ADD} PATH`, `{UPDATE} PATH`, `{DELETE} PATH`) \
                         or `{END}`, found {}{after}",
                        quoted(raw)
                    ),
                ));
            }
        }
    }

    /// The `+` lines of an added file. Blank lines between them are empty lines of the file;
    /// blank lines after the last are not.
    fn added_lines(&mut self) -> String {
        let mut content = String::new();
        while self.at < self.end {
            let line = self.lines[self.at];
            if let Some(text) = line.strip_prefix('+') {
                content.push_str(text);
                content.push('\n');
                self.at += 1;
            } else if line.trim().is_empty() {
                let mut next = self.at;
                while next < self.end && self.lines[next].trim().is_empty() {
                    next += 1;
                }
                if next < self.end && self.lines[next].starts_with('+') {
                    for _ in self.at..next {
                        content.push('\n');
                    }
                    self.at = next;
                } else {
                    break;
                }
            } else {
                break;
            }
        }
        content
    }

    fn chunks(&mut self, path: &str) -> Result<Vec<Chunk>, ParseError> {
        let mut chunks = Vec::new();
        loop {
            self.skip_blank();
            if self.at >= self.end {
                return Ok(chunks);
            }
            let raw = self.lines[self.at];
            let trimmed = raw.trim();
            if is_boundary(trimmed) {
                return Ok(chunks);
            }
            let start = self.at + 1;
            let mut anchors = Vec::new();
            let mut headers = 0;
            while self.at < self.end {
                let Some(anchor) = hunk_header(self.lines[self.at]) else {
                    break;
                };
                headers += 1;
                anchors.extend(anchor);
                self.at += 1;
            }
            if headers == 0 && !chunks.is_empty() {
                return Err(error(
                    start,
                    format!(
                        "expected `@@` to start the next hunk of {path} (or a file header, or \
                         `{END}`), found {}. Every line of a hunk starts with ' ' (context), \
                         '-' (removed) or '+' (added)",
                        quoted(raw)
                    ),
                ));
            }
            let mut lines = Vec::new();
            let mut end_of_file = false;
            while self.at < self.end {
                let line = self.lines[self.at];
                // Exactly at the start of the line: indented, it is a context line.
                if line.trim_end() == END_OF_FILE {
                    if lines.is_empty() {
                        return Err(error(
                            self.at + 1,
                            format!("`{END_OF_FILE}` ends a hunk of {path} that has no lines"),
                        ));
                    }
                    end_of_file = true;
                    self.at += 1;
                    break;
                }
                if line.starts_with("\\ No newline") {
                    // git's note after a line without a final newline: nothing to apply.
                    self.at += 1;
                    continue;
                }
                let parsed = match line.chars().next() {
                    None => HunkLine::Context(String::new()),
                    Some(' ') => HunkLine::Context(line[1..].to_owned()),
                    Some('-') => HunkLine::Remove(line[1..].to_owned()),
                    Some('+') => HunkLine::Add(line[1..].to_owned()),
                    Some(_) => break,
                };
                lines.push(parsed);
                self.at += 1;
            }
            if lines.is_empty() {
                let (at, found) = if self.at < self.end {
                    (self.at + 1, quoted(self.lines[self.at]))
                } else {
                    (start, "the end of the patch".to_owned())
                };
                return Err(error(
                    at,
                    format!(
                        "a hunk of {path} has no lines: after `@@` come the lines to change, \
                         each starting with ' ' (context), '-' (removed) or '+' (added); found \
                         {found}"
                    ),
                ));
            }
            chunks.push(Chunk {
                line: start,
                anchors,
                lines,
                end_of_file,
            });
        }
    }
}

/// A `@@` line: `Some(None)` for `@@` alone (or with only unified-diff line numbers),
/// `Some(Some(anchor))` for `@@ ANCHOR`, `None` for any other line.
fn hunk_header(line: &str) -> Option<Option<String>> {
    let rest = line.trim_start().strip_prefix("@@")?;
    if rest.trim().is_empty() {
        return Some(None);
    }
    // `@@ -12,7 +12,8 @@ fn f()`: a unified diff's header; its numbers mean nothing here.
    let t = rest.trim_start();
    if t.starts_with('-')
        && let Some(close) = t.find("@@")
        && t[..close]
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | ',' | ' '))
    {
        let anchor = t[close + 2..].trim();
        return Some((!anchor.is_empty()).then(|| anchor.to_owned()));
    }
    let anchor = rest.strip_prefix(' ').unwrap_or(rest).trim_end();
    Some(Some(anchor.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> Patch {
        parse(text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(text: &str) -> ParseError {
        parse(text).expect_err("should not parse")
    }

    #[test]
    fn every_header_kind() {
        let patch = ok("*** Begin Patch\n\
             *** Add File: path/add.py\n\
             +abc\n\
             +def\n\
             *** Delete File: path/delete.py\n\
             *** Update File: path/update.py\n\
             *** Move to: path/update2.py\n\
             @@ def f():\n\
             -    pass\n\
             +    return 123\n\
             *** End Patch\n");
        assert!(patch.notes.is_empty());
        assert_eq!(
            patch.ops,
            vec![
                FileOp::Add {
                    path: "path/add.py".into(),
                    line: 2,
                    content: "abc\ndef\n".into()
                },
                FileOp::Delete {
                    path: "path/delete.py".into(),
                    line: 5
                },
                FileOp::Update {
                    path: "path/update.py".into(),
                    line: 6,
                    move_to: Some("path/update2.py".into()),
                    chunks: vec![Chunk {
                        line: 8,
                        anchors: vec!["def f():".into()],
                        lines: vec![
                            HunkLine::Remove("    pass".into()),
                            HunkLine::Add("    return 123".into())
                        ],
                        end_of_file: false,
                    }]
                }
            ]
        );
    }

    #[test]
    fn several_hunks_anchors_and_end_of_file() {
        let patch = ok(
            "*** Begin Patch\n*** Update File: a.py\n@@ class A\n@@     def f(self):\n \
             x = 1\n-y = 2\n+y = 3\n\n@@\n-last\n+LAST\n*** End of File\n*** End Patch",
        );
        let FileOp::Update { chunks, .. } = &patch.ops[0] else {
            panic!()
        };
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].anchors, ["class A", "    def f(self):"]);
        // The blank line before the second `@@` is an empty context line of the first hunk.
        assert_eq!(
            chunks[0].lines.last(),
            Some(&HunkLine::Context(String::new()))
        );
        assert!(chunks[1].end_of_file);
        assert_eq!(chunks[1].line, 9);
    }

    #[test]
    fn lenient_wrappers_and_markers() {
        let inner = "*** Begin Patch\n*** Add File: a\n+hi\n*** End Patch";
        for wrapped in [
            format!("<<'EOF'\n{inner}\nEOF\n"),
            format!("apply_patch <<\"PATCH\"\n{inner}\nPATCH"),
            format!("```diff\n{inner}\n```"),
            format!("\n\n  {}\n", inner.replace('\n', "\r\n")),
            "*** Begin Patch \n*** Add File: a\n+hi\n  *** End Patch  ".to_owned(),
        ] {
            let patch = ok(&wrapped);
            assert_eq!(
                patch.ops,
                vec![FileOp::Add {
                    path: "a".into(),
                    line: patch.ops.first().map_or(0, |op| match op {
                        FileOp::Add { line, .. } => *line,
                        _ => 0,
                    }),
                    content: "hi\n".into()
                }],
                "{wrapped:?}"
            );
            assert!(patch.notes.is_empty(), "{wrapped:?}: {:?}", patch.notes);
        }
        let patch = ok("*** Update File: a\n@@\n-x\n+y\n");
        assert_eq!(
            patch.notes,
            [
                "the patch had no `*** Begin Patch` line",
                "the patch had no `*** End Patch` line"
            ]
        );
    }

    #[test]
    fn unified_diff_headers_and_a_first_hunk_without_header() {
        let patch = ok(
            "*** Begin Patch\n*** Update File: a\n@@ -1,3 +1,3 @@ fn main() {\n-a\n+b\n@@ -9 +9 @@\n-c\n+d\n*** End Patch",
        );
        let FileOp::Update { chunks, .. } = &patch.ops[0] else {
            panic!()
        };
        assert_eq!(chunks[0].anchors, ["fn main() {"]);
        assert!(chunks[1].anchors.is_empty());
        let patch = ok(
            "*** Begin Patch\n*** Update File: a\n import x\n+import y\n\\ No newline at end of file\n*** End Patch",
        );
        let FileOp::Update { chunks, .. } = &patch.ops[0] else {
            panic!()
        };
        assert_eq!(chunks[0].old_lines(), ["import x"]);
    }

    #[test]
    fn added_files_keep_inner_blank_lines_and_deleted_content_is_skipped() {
        let patch = ok(
            "*** Begin Patch\n*** Add File: a\n+one\n\n+three\n\n*** Delete File: b\n-old\n-content\n*** End Patch",
        );
        assert_eq!(
            patch.ops[0],
            FileOp::Add {
                path: "a".into(),
                line: 2,
                content: "one\n\nthree\n".into()
            }
        );
        assert_eq!(patch.ops.len(), 2);
    }

    #[test]
    fn malformed_patches_name_the_line_and_what_was_expected() {
        let e = err("hello\n*** Add File: a\n+x\n*** End Patch");
        assert_eq!(e.line, Some(1));
        assert!(e.message.contains("starts with `*** Begin Patch`"), "{e}");

        let e = err("*** Begin Patch\n*** Add File: a\nx\n*** End Patch");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("starts with '+'"), "{e}");

        let e = err("*** Begin Patch\n*** Update File: a\n*** End Patch");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("has no hunks"), "{e}");

        let e = err("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\nfoo\n*** End Patch");
        assert_eq!(e.line, Some(6));
        assert!(e.message.contains("expected `@@`"), "{e}");

        let e = err("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("has no lines"), "{e}");

        let e = err("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("expected a file header"), "{e}");

        let e = err("*** Begin Patch\n*** Add File:   \n+x\n*** End Patch");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("names no file"), "{e}");

        let e = err("*** Begin Patch\n*** End Patch");
        assert!(e.message.contains("no file operations"), "{e}");

        let e = err("*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore");
        assert_eq!(e.line, Some(4));
        assert!(e.message.contains("text after"), "{e}");

        let e = err("   \n");
        assert_eq!(e.line, None);
        assert!(e.message.contains("empty"), "{e}");
    }

    #[test]
    fn a_pure_rename_needs_no_hunk() {
        let patch = ok("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch");
        assert_eq!(
            patch.ops,
            vec![FileOp::Update {
                path: "a".into(),
                line: 2,
                move_to: Some("b".into()),
                chunks: vec![]
            }]
        );
    }

    #[test]
    fn heredoc_starts() {
        assert_eq!(heredoc_start("<<EOF").as_deref(), Some("EOF"));
        assert_eq!(
            heredoc_start("apply_patch <<'PATCH'").as_deref(),
            Some("PATCH")
        );
        assert_eq!(heredoc_start("cat <<EOF"), None);
        assert_eq!(heredoc_start("<<"), None);
    }
}
