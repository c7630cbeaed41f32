//! Checkpoints of a session whose every changing call is a turn of its own: an MCP client's
//! (`lathe mcp`) and a `lathe tool` run's. Each call that may change the workspace is recorded
//! before and after it runs, one at a time within the session ([`SessionCheckpoints::around`]),
//! and the client sees and takes back its turns with `checkpoint_list` and `checkpoint_restore`
//! (tools of `lathe mcp` only: the model of `exec` and `chat` has `lathe undo`'s person at the
//! keyboard instead).
//!
//! The checkpoints are opened (the session's stored record created, by the front end's
//! [`Opener`]) only when a call first changes something or asks for its checkpoints, so a
//! session that only reads leaves nothing behind.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use lathe_runtime::tool::ResultExt;
use lathe_runtime::{
    Approver, CallInfo, Effect, FileChange, Hook, Host, Outcome, Registry, Session, Tool,
    ToolContext, ToolError, ToolHints, ToolKind, ToolOutput, ToolResult, TurnChange, TurnRecorder,
    hints_for,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::report::uncovered_line;
use crate::{CheckpointRecorder, Checkpoints, Coverage, Force, Step, StepKind, UndoTarget};

/// Adds `checkpoint_list` and `checkpoint_restore` to `registry`.
pub fn register(registry: &mut Registry) {
    registry.register(CheckpointListTool);
    registry.register(CheckpointRestoreTool);
}

/// Whether `name` (as registered) is one of the checkpoint tools: they record their own steps,
/// so no turn is recorded around them.
pub fn is_checkpoint_tool(name: &str) -> bool {
    name == CheckpointListTool::NAME || name == CheckpointRestoreTool::NAME
}

/// Opens a session's checkpoints the first time they are needed: creates the session's stored
/// record (the front end knows the store and the data directory) and returns the checkpoints
/// with the id they are kept under, or why the session keeps none.
pub type Opener = Box<dyn Fn(&Session) -> Result<(Arc<Checkpoints>, String), String> + Send + Sync>;

/// One session's checkpoints, kept in its tool session. Opened only when a call first changes
/// something or asks for its checkpoints.
pub struct SessionCheckpoints {
    opener: Opener,
    opened: OnceLock<Opened>,
    /// The next turn's number; held while a changing call (or a restore) runs, so that two
    /// calls of one session never share a turn.
    next_turn: tokio::sync::Mutex<u32>,
}

struct Opened {
    /// The hook around changing calls, or why there are no checkpoints.
    hook: Result<Arc<CheckpointRecorder>, String>,
    /// The checkpoints' session: the stored session's id.
    id: String,
}

impl SessionCheckpoints {
    /// The checkpoints of `session`, opened by `opener` when first needed (nothing is opened
    /// yet); the ones it already has when it has some.
    pub fn of(session: &Arc<Session>, opener: Opener) -> Arc<Self> {
        session.extension(|| SessionCheckpoints {
            opener,
            opened: OnceLock::new(),
            next_turn: tokio::sync::Mutex::new(1),
        })
    }

    fn opened(&self, session: &Session) -> &Opened {
        self.opened.get_or_init(|| match (self.opener)(session) {
            Ok((checkpoints, id)) => Opened {
                hook: Ok(Arc::new(CheckpointRecorder::new(checkpoints))),
                id,
            },
            Err(why) => {
                tracing::warn!("{why}");
                Opened {
                    hook: Err(why),
                    id: String::new(),
                }
            }
        })
    }

    /// The hook around the session's changing calls, when it has been opened and keeps
    /// checkpoints.
    fn open_hook(&self) -> Option<&Arc<CheckpointRecorder>> {
        self.opened
            .get()
            .and_then(|opened| opened.hook.as_ref().ok())
    }

    /// Whether the session keeps checkpoints (they are opened now if they were not).
    pub fn keeps(&self, session: &Session) -> bool {
        self.opened(session).hook.is_ok()
    }

    /// The stored session the checkpoints are kept under, once opened.
    pub fn id(&self) -> Option<&str> {
        self.opened
            .get()
            .filter(|opened| opened.hook.is_ok())
            .map(|opened| opened.id.as_str())
    }

    fn checkpoints(&self, session: &Session) -> Result<Arc<Checkpoints>, String> {
        self.opened(session)
            .hook
            .as_ref()
            .map(|hook| Arc::clone(hook.checkpoints()))
            .map_err(Clone::clone)
    }

    /// Runs `call` on `host` (whose recorder is these checkpoints): a call that may change the
    /// workspace (`changes`), or a checkpoint tool's (`exclusive`), one at a time within the
    /// session, and a changing one as a turn of its own, recorded before its first change and
    /// after it ends.
    pub async fn around<F: Future>(
        &self,
        host: &Host,
        changes: bool,
        exclusive: bool,
        call: F,
    ) -> F::Output {
        if !changes && !exclusive {
            return call.await;
        }
        let mut next = self.next_turn.lock().await;
        if changes {
            host.begin_turn(*next);
        }
        let output = call.await;
        if changes {
            match host.finish_turn().await {
                // The number is kept for the next call when this one changed nothing.
                Ok(Some(_)) => *next += 1,
                Ok(None) => {}
                Err(err) => tracing::warn!("cannot record the end of turn {}: {err}", *next),
            }
        }
        output
    }
}

impl SessionCheckpoints {
    /// One call on `host` (whose recorder is these checkpoints): prepared, authorized with
    /// `approver`, and run, as a turn of its own when it may change the workspace.
    pub async fn call(
        &self,
        host: &Host,
        name: &str,
        arguments: serde_json::Value,
        approver: &dyn Approver,
        ctx: ToolContext,
    ) -> Outcome {
        let dispatcher = host.dispatcher();
        let call = match dispatcher.prepare(name, arguments, &ctx.session) {
            Ok(call) => call,
            Err(outcome) => return outcome,
        };
        let call_id = ctx.call_id.clone().unwrap_or_default();
        let authorized = match dispatcher
            .authorize(call, &call_id, approver, &ctx.session, &ctx.cancel)
            .await
        {
            Ok(authorized) => authorized,
            Err(outcome) => return outcome,
        };
        let own = is_checkpoint_tool(&authorized.info().name);
        let changes =
            !own && authorized.info().judgement.may_change_workspace && self.keeps(&ctx.session);
        self.around(host, changes, own, dispatcher.run(authorized, ctx))
            .await
    }
}

/// The recorder of the session's turns: opens the checkpoints before the first call that may
/// change the workspace, and passes the turn's bounds to them once they are open.
impl Hook for SessionCheckpoints {
    fn before_run(
        &self,
        call: &CallInfo,
        changes: &[FileChange],
        session: &Session,
    ) -> Result<(), String> {
        if is_checkpoint_tool(&call.name) || !call.judgement.may_change_workspace {
            return Ok(());
        }
        match &self.opened(session).hook {
            Ok(hook) => hook.before_run(call, changes, session),
            Err(_) => Ok(()),
        }
    }

    fn after(&self, call: &CallInfo, outcome: &mut Outcome, session: &Session) {
        if let Some(hook) = self.open_hook() {
            hook.after(call, outcome, session);
        }
    }
}

impl TurnRecorder for SessionCheckpoints {
    fn begin_turn(&self, turn: u32) {
        if let Some(hook) = self.open_hook() {
            CheckpointRecorder::begin_turn(hook, turn);
        }
    }

    fn end_turn(&self) -> Result<Option<TurnChange>, String> {
        match self.open_hook() {
            Some(hook) => TurnRecorder::end_turn(hook.as_ref()),
            None => Ok(None),
        }
    }
}

/// List the checkpoints of this MCP session: each tool call that changed files is a turn,
/// recorded before and after it ran (shell commands' changes included); undos and redos are
/// steps too. Shows each step's turn, id, time and files with lines added and removed, and what
/// the checkpoints do not cover (ignored files, files over the size limit). Take a turn back
/// with checkpoint_restore.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckpointListInput {}

/// The `checkpoint_list` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct CheckpointListTool;

impl Tool for CheckpointListTool {
    const NAME: &'static str = "checkpoint_list";
    type Input = CheckpointListInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    fn hints(&self) -> ToolHints {
        ToolHints {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        }
    }

    fn effects(&self, _input: &Self::Input, _session: &Session) -> Vec<Effect> {
        // Reads the session's own history: nothing outside it changes.
        vec![Effect::OwnState { changes: false }]
    }

    fn title(&self, _input: &Self::Input) -> String {
        Self::NAME.to_owned()
    }

    async fn run(&self, _input: Self::Input, ctx: ToolContext) -> ToolResult {
        let Some(state) = ctx.session.existing_extension::<SessionCheckpoints>() else {
            return Err(ToolError::new("this session keeps no checkpoints"));
        };
        let checkpoints = state.checkpoints(&ctx.session).map_err(ToolError::new)?;
        let id = state.opened(&ctx.session).id.clone();
        tokio::task::spawn_blocking(move || list(&checkpoints, &id))
            .await
            .or_model(|err| format!("checkpoint_list stopped: {err}"))?
    }
}

fn list(checkpoints: &Checkpoints, id: &str) -> ToolResult {
    let steps = checkpoints
        .steps()
        .or_model(|err| format!("cannot read the checkpoints: {err}"))?;
    let mut text = String::new();
    let mut listed = Vec::new();
    if steps.is_empty() {
        text.push_str("no checkpoints yet: no call of this session has changed a file\n");
    } else {
        text.push_str(&format!(
            "{} step{} in this session (id {id}), oldest first:\n",
            steps.len(),
            if steps.len() == 1 { "" } else { "s" }
        ));
    }
    for (n, step) in steps.iter().enumerate() {
        let files = checkpoints.files(step).unwrap_or_default();
        let when = step.at.map(|t| t.to_string()).unwrap_or_default();
        text.push_str(&format!(
            "step {} · turn {} · {} · {}{}\n",
            n + 1,
            step.turn,
            what(step, &steps),
            short(&step.id),
            if when.is_empty() {
                String::new()
            } else {
                format!(" · {when}")
            }
        ));
        for file in &files {
            text.push_str(&format!("  {} {}\n", file.path.display(), counts(file)));
        }
        listed.push(json!({
            "step": n + 1,
            "id": step.id,
            "turn": step.turn,
            "kind": kind(step),
            "at": step.at.map(|t| t.to_string()),
            "files": files.iter().map(|f| json!({
                "path": f.path.display().to_string(),
                "added": f.added,
                "removed": f.removed,
            })).collect::<Vec<_>>(),
            "left_alone": step.left_alone.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        }));
    }
    if steps.iter().any(|s| s.kind == StepKind::Turn) {
        text.push_str(
            "undo the newest turn with checkpoint_restore, or every turn from turn N on with \
             checkpoint_restore {\"turn\": N}\n",
        );
    }
    let uncovered = uncovered_line(checkpoints, "checkpoints", "files over the size limit");
    if !uncovered.is_empty() {
        text.push_str(&uncovered);
        text.push('\n');
    }
    if checkpoints.coverage() == Coverage::FileTools {
        text.push_str(checkpoints.coverage().note());
        text.push('\n');
    }
    Ok(ToolOutput::ok(text.trim_end().to_owned())
        .with_meta("session", id.to_owned())
        .with_meta("steps", serde_json::Value::Array(listed)))
}

fn kind(step: &Step) -> &'static str {
    match step.kind {
        StepKind::Turn => "turn",
        StepKind::Undo { .. } => "undo",
        StepKind::Redo { .. } => "redo",
    }
}

/// What a step was, in words.
fn what(step: &Step, steps: &[Step]) -> String {
    let turn_of = |id: &String| {
        steps
            .iter()
            .find(|s| &s.id == id)
            .map_or_else(|| "?".to_owned(), |s| s.turn.to_string())
    };
    match &step.kind {
        StepKind::Turn => "changed files".to_owned(),
        StepKind::Undo { targets } => {
            let turns: Vec<String> = targets.iter().map(turn_of).collect();
            let mut text = format!(
                "undo of turn{} {}",
                if turns.len() == 1 { "" } else { "s" },
                turns.join(", ")
            );
            if !step.left_alone.is_empty() {
                text.push_str(&format!(
                    " (left alone, changed since: {})",
                    step.left_alone
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            text
        }
        StepKind::Redo { target } => format!(
            "redo of the undo {}",
            steps
                .iter()
                .position(|s| &s.id == target)
                .map_or_else(|| short(target), |n| format!("at step {}", n + 1))
        ),
    }
}

fn counts(file: &crate::FileStat) -> String {
    match (file.added, file.removed) {
        (Some(added), Some(removed)) => format!("+{added} -{removed}"),
        _ => "(binary)".to_owned(),
    }
}

fn short(id: &str) -> String {
    id.chars().take(12).collect()
}

/// Undo this MCP session's changes: the newest turn (a tool call that changed files) not
/// undone yet, or every turn from `turn` on. Files it created are deleted, files it deleted
/// come back, contents and modes are restored. A file changed since by someone else (the
/// user, another session) is left alone and listed; call again with `force: true` to
/// overwrite it. The undo is a step of its own (see checkpoint_list).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CheckpointRestoreInput {
    /// Undo every turn from this one on (the turn numbers checkpoint_list shows); default: only
    /// the newest turn not undone yet.
    pub turn: Option<u32>,
    /// Also overwrite files changed since the turn by someone else (default: false).
    pub force: Option<bool>,
}

impl CheckpointRestoreInput {
    fn target(&self) -> UndoTarget {
        self.turn.map_or(UndoTarget::Last, UndoTarget::Since)
    }

    fn force(&self) -> Force {
        if self.force == Some(true) {
            Force::Yes
        } else {
            Force::No
        }
    }
}

/// The `checkpoint_restore` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct CheckpointRestoreTool;

impl Tool for CheckpointRestoreTool {
    const NAME: &'static str = "checkpoint_restore";
    type Input = CheckpointRestoreInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn hints(&self) -> ToolHints {
        hints_for(ToolKind::Edit)
    }

    /// The files it would put back, as writes: the policy judges a restore as it judges any
    /// other change to those files.
    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let Some(state) = session.existing_extension::<SessionCheckpoints>() else {
            return vec![Effect::OwnState { changes: false }];
        };
        let Ok(checkpoints) = state.checkpoints(session) else {
            // Nothing can be restored: the call only says why.
            return vec![Effect::OwnState { changes: false }];
        };
        match checkpoints.undo_paths(input.target(), input.force()) {
            Ok(paths) if paths.is_empty() => vec![Effect::OwnState { changes: false }],
            Ok(paths) => paths
                .into_iter()
                .map(|path| Effect::Write {
                    path: path.display().to_string(),
                })
                .collect(),
            Err(err) => vec![Effect::Unknown {
                what: format!("a restore of checkpoints whose files cannot be listed ({err})"),
            }],
        }
    }

    fn title(&self, input: &Self::Input) -> String {
        let what = match input.turn {
            Some(n) => format!("turns {n}+"),
            None => "the newest turn".to_owned(),
        };
        let force = if input.force == Some(true) {
            " (force)"
        } else {
            ""
        };
        format!("{} {what}{force}", Self::NAME)
    }

    async fn run(&self, input: Self::Input, ctx: ToolContext) -> ToolResult {
        let Some(state) = ctx.session.existing_extension::<SessionCheckpoints>() else {
            return Err(ToolError::new(
                "this session keeps no checkpoints: nothing to restore",
            ));
        };
        let checkpoints = state.checkpoints(&ctx.session).map_err(ToolError::new)?;
        let (target, force) = (input.target(), input.force());
        tokio::task::spawn_blocking(move || restore(&checkpoints, target, force))
            .await
            .or_model(|err| format!("checkpoint_restore stopped: {err}"))?
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "runs on a blocking thread (spawn_blocking in CheckpointRestoreTool::run)"
)]
fn restore(checkpoints: &Checkpoints, target: UndoTarget, force: Force) -> ToolResult {
    let restored = match checkpoints.undo(target, force) {
        Ok(Ok(restored)) => restored,
        Ok(Err(nothing)) => return Err(ToolError::new(nothing.to_string())),
        Err(err) => return Err(ToolError::new(format!("the restore failed: {err}"))),
    };
    let turns = restored
        .turns
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>();
    let mut text = format!(
        "undid turn{} {}: {} file{} put back\n",
        if turns.len() == 1 { "" } else { "s" },
        turns.join(", "),
        restored.restored.len(),
        if restored.restored.len() == 1 {
            ""
        } else {
            "s"
        }
    );
    let lines = |paths: &[PathBuf]| -> String {
        paths
            .iter()
            .map(|p| format!("  {}\n", p.display()))
            .collect()
    };
    text.push_str(&lines(&restored.restored));
    if !restored.others.is_empty() {
        text.push_str("left alone, changed by another session:\n");
        text.push_str(&lines(&restored.others));
    }
    if !restored.failed.is_empty() {
        text.push_str("could not put back:\n");
        for (path, why) in &restored.failed {
            text.push_str(&format!("  {}: {why}\n", path.display()));
        }
    }
    if !restored.conflicts.is_empty() {
        text.push_str(
            "left alone, changed since by someone else (call checkpoint_restore again with \
             \"force\": true to overwrite them):\n",
        );
        text.push_str(&lines(&restored.conflicts));
    }
    let uncovered = uncovered_line(checkpoints, "checkpoints", "files over the size limit");
    if !uncovered.is_empty() {
        text.push_str(&uncovered);
    }
    let paths = |paths: &[PathBuf]| -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    };
    let failed: Vec<PathBuf> = restored.failed.iter().map(|(p, _)| p.clone()).collect();
    let text = text.trim_end().to_owned();
    let output = if restored.conflicts.is_empty() && restored.failed.is_empty() {
        ToolOutput::ok(text)
    } else {
        ToolOutput::error(text)
    };
    output
        .with_meta("restored", paths(&restored.restored))
        .with_meta("conflicts", paths(&restored.conflicts))
        .with_meta("failed", paths(&failed))
        .with_meta("step", restored.step.clone())
        // Files left alone or not put back: an error the model reads, with what was restored.
        .into_result()
}

#[cfg(test)]
mod tests {
    use super::*;

    use lathe_runtime::dispatch::{Gate, Verdict};
    use lathe_runtime::{ApprovalMode, PermissionsConfig, ToolConfig, Workspace};

    /// A session whose checkpoints hold one turn that wrote `notes.txt`.
    #[expect(clippy::disallowed_methods, reason = "a synchronous test fixture")]
    fn session_with_a_turn(dirs: &tempfile::TempDir) -> Arc<Session> {
        let ws = dirs.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let checkpoints = Checkpoints::builder(dirs.path().join("data"), &ws, "s1")
            .build()
            .unwrap();
        checkpoints.before_change(1).unwrap();
        std::fs::write(ws.join("notes.txt"), "new\n").unwrap();
        checkpoints.after_turn(1).unwrap().expect("a step");
        let session = Session::new(
            Workspace::new(&ws).unwrap(),
            ToolConfig::default(),
            dirs.path().join("state"),
        )
        .unwrap();
        let checkpoints = Arc::new(checkpoints);
        SessionCheckpoints::of(
            &session,
            Box::new(move |_| Ok((Arc::clone(&checkpoints), "s1".to_owned()))),
        );
        session
    }

    fn verdict(mode: ApprovalMode, session: &Arc<Session>) -> Verdict {
        let mut registry = Registry::new();
        register(&mut registry);
        let call = registry
            .prepare("checkpoint_restore", json!({}), session)
            .unwrap();
        let gate = Gate::with_permissions(
            &PermissionsConfig::default(),
            mode,
            session.workspace().root(),
            false,
        )
        .unwrap();
        gate.check(&call, session)
    }

    #[test]
    fn a_restore_is_judged_as_writes_to_the_files_it_puts_back() {
        let dirs = tempfile::tempdir().unwrap();
        let session = session_with_a_turn(&dirs);
        let mut registry = Registry::new();
        register(&mut registry);
        let call = registry
            .prepare("checkpoint_restore", json!({}), &session)
            .unwrap();
        assert_eq!(
            call.effects,
            vec![Effect::Write {
                path: "notes.txt".into()
            }]
        );
        assert!(matches!(
            verdict(ApprovalMode::ReadOnly, &session),
            Verdict::Deny { .. }
        ));
        assert!(matches!(
            verdict(ApprovalMode::Auto, &session),
            Verdict::Allow
        ));
        assert!(matches!(
            verdict(ApprovalMode::Ask, &session),
            Verdict::Ask { .. }
        ));
    }

    #[test]
    fn the_checkpoint_tools_are_known_by_their_registered_names() {
        let mut registry = Registry::new();
        register(&mut registry);
        assert!(registry.definition("checkpoint_list").is_some());
        assert!(registry.definition("checkpoint_restore").is_some());
        assert!(is_checkpoint_tool("checkpoint_restore"));
        assert!(!is_checkpoint_tool("write_file"));
    }
}
