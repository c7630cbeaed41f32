//! The MCP client: tools of the servers under `[mcp_servers.NAME]` join the registry as
//! `mcp__NAME__TOOL`, in `lathe exec`, `lathe chat` and `lathe mcp` (which passes them on to its
//! own clients). Servers start in parallel; one that fails or times out is reported and left
//! out. `lathe mcp list|add|remove` manage the entries ([`manage`]).
//!
//! Like `crate::mcp`, this is the only place that knows rmcp's client side.

pub mod manage;
mod server;
mod tool;

use std::sync::Arc;

use lathe_runtime::Registry;

pub use lathe_config::mcp::ServerConfig;
pub use server::{Elicit, Elicitation, RemoteTool, Server};
pub use tool::{MAX_NAME, McpTool, tool_name};

use lathe_config::setup::Setup;

/// More MCP tools than this, and they are offered on demand (`[mcp] defer_tools_over`).
pub const DEFAULT_DEFER_TOOLS_OVER: usize = 20;
/// More characters of MCP tool definitions than this, and they are offered on demand
/// (`[mcp] defer_chars_over`).
pub const DEFAULT_DEFER_CHARS_OVER: usize = 16_000;

/// Set by Lathe for the MCP servers it starts: how many Lathe clients are above. A Lathe started
/// as a server (a remote workspace) starts its own servers only at depth 1, so that an entry
/// that starts Lathe again cannot recurse.
pub const DEPTH_VAR: &str = "LATHE_MCP_DEPTH";

fn depth() -> u32 {
    std::env::var(DEPTH_VAR)
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// A configured server, started or not.
pub struct Started {
    /// The server.
    pub server: Arc<Server>,
    /// Its tools (those its entry takes), or why it is left out.
    pub tools: Result<Vec<RemoteTool>, String>,
}

/// Starts every server of `setup`'s configuration, in parallel; their elicitation requests go
/// to `elicit` (none: declined).
pub async fn start(setup: &Setup, elicit: Option<Elicit>) -> Vec<Started> {
    let root = setup
        .root
        .canonicalize()
        .unwrap_or_else(|_| setup.root.clone());
    let servers: Vec<Arc<Server>> = setup
        .config
        .mcp_servers
        .iter()
        .map(|(name, config)| Arc::new(Server::new(name, config.clone(), &root, elicit.clone())))
        .collect();
    let started = futures::future::join_all(servers.iter().map(|s| s.start())).await;
    servers
        .into_iter()
        .zip(started)
        .map(|(server, tools)| {
            let tools = tools.map(|all| {
                all.into_iter()
                    .filter(|t| server.config.wants(&t.name))
                    .collect()
            });
            Started { server, tools }
        })
        .collect()
}

/// Adds the started servers' tools to `registry`; when their definitions are over the budget,
/// they are offered on demand (`more_tools`). Returns what people should be told: servers left
/// out, names that collide, tools deferred.
pub fn add_tools(
    registry: &mut Registry,
    started: &[Started],
    defer_tools_over: usize,
    defer_chars_over: usize,
) -> Vec<String> {
    let mut notices = Vec::new();
    let mut added = Vec::new();
    let mut chars = 0;
    for one in started {
        let name = &one.server.name;
        let tools = match &one.tools {
            Ok(tools) => tools,
            Err(reason) => {
                notices.push(format!(
                    "MCP server `{name}` is left out: {}",
                    lathe_config::sanitize::sanitize(reason)
                ));
                continue;
            }
        };
        for remote in tools {
            let tool = McpTool::new(&one.server, remote);
            let definition = lathe_runtime::DynTool::definition(&tool).clone();
            match registry.add(Arc::new(tool)) {
                Ok(()) => {
                    chars += definition.to_function().to_string().len();
                    added.push(definition.name);
                }
                Err(err) => notices.push(format!(
                    "tool `{}` of MCP server `{name}` is left out: {err}",
                    remote.name
                )),
            }
        }
    }
    if added.len() > defer_tools_over || chars > defer_chars_over {
        for name in &added {
            registry.defer(name);
        }
        notices.push(format!(
            "{} MCP tools ({chars} characters of definitions) are over the budget ([mcp] defer_tools_over = {defer_tools_over}, defer_chars_over = {defer_chars_over}): the model finds and enables them with more_tools",
            added.len()
        ));
    }
    notices
}

/// The servers' tools added to `registry`, with the notices said on stderr. `lathe exec`,
/// `chat` and `mcp` call this once at start; only `chat` has someone to put elicitation
/// requests to.
pub async fn with_servers(
    setup: &Setup,
    mut registry: Registry,
    elicit: Option<Elicit>,
) -> (Registry, Vec<Started>) {
    if setup.config.mcp_servers.is_empty() {
        return (registry, Vec::new());
    }
    if depth() >= 2 {
        eprintln!(
            "lathe: MCP servers are not started by a Lathe that is itself two MCP servers deep ({DEPTH_VAR}): an entry that starts Lathe again would recurse"
        );
        return (registry, Vec::new());
    }
    let started = start(setup, elicit).await;
    let mcp = &setup.config.mcp;
    for notice in add_tools(
        &mut registry,
        &started,
        mcp.defer_tools_over.unwrap_or(DEFAULT_DEFER_TOOLS_OVER),
        mcp.defer_chars_over.unwrap_or(DEFAULT_DEFER_CHARS_OVER),
    ) {
        eprintln!("lathe: {notice}");
    }
    (registry, started)
}

/// Ends every server's connection (stdio servers' processes are killed).
pub async fn stop(started: &[Started]) {
    futures::future::join_all(started.iter().map(|s| s.server.stop())).await;
}
