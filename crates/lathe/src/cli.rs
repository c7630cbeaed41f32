//! Command-line flags.

use clap::{Args, Parser, Subcommand};
pub use lathe_config::CommonArgs;

/// Lathe: a coding agent and tool runtime for local models.
#[derive(Debug, Parser)]
#[command(name = "lathe", version, about, propagate_version = true)]
pub struct Cli {
    /// Flags every command takes.
    #[command(flatten)]
    pub common: CommonArgs,
    /// More logging on stderr (-v info, -vv debug); LATHE_LOG overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print the tool definitions as sent to the model.
    Tools(ToolsArgs),
    /// Run one tool (or a batch of calls) with no model.
    Tool(ToolArgs),
    /// Run a task headless: the agent works until it is done, then exits (0 done, 1 not).
    Exec(crate::exec_cmd::ExecArgs),
    /// An interactive session in the terminal.
    Chat(crate::chat::ChatArgs),
    /// Stored sessions: list them, show one's transcript.
    Sessions(crate::sessions_cmd::SessionsArgs),
    /// Take back a session's newest turn (or every turn since --turn N): files it changed,
    /// created or deleted, as they were; files changed since by someone else are left alone.
    Undo(crate::undo_cmd::UndoArgs),
    /// Take back the newest undo.
    Redo(crate::undo_cmd::RedoArgs),
    /// What a session (or one turn, --turn N) changed, as a unified diff (--stat: a summary).
    Diff(crate::undo_cmd::DiffArgs),
    /// Serve Lathe's tools to an MCP client (stdio, or streamable HTTP with --listen).
    Mcp(lathe_mcp::server::McpArgs),
    /// The safety policy: `lathe policy check -- COMMAND` decides a command as the agent would.
    Policy(crate::policy_cmd::PolicyArgs),
    /// Trust the workspace's .lathe/config.toml: show what it grants, then record it (--list,
    /// --revoke).
    Trust(lathe_config::trust::TrustArgs),
    /// The project's memory (.lathe/memory.md), read by every new session: show, edit or
    /// clear it.
    Memory(crate::memory_cmd::MemoryArgs),
}

/// `lathe tools`.
#[derive(Debug, Args)]
pub struct ToolsArgs {
    /// Print the definitions as JSON (the function-calling shape).
    #[arg(long)]
    pub json: bool,
}

/// `lathe tool`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lathe tool read_file '{\"path\": \"src/main.rs\", \"offset\": 10}'\n  echo '{\"pattern\": \"TODO\"}' | lathe tool grep -\n  lathe tool --batch < calls.jsonl\n  lathe tool --batch --approval auto < model-calls.jsonl"
)]
pub struct ToolArgs {
    /// The tool's name (see `lathe tools`).
    #[arg(required_unless_present = "batch", conflicts_with = "batch")]
    pub name: Option<String>,
    /// The arguments as a JSON object, or `-` to read them from stdin (default: `{}`).
    #[arg(value_name = "ARGS_JSON")]
    pub arguments: Option<String>,
    /// Print `{"text", "is_error", "status", "metadata"}` as JSON instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Read JSON lines `{"name": ..., "arguments": {...}}` from stdin and run them in order in
    /// one session, writing one JSON result per line.
    #[arg(long)]
    pub batch: bool,
    /// Decide every call as the agent would in MODE (read-only, ask, auto or full), refusing
    /// what would ask: for programs that relay a model's calls. Without it, a call you run is
    /// its own approval, and only deny rules refuse.
    #[arg(long, value_name = "MODE")]
    pub approval: Option<lathe_policy::ApprovalMode>,
}
