//! `[hooks]` in the front ends: the dispatcher runs the tool events (`PreToolUse`,
//! `PostToolUse`) for the agent and for `lathe mcp`'s clients alike; `SessionStart`,
//! `UserPromptSubmit` and `Stop` run here, around a prompt of `lathe exec` or `lathe chat`.
//! The hooks and their answers are described in [`lathe_runtime::hooks`].

use std::sync::Arc;

use lathe_agent::Agent;
use lathe_agent::events::RunStatus;
use lathe_agent::executor::RunOutcome;
use lathe_runtime::hooks::{HookEvent, ProjectHooks};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::setup::Setup;

/// How many times in a row a `Stop` hook may send the model back to work on one prompt.
pub const MAX_STOP_CONTINUATIONS: u32 = 3;

/// The configured hooks for a session with id `session_id`, their notes on stderr; `None` when
/// none are configured. A bad entry is an error that names it.
pub fn load(setup: &Setup, session_id: &str) -> anyhow::Result<Option<Arc<ProjectHooks>>> {
    if setup.config.hooks.is_empty() {
        return Ok(None);
    }
    let root = setup
        .root
        .canonicalize()
        .unwrap_or_else(|_| setup.root.clone());
    let notes = Arc::new(|note: &str| eprintln!("lathe: hook: {note}"));
    ProjectHooks::new(&setup.config.hooks, root, session_id, notes)
        .map(|hooks| Some(Arc::new(hooks)))
        .map_err(|err| anyhow::anyhow!("invalid configuration: {err}"))
}

/// The hooks of one front-end session around its prompts.
#[derive(Debug)]
pub struct PromptHooks {
    hooks: Option<Arc<ProjectHooks>>,
    /// The `SessionStart` source, until those hooks ran.
    start: Option<String>,
    /// The `SessionStart` context, until a prompt is accepted.
    waiting: Vec<String>,
}

impl PromptHooks {
    /// The hooks of a session opened as `source` (`startup`, `resume` or `clear`): its
    /// `SessionStart` hooks run before its first prompt.
    pub fn new(hooks: Option<Arc<ProjectHooks>>, source: &str) -> PromptHooks {
        PromptHooks {
            hooks,
            start: Some(source.to_owned()),
            waiting: Vec::new(),
        }
    }

    /// Runs `task` on `agent`: `UserPromptSubmit` first (`Err` with the reason when a hook
    /// refuses the prompt; the model never sees it), its context and the `SessionStart`
    /// context after the prompt; then, while a `Stop` hook blocks the end (at most
    /// [`MAX_STOP_CONTINUATIONS`] times), the model is told to go on with the hook's reason.
    pub async fn run(
        &mut self,
        agent: &mut Agent,
        task: &str,
        images: Vec<lathe_agent::message::Image>,
        cancel: &CancellationToken,
    ) -> Result<RunOutcome, String> {
        let Some(hooks) = self.hooks.clone() else {
            return Ok(agent.run_with_images(task, images, cancel).await);
        };
        if let Some(source) = self.start.take()
            && hooks.has(HookEvent::SessionStart)
        {
            let answer = hooks
                .run(HookEvent::SessionStart, None, json!({ "source": source }))
                .await;
            self.waiting = answer.context;
        }
        let mut context = Vec::new();
        if hooks.has(HookEvent::UserPromptSubmit) {
            let answer = hooks
                .run(HookEvent::UserPromptSubmit, None, json!({ "prompt": task }))
                .await;
            if let Some(reason) = answer.block {
                return Err(reason);
            }
            context = answer.context;
        }
        let mut prompt = task.to_owned();
        for text in std::mem::take(&mut self.waiting).into_iter().chain(context) {
            prompt.push_str(&format!("\n\n[hook context] {text}"));
        }
        let mut outcome = agent.run_with_images(&prompt, images, cancel).await;
        let mut continued = 0;
        while outcome.status == RunStatus::Finished && hooks.has(HookEvent::Stop) {
            let answer = hooks
                .run(
                    HookEvent::Stop,
                    None,
                    json!({
                        "stop_hook_active": continued > 0,
                        "last_assistant_message": outcome.answer,
                    }),
                )
                .await;
            let Some(reason) = answer.block else { break };
            if continued == MAX_STOP_CONTINUATIONS {
                eprintln!(
                    "lathe: hook: a Stop hook blocked the end {} times in a row; the run ends \
                     here (its last reason: {})",
                    continued + 1,
                    lathe_runtime::text::one_line(&reason, 200)
                );
                break;
            }
            continued += 1;
            outcome = agent
                .run(
                    &format!("A Stop hook asks you to continue before you finish: {reason}"),
                    cancel,
                )
                .await;
        }
        Ok(outcome)
    }
}
