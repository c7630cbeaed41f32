//! `lathe chat`: an interactive, multi-turn session in the terminal. Output streams as it comes;
//! calls that need approval ask (y / n / a); Ctrl-C once stops the current turn (running
//! commands are killed), twice exits; slash commands switch the model or the approval mode.
//! `--resume ID` continues a stored session.

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
use lathe_agent::sink::{EventSink, stored_history};
use lathe_store::SessionStatus;

use crate::agent_setup::{self, ModelArgs};
use crate::cli::CommonArgs;
use crate::render::{OutputMode, Renderer};
use crate::setup::Setup;
use approver::TerminalApprover;
use commands::{Command, Outcome};
use input::Input;
use interrupt::{Interrupts, end_on_termination, exit_now};

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

/// What a resumed session was started with, where no flag says otherwise: the model, the
/// provider, its server and the approval mode (the configuration and environment apply only
/// to what the session did not record).
fn restore(args: &mut ModelArgs, session: &lathe_store::Session) {
    args.model = args.model.take().or_else(|| Some(session.model.clone()));
    if args.provider.is_none() {
        args.provider = agent_setup::parse_provider(&session.provider).ok();
    }
    if args.base_url.is_none() {
        args.base_url = session.extra["base_url"].as_str().map(str::to_owned);
    }
    if args.approval.is_none() {
        args.approval = session.approval.parse().ok();
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
        restore(&mut model_args, session);
    }
    let mut resolved = agent_setup::resolve(&setup, &model_args, agent_setup::process_env)?;
    if let Some(max_turns) = args.max_turns {
        resolved.max_turns = max_turns;
    }
    let provider = agent_setup::provider(&resolved)?;
    let model = agent_setup::require_model(&resolved, provider.as_ref()).await?;
    let id = match &resumed {
        Some(session) => session.id.clone(),
        None => agent_setup::create_session(&store, &setup, &resolved, &model, None)?,
    };
    let tools = agent_setup::tool_session(&setup, &id)?;
    // Held until this process ends, however it ends: `lathe sessions` sees whether it runs.
    let _owner = agent_setup::own_session(&id)?;
    let renderer = Renderer::new(OutputMode::Human);
    let input = Arc::new(Input::start());
    let sink = EventSink::new(store.clone(), id.clone(), renderer.handler());
    let approver = Arc::new(TerminalApprover::new(
        Arc::clone(&input),
        Arc::clone(&renderer),
        sink.clone(),
    ));
    let mut agent = agent_setup::build(
        resolved
            .configure(Agent::builder(
                Arc::clone(&provider),
                model.clone(),
                Arc::clone(&tools),
            ))
            .permissions(setup.config.permissions.clone())
            .approver(approver)
            .sink(sink.clone()),
    )?;
    let style = *renderer.style();
    let mut titled = resumed.as_ref().is_some_and(|s| s.title.is_some());
    if let Some(session) = &resumed {
        let history = stored_history(&store, &session.id)?;
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
        agent.resume(history);
        say(&style.dim(&format!(
            "resumed session {} ({turns} earlier messages from you)",
            session.id
        )));
        if !tail.is_empty() {
            say(&tail);
        }
    }
    say(&style.dim(&format!(
        "lathe chat · {model} · approval {} · session {id}\nType a task, /help for commands, Ctrl-C to stop a turn, twice to exit.",
        agent.gate().mode()
    )));

    let mut interrupts = Interrupts::listen();
    // Each turn's cancellation is a child of this one, which a termination signal cancels.
    let terminate = CancellationToken::new();
    let terminating = end_on_termination(Arc::clone(&tools), sink.clone(), terminate.clone());
    let prompt = style.bold("> ");
    // Set by a Ctrl-C (one that stopped a turn, or one at the prompt): the next Ctrl-C, with
    // nothing typed in between, exits. Two presses exit however quickly the turn stopped.
    let mut armed = false;
    loop {
        let line = loop {
            tokio::select! {
                line = input.line(&prompt) => break line,
                () = interrupts.next() => {
                    if armed {
                        exit_now(&tools, &sink);
                    }
                    armed = true;
                    say(&style.dim("\n(press Ctrl-C again to exit, or type /exit)"));
                }
            }
        };
        armed = false;
        let Some(line) = line else {
            break;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = Command::parse(line) {
            match commands::apply(
                command,
                &mut agent,
                provider.as_ref(),
                &store,
                &setup,
                &style,
            )
            .await
            {
                Outcome::Continue => continue,
                Outcome::Exit => break,
            }
        }
        if !titled {
            if let Err(err) = store.set_title(&id, &agent_setup::session_title(line)) {
                tracing::warn!("cannot title session {id}: {err}");
            }
            titled = true;
        }
        renderer.reset();
        let cancel = terminate.child_token();
        let run = agent.run(line, &cancel);
        tokio::pin!(run);
        let mut stopping = false;
        loop {
            tokio::select! {
                _ = &mut run => break,
                () = interrupts.next() => {
                    if stopping {
                        exit_now(&tools, &sink);
                    }
                    stopping = true;
                    renderer.pause();
                    say(&style.yellow("stopping the turn… (Ctrl-C again to exit)"));
                    cancel.cancel();
                }
            }
        }
        armed = stopping;
    }
    terminating.abort();
    tools.shutdown();
    // A chat that ended at the prompt is done, not running.
    if let Ok(session) = store.session(id.as_str())
        && session.status == SessionStatus::Running
    {
        let _ = store.update_session_status(&id, SessionStatus::Completed);
    }
    Ok(ExitCode::SUCCESS)
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
    let changed = if file.state == crate::trust::TrustState::Changed {
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
    if !crate::trust::read_yes() {
        say(&format!(
            "not trusted: going on without them (trust it later with `{}`)",
            crate::trust::trust_command(&file.workspace)
        ));
        return Ok(setup);
    }
    crate::trust::record(file)?;
    say("trusted: its settings apply");
    Setup::load_quiet(common)
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}
