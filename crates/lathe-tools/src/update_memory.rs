//! `update_memory`: adds, replaces or removes an entry of the project's memory, the Markdown
//! file (`.lathe/memory.md` by default, `[memory] path` in the configuration) that every new
//! session's system prompt holds after `AGENTS.md`.
//!
//! The tool plans ([`Tool::plan`]): the file's new content and its diff are worked out before
//! the call is authorized, and its one effect, [`Effect::Memory`], asks in every approval mode
//! (read-only refuses it), so memory is never changed unasked; [`Plan::apply`] then writes the
//! file atomically, after checking that it is still what the diff was made from.

use schemars::JsonSchema;
use serde::Deserialize;

use lathe_runtime::memory::{self, MAX_MEMORY_BYTES, MemoryText, clean_entry, memory_path};
use lathe_runtime::session::Session;
use lathe_runtime::text::{self, UnifiedDiff};
use lathe_runtime::tool::{
    Effect, FileChange, Plan, PlannedWrite, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
    ToolResult, run_planned,
};

/// Add a note to the project's memory, or replace or remove one. The memory is a short list
/// of facts and conventions about this project that every new session reads in its system
/// prompt (after AGENTS.md).
///
/// Use it for what a future session needs and cannot easily find out: how to build and test,
/// conventions the user asked for, pitfalls you found. Not for the task at hand (use
/// update_plan), not for secrets. Each change is shown to the user as a diff and made only if
/// they approve it; it applies from the next session on.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct UpdateMemoryInput {
    /// What to do.
    pub action: MemoryAction,
    /// add: the note to remember, one fact in a sentence or two. replace: the entry's new text.
    /// remove: which entry (as for `old`).
    pub entry: Option<String>,
    /// replace and remove: which entry, by its number in the memory or a piece of its text that
    /// no other entry has.
    pub old: Option<String>,
}

/// What `update_memory` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum MemoryAction {
    /// add `entry` at the end
    Add,
    /// replace the entry `old` with `entry`
    Replace,
    /// remove the entry `old` (or `entry`)
    Remove,
}

/// The `update_memory` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdateMemoryTool;

impl Tool for UpdateMemoryTool {
    const NAME: &'static str = "update_memory";
    const ON_DEMAND: bool = true;
    const ALIASES: &'static [&'static str] = &["remember", "save_memory"];
    type Input = UpdateMemoryInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::Memory {
            path: memory_path(session),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        let (verb, subject) = match input.action {
            MemoryAction::Add => ("add", input.entry.as_deref()),
            MemoryAction::Replace => ("replace", input.old.as_deref()),
            MemoryAction::Remove => ("remove", input.old.as_deref().or(input.entry.as_deref())),
        };
        let subject = subject.map(|s| text::one_line(&s.replace('\n', " "), 60));
        let subject = format!("{verb} {}", subject.unwrap_or_default());
        text::title(Self::NAME, subject.trim_end())
    }

    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        Some(plan_update(input, session))
    }

    async fn run(&self, input: UpdateMemoryInput, ctx: ToolContext) -> ToolResult {
        run_planned(self, input, ctx).await
    }
}

/// Everything up to the write: read the memory, make the change, check the caps, diff.
fn plan_update(input: &UpdateMemoryInput, session: &Session) -> Result<Plan, ToolError> {
    let path = memory_path(session);
    let workspace = session.workspace();
    let target = memory::resolve(workspace, &path).map_err(ToolError::new)?;
    let shown = target.shown().to_owned();
    let refuse = |message: String| ToolError::new(message).with_path(shown.clone());
    let before = lathe_runtime::tool::current_stamp(workspace, &target)
        .map_err(|err| refuse(format!("cannot read the memory file {shown}: {err}")))?;
    // Read past the cap, to say how large a hand-edited file is; the whole file is needed to
    // rewrite it.
    let (old, exists) = match memory::read(workspace, &target, usize::MAX)
        .map_err(|err| refuse(format!("cannot read the memory file {shown}: {err}")))?
    {
        Some((bytes, _)) => (
            String::from_utf8(bytes).map_err(|_| {
                refuse(format!(
                    "the memory file {shown} is not UTF-8 text, so it was not changed; the user \
                     can fix it with `lathe memory edit`"
                ))
            })?,
            true,
        ),
        None => (String::new(), false),
    };
    let memory = MemoryText::parse(&old);
    let needs_entry = |what: &str| {
        input
            .entry
            .as_deref()
            .filter(|e| !e.trim().is_empty())
            .ok_or_else(|| refuse(format!("{what}: give the text in `entry`")))
            .and_then(|e| clean_entry(e).map_err(&refuse))
    };
    let which = |what: &str| -> Result<usize, ToolError> {
        if memory.entries().is_empty() {
            return Err(refuse(format!(
                "the project memory ({shown}) has no entries yet, so there is nothing to {what}; \
                 use action add"
            )));
        }
        let given = match (what, input.old.as_deref(), input.entry.as_deref()) {
            (_, Some(old), _) => old,
            ("remove", None, Some(entry)) => entry,
            _ => {
                return Err(refuse(format!(
                    "say which entry to {what} in `old` (its number or a piece of its text). \
                     The entries:\n{}",
                    memory.listing(None)
                )));
            }
        };
        memory.find(given).map_err(&refuse)
    };
    let (new, summary) = match input.action {
        MemoryAction::Add => {
            let entry = needs_entry("add what")?;
            if let Some(index) = memory.position(&entry) {
                return Err(refuse(format!(
                    "the memory already holds this as entry {}; nothing was changed",
                    index + 1
                )));
            }
            let number = memory.entries().len() + 1;
            (memory.added(&entry), format!("Added entry {number} to"))
        }
        MemoryAction::Replace => {
            let index = which("replace")?;
            let entry = needs_entry("replace it with what")?;
            (
                memory.changed(index, Some(&entry)),
                format!("Replaced entry {} of", index + 1),
            )
        }
        MemoryAction::Remove => {
            let index = which("remove")?;
            (
                memory.changed(index, None),
                format!("Removed entry {} from", index + 1),
            )
        }
    };
    if new.len() > MAX_MEMORY_BYTES && new.len() > old.len() {
        return Err(refuse(format!(
            "the memory would be {} bytes, more than its cap of {MAX_MEMORY_BYTES} (it is read \
             into every session's system prompt), so nothing was changed: remove or shorten \
             entries first. The entries:\n{}",
            new.len(),
            memory.listing(None)
        )));
    }
    let diff = UnifiedDiff::new(&old, &new, &shown, 3);
    let change = FileChange {
        path: shown.clone(),
        created: !exists,
        deleted: false,
        added: diff.added as u64,
        removed: diff.removed as u64,
        diff: diff.cut(lathe_runtime::meta::MAX_CHANGE_DIFF_LINES),
    };
    let output = ToolOutput::ok(format!(
        "{summary} the project memory ({shown}). It is in the system prompt from the next \
         session on; keep it in mind for the rest of this one.\n\n{}",
        diff.cut(60)
    ))
    .with_path(shown);
    let write = PlannedWrite {
        target,
        before,
        content: new.into_bytes(),
        new_mode: 0o644,
        change,
        remove: false,
    };
    Ok(Plan::new(vec![write], output))
}
