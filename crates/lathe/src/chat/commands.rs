//! Slash commands: `/help`, `/status`, `/clear`, `/init`, `/model NAME`, `/approval MODE`,
//! `/sessions`, `/diff [N] [--stat]`, `/undo [--force]`, `/redo [--force]`, `/rewind N`,
//! `/pending`, `/apply [REASON]`, `/discard [REASON]`, `/compact`, `/exit`.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use lathe_agent::approval::ApprovalMode;
use lathe_agent::provider::Provider;
use lathe_agent::provider::window::thousands;
use lathe_agent::{Agent, ContextWindow};
use lathe_store::{SessionFilter, SessionId, Store};

use lathe_checkpoint::{Checkpoints, Force, UndoTarget};
use lathe_runtime::{ApprovalDecision, CallStatus, FixedAnswer, Session, Tool, ToolContext};
use lathe_tools::resolve::ResolveTool;

use crate::render::{Style, sanitize};
use crate::undo_cmd::Review;
use lathe_config::agent_setup::Resolved;
use lathe_config::setup::Setup;

/// How many sessions `/sessions` lists.
const SESSIONS_SHOWN: usize = 10;

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `/help`.
    Help,
    /// `/model [NAME]`.
    Model(Option<String>),
    /// `/approval [MODE]`.
    Approval(Option<String>),
    /// `/sessions`.
    Sessions,
    /// `/status`.
    Status,
    /// `/clear`.
    Clear,
    /// `/init`.
    Init,
    /// `/diff [N] [--stat]`: what this session (or its turn N) changed.
    Diff {
        /// The turn, or `None` for the whole session.
        turn: Option<String>,
        /// Files and line counts only.
        stat: bool,
    },
    /// `/undo [--force]`: takes back the newest turn's changes.
    Undo {
        /// Overwrite files changed since.
        force: bool,
    },
    /// `/redo [--force]`: takes back the last undo.
    Redo {
        /// Overwrite files changed since.
        force: bool,
    },
    /// `/rewind N`: the code and the conversation back to before turn N.
    Rewind(Option<String>),
    /// `/pending`: the changes tools previewed that wait for a decision.
    Pending,
    /// `/apply [REASON]`: makes the newest pending change.
    Apply(Option<String>),
    /// `/discard [REASON]`: drops the newest pending change.
    Discard(Option<String>),
    /// `/compact`: the older part of the conversation replaced by a summary now.
    Compact,
    /// `/exit` or `/quit`.
    Exit,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// What the chat loop does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Back to the prompt.
    Continue,
    /// End the chat.
    Exit,
    /// Start a new conversation in a new session.
    Clear,
    /// Run this task as if the user had typed it.
    Run(String),
}

/// The names `/help` lists, for suggestions.
const NAMES: &[&str] = &[
    "help", "status", "clear", "init", "model", "approval", "sessions", "diff", "undo", "redo",
    "rewind", "pending", "apply", "discard", "compact", "exit", "quit",
];

impl Command {
    /// The command in `line`, when it is one. A line starting with `//` or `/ ` is a message.
    pub fn parse(line: &str) -> Option<Command> {
        let rest = line.trim().strip_prefix('/')?;
        if rest.is_empty() || rest.starts_with(['/', ' ']) {
            return None;
        }
        let mut words = rest.split_whitespace();
        let name = words.next().unwrap_or_default().to_ascii_lowercase();
        let args: Vec<&str> = words.collect();
        let flag = |f: &str| args.contains(&f);
        let plain = || {
            args.iter()
                .find(|a| !a.starts_with("--"))
                .map(|a| (*a).to_owned())
        };
        let arg = args.first().map(|a| (*a).to_owned());
        // Everything after the name, as typed (a reason is a sentence).
        let said = || {
            let text = rest[rest.find(char::is_whitespace).unwrap_or(rest.len())..].trim();
            (!text.is_empty()).then(|| text.to_owned())
        };
        Some(match name.as_str() {
            "help" | "h" | "?" => Command::Help,
            "model" => Command::Model(arg),
            "approval" | "mode" => Command::Approval(arg),
            "sessions" => Command::Sessions,
            "status" => Command::Status,
            "clear" | "new" => Command::Clear,
            "init" => Command::Init,
            "diff" => Command::Diff {
                turn: plain(),
                stat: flag("--stat"),
            },
            "undo" => Command::Undo {
                force: flag("--force"),
            },
            "redo" => Command::Redo {
                force: flag("--force"),
            },
            "rewind" => Command::Rewind(plain()),
            "pending" => Command::Pending,
            "apply" => Command::Apply(said()),
            "discard" => Command::Discard(said()),
            "compact" => Command::Compact,
            "exit" | "quit" | "q" => Command::Exit,
            _ => Command::Unknown(name),
        })
    }
}

const HELP: &str = "\
/help            this list
/status          model, server, session, context window fill, tokens, approval mode, workspace
/clear           start a new conversation (in a new session)
/init            have the model write AGENTS.md (or improve the one there) from a look at the project
/model [NAME]    show or switch the model (the server is asked for its window)
/approval [MODE] show or switch the approval mode: read-only, ask, auto, full
/sessions        recent sessions of this workspace (resume one with lathe chat --resume ID)
/diff [N] [--stat]  what this session changed (N: only turn N), as a diff or files and counts
/undo [--force]  take back the newest turn's file changes (--force: also files changed since)
/redo [--force]  take back the last /undo
/rewind N        put the code back as it was before turn N and cut the conversation there
/compact         replace the older part of the conversation with a summary the model writes (it
                 happens by itself when a request would not fit the window)
/pending         the changes a tool previewed that wait for a decision (newest last)
/apply [REASON]  make the newest pending change (your /apply approves it; read-only refuses)
/discard [REASON] drop the newest pending change; nothing is written
/exit            end the chat (Ctrl-D on an empty line works too)
Keys: Enter sends; Alt-Enter inserts a newline, and so does Enter after a line ending in \\;
a paste is one message. Arrows, Home/End, Ctrl-A/E/W/U, Alt-B/F edit; Up/Down and
Ctrl-R search the history.
Ctrl-C stops the current turn and kills its running commands, clears what you typed, and on an
empty prompt, pressed twice within a few seconds, exits.";

/// What a slash command works with.
pub struct Context<'a> {
    /// The agent of the current session.
    pub agent: &'a mut Agent,
    /// Its model server.
    pub provider: &'a dyn Provider,
    /// The sessions database.
    pub store: &'a Store,
    /// The workspace and its configuration.
    pub setup: &'a Setup,
    /// How the model side was set up (the provider, its base URL, the window); `/model`
    /// re-asks the window for the new model.
    pub resolved: &'a mut Resolved,
    /// The current session.
    pub session: &'a SessionId,
    /// Terminal styling.
    pub style: &'a Style,
    /// What the user did that the model should hear of with the next message (a pending
    /// change they applied or discarded).
    pub notes: &'a mut Vec<String>,
}

/// The known command closest to `name`, when one is close enough to be meant.
pub fn closest(name: &str) -> Option<&'static str> {
    NAMES
        .iter()
        .map(|known| (strsim::damerau_levenshtein(name, known), *known))
        .filter(|(distance, known)| {
            *distance <= (known.len() / 3).max(1) || (name.len() >= 2 && known.starts_with(name))
        })
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, known)| known)
}

/// `used/total tokens (N%)`.
pub fn window_fill(used: u64, total: u64) -> String {
    let percent = used.saturating_mul(100) / total.max(1);
    format!("{used}/{total} tokens ({percent}%)")
}

fn status(cx: &Context<'_>) -> String {
    let executor = cx.agent.executor();
    // What the requests are fitted to now: the server's when smaller, or what an overflow
    // taught.
    let window = executor.context_window();
    let tokens = cx
        .store
        .events(cx.session)
        .map(|events| lathe_config::sessions::Tokens::from_events(&events))
        .unwrap_or_default();
    let fill = match tokens.last {
        Some(used) => window_fill(used, window),
        None => {
            let estimated = ContextWindow::new(window).estimate(executor.history(), &[]);
            format!("{} (estimated)", window_fill(estimated, window))
        }
    };
    let provider = lathe_config::sessions::provider_name(cx.resolved.provider);
    let served = match cx.resolved.served_window {
        Some(served) => format!("the server's {}", thousands(u64::from(served))),
        None => "the server did not say its own".to_owned(),
    };
    let profile = executor.runner().registry().profile().as_str();
    let speed = match tokens.speed {
        Some(speed) => format!("{speed:.1} tokens/s (last turn, the server's clock)"),
        None => "not timed by the server yet".to_owned(),
    };
    let workspace = cx
        .setup
        .root
        .canonicalize()
        .unwrap_or_else(|_| cx.setup.root.clone());
    format!(
        "model      {}\n\
         provider   {provider} at {}\n\
         session    {}\n\
         context    {fill}\n\
         window     {} tokens: configured {} ({}), {served}; {profile} prompt profile\n\
         speed      {speed}\n\
         tokens     {} in, {} out (this session)\n\
         approval   {}\n\
         workspace  {}",
        cx.agent.model(),
        crate::render::sanitize(&cx.resolved.base_url),
        cx.session,
        thousands(window),
        thousands(u64::from(cx.resolved.configured_window)),
        cx.resolved.window_source,
        tokens.input,
        tokens.output,
        cx.agent.gate().mode(),
        workspace.display()
    )
}

/// Runs `command`.
#[expect(
    clippy::disallowed_methods,
    reason = "the chat waits for /undo and /redo"
)]
pub async fn apply(command: Command, cx: Context<'_>) -> Outcome {
    let style = cx.style;
    let apply = matches!(command, Command::Apply(_));
    let setup = cx.setup;
    let mut out = std::io::stdout().lock();
    match command {
        Command::Help => {
            let _ = writeln!(out, "{HELP}");
            let project = lathe_config::project_commands::Commands::load(&cx.setup.root);
            if !project.is_empty() {
                let _ = write!(
                    out,
                    "Project commands (.lathe/commands/, and commands/ in your config \
                     directory; a built-in name wins):\n{}",
                    project.help()
                );
            }
        }
        Command::Status => {
            let _ = writeln!(out, "{}", status(&cx));
        }
        Command::Clear => return Outcome::Clear,
        Command::Init => {
            let task = lathe_agent::init::InitTask::for_workspace(&setup.root);
            if task == lathe_agent::init::InitTask::Improve {
                let _ = writeln!(
                    out,
                    "{}",
                    style.dim("AGENTS.md exists: asking the model to improve it, not overwrite it")
                );
            }
            return Outcome::Run(task.prompt().to_owned());
        }
        Command::Model(None) => {
            let _ = writeln!(out, "model: {}", cx.agent.model());
        }
        Command::Model(Some(name)) => {
            // The server's list decides; a server that cannot list its models is taken at its
            // word (the next turn says if the name is wrong).
            let listed = cx.provider.list_models().await;
            match listed {
                Ok(models) if !models.is_empty() && !models.contains(&name) => {
                    let _ = writeln!(
                        out,
                        "{}",
                        style.red(&format!(
                            "{name} is not on the model server; it has: {}. The model stays {}.",
                            models.join(", "),
                            cx.agent.model()
                        ))
                    );
                }
                listed => {
                    cx.agent.set_model(name.clone());
                    let mut said = format!("model is now {name}");
                    if let Err(err) = listed {
                        said.push_str(&format!(
                            " (the server's models could not be listed: {err})"
                        ));
                    }
                    let _ = writeln!(out, "{}", style.dim(&said));
                    // Its window may differ: the next request is fitted to it.
                    if let Some(line) = cx.resolved.refit(cx.provider, cx.agent, &name).await {
                        let _ = writeln!(out, "{}", style.dim(&line));
                    }
                }
            }
        }
        Command::Approval(None) => {
            let _ = writeln!(out, "approval: {}", cx.agent.gate().mode());
        }
        Command::Approval(Some(mode)) => match mode.parse::<ApprovalMode>() {
            Ok(mode) => {
                cx.agent.gate().set_mode(mode);
                let _ = writeln!(out, "{}", style.dim(&format!("approval is now {mode}")));
            }
            Err(err) => {
                let _ = writeln!(out, "{}", style.red(&err.to_string()));
            }
        },
        Command::Sessions => {
            let workspace = setup
                .root
                .canonicalize()
                .unwrap_or_else(|_| setup.root.clone());
            match cx.store.list_sessions(&SessionFilter {
                workspace: Some(workspace),
                limit: Some(SESSIONS_SHOWN),
            }) {
                Ok(sessions) if sessions.is_empty() => {
                    let _ = writeln!(out, "no sessions in this workspace yet");
                }
                Ok(sessions) => {
                    for session in sessions {
                        let _ = writeln!(
                            out,
                            "{}  {:<11}  {}",
                            style.bold(session.id.as_str()),
                            session.status.as_str(),
                            session.title.as_deref().unwrap_or("(untitled)")
                        );
                    }
                }
                Err(err) => {
                    let _ = writeln!(
                        out,
                        "{}",
                        style.red(&format!("cannot list sessions: {err}"))
                    );
                }
            }
        }
        Command::Diff { turn, stat } => {
            let said = match parse_turn(turn.as_deref()) {
                Ok(turn) => diff(&cx, turn, stat),
                Err(said) => said,
            };
            let _ = write!(out, "{said}");
        }
        Command::Undo { force } => {
            let said = restore(&cx, force, ("undo", "undid"), |c, f| {
                c.undo(UndoTarget::Last, f)
            });
            let _ = write!(out, "{said}");
        }
        Command::Redo { force } => {
            let said = restore(&cx, force, ("redo", "redid"), |c, f| c.redo(f));
            let _ = write!(out, "{said}");
        }
        Command::Rewind(turn) => {
            let said = match parse_turn(turn.as_deref()) {
                Ok(Some(turn)) => rewind(cx.agent, cx.session, turn, style),
                Ok(None) => format!(
                    "{}\n",
                    style.red("/rewind needs a turn: /rewind N (the line after a turn that changed files names it)")
                ),
                Err(said) => said,
            };
            let _ = write!(out, "{said}");
        }
        Command::Compact => {
            // The summary takes a model request: nothing is held meanwhile. What it did is
            // said by its event, as when it happens by itself.
            drop(out);
            let compacted = cx
                .agent
                .compact(&tokio_util::sync::CancellationToken::new())
                .await;
            let mut out = std::io::stdout().lock();
            if let Err(why) = compacted {
                let _ = writeln!(
                    out,
                    "{}",
                    style.dim(&format!("/compact did nothing: {why}"))
                );
            }
            let _ = out.flush();
            return Outcome::Continue;
        }
        Command::Pending => {
            let _ = write!(
                out,
                "{}",
                pending_list(cx.agent.executor().runner().session(), style)
            );
        }
        Command::Apply(reason) | Command::Discard(reason) => {
            // The answer may take a moment (a large change): nothing is held meanwhile.
            drop(out);
            let said = resolve(cx.agent, apply, reason, style, cx.notes).await;
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{said}");
            let _ = out.flush();
            return Outcome::Continue;
        }
        Command::Exit => return Outcome::Exit,
        Command::Unknown(name) => {
            let name = crate::render::sanitize(&name);
            let mut said = format!("unknown command /{name}; /help lists them");
            if let Some(known) = closest(&name) {
                said.push_str(&format!(" (did you mean /{known}?)"));
            }
            let _ = writeln!(out, "{said}");
        }
    }
    let _ = out.flush();
    Outcome::Continue
}

/// `/pending`: each pending action, oldest first, with its source, files and details.
pub fn pending_list(session: &Session, style: &Style) -> String {
    let waiting = session.pending_summaries();
    if waiting.is_empty() {
        return "nothing pending: no tool has a previewed change waiting for /apply or /discard\n"
            .to_owned();
    }
    let mut said = format!(
        "{}\n",
        style.dim(&format!(
            "{} pending, newest last (/apply and /discard take the newest):",
            plural(waiting.len(), "change")
        ))
    );
    for (n, action) in waiting.iter().enumerate() {
        said.push_str(&format!(
            "{}. {} {}\n",
            n + 1,
            style.bold(&format!("\"{}\"", sanitize(&action.label))),
            style.dim(&format!("from {}", sanitize(&action.source)))
        ));
        for change in &action.changes {
            let what = if change.created {
                " (new)"
            } else if change.deleted {
                " (removed)"
            } else {
                ""
            };
            said.push_str(&format!(
                "   {}{what} +{} -{}\n",
                sanitize(&change.path),
                change.added,
                change.removed
            ));
        }
        if let Some(details) = &action.details {
            for line in sanitize(details).lines() {
                said.push_str(&format!("   {}\n", style.dim(line)));
            }
        }
    }
    said
}

/// The line after a model turn that left changes pending; `None` when nothing waits.
pub fn pending_hint(session: &Session) -> Option<String> {
    let waiting = session.pending_summaries();
    let newest = waiting.last()?;
    let label = sanitize(&newest.label);
    let what = match waiting.len() {
        1 => format!("1 change pending: \"{label}\""),
        n => format!("{n} changes pending, newest \"{label}\""),
    };
    Some(format!("{what} · /pending · /apply · /discard"))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// How many pending actions the user resolved in this process (their calls' ids).
static RESOLVED_BY_USER: AtomicU64 = AtomicU64::new(1);

/// `/apply` and `/discard`: the model's `resolve`, called by the user through the same
/// dispatcher (the gate, the checkpoint hook, the plan's stamps). Typing `/apply` is the
/// user's approval of that one call, as a command they run themselves is; a mode that refuses
/// the change (`read-only`) refuses it here too. The model hears of it with the next message.
#[expect(clippy::disallowed_methods, reason = "the chat waits for /apply")]
async fn resolve(
    agent: &Agent,
    apply: bool,
    reason: Option<String>,
    style: &Style,
    notes: &mut Vec<String>,
) -> String {
    let (verb, done) = if apply {
        ("apply", "applied")
    } else {
        ("discard", "discarded")
    };
    let runner = agent.executor().runner();
    let session = runner.session();
    let Some(newest) = session.pending_summaries().pop() else {
        return format!(
            "nothing pending: there is nothing to {verb} (a tool that previews a change, such as apply_patch with preview, leaves one)\n"
        );
    };
    let mut arguments = json!({ "action": verb });
    if let Some(reason) = &reason {
        arguments["reason"] = json!(reason);
    }
    let mut ctx = ToolContext::new(Arc::clone(session));
    ctx.call_id = Some(format!(
        "user-{verb}-{}",
        RESOLVED_BY_USER.fetch_add(1, Ordering::Relaxed)
    ));
    let outcome = runner
        .dispatcher()
        .call(
            ResolveTool::NAME,
            arguments,
            &FixedAnswer(ApprovalDecision::AllowOnce),
            ctx,
        )
        .await;
    let label = sanitize(&newest.label).into_owned();
    let text = sanitize(outcome.output.text.trim_end()).into_owned();
    let mut said = match outcome.status {
        CallStatus::Ok => format!("{}\n", style.green(&text)),
        CallStatus::Denied => format!(
            "{}\n{}\n",
            style.red(&format!("not {done}: {text}")),
            style.dim(&format!(
                "the approval mode is {}; /approval ask lets /apply make the change, /discard drops it",
                agent.gate().mode()
            ))
        ),
        _ => format!("{}\n", style.red(&format!("cannot {verb} \"{label}\": {text}"))),
    };
    // The change is a checkpoint step of its own, for /undo.
    if let Some(hook) = agent.executor().checkpoints() {
        match hook.end_turn() {
            Ok(Some(stat)) => said.push_str(&format!(
                "{}\n",
                style.dim(&format!(
                    "{} changed (+{} -{}) · /undo takes it back",
                    plural(stat.files, "file"),
                    stat.added,
                    stat.removed
                ))
            )),
            Ok(None) => {}
            Err(err) => said.push_str(&format!(
                "{}\n",
                style.yellow(&format!(
                    "could not record the change ({err}): /undo will not cover it"
                ))
            )),
        }
    }
    if matches!(outcome.status, CallStatus::Ok | CallStatus::Error) {
        let why = reason.map(|r| format!(" (\"{r}\")")).unwrap_or_default();
        notes.push(format!(
            "The user ran /{verb}{why} on the pending change \"{}\" (from {}) themselves: {}",
            newest.label,
            newest.source,
            outcome.output.text.trim_end()
        ));
    }
    if let Some(next) = pending_hint(session) {
        said.push_str(&format!("{}\n", style.dim(&next)));
    }
    said
}

/// The turn of `/diff N` or `/rewind N`; `Err` is what to say about an argument that is not
/// one.
fn parse_turn(arg: Option<&str>) -> Result<Option<u32>, String> {
    match arg {
        None => Ok(None),
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(format!(
                "'{}' is not a turn number: give the number the line after a turn shows (turn 3 → 3)\n",
                crate::render::sanitize(text)
            )),
        },
    }
}

const NO_CHECKPOINTS: &str = "this session keeps no checkpoints ([agent] checkpoints = false, or they could not be opened: see the note when the chat started)\n";

fn diff(cx: &Context<'_>, turn: Option<u32>, stat: bool) -> String {
    let Some(checkpoints) = cx.agent.checkpoints() else {
        return NO_CHECKPOINTS.to_owned();
    };
    match crate::undo_cmd::review(cx.session.as_str(), checkpoints, turn, stat) {
        Ok(Review::Diff(text)) => {
            let mut text = crate::render::sanitize(&text).into_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text
        }
        Ok(Review::Nothing(line) | Review::Net(line)) => format!("{line}\n"),
        Err(err) => format!(
            "{}\n",
            cx.style.red(&format!("cannot show the diff: {err:#}"))
        ),
    }
}

/// `/undo` and `/redo`, said the way `lathe undo` says it.
fn restore(
    cx: &Context<'_>,
    force: bool,
    (name, verb): (&str, &str),
    act: impl FnOnce(
        &Checkpoints,
        Force,
    ) -> lathe_checkpoint::Result<
        Result<lathe_checkpoint::Restored, lathe_checkpoint::Nothing>,
    >,
) -> String {
    let Some(checkpoints) = cx.agent.checkpoints() else {
        return NO_CHECKPOINTS.to_owned();
    };
    let force = if force { Force::Yes } else { Force::No };
    let hint = format!("/{name} --force overwrites them");
    let mut said = Vec::new();
    match act(checkpoints, force) {
        Ok(result) => {
            let _ = crate::undo_cmd::write_restored(
                &mut said,
                cx.session.as_str(),
                checkpoints,
                verb,
                result,
                &hint,
            );
        }
        Err(err) => {
            said = format!("{}\n", cx.style.red(&format!("cannot {name}: {err}"))).into_bytes()
        }
    }
    String::from_utf8_lossy(&said).into_owned()
}

/// `/rewind N`: the files back to before turn N (as `lathe undo --turn N` does, never
/// overwriting files changed since), then the conversation cut there.
#[expect(clippy::disallowed_methods, reason = "the chat waits for /rewind")]
fn rewind(agent: &mut Agent, session: &SessionId, turn: u32, style: &Style) -> String {
    if !agent.executor().can_rewind(turn) {
        let newest = agent.executor().session_turns();
        return format!(
            "{}\n",
            style.red(&format!(
                "turn {turn} is not in this conversation (it has turns up to {newest}, and /rewind reaches only turns this chat ran since it started)"
            ))
        );
    }
    let mut said = Vec::new();
    if let Some(checkpoints) = agent.checkpoints() {
        match checkpoints.undo(UndoTarget::Since(turn), Force::No) {
            Ok(Err(lathe_checkpoint::Nothing::ToUndo)) => {
                said.extend_from_slice(b"no file changes since that turn to take back\n");
            }
            Ok(result) => {
                let hint = format!(
                    "they stay as they are; lathe undo --session {session} --turn {turn} --force overwrites them"
                );
                let _ = crate::undo_cmd::write_restored(
                    &mut said,
                    session.as_str(),
                    checkpoints,
                    "undid",
                    result,
                    &hint,
                );
            }
            Err(err) => {
                said.extend_from_slice(
                    format!(
                        "{}\n",
                        style.red(&format!(
                            "cannot put the files back: {err}; the conversation is cut all the same"
                        ))
                    )
                    .as_bytes(),
                );
            }
        }
    } else {
        said.extend_from_slice(NO_CHECKPOINTS.as_bytes());
    }
    let cut = agent.rewind(turn).map_or(0, |cut| cut.len());
    said.extend_from_slice(
        format!(
            "{}\n",
            style.dim(&format!(
                "rewound the conversation to before turn {turn}: {cut} message{} dropped; your next message goes on from there",
                if cut == 1 { "" } else { "s" }
            ))
        )
        .as_bytes(),
    );
    String::from_utf8_lossy(&said).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands_and_leaves_messages_alone() {
        assert_eq!(Command::parse("/help"), Some(Command::Help));
        assert_eq!(
            Command::parse("/model qwen3:8b"),
            Some(Command::Model(Some("qwen3:8b".into())))
        );
        assert_eq!(Command::parse("/model"), Some(Command::Model(None)));
        assert_eq!(
            Command::parse("/APPROVAL auto"),
            Some(Command::Approval(Some("auto".into())))
        );
        assert_eq!(Command::parse("/sessions"), Some(Command::Sessions));
        assert_eq!(Command::parse("/exit"), Some(Command::Exit));
        assert_eq!(
            Command::parse("/frobnicate"),
            Some(Command::Unknown("frobnicate".into()))
        );
        assert_eq!(Command::parse("fix /etc/hosts parsing"), None);
        assert_eq!(Command::parse("//comment"), None);
        assert_eq!(Command::parse("/"), None);
        assert_eq!(Command::parse("/status"), Some(Command::Status));
        assert_eq!(Command::parse("/compact"), Some(Command::Compact));
        assert_eq!(Command::parse("/clear"), Some(Command::Clear));
        assert_eq!(Command::parse("/init"), Some(Command::Init));
        assert_eq!(
            Command::parse("/diff 3 --stat"),
            Some(Command::Diff {
                turn: Some("3".into()),
                stat: true
            })
        );
        assert_eq!(
            Command::parse("/diff"),
            Some(Command::Diff {
                turn: None,
                stat: false
            })
        );
        assert_eq!(
            Command::parse("/undo --force"),
            Some(Command::Undo { force: true })
        );
        assert_eq!(
            Command::parse("/redo"),
            Some(Command::Redo { force: false })
        );
        assert_eq!(Command::parse("/pending"), Some(Command::Pending));
        assert_eq!(Command::parse("/apply"), Some(Command::Apply(None)));
        assert_eq!(
            Command::parse("/apply  it is  right "),
            Some(Command::Apply(Some("it is  right".into())))
        );
        assert_eq!(
            Command::parse("/discard wrong file"),
            Some(Command::Discard(Some("wrong file".into())))
        );
        assert_eq!(
            Command::parse("/rewind 2"),
            Some(Command::Rewind(Some("2".into())))
        );
        assert!(parse_turn(Some("0")).unwrap_err().contains("not a turn"));
        assert_eq!(parse_turn(Some("4")), Ok(Some(4)));
    }

    /// An agent (never asked: nothing listens at its server) whose session has a real
    /// pending action: write_file's own plan for `a.txt`, kept as a preview.
    fn agent_with_pending(mode: ApprovalMode) -> (tempfile::TempDir, Agent) {
        use lathe_agent::provider::{ProviderConfig, ProviderKind, RetryPolicy, connect};
        use lathe_runtime::{PendingAction, ToolConfig, Workspace};
        use lathe_tools::write_file::WriteFileTool;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let tools = Session::new(
            Workspace::new(&root).unwrap(),
            ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        let input = serde_json::from_value(json!({"path": "a.txt", "content": "hi\n"})).unwrap();
        let plan = WriteFileTool.plan(&input, &tools).unwrap().unwrap();
        let action = PendingAction::from_plan("create a.txt", "write_file", plan)
            .with_details("one greeting");
        tools.push_pending(action).unwrap();
        let provider = connect(
            ProviderKind::Ollama,
            ProviderConfig::new("http://127.0.0.1:9").retry(RetryPolicy::none()),
        )
        .unwrap();
        let agent = Agent::builder(provider, "m", tools)
            .approval(mode)
            .build()
            .unwrap();
        (dir, agent)
    }

    #[test]
    fn pending_changes_are_listed_with_their_files_and_said_after_a_turn() {
        let (_dir, agent) = agent_with_pending(ApprovalMode::Ask);
        let session = agent.executor().runner().session();
        let listed = pending_list(session, &Style::plain());
        assert!(listed.contains("1 change pending, newest last"), "{listed}");
        assert!(
            listed.contains("1. \"create a.txt\" from write_file"),
            "{listed}"
        );
        assert!(listed.contains("a.txt (new) +1 -0"), "{listed}");
        assert!(listed.contains("one greeting"), "{listed}");
        assert_eq!(
            pending_hint(session).unwrap(),
            "1 change pending: \"create a.txt\" · /pending · /apply · /discard"
        );
    }

    #[tokio::test]
    async fn apply_in_ask_mode_is_the_users_approval_and_writes_the_file() {
        let (dir, agent) = agent_with_pending(ApprovalMode::Ask);
        let mut notes = Vec::new();
        let said = resolve(
            &agent,
            true,
            Some("looks right".into()),
            &Style::plain(),
            &mut notes,
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(),
            "hi\n",
            "{said}"
        );
        let session = agent.executor().runner().session();
        assert!(!session.has_pending(), "{said}");
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with(
                "The user ran /apply (\"looks right\") on the pending change \"create a.txt\""
            ),
            "{notes:?}"
        );
        assert!(pending_list(session, &Style::plain()).starts_with("nothing pending"));
        let again = resolve(&agent, true, None, &Style::plain(), &mut notes).await;
        assert!(
            again.starts_with("nothing pending: there is nothing to apply"),
            "{again}"
        );
        assert_eq!(notes.len(), 1, "nothing done, nothing to tell the model");
    }

    #[tokio::test]
    async fn read_only_refuses_apply_and_the_change_stays_pending() {
        let (dir, agent) = agent_with_pending(ApprovalMode::ReadOnly);
        let mut notes = Vec::new();
        let said = resolve(&agent, true, None, &Style::plain(), &mut notes).await;
        assert!(said.starts_with("not applied: "), "{said}");
        assert!(said.contains("/approval ask"), "{said}");
        assert!(!dir.path().join("ws/a.txt").exists());
        assert!(agent.executor().runner().session().has_pending());
        assert!(notes.is_empty());
        // Discarding writes nothing, so read-only allows it.
        let said = resolve(&agent, false, None, &Style::plain(), &mut notes).await;
        assert!(said.contains("Discarded: create a.txt"), "{said}");
        assert!(!dir.path().join("ws/a.txt").exists());
        assert!(!agent.executor().runner().session().has_pending());
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn suggests_the_closest_name() {
        assert_eq!(closest("stauts"), Some("status"));
        assert_eq!(closest("clera"), Some("clear"));
        assert_eq!(closest("mod"), Some("model"));
        assert_eq!(closest("inti"), Some("init"));
        assert_eq!(closest("frobnicate"), None);
    }

    #[test]
    fn the_window_fill_is_a_share_of_the_window() {
        assert_eq!(window_fill(2048, 8192), "2048/8192 tokens (25%)");
        assert_eq!(window_fill(0, 0), "0/0 tokens (0%)");
    }
}
