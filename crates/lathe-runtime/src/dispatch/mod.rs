//! The call pipeline: one way from a tool call, as a model or client wrote it, to its result,
//! for every front end (the agent's runner, `lathe mcp`, `lathe tool`). The steps, who calls
//! what and what a plan guarantees are described in the [crate docs](crate#one-call).
//!
//! Each step is public so a front end can put its own work between them (the agent emits
//! events and schedules reads concurrently), and [`Dispatcher::call`] does all three for front
//! ends that do not. Every way a call can end is an [`Outcome`] the model can read: an unknown
//! tool, bad arguments, a denial and a failure alike.

mod approve;
mod gate;

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use approve::{
    ApprovalDecision, ApprovalRequest, Approver, FixedAnswer, NonInteractive, Refuse, denial_text,
    policy_denial_text,
};
pub use gate::{Gate, Judgement, Verdict, analysis_home};

use crate::meta::FileChange;
use crate::registry::{PreparedCall, Registry, plan_off_thread};
use crate::session::Session;
use crate::tool::{Effect, Plan, ToolContext, ToolOutput};

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It ran and succeeded.
    Ok,
    /// It ran (or its plan was made) and reported an error the model can fix.
    Error,
    /// The user or the policy denied it.
    Denied,
    /// Lathe refused it before running (unknown tool, bad arguments, a hook, a repeated call).
    Refused,
    /// It was stopped by the user.
    Cancelled,
}

/// A call's end: how, and the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// How it ended.
    pub status: CallStatus,
    /// The result; `text` is what the model reads.
    pub output: ToolOutput,
}

impl Outcome {
    /// An end with `status` and the model-facing `text` as an error.
    pub fn ended(status: CallStatus, text: impl Into<String>) -> Self {
        Outcome {
            status,
            output: ToolOutput::error(text),
        }
    }

    fn ran(output: ToolOutput, cancel: &CancellationToken) -> Self {
        let status = if cancel.is_cancelled() {
            CallStatus::Cancelled
        } else if output.is_error {
            CallStatus::Error
        } else {
            CallStatus::Ok
        };
        Outcome { status, output }
    }
}

/// What the model reads for a call that never started because the user stopped the turn.
pub const STOPPED_BEFORE_RUNNING: &str =
    "the user stopped this turn before this call ran; it did not run";

/// What a hook sees of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct CallInfo {
    /// The call's id.
    pub call_id: String,
    /// The tool, as registered.
    pub name: String,
    /// The normalised arguments.
    pub arguments: Value,
    /// The call's title.
    pub title: String,
    /// What it does, as the tool said.
    pub effects: Vec<Effect>,
    /// What the gate worked out about it (whether it may change the workspace, the commands it
    /// runs): hooks read this instead of judging the call again.
    pub judgement: Judgement,
}

/// Code that runs around every call, in every front end: checkpoints before a change, project
/// hooks, audit logs. Hooks run in the order they were added.
pub trait Hook: Send + Sync {
    /// Before the call is authorized. `Err` refuses it; the model reads the message.
    fn before(&self, call: &CallInfo, session: &Session) -> Result<(), String> {
        let _ = (call, session);
        Ok(())
    }

    /// Before an authorized call runs, with the changes its plan will make (empty for tools
    /// that do not plan). `Err` stops it; the model reads the message.
    fn before_run(
        &self,
        call: &CallInfo,
        changes: &[FileChange],
        session: &Session,
    ) -> Result<(), String> {
        let _ = (call, changes, session);
        Ok(())
    }

    /// After the call ran, with its result (which the hook may add to).
    fn after(&self, call: &CallInfo, outcome: &mut Outcome, session: &Session) {
        let _ = (call, outcome, session);
    }

    /// Before the gate, for hooks that must wait (a command with a timeout): may refuse the
    /// call, allow it past an ask the user could have answered "always" (never past a denial,
    /// a critical or unsandboxed command or a memory change), or add context for the model.
    fn pre_tool_use<'a>(
        &'a self,
        call: &'a CallInfo,
        session: &'a Session,
    ) -> futures::future::BoxFuture<'a, PreToolAnswer> {
        let _ = (call, session);
        Box::pin(async { PreToolAnswer::default() })
    }

    /// After the call ran and [`Hook::after`], for hooks that must wait; may add to the result.
    fn post_tool_use<'a>(
        &'a self,
        call: &'a CallInfo,
        outcome: &'a mut Outcome,
        session: &'a Session,
    ) -> futures::future::BoxFuture<'a, ()> {
        let _ = (call, outcome, session);
        Box::pin(async {})
    }
}

/// What [`Hook::pre_tool_use`] answered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PreToolAnswer {
    /// The call ends here, with this outcome.
    pub refuse: Option<Outcome>,
    /// The call may skip an ask that the user could have answered "always".
    pub allow: bool,
    /// Appended to the call's result for the model.
    pub context: Vec<String>,
}

/// A call the gate (and, where it asked, the approver) allowed, with its plan.
#[derive(Debug)]
pub struct Authorized {
    call: PreparedCall,
    plan: Option<Plan>,
    info: CallInfo,
    context: Vec<String>,
}

impl Authorized {
    /// The call.
    pub fn call(&self) -> &PreparedCall {
        &self.call
    }

    /// What hooks see of the call.
    pub fn info(&self) -> &CallInfo {
        &self.info
    }

    /// The changes its plan will make (empty for tools that do not plan).
    pub fn changes(&self) -> Vec<FileChange> {
        self.plan
            .as_ref()
            .map(|p| p.changes().cloned().collect())
            .unwrap_or_default()
    }
}

/// Prepares, authorizes and runs calls: the one pipeline of every front end.
pub struct Dispatcher {
    registry: Arc<Registry>,
    gate: Arc<Gate>,
    hooks: Vec<Arc<dyn Hook>>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("registry", &self.registry)
            .field("gate", &self.gate)
            .field("hooks", &self.hooks.len())
            .finish()
    }
}

impl Dispatcher {
    /// A dispatcher over `registry`, deciding with `gate`.
    pub fn new(registry: Arc<Registry>, gate: Arc<Gate>) -> Self {
        Dispatcher {
            registry,
            gate,
            hooks: Vec::new(),
        }
    }

    /// Adds a hook that runs around every call.
    pub fn with_hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// The same pipeline (its gate and hooks) over `registry`: the tools in another profile.
    pub fn with_registry(&self, registry: Arc<Registry>) -> Dispatcher {
        self.with_parts(registry, Arc::clone(&self.gate))
    }

    /// The same hooks over another registry and gate (a sub-agent's).
    pub fn with_parts(&self, registry: Arc<Registry>, gate: Arc<Gate>) -> Dispatcher {
        Dispatcher {
            registry,
            gate,
            hooks: self.hooks.clone(),
        }
    }

    /// The tools.
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// The gate (to switch modes, to remember answers).
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Step one: resolves, normalises, binds; `Err` is a refused call (unknown tool, bad
    /// arguments) with the message the model reads.
    pub fn prepare(
        &self,
        name: &str,
        arguments: Value,
        session: &Session,
    ) -> Result<PreparedCall, Outcome> {
        self.registry
            .prepare(name, arguments, session)
            .map_err(|output| Outcome {
                status: CallStatus::Refused,
                output,
            })
    }

    /// Between steps one and two, for a front end that wants to know before the call is
    /// decided what the gate makes of it ([`PreparedCall::judgement`]): whether it changes
    /// files, the commands it runs. Call it right before [`Dispatcher::authorize`], after the
    /// calls before this one ran (paths are judged as they resolve now); `authorize` judges a
    /// call that was not judged.
    pub fn judge(&self, call: &mut PreparedCall, session: &Session) {
        let judgement = self.gate.judge(call, session);
        call.set_judgement(judgement);
    }

    /// Step two: hooks, the gate, the plan, and the approver where the gate asks. `Err` is how
    /// the call ends without running.
    pub async fn authorize(
        &self,
        mut call: PreparedCall,
        call_id: &str,
        approver: &dyn Approver,
        session: &Arc<Session>,
        cancel: &CancellationToken,
    ) -> Result<Authorized, Outcome> {
        if cancel.is_cancelled() {
            return Err(Outcome::ended(
                CallStatus::Cancelled,
                STOPPED_BEFORE_RUNNING,
            ));
        }
        let judgement = match call.judgement() {
            Some(judgement) => judgement.clone(),
            None => {
                let judgement = self.gate.judge(&call, session);
                call.set_judgement(judgement.clone());
                judgement
            }
        };
        let info = CallInfo {
            call_id: call_id.to_owned(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            title: call.title.clone(),
            effects: call.effects.clone(),
            judgement,
        };
        for hook in &self.hooks {
            hook.before(&info, session)
                .map_err(|message| Outcome::ended(CallStatus::Refused, message))?;
        }
        let mut hook_allow = false;
        let mut context = Vec::new();
        for hook in &self.hooks {
            let answer = tokio::select! {
                answer = hook.pre_tool_use(&info, session) => answer,
                () = cancel.cancelled() => {
                    return Err(Outcome::ended(CallStatus::Cancelled, STOPPED_BEFORE_RUNNING));
                }
            };
            if let Some(outcome) = answer.refuse {
                return Err(outcome);
            }
            hook_allow |= answer.allow;
            context.extend(answer.context);
        }
        let mut verdict = self.gate.check(&call, session);
        // A hook's allow skips only an ask the user could have made "always" (rules to
        // remember); never a denial, a critical or unsandboxed command, or a memory change.
        if hook_allow
            && matches!(&verdict, Verdict::Ask { rules, .. } if !rules.is_empty())
            && !info.judgement.changes_memory
        {
            verdict = Verdict::Allow;
        }
        if let Verdict::Deny { reason } = verdict {
            return Err(Outcome::ended(
                CallStatus::Denied,
                policy_denial_text(&reason),
            ));
        }
        // The plan reads files: only for calls the policy lets run or ask about, and its
        // failure reaches the model only once the call is allowed (an edit of a sensitive file
        // must not show that file's lines unasked).
        let (call, planned) = plan_off_thread(call, Arc::clone(session)).await?;
        let (plan, failure) = match planned {
            Some(Ok(plan)) => (Some(plan), None),
            Some(Err(output)) => (None, Some(output)),
            None => (None, None),
        };
        if let Verdict::Ask { reasons, rules } = verdict {
            let changes: Vec<FileChange> = plan
                .as_ref()
                .map(|p| p.changes().cloned().collect())
                .unwrap_or_default();
            let request = ApprovalRequest {
                call_id: call_id.to_owned(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
                description: describe(&call.title, &changes),
                reasons,
                diff: joined_diff(&changes),
                changes,
                scope: scope(&rules),
                rules: rules.clone(),
                would_fail: failure
                    .as_ref()
                    .map(|f| crate::text::one_line(&f.text, 300)),
            };
            let decision = tokio::select! {
                decision = approver.approve(&request) => decision,
                () = cancel.cancelled() => {
                    return Err(Outcome::ended(CallStatus::Cancelled, STOPPED_BEFORE_RUNNING));
                }
            };
            match decision {
                ApprovalDecision::AllowOnce => {}
                ApprovalDecision::AllowSession => self.gate.allow_for_session(&rules),
                ApprovalDecision::Deny { message } => {
                    return Err(Outcome::ended(
                        CallStatus::Denied,
                        denial_text(message.as_deref()),
                    ));
                }
                ApprovalDecision::Refused { message } => {
                    // The front end's advice (another mode, an allow rule) cannot let a memory
                    // change run unasked.
                    let message = if info.judgement.changes_memory {
                        crate::memory::NOBODY_TO_ASK.to_owned()
                    } else {
                        message
                    };
                    return Err(Outcome::ended(CallStatus::Denied, message));
                }
            }
        }
        if let Some(output) = failure {
            return Err(Outcome {
                status: CallStatus::Error,
                output,
            });
        }
        Ok(Authorized {
            call,
            plan,
            info,
            context,
        })
    }

    /// Step three: runs an authorized call (applies its plan, or runs the tool) with `ctx`.
    /// A call whose `ctx` was cancelled since it was authorized does not start: the user
    /// stopped the turn while it waited (for the approver, for the calls before it).
    pub async fn run(&self, authorized: Authorized, ctx: ToolContext) -> Outcome {
        if ctx.cancel.is_cancelled() {
            return Outcome::ended(CallStatus::Cancelled, STOPPED_BEFORE_RUNNING);
        }
        let Authorized {
            call,
            plan,
            info,
            context,
        } = authorized;
        let changes: Vec<FileChange> = plan
            .as_ref()
            .map(|p| p.changes().cloned().collect())
            .unwrap_or_default();
        let reads_only = info.effects.iter().all(Effect::only_reads);
        if reads_only {
            // Nothing to snapshot before a call that only reads: the hooks answer at once.
            for hook in &self.hooks {
                if let Err(message) = hook.before_run(&info, &changes, &ctx.session) {
                    return Outcome::ended(CallStatus::Refused, message);
                }
            }
        } else if !self.hooks.is_empty() {
            // A hook may snapshot the workspace here (checkpoints): on a blocking thread, not an
            // async worker.
            let (hooks, call_info, session) =
                (self.hooks.clone(), info.clone(), Arc::clone(&ctx.session));
            let checked = tokio::task::spawn_blocking(move || {
                hooks
                    .iter()
                    .try_for_each(|hook| hook.before_run(&call_info, &changes, &session))
            })
            .await
            .unwrap_or_else(|err| {
                Err(format!(
                    "a hook stopped unexpectedly before the call: {err}"
                ))
            });
            if let Err(message) = checked {
                return Outcome::ended(CallStatus::Refused, message);
            }
        }
        let session = Arc::clone(&ctx.session);
        let cancel = ctx.cancel.clone();
        let output = self.registry.run_prepared(call, plan, ctx).await;
        let mut outcome = Outcome::ran(output, &cancel);
        for hook in &self.hooks {
            hook.after(&info, &mut outcome, &session);
        }
        for hook in &self.hooks {
            hook.post_tool_use(&info, &mut outcome, &session).await;
        }
        for context in context {
            outcome
                .output
                .text
                .push_str(&format!("\n\n[hook context] {context}"));
        }
        outcome
    }

    /// The whole pipeline for one call.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        approver: &dyn Approver,
        ctx: ToolContext,
    ) -> Outcome {
        let call = match self.prepare(name, arguments, &ctx.session) {
            Ok(call) => call,
            Err(outcome) => return outcome,
        };
        let call_id = ctx.call_id.clone().unwrap_or_default();
        match self
            .authorize(call, &call_id, approver, &ctx.session, &ctx.cancel)
            .await
        {
            Ok(authorized) => self.run(authorized, ctx).await,
            Err(outcome) => outcome,
        }
    }
}

/// The approval prompt's line: the title, with the planned line counts.
/// What "always" would allow, for people: the rules, a fetch rule as its host
/// (`the host docs.rs (fetch(docs.rs))`), or `this call only`.
fn scope(rules: &[String]) -> String {
    if rules.is_empty() {
        return "this call only".to_owned();
    }
    rules
        .iter()
        .map(|rule| {
            match rule
                .strip_prefix("fetch(")
                .and_then(|r| r.strip_suffix(')'))
            {
                Some(host) => format!("the host {host} ({rule})"),
                None => rule.clone(),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe(title: &str, changes: &[FileChange]) -> String {
    if changes.is_empty() {
        return title.to_owned();
    }
    let added: u64 = changes.iter().map(|c| c.added).sum();
    let removed: u64 = changes.iter().map(|c| c.removed).sum();
    format!("{title} (+{added} -{removed})")
}

fn joined_diff(changes: &[FileChange]) -> Option<String> {
    let diff: String = changes.iter().map(|c| c.diff.as_str()).collect();
    (!diff.is_empty()).then_some(diff)
}
