//! What a tool does to the world: its kind, the hints clients read, and the effects of one
//! call as the approval policy judges them.

use serde::{Deserialize, Serialize};

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

/// One thing a call would do, as the approval policy judges it. A tool lists these for each
/// input ([`Tool::effects`](super::Tool::effects)); the policy decides on all of them together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Reads a file or a directory tree (the path as the call gave it: relative to the
    /// workspace root, or absolute).
    Read {
        /// The path as given.
        path: String,
    },
    /// Creates a file or replaces all of its content.
    Write {
        /// The path as given.
        path: String,
    },
    /// Changes part of a file.
    Edit {
        /// The path as given.
        path: String,
    },
    /// Runs a shell command line.
    Command {
        /// The command line.
        command: String,
        /// The directory it runs in, as given (`None`: the workspace root).
        cwd: Option<String>,
        /// True when it would run outside the sandbox without the configuration having chosen
        /// that: such a call always asks.
        outside_sandbox: bool,
    },
    /// Reaches a host over the network.
    Network {
        /// The host name (or address).
        host: String,
    },
    /// Fetches a URL from a host (a GET: reads from the network, changes nothing here). Judged
    /// by `fetch(HOST)` rules; asked about in `ask` and `auto`, refused in `read-only` unless a
    /// rule allows the host, and "always" remembers the host.
    Fetch {
        /// The host as the URL names it (a name or an address).
        host: String,
    },
    /// Reads or changes only the session's own state (its background commands, its plan,
    /// pending previews): nothing outside the session, no files, no programs.
    OwnState {
        /// True when it changes that state (for people; the policy allows both).
        changes: bool,
    },
    /// Changes the project's memory file (`update_memory`): asked about in every mode, with
    /// the plan's diff, and refused in `read-only`; no allow rule or "always" lets it run
    /// unasked. A write or edit of the memory file by another tool is judged the same way.
    Memory {
        /// The memory file, relative to the workspace root.
        path: String,
    },
    /// Something the tool cannot describe in the terms above (a tool from another MCP server,
    /// an embedder's tool that did not say). Asked about in `ask` and `auto`, refused in
    /// `read-only`.
    Unknown {
        /// What is known of it, for the person asked.
        what: String,
    },
}

impl Effect {
    /// True when the effect only reads (a fetch reads from the network and changes nothing
    /// here: such calls run concurrently and need no checkpoint).
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            Effect::Read { .. } | Effect::Fetch { .. } | Effect::OwnState { changes: false }
        )
    }
}
