//! Slash commands: `/help`, `/status`, `/clear`, `/init`, `/model NAME`, `/approval MODE`,
//! `/sessions`, `/diff [N] [--stat]`, `/undo [--force]`, `/redo [--force]`, `/rewind N`,
//! `/pending`, `/apply [REASON]`, `/discard [REASON]`, `/compact`, `/exit`.

mod checkpoints;
mod pending;

use std::io::Write;

use lathe_agent::approval::ApprovalMode;
use lathe_agent::init::InitTask;
use lathe_agent::provider::Provider;
use lathe_agent::provider::window::thousands;
use lathe_agent::{Agent, ContextWindow};
use lathe_store::{SessionFilter, SessionId, Store};

use crate::render::Style;
use lathe_config::agent_setup::Resolved;
use lathe_config::setup::Setup;
pub use pending::pending_hint;

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

/// `/status`: the model, its server and window, the session, its tokens, the mode.
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

/// Runs `command`: one function per command, which says what it did.
pub async fn apply(command: Command, mut cx: Context<'_>) -> Outcome {
    let said = match command {
        Command::Clear => return Outcome::Clear,
        Command::Exit => return Outcome::Exit,
        Command::Init => return init(&cx),
        Command::Help => help(cx.setup),
        Command::Status => format!("{}\n", status(&cx)),
        Command::Model(None) => format!("model: {}\n", cx.agent.model()),
        Command::Model(Some(name)) => switch_model(&mut cx, name).await,
        Command::Approval(None) => format!("approval: {}\n", cx.agent.gate().mode()),
        Command::Approval(Some(mode)) => set_approval(&cx, &mode),
        Command::Sessions => sessions(&cx),
        Command::Diff { turn, stat } => checkpoints::diff(&cx, turn.as_deref(), stat),
        Command::Undo { force } => checkpoints::undo(&cx, force),
        Command::Redo { force } => checkpoints::redo(&cx, force),
        Command::Rewind(turn) => checkpoints::rewind(&mut cx, turn.as_deref()),
        Command::Compact => compact(&mut cx).await,
        Command::Pending => pending::pending_list(cx.agent.executor().runner().session(), cx.style),
        // The answer may take a moment (a large change): nothing is held meanwhile.
        Command::Apply(reason) => {
            pending::resolve(cx.agent, true, reason, cx.style, cx.notes).await
        }
        Command::Discard(reason) => {
            pending::resolve(cx.agent, false, reason, cx.style, cx.notes).await
        }
        Command::Unknown(name) => unknown(&name),
    };
    show(&said);
    Outcome::Continue
}

/// Writes what a command said (its lines end with their newlines).
fn show(said: &str) {
    let mut out = std::io::stdout().lock();
    let _ = write!(out, "{said}");
    let _ = out.flush();
}

/// `/help`: the commands and keys, then the project's own commands.
fn help(setup: &Setup) -> String {
    let mut said = format!("{HELP}\n");
    let project = lathe_config::project_commands::Commands::load(&setup.root);
    if !project.is_empty() {
        said.push_str(&format!(
            "Project commands (.lathe/commands/, and commands/ in your config \
             directory; a built-in name wins):\n{}",
            project.help()
        ));
    }
    said
}

/// `/init`: the model writes AGENTS.md, or improves the one there.
fn init(cx: &Context<'_>) -> Outcome {
    let task = InitTask::for_workspace(&cx.setup.root);
    if task == InitTask::Improve {
        show(&format!(
            "{}\n",
            cx.style
                .dim("AGENTS.md exists: asking the model to improve it, not overwrite it")
        ));
    }
    Outcome::Run(task.prompt().to_owned())
}

/// `/model NAME`. The server's list decides; a server that cannot list its models is taken at
/// its word (the next turn says if the name is wrong).
async fn switch_model(cx: &mut Context<'_>, name: String) -> String {
    let style = cx.style;
    let listed = match cx.provider.list_models().await {
        Ok(models) if !models.is_empty() && !models.contains(&name) => {
            return format!(
                "{}\n",
                style.red(&format!(
                    "{name} is not on the model server; it has: {}. The model stays {}.",
                    models.join(", "),
                    cx.agent.model()
                ))
            );
        }
        listed => listed,
    };
    cx.agent.set_model(name.clone());
    let mut said = format!("model is now {name}");
    if let Err(err) = listed {
        said.push_str(&format!(
            " (the server's models could not be listed: {err})"
        ));
    }
    show(&format!("{}\n", style.dim(&said)));
    // Its window may differ: the next request is fitted to it.
    match cx.resolved.refit(cx.provider, cx.agent, &name).await {
        Some(line) => format!("{}\n", style.dim(&line)),
        None => String::new(),
    }
}

/// `/approval MODE`.
fn set_approval(cx: &Context<'_>, mode: &str) -> String {
    match mode.parse::<ApprovalMode>() {
        Ok(mode) => {
            cx.agent.gate().set_mode(mode);
            format!("{}\n", cx.style.dim(&format!("approval is now {mode}")))
        }
        Err(err) => format!("{}\n", cx.style.red(&err.to_string())),
    }
}

/// `/sessions`: the newest sessions of this workspace.
fn sessions(cx: &Context<'_>) -> String {
    let setup = cx.setup;
    let workspace = setup
        .root
        .canonicalize()
        .unwrap_or_else(|_| setup.root.clone());
    match cx.store.list_sessions(&SessionFilter {
        workspace: Some(workspace),
        limit: Some(SESSIONS_SHOWN),
    }) {
        Ok(sessions) if sessions.is_empty() => "no sessions in this workspace yet\n".to_owned(),
        Ok(sessions) => sessions
            .iter()
            .map(|session| {
                format!(
                    "{}  {:<11}  {}\n",
                    cx.style.bold(session.id.as_str()),
                    session.status.as_str(),
                    session.title.as_deref().unwrap_or("(untitled)")
                )
            })
            .collect(),
        Err(err) => format!(
            "{}\n",
            cx.style.red(&format!("cannot list sessions: {err}"))
        ),
    }
}

/// `/compact`. The summary takes a model request: nothing is held meanwhile. What it did is
/// said by its event, as when it happens by itself.
async fn compact(cx: &mut Context<'_>) -> String {
    let compacted = cx
        .agent
        .compact(&tokio_util::sync::CancellationToken::new())
        .await;
    match compacted {
        Err(why) => format!(
            "{}\n",
            cx.style.dim(&format!("/compact did nothing: {why}"))
        ),
        Ok(_) => String::new(),
    }
}

/// Anything else starting with `/`, and the command it may have meant.
fn unknown(name: &str) -> String {
    let name = crate::render::sanitize(name);
    let mut said = format!("unknown command /{name}; /help lists them");
    if let Some(known) = closest(&name) {
        said.push_str(&format!(" (did you mean /{known}?)"));
    }
    said.push('\n');
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
