//! `lathe chat`: an interactive, multi-turn session in the terminal. Output streams as it comes;
//! calls that need approval ask (y / n / a); Ctrl-C once stops the current turn (running
//! commands are killed), twice exits; slash commands show the status, start over, write
//! AGENTS.md, switch the model or the approval mode. `--resume ID` continues a stored session.
//! On a terminal, the input line is a line editor with history (see [`input`]).

pub mod approver;
mod commands;
pub mod input;
pub mod interrupt;
mod session;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use tokio_util::sync::CancellationToken;

use lathe_agent::sink::stored_history_seqs;

use crate::cli::CommonArgs;
use crate::render::{OutputMode, Renderer};
use commands::{Command, Outcome};
use input::{Input, Purpose, Read};
use interrupt::{Interrupts, Rearm, exit_now};
use lathe_config::agent_setup::{self, ModelArgs};
use lathe_config::project_commands::{Commands, ProjectCommand};
use lathe_config::setup::Setup;
use session::{Live, Parts, Turn};

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

/// Runs `lathe chat`.
pub async fn run(common: &CommonArgs, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let store = crate::sessions_cmd::open_store()?;
    let (resumed, setup, mut resolved) = set_up(common, &args, &store)?;
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
    let form = crate::mcp_form::terminal(Arc::clone(&input), Arc::clone(&renderer));
    let (registry, servers) =
        lathe_mcp::client::with_servers(&setup, lathe_config::setup::registry(), Some(form)).await;
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
        show_resumed(&store, &mut live, session, &style)?;
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
    // Set by a Ctrl-C (one that stopped a turn, or one at an empty prompt): the next Ctrl-C
    // within the window, with nothing typed in between, exits.
    let mut rearm = Rearm::new();
    loop {
        let read = read_message(&input, &mut interrupts, &mut rearm, &live, &style).await;
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
                    notes: &mut live.notes,
                };
                match commands::apply(command, cx).await {
                    Outcome::Continue => continue,
                    Outcome::Exit => break,
                    Outcome::Clear => {
                        live = parts.clear(&resolved, live)?;
                        continue;
                    }
                    Outcome::Run(task) => task,
                }
            }
            None => line.to_owned(),
        };
        let mut turn = Turn {
            live: &mut live,
            resolved: &mut resolved,
            interrupts: &mut interrupts,
            rearm: &mut rearm,
        };
        parts.send(&mut turn, &task, project_run.as_ref()).await;
    }
    live.close(&store);
    lathe_mcp::client::stop(&servers).await;
    Ok(ExitCode::SUCCESS)
}

/// The session to resume (`--resume`), the set-up of its workspace (asking to trust the
/// workspace's file when it needs it), and the model side as the flags, the configuration and
/// a resumed session say.
fn set_up(
    common: &CommonArgs,
    args: &ChatArgs,
    store: &lathe_store::Store,
) -> anyhow::Result<(Option<lathe_store::Session>, Setup, agent_setup::Resolved)> {
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
    Ok((resumed, setup, resolved))
}

/// A resumed session's earlier conversation: handed to the agent, and its last lines shown.
fn show_resumed(
    store: &lathe_store::Store,
    live: &mut Live,
    session: &lathe_store::Session,
    style: &crate::render::Style,
) -> anyhow::Result<()> {
    let stored = stored_history_seqs(store, &session.id)?;
    let history: Vec<_> = stored.iter().map(|(m, _)| m.clone()).collect();
    let turns = history
        .iter()
        .filter(|m| matches!(m, lathe_agent::message::Message::User { .. }))
        .count();
    let events = store.events(&session.id)?;
    let tail = crate::sessions_cmd::tail(
        &history,
        crate::sessions_cmd::Calls::from_events(&events),
        style,
        RESUME_TAIL_LINES,
    );
    live.agent.resume_stored(stored);
    if let Some(steps) = lathe_agent::stored::last_plan(&events) {
        live.agent.restore_plan(steps);
    }
    say(&style.dim(&format!(
        "resumed session {} ({turns} earlier messages from you)",
        session.id
    )));
    if !tail.is_empty() {
        say(&tail);
    }
    Ok(())
}

/// The next line typed at the prompt (or the end of input). A Ctrl-C at the prompt clears it;
/// a second within the window, with nothing typed in between, exits.
async fn read_message(
    input: &Input,
    interrupts: &mut Interrupts,
    rearm: &mut Rearm,
    live: &Live,
    style: &crate::render::Style,
) -> Read {
    let prompt = style.bold("> ");
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
    read
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

/// Writes a line to stdout.
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
