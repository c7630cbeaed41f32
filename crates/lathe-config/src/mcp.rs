//! The MCP parts of the configuration: `[mcp]` (`lathe mcp`'s own settings) and
//! `[mcp_servers.NAME]` (how to reach one MCP server, and which of its tools to take).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How long a server may take to start and list its tools, unless `startup_timeout_sec` says.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// One MCP server whose tools the agent may call: a program on stdio (`command`, `args`,
/// `env`, `cwd`) or a streamable HTTP endpoint (`url`, `headers`, `bearer_token_env`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// The program to start (stdio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it, over Lathe's own environment.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The directory it starts in (relative: to the workspace root; default: the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// The endpoint of a streamable HTTP server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers sent with every request.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The environment variable holding a bearer token (`Authorization: Bearer ...`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bearer_token_env: Option<String>,
    /// Only these tools (the server's names); default: all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Never these tools.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// Seconds the server may take to start and list its tools (default 30).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub startup_timeout_sec: Option<f64>,
    /// The user vouches for the server: its `readOnlyHint` is believed (such tools run without
    /// asking in `ask` and `auto`). Read from the user's own configuration only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trusted: bool,
}

/// How a server is reached.
#[derive(Debug, Clone, Copy)]
pub enum Transport<'a> {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: &'a str,
    },
    /// Streamable HTTP.
    Http {
        /// The endpoint.
        url: &'a str,
    },
}

impl ServerConfig {
    /// How the server is reached, or what is wrong with the entry `name`.
    pub fn transport(&self, name: &str) -> Result<Transport<'_>, String> {
        match (&self.command, &self.url) {
            (Some(command), None) if !command.trim().is_empty() => Ok(Transport::Stdio { command }),
            (None, Some(url)) if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Transport::Http { url })
            }
            (None, Some(url)) => Err(format!(
                "[mcp_servers.{name}] url '{url}' is not an http:// or https:// address"
            )),
            (Some(_), Some(_)) => Err(format!(
                "[mcp_servers.{name}] has both `command` and `url`: keep one (a program to start, or a streamable HTTP endpoint)"
            )),
            _ => Err(format!(
                "[mcp_servers.{name}] needs `command` (a program to start, with `args`) or `url` (a streamable HTTP endpoint)"
            )),
        }
    }

    /// Whether the server's tool `tool` is taken (`enabled_tools`, `disabled_tools`).
    pub fn wants(&self, tool: &str) -> bool {
        self.enabled_tools
            .as_ref()
            .is_none_or(|on| on.iter().any(|t| t == tool))
            && !self.disabled_tools.iter().any(|t| t == tool)
    }

    /// How long the server may take to start.
    pub fn startup_timeout(&self) -> Duration {
        self.startup_timeout_sec
            .filter(|s| s.is_finite() && *s > 0.0)
            .and_then(|s| Duration::try_from_secs_f64(s).ok())
            .unwrap_or(DEFAULT_STARTUP_TIMEOUT)
    }
}

/// Checks every entry (for the configuration's own check).
pub fn check(servers: &BTreeMap<String, ServerConfig>) -> Result<(), String> {
    for (name, server) in servers {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(format!(
                "[mcp_servers.{name}]: a server's name takes letters, digits, `_` and `-` only (it becomes part of its tools' names, mcp__NAME__TOOL)"
            ));
        }
        server.transport(name)?;
    }
    Ok(())
}

/// `lathe mcp`'s settings in the configuration (`[mcp]`).
#[derive(Debug, Default, Clone, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Seconds without traffic before an idle HTTP session ends; 0: never.
    pub session_timeout: Option<u64>,
    /// More MCP client tools than this (default 20), and they are offered on demand through
    /// `more_tools` instead of all at once.
    pub defer_tools_over: Option<usize>,
    /// More characters of MCP client tool definitions than this (default 16000), and they
    /// are offered on demand.
    pub defer_chars_over: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<BTreeMap<String, ServerConfig>, String> {
        let table: BTreeMap<String, ServerConfig> =
            toml::from_str(text).map_err(|e| e.to_string())?;
        check(&table)?;
        Ok(table)
    }

    #[test]
    fn entries_are_stdio_or_http_and_say_what_is_missing() {
        let servers = parse(
            "[gh]\ncommand = \"gh-mcp\"\nargs = [\"--x\"]\nenv = {A = \"1\"}\ndisabled_tools = [\"delete\"]\n[web]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"TOKEN\"\nstartup_timeout_sec = 2.5\n",
        )
        .unwrap();
        assert!(matches!(
            servers["gh"].transport("gh"),
            Ok(Transport::Stdio { command: "gh-mcp" })
        ));
        assert!(servers["gh"].wants("search") && !servers["gh"].wants("delete"));
        assert_eq!(
            servers["web"].startup_timeout(),
            Duration::from_millis(2500)
        );
        assert_eq!(servers["gh"].startup_timeout(), DEFAULT_STARTUP_TIMEOUT);
        let err = parse("[x]\nargs = [\"a\"]\n").unwrap_err();
        assert!(err.contains("needs `command`"), "{err}");
        let err = parse("[x]\ncommand = \"a\"\nurl = \"http://h/mcp\"\n").unwrap_err();
        assert!(err.contains("both `command` and `url`"), "{err}");
        let err = parse("[x]\nurl = \"ftp://h\"\n").unwrap_err();
        assert!(err.contains("not an http://"), "{err}");
        let err = parse("[\"a b\"]\ncommand = \"a\"\n").unwrap_err();
        assert!(err.contains("letters, digits"), "{err}");
        assert!(
            parse("[x]\ncommand = \"a\"\ncomand = \"b\"\n")
                .unwrap_err()
                .contains("comand")
        );
        let only = parse("[x]\ncommand = \"a\"\nenabled_tools = [\"one\"]\n").unwrap();
        assert!(only["x"].wants("one") && !only["x"].wants("two"));
    }

    #[test]
    fn the_mcp_section_of_the_configuration() {
        let config: McpConfig = toml::from_str("session_timeout = 42").unwrap();
        assert_eq!(config.session_timeout, Some(42));
        assert!(toml::from_str::<McpConfig>("timeout = 1").is_err());
    }
}
