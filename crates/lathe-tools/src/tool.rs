//! The typed tool contract.
//!
//! A tool is a struct implementing [`Tool`]: a fixed name, an input type whose JSON Schema (and
//! its doc comments) is what the model reads, and an async `run`. The [`Registry`](crate::Registry)
//! erases tools once, so the agent and the MCP server serve the very same definitions.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::session::Session;

/// What a tool does to the world, as the approval policy, the tool runner and MCP annotations
/// need to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Only reads: safe to run concurrently with other reads and without approval in `ask` mode.
    Read,
    /// Changes files inside the workspace.
    Edit,
    /// Runs programs (their effect is judged by command analysis).
    Execute,
    /// Manages the session's own state (background commands, pending previews, sub-agents).
    Session,
}

impl ToolKind {
    /// True for tools that never change anything, so they may run concurrently.
    pub fn is_read_only(self) -> bool {
        matches!(self, ToolKind::Read)
    }
}

/// Hints for clients (MCP annotations), stated truthfully per tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolHints {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may destroy or overwrite data (only meaningful when not read-only).
    pub destructive: bool,
    /// Calling it twice with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool may reach outside the workspace (network, other processes).
    pub open_world: bool,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The model-facing text.
    pub text: String,
    /// True when the call failed in a way the model should read and fix.
    pub is_error: bool,
    /// Structured data for user interfaces: paths touched, lines shown, diff stats, artifact ids.
    pub metadata: Map<String, Value>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
            metadata: Map::new(),
        }
    }

    /// A result the model should read as a mistake to fix: say what to do next in `text`.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
            metadata: Map::new(),
        }
    }

    /// Adds one metadata entry.
    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.to_owned(), value.into());
        self
    }
}

/// Progress reported by a running tool (command output as it arrives, status lines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolProgress {
    /// A piece of a running command's output (lossy UTF-8).
    Output {
        /// The text that arrived.
        text: String,
    },
    /// A human-readable status line.
    Status {
        /// The status message.
        message: String,
    },
}

/// Where a tool sends [`ToolProgress`].
pub type ProgressSink = Arc<dyn Fn(ToolProgress) + Send + Sync>;

/// Everything a tool call may use besides its input.
#[derive(Clone)]
pub struct ToolContext {
    /// The session: workspace, configuration and per-session state.
    pub session: Arc<Session>,
    /// Cancelled when the caller stops the call; long-running tools select on it.
    pub cancel: CancellationToken,
    /// Receives progress, when somebody listens.
    pub progress: Option<ProgressSink>,
    /// The id of the call, when the model gave one.
    pub call_id: Option<String>,
}

impl ToolContext {
    /// A context for `session` with a fresh cancellation token and no progress listener.
    pub fn new(session: Arc<Session>) -> Self {
        ToolContext {
            session,
            cancel: CancellationToken::new(),
            progress: None,
            call_id: None,
        }
    }

    /// Sends progress to the listener, if any.
    pub fn report(&self, progress: ToolProgress) {
        if let Some(sink) = &self.progress {
            sink(progress);
        }
    }
}

/// A typed tool. Implement this; the registry does the rest.
pub trait Tool: Send + Sync + 'static {
    /// The model-facing name (snake_case, unique in a registry).
    const NAME: &'static str;
    /// The input: its doc comment is the tool's description, its fields' doc comments describe
    /// the parameters.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;

    /// String parameters (by name, at any depth) the argument layer passes through as given,
    /// without the double-escape repair: the tool interprets their escapes itself (`edit_file`
    /// matches `old_string` literally first, so a `\n` the file really holds is found).
    const RAW_STRINGS: &'static [&'static str] = &[];

    /// What the tool does to the world.
    fn kind(&self) -> ToolKind;

    /// Hints for MCP clients; derived from [`Tool::kind`] unless a tool knows better.
    fn hints(&self) -> ToolHints {
        hints_for(self.kind())
    }

    /// Runs one call. Mistakes the model can fix are returned as [`ToolOutput::error`].
    fn run(&self, input: Self::Input, ctx: ToolContext) -> impl Future<Output = ToolOutput> + Send;
}

/// Default hints for a kind of tool.
pub fn hints_for(kind: ToolKind) -> ToolHints {
    match kind {
        ToolKind::Read => ToolHints {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        ToolKind::Edit => ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        ToolKind::Execute => ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        },
        ToolKind::Session => ToolHints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
    }
}
