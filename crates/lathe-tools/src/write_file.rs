//! `write_file`: create a file or replace all of its content, atomically.
//!
//! The tool plans ([`Tool::plan`]): what is there is read (streamed past 32 MiB), checked for
//! staleness, counted and diffed before the call is approved; [`Plan::apply`] writes the content
//! after checking the file is still what was read.

use std::fs::File;
use std::io::{self, Read};

use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;

use lathe_runtime::args;
use lathe_runtime::meta::MAX_CHANGE_DIFF_LINES;
use lathe_runtime::session::{FileStamp, Session, StampBuilder};
use lathe_runtime::text::{self, UnifiedDiff, binary_kind, count_newlines, line_count};
use lathe_runtime::tool::{
    Effect, FileChange, Plan, PlannedWrite, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
    ToolResult, run_planned,
};
use lathe_runtime::workspace::Access;

/// An existing file up to this size is loaded to count the changed lines exactly and diff them;
/// a larger one is streamed (its lines all count as removed). New content larger than this is
/// counted but not diffed.
pub const MAX_DIFF_BYTES: u64 = 32 * 1024 * 1024;
/// How much of the start of some content decides whether it is binary (no diff is shown).
const SNIFF_BYTES: usize = 8192;

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
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Create a file or replace all its content. For part of a file use edit_file. Refused if the file changed since you read it: read it again."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("path", ""), ("content", "")]);
    const ALIASES: &'static [&'static str] = &[
        "write",
        "create_file",
        "save_file",
        "file_write",
        "write_to_file",
    ];
    type Input = WriteFileInput;
    // The double-escape repair is made here, where the file's type is known and the result can
    // say that it was made.
    const RAW_STRINGS: &'static [&'static str] = &["content"];

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Write {
            path: input.path.clone(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        text::title(Self::NAME, &input.path)
    }

    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        Some(plan_write(session, input))
    }

    async fn run(&self, input: WriteFileInput, ctx: ToolContext) -> ToolResult {
        run_planned(self, input, ctx).await
    }
}

/// What was on disk before the write.
enum Previous {
    /// Nothing: the file is new.
    None,
    /// The old text (lossy), for exact line counts and the diff; `binary` when it is not text
    /// (no diff is shown for it).
    Text {
        /// The text.
        text: String,
        /// It looks binary.
        binary: bool,
    },
    /// Too large to load: only its line count.
    Lines(u64),
}

/// Everything `write_file` does up to the write: resolve, read what is there (streamed when it
/// is large), check for staleness, count and diff.
fn plan_write(session: &Session, input: &WriteFileInput) -> Result<Plan, ToolError> {
    if let Some(message) = text::names_a_directory(&input.path) {
        return Err(ToolError::new(message));
    }
    let workspace = session.workspace();
    let resolved = workspace
        .resolve(&input.path, Access::Write)
        .map_err(|err| ToolError::new(err.to_string()))?;
    let shown = resolved.shown().to_owned();
    let refuse = |message: String| ToolError::new(message).with_path(shown.clone());
    let (previous, before) = match workspace.open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)
    {
        Ok(mut file) => {
            let (previous, stamp) =
                read_previous(&mut file, session, &resolved, &shown).map_err(refuse)?;
            (previous, Some(stamp))
        }
        Err(err) if err.kind() == io::ErrorKind::NotFound => (Previous::None, None),
        Err(err) if err.raw_os_error() == Some(libc::ENOTDIR) => {
            return Err(refuse(format!(
                "cannot create {shown}: a part of its directory path is a file, not a directory"
            )));
        }
        Err(err) if err.raw_os_error() == Some(libc::ENAMETOOLONG) => {
            return Err(refuse(format!(
                "cannot write {shown}: a file or directory name may be at most 255 bytes, and a \
                 path at most 4096; use a shorter name"
            )));
        }
        Err(err) => {
            return Err(refuse(format!(
                "cannot write {shown}: reading what it holds now failed: {err}"
            )));
        }
    };
    let repaired = args::undo_double_escape(&input.content, args::FileKind::of_path(&shown));
    let content = repaired.as_ref().unwrap_or(&input.content);
    let bytes = content.as_bytes();
    // The diff is of text people can read: not of binary data, not past the size a diff is
    // worked out for (the counts are exact all the same).
    let diffable = bytes.len() as u64 <= MAX_DIFF_BYTES
        && binary_kind(&bytes[..bytes.len().min(SNIFF_BYTES)]).is_none();
    let (verb, added, removed, diff, note) = match &previous {
        Previous::None if diffable => {
            let diff = UnifiedDiff::new("", content, &shown, 3);
            (
                "Created",
                line_count(content),
                0,
                diff.cut(MAX_CHANGE_DIFF_LINES),
                "",
            )
        }
        Previous::None => ("Created", line_count(content), 0, String::new(), ""),
        Previous::Text { text: old, binary } => {
            let note = if old.as_bytes() == bytes {
                ": the content was already the same"
            } else {
                ""
            };
            if diffable && !binary {
                let diff = UnifiedDiff::new(old, content, &shown, 3);
                let cut = diff.cut(MAX_CHANGE_DIFF_LINES);
                ("Overwrote", diff.added, diff.removed, cut, note)
            } else {
                let (added, removed) = text::diff_counts(old, content);
                ("Overwrote", added, removed, String::new(), note)
            }
        }
        Previous::Lines(lines) => (
            "Overwrote",
            line_count(content),
            *lines as usize,
            String::new(),
            "",
        ),
    };
    let mut message = format!("{verb} {shown} (+{added} -{removed}{note}).");
    if repaired.is_some() {
        message.push('\n');
        message.push_str(args::REPAIR_NOTE);
    }
    let output = ToolOutput::ok(message).with_meta("bytes", bytes.len());
    let change = FileChange {
        created: matches!(previous, Previous::None),
        path: shown,
        deleted: false,
        added: added as u64,
        removed: removed as u64,
        diff,
    };
    Ok(Plan {
        writes: vec![PlannedWrite {
            target: resolved,
            before,
            content: bytes.to_vec(),
            new_mode: 0o666,
            change,
            remove: false,
        }],
        output,
        from_pending: None,
    })
}

/// Reads the file about to be overwritten and applies the staleness check; returns what it
/// holds and its stamp (which the write checks again just before replacing it).
fn read_previous(
    file: &mut File,
    session: &Session,
    resolved: &lathe_runtime::workspace::ResolvedPath,
    shown: &str,
) -> Result<(Previous, FileStamp), String> {
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
        let previous = Previous::Text {
            binary: binary_kind(&bytes[..bytes.len().min(SNIFF_BYTES)]).is_some(),
            text: String::from_utf8_lossy(&bytes).into_owned(),
        };
        return Ok((previous, FileStamp::of(&bytes)));
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
    let Some(current) = stamp.finish() else {
        return Err(format!(
            "{shown} is changing on disk right now; read it again with read_file, then retry"
        ));
    };
    session.check_unchanged_stamp(resolved.abs(), current, shown)?;
    Ok((Previous::Lines(lines), current))
}
