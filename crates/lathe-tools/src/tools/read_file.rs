//! `read_file`: numbered lines of a text file, by range, in bounded memory.

mod images;
mod scan;

pub use images::{DEFAULT_IMAGE_MAX_PX, MAX_PIXELS, Vision, set_vision, vision};

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::session::Session;
use crate::tool::{Effect, LineRange, Tool, ToolContext, ToolKind, ToolOutput};
use crate::tools::suggest;
use crate::tools::text::{self, binary_kind, group, human_size, shell_quote};
use crate::workspace::{Access, ResolvedPath};

/// Lines shown when the call gives no `limit`.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Lines longer than this many characters are cut.
pub const MAX_LINE_CHARS: usize = 2000;
/// The text kept for one result, at most: past it the range ends early (the note gives the
/// offset to go on from). 2,000 lines of 2,000 characters fit.
const MAX_KEPT_BYTES: usize = 4 * 1024 * 1024;
/// How much of the start of a file decides whether it is binary.
const SNIFF_BYTES: usize = 8192;

/// Read a text file. Shows its lines numbered like `cat -n` (number, tab, text).
///
/// Shows lines 1-2000 by default; for more, call again with `offset` = the first line to show.
/// Lines longer than 2000 characters are cut. When only part of the file is shown, a last note
/// says `showing lines A-B of N` and which offset reads on. For a directory use list_files.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileInput {
    /// The file, relative to the workspace root (an absolute path inside it also works).
    pub path: String,
    /// The first line to show, counting from 1. Default: 1.
    pub offset: Option<i64>,
    /// The most lines to show. Default: 2000.
    pub limit: Option<i64>,
}

/// The `read_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadFileTool;

impl Tool for ReadFileTool {
    const NAME: &'static str = "read_file";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Read a text file, lines numbered, 2000 from `offset` (first line, from 1); a note says how to read on. Directories: list_files."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("path", ""), ("offset", ""), ("limit", "")]);
    const ALIASES: &'static [&'static str] = &[
        "cat",
        "read",
        "view",
        "open_file",
        "view_file",
        "read_files",
        "file_read",
    ];
    type Input = ReadFileInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Read {
            path: input.path.clone(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        match input.offset {
            Some(offset) if offset > 1 => {
                text::title(Self::NAME, &format!("{} (from line {offset})", input.path))
            }
            _ => text::title(Self::NAME, &input.path),
        }
    }

    async fn run(&self, input: ReadFileInput, ctx: ToolContext) -> ToolOutput {
        let session = Arc::clone(&ctx.session);
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || read(&session, &input, &cancel))
            .await
            .unwrap_or_else(|err| {
                ToolOutput::error(format!("read_file stopped unexpectedly: {err}"))
            })
    }
}

fn read(session: &Session, input: &ReadFileInput, cancel: &CancellationToken) -> ToolOutput {
    let (offset, limit) = match line_range(input.offset, input.limit) {
        Ok(range) => range,
        Err(output) => return output,
    };
    let workspace = session.workspace();
    let resolved = match workspace.resolve(&input.path, Access::Read) {
        Ok(resolved) => resolved,
        Err(err) => return ToolOutput::error(err.to_string()),
    };
    let shown = resolved.shown().to_owned();
    // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore the flag.
    let mut file = match workspace.open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
        Ok(file) => file,
        Err(err) => return open_error(session, &resolved, &err),
    };
    let meta = match file.metadata() {
        Ok(meta) => meta,
        Err(err) => return ToolOutput::error(format!("cannot read {shown}: {err}")),
    };
    if meta.is_dir() {
        return ToolOutput::error(format!(
            "{shown} is a directory, not a file; use list_files with path=\"{shown}\" to see what it holds"
        ))
        .with_path(shown);
    }
    if !meta.is_file() {
        return ToolOutput::error(format!(
            "{shown} is not a regular file (a device, FIFO or socket); read_file reads regular files only"
        ))
        .with_path(shown);
    }
    let prefix = match read_prefix(&mut file, SNIFF_BYTES) {
        Ok(prefix) => prefix,
        Err(err) => return ToolOutput::error(format!("cannot read {shown}: {err}")),
    };
    if let Some(format) = images::format_of(&prefix) {
        return images::read(session, file, &shown, meta.len(), format, vision(session));
    }
    #[cfg(feature = "documents")]
    if let Some(pointer) = crate::tools::read_document::pointer(&shown, &prefix, meta.len()) {
        return pointer;
    }
    if let Some(kind) = binary_kind(&prefix) {
        return ToolOutput::ok(format!(
            "{shown} is a binary file ({kind}, {}); read_file shows text only. \
             Use the shell (e.g. `file` or `xxd | head`) to inspect it.",
            human_size(meta.len())
        ))
        .with_path(shown)
        .with_meta("binary", true)
        .with_meta("bytes", meta.len());
    }
    let request = scan::Request {
        offset,
        limit,
        max_line_chars: MAX_LINE_CHARS,
        max_kept_bytes: MAX_KEPT_BYTES,
    };
    let scan = match scan::scan(&mut file, &prefix, meta.len(), request, cancel) {
        Ok(scan) => scan,
        Err(err) if err.kind() == io::ErrorKind::Interrupted => {
            return ToolOutput::error(format!("reading {shown} was cancelled"));
        }
        Err(err) => return ToolOutput::error(format!("cannot read {shown}: {err}")),
    };
    match scan.stamp {
        Some(stamp) => session.record_stamp(resolved.abs(), stamp),
        // It changed while being read: whatever was remembered no longer describes it.
        None => session.forget_file(resolved.abs()),
    }
    render(&shown, offset, &scan, FILE_PAGER)
}

/// The image at `path` (in the workspace, with `read_file`'s containment), as a model that
/// can see is sent it: with `read_file`'s limits and downscaling, and the sentence that
/// describes it (`shot.png: PNG image, 1920x1080 pixels, ...; sent to the model downscaled to
/// 1568x882 ...`). `Err` says what is wrong (missing, not an image, damaged, too large) and
/// what to do. For `lathe chat`'s `@shot.png`.
pub fn image_for_model(
    session: &Session,
    path: &str,
) -> Result<(crate::tool::ToolImage, String), String> {
    let workspace = session.workspace();
    let resolved = workspace
        .resolve(path, Access::Read)
        .map_err(|err| err.to_string())?;
    let shown = resolved.shown().to_owned();
    let mut file = workspace
        .open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)
        .map_err(|err| open_error(session, &resolved, &err).text)?;
    let meta = file
        .metadata()
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if !meta.is_file() {
        return Err(format!("{shown} is not a regular file"));
    }
    let prefix =
        read_prefix(&mut file, SNIFF_BYTES).map_err(|err| format!("cannot read {shown}: {err}"))?;
    let Some(format) = images::format_of(&prefix) else {
        return Err(format!(
            "{shown} is not a PNG, JPEG, GIF or WebP image; only those can be attached"
        ));
    };
    let mut out = images::read(session, file, &shown, meta.len(), format, Vision::Sees);
    match out.images.pop() {
        Some(image) if !out.is_error => Ok((image, out.text)),
        _ => Err(out.text),
    }
}

/// The first line and the most lines to show, from a call's `offset` and `limit` (1 and
/// [`DEFAULT_LIMIT`] when absent; an offset of 0 is 1), or the result that says which one is
/// wrong.
fn line_range(offset: Option<i64>, limit: Option<i64>) -> Result<(u64, u64), ToolOutput> {
    let offset = match offset {
        None | Some(0) => 1,
        Some(n) if n < 0 => {
            return Err(ToolOutput::error(format!(
                "offset must be a line number of 1 or more (the first line is 1), got {n}"
            )));
        }
        Some(n) => n as u64,
    };
    let limit = match limit {
        None => DEFAULT_LIMIT,
        Some(n) if n < 1 => {
            return Err(ToolOutput::error(format!(
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
) -> ToolOutput {
    let (offset, limit) = match line_range(offset, limit) {
        Ok(range) => range,
        Err(output) => return output,
    };
    let request = scan::Request {
        offset,
        limit,
        max_line_chars: MAX_LINE_CHARS,
        max_kept_bytes: MAX_KEPT_BYTES,
    };
    let bytes = text.as_bytes();
    let scan = match scan::scan(
        &mut &bytes[..],
        &[],
        bytes.len() as u64,
        request,
        &CancellationToken::new(),
    ) {
        Ok(scan) => scan,
        Err(err) => return ToolOutput::error(format!("cannot read {shown}: {err}")),
    };
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

/// `read_file`'s own pager.
const FILE_PAGER: Pager<'static> = Pager {
    tool: ReadFileTool::NAME,
    what: "the file",
};

fn open_error(session: &Session, resolved: &ResolvedPath, err: &io::Error) -> ToolOutput {
    let shown = resolved.shown();
    let missing =
        err.kind() == io::ErrorKind::NotFound || err.raw_os_error() == Some(libc::ENOTDIR);
    if missing {
        let similar = suggest::similar_paths(session.workspace(), resolved.abs(), 3);
        return ToolOutput::error(format!(
            "{shown} does not exist.{} Use list_files to see which files there are.",
            suggest::did_you_mean(&similar)
        ))
        .with_path(shown)
        .with_meta("suggestions", similar);
    }
    ToolOutput::error(format!("cannot read {shown}: {err}")).with_path(shown)
}

/// Reads up to `max` bytes (fewer only at end of file).
fn read_prefix(file: &mut File, max: usize) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(max);
    file.by_ref().take(max as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}

fn render(shown: &str, offset: u64, scan: &scan::Scan, pager: Pager<'_>) -> ToolOutput {
    let total = scan.total_lines;
    if total == 0 {
        return ToolOutput::ok(format!("{shown} is empty ({}).", human_size(scan.bytes)))
            .with_path(shown)
            .with_meta("total_lines", 0)
            .with_meta("bytes", scan.bytes);
    }
    let (Some(first), Some(last)) = (scan.lines.first(), scan.lines.last()) else {
        return ToolOutput::error(format!(
            "offset {offset} is past the end of {shown}, which has {total} line{}; \
             use an offset from 1 to {total}",
            if total == 1 { "" } else { "s" }
        ))
        .with_path(shown)
        .with_meta("total_lines", total);
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
    ToolOutput::ok(text)
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
        )
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let out = render(
            "a.txt",
            9,
            &scan_of(&[(9, "nine"), (10, "ten")], 12),
            FILE_PAGER,
        );
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "     9\tnine\n    10\tten\n\n(showing lines 9-10 of 12; to read on, call read_file with offset=11)\n"
        );
        let whole = render("a.txt", 1, &scan_of(&[(1, "x")], 1), FILE_PAGER);
        assert_eq!(whole.text, "     1\tx\n");
        let end = render("a.txt", 2, &scan_of(&[(2, "y")], 2), FILE_PAGER);
        assert!(
            end.text
                .contains("(showing lines 2-2 of 2; this is the end of the file)"),
            "{}",
            end.text
        );
    }

    #[test]
    fn past_the_end_and_empty() {
        let out = render("a.txt", 50, &scan_of(&[], 12), FILE_PAGER);
        assert!(out.is_error);
        assert!(
            out.text
                .contains("offset 50 is past the end of a.txt, which has 12 lines"),
            "{}",
            out.text
        );
        let empty = render("e.txt", 1, &scan_of(&[], 0), FILE_PAGER);
        assert!(!empty.is_error);
        assert!(empty.text.starts_with("e.txt is empty"), "{}", empty.text);
    }
}
