//! `read_file`: numbered lines of a text file, by range, in bounded memory.

mod images;

pub use images::MAX_PIXELS;

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::suggest;
use lathe_runtime::paging::{self, Pager, line_range, scan};
use lathe_runtime::session::Session;
use lathe_runtime::text::{self, binary_kind, human_size};
use lathe_runtime::tool::{
    Effect, ResultExt, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult,
};
use lathe_runtime::vision::{Vision, vision};
use lathe_runtime::workspace::{Access, ResolvedPath};

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

    async fn run(&self, input: ReadFileInput, ctx: ToolContext) -> ToolResult {
        let session = Arc::clone(&ctx.session);
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || read(&session, &input, &cancel))
            .await
            .or_model(|err| format!("read_file stopped unexpectedly: {err}"))?
    }
}

fn read(session: &Session, input: &ReadFileInput, cancel: &CancellationToken) -> ToolResult {
    let (offset, limit) = line_range(input.offset, input.limit)?;
    let workspace = session.workspace();
    let resolved = workspace
        .resolve(&input.path, Access::Read)
        .or_model(|err| err.to_string())?;
    let shown = resolved.shown().to_owned();
    // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore the flag.
    let mut file = workspace
        .open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)
        .map_err(|err| open_error(session, &resolved, &err))?;
    let meta = file
        .metadata()
        .or_model(|err| format!("cannot read {shown}: {err}"))?;
    if meta.is_dir() {
        return Err(ToolError::new(format!(
            "{shown} is a directory, not a file; use list_files with path=\"{shown}\" to see what it holds"
        ))
        .with_path(shown));
    }
    if !meta.is_file() {
        return Err(ToolError::new(format!(
            "{shown} is not a regular file (a device, FIFO or socket); read_file reads regular files only"
        ))
        .with_path(shown));
    }
    let prefix = read_prefix(&mut file, SNIFF_BYTES)
        .or_model(|err| format!("cannot read {shown}: {err}"))?;
    if let Some(format) = images::format_of(&prefix) {
        return images::read(session, file, &shown, meta.len(), format, vision(session));
    }
    #[cfg(feature = "documents")]
    if let Some(pointer) = crate::read_document::pointer(&shown, &prefix, meta.len()) {
        return Ok(pointer);
    }
    if let Some(kind) = binary_kind(&prefix) {
        return Ok(ToolOutput::ok(format!(
            "{shown} is a binary file ({kind}, {}); read_file shows text only. \
             Use the shell (e.g. `file` or `xxd | head`) to inspect it.",
            human_size(meta.len())
        ))
        .with_path(shown)
        .with_meta("binary", true)
        .with_meta("bytes", meta.len()));
    }
    let request = scan::Request {
        offset,
        limit,
        max_line_chars: paging::MAX_LINE_CHARS,
        max_kept_bytes: paging::MAX_KEPT_BYTES,
    };
    let scan = match scan::scan(&mut file, &prefix, meta.len(), request, cancel) {
        Ok(scan) => scan,
        Err(err) if err.kind() == io::ErrorKind::Interrupted => {
            return Err(ToolError::new(format!("reading {shown} was cancelled")));
        }
        Err(err) => return Err(ToolError::new(format!("cannot read {shown}: {err}"))),
    };
    match scan.stamp {
        Some(stamp) => session.record_stamp(resolved.abs(), stamp),
        // It changed while being read: whatever was remembered no longer describes it.
        None => session.forget_file(resolved.abs()),
    }
    paging::render(&shown, offset, &scan, FILE_PAGER)
}

/// The image at `path` (in the workspace, with `read_file`'s containment), as a model that
/// can see is sent it: with `read_file`'s limits and downscaling, and the sentence that
/// describes it (`shot.png: PNG image, 1920x1080 pixels, ...; sent to the model downscaled to
/// 1568x882 ...`). `Err` says what is wrong (missing, not an image, damaged, too large) and
/// what to do. For `lathe chat`'s `@shot.png`.
pub fn image_for_model(
    session: &Session,
    path: &str,
) -> Result<(lathe_runtime::tool::ToolImage, String), String> {
    let workspace = session.workspace();
    let resolved = workspace
        .resolve(path, Access::Read)
        .map_err(|err| err.to_string())?;
    let shown = resolved.shown().to_owned();
    let mut file = workspace
        .open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)
        .map_err(|err| open_error(session, &resolved, &err).text().to_owned())?;
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
    let mut out = images::read(session, file, &shown, meta.len(), format, Vision::Sees)
        .map_err(|err| err.text().to_owned())?;
    match out.images.pop() {
        Some(image) => Ok((image, out.text)),
        None => Err(out.text),
    }
}

/// `read_file`'s own pager.
const FILE_PAGER: Pager<'static> = Pager {
    tool: ReadFileTool::NAME,
    what: "the file",
};

fn open_error(session: &Session, resolved: &ResolvedPath, err: &io::Error) -> ToolError {
    let shown = resolved.shown();
    let missing =
        err.kind() == io::ErrorKind::NotFound || err.raw_os_error() == Some(libc::ENOTDIR);
    if missing {
        let similar = suggest::similar_paths(session.workspace(), resolved.abs(), 3);
        return ToolError::new(format!(
            "{shown} does not exist.{} Use list_files to see which files there are.",
            suggest::did_you_mean(&similar)
        ))
        .with_path(shown)
        .with_meta("suggestions", similar);
    }
    ToolError::new(format!("cannot read {shown}: {err}")).with_path(shown)
}

/// Reads up to `max` bytes (fewer only at end of file).
fn read_prefix(file: &mut File, max: usize) -> io::Result<Vec<u8>> {
    let mut prefix = Vec::with_capacity(max);
    file.by_ref().take(max as u64).read_to_end(&mut prefix)?;
    Ok(prefix)
}
