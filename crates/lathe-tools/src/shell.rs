//! `shell`: run a command with `bash -c` in its own process group, with a head/tail preview of
//! its output, the full output kept as an artifact, a soft timeout that moves it to the
//! background, and a whole-tree kill on cancellation. The process supervision itself is
//! `lathe-exec`, which returns data; the session's command state, which `command_output`,
//! `list_commands` and `kill_command` share, is the runtime's `commands` service. This file is
//! the tool, and the `text` module words what all four tell the model.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lathe_exec::{CommandId, CommandReport, CommandSpec, CommandStatus, ExecError, OutputDelta};
use schemars::JsonSchema;
use serde::Deserialize;

use lathe_runtime::session::Session;
use lathe_runtime::text::title;
use lathe_runtime::tool::ResultExt;
use lathe_runtime::tool::{
    CommandMeta, CommandState, Effect, ProgressSink, Tool, ToolContext, ToolError, ToolKind,
    ToolOutput, ToolProgress, ToolResult,
};
use lathe_runtime::workspace::Access;

pub(crate) mod text;

use lathe_runtime::commands::{SandboxStatus, commands, outside_sandbox_unchosen, session_sandbox};

/// The longest soft timeout honoured: a model asking for more means "wait", and a day is that.
const MAX_SOFT_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
/// Live output forwarded to progress listeners per window; beyond it bytes are counted and
/// announced, not streamed (a command printing gigabytes must not flood a terminal or an MCP
/// client). The result and `command_output` always have everything.
const LIVE_BYTES_PER_WINDOW: usize = 64 * 1024;
const LIVE_WINDOW: Duration = Duration::from_millis(250);

/// Parses a command id as the model wrote it (`3`, `"3"`, `"cmd-3"`).
pub(crate) fn parse_id(id: &IdArg) -> Result<CommandId, ToolError> {
    match id {
        IdArg::Number(n) => Ok(CommandId(*n)),
        // The schema says string, so a negative number arrives as text.
        IdArg::Text(given) if given.trim().starts_with('-') => {
            Err(ToolError::new(text::negative_id(given.trim())))
        }
        // A whole float (`1.0`) as text: the id it names.
        IdArg::Text(given)
            if given
                .trim()
                .parse::<f64>()
                .is_ok_and(|f| f.fract() == 0.0 && (0.0..9.0e15).contains(&f)) =>
        {
            Ok(CommandId(
                given.trim().parse::<f64>().unwrap_or_default() as u64
            ))
        }
        IdArg::Text(given) => given.parse::<CommandId>().or_model(|e| text::error(&e)),
    }
}

/// A command id: a number, or a string such as `"3"` or `"cmd-3"`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum IdArg {
    /// `3`.
    Number(u64),
    /// `"3"`, `"cmd-3"`.
    Text(String),
}

impl JsonSchema for IdArg {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "CommandId".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            // One type: a type array is not portable (strict clients flag it). A string, so
            // that "cmd-3" fits the schema too; a number such as 3 is still accepted.
            "type": "string",
            "description": "The command's id, as `shell` or `list_commands` gave it (e.g. \"3\")."
        })
    }
}

impl IdArg {
    /// The id as the call wrote it, for a title.
    pub(crate) fn as_written(&self) -> String {
        match self {
            IdArg::Number(n) => n.to_string(),
            IdArg::Text(text) => text.clone(),
        }
    }
}

/// A command's status as the command tools' results report it.
pub(crate) fn command_state(status: CommandStatus) -> CommandState {
    match status {
        CommandStatus::Running => CommandState::Running,
        CommandStatus::Exited { code } => CommandState::Exited { exit_code: code },
        CommandStatus::Signaled { signal } => CommandState::Signaled { signal },
        CommandStatus::Killed { .. } => CommandState::Killed {
            label: status.label(),
        },
        CommandStatus::TimedOut { limit } => CommandState::TimedOut { limit },
    }
}

/// The command a result is about, for its metadata.
pub(crate) fn command_meta(id: CommandId, status: CommandStatus) -> CommandMeta {
    CommandMeta {
        id: id.0,
        status: command_state(status),
    }
}

/// An `ExecError` as a tool error: the ones the model can fix say what to do; the others are
/// faults, reported as errors too (the model cannot fix them but must know the call failed).
pub(crate) fn exec_error(error: ExecError) -> ToolError {
    ToolError::new(text::error(&error))
}

/// The `shell` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ShellTool;

/// Run a shell command (`bash -c`) in the workspace and get its exit code and output.
///
/// The result starts with a header: exit code (or signal), wall time, output size in bytes and
/// lines, and the command's id. stdout and stderr are merged in the order they were written.
/// Long output shows its head and tail with the omitted part counted; the full output is kept:
/// read it with `command_output` (by byte offset, or `search` with a regex).
///
/// The command runs non-interactively: stdin is empty, `TERM=dumb`, no pager, no prompts (pass
/// `-y` style flags to installers). Use `background: true` for servers and watchers, then
/// `command_output`, `list_commands` and `kill_command`. A command still running after `timeout`
/// seconds keeps running in the background and the result gives its id; without `timeout`, the
/// call waits until the command ends.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ShellInput {
    /// The command line, run with `bash -c` (or `sh -c` where bash is missing). Pipes, `&&`,
    /// redirections and `cd` work as in a terminal.
    pub command: String,
    /// Working directory, relative to the workspace root. Default: the workspace root.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Seconds to wait before returning with the output so far; the command then keeps running
    /// in the background. Default: wait until it ends.
    #[serde(default)]
    pub timeout: Option<f64>,
    /// Start the command and return its id at once, without waiting. Default false.
    #[serde(default)]
    pub background: bool,
    /// Run in the sandbox (writes only inside the workspace and temporary directories such as
    /// /tmp, no network). Default
    /// true. When a command failed because of the sandbox (e.g. "Permission denied" or
    /// "Read-only file system" writing outside the workspace, or a network error), you may run
    /// it again with `sandbox: false`; that always needs the user's approval.
    #[serde(default = "default_true")]
    pub sandbox: bool,
}

/// The longest command `bash -c` can take: one argument of at most `MAX_ARG_STRLEN` (32 pages)
/// bytes, its NUL included.
const MAX_COMMAND_BYTES: usize = 32 * 4096 - 1;

fn default_true() -> bool {
    true
}

impl Tool for ShellTool {
    const NAME: &'static str = "shell";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Run a command with `bash -c` in the workspace: exit code and output (long output is cut; command_output reads it all by id). No stdin, no prompts (pass `-y`). `background: true` for servers; past `timeout` seconds it goes on in the background."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = Some(&[
        ("command", ""),
        ("timeout", ""),
        ("background", ""),
        (
            "sandbox",
            r#"Default true: no writes outside the workspace and /tmp, no network. If that made it fail, retry with false (asks the user)."#,
        ),
    ]);
    const ALIASES: &'static [&'static str] = &[
        "bash",
        "sh",
        "run",
        "exec",
        "execute",
        "execute_command",
        "run_command",
        "terminal",
        "command",
        "cmd",
        "run_shell_command",
        "shell_command",
        "run_terminal_cmd",
        "execute_bash",
    ];
    type Input = ShellInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        vec![Effect::Command {
            command: input.command.clone(),
            cwd: input.cwd.clone(),
            outside_sandbox: outside_sandbox_unchosen(session, input.sandbox),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        title(Self::NAME, &input.command)
    }

    async fn run(&self, input: ShellInput, ctx: ToolContext) -> ToolResult {
        if input.command.len() > MAX_COMMAND_BYTES {
            return Err(ToolError::new(format!(
                "the command is {} bytes long; the kernel refuses a command line over {} bytes. \
                 Write the script to a file with write_file, then run it (e.g. `bash script.sh`)",
                input.command.len(),
                MAX_COMMAND_BYTES
            )));
        }
        if input.command.contains('\0') {
            return Err(ToolError::new(
                "the command contains a NUL character, which a command line cannot hold; \
                 remove it (to print one, use printf '\\0')",
            ));
        }
        let session = Arc::clone(&ctx.session);
        let workspace = session.workspace();
        let cwd = match input.cwd.as_deref().map(str::trim) {
            None | Some("") | Some(".") => workspace.root().to_path_buf(),
            Some(dir) => match workspace.resolve(dir, Access::Write) {
                Ok(resolved) if resolved.abs().is_dir() => resolved.abs().to_path_buf(),
                Ok(resolved) if resolved.abs().exists() => {
                    return Err(ToolError::new(format!(
                        "cwd '{}' is not a directory: give a directory relative to the workspace root",
                        resolved.shown()
                    )));
                }
                Ok(resolved) => {
                    return Err(ToolError::new(format!(
                        "cwd '{}' does not exist: create it first (mkdir -p) or give an existing directory",
                        resolved.shown()
                    )));
                }
                Err(error) => return Err(ToolError::new(format!("cwd refused: {error}"))),
            },
        };
        let mut spec = CommandSpec::new(input.command, cwd);
        if input.background {
            spec = spec.background();
        } else if let Some(seconds) = input.timeout {
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(ToolError::new(format!(
                    "timeout must be a positive number of seconds, got {seconds}; leave it out to wait until the command ends"
                )));
            }
            // Past what a Duration holds (1e308) is as much "wait" as a day.
            let timeout = Duration::try_from_secs_f64(seconds).unwrap_or(MAX_SOFT_TIMEOUT);
            spec = spec.soft_timeout(timeout.min(MAX_SOFT_TIMEOUT));
        }
        let commands = commands(&session);
        let supervisor = commands.supervisor().map_err(ToolError::new)?;
        let sandbox = session_sandbox(&session);
        let unsandboxed = match (&sandbox.status, input.sandbox) {
            (SandboxStatus::Active(prepared), true) => {
                spec = spec.sandbox(prepared.clone());
                None
            }
            (SandboxStatus::Failed(error), true) => {
                return Err(ToolError::new(format!(
                    "the sandbox is configured but cannot be set up ({error}); commands are not \
                     run unsandboxed unless you pass `sandbox: false`, which needs the user's approval"
                )));
            }
            (SandboxStatus::Active(_) | SandboxStatus::Failed(_), false) => {
                Some("not sandboxed (sandbox: false)")
            }
            (SandboxStatus::Off, _) => Some("not sandboxed (turned off in the configuration)"),
            (SandboxStatus::Unavailable { .. }, _) => Some("not sandboxed (landlock unavailable)"),
        };
        if let Some(sink) = ctx.progress.clone() {
            let live = Arc::new(LiveOutput::new(sink));
            spec = spec.on_output(Arc::new(move |delta: OutputDelta<'_>| {
                live.push(delta.bytes)
            }));
        }
        let report = supervisor
            .run(spec, &ctx.cancel)
            .await
            .map_err(exec_error)?;
        let mut output = report_output(&report, unsandboxed);
        if let Some(notice) = sandbox.take_notice() {
            if !output.text.ends_with('\n') {
                output.text.push('\n');
            }
            output.text.push_str(&format!("[note: {notice}]"));
        }
        Ok(output)
    }
}

/// The tool result for a report: its text (with why it ran unsandboxed, if it did), and
/// metadata for interfaces.
fn report_output(report: &CommandReport, unsandboxed: Option<&str>) -> ToolOutput {
    let mut output = ToolOutput::ok(text::report(report, unsandboxed))
        .with_command(command_meta(report.id, report.status))
        .with_meta("wall_ms", report.wall_time.as_millis() as u64)
        .with_meta("bytes", report.total_bytes)
        .with_meta("lines", report.total_lines)
        .with_meta("artifact", report.artifact.name.clone())
        .with_meta("sandboxed", report.is_sandboxed());
    if report.is_cut() {
        output = output.with_meta("truncated", true);
    }
    output
}

/// Forwards output to a progress listener, at most `LIVE_BYTES_PER_WINDOW` per window, without
/// splitting UTF-8 characters across pieces.
struct LiveOutput {
    sink: ProgressSink,
    state: Mutex<LiveState>,
}

struct LiveState {
    window_start: Instant,
    sent: usize,
    skipped: u64,
    /// The start of a UTF-8 character cut at the end of the last piece.
    carry: Vec<u8>,
}

impl LiveOutput {
    fn new(sink: ProgressSink) -> Self {
        LiveOutput {
            sink,
            state: Mutex::new(LiveState {
                window_start: Instant::now(),
                sent: 0,
                skipped: 0,
                carry: Vec::new(),
            }),
        }
    }

    fn push(&self, bytes: &[u8]) {
        let mut events = Vec::new();
        {
            let mut state = self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if state.window_start.elapsed() >= LIVE_WINDOW {
                if state.skipped > 0 {
                    events.push(ToolProgress::Status {
                        message: text::not_shown_live(state.skipped),
                    });
                }
                state.window_start = Instant::now();
                state.sent = 0;
                state.skipped = 0;
            }
            if state.sent + bytes.len() <= LIVE_BYTES_PER_WINDOW {
                state.sent += bytes.len();
                let mut piece = std::mem::take(&mut state.carry);
                piece.extend_from_slice(bytes);
                let keep = match std::str::from_utf8(&piece) {
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    _ => piece.len(),
                };
                state.carry = piece.split_off(keep);
                if !piece.is_empty() {
                    events.push(ToolProgress::Output {
                        text: String::from_utf8_lossy(&piece).into_owned(),
                    });
                }
            } else {
                state.skipped += bytes.len() as u64;
                state.carry.clear();
            }
        }
        for event in events {
            (self.sink)(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn live_output_keeps_characters_whole_and_caps_the_flow() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink_seen = Arc::clone(&seen);
        let live = LiveOutput::new(Arc::new(move |p| sink_seen.lock().unwrap().push(p)));
        let text = "héllo wörld";
        let bytes = text.as_bytes();
        for chunk in bytes.chunks(2) {
            live.push(chunk);
        }
        let joined: String = seen
            .lock()
            .unwrap()
            .iter()
            .map(|p| match p {
                ToolProgress::Output { text } => text.clone(),
                ToolProgress::Status { .. } => String::new(),
            })
            .collect();
        assert_eq!(joined, text);
        // Fill the window exactly: the next piece is over the cap.
        live.push(&vec![b'x'; LIVE_BYTES_PER_WINDOW - bytes.len()]);
        let before = seen.lock().unwrap().len();
        live.push(b"over the cap");
        assert_eq!(
            seen.lock().unwrap().len(),
            before,
            "capped within the window"
        );
    }

    #[test]
    fn ids_parse_from_numbers_and_strings() {
        assert_eq!(parse_id(&IdArg::Number(3)).unwrap(), CommandId(3));
        assert_eq!(
            parse_id(&IdArg::Text("cmd-4".into())).unwrap(),
            CommandId(4)
        );
        assert!(parse_id(&IdArg::Text("../etc".into())).is_err());
    }
}
