//! `lathe chat`: an interactive, multi-turn session in the terminal. Output streams as it comes;
//! calls that need approval ask (y / n / a); Ctrl-C once stops the current turn (running
//! commands are killed), twice exits; slash commands show the status, start over, write
//! AGENTS.md, switch the model or the approval mode. `--resume ID` continues a stored session.
//! On a terminal, the input line is a line editor with history (see [`input`]).

pub mod approver;
mod commands;
pub mod input;
pub mod interrupt;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio_util::sync::CancellationToken;

use lathe_agent::Agent;
use lathe_agent::approval::ApprovalMode;
use lathe_agent::sink::{EventSink, stored_history_seqs};
use lathe_runtime::Session;
use lathe_store::{SessionId, SessionStatus};

use crate::cli::CommonArgs;
use crate::render::{OutputMode, Renderer};
use approver::TerminalApprover;
use commands::{Command, Outcome};
use input::{Input, Purpose, Read};
use interrupt::{Interrupts, Rearm, end_on_termination, exit_now};
use lathe_config::agent_setup::{self, ModelArgs};
use lathe_config::project_commands::{Commands, ProjectCommand};
use lathe_config::setup::Setup;

/// `lathe chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    /// Model, server and approval flags.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Continue a stored session (its id, or a unique prefix of it).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// The most model turns per message (default 50, or `[agent] max_turns`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
}

/// Lines of the earlier transcript shown when a session is resumed.
const RESUME_TAIL_LINES: usize = 12;

/// One stored session of the chat and what runs in it: `/clear` ends it and opens another.
struct Live {
    id: SessionId,
    tools: Arc<Session>,
    sink: EventSink,
    agent: Agent,
    /// Ends the session on SIGTERM or SIGHUP.
    terminating: tokio::task::JoinHandle<()>,
    /// `[hooks]` around each prompt (SessionStart, UserPromptSubmit, Stop).
    prompt_hooks: lathe_config::hooks::PromptHooks,
    /// Whether the session has its title (from the first message).
    titled: bool,
    // Held until the session ends, however it ends: `lathe sessions` sees whether it runs.
    _owner: agent_setup::SessionOwner,
}

/// What a session is opened with.
struct Parts<'a> {
    setup: &'a Setup,
    provider: &'a Arc<dyn lathe_agent::provider::Provider>,
    store: &'a lathe_store::Store,
    renderer: &'a Arc<Renderer>,
    input: &'a Arc<Input>,
    terminate: &'a CancellationToken,
    /// The running turn, for a Ctrl-C at an approval question.
    turn: &'a approver::CurrentTurn,
    /// The tools, the configured MCP servers' among them (started once per chat).
    registry: &'a Arc<lathe_runtime::Registry>,
}

impl Parts<'_> {
    /// Opens session `id`, with `model` and approval `mode`, set up as `resolved` says (its
    /// window is the one `/model` last asked for); `source` is what its `SessionStart` hooks
    /// are told: `startup`, `resume` or `clear`.
    fn open(
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
            _owner: owner,
        })
    }
}

impl Parts<'_> {
    /// `/clear`: ends `live` and opens a new session with its model and approval mode.
    fn clear(&self, resolved: &agent_setup::Resolved, live: Live) -> anyhow::Result<Live> {
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
    fn close(&self, store: &lathe_store::Store) {
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

/// Runs `lathe chat`.
pub async fn run(common: &CommonArgs, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let store = crate::sessions_cmd::open_store()?;
    let resumed = match &args.resume {
        Some(id) => Some(store.session(id)?),
        None => None,
    };
    let mut common = common.clone();
    if let (Some(session), None) = (&resumed, &common.workspace) {
        common.workspace = Some(session.workspace.clone());
    }
    let setup = trust_or_not(&common)?;
    let mut model_args = args.model.clone();
    if let Some(session) = &resumed {
        lathe_config::sessions::restore_model_args(&mut model_args, session);
    }
    let mut resolved = agent_setup::resolve(&setup, &model_args, agent_setup::process_env)?;
    if let Some(max_turns) = args.max_turns {
        resolved.max_turns = max_turns;
    }
    let provider = agent_setup::provider(&resolved)?;
    let model = agent_setup::require_model(&resolved, provider.as_ref()).await?;
    let window_note = resolved.fit_window(provider.as_ref(), &model).await;
    let id = match &resumed {
        Some(session) => session.id.clone(),
        None => agent_setup::create_session(&store, &setup, &resolved, &model, None)?,
    };
    let renderer = Renderer::new(OutputMode::Human);
    renderer.set_undo_hints(crate::render::UndoHints::Chat);
    // Before the line editor first reads (see `Interrupts::listen`).
    let mut interrupts = Interrupts::listen();
    let input = Arc::new(Input::with_history(Some(input::history_path())));
    // Each turn's cancellation is a child of this one, which a termination signal cancels.
    let terminate = CancellationToken::new();
    let turn = approver::CurrentTurn::default();
    let (registry, servers) = lathe_mcp::client::with_servers(
        &setup,
        lathe_config::setup::registry(),
        Some(crate::mcp_form::terminal(
            Arc::clone(&input),
            Arc::clone(&renderer),
        )),
    )
    .await;
    let registry = Arc::new(registry);
    let parts = Parts {
        registry: &registry,
        setup: &setup,
        provider: &provider,
        store: &store,
        renderer: &renderer,
        input: &input,
        terminate: &terminate,
        turn: &turn,
    };
    let source = if resumed.is_some() {
        "resume"
    } else {
        "startup"
    };
    let mut live = parts.open(&resolved, id, &model, resolved.approval, source)?;
    let style = *renderer.style();
    live.titled = resumed.as_ref().is_some_and(|s| s.title.is_some());
    if let Some(session) = &resumed {
        let stored = stored_history_seqs(&store, &session.id)?;
        let history: Vec<_> = stored.iter().map(|(m, _)| m.clone()).collect();
        let turns = history
            .iter()
            .filter(|m| matches!(m, lathe_agent::message::Message::User { .. }))
            .count();
        let tail = crate::sessions_cmd::tail(
            &history,
            crate::sessions_cmd::Calls::from_events(&store.events(&session.id)?),
            &style,
            RESUME_TAIL_LINES,
        );
        live.agent.resume_stored(stored);
        say(&style.dim(&format!(
            "resumed session {} ({turns} earlier messages from you)",
            session.id
        )));
        if !tail.is_empty() {
            say(&tail);
        }
    }
    say(&style.dim(&format!(
        "lathe chat · {model} · approval {} · session {}\nType a task, /help for commands and keys, Ctrl-C to stop a turn, Ctrl-D to exit.",
        live.agent.gate().mode(),
        live.id
    )));
    if let Some(message) = window_note {
        live.sink
            .emit(lathe_agent::events::Event::Notice { message });
        live.sink.flush().await;
    }

    let prompt = style.bold("> ");
    // Set by a Ctrl-C (one that stopped a turn, or one at an empty prompt): the next Ctrl-C
    // within the window, with nothing typed in between, exits.
    let mut rearm = Rearm::new();
    // What the user did between messages that the model should hear of (`/apply`).
    let mut notes: Vec<String> = Vec::new();
    loop {
        let read = loop {
            tokio::select! {
                read = input.read(&prompt, Purpose::Message) => match read {
                    // Ctrl-C read as a key at an empty prompt (the line editor's terminal).
                    Read::Interrupted { typed } => {
                        if rearm.armed() && !typed {
                            exit_now(&live.tools, &live.sink);
                        }
                        rearm.arm();
                        say(&style.dim("(press Ctrl-C again to exit, or type /exit)"));
                    }
                    read => break read,
                },
                // SIGINT: Ctrl-C where the terminal is not the line editor's (a pipe).
                () = interrupts.next() => {
                    if rearm.armed() {
                        exit_now(&live.tools, &live.sink);
                    }
                    rearm.arm();
                    say(&style.dim("\n(press Ctrl-C again to exit, or type /exit)"));
                }
            }
        };
        rearm.disarm();
        let Read::Line(line) = read else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let mut project_run: Option<ProjectCommand> = None;
        let task = match Command::parse(line) {
            // Not a built-in: a project command, when one has the name.
            Some(Command::Unknown(_))
                if let Some((command, args)) = Commands::load(&setup.root).invocation(line) =>
            {
                project_run = Some(command.clone());
                command.expand(args)
            }
            Some(command) => {
                let cx = commands::Context {
                    agent: &mut live.agent,
                    provider: provider.as_ref(),
                    store: &store,
                    setup: &setup,
                    resolved: &mut resolved,
                    session: &live.id,
                    style: &style,
                    notes: &mut notes,
                };
                match commands::apply(command, cx).await {
                    Outcome::Continue => continue,
                    Outcome::Exit => break,
                    Outcome::Clear => {
                        notes.clear();
                        live = parts.clear(&resolved, live)?;
                        continue;
                    }
                    Outcome::Run(task) => task,
                }
            }
            None => line.to_owned(),
        };
        if !live.titled {
            if let Err(err) = store.set_title(&live.id, &agent_setup::session_title(&task)) {
                tracing::warn!("cannot title session {}: {err}", live.id);
            }
            live.titled = true;
        }
        renderer.reset();
        let cancel = terminate.child_token();
        *turn.lock().unwrap_or_else(|e| e.into_inner()) = Some(cancel.clone());
        // `@shot.png`: a name that cannot be sent stops the message here, to be fixed.
        let attached = match lathe_agent::attach::attach(
            &task,
            provider.as_ref(),
            live.agent.model(),
            &live.tools,
        )
        .await
        {
            Ok(attached) => attached,
            Err(message) => {
                *turn.lock().unwrap_or_else(|e| e.into_inner()) = None;
                say(&style.yellow(&message));
                continue;
            }
        };
        for notice in &attached.notices {
            say(&style.dim(notice));
        }
        let message = with_notes(&mut notes, &attached.task);
        let restore_model = match &project_run {
            Some(command) => {
                start_project_run(
                    command,
                    &mut live.agent,
                    &mut resolved,
                    provider.as_ref(),
                    &style,
                )
                .await
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
                    () = interrupts.next() => {
                        if stopping {
                            exit_now(&live.tools, &live.sink);
                        }
                        stopping = true;
                        renderer.pause();
                        say(&style.yellow("stopping the turn… (Ctrl-C again to exit)"));
                        cancel.cancel();
                    }
                }
            }
        };
        *turn.lock().unwrap_or_else(|e| e.into_inner()) = None;
        if project_run.is_some() {
            live.tools.allow_only(None);
            if let Some(model) = restore_model {
                live.agent.set_model(model.clone());
                // Back to the session's model, and to its window and profile.
                if let Some(line) = resolved
                    .refit(provider.as_ref(), &mut live.agent, &model)
                    .await
                {
                    say(&style.dim(&line));
                }
            }
        }
        // The window meter: one dim line under the turn.
        match &outcome {
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
        // Stopped by Ctrl-C, during the turn or at an approval question.
        if stopping || cancel.is_cancelled() {
            rearm.arm();
        }
    }
    live.close(&store);
    lathe_mcp::client::stop(&servers).await;
    Ok(ExitCode::SUCCESS)
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

/// Loads the configuration; when the workspace's file has settings that weaken safety and is
/// not trusted, shows them and asks once (on a terminal) whether to trust the file: yes records
/// the trust and applies them, anything else goes on without them.
fn trust_or_not(common: &CommonArgs) -> anyhow::Result<Setup> {
    let setup = Setup::load_quiet(common)?;
    let (Some(notice), Some(file)) = (setup.trust_notice(), setup.workspace_file.as_ref()) else {
        return Ok(setup);
    };
    if !std::io::stdin().is_terminal() {
        eprintln!("lathe: {notice}");
        return Ok(setup);
    }
    let changed = if file.state == lathe_config::trust::TrustState::Changed {
        " (it has changed since you trusted it)"
    } else {
        ""
    };
    let mut text = format!(
        "{} asks for settings that weaken safety{changed}:\n",
        file.path.display()
    );
    for line in file.grant_lines() {
        text.push_str(&format!("  {line}\n"));
    }
    text.push_str(
        "Without trust they are ignored; the rest of the file applies.\nTrust this file? [y/N] ",
    );
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{text}");
    let _ = out.flush();
    drop(out);
    if !lathe_config::trust::read_yes() {
        say(&format!(
            "not trusted: going on without them (trust it later with `{}`)",
            lathe_config::trust::trust_command(&file.workspace)
        ));
        return Ok(setup);
    }
    lathe_config::trust::record(file)?;
    say("trusted: its settings apply");
    Setup::load_quiet(common)
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
