//! `edit_file`: replace text in one file, exactly or by a named tolerant strategy, all edits or
//! none, keeping line endings, BOM, final newline and permissions.
//!
//! The tool plans ([`Tool::plan`]): matching and encoding happen before the call is approved,
//! and [`Plan::apply`] writes the bytes that were matched, after checking that the file is still
//! what was read. The approval prompt, the result and the recorded change therefore show the
//! diff of what is written, even after a tolerant match.

mod apply;
pub(crate) mod closest;
pub(crate) mod document;
mod escapes;
mod indent;
mod matching;

use std::io::{self, Read};

use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::suggest;
use lathe_runtime::args;
use lathe_runtime::meta::MAX_CHANGE_DIFF_LINES;
use lathe_runtime::session::{FileStamp, Session};
use lathe_runtime::text::{self, binary_kind, human_size};
use lathe_runtime::tool::{
    Effect, FileChange, Plan, PlannedWrite, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
    ToolResult, run_planned,
};
use lathe_runtime::workspace::Access;

pub use apply::{EditError, Outcome, apply_edits};
pub use matching::Strategy;

/// Files larger than this are not loaded for editing.
pub const MAX_EDIT_BYTES: u64 = 32 * 1024 * 1024;
/// The diff in the model's result is cut after this many lines (the recorded change keeps
/// [`MAX_CHANGE_DIFF_LINES`]).
const MAX_DIFF_LINES: usize = 80;

/// Replace text in a file: `old_string` becomes `new_string`.
///
/// Copy old_string exactly from read_file (without the line numbers) and include enough lines
/// that it matches one place; set replace_all=true to change every match. For several changes
/// to one file, give `edits`: a list of {old_string, new_string, replace_all}, applied in order,
/// all or none. Without an exact match, differences in indentation, whitespace or escaping are
/// tolerated and the result names the strategy used. Line endings, BOM and permissions are
/// kept. An empty old_string creates a file that does not exist yet.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileInput {
    /// The file, relative to the workspace root.
    pub path: String,
    /// The exact text to replace.
    pub old_string: Option<String>,
    /// The text to put in its place ("" deletes old_string).
    pub new_string: Option<String>,
    /// Replace every match instead of requiring exactly one. Default: false.
    pub replace_all: Option<bool>,
    /// Instead of old_string/new_string: several edits applied in order, all or none.
    pub edits: Option<Vec<EditInput>>,
}

/// One edit of an `edits` list.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
pub struct EditInput {
    /// The exact text to replace.
    pub old_string: String,
    /// The text to put in its place ("" deletes old_string).
    pub new_string: String,
    /// Replace every match instead of requiring exactly one. Default: false.
    pub replace_all: Option<bool>,
}

/// The `edit_file` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct EditFileTool;

impl Tool for EditFileTool {
    const NAME: &'static str = "edit_file";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Replace `old_string` with `new_string` in a file. Copy old_string exactly from read_file (no line numbers), with enough lines to match once, or set replace_all. Empty old_string creates a new file."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = Some(&[
        ("path", ""),
        ("old_string", ""),
        ("new_string", ""),
        ("replace_all", ""),
    ]);
    const ALIASES: &'static [&'static str] = &[
        "edit",
        "str_replace",
        "str_replace_editor",
        "replace",
        "replace_in_file",
        "multi_edit",
        "file_edit",
        "edit_files",
    ];
    // Matched literally first, then unescaped (see `matching::find`): the repair the argument
    // layer would make is one of the strategies here, tried only when the text as given fails,
    // and new_string is repaired here (knowing the file's type) with a note in the result.
    const RAW_STRINGS: &'static [&'static str] = &["old_string", "new_string"];
    type Input = EditFileInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Edit {
            path: input.path.clone(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        text::title(Self::NAME, &input.path)
    }

    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        Some(plan_edit(session, input))
    }

    async fn run(&self, input: EditFileInput, ctx: ToolContext) -> ToolResult {
        run_planned(self, input, ctx).await
    }
}

/// The edits a call asks for, or the model-facing reason the call is malformed.
fn collect_edits(input: &EditFileInput) -> Result<Vec<EditInput>, String> {
    match (&input.old_string, &input.new_string, &input.edits) {
        (Some(_), _, Some(edits)) | (_, Some(_), Some(edits)) if !edits.is_empty() => Err(
            "give either old_string/new_string or edits, not both; put every change in edits"
                .to_owned(),
        ),
        (Some(old_string), Some(new_string), _) => Ok(vec![EditInput {
            old_string: old_string.clone(),
            new_string: new_string.clone(),
            replace_all: input.replace_all,
        }]),
        (Some(_), None, _) => Err(
            "new_string is missing: give the text that replaces old_string (\"\" to delete it)"
                .to_owned(),
        ),
        (None, Some(_), _) => Err(
            "old_string is missing: give the exact text to replace (copy it from read_file)"
                .to_owned(),
        ),
        (None, None, Some(edits)) if !edits.is_empty() => Ok(edits.clone()),
        (None, None, _) => Err(
            "nothing to edit: give old_string and new_string, or a non-empty edits list".to_owned(),
        ),
    }
}

/// Everything `edit_file` does up to the write: resolve, read, check for staleness, match,
/// encode, diff. The plan writes the file only when the edits change its bytes.
fn plan_edit(session: &Session, input: &EditFileInput) -> Result<Plan, ToolError> {
    let edits = collect_edits(input).map_err(ToolError::new)?;
    if let Some(message) = text::names_a_directory(&input.path) {
        return Err(ToolError::new(message));
    }
    let workspace = session.workspace();
    let resolved = workspace
        .resolve(&input.path, Access::Write)
        .map_err(|err| ToolError::new(err.to_string()))?;
    let shown = resolved.shown().to_owned();
    let refuse = |message: String| ToolError::new(message).with_path(shown.clone());
    let existing = match workspace.open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
        Ok(mut file) => Some(read_editable(&mut file, &shown).map_err(refuse)?),
        Err(err)
            if err.kind() == io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            if !edits[0].old_string.is_empty() {
                let similar = suggest::similar_paths(workspace, resolved.abs(), 3);
                return Err(refuse(format!(
                    "{shown} does not exist.{} To create a file, use write_file (or edit_file with an empty old_string).",
                    suggest::did_you_mean(&similar)
                ))
                .with_meta("suggestions", similar));
            }
            None
        }
        Err(err) => return Err(refuse(format!("cannot read {shown}: {err}"))),
    };
    let (document, before) = match &existing {
        Some(bytes) => {
            session
                .check_unchanged(resolved.abs(), bytes, &shown)
                .map_err(refuse)?;
            let doc = document::Document::decode(bytes)
                .map_err(|reason| refuse(format!("cannot edit {shown}: {reason}")))?;
            let text = doc.text.clone();
            (doc, Some(text))
        }
        None => (
            document::Document {
                bom: false,
                raw_bytes: false,
                text: String::new(),
            },
            None,
        ),
    };
    let outcome = apply_edits(before.as_deref(), &edits, args::FileKind::of_path(&shown))
        .map_err(|err| refuse(err.message(&shown, edits.len())))?;
    let bytes = document.encode(&outcome.text);
    if existing.as_deref() == Some(bytes.as_slice()) {
        // Nothing to write, so nothing changes: the result names the file and records no
        // change (a change of +0 -0 would claim a write that did not happen).
        return Ok(Plan::nothing(
            ToolOutput::ok(format!(
                "{shown} is unchanged: the edits cancel each other out, so nothing was written."
            ))
            .with_path(shown),
        ));
    }
    // Diffed as the matcher sees the text (`\r\n` as `\n`, no BOM), so the diff reads the same
    // whatever the file's line endings; the bytes written keep them.
    let old_view = document::View::of(before.as_deref().unwrap_or("")).text;
    let new_view = document::View::of(&outcome.text).text;
    let diff = text::UnifiedDiff::new(&old_view, &new_view, &shown, 3);
    let mut message = match &before {
        None => format!("Created {shown} (+{} -{}).", diff.added, diff.removed),
        Some(_) => format!(
            "Edited {shown} (+{} -{}): {}.",
            diff.added,
            diff.removed,
            outcome.summary()
        ),
    };
    if outcome.unescaped_new() {
        message.push('\n');
        message.push_str(args::REPAIR_NOTE);
    }
    let shown_diff = diff.cut(MAX_DIFF_LINES);
    if !shown_diff.is_empty() {
        message.push('\n');
        message.push_str(&shown_diff);
    }
    let strategies: Vec<&str> = outcome
        .reports
        .iter()
        .filter_map(|r| r.strategy.map(Strategy::name))
        .collect();
    let output = ToolOutput::ok(message)
        .with_meta(
            "replacements",
            outcome.reports.iter().map(|r| r.count).sum::<usize>(),
        )
        .with_meta("strategies", json!(strategies));
    let change = FileChange {
        path: shown,
        created: before.is_none(),
        deleted: false,
        added: diff.added as u64,
        removed: diff.removed as u64,
        diff: diff.cut(MAX_CHANGE_DIFF_LINES),
    };
    Ok(Plan {
        writes: vec![PlannedWrite {
            target: resolved,
            before: existing.as_deref().map(FileStamp::of),
            content: bytes,
            new_mode: 0o666,
            change,
            remove: false,
        }],
        output,
        from_pending: None,
    })
}

/// Reads a file that is about to be edited, or says why it cannot be edited.
fn read_editable(file: &mut std::fs::File, shown: &str) -> Result<Vec<u8>, String> {
    let meta = file
        .metadata()
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory; edit_file edits one file (use list_files to see what it holds)"
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "{shown} is not a regular file (a device, FIFO or socket); it cannot be edited"
        ));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(format!(
            "{shown} is too large for edit_file ({}; the limit is {}); use the shell (e.g. sed -i) instead",
            human_size(meta.len()),
            human_size(MAX_EDIT_BYTES)
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if let Some(kind) = binary_kind(&bytes[..bytes.len().min(8192)]) {
        return Err(format!(
            "{shown} is a binary file ({kind}, {}); edit_file edits text files only",
            human_size(bytes.len() as u64)
        ));
    }
    Ok(bytes)
}
