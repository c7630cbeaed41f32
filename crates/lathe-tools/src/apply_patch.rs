//! `apply_patch`: many file changes in one call, in the patch format Codex and OpenCode use
//! (`*** Begin Patch` / `*** Update File:` / `*** Add File:` / `*** Delete File:` /
//! `*** Move to:` / `@@` hunks), applied all together or not at all.
//!
//! The tool plans ([`Tool::plan`]): the patch is read, every file it touches is read and
//! checked for staleness, and every hunk is found before anything is asked or written; the
//! plan holds one write or removal per file, so approval shows each diff and
//! [`Plan::apply`] writes them all or none. With `preview: true` nothing is planned for the
//! dispatcher: the call only reads, and the plan becomes a pending action that `resolve`
//! applies or discards.

mod hunks;
mod parse;

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::edit_file::MAX_EDIT_BYTES;
use crate::edit_file::document::Document;
use crate::suggest;
use lathe_runtime::meta::MAX_CHANGE_DIFF_LINES;
use lathe_runtime::session::{FileStamp, Session};
use lathe_runtime::text::{self, UnifiedDiff, binary_kind, human_size, line_count};
use lathe_runtime::tool::{
    Effect, FileChange, Plan, PlannedWrite, ResultExt, Tool, ToolContext, ToolError, ToolKind,
    ToolOutput, ToolResult, run_planned,
};
use lathe_runtime::workspace::{Access, ResolvedPath};
use lathe_runtime::{PendingAction, ToolProgress};

pub use hunks::Strategy;
pub use parse::{BEGIN, END, heredoc_start};
use parse::{Chunk, FileOp, Patch};

/// The diff in the model's result is cut after this many lines per file.
const MAX_DIFF_LINES: usize = 60;

/// Change files with a patch: edit, create, delete and rename several files in one call, all
/// or none.
///
/// The patch starts with `*** Begin Patch` and ends with `*** End Patch`. Each file starts with
/// a header: `*** Update File: PATH` (optionally followed by `*** Move to: NEW PATH`), then
/// hunks, each introduced by `@@` (optionally `@@ def f():`, a line of the file before the
/// hunk, to place it), whose lines start with ' ' (unchanged context: about 3 lines before and
/// after each change), '-' (removed) or '+' (added); `*** Add File: PATH` followed by its
/// lines, each starting with '+'; `*** Delete File: PATH` alone. Paths are relative to the
/// workspace root. Example:
///
/// ```text
/// *** Begin Patch
/// *** Update File: src/app.py
/// @@ def greet():
/// -    print("Hi")
/// +    print("Hello")
/// *** Add File: NOTES.md
/// +# Notes
/// *** End Patch
/// ```
///
/// Context lines that differ only in whitespace still match, and the result says so. For one
/// small change to one file, edit_file is simpler.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyPatchInput {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    pub patch: String,
    /// Only show what the patch would change, and keep it as a pending action to apply or
    /// discard with `resolve`; nothing is written now. Default: false.
    pub preview: Option<bool>,
}

/// The `apply_patch` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ApplyPatchTool;

impl Tool for ApplyPatchTool {
    const NAME: &'static str = "apply_patch";
    const ON_DEMAND: bool = true;
    // OpenCode calls it `patch` too; `applypatch` folds to the name already.
    const ALIASES: &'static [&'static str] = &["patch"];
    type Input = ApplyPatchInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        let Ok(patch) = parse::parse(&input.patch) else {
            // A patch that cannot be read changes nothing: the model reads why.
            return vec![Effect::OwnState { changes: false }];
        };
        let preview = input.preview.unwrap_or(false);
        let mut effects = Vec::new();
        let mut push = |effect: Effect| {
            if !effects.contains(&effect) {
                effects.push(effect);
            }
        };
        for op in &patch.ops {
            let path = op.path().to_owned();
            match op {
                _ if preview => push(Effect::Read { path }),
                FileOp::Add { .. } | FileOp::Delete { .. } => push(Effect::Write { path }),
                FileOp::Update { move_to: None, .. } => push(Effect::Edit { path }),
                FileOp::Update {
                    move_to: Some(to), ..
                } => {
                    push(Effect::Write { path });
                    push(Effect::Write { path: to.clone() });
                }
            }
            if let FileOp::Update {
                move_to: Some(to), ..
            } = op
                && preview
            {
                push(Effect::Read { path: to.clone() });
            }
        }
        if preview {
            push(Effect::OwnState { changes: true });
        }
        effects
    }

    fn title(&self, input: &Self::Input) -> String {
        let subject = match parse::parse(&input.patch) {
            Ok(patch) => {
                let mut paths: Vec<&str> = Vec::new();
                for op in &patch.ops {
                    if !paths.contains(&op.path()) {
                        paths.push(op.path());
                    }
                }
                let shown = paths.iter().take(3).copied().collect::<Vec<_>>().join(", ");
                match paths.len() {
                    n if n > 3 => format!("{shown} (+{} more)", n - 3),
                    _ => shown,
                }
            }
            Err(_) => String::new(),
        };
        let subject = if input.preview.unwrap_or(false) {
            format!("(preview) {subject}")
        } else {
            subject
        };
        text::title(Self::NAME, &subject)
    }

    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        if input.preview.unwrap_or(false) {
            return None;
        }
        Some(plan_patch(session, &input.patch, Mode::Apply))
    }

    async fn run(&self, input: ApplyPatchInput, ctx: ToolContext) -> ToolResult {
        if !input.preview.unwrap_or(false) {
            return run_planned(self, input, ctx).await;
        }
        let session = std::sync::Arc::clone(&ctx.session);
        let planned = tokio::task::spawn_blocking(move || {
            plan_patch(&session, &input.patch, Mode::Preview).map(|plan| (plan, session))
        })
        .await;
        let (plan, session) =
            planned.or_model(|err| format!("{} stopped unexpectedly: {err}", Self::NAME))??;
        if plan.writes.is_empty() {
            return Ok(plan.output);
        }
        ctx.report(ToolProgress::Status {
            message: "patch previewed; nothing written".to_owned(),
        });
        let mut preview = plan.output.clone();
        let paths: Vec<&str> = plan.changes().map(|c| c.path.as_str()).collect();
        let label = match paths.len() {
            n if n > 3 => format!("apply_patch: {} (+{} more)", paths[..3].join(", "), n - 3),
            _ => format!("apply_patch: {}", paths.join(", ")),
        };
        let details = preview.text.clone();
        let action =
            PendingAction::from_plan(label, Self::NAME, applied(plan)).with_details(details);
        let notice = session.push_pending(action).map_err(ToolError::new)?;
        preview.text.push_str("\n\n");
        preview.text.push_str(&notice);
        Ok(preview)
    }
}

/// The arguments of an `apply_patch` call that applies `patch` (for a front end that found a
/// patch written in a model's reply).
pub fn call_arguments(patch: &str) -> serde_json::Value {
    json!({ "patch": patch })
}

/// A preview's plan as it is applied later: its result reads as the patch applied.
fn applied(mut plan: Plan) -> Plan {
    plan.output.text = plan
        .output
        .text
        .replacen(Mode::Preview.verb(), Mode::Apply.verb(), 1);
    plan.output.metadata.extra.remove("pending");
    plan
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Apply,
    Preview,
}

impl Mode {
    fn verb(self) -> &'static str {
        match self {
            Mode::Apply => "Applied the patch",
            Mode::Preview => "Preview of the patch (nothing written yet)",
        }
    }
}

/// A file the patch touches: what is on disk, and what the patch has made of it so far.
struct Entry {
    target: ResolvedPath,
    shown: String,
    /// What was on disk when the plan started: bytes, stamp and permission bits.
    disk: Option<(Vec<u8>, FileStamp, u32)>,
    /// Its text now (after the operations so far), `None` when it does not exist.
    now: Option<Text>,
    /// Permission bits for the file when the plan creates it (a moved file keeps its own).
    mode: u32,
}

#[derive(Clone)]
struct Text {
    document: Document,
}

/// One line of the result: what an operation did.
struct Done {
    line: String,
    diff: String,
}

/// The files of a patch, each read once, in the order the patch first names them.
struct Files<'a> {
    session: &'a Session,
    order: Vec<PathBuf>,
    entries: HashMap<PathBuf, Entry>,
}

impl<'a> Files<'a> {
    fn new(session: &'a Session) -> Self {
        Files {
            session,
            order: Vec::new(),
            entries: HashMap::new(),
        }
    }

    /// The entry of `path` (as the patch wrote it), read from disk the first time.
    fn get(&mut self, path: &str, header: usize) -> Result<PathBuf, ToolError> {
        let refuse = |message: String| ToolError::new(message);
        if let Some(message) = text::names_a_directory(path) {
            return Err(refuse(format!("line {header} of the patch: {message}")));
        }
        let workspace = self.session.workspace();
        let target = workspace
            .resolve(path, Access::Write)
            .map_err(|err| refuse(format!("line {header} of the patch: {err}")))?;
        let key = target.abs().to_path_buf();
        if self.entries.contains_key(&key) {
            return Ok(key);
        }
        let shown = target.shown().to_owned();
        let fail = |message: String| ToolError::new(message).with_path(shown.clone());
        let (disk, now, mode) =
            match workspace.open(&target, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
                Ok(mut file) => {
                    let (bytes, mode) = read_patchable(&mut file, &shown).map_err(fail)?;
                    self.session
                        .check_unchanged(target.abs(), &bytes, &shown)
                        .map_err(fail)?;
                    let document = Document::decode(&bytes)
                        .map_err(|reason| fail(format!("cannot patch {shown}: {reason}")))?;
                    let stamp = FileStamp::of(&bytes);
                    (Some((bytes, stamp, mode)), Some(Text { document }), mode)
                }
                Err(err)
                    if err.kind() == io::ErrorKind::NotFound
                        || err.raw_os_error() == Some(libc::ENOTDIR) =>
                {
                    (None, None, 0o666)
                }
                Err(err) => return Err(fail(format!("cannot read {shown}: {err}"))),
            };
        self.order.push(key.clone());
        self.entries.insert(
            key.clone(),
            Entry {
                target,
                shown,
                disk,
                now,
                mode,
            },
        );
        Ok(key)
    }

    fn entry(&mut self, key: &PathBuf) -> &mut Entry {
        self.entries.get_mut(key).expect("entries are made by get")
    }

    /// The refusal for a file the operation needs but that does not exist (now).
    fn missing(&self, key: &PathBuf, what: &str, header: usize) -> ToolError {
        let entry = &self.entries[key];
        let shown = &entry.shown;
        let similar = suggest::similar_paths(self.session.workspace(), entry.target.abs(), 3);
        let earlier = if entry.disk.is_some() {
            " (an earlier operation of this patch deleted or moved it)"
        } else {
            ""
        };
        ToolError::new(format!(
            "line {header} of the patch: cannot {what} {shown}: it does not exist{earlier}.{} \
             To create it, use `*** Add File: {shown}` with its lines each starting with '+'. \
             Nothing was written.",
            suggest::did_you_mean(&similar)
        ))
        .with_path(shown.clone())
        .with_meta("suggestions", similar)
    }
}

/// Reads a file the patch changes or deletes, or says why it cannot.
fn read_patchable(file: &mut std::fs::File, shown: &str) -> Result<(Vec<u8>, u32), String> {
    let meta = file
        .metadata()
        .map_err(|err| format!("cannot read {shown}: {err}"))?;
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory; a patch changes, adds and deletes files, one header each \
             (use list_files to see what it holds). Nothing was written."
        ));
    }
    if !meta.is_file() {
        return Err(format!(
            "{shown} is not a regular file (a device, FIFO or socket); it cannot be patched. \
             Nothing was written."
        ));
    }
    if meta.len() > MAX_EDIT_BYTES {
        return Err(format!(
            "{shown} is too large for apply_patch ({}; the limit is {}); use the shell instead. \
             Nothing was written.",
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
            "{shown} is a binary file ({kind}, {}); apply_patch changes text files only. \
             Nothing was written.",
            human_size(bytes.len() as u64)
        ));
    }
    Ok((bytes, meta.permissions().mode() & 0o7777))
}

/// The text of a file for diffs: `\r\n` as `\n`, so a diff reads the same whatever the file's
/// line endings (the bytes written keep them).
fn view(text: Option<&Text>) -> String {
    text.map(|t| t.document.text.replace("\r\n", "\n"))
        .unwrap_or_default()
}

/// Works out everything the patch does, writing nothing.
fn plan_patch(session: &Session, patch_text: &str, mode: Mode) -> Result<Plan, ToolError> {
    let patch: Patch = parse::parse(patch_text).map_err(|err| {
        ToolError::new(format!(
            "the patch could not be read: {err}. Nothing was written."
        ))
    })?;
    let mut files = Files::new(session);
    let mut done: Vec<Done> = Vec::new();
    let mut strategies: Vec<&'static str> = Vec::new();
    // The files the operations are about, each once (a rename is one file).
    let mut subjects: Vec<PathBuf> = Vec::new();
    for op in &patch.ops {
        let key = files.get(op.path(), op.line())?;
        if !subjects.contains(&key) {
            subjects.push(key);
        }
        match op {
            FileOp::Add {
                path,
                line,
                content,
            } => {
                let key = files.get(path, *line)?;
                let entry = files.entry(&key);
                if entry.now.is_some() {
                    let shown = entry.shown.clone();
                    return Err(ToolError::new(format!(
                        "line {line} of the patch: cannot add {shown}: it already exists. To \
                         change it, use `*** Update File: {shown}` with hunks; to replace it \
                         whole, put `*** Delete File: {shown}` before the `*** Add File:`. \
                         Nothing was written."
                    ))
                    .with_path(shown));
                }
                let document = Document {
                    bom: false,
                    raw_bytes: false,
                    text: content.clone(),
                };
                let diff = UnifiedDiff::new("", content, &entry.shown, 3);
                done.push(Done {
                    line: format!("A {} (+{})", entry.shown, line_count(content)),
                    diff: diff.cut(MAX_DIFF_LINES),
                });
                entry.now = Some(Text { document });
            }
            FileOp::Delete { path, line } => {
                let key = files.get(path, *line)?;
                if files.entries[&key].now.is_none() {
                    return Err(files.missing(&key, "delete", *line));
                }
                let entry = files.entry(&key);
                let old = view(entry.now.as_ref());
                done.push(Done {
                    line: format!("D {} (-{})", entry.shown, line_count(&old)),
                    diff: String::new(),
                });
                entry.now = None;
            }
            FileOp::Update {
                path,
                line,
                move_to,
                chunks,
            } => {
                let key = files.get(path, *line)?;
                if files.entries[&key].now.is_none() {
                    return Err(files.missing(&key, "update", *line));
                }
                let (updated, strategy) = update(files.entry(&key), chunks)?;
                if let Some(strategy) = strategy {
                    strategies.push(strategy.name());
                }
                let entry = &files.entries[&key];
                let old = view(entry.now.as_ref());
                let new = view(Some(&updated));
                let matched = strategy
                    .map(|s| format!(", matched: {}", s.describe()))
                    .unwrap_or_default();
                match move_to {
                    None => {
                        let diff = UnifiedDiff::new(&old, &new, &entry.shown, 3);
                        done.push(Done {
                            line: format!(
                                "M {} (+{} -{}{matched})",
                                entry.shown, diff.added, diff.removed
                            ),
                            diff: diff.cut(MAX_DIFF_LINES),
                        });
                        files.entry(&key).now = Some(updated);
                    }
                    Some(to) => {
                        let from_shown = entry.shown.clone();
                        let from_mode = entry.mode;
                        let dest = files.get(to, *line + 1)?;
                        if dest != key && files.entries[&dest].now.is_some() {
                            let shown = files.entries[&dest].shown.clone();
                            return Err(ToolError::new(format!(
                                "line {} of the patch: cannot move {from_shown} to {shown}: \
                                 {shown} already exists. To replace it, put `*** Delete File: \
                                 {shown}` before this update. Nothing was written.",
                                line + 1
                            ))
                            .with_path(shown));
                        }
                        let to_shown = files.entries[&dest].shown.clone();
                        let diff = UnifiedDiff::new(&old, &new, &to_shown, 3);
                        done.push(Done {
                            line: format!(
                                "R {from_shown} -> {to_shown} (+{} -{}{matched})",
                                diff.added, diff.removed
                            ),
                            diff: diff.cut(MAX_DIFF_LINES),
                        });
                        files.entry(&key).now = None;
                        let dest_entry = files.entry(&dest);
                        dest_entry.now = Some(updated);
                        if dest_entry.disk.is_none() {
                            dest_entry.mode = from_mode;
                        }
                    }
                }
            }
        }
    }
    let mut writes = Vec::new();
    for key in &files.order {
        let entry = files.entries.remove(key).expect("each key has its entry");
        if let Some(write) = planned_write(entry) {
            writes.push(write);
        }
    }
    let mut message = if writes.is_empty() {
        "The patch changes nothing: every file it touches would end as it is now, so nothing \
         was written."
            .to_owned()
    } else {
        format!(
            "{}: {} file{} changed.",
            mode.verb(),
            subjects.len(),
            if subjects.len() == 1 { "" } else { "s" }
        )
    };
    for d in &done {
        message.push('\n');
        message.push_str(&d.line);
    }
    for note in &patch.notes {
        message.push_str(&format!("\nNote: {note}; it was read all the same."));
    }
    for d in &done {
        if !d.diff.is_empty() {
            message.push('\n');
            message.push_str(d.diff.trim_end_matches('\n'));
        }
    }
    let output = ToolOutput::ok(message).with_meta("strategies", json!(strategies));
    Ok(Plan::new(writes, output))
}

/// The file's text after `chunks`, and the loosest strategy its hunks needed (`None` for a
/// pure rename).
fn update(entry: &Entry, chunks: &[Chunk]) -> Result<(Text, Option<Strategy>), ToolError> {
    let now = entry.now.as_ref().expect("checked by the caller");
    if chunks.is_empty() {
        return Ok((now.clone(), None));
    }
    let updated = hunks::apply(&now.document.text, chunks).map_err(|err| {
        ToolError::new(format!(
            "{}\nNothing was written: a patch applies whole or not at all.",
            err.message(&entry.shown, chunks)
        ))
        .with_path(entry.shown.clone())
    })?;
    let strategy = updated.loosest();
    let document = Document {
        text: updated.text,
        ..now.document.clone()
    };
    Ok((Text { document }, Some(strategy)))
}

/// The write (or removal) that brings the file from its disk state to its final one; `None`
/// when they are the same.
fn planned_write(entry: Entry) -> Option<PlannedWrite> {
    let Entry {
        target,
        shown,
        disk,
        now,
        mode,
    } = entry;
    let old_text = disk
        .as_ref()
        .and_then(|(bytes, _, _)| Document::decode(bytes).ok())
        .map(|document| Text { document });
    let old = view(old_text.as_ref());
    match (disk, now) {
        (None, None) => None,
        (Some((_, stamp, _)), None) => {
            let diff = UnifiedDiff::new(&old, "", &shown, 3);
            let change = FileChange {
                path: shown,
                created: false,
                deleted: true,
                added: 0,
                removed: diff.removed as u64,
                diff: diff.cut(MAX_CHANGE_DIFF_LINES),
            };
            Some(PlannedWrite::removal(target, stamp, change))
        }
        (disk, Some(text)) => {
            let bytes = text.document.encode(&text.document.text);
            if disk.as_ref().is_some_and(|(before, _, _)| *before == bytes) {
                return None;
            }
            let new = view(Some(&text));
            let diff = UnifiedDiff::new(&old, &new, &shown, 3);
            let change = FileChange {
                path: shown,
                created: disk.is_none(),
                deleted: false,
                added: diff.added as u64,
                removed: diff.removed as u64,
                diff: diff.cut(MAX_CHANGE_DIFF_LINES),
            };
            Some(PlannedWrite {
                target,
                before: disk.map(|(_, stamp, _)| stamp),
                content: bytes,
                new_mode: mode,
                change,
                remove: false,
            })
        }
    }
}
