//! Paging text by lines, with `read_file`'s rules: the same `offset` and `limit` (defaults,
//! checks and errors), numbered lines cut at [`MAX_LINE_CHARS`], and the closing note that says
//! how to read on. `read_file` pages files with it; a sub-agent's transcript and a fetched page
//! are paged the same way ([`page_text`]).

pub mod scan;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::meta::LineRange;
use crate::text::{group, human_size, shell_quote};
use crate::tool::{ResultExt, ToolError, ToolOutput, ToolResult};

/// Lines shown when the call gives no `limit`.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// The text kept for one result, at most: past it the range ends early (the note gives the
/// offset to go on from). 2,000 lines of 2,000 characters fit.
pub const MAX_KEPT_BYTES: usize = 4 * 1024 * 1024;
/// The first line and the most lines to show, from a call's `offset` and `limit` (1 and
/// [`DEFAULT_LIMIT`] when absent; an offset of 0 is 1), or the result that says which one is
/// wrong.
pub fn line_range(offset: Option<i64>, limit: Option<i64>) -> Result<(u64, u64), ToolError> {
    let offset = match offset {
        None | Some(0) => 1,
        Some(n) if n < 0 => {
            return Err(ToolError::new(format!(
                "offset must be a line number of 1 or more (the first line is 1), got {n}"
            )));
        }
        Some(n) => n as u64,
    };
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(n) if n < 1 => {
            return Err(ToolError::new(format!(
                "limit must be 1 or more (the most lines to show; default {DEFAULT_LIMIT}), got {n}"
            )));
        }
        Some(n) => n as u64,
    };
    Ok((offset, limit))
}

/// Pages `text` (something the model reads by lines that is not a file: a sub-agent's
/// transcript) with `read_file`'s rules: the same `offset` and `limit` (defaults, checks and
/// errors), the same numbered lines cut at [`MAX_LINE_CHARS`], and the same closing note,
/// naming `tool` as the one to call again and `label` as what is read (`shown` names it in
/// errors).
pub fn page_text(
    text: &str,
    shown: &str,
    pager: Pager<'_>,
    offset: Option<i64>,
    limit: Option<i64>,
) -> ToolResult {
    let (offset, limit) = line_range(offset, limit)?;
    let request = scan::Request {
        offset,
        limit,
        max_line_chars: MAX_LINE_CHARS,
        max_kept_bytes: MAX_KEPT_BYTES,
    };
    let bytes = text.as_bytes();
    let scan = scan::scan(
        &mut &bytes[..],
        &[],
        bytes.len() as u64,
        request,
        &CancellationToken::new(),
    )
    .or_model(|err| format!("cannot read {shown}: {err}"))?;
    render(shown, offset, &scan, pager)
}

/// Who pages, in the note that says how to read on: the tool to call again and what it reads.
#[derive(Debug, Clone, Copy)]
pub struct Pager<'a> {
    /// The tool to call again (`read_file`).
    pub tool: &'a str,
    /// What is read, after "the end of" (`the file`).
    pub what: &'a str,
}

/// The result of a scan: numbered lines and the notes that say how to read on.
pub fn render(shown: &str, offset: u64, scan: &scan::Scan, pager: Pager<'_>) -> ToolResult {
    let total = scan.total_lines;
    if total == 0 {
        return Ok(
            ToolOutput::ok(format!("{shown} is empty ({}).", human_size(scan.bytes)))
                .with_path(shown)
                .with_meta("total_lines", 0)
                .with_meta("bytes", scan.bytes),
        );
    }
    let (Some(first), Some(last)) = (scan.lines.first(), scan.lines.last()) else {
        return Err(ToolError::new(format!(
            "offset {offset} is past the end of {shown}, which has {total} line{}; \
             use an offset from 1 to {total}",
            if total == 1 { "" } else { "s" }
        ))
        .with_path(shown)
        .with_meta("total_lines", total));
    };
    let mut text = String::with_capacity(scan.lines.iter().map(|l| l.text.len() + 10).sum());
    let mut cut_lines = 0u64;
    let mut first_cut = None;
    for line in &scan.lines {
        text.push_str(&format!("{:>6}\t{}", line.number, line.text));
        if let Some(chars) = line.cut_from {
            cut_lines += 1;
            first_cut.get_or_insert(line.number);
            text.push_str(&format!(
                " [... line cut: showing {MAX_LINE_CHARS} of {} characters]",
                group(chars)
            ));
        }
        text.push('\n');
    }
    let (a, b) = (first.number, last.number);
    let mut notes = Vec::new();
    if b < total {
        notes.push(format!(
            "showing lines {a}-{b} of {total}; to read on, call {} with offset={}",
            pager.tool,
            b + 1
        ));
    } else if a > 1 {
        notes.push(format!(
            "showing lines {a}-{b} of {total}; this is the end of {}",
            pager.what
        ));
    }
    if b == total && scan.no_final_newline {
        notes.push("the file does not end with a newline".to_owned());
    }
    if let Some(n) = first_cut {
        notes.push(format!(
            "{cut_lines} line{} longer than {MAX_LINE_CHARS} characters {} cut; to see more of \
             line {n}, run `sed -n '{n}p' {} | cut -c{}-{}` with shell, or grep for text in it \
             (grep shows the characters around each match)",
            if cut_lines == 1 { "" } else { "s" },
            if cut_lines == 1 { "was" } else { "were" },
            shell_quote(shown),
            MAX_LINE_CHARS + 1,
            2 * MAX_LINE_CHARS
        ));
    }
    if scan.invalid_utf8 {
        notes.push(
            "the file is not valid UTF-8: bytes that are not UTF-8 are shown as \u{FFFD}"
                .to_owned(),
        );
    }
    if scan.crlf && scan.lf {
        notes.push(
            "the file mixes CRLF and LF line endings, shown without \\r (edit_file keeps each \
             line's ending)"
                .to_owned(),
        );
    } else if scan.crlf {
        notes.push(
            "the file has CRLF line endings, shown without \\r (edit_file keeps them)".to_owned(),
        );
    }
    if !notes.is_empty() {
        text.push('\n');
        for note in notes {
            text.push_str(&format!("({note})\n"));
        }
    }
    Ok(ToolOutput::ok(text)
        .with_path(shown)
        .with_lines(LineRange {
            first: a,
            last: b,
            total: Some(total),
        })
        .with_meta("offset", a)
        .with_meta("end", b)
        .with_meta("total_lines", total)
        .with_meta("bytes", scan.bytes)
        .with_meta("complete", a == 1 && b == total)
        .with_meta("cut_lines", cut_lines)
        .with_meta(
            "encoding",
            json!(if scan.invalid_utf8 { "lossy" } else { "utf-8" }),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGER: Pager<'static> = Pager {
        tool: "read_file",
        what: "the file",
    };

    /// [`render`]'s result as the model reads it, an error result included.
    fn rendered(shown: &str, offset: u64, scan: &scan::Scan, pager: Pager<'_>) -> ToolOutput {
        render(shown, offset, scan, pager).unwrap_or_else(ToolOutput::from)
    }

    fn scan_of(lines: &[(u64, &str)], total: u64) -> scan::Scan {
        scan::Scan {
            total_lines: total,
            bytes: 100,
            lines: lines
                .iter()
                .map(|&(number, text)| scan::Line {
                    number,
                    text: text.to_owned(),
                    cut_from: None,
                })
                .collect(),
            invalid_utf8: false,
            crlf: false,
            lf: true,
            no_final_newline: false,
            stamp: None,
        }
    }

    #[test]
    fn numbering_is_cat_n_style_and_notes_give_the_next_offset() {
        let out = rendered("a.txt", 9, &scan_of(&[(9, "nine"), (10, "ten")], 12), PAGER);
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "     9\tnine\n    10\tten\n\n(showing lines 9-10 of 12; to read on, call read_file with offset=11)\n"
        );
        let whole = rendered("a.txt", 1, &scan_of(&[(1, "x")], 1), PAGER);
        assert_eq!(whole.text, "     1\tx\n");
        let end = rendered("a.txt", 2, &scan_of(&[(2, "y")], 2), PAGER);
        assert!(
            end.text
                .contains("(showing lines 2-2 of 2; this is the end of the file)"),
            "{}",
            end.text
        );
    }

    #[test]
    fn past_the_end_and_empty() {
        let out = rendered("a.txt", 50, &scan_of(&[], 12), PAGER);
        assert!(out.is_error);
        assert!(
            out.text
                .contains("offset 50 is past the end of a.txt, which has 12 lines"),
            "{}",
            out.text
        );
        let empty = rendered("e.txt", 1, &scan_of(&[], 0), PAGER);
        assert!(!empty.is_error);
        assert!(empty.text.starts_with("e.txt is empty"), "{}", empty.text);
    }
}
