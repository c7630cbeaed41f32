//! One stored session of the chat and the turns run in it: opened (at the start, on
//! `--resume`, after `/clear`), a message sent (its title, images, notes, a project command's
//! model and tools, Ctrl-C), and closed.

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use lathe_agent::Agent;
use lathe_agent::approval::ApprovalMode;
use lathe_agent::sink::EventSink;
use lathe_runtime::Session;
use lathe_store::{SessionId, SessionStatus};

use super::approver::{self, TerminalApprover};
use super::commands;
use super::input::Input;
use super::interrupt::{Interrupts, Rearm, end_on_termination, exit_now};
use super::say;
use crate::render::Renderer;
use lathe_config::agent_setup;
use lathe_config::project_commands::ProjectCommand;
use lathe_config::setup::Setup;

/// One stored session of the chat and what runs in it: `/clear` ends it and opens another.
pub(super) struct Live {
    pub(super) id: SessionId,
    pub(super) tools: Arc<Session>,
    pub(super) sink: EventSink,
    pub(super) agent: Agent,
    /// Ends the session on SIGTERM or SIGHUP.
    terminating: tokio::task::JoinHandle<()>,
    /// `[hooks]` around each prompt (SessionStart, UserPromptSubmit, Stop).
    prompt_hooks: lathe_config::hooks::PromptHooks,
    /// Whether the session has its title (from the first message).
    pub(super) titled: bool,
    /// What the user did between messages that the model should hear of (`/apply`).
    pub(super) notes: Vec<String>,
    // Held until the session ends, however it ends: `lathe sessions` sees whether it runs.
    _owner: agent_setup::SessionOwner,
}

/// What a session is opened with.
pub(super) struct Parts<'a> {
    pub(super) setup: &'a Setup,
    pub(super) provider: &'a Arc<dyn lathe_agent::provider::Provider>,
    pub(super) store: &'a lathe_store::Store,
    pub(super) renderer: &'a Arc<Renderer>,
    pub(super) input: &'a Arc<Input>,
    pub(super) terminate: &'a CancellationToken,
    /// The running turn, for a Ctrl-C at an approval question.
    pub(super) turn: &'a approver::CurrentTurn,
    /// The tools, the configured MCP servers' among them (started once per chat).
    pub(super) registry: &'a Arc<lathe_runtime::Registry>,
}

impl Parts<'_> {
    /// Opens session `id`, with `model` and approval `mode`, set up as `resolved` says (its
    /// window is the one `/model` last asked for); `source` is what its `SessionStart` hooks
    /// are told: `startup`, `resume` or `clear`.
    pub(super) fn open(
        &self,
        resolved: &agent_setup::Resolved,
        id: SessionId,
        model: &str,
        mode: ApprovalMode,
        source: &str,
    ) -> anyhow::Result<Live> {
        let hooks = lathe_config::hooks::load(self.setup, id.as_str())?;
        let tools = agent_setup::tool_session(self.setup, &id)?;
        let owner = agent_setup::own_session(&id)?;
        let sink = EventSink::new(self.store.clone(), id.clone(), self.renderer.handler());
        let approver = Arc::new(
            TerminalApprover::new(
                Arc::clone(self.input),
                Arc::clone(self.renderer),
                sink.clone(),
            )
            .stopping(Arc::clone(self.turn)),
        );
        let builder = resolved.with_checkpoints(
            resolved
                .configure(Agent::builder(
                    Arc::clone(self.provider),
                    model.to_owned(),
                    Arc::clone(&tools),
                ))
                .registry(Arc::clone(self.registry)),
            self.setup,
            &id,
            agent_setup::stored_turns(self.store, &id),
            &sink,
        );
        let builder = match &hooks {
            Some(hooks) => builder.hook(Arc::clone(hooks) as Arc<dyn lathe_runtime::Hook>),
            None => builder,
        };
        let agent = agent_setup::build(
            builder
                .approval(mode)
                .permissions(self.setup.config.permissions.clone())
                .approver(approver)
                .sink(sink.clone()),
        )?;
        let terminating =
            end_on_termination(Arc::clone(&tools), sink.clone(), self.terminate.clone());
        Ok(Live {
            id,
            tools,
            sink,
            agent,
            terminating,
            prompt_hooks: lathe_config::hooks::PromptHooks::new(hooks, source),
            titled: false,
            notes: Vec::new(),
            _owner: owner,
        })
    }
}

impl Parts<'_> {
    /// `/clear`: ends `live` and opens a new session with its model and approval mode.
    pub(super) fn clear(
        &self,
        resolved: &agent_setup::Resolved,
        live: Live,
    ) -> anyhow::Result<Live> {
        let model = live.agent.model().to_owned();
        let mode = live.agent.gate().mode();
        live.close(self.store);
        drop(live);
        let mut resolved = resolved.clone();
        resolved.approval = mode;
        let id = agent_setup::create_session(self.store, self.setup, &resolved, &model, None)?;
        let live = self.open(&resolved, id, &model, mode, "clear")?;
        let style = self.renderer.style();
        // A clear screen, where there is a screen; the new session's id either way.
        if std::io::stdout().is_terminal() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(b"\x1b[H\x1b[2J");
            let _ = out.flush();
        }
        say(&style.dim(&format!(
            "── new conversation · session {} · {model} · approval {mode}",
            live.id
        )));
        Ok(live)
    }
}

impl Live {
    /// Ends the session at the prompt: its commands stop, and it is done, not running.
    pub(super) fn close(&self, store: &lathe_store::Store) {
        // Pending changes live in this process only: say which go, rather than drop them
        // unseen.
        let waiting = self.tools.pending_summaries();
        if !waiting.is_empty() {
            let labels: Vec<String> = waiting
                .iter()
                .map(|p| format!("\"{}\"", crate::render::sanitize(&p.label)))
                .collect();
            say(&format!(
                "dropped {} pending (nothing of {} was written): {}",
                if waiting.len() == 1 {
                    "1 change".to_owned()
                } else {
                    format!("{} changes", waiting.len())
                },
                if waiting.len() == 1 { "it" } else { "them" },
                labels.join(", ")
            ));
        }
        self.terminating.abort();
        self.tools.shutdown();
        if let Ok(session) = store.session(self.id.as_str())
            && session.status == SessionStatus::Running
        {
            let _ = store.update_session_status(&self.id, SessionStatus::Completed);
        }
    }
}

/// What one message's turn changes: the session it runs in, the model set-up (a project
/// command may switch the model for it), and the Ctrl-C state.
pub(super) struct Turn<'a> {
    pub(super) live: &'a mut Live,
    pub(super) resolved: &'a mut agent_setup::Resolved,
    pub(super) interrupts: &'a mut Interrupts,
    pub(super) rearm: &'a mut Rearm,
}

impl Parts<'_> {
    /// Runs `task` in the session: titles the session after its first message, attaches the
    /// images it names, tells the model what the user did since the last message, and runs it
    /// (as `project_run`, when a project command gave it). Ctrl-C once stops the turn, twice
    /// exits.
    pub(super) async fn send(
        &self,
        turn: &mut Turn<'_>,
        task: &str,
        project_run: Option<&ProjectCommand>,
    ) {
        let style = *self.renderer.style();
        let live = &mut *turn.live;
        if !live.titled {
            if let Err(err) = self
                .store
                .set_title(&live.id, &agent_setup::session_title(task))
            {
                tracing::warn!("cannot title session {}: {err}", live.id);
            }
            live.titled = true;
        }
        self.renderer.reset();
        let cancel = self.terminate.child_token();
        *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = Some(cancel.clone());
        // `@shot.png`: a name that cannot be sent stops the message here, to be fixed.
        let attached = match lathe_agent::attach::attach(
            task,
            self.provider.as_ref(),
            live.agent.model(),
            &live.tools,
        )
        .await
        {
            Ok(attached) => attached,
            Err(message) => {
                *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = None;
                say(&style.yellow(&message));
                return;
            }
        };
        for notice in &attached.notices {
            say(&style.dim(notice));
        }
        let message = with_notes(&mut live.notes, &attached.task);
        let restore_model = match project_run {
            Some(command) => {
                let provider = self.provider.as_ref();
                start_project_run(command, &mut live.agent, turn.resolved, provider, &style).await
            }
            None => None,
        };
        let mut stopping = false;
        let outcome = {
            let run = live
                .prompt_hooks
                .run(&mut live.agent, &message, attached.images, &cancel);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    outcome = &mut run => break outcome,
                    () = turn.interrupts.next() => {
                        if stopping {
                            exit_now(&live.tools, &live.sink);
                        }
                        stopping = true;
                        self.renderer.pause();
                        say(&style.yellow("stopping the turn… (Ctrl-C again to exit)"));
                        cancel.cancel();
                    }
                }
            }
        };
        *self.turn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if project_run.is_some() {
            self.end_project_run(live, turn.resolved, restore_model)
                .await;
        }
        after_turn(live, &outcome, &style);
        // Stopped by Ctrl-C, during the turn or at an approval question.
        if stopping || cancel.is_cancelled() {
            turn.rearm.arm();
        }
    }

    /// After a project command's turn: all the tools again, and the session's model back (with
    /// its window and profile) when the command switched it.
    async fn end_project_run(
        &self,
        live: &mut Live,
        resolved: &mut agent_setup::Resolved,
        restore_model: Option<String>,
    ) {
        live.tools.allow_only(None);
        if let Some(model) = restore_model {
            live.agent.set_model(model.clone());
            if let Some(line) = resolved
                .refit(self.provider.as_ref(), &mut live.agent, &model)
                .await
            {
                say(&self.renderer.style().dim(&line));
            }
        }
    }
}

/// The lines under a turn: the window meter (one dim line), or why a hook refused the prompt;
/// then the changes left pending.
fn after_turn(
    live: &Live,
    outcome: &Result<lathe_agent::executor::RunOutcome, String>,
    style: &crate::render::Style,
) {
    match outcome {
        Ok(outcome) => {
            if let Some(meter) = crate::render::meter_line(&outcome.report) {
                say(&style.dim(&meter));
            }
        }
        Err(reason) => say(&style.yellow(&format!(
            "a UserPromptSubmit hook refused this prompt; the model did not see it: {reason}"
        ))),
    }
    if let Some(hint) = commands::pending_hint(&live.tools) {
        say(&style.yellow(&hint));
    }
}

/// Narrows the tools and switches the model for one run of `command`, with the window the
/// server serves that model with and the prompt profile for it (as `/model` does); the model
/// to go back to after it, when it switched.
async fn start_project_run(
    command: &ProjectCommand,
    agent: &mut Agent,
    resolved: &mut agent_setup::Resolved,
    provider: &dyn lathe_agent::provider::Provider,
    style: &crate::render::Style,
) -> Option<String> {
    lathe_config::project_commands::narrow(command, agent);
    let model = command.model.clone()?;
    let before = agent.model().to_owned();
    say(&format!(
        "/{}: using model {model} for this turn",
        command.name
    ));
    agent.set_model(model.clone());
    if let Some(line) = resolved.refit(provider, agent, &model).await {
        say(&style.dim(&line));
    }
    Some(before)
}

/// The message the model gets for `task`: what the user did since the last one (`/apply`,
/// `/discard`) first, so the model does not go on as if the change still waited.
fn with_notes(notes: &mut Vec<String>, task: &str) -> String {
    if notes.is_empty() {
        return task.to_owned();
    }
    let mut message: String = notes.drain(..).map(|note| format!("[{note}]\n")).collect();
    message.push('\n');
    message.push_str(task);
    message
}
