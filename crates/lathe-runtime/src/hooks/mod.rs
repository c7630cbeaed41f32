//! Command hooks: the user's (or a trusted workspace's) commands run at points of a session,
//! configured under `[hooks]` in the shape Claude Code's hooks use, so their scripts port.
//!
//! Each event (`SessionStart`, `UserPromptSubmit`, `PreToolUse`, `PostToolUse`, `Stop`) holds
//! groups of a `matcher` (a tool-name pattern for the tool events: empty or `*` matches every
//! tool, otherwise a regular expression that must match the whole name, so `shell` is that tool
//! only and `edit|write` or `mcp__.*` are alternatives) and `hooks = [{ type = "command",
//! command = "...", timeout = 60 }]` (or `command`/`timeout` on the group itself).
//!
//! A hook reads a JSON description of the event on stdin (`session_id`, `cwd`,
//! `hook_event_name`, and `tool_name`, `tool_input`, `tool_response`, `prompt`,
//! `stop_hook_active` where they apply). Exit 2 blocks (its stderr is the reason); exit 0 with
//! a JSON object on stdout answers (`hookSpecificOutput.permissionDecision` of `allow`, `deny`
//! or `ask` with `permissionDecisionReason`; `decision: "block"` with `reason`;
//! `hookSpecificOutput.additionalContext`); any other exit, output that is not JSON, a hook that
//! cannot start or runs past its timeout (then it is killed with everything it started) is
//! noted and the run goes on.
//!
//! A hook runs as any command does, under a `lathe-exec` supervisor of its own (see
//! [`Supervisor::run_piped`]): in its own session and process group, marked, and covered by the
//! guard. What it leaves running when it ends (`sleep 100 &`, a daemon that forks twice) is
//! killed then, and a SIGKILLed Lathe leaves none of its processes behind. Its environment is
//! Lathe's own, as it is (plus the supervisor's mark): unlike the model's commands, hooks are
//! the user's.
//!
//! [`ProjectHooks`] runs them; as a dispatcher [`Hook`] (one of a [`Host`](crate::Host)'s hooks) it
//! runs the tool events for every front end (the agent, `lathe mcp`, `lathe tool`), and front
//! ends call [`ProjectHooks::run`] for the others.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::future::BoxFuture;
use lathe_exec::{CommandStatus, ExecError, PipedSpec, Supervisor};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::dispatch::{CallInfo, CallStatus, Hook, Outcome, PreToolAnswer};
use crate::session::Session;

#[cfg(test)]
mod tests;

/// A hook's timeout when its entry gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// How much of a hook's stdout or stderr is kept.
const OUTPUT_CAP: usize = 64 * 1024;

/// The points of a session where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookEvent {
    /// A session started (or resumed).
    SessionStart,
    /// The user submitted a prompt, before the model sees it.
    UserPromptSubmit,
    /// A tool call is about to be authorized.
    PreToolUse,
    /// A tool call ran.
    PostToolUse,
    /// The model ended its answer.
    Stop,
}

impl HookEvent {
    /// The name in the configuration and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::Stop => "Stop",
        }
    }
}

/// One command of a group.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// `"command"` (the only kind); may be left out.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The command, run by `sh -c` in the workspace.
    pub command: String,
    /// Seconds before it is killed; 60 when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// A matcher and its commands.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookGroup {
    /// The tool-name pattern (tool events only); empty or `*` matches every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// The commands, run in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<HookCommand>,
    /// A single command, instead of `hooks`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The single command's timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
}

/// `[hooks]`: the groups of each event.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HooksConfig {
    /// `SessionStart`.
    #[serde(rename = "SessionStart", skip_serializing_if = "Vec::is_empty")]
    pub session_start: Vec<HookGroup>,
    /// `UserPromptSubmit`.
    #[serde(rename = "UserPromptSubmit", skip_serializing_if = "Vec::is_empty")]
    pub user_prompt_submit: Vec<HookGroup>,
    /// `PreToolUse`.
    #[serde(rename = "PreToolUse", skip_serializing_if = "Vec::is_empty")]
    pub pre_tool_use: Vec<HookGroup>,
    /// `PostToolUse`.
    #[serde(rename = "PostToolUse", skip_serializing_if = "Vec::is_empty")]
    pub post_tool_use: Vec<HookGroup>,
    /// `Stop`.
    #[serde(rename = "Stop", skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<HookGroup>,
}

impl HooksConfig {
    /// Whether no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.session_start.is_empty()
            && self.user_prompt_submit.is_empty()
            && self.pre_tool_use.is_empty()
            && self.post_tool_use.is_empty()
            && self.stop.is_empty()
    }

    fn groups(&self, event: HookEvent) -> &[HookGroup] {
        match event {
            HookEvent::SessionStart => &self.session_start,
            HookEvent::UserPromptSubmit => &self.user_prompt_submit,
            HookEvent::PreToolUse => &self.pre_tool_use,
            HookEvent::PostToolUse => &self.post_tool_use,
            HookEvent::Stop => &self.stop,
        }
    }
}

/// One command ready to run.
#[derive(Debug, Clone)]
struct Compiled {
    matcher: Option<regex::Regex>,
    command: String,
    timeout: Duration,
}

/// What the hooks of one event answered, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookAnswer {
    /// Exit 2 (its stderr) or `decision: "block"` (its reason): the event is refused.
    pub block: Option<String>,
    /// `permissionDecision: "deny"` with its reason (tool events).
    pub deny: Option<String>,
    /// `permissionDecision: "allow"`.
    pub allow: bool,
    /// `additionalContext` (and a SessionStart or UserPromptSubmit hook's plain stdout), for
    /// the model.
    pub context: Vec<String>,
}

/// Where notes about hooks that failed go (a one-line message each).
pub type NoteSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The configured hooks of a session, ready to run.
pub struct ProjectHooks {
    events: Vec<(HookEvent, Vec<Compiled>)>,
    session_id: String,
    cwd: PathBuf,
    notes: NoteSink,
    /// The supervisor hooks run under, made for the first hook that runs (or why it could not
    /// be).
    processes: OnceLock<Result<Processes, String>>,
}

/// A supervisor for the hooks alone. Its state directory is a temporary one, since
/// [`Supervisor::run_piped`] keeps no artifact there and the session's may not exist yet (a
/// `SessionStart` hook) or be shared by several sessions (`lathe mcp`).
struct Processes {
    supervisor: Supervisor,
    /// Removed after the supervisor (fields drop in declaration order), whose drop kills
    /// whatever a hook still runs.
    _state: tempfile::TempDir,
}

impl Processes {
    fn new() -> Result<Processes, String> {
        let state = tempfile::Builder::new()
            .prefix("lathe-hooks-")
            .tempdir()
            .map_err(|err| format!("cannot create a temporary directory: {err}"))?;
        // No grace: a hook past its timeout is killed with SIGKILL at once, as it always was.
        let supervisor = Supervisor::builder(state.path())
            .kill_grace(Duration::ZERO)
            .build()
            .map_err(|err| err.to_string())?;
        Ok(Processes {
            supervisor,
            _state: state,
        })
    }
}

impl std::fmt::Debug for ProjectHooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProjectHooks")
            .field("events", &self.events)
            .field("session_id", &self.session_id)
            .field("cwd", &self.cwd)
            .finish()
    }
}

fn compile_matcher(
    event: HookEvent,
    matcher: Option<&str>,
) -> Result<Option<regex::Regex>, String> {
    match matcher.map(str::trim) {
        None | Some("") | Some("*") => Ok(None),
        Some(pattern) => regex::Regex::new(&format!("^(?:{pattern})$"))
            .map(Some)
            .map_err(|err| {
                format!(
                    "invalid [hooks] {} matcher '{pattern}': {err}; give a tool name, names \
                     joined by | or a regular expression (\"*\" matches every tool)",
                    event.name()
                )
            }),
    }
}

impl ProjectHooks {
    /// Checks and compiles `config`; `Err` names the bad entry and what to write instead.
    /// The hooks run in `cwd`, and `session_id` is what they read as `session_id`.
    pub fn new(
        config: &HooksConfig,
        cwd: PathBuf,
        session_id: impl Into<String>,
        notes: NoteSink,
    ) -> Result<ProjectHooks, String> {
        let mut events = Vec::new();
        for event in [
            HookEvent::SessionStart,
            HookEvent::UserPromptSubmit,
            HookEvent::PreToolUse,
            HookEvent::PostToolUse,
            HookEvent::Stop,
        ] {
            let mut compiled = Vec::new();
            for group in config.groups(event) {
                let matcher = compile_matcher(event, group.matcher.as_deref())?;
                let mut commands = group.hooks.clone();
                if let Some(command) = &group.command {
                    commands.push(HookCommand {
                        kind: None,
                        command: command.clone(),
                        timeout: group.timeout,
                    });
                }
                if commands.is_empty() {
                    return Err(format!(
                        "a [hooks] {} entry has no command: give command = \"...\" or hooks = \
                         [{{ type = \"command\", command = \"...\" }}]",
                        event.name()
                    ));
                }
                for command in commands {
                    if let Some(kind) = command.kind.as_deref()
                        && kind != "command"
                    {
                        return Err(format!(
                            "a [hooks] {} entry has type = \"{kind}\"; Lathe runs only type = \
                             \"command\"",
                            event.name()
                        ));
                    }
                    if command.command.trim().is_empty() {
                        return Err(format!("a [hooks] {} command is empty", event.name()));
                    }
                    compiled.push(Compiled {
                        matcher: matcher.clone(),
                        command: command.command,
                        timeout: command
                            .timeout
                            .filter(|&s| s > 0)
                            .map_or(DEFAULT_TIMEOUT, Duration::from_secs),
                    });
                }
            }
            if !compiled.is_empty() {
                events.push((event, compiled));
            }
        }
        Ok(ProjectHooks {
            events,
            session_id: session_id.into(),
            cwd,
            notes,
            processes: OnceLock::new(),
        })
    }

    /// Whether any hook is configured for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.events.iter().any(|(e, _)| *e == event)
    }

    fn note(&self, message: &str) {
        tracing::warn!("{message}");
        (self.notes)(message);
    }

    /// Runs the hooks of `event` (those whose matcher matches `tool`, for the tool events)
    /// with `fields` added to the common input, one after the other, and combines their
    /// answers. A hook that fails is noted and counts as no answer.
    pub async fn run(&self, event: HookEvent, tool: Option<&str>, fields: Value) -> HookAnswer {
        let mut answer = HookAnswer::default();
        let Some((_, commands)) = self.events.iter().find(|(e, _)| *e == event) else {
            return answer;
        };
        let mut input = json!({
            "session_id": self.session_id,
            "cwd": self.cwd,
            "hook_event_name": event.name(),
        });
        if let (Value::Object(input), Value::Object(fields)) = (&mut input, fields) {
            input.extend(fields);
        }
        let stdin = input.to_string();
        for command in commands {
            if let (Some(matcher), Some(tool)) = (&command.matcher, tool)
                && !matcher.is_match(tool)
            {
                continue;
            }
            self.run_one(event, command, &stdin, &mut answer).await;
            if answer.block.is_some() || answer.deny.is_some() {
                break;
            }
        }
        answer
    }

    async fn run_one(
        &self,
        event: HookEvent,
        hook: &Compiled,
        stdin: &str,
        answer: &mut HookAnswer,
    ) {
        let name = event.name();
        let shown = crate::text::one_line(&hook.command, 80);
        let processes = self.processes.get_or_init(Processes::new);
        let ran = match run_command(processes, &hook.command, &self.cwd, stdin, hook.timeout).await
        {
            Ok(ran) => ran,
            Err(RunError::Start(err)) => {
                self.note(&format!("{name} hook `{shown}` could not start: {err}"));
                return;
            }
            Err(RunError::TimedOut) => {
                self.note(&format!(
                    "{name} hook `{shown}` ran past its timeout of {}s and was killed; the run \
                     goes on (raise `timeout` in its [hooks] entry if it needs longer)",
                    hook.timeout.as_secs()
                ));
                return;
            }
        };
        match ran.code {
            Some(0) => {}
            Some(2) => {
                let reason = ran.stderr.trim();
                answer.block = Some(if reason.is_empty() {
                    format!("a {name} hook blocked this (exit 2) without a reason")
                } else {
                    reason.to_owned()
                });
                return;
            }
            code => {
                let how = code.map_or_else(
                    || "was killed by a signal".to_owned(),
                    |c| format!("exited {c}"),
                );
                let stderr = crate::text::one_line(ran.stderr.trim(), 200);
                self.note(&format!(
                    "{name} hook `{shown}` {how}{}; ignored, the run goes on",
                    if stderr.is_empty() {
                        String::new()
                    } else {
                        format!(": {stderr}")
                    }
                ));
                return;
            }
        }
        let stdout = ran.stdout.trim();
        if stdout.is_empty() {
            return;
        }
        let parsed: Option<serde_json::Map<String, Value>> = if stdout.starts_with('{') {
            serde_json::from_str(stdout).ok()
        } else {
            None
        };
        let Some(object) = parsed else {
            // Plain text: context for the events that take it (as Claude Code does), else noted.
            if matches!(event, HookEvent::SessionStart | HookEvent::UserPromptSubmit) {
                answer.context.push(stdout.to_owned());
            } else {
                self.note(&format!(
                    "{name} hook `{shown}` printed output that is not a JSON object; ignored"
                ));
            }
            return;
        };
        let specific = object.get("hookSpecificOutput").and_then(Value::as_object);
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        if let Some(context) = text(specific.and_then(|s| s.get("additionalContext")))
            .or_else(|| text(object.get("additionalContext")))
        {
            answer.context.push(context);
        }
        let reason = text(specific.and_then(|s| s.get("permissionDecisionReason")))
            .or_else(|| text(object.get("reason")));
        match specific
            .and_then(|s| s.get("permissionDecision"))
            .and_then(Value::as_str)
        {
            Some("allow") => answer.allow = true,
            Some("deny") => {
                answer.deny = Some(
                    reason
                        .clone()
                        .unwrap_or_else(|| format!("a {name} hook denied this")),
                );
            }
            Some("ask") | None => {}
            Some(other) => self.note(&format!(
                "{name} hook `{shown}` answered permissionDecision \"{other}\"; Lathe reads \
                 allow, deny or ask; ignored"
            )),
        }
        match object.get("decision").and_then(Value::as_str) {
            Some("block") => {
                answer.block =
                    Some(reason.unwrap_or_else(|| format!("a {name} hook blocked this")));
            }
            Some("approve") if event == HookEvent::PreToolUse => answer.allow = true,
            _ => {}
        }
        if object.get("continue").and_then(Value::as_bool) == Some(false) && answer.block.is_none()
        {
            answer.block = Some(
                text(object.get("stopReason"))
                    .unwrap_or_else(|| format!("a {name} hook stopped this")),
            );
        }
    }
}

/// What a finished hook did.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

enum RunError {
    Start(String),
    TimedOut,
}

/// Runs `command` with `sh -c` in `cwd`, `stdin` on its stdin, under the hooks' supervisor: in
/// its own session and process group, killed with everything it started past `timeout`, and
/// what it leaves running killed when it ends.
async fn run_command(
    processes: &Result<Processes, String>,
    command: &str,
    cwd: &std::path::Path,
    stdin: &str,
    timeout: Duration,
) -> Result<Ran, RunError> {
    let processes = processes
        .as_ref()
        .map_err(|err| RunError::Start(err.clone()))?;
    let spec = PipedSpec::new("sh", cwd)
        .arg("-c")
        .arg(command)
        .stdin(stdin.as_bytes())
        .timeout(timeout)
        .output_cap(OUTPUT_CAP);
    let out = match processes.supervisor.run_piped(spec).await {
        Ok(out) => out,
        // The system's reason alone (`No such file or directory`), as it always read.
        Err(ExecError::Spawn { source, .. }) => return Err(RunError::Start(source.to_string())),
        Err(err) => return Err(RunError::Start(err.to_string())),
    };
    if out.killed > 0 {
        tracing::debug!(
            "hook `{command}`: {} processes killed at its end",
            out.killed
        );
    }
    let code = match out.status {
        CommandStatus::TimedOut { .. } => return Err(RunError::TimedOut),
        CommandStatus::Exited { code } => Some(code),
        _ => None,
    };
    Ok(Ran {
        code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// The result as a hook reads it in `tool_response`.
fn tool_response(outcome: &Outcome) -> Value {
    json!({
        "output": outcome.output.text,
        "is_error": outcome.output.is_error,
        "status": outcome.status,
    })
}

impl Hook for ProjectHooks {
    fn pre_tool_use<'a>(
        &'a self,
        call: &'a CallInfo,
        _session: &'a Session,
    ) -> BoxFuture<'a, PreToolAnswer> {
        Box::pin(async move {
            if !self.has(HookEvent::PreToolUse) {
                return PreToolAnswer::default();
            }
            let answer = self
                .run(
                    HookEvent::PreToolUse,
                    Some(&call.name),
                    json!({ "tool_name": call.name, "tool_input": call.arguments }),
                )
                .await;
            let refuse = if let Some(reason) = answer.block {
                Some(Outcome::ended(
                    CallStatus::Refused,
                    format!("a PreToolUse hook refused this call; it did not run: {reason}"),
                ))
            } else {
                answer.deny.map(|reason| {
                    Outcome::ended(
                        CallStatus::Denied,
                        format!("a PreToolUse hook denied this call; it did not run: {reason}"),
                    )
                })
            };
            PreToolAnswer {
                refuse,
                allow: answer.allow,
                context: answer.context,
            }
        })
    }

    fn post_tool_use<'a>(
        &'a self,
        call: &'a CallInfo,
        outcome: &'a mut Outcome,
        _session: &'a Session,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if !self.has(HookEvent::PostToolUse) {
                return;
            }
            let answer = self
                .run(
                    HookEvent::PostToolUse,
                    Some(&call.name),
                    json!({
                        "tool_name": call.name,
                        "tool_input": call.arguments,
                        "tool_response": tool_response(outcome),
                    }),
                )
                .await;
            if let Some(reason) = answer.block {
                outcome
                    .output
                    .text
                    .push_str(&format!("\n\n[PostToolUse hook] {reason}"));
            }
            for context in answer.context {
                outcome
                    .output
                    .text
                    .push_str(&format!("\n\n[hook context] {context}"));
            }
        })
    }
}
