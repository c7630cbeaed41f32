//! What Lathe wants to do, as the policy sees it.

use crate::analysis::CommandAnalysis;
use crate::resolved::FileTarget;

/// Whether a shell command runs inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Sandbox {
    /// Inside the sandbox (the default).
    #[default]
    Enabled,
    /// Outside it (`sandbox: false`): always needs approval.
    Disabled,
}

/// Something Lathe wants to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Read a file (relative to the workspace root, or absolute).
    Read {
        /// The path, as given and as resolved: both are judged.
        path: FileTarget,
    },
    /// Create or overwrite a file.
    Write {
        /// The path, as given and as resolved: both are judged.
        path: FileTarget,
        /// Whether the path resolves inside the workspace (the caller resolves symlinks).
        inside_workspace: bool,
    },
    /// Change part of a file.
    Edit {
        /// The path, as given and as resolved: both are judged.
        path: FileTarget,
        /// Whether the path resolves inside the workspace.
        inside_workspace: bool,
    },
    /// Run a shell command line.
    Shell {
        /// The command's analysis (see [`crate::analyze`]).
        analysis: CommandAnalysis,
        /// Whether it runs in the sandbox.
        sandbox: Sandbox,
    },
    /// Use a tool that is not one of the above.
    Tool {
        /// The tool's name.
        name: String,
        /// Whether it only reads.
        read_only: bool,
    },
    /// Reach a host over the network. Asked about in `ask` and `auto`, refused in `read-only`,
    /// allowed in `full`; a `tool(NAME)` rule decides it like any of the tool's actions.
    Network {
        /// The tool that would reach it.
        tool: String,
        /// The host.
        host: String,
    },
    /// Fetch a URL from a host (`web_fetch`, `web_search`): reads from the network. Asked
    /// about in `ask` and `auto`, refused in `read-only`, allowed in `full`; `fetch(HOST)`
    /// rules (`fetch(docs.rs)`, `fetch(*.github.com)`) and `tool(NAME)` rules decide it.
    Fetch {
        /// The tool that would fetch.
        tool: String,
        /// The host, as the URL names it (a name or an address).
        host: String,
    },
    /// Change the project's memory (the file loaded into every new session's system prompt).
    /// Always asked about, in every mode, whatever the allow rules and even with
    /// `--dangerously-skip-approvals`: memory is never changed unasked. A deny rule (`tool(NAME)`
    /// or `edit(PATH)`) and the read-only mode refuse it.
    Memory {
        /// The memory file, as given and as resolved: both are judged.
        path: FileTarget,
    },
    /// Something a tool could not describe in the terms above (a tool from another MCP server,
    /// a tool that did not say what it does). Judged as the network is: nothing unknown runs
    /// unasked except in `full`.
    Unknown {
        /// The tool.
        tool: String,
        /// What is known of it, for the person asked.
        what: String,
    },
}
