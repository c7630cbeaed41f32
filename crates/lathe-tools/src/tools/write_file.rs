//! `write_file`: create a file or replace all of its content, atomically.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::session::{Session, StampBuilder};
use crate::tool::{Effect, Tool, ToolContext, ToolKind, ToolOutput};
use crate::tools::text::{self, count_newlines, line_count};
use crate::workspace::Access;

/// An existing file up to this size is loaded to count the changed lines exactly; a larger one
/// is streamed (its lines all count as removed).
const MAX_DIFF_BYTES: u64 = 32 * 1024 * 1024;

/// Write a whole file: create it, or replace all of its content.
///
/// Missing parent directories are created. To change part of a file, use edit_file instead.
/// Overwriting a file that changed on disk since you last read or wrote it is refused: read it
/// again first.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileInput {
    /// The file, relative to the workspace root.
    pub path: String,
    /// The complete new content of the file.
    pub content: String,
}

/// The `write_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct WriteFileTool;

impl Tool for WriteFileTool {
    const NAME: &'static str = "write_file";
    const ALIASES: &'static [&'static str] = &[
        "write",
        "create_file",
        "save_file",
        "file_write",
        "write_to_file",
    ];
    type Input = WriteFileInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Write {
            path: input.path.clone(),
        }]
    }

    async fn run(&self, input: WriteFileInput, ctx: ToolContext) -> ToolOutput {
        let session = Arc::clone(&ctx.session);
        tokio::task::spawn_blocking(move || write(&session, &input))
            .await
            .unwrap_or_else(|err| {
                ToolOutput::error(format!("write_file stopped unexpectedly: {err}"))
            })
    }
}

/// What was on disk before the write.
enum Previous {
    /// Nothing: the file is new.
    None,
    /// The old text (lossy), for exact line counts.
    Text(String),
    /// Too large to load: only its line count.
    Lines(u64),
}

fn write(session: &Session, input: &WriteFileInput) -> ToolOutput {
    if let Some(message) = text::names_a_directory(&input.path) {
        return ToolOutput::error(message);
    }
    let workspace = session.workspace();
    let resolved = match workspace.resolve(&input.path, Access::Write) {
        Ok(resolved) => resolved,
        Err(err) => return ToolOutput::error(err.to_string()),
    };
    let shown = resolved.shown().to_owned();
    let previous = match workspace.open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
        Ok(mut file) => match read_previous(&mut file, session, &resolved, &shown) {
            Ok(previous) => previous,
            Err(message) => return ToolOutput::error(message).with_meta("path", shown),
        },
        Err(err) if err.kind() == io::ErrorKind::NotFound => Previous::None,
        Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => {
            return ToolOutput::error(format!(
                "cannot create {shown}: a part of its directory path is a file, not a directory"
            ))
            .with_meta("path", shown);
        }
        Err(err) if err.raw_os_error() == Some(libc::ENAMETOOLONG) => {
            return ToolOutput::error(format!(
                "cannot write {shown}: a file or directory name may be at most 255 bytes, and a \
                 path at most 4096; use a shorter name"
            ))
            .with_meta("path", shown);
        }
        Err(err) => {
            return ToolOutput::error(format!(
                "cannot write {shown}: reading what it holds now failed: {err}"
            ))
            .with_meta("path", shown);
        }
    };
    let bytes = input.content.as_bytes();
    if let Err(err) = workspace.write_atomic(&resolved, bytes, 0o666) {
        let reason = match err.raw_os_error() {
            Some(libc::ENOTDIR) => {
                "a part of its directory path is a file, not a directory".to_owned()
            }
            _ => err.to_string(),
        };
        return ToolOutput::error(format!("cannot write {shown}: {reason}"))
            .with_meta("path", shown);
    }
    session.record_file(resolved.abs(), bytes);
    let (verb, added, removed, note) = match &previous {
        Previous::None => ("Created", line_count(&input.content), 0, ""),
        Previous::Text(old) => {
            let (added, removed) = text::diff_counts(old, &input.content);
            let note = if old.as_bytes() == bytes {
                ": the content was already the same"
            } else {
                ""
            };
            ("Overwrote", added, removed, note)
        }
        Previous::Lines(lines) => ("Overwrote", line_count(&input.content), *lines as usize, ""),
    };
    ToolOutput::ok(format!("{verb} {shown} (+{added} -{removed}{note})."))
        .with_meta("path", shown)
        .with_meta("created", matches!(previous, Previous::None))
        .with_meta("added", added)
        .with_meta("removed", removed)
        .with_meta("bytes", bytes.len())
}

/// Reads the file about to be overwritten and applies the staleness check.
fn read_previous(
    file: &mut File,
    session: &Session,
    resolved: &crate::workspace::ResolvedPath,
    shown: &str,
) -> Result<Previous, String> {
    let meta = file
        .metadata()
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory; give the path of a file inside it (use list_files to see what it holds)"
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "{shown} is not a regular file (a device, FIFO or socket); it cannot be written"
        ));
    }
    if meta.len() <= MAX_DIFF_BYTES {
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.read_to_end(&mut bytes)
            .map_err(|err| format!("cannot read {shown}: {err}"))?;
        session.check_unchanged(resolved.abs(), &bytes, shown)?;
        return Ok(Previous::Text(String::from_utf8_lossy(&bytes).into_owned()));
    }
    let mut stamp = StampBuilder::new(meta.len());
    let mut newlines = 0u64;
    let mut last = None;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(format!("cannot read {shown}: {err}")),
        };
        stamp.update(&buf[..n]);
        newlines += count_newlines(&buf[..n]);
        last = Some(buf[n - 1]);
    }
    let lines = newlines + u64::from(last.is_some_and(|b| b != b'\n'));
    match stamp.finish() {
        Some(current) => session.check_unchanged_stamp(resolved.abs(), current, shown)?,
        None => {
            return Err(format!(
                "{shown} is changing on disk right now; read it again with read_file, then retry"
            ));
        }
    }
    Ok(Previous::Lines(lines))
}
