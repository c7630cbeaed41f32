//! `kill_command`: stop a running command and every process it started.

use schemars::JsonSchema;
use serde::Deserialize;

use lathe_exec::KillOutcome;

use crate::shell::{IdArg, command_meta, exec_error, parse_id, text};
use lathe_runtime::commands::commands;
use lathe_runtime::session::Session;
use lathe_runtime::text::title;
use lathe_runtime::tool::{Effect, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult};

/// The `kill_command` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct KillCommandTool;

/// Stop a command started with `shell` (in the background, or moved there by its timeout):
/// SIGTERM to it and every process it started, then SIGKILL after a short grace period. Killing
/// a command that already finished says so, and stops any processes it left running.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct KillCommandInput {
    /// The command's id, as `shell` or `list_commands` gave it.
    pub id: IdArg,
}

impl Tool for KillCommandTool {
    const NAME: &'static str = "kill_command";
    const COMPACT_DESCRIPTION: Option<&'static str> =
        Some(r#"Stop a `shell` command (and what it started) by id."#);
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = Some(&[("id", "")]);
    const ON_DEMAND: bool = true;
    type Input = KillCommandInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = (input, session);
        // Stops one of the session's own background commands, nothing else.
        vec![Effect::OwnState { changes: true }]
    }

    fn title(&self, input: &Self::Input) -> String {
        title(Self::NAME, &input.id.as_written())
    }

    async fn run(&self, input: KillCommandInput, ctx: ToolContext) -> ToolResult {
        let id = parse_id(&input.id)?;
        let commands = commands(&ctx.session);
        let supervisor = commands.supervisor().map_err(ToolError::new)?;
        let outcome = supervisor.kill(id).await.map_err(exec_error)?;
        let (status, was_running) = match &outcome {
            KillOutcome::Killed { status, .. } => (*status, true),
            KillOutcome::AlreadyFinished { status, .. } => (*status, false),
        };
        Ok(ToolOutput::ok(text::kill(&outcome))
            .with_command(command_meta(id, status))
            .with_meta("was_running", was_running))
    }
}
