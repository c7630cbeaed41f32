//! `lathe tools` and `lathe tool`: the tool runtime with no model.
//!
//! Calls go through a host built as the agent's and `lathe mcp`'s are (name resolution,
//! arguments, the gate, the plan, the budget, the configured `[hooks]`), so a call gives the same
//! answer here. A call that changes the workspace is a checkpointed turn of its own in a stored
//! session of this run, which `lathe undo` takes back. What differs is who approves: see
//! [`approver`].

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use lathe_config::lines::{Line, read_bounded_line};
use lathe_config::tool_calls::{Answer, BatchLine, MAX_INPUT_BYTES, approver, too_long};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_checkpoint::session::SessionCheckpoints;
use lathe_config::checkpoints::Recorded;
use lathe_policy::ApprovalMode;
use lathe_runtime::dispatch::{Approver, Gate, Outcome};
use lathe_runtime::{Hook, Host, ToolContext, ToolOutput};

use crate::cli::{CommonArgs, ToolArgs, ToolsArgs};
use crate::{EXIT_FAILURE, EXIT_USAGE};
use lathe_config::setup::Setup;

/// Where the agent tools (`spawn_agent`, `read_sub_agent`) are offered: they are not in the
/// built-in registry (so not in `lathe tool`), the agent's runner adds them.
pub const AGENT_TOOLS_AVAILABLE: &str = "in lathe exec and lathe chat; in lathe mcp when a \
    model is configured (lathe mcp --model NAME, or name under [model])";

/// `lathe tools [--json]`: the built-in tools, then the agent tools, each marked as such.
pub fn list(common: &CommonArgs, args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let registry = lathe_config::setup::registry();
    let agent_tools = lathe_agent::subagent::definitions();
    // `[agent] max_sub_agents = 0` turns them off; a configuration that cannot be read is
    // reported by the commands that use it, not by a list.
    let turned_off = Setup::load_quiet(common)
        .ok()
        .is_some_and(|setup| setup.config.agent.max_sub_agents == Some(0));
    let available = if turned_off {
        "turned off here by [agent] max_sub_agents = 0".to_owned()
    } else {
        AGENT_TOOLS_AVAILABLE.to_owned()
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let mut definitions: Vec<Value> = registry
            .definitions()
            .map(lathe_runtime::ToolDefinition::to_function)
            .collect();
        definitions.extend(agent_tools.iter().map(|definition| {
            let mut function = definition.to_function();
            function["agent_tool"] = Value::Bool(true);
            function["available"] = Value::String(available.clone());
            function
        }));
        serde_json::to_writer_pretty(&mut out, &definitions)?;
        writeln!(out)?;
    } else {
        for definition in registry.definitions() {
            write_tool(&mut out, definition)?;
        }
        writeln!(out)?;
        writeln!(out, "agent tools ({available}):")?;
        for definition in &agent_tools {
            write_tool(&mut out, definition)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One tool of `lathe tools`: its name and summary, then its parameters (optional ones in
/// brackets).
fn write_tool(
    out: &mut impl Write,
    definition: &lathe_runtime::ToolDefinition,
) -> anyhow::Result<()> {
    let summary = summary(&definition.description);
    writeln!(out, "{:<16} {summary}", definition.name)?;
    if let Some(props) = definition.parameters["properties"].as_object() {
        let required: Vec<&str> = definition.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let params: Vec<String> = props
            .keys()
            .map(|k| {
                if required.contains(&k.as_str()) {
                    k.clone()
                } else {
                    format!("[{k}]")
                }
            })
            .collect();
        if !params.is_empty() {
            writeln!(out, "{:<16} {}", "", params.join(" "))?;
        }
    }
    Ok(())
}

/// The first sentence of a description's first paragraph, on one line.
fn summary(description: &str) -> String {
    let paragraph = description
        .split("\n\n")
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let end = paragraph.match_indices(". ").map(|(i, _)| i).find(|&i| {
        let before = &paragraph[..i];
        !["e.g", "i.e", "etc", "vs"]
            .iter()
            .any(|abbr| before.ends_with(abbr))
    });
    match end {
        Some(end) => paragraph[..=end].to_owned(),
        None => paragraph,
    }
}

/// What a one-shot `lathe tool` says after a call that left a change pending.
pub const ONE_SHOT_PENDING: &str = "the previewed change was not kept: nothing was written, and \
    this `lathe tool` run ends here. Run the call in `lathe tool --batch`, followed by \
    {\"name\": \"resolve\", \"arguments\": {\"action\": \"apply\"}}, or call it without preview";

/// `lathe tool NAME [ARGS]` and `lathe tool --batch`.
pub async fn run(common: &CommonArgs, args: ToolArgs) -> anyhow::Result<ExitCode> {
    let setup = Setup::load(common)?;
    let mode = args.approval.unwrap_or(ApprovalMode::Full);
    let gate = Gate::with_permissions(&setup.config.permissions, mode, &setup.root, false)
        .map_err(lathe_config::config::invalid_permissions)?;
    // Earlier runs' saved results and artifacts stay readable: a result cut to the budget says
    // "read the rest with read_file", and with one-shot calls that read is a later process.
    let runs = lathe_config::state::runs_dir();
    std::fs::create_dir_all(&runs)
        .with_context(|| format!("cannot create the directory of runs {}", runs.display()))?;
    let run_dir = lathe_config::state::new_run_dir();
    let session = setup.session_reading(run_dir.clone(), &[runs])?;
    let title = match (&args.name, args.batch) {
        (_, true) | (None, _) => "lathe tool --batch".to_owned(),
        (Some(name), false) => format!("lathe tool {name}"),
    };
    // Checkpoints are opened (a stored session created) only when a call first changes something.
    let checkpoints = setup.config.agent.checkpoints.unwrap_or(true).then(|| {
        let recorded = Recorded {
            provider: "tool".to_owned(),
            model: "lathe tool".to_owned(),
            approval: mode,
            title,
        };
        lathe_config::checkpoints::session_checkpoints(&session, recorded)
    });
    let hooks = lathe_config::hooks::load(&setup, "tool")?;
    let host = lathe_config::checkpoints::per_call_host(
        &session,
        Arc::new(lathe_config::setup::registry()),
        Arc::new(gate),
        hooks.map(|hooks| hooks as Arc<dyn Hook>),
        checkpoints.as_ref(),
    );
    let approver = approver(args.approval);
    let calls = Calls {
        host: &host,
        checkpoints: checkpoints.as_deref(),
        approver: approver.as_ref(),
        session: &session,
    };
    let terminating = {
        let session = Arc::clone(&session);
        lathe_config::signals::exit_on_termination(move || session.shutdown())
    };
    let code = if args.batch {
        let code = batch(&calls).await?;
        // What the batch left pending ends with it: say so rather than drop it unseen.
        let waiting = session.pending_summaries();
        if !waiting.is_empty() {
            let labels: Vec<String> = waiting
                .iter()
                .map(|p| format!("\"{}\"", crate::render::sanitize(&p.label)))
                .collect();
            eprintln!(
                "lathe: the batch ended with {} pending, not written: {} (a \
                 {{\"name\": \"resolve\", \"arguments\": {{\"action\": \"apply\"}}}} line makes the newest)",
                if waiting.len() == 1 {
                    "1 change".to_owned()
                } else {
                    format!("{} changes", waiting.len())
                },
                labels.join(", ")
            );
        }
        code
    } else {
        let name = args.name.as_deref().unwrap_or_default();
        let arguments = match read_arguments(args.arguments.as_deref()) {
            Ok(arguments) => arguments,
            Err(message) => {
                eprintln!("lathe: {message}");
                return Ok(ExitCode::from(EXIT_USAGE));
            }
        };
        let outcome = calls.call(name, arguments).await;
        // A preview waits for `resolve`, which this process will never get: say so, rather
        // than let the change the output calls pending vanish with the process.
        if session.has_pending() {
            eprintln!("lathe: {ONE_SHOT_PENDING}");
        }
        let mut out = std::io::stdout().lock();
        if args.json {
            serde_json::to_writer(&mut out, &Answer::of(&outcome))?;
            writeln!(out)?;
        } else {
            let text = &outcome.output.text;
            out.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                writeln!(out)?;
            }
        }
        out.flush()?;
        if outcome.output.is_error {
            EXIT_FAILURE
        } else {
            0
        }
    };
    terminating.abort();
    session.shutdown();
    lathe_config::state::remove_if_empty(&run_dir);
    Ok(ExitCode::from(code))
}

fn read_arguments(given: Option<&str>) -> Result<Value, String> {
    let text = match given {
        None => return Ok(json!({})),
        Some("-") => {
            let mut stdin = std::io::stdin().lock();
            match read_bounded_line(&mut stdin, MAX_INPUT_BYTES, false) {
                Ok(Some(Line::Whole(bytes))) => String::from_utf8(bytes)
                    .map_err(|err| format!("the arguments on stdin are not valid UTF-8: {err}"))?,
                Ok(Some(Line::TooLong(size))) => {
                    return Err(too_long("the arguments on stdin", size));
                }
                Ok(None) => String::new(),
                Err(err) => return Err(format!("cannot read the arguments from stdin: {err}")),
            }
        }
        Some(text) => text.to_owned(),
    };
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text).map_err(|err| {
        format!("the arguments are not valid JSON ({err}); pass a JSON object such as '{{\"path\": \"src/main.rs\"}}'")
    })
}

/// What the calls of one `lathe tool` run share.
struct Calls<'a> {
    host: &'a Host,
    /// The run's checkpoints, unless `[agent] checkpoints = false`.
    checkpoints: Option<&'a SessionCheckpoints>,
    approver: &'a dyn Approver,
    session: &'a Arc<lathe_runtime::Session>,
}

impl Calls<'_> {
    /// Runs one call through the dispatcher; Ctrl-C cancels it (the tool kills what it
    /// started and says so).
    async fn call(&self, name: &str, arguments: Value) -> Outcome {
        let ctx = ToolContext::new(Arc::clone(self.session));
        let cancel: CancellationToken = ctx.cancel.clone();
        let watcher = tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        });
        // A call that may change the workspace is a checkpointed turn of its own.
        let outcome = match self.checkpoints {
            Some(checkpoints) => {
                checkpoints
                    .call(self.host, name, arguments, self.approver, ctx)
                    .await
            }
            None => {
                self.host
                    .dispatcher()
                    .call(name, arguments, self.approver, ctx)
                    .await
            }
        };
        watcher.abort();
        outcome
    }
}

/// Runs JSON lines from stdin in order in one session, answering each line before reading the
/// next so that a driving program can use one result in its next call.
async fn batch(calls: &Calls<'_>) -> anyhow::Result<u8> {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Line>>(1);
    // stdin is read on its own thread: a blocking read must not hold an async worker. Lines are
    // read as bytes so that one line that is not UTF-8 is answered as unreadable, not the end of
    // the whole session.
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let line = match read_bounded_line(&mut stdin, MAX_INPUT_BYTES, true) {
                Ok(None) => break,
                Ok(Some(line)) => Ok(line),
                Err(err) => Err(err),
            };
            let stop = line.is_err();
            if tx.blocking_send(line).is_err() || stop {
                break;
            }
        }
    });
    let mut code = 0u8;
    while let Some(line) = rx.recv().await {
        let line = match line.context("cannot read stdin")? {
            Line::Whole(bytes) => bytes,
            Line::TooLong(size) => {
                code = EXIT_USAGE;
                let output = ToolOutput::error(format!(
                    "{}; the line was not run. Pass large content in smaller calls (for example \
                     write part of a file, then append with edit_file)",
                    too_long("the line", size)
                ));
                write_result(&Answer::unread(&output))?;
                continue;
            }
        };
        let Some(parsed) = BatchLine::parse(&line) else {
            continue;
        };
        match parsed {
            Ok(call) => {
                let outcome = calls.call(&call.name, call.arguments).await;
                if outcome.output.is_error && code == 0 {
                    code = EXIT_FAILURE;
                }
                write_result(&Answer::of(&outcome))?;
            }
            Err(err) => {
                code = EXIT_USAGE;
                let output = ToolOutput::error(format!(
                    "unreadable line ({err}); each line must be {{\"name\": \"tool\", \"arguments\": {{...}}}}"
                ));
                write_result(&Answer::unread(&output))?;
            }
        }
    }
    Ok(code)
}

fn write_result(answer: &Answer<'_>) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    serde_json::to_writer(&mut out, answer)?;
    writeln!(out)?;
    out.flush()?;
    Ok(())
}
