//! `lathe mcp`: Lathe's tools served to any MCP client, on stdio or streamable HTTP.
//!
//! This module is the only place that knows rmcp (it changes fast): the rest of Lathe sees
//! [`McpArgs`] and [`run`].

mod approve;
mod classify;
mod convert;
mod gate;
mod handler;
mod http;
mod progress;
mod prompts;
mod resources;
mod sessions;
mod stdio;
mod sub_agents;
mod wire;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clap::Args;
use lathe_policy::ApprovalMode;

use lathe_config::CommonArgs;
use lathe_config::setup::Setup;

/// `lathe mcp`.
#[derive(Debug, Args)]
#[command(
    after_help = concat!(
        "Add Lathe to an MCP client (Claude Desktop, Cursor, ...):\n  {\"mcpServers\": {\"lathe\": {\"command\": \"lathe\", \"args\": [\"mcp\", \"--workspace\", \"/path/to/project\"]}}}\n\n",
        "Sub-agents: spawn_agent and read_sub_agent are offered when a model is configured: \
         --model NAME (with --base-url URL and --provider ollama|openai, as for lathe exec), \
         LATHE_MODEL, or name under [model]; [agent] max_sub_agents and sub_agent_max_turns \
         limit them. Without a model they are not offered."
    )
)]
pub struct McpArgs {
    /// What runs without asking: read-only, ask, auto or full. Where the policy asks, the
    /// client is asked through MCP elicitation, or the call is refused when it cannot be.
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub approval: ApprovalMode,
    /// Never ask, not even before critical commands (`rm -rf ~`, `sudo ...`); deny rules and
    /// the read-only mode still refuse. Only for throwaway machines.
    #[arg(long)]
    pub dangerously_skip_approvals: bool,
    /// Serve MCP's streamable HTTP transport at http://ADDR/mcp instead of stdio. ADDR is
    /// PORT (on 127.0.0.1) or HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
    /// Allow --listen on an address other machines can reach. Anyone who reaches it can read
    /// files and run commands in the workspace.
    #[arg(long, requires = "listen")]
    pub allow_remote: bool,
    /// Over --listen, end a session after DURATION without traffic (`90`, `90s`, `500ms`,
    /// `10m`; `0` never). A session with a call in flight, a running command or an open stream
    /// never expires. Default: `[mcp] session_timeout` in the configuration, else 300 s.
    #[arg(long, value_name = "DURATION", value_parser = parse_timeout)]
    pub session_timeout: Option<Duration>,
    /// The model sub-agents run on (env LATHE_MODEL, or `[model] name`); with one, MCP clients
    /// are offered spawn_agent and read_sub_agent.
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// The model server's protocol: ollama or openai (any OpenAI-compatible server).
    #[arg(long, value_parser = lathe_config::agent_setup::parse_provider)]
    pub provider: Option<lathe_agent::provider::ProviderKind>,
    /// The model server (env OLLAMA_HOST / OPENAI_BASE_URL; default http://127.0.0.1:11434 for
    /// ollama, http://127.0.0.1:8080/v1 for openai).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Append logs to FILE instead of writing them to stderr (stdout only ever carries the
    /// protocol).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Manage the MCP servers Lathe uses (`list`, `add`, `remove`); without one, serve.
    #[command(subcommand)]
    pub action: Option<crate::client::manage::McpAction>,
}

/// Runs the server until the client disconnects (stdio) or a signal arrives (HTTP).
pub async fn run(common: &CommonArgs, mut args: McpArgs) -> anyhow::Result<ExitCode> {
    if let Some(action) = args.action.take() {
        return crate::client::manage::run(common, action).await;
    }
    if let Some(file) = &args.log_file {
        stdio::log_to(file)?;
    }
    let setup = Arc::new(Setup::load(common)?);
    let gates = gate::GateConfig::new(
        setup.config.permissions.clone(),
        args.approval,
        &setup.root,
        args.dangerously_skip_approvals,
    )?;
    let model = lathe_config::agent_setup::ModelArgs {
        model: args.model.clone(),
        provider: args.provider,
        base_url: args.base_url.clone(),
        ..Default::default()
    };
    let sub_agents = sub_agents::SubAgentSetup::resolve(&setup, &model, &gates)?;
    let new_session = {
        let setup = Arc::clone(&setup);
        let sub_agents = sub_agents.clone();
        move || {
            let session = setup.session(session_dir())?;
            if let Some(sub_agents) = &sub_agents {
                sub_agents.install(&session);
            }
            Ok(session)
        }
    };
    let root = setup
        .root
        .canonicalize()
        .unwrap_or_else(|_| setup.root.clone());
    let timeout = args
        .session_timeout
        .or(setup.config.mcp.session_timeout.map(Duration::from_secs))
        .unwrap_or(sessions::DEFAULT_SESSION_TIMEOUT);
    let timeout = (!timeout.is_zero()).then_some(timeout);
    let mut registry = lathe_config::setup::registry();
    lathe_checkpoint::session::register(&mut registry);
    if sub_agents.is_some() {
        lathe_agent::subagent::register_for_sessions(&mut registry);
    }
    // The configured MCP servers' tools, passed on to this server's own clients.
    let (registry, _servers) = crate::client::with_servers(&setup, registry, None).await;
    let shared = handler::Shared::new(registry, gates, &root, new_session);
    if let Some(hooks) = lathe_config::hooks::load(&setup, "mcp")? {
        shared.set_hooks(hooks);
    }
    let signal = match &args.listen {
        Some(addr) => http::serve(shared, addr, args.allow_remote, timeout).await?,
        None => stdio::serve(shared).await?,
    };
    // Ended by a signal: the exit code says which, as for `lathe tool` (128 + its number).
    Ok(match signal {
        Some(number) => ExitCode::from(128u8.saturating_add(number as u8)),
        None => ExitCode::SUCCESS,
    })
}

/// `--session-timeout`: `90`, `90s`, `500ms`, `10m`, `1h`.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        format!(
            "`{text}` is not a duration; give seconds (`90`) or a unit: `500ms`, `90s`, `10m`, `1h`"
        )
    })?;
    let seconds = match unit.trim() {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use ms, s, m or h"
            ));
        }
    };
    Duration::try_from_secs_f64(seconds).map_err(|err| format!("`{text}`: {err}"))
}

/// A fresh state directory for one MCP session (several may live in one process over HTTP).
fn session_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let base = lathe_config::state::new_run_dir();
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let mut name = base.file_name().unwrap_or_default().to_os_string();
    name.push(format!("-mcp{n}"));
    base.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_timeouts_take_units_and_refuse_the_rest() {
        assert_eq!(parse_timeout("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_timeout("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_timeout("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_timeout("10m").unwrap(), Duration::from_secs(600));
        assert_eq!(parse_timeout("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_timeout("0").unwrap(), Duration::ZERO);
        assert!(parse_timeout("soon").unwrap_err().contains("500ms"));
        assert!(parse_timeout("5d").unwrap_err().contains("unknown unit"));
    }
}
