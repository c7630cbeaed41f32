//! lathe-mcp: Lathe over the Model Context Protocol, both ways. [`server`] is `lathe mcp`: the
//! tool runtime served to an MCP client over stdio or streamable HTTP (tools, prompts from
//! project commands, resources for commands' output, elicitation as the approver, sub-agents,
//! checkpoints). [`client`] connects to the MCP servers of `[mcp_servers.*]` and registers their
//! tools in the session's registry, and `lathe mcp add|list|remove` edits that configuration.
//!
//! The only crate that knows rmcp; it builds on `lathe-config` and `lathe-agent`, and knows no
//! terminal: the elicitation form a terminal shows is the binary's ([`client::Elicit`]).

pub mod client;
pub mod server;
