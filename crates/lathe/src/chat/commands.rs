//! Slash commands: `/help`, `/status`, `/clear`, `/init`, `/model NAME`, `/approval MODE`,
//! `/sessions`, `/exit`.

use std::io::Write;

use lathe_agent::approval::ApprovalMode;
use lathe_agent::events::Event;
use lathe_agent::provider::{Provider, ProviderKind};
use lathe_agent::{Agent, ContextWindow};
use lathe_store::{SessionFilter, SessionId, Store};

use crate::agent_setup::Resolved;
use crate::render::Style;
use crate::setup::Setup;

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
    "help", "status", "clear", "init", "model", "approval", "sessions", "exit", "quit",
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
        let arg = words.next().map(str::to_owned);
        Some(match name.as_str() {
            "help" | "h" | "?" => Command::Help,
            "model" => Command::Model(arg),
            "approval" | "mode" => Command::Approval(arg),
            "sessions" => Command::Sessions,
            "status" => Command::Status,
            "clear" | "new" => Command::Clear,
            "init" => Command::Init,
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
/model [NAME]    show or switch the model
/approval [MODE] show or switch the approval mode: read-only, ask, auto, full
/sessions        recent sessions of this workspace (resume one with lathe chat --resume ID)
/exit            end the chat (Ctrl-D on an empty line works too)
Keys: Enter sends; Alt-Enter inserts a newline, and so does Enter after a line ending in \\;
a paste is one message. Arrows, Home/End, Ctrl-A/E/W/U, Alt-B/F edit; Up/Down and
Ctrl-R search the history.
Ctrl-C stops the current turn and kills its running commands, clears what you typed, and on an
empty prompt, pressed twice within a few seconds, exits.";

/// The task `/init` runs when the workspace has no AGENTS.md.
pub const INIT_PROMPT: &str = "\
Write AGENTS.md at the workspace root: the instructions a coding agent needs to work on this \
project. First look at the project: its build files (Cargo.toml, package.json, pyproject.toml, \
go.mod, Makefile and the like), the README, the CI configuration, and the layout of the source \
and test directories. Then write AGENTS.md with write_file, covering: what the project is (a \
line or two), how to build it, how to run the tests (the exact commands, and how to run a single \
test), the layout (what lives where), and the conventions to follow (formatting, lints, style, \
commit rules) as the project states them. Keep it short and concrete: commands that work here, \
paths that exist; no generic advice.";

/// The task `/init` runs when AGENTS.md is already there.
pub const INIT_IMPROVE_PROMPT: &str = "\
AGENTS.md already exists at the workspace root: read it first, then improve it rather than start \
over. Look at the project: its build files (Cargo.toml, package.json, pyproject.toml, go.mod, \
Makefile and the like), the README, the CI configuration, and the layout of the source and test \
directories. Then fix what AGENTS.md gets wrong or out of date and add what it lacks (how to \
build, how to run the tests and a single test, the layout, the conventions), with edit_file; \
keep what is still right. Keep it short and concrete: commands that work here, paths that exist.";

/// The file `/init` writes.
pub const AGENTS_FILE: &str = "AGENTS.md";

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
    /// How the model side was set up (the provider, its base URL).
    pub resolved: &'a Resolved,
    /// The current session.
    pub session: &'a SessionId,
    /// Terminal styling.
    pub style: &'a Style,
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

/// Token counts of a session, from its stored turns.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tokens {
    /// Prompt tokens, summed over the turns.
    pub input: u64,
    /// Generated tokens, summed over the turns.
    pub output: u64,
    /// The last turn's prompt and output, when the server counted them: what the window holds.
    pub last: Option<u64>,
}

impl Tokens {
    /// Adds up the turns among `events` (events that do not read back are skipped).
    pub fn from_events(events: &[lathe_store::Event]) -> Tokens {
        let mut tokens = Tokens::default();
        for stored in events {
            if let Ok(Event::TurnFinished {
                usage: Some(usage), ..
            }) = serde_json::from_value::<Event>(stored.payload.clone())
            {
                let input = usage.prompt_tokens.unwrap_or(0);
                let output = usage.completion_tokens.unwrap_or(0);
                tokens.input += input;
                tokens.output += output;
                if usage.prompt_tokens.is_some() {
                    tokens.last = Some(input + output);
                }
            }
        }
        tokens
    }
}

/// `used/total tokens (N%)`.
pub fn window_fill(used: u64, total: u64) -> String {
    let percent = used.saturating_mul(100) / total.max(1);
    format!("{used}/{total} tokens ({percent}%)")
}

fn status(cx: &Context<'_>) -> String {
    let executor = cx.agent.executor();
    let config = executor.config();
    let window = config
        .context_window
        .unwrap_or(u64::from(config.options.num_ctx));
    let tokens = cx
        .store
        .events(cx.session)
        .map(|events| Tokens::from_events(&events))
        .unwrap_or_default();
    let fill = match tokens.last {
        Some(used) => window_fill(used, window),
        None => {
            let estimated = ContextWindow::new(window).estimate(executor.history(), &[]);
            format!("{} (estimated)", window_fill(estimated, window))
        }
    };
    let provider = match cx.resolved.provider {
        ProviderKind::Ollama => "ollama",
        ProviderKind::OpenAi => "openai",
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
         tokens     {} in, {} out (this session)\n\
         approval   {}\n\
         workspace  {}",
        cx.agent.model(),
        crate::render::sanitize(&cx.resolved.base_url),
        cx.session,
        tokens.input,
        tokens.output,
        cx.agent.gate().mode(),
        workspace.display()
    )
}

/// Runs `command`.
pub async fn apply(command: Command, cx: Context<'_>) -> Outcome {
    let style = cx.style;
    let setup = cx.setup;
    let mut out = std::io::stdout().lock();
    match command {
        Command::Help => {
            let _ = writeln!(out, "{HELP}");
        }
        Command::Status => {
            let _ = writeln!(out, "{}", status(&cx));
        }
        Command::Clear => return Outcome::Clear,
        Command::Init => {
            let task = if setup.root.join(AGENTS_FILE).exists() {
                let _ = writeln!(
                    out,
                    "{}",
                    style.dim("AGENTS.md exists: asking the model to improve it, not overwrite it")
                );
                INIT_IMPROVE_PROMPT
            } else {
                INIT_PROMPT
            };
            return Outcome::Run(task.to_owned());
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
        assert_eq!(Command::parse("/clear"), Some(Command::Clear));
        assert_eq!(Command::parse("/init"), Some(Command::Init));
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
