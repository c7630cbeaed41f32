//! `resolve`: applies or discards the newest pending action (see [`lathe_runtime::PendingAction`]).
//!
//! Offered to the model only while something is pending ([`Tool::offered`]). Applying is
//! judged as the action's own changes: for a previewed plan, the call's plan *is* the preview's
//! plan, so the approval prompt shows its diffs, checkpoints see its files, and the stamps it
//! was computed against are checked before anything is written.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Deserialize;

use lathe_runtime::pending::{NOTHING_PENDING, add_still_pending};
use lathe_runtime::session::Session;
use lathe_runtime::tool::{
    Effect, Plan, Tool, ToolContext, ToolError, ToolHints, ToolKind, ToolResult,
};

/// Apply or discard the newest pending action: a change a tool previewed (`ast_edit`,
/// `apply_patch` with `preview: true`, ...) that waits for this decision. Nothing of it is
/// written before `apply`.
///
/// When several actions are pending, each call resolves the newest one first (last in, first
/// out); call it again for the next.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResolveInput {
    /// `apply` makes the previewed change; `discard` drops it.
    pub action: ResolveAction,
    /// Why, in one short sentence (passed to the action; optional).
    #[serde(default)]
    pub reason: Option<String>,
    /// The pending action this call was judged for (the newest when it was prepared): run
    /// applies that one or none.
    #[serde(skip)]
    #[schemars(skip)]
    judged: OnceLock<Option<u64>>,
}

/// What to do with the pending action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolveAction {
    /// make the previewed change
    Apply,
    /// drop it without changing anything
    Discard,
}

impl ResolveInput {
    /// The newest pending action, as of the first question asked about this call.
    fn judged(&self, session: &Session) -> Option<u64> {
        *self
            .judged
            .get_or_init(|| session.newest_pending().map(|(id, ..)| id))
    }
}

/// The `resolve` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ResolveTool;

impl Tool for ResolveTool {
    const NAME: &'static str = "resolve";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Apply or discard the newest pending change (one a tool previewed); nothing is written before `apply`."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("action", ""), ("reason", "")]);
    type Input = ResolveInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn hints(&self) -> ToolHints {
        ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        }
    }

    fn offered(&self, session: &Session) -> bool {
        session.has_pending()
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let id = input.judged(session);
        match (input.action, session.newest_pending()) {
            (ResolveAction::Apply, Some((newest, effects, label))) if Some(newest) == id => {
                if effects.is_empty() {
                    // An action that did not say what it does is asked about.
                    vec![Effect::Unknown {
                        what: format!("the pending action \"{label}\""),
                    }]
                } else {
                    effects
                }
            }
            (ResolveAction::Discard, Some(_)) => vec![Effect::OwnState { changes: true }],
            _ => vec![Effect::OwnState { changes: false }],
        }
    }

    fn title(&self, input: &Self::Input) -> String {
        match input.action {
            ResolveAction::Apply => format!("{} apply", Self::NAME),
            ResolveAction::Discard => format!("{} discard", Self::NAME),
        }
    }

    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        if input.action != ResolveAction::Apply {
            return None;
        }
        let id = input.judged(session)?;
        session.pending_plan(id).map(Ok)
    }

    async fn run(&self, input: ResolveInput, ctx: ToolContext) -> ToolResult {
        let Some(id) = input.judged(&ctx.session) else {
            return Err(ToolError::new(NOTHING_PENDING));
        };
        let Some(action) = ctx.session.take_pending(id) else {
            return Err(ToolError::new(
                "the pending action this call was meant for was resolved meanwhile; nothing was \
                 done. Call `resolve` again for the one pending now, if any",
            ));
        };
        let reason = input.reason.unwrap_or_default();
        let mut output = match input.action {
            ResolveAction::Apply => action.run_apply(reason, ctx.clone()).await,
            ResolveAction::Discard => action.run_reject(reason),
        };
        add_still_pending(&mut output, &ctx.session);
        output.into_result()
    }
}
