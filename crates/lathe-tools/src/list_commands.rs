//! `list_commands`: the session's commands with their status, runtime and output size.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::shell::{command_state, text};
use lathe_runtime::commands::commands;
use lathe_runtime::session::Session;
use lathe_runtime::tool::{Effect, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult};

/// The `list_commands` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ListCommandsTool;

/// List the commands run in this session (foreground and background): id, status (running,
/// exited with its code, killed, timed out), runtime, output size and the command line. Use the
/// id with `command_output` or `kill_command`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ListCommandsInput {}

impl Tool for ListCommandsTool {
    const NAME: &'static str = "list_commands";
    const COMPACT_DESCRIPTION: Option<&'static str> =
        Some(r#"List this session's commands: id, status, runtime, output size, command line."#);
    const ON_DEMAND: bool = true;
    type Input = ListCommandsInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = (input, session);
        vec![Effect::OwnState { changes: false }]
    }

    async fn run(&self, _input: ListCommandsInput, ctx: ToolContext) -> ToolResult {
        let commands = commands(&ctx.session);
        let supervisor = commands.supervisor().map_err(ToolError::new)?;
        let list = supervisor.list();
        let rows: Vec<serde_json::Value> = list
            .iter()
            .map(|c| {
                json!({
                    "id": c.id.0,
                    "command": c.command,
                    "status": command_state(c.status),
                    "runtime_ms": c.runtime.as_millis() as u64,
                    "bytes": c.output_bytes,
                    "lines": c.output_lines,
                    "background": c.background,
                })
            })
            .collect();
        Ok(ToolOutput::ok(text::list(&list)).with_meta("commands", rows))
    }
}
