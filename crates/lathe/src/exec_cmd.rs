//! `lathe exec PROMPT|-`: runs one task headless and exits 0 when the agent finished, 1 when it
//! failed or hit a limit, 3 when it finished having changed nothing because every change it
//! tried was denied (the task needed an approval: `--approval auto`, or an allow rule), 130
//! when Ctrl-C stopped it (as shells report SIGINT).
//!
//! With `--json`, the first event is `run_started` (the session id and how the run is set up)
//! and the last is `run_result` (the answer, files changed, calls denied, tokens and times).

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use tokio_util::sync::CancellationToken;

use lathe_agent::Agent;
use lathe_agent::approval::{Approver, Refuse};

/// What the model reads when a call was denied because nobody could be asked: `lathe exec`
/// without a terminal. It says how the user can allow such calls.
pub const NON_INTERACTIVE_DENIAL: &str = "this call needs the user's approval, and this run has \
no terminal to ask on, so it was not run. Do not retry it; carry on without it if you can, or \
finish and say what the user should do (they can rerun with --approval auto, or allow it with a \
[permissions] rule in .lathe/config.toml)";
use lathe_agent::events::{Event, RunStart, RunStatus};
use lathe_agent::sink::EventSink;

use crate::EXIT_FAILURE;

/// The exit status of a run that finished with nothing written because every change it tried
/// was denied.
pub const EXIT_CHANGES_DENIED: u8 = 3;
use crate::chat::approver::TerminalApprover;
use crate::chat::input::Input;
use crate::chat::interrupt::{EXIT_INTERRUPTED, Interrupts, end_on_termination, exit_now};
use crate::cli::CommonArgs;
use crate::render::{OutputMode, Renderer, UndoHints};
use lathe_config::agent_setup::{self, ModelArgs};
use lathe_config::setup::Setup;

/// `lathe exec`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lathe exec \"add a --verbose flag to the CLI\" --approval auto\n  echo \"fix the failing test\" | lathe exec - --json"
)]
pub struct ExecArgs {
    /// The task, or `-` to read it from stdin.
    pub prompt: String,
    /// Model, server and approval flags.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Write the events as JSON lines (as stored in the session) instead of text.
    #[arg(long)]
    pub json: bool,
    /// The most model turns (default 50, or `[agent] max_turns`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: Option<u32>,
}

/// Runs `lathe exec`.
pub async fn run(common: &CommonArgs, args: ExecArgs) -> anyhow::Result<ExitCode> {
    let from_stdin = args.prompt == "-";
    let task = read_task(&args.prompt)?;
    let setup = Setup::load(common)?;
    let commands = lathe_config::project_commands::Commands::load(&setup.root);
    let (task, project_run) = lathe_config::project_commands::exec_task(&commands, task)?;
    let mut resolved = agent_setup::resolve(&setup, &args.model, agent_setup::process_env)?;
    if let Some(model) = project_run.as_ref().and_then(|c| c.model.clone()) {
        resolved.model = Some(model);
    }
    if let Some(max_turns) = args.max_turns {
        resolved.max_turns = max_turns;
    }
    let provider = agent_setup::provider(&resolved)?;
    let model = agent_setup::require_model(&resolved, provider.as_ref()).await?;
    let window_note = resolved.fit_window(provider.as_ref(), &model).await;
    let store = crate::sessions_cmd::open_store()?;
    let id = agent_setup::create_session(&store, &setup, &resolved, &model, Some(&task))?;
    let tools = agent_setup::tool_session(&setup, &id)?;
    // `@shot.png` in the task: checked before anything runs.
    let attached = match lathe_agent::attach::attach(&task, provider.as_ref(), &model, &tools).await
    {
        Ok(attached) => attached,
        Err(message) => {
            let _ = store.update_session_status(&id, lathe_store::SessionStatus::Failed);
            anyhow::bail!(message);
        }
    };
    // Held until this process ends, however it ends: `lathe sessions` sees whether it runs.
    let _owner = agent_setup::own_session(&id)?;
    let mode = if args.json {
        OutputMode::Json
    } else {
        OutputMode::Human
    };
    let renderer = Renderer::new(mode);
    renderer.set_undo_hints(UndoHints::Exec);
    announce(&renderer, mode, &attached.notices, &id, &model, &resolved);
    // Asking needs a person at a terminal; a piped task or JSON output means nobody is there.
    let interactive = !from_stdin
        && !args.json
        && std::io::stdin().is_terminal()
        && std::io::stdout().is_terminal();
    let sink = EventSink::new(store, id.clone(), renderer.handler());
    sink.emit(Event::RunStarted(run_start(&id, &model, &resolved, &tools)));
    if let Some(message) = window_note {
        sink.emit(Event::Notice { message });
    }
    let cancel = CancellationToken::new();
    let approver = approver(interactive, &renderer, &sink, &cancel);
    let hooks = lathe_config::hooks::load(&setup, id.as_str())?;
    let (registry, servers) =
        lathe_mcp::client::with_servers(&setup, lathe_config::setup::registry(), None).await;
    let mut builder = resolved.with_checkpoints(
        resolved
            .configure(Agent::builder(provider, model, Arc::clone(&tools)))
            .registry(Arc::new(registry)),
        &setup,
        &id,
        0,
        &sink,
    );
    if let Some(hooks) = &hooks {
        builder = builder.hook(Arc::clone(hooks) as Arc<dyn lathe_runtime::Hook>);
    }
    let mut agent = agent_setup::build(
        builder
            .permissions(setup.config.permissions.clone())
            .approver(approver)
            .sink(sink.clone()),
    )?;
    if let Some(command) = &project_run {
        lathe_config::project_commands::narrow(command, &agent);
    }
    let mut interrupts = Interrupts::listen();
    let terminating = end_on_termination(Arc::clone(&tools), sink.clone(), cancel.clone());
    let watcher = {
        let cancel = cancel.clone();
        let tools = Arc::clone(&tools);
        tokio::spawn(async move {
            interrupts.next().await;
            cancel.cancel();
            interrupts.next().await;
            exit_now(&tools, &sink);
        })
    };
    let mut prompt_hooks = lathe_config::hooks::PromptHooks::new(hooks, "startup");
    let outcome = prompt_hooks
        .run(&mut agent, &attached.task, attached.images, &cancel)
        .await;
    watcher.abort();
    terminating.abort();
    tools.shutdown();
    drop(agent);
    lathe_mcp::client::stop(&servers).await;
    Ok(exit_code(outcome))
}

/// The task: the argument, or stdin for `-`; never empty.
fn read_task(prompt: &str) -> anyhow::Result<String> {
    let task = if prompt == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the task from stdin")?;
        text
    } else {
        prompt.to_owned()
    };
    if task.trim().is_empty() {
        anyhow::bail!("the task is empty: give it as an argument, or pipe it in with `-`");
    }
    Ok(task)
}

/// On stderr, before the run: what was said of the images, and (for people) the session, the
/// model and the approval mode.
fn announce(
    renderer: &Renderer,
    mode: OutputMode,
    notices: &[String],
    id: &lathe_store::SessionId,
    model: &str,
    resolved: &agent_setup::Resolved,
) {
    let style = renderer.style();
    for notice in notices {
        eprintln!("{}", style.dim(notice));
    }
    if mode == OutputMode::Human {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{}",
            style.dim(&format!(
                "session {id} · {model} · approval {}",
                resolved.approval
            ))
        );
    }
}

/// The first event of the run: the session and how the run is set up.
fn run_start(
    id: &lathe_store::SessionId,
    model: &str,
    resolved: &agent_setup::Resolved,
    tools: &lathe_runtime::Session,
) -> RunStart {
    RunStart {
        session_id: id.as_str().to_owned(),
        model: model.to_owned(),
        provider: lathe_config::sessions::provider_name(resolved.provider).to_owned(),
        base_url: resolved.base_url.clone(),
        workspace: tools.workspace().root().display().to_string(),
        approval: resolved.approval.to_string(),
        max_turns: resolved.max_turns,
    }
}

/// Who answers the calls that ask: the user at the terminal, where there is one (a Ctrl-C at
/// the question stops the run there: the model is asked nothing more), else nobody
/// ([`NON_INTERACTIVE_DENIAL`]).
fn approver(
    interactive: bool,
    renderer: &Arc<Renderer>,
    sink: &EventSink,
    cancel: &CancellationToken,
) -> Arc<dyn Approver> {
    if interactive {
        Arc::new(
            TerminalApprover::new(Arc::new(Input::start()), Arc::clone(renderer), sink.clone())
                .stopping(Arc::new(std::sync::Mutex::new(Some(cancel.clone())))),
        )
    } else {
        Arc::new(Refuse(NON_INTERACTIVE_DENIAL.to_owned()))
    }
}

/// The exit status of the run (see the module's documentation); a prompt a hook refused is
/// said here and fails.
fn exit_code(outcome: Result<lathe_agent::executor::RunOutcome, String>) -> ExitCode {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(reason) => {
            eprintln!(
                "lathe: a UserPromptSubmit hook refused the prompt; the model did not see it: \
                 {reason}"
            );
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    match outcome.status {
        RunStatus::Finished if outcome.report.changes_denied => ExitCode::from(EXIT_CHANGES_DENIED),
        RunStatus::Finished => ExitCode::SUCCESS,
        // Only the first Ctrl-C cancels the run (SIGTERM and SIGHUP exit on their own).
        RunStatus::Stopped => ExitCode::from(EXIT_INTERRUPTED as u8),
        RunStatus::MaxTurns | RunStatus::Failed => ExitCode::from(EXIT_FAILURE),
    }
}
