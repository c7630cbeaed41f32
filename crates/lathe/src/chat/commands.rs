//! Slash commands: `/help`, `/model NAME`, `/approval MODE`, `/sessions`, `/exit`.

use std::io::Write;

use lathe_agent::Agent;
use lathe_agent::approval::ApprovalMode;
use lathe_agent::provider::Provider;
use lathe_store::{SessionFilter, Store};

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
    /// `/exit` or `/quit`.
    Exit,
    /// Anything else starting with `/`.
    Unknown(String),
}

/// What the chat loop does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Back to the prompt.
    Continue,
    /// End the chat.
    Exit,
}

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
            "exit" | "quit" | "q" => Command::Exit,
            _ => Command::Unknown(name),
        })
    }
}

const HELP: &str = "\
/help            this list
/model [NAME]    show or switch the model
/approval [MODE] show or switch the approval mode: read-only, ask, auto, full
/sessions        recent sessions of this workspace (resume one with lathe chat --resume ID)
/exit            end the chat (Ctrl-D works too)
Ctrl-C stops the current turn and kills its running commands; twice exits.";

/// Runs `command`.
pub async fn apply(
    command: Command,
    agent: &mut Agent,
    provider: &dyn Provider,
    store: &Store,
    setup: &Setup,
    style: &Style,
) -> Outcome {
    let mut out = std::io::stdout().lock();
    match command {
        Command::Help => {
            let _ = writeln!(out, "{HELP}");
        }
        Command::Model(None) => {
            let _ = writeln!(out, "model: {}", agent.model());
        }
        Command::Model(Some(name)) => {
            // The server's list decides; a server that cannot list its models is taken at its
            // word (the next turn says if the name is wrong).
            let listed = provider.list_models().await;
            match listed {
                Ok(models) if !models.is_empty() && !models.contains(&name) => {
                    let _ = writeln!(
                        out,
                        "{}",
                        style.red(&format!(
                            "{name} is not on the model server; it has: {}. The model stays {}.",
                            models.join(", "),
                            agent.model()
                        ))
                    );
                }
                listed => {
                    agent.set_model(name.clone());
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
            let _ = writeln!(out, "approval: {}", agent.gate().mode());
        }
        Command::Approval(Some(mode)) => match mode.parse::<ApprovalMode>() {
            Ok(mode) => {
                agent.gate().set_mode(mode);
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
            match store.list_sessions(&SessionFilter {
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
            let _ = writeln!(out, "unknown command /{name}; /help lists them");
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
    }
}
