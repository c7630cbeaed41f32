//! A server's tool in the registry: `mcp__SERVER__TOOL`, with the server's schema made
//! portable, judged as outside code.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use lathe_runtime::{
    BoundCall, DynTool, Effect, Session, ToolContext, ToolDefinition, ToolHints, ToolKind,
    ToolOutput,
};

use super::server::{RemoteTool, Server};

/// The longest registered name: what OpenAI-compatible servers accept for a function.
pub const MAX_NAME: usize = 64;

/// The registry's name for `tool` of `server`: `mcp__SERVER__TOOL` (as Claude Code names
/// them), with every character but ASCII letters, digits, `_` and `-` made `_`, and cut to
/// [`MAX_NAME`] bytes with a short hash of the whole kept so that cut names stay apart.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let name = format!("mcp__{}__{}", clean(server), clean(tool));
    if name.len() <= MAX_NAME {
        return name;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{}_{hash}", &name[..MAX_NAME - hash.len() - 1])
}

/// One tool of one server.
pub struct McpTool {
    definition: ToolDefinition,
    remote: String,
    /// The server said it only reads, and the user trusts the server.
    trusted_read: bool,
    server: Arc<Server>,
}

impl McpTool {
    /// The registry entry for `tool` of `server`.
    pub fn new(server: &Arc<Server>, tool: &RemoteTool) -> McpTool {
        let trusted_read = tool.read_only && server.config.trusted;
        let description = if tool.description.trim().is_empty() {
            format!("`{}` of the MCP server `{}`.", tool.name, server.name)
        } else {
            tool.description.clone()
        };
        McpTool {
            definition: ToolDefinition {
                name: tool_name(&server.name, &tool.name),
                description,
                parameters: lathe_runtime::portable_schema(tool.schema.clone()),
                aliases: Vec::new(),
                kind: if trusted_read {
                    ToolKind::Read
                } else {
                    ToolKind::Execute
                },
                hints: ToolHints {
                    read_only: tool.read_only,
                    destructive: !tool.read_only,
                    idempotent: false,
                    open_world: true,
                },
                raw_strings: Vec::new(),
            },
            remote: tool.name.clone(),
            trusted_read,
            server: Arc::clone(server),
        }
    }
}

impl DynTool for McpTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String> {
        if !arguments.is_object() && !arguments.is_null() {
            return Err("the arguments must be a JSON object".to_owned());
        }
        Ok(Box::new(McpCall {
            name: self.definition.name.clone(),
            remote: self.remote.clone(),
            arguments: arguments.clone(),
            trusted_read: self.trusted_read,
            server: Arc::clone(&self.server),
        }))
    }
}

struct McpCall {
    name: String,
    remote: String,
    arguments: Value,
    trusted_read: bool,
    server: Arc<Server>,
}

impl BoundCall for McpCall {
    fn effects(&self, _session: &Session) -> Vec<Effect> {
        if self.trusted_read {
            // The user vouched for the server, and the server says this tool only reads:
            // nothing in the workspace or outside changes, as far as Lathe can be told.
            return vec![Effect::OwnState { changes: false }];
        }
        vec![Effect::Unknown {
            what: format!(
                "`{}` of the MCP server `{}`: outside code, which may do anything the server can",
                self.remote, self.server.name
            ),
        }]
    }

    fn title(&self) -> String {
        let args = match &self.arguments {
            Value::Object(map) if !map.is_empty() => self.arguments.to_string(),
            _ => String::new(),
        };
        let args = lathe_agent::text::cut(&args, 80);
        format!("{} {args}", self.name).trim_end().to_owned()
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            // The erased contract: an error result, not an `Err`, above the registry.
            self.server
                .call(&self.remote, self.arguments, &ctx)
                .await
                .unwrap_or_else(ToolOutput::from)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_claude_codes_sanitised_and_cut_apart() {
        assert_eq!(
            tool_name("github", "search_issues"),
            "mcp__github__search_issues"
        );
        assert_eq!(tool_name("docs", "get.page v2"), "mcp__docs__get_page_v2");
        let long_a = tool_name("server", &"a".repeat(80));
        let long_b = tool_name("server", &format!("{}b", "a".repeat(79)));
        assert_eq!(long_a.len(), MAX_NAME);
        assert!(long_a.starts_with("mcp__server__aaa"));
        assert_ne!(long_a, long_b);
    }
}
