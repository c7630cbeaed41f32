//! Pending actions: a change a tool previewed and left for an explicit decision.
//!
//! A previewing tool (`ast_edit`, `apply_patch` with `preview: true`, an embedder's tool) works
//! out what it would change, shows it, and pushes a [`PendingAction`] onto the session's stack
//! ([`Session::push_pending`]). The `resolve` tool takes the newest one: `apply` runs it,
//! `discard` drops it. Nothing is written before that.
//!
//! An action made from a [`Plan`] ([`PendingAction::from_plan`]) keeps the plan's guarantees:
//! its files are checked against the stamps the preview was computed from (a file changed since
//! refuses the apply, naming it), the apply is all or nothing, and `resolve` is judged by the
//! approval policy as those writes, with their diffs shown, and snapshotted by checkpoints like
//! any change. An embedder's own action ([`PendingAction::custom`]) says what it does as
//! [`Effect`]s, which the policy judges the same way.

use std::future::Future;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::meta::FileChange;
use crate::session::{Session, lock};
use crate::tool::{Effect, Plan, ToolContext, ToolOutput};

/// What `resolve` answers when nothing is pending.
pub const NOTHING_PENDING: &str = "No pending action to resolve. Nothing to apply or discard.";

/// What pushing answers in a runtime whose sessions keep no pending actions.
pub const PENDING_UNAVAILABLE: &str =
    "Pending action store unavailable for custom tools in this runtime.";

type ApplyFn = Box<dyn FnOnce(String, ToolContext) -> BoxFuture<'static, ToolOutput> + Send>;
type RejectFn = Box<dyn FnOnce(String) -> ToolOutput + Send>;

enum Apply {
    Plan(Box<Plan>),
    Custom {
        effects: Vec<Effect>,
        apply: ApplyFn,
    },
}

/// A previewed change waiting for `resolve`.
pub struct PendingAction {
    label: String,
    source: String,
    details: Option<String>,
    apply: Apply,
    reject: Option<RejectFn>,
}

impl std::fmt::Debug for PendingAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingAction")
            .field("label", &self.label)
            .field("source", &self.source)
            .field("details", &self.details)
            .finish_non_exhaustive()
    }
}

impl PendingAction {
    /// An action that applies `plan`: the stamps it was computed against are checked when it
    /// is applied, its files are written all or nothing, and the approval policy judges its
    /// writes. `plan.output` is what `resolve` answers once it is applied (an empty text
    /// becomes `Applied: <label>`).
    pub fn from_plan(label: impl Into<String>, source: impl Into<String>, plan: Plan) -> Self {
        PendingAction {
            label: label.into(),
            source: source.into(),
            details: None,
            apply: Apply::Plan(Box::new(plan)),
            reject: None,
        }
    }

    /// An embedder's action. `effects` is what applying it does, as the approval policy judges
    /// it (say [`Effect::Write`] for each file it writes); `apply` gets the reason given to
    /// `resolve` and the call's context, and its result is what the model reads.
    pub fn custom<F, Fut>(
        label: impl Into<String>,
        source: impl Into<String>,
        effects: Vec<Effect>,
        apply: F,
    ) -> Self
    where
        F: FnOnce(String, ToolContext) -> Fut + Send + 'static,
        Fut: Future<Output = ToolOutput> + Send + 'static,
    {
        PendingAction {
            label: label.into(),
            source: source.into(),
            details: None,
            apply: Apply::Custom {
                effects,
                apply: Box::new(move |reason, ctx| apply(reason, ctx).boxed()),
            },
            reject: None,
        }
    }

    /// What `resolve` runs on `discard` (clean-up, a message): its result replaces the
    /// default `Discarded: <label>`.
    pub fn with_reject(
        mut self,
        reject: impl FnOnce(String) -> ToolOutput + Send + 'static,
    ) -> Self {
        self.reject = Some(Box::new(reject));
        self
    }

    /// More about the action, for people (shown by `/pending` and in listings).
    pub fn with_details(mut self, details: impl Into<String>) -> Self {
        self.details = Some(details.into());
        self
    }

    /// The short human-readable summary.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The tool that made it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The details, if any.
    pub fn details(&self) -> Option<&str> {
        self.details.as_deref()
    }

    /// The changes it would make, when it applies a plan (empty for an embedder's own action).
    pub fn changes(&self) -> Vec<FileChange> {
        match &self.apply {
            Apply::Plan(plan) => plan.changes().cloned().collect(),
            Apply::Custom { .. } => Vec::new(),
        }
    }

    /// What applying it does, as the approval policy judges it.
    pub fn effects(&self) -> Vec<Effect> {
        match &self.apply {
            Apply::Plan(plan) => plan
                .writes
                .iter()
                .map(|write| {
                    let path = write.change.path.clone();
                    if write.remove || write.before.is_none() {
                        Effect::Write { path }
                    } else {
                        Effect::Edit { path }
                    }
                })
                .collect(),
            Apply::Custom { effects, .. } => effects.clone(),
        }
    }

    fn summary(&self, id: u64) -> PendingSummary {
        PendingSummary {
            id,
            label: self.label.clone(),
            source: self.source.clone(),
            details: self.details.clone(),
            changes: self.changes(),
        }
    }

    /// Applies the action (for `resolve`; a plan's action is applied through the call
    /// pipeline's plan instead, see [`Session::pending_plan`]).
    pub async fn run_apply(self, reason: String, ctx: ToolContext) -> ToolOutput {
        let label = self.label;
        match self.apply {
            Apply::Plan(mut plan) => {
                plan.from_pending = None;
                let session = std::sync::Arc::clone(&ctx.session);
                let output = tokio::task::spawn_blocking(move || plan.apply(&session))
                    .await
                    .unwrap_or_else(|err| {
                        ToolOutput::error(format!("applying {label} stopped unexpectedly: {err}"))
                    });
                applied_text(output, &label)
            }
            Apply::Custom { apply, .. } => apply(reason, ctx).await,
        }
    }

    /// Discards the action: its reject callback's result, or `Discarded: <label>`.
    pub fn run_reject(self, reason: String) -> ToolOutput {
        match self.reject {
            Some(reject) => reject(reason),
            None => ToolOutput::ok(format!("Discarded: {}", self.label)),
        }
    }
}

/// The text a plan's result reads when it was empty.
pub fn applied_text(mut output: ToolOutput, label: &str) -> ToolOutput {
    if output.text.is_empty() && !output.is_error {
        output.text = format!("Applied: {label}");
    }
    output
}

/// One pending action as front ends list it.
#[derive(Debug, Clone, PartialEq)]
pub struct PendingSummary {
    /// Its number in the session (unique, growing).
    pub id: u64,
    /// The short summary.
    pub label: String,
    /// The tool that made it.
    pub source: String,
    /// More about it, if the tool said.
    pub details: Option<String>,
    /// The changes it would make (for a plan's action).
    pub changes: Vec<FileChange>,
}

/// A session's pending actions, newest last.
#[derive(Debug)]
pub(crate) struct PendingStack {
    enabled: bool,
    next: u64,
    entries: Vec<(u64, PendingAction)>,
}

impl Default for PendingStack {
    fn default() -> Self {
        PendingStack {
            enabled: true,
            next: 1,
            entries: Vec::new(),
        }
    }
}

impl Session {
    /// Pushes `action` onto the session's stack of pending actions (the newest is resolved
    /// first). `Ok` holds a notice for the model, to add to the previewing tool's result: that
    /// nothing changed yet and that `resolve` decides. `Err` is [`PENDING_UNAVAILABLE`] when
    /// this runtime keeps no pending actions ([`Session::set_pending_store`]).
    pub fn push_pending(&self, action: PendingAction) -> Result<String, String> {
        let mut stack = lock(&self.pending);
        if !stack.enabled {
            return Err(PENDING_UNAVAILABLE.to_owned());
        }
        let id = stack.next;
        stack.next += 1;
        let label = action.label.clone();
        stack.entries.push((id, action));
        let waiting = stack.entries.len();
        let mut notice = format!(
            "Nothing has been changed yet: this is a preview, now pending as \"{label}\". Call \
             `resolve` with action \"apply\" to make the change, or \"discard\" to drop it, \
             before anything else."
        );
        if waiting > 1 {
            notice.push_str(&format!(
                " {waiting} actions are pending; `resolve` takes the newest first."
            ));
        }
        Ok(notice)
    }

    /// True when an action is pending.
    pub fn has_pending(&self) -> bool {
        !lock(&self.pending).entries.is_empty()
    }

    /// The pending actions, oldest first (the last is the one `resolve` takes).
    pub fn pending_summaries(&self) -> Vec<PendingSummary> {
        lock(&self.pending)
            .entries
            .iter()
            .map(|(id, action)| action.summary(*id))
            .collect()
    }

    /// Whether this session keeps pending actions (by default it does). A runtime without them
    /// makes [`Session::push_pending`] fail with [`PENDING_UNAVAILABLE`]; turning the store off
    /// drops what was pending.
    pub fn set_pending_store(&self, enabled: bool) {
        let mut stack = lock(&self.pending);
        stack.enabled = enabled;
        if !enabled {
            stack.entries.clear();
        }
    }

    /// The newest action's number and what applying it does.
    pub fn newest_pending(&self) -> Option<(u64, Vec<Effect>, String)> {
        lock(&self.pending)
            .entries
            .last()
            .map(|(id, action)| (*id, action.effects(), action.label.clone()))
    }

    /// The plan of pending action `id`, when it applies one, ready for the call pipeline to
    /// apply (it leaves the stack when applied). `None` for an embedder's own action or one that
    /// is gone.
    pub fn pending_plan(&self, id: u64) -> Option<Plan> {
        let stack = lock(&self.pending);
        let (_, action) = stack.entries.iter().find(|(i, _)| *i == id)?;
        match &action.apply {
            Apply::Plan(plan) => {
                let mut plan = Plan::clone(plan);
                plan.from_pending = Some(id);
                plan.output = applied_text(plan.output, &action.label);
                Some(plan)
            }
            Apply::Custom { .. } => None,
        }
    }

    /// Takes pending action `id` off the stack.
    pub fn take_pending(&self, id: u64) -> Option<PendingAction> {
        let mut stack = lock(&self.pending);
        let at = stack.entries.iter().position(|(i, _)| *i == id)?;
        Some(stack.entries.remove(at).1)
    }

    /// Drops pending action `id`, if it is still there.
    pub fn drop_pending(&self, id: u64) {
        drop(self.take_pending(id));
    }
}

/// Says what is still pending after a call resolved one, so that the model resolves the rest.
pub fn add_still_pending(output: &mut ToolOutput, session: &Session) {
    let waiting = session.pending_summaries();
    if let Some(next) = waiting.last() {
        output.text.push_str(&format!(
            "\n{} more pending; the next `resolve` takes \"{}\" (from {}).",
            waiting.len(),
            next.label,
            next.source
        ));
    }
}
