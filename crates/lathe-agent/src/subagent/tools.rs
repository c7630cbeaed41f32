//! `spawn_agent` and `read_sub_agent`, the tools the parent's model calls.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use lathe_runtime::paging::{Pager, page_text};
use lathe_runtime::{
    Effect, Session, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult,
};

use super::{Inner, SubAgents, lock, short_task, stored_transcript};
use crate::events::SubAgentState;

/// The name of the synthetic call that carries a background sub-agent's result into the
/// parent's history: never a tool the model can call.
pub const SUB_AGENT_RESULT: &str = "sub_agent_result";

/// Which tools a sub-agent gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Read-only: read_file, grep, glob, list_files, and shell for commands that only read.
    #[default]
    Explore,
    /// Every tool you have (except spawn_agent), under the same approvals as yours.
    General,
}

/// Hand one task to a sub-agent: a helper with its own fresh context that works on it alone
/// and answers you. Use it for a self-contained part of the work that would fill your context
/// (searching a large codebase, reading many files); give it everything it needs in `task`,
/// since it sees nothing of this conversation. In the foreground (the default) the call returns
/// its answer; with background=true it returns its id at once and its result arrives later as a
/// sub_agent_result call. Sub-agents cannot spawn sub-agents.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SpawnAgentInput {
    /// The task, complete: what to find or do, where, and what to answer with.
    pub task: String,
    /// Which tools it gets: explore (read-only, the default) or general (all of yours).
    pub profile: Option<Profile>,
    /// True: start it and go on; its result arrives as a sub_agent_result call. Default: false
    /// (wait for its answer).
    pub background: Option<bool>,
}

/// Whose sub-agents a tool starts or reads.
#[derive(Clone)]
enum Agents {
    /// One parent's.
    Of(SubAgents),
    /// Those attached to the calling tool session ([`SubAgents::attach`]): one registry
    /// serving many sessions (`lathe mcp`).
    OfSession,
}

impl Agents {
    /// The sub-agents for a call in `session`, or the error the caller reads.
    fn find(&self, session: &Session) -> Result<SubAgents, ToolError> {
        match self {
            Agents::Of(agents) => Ok(agents.clone()),
            Agents::OfSession => SubAgents::of_session(session).ok_or_else(|| {
                ToolError::new(
                    "sub-agents are not available in this session: no model is configured for                      them; do the task with the other tools",
                )
            }),
        }
    }
}

/// The `spawn_agent` tool.
pub struct SpawnAgentTool {
    agents: Agents,
}

impl SpawnAgentTool {
    /// `spawn_agent` for `agents`.
    pub fn new(agents: SubAgents) -> Self {
        SpawnAgentTool {
            agents: Agents::Of(agents),
        }
    }

    /// `spawn_agent` for the sub-agents attached to the calling session
    /// ([`SubAgents::attach`]).
    pub fn of_session() -> Self {
        SpawnAgentTool {
            agents: Agents::OfSession,
        }
    }
}

impl Tool for SpawnAgentTool {
    const NAME: &'static str = "spawn_agent";
    // Few tasks in a small window need a child agent.
    const ON_DEMAND: bool = true;
    const ALIASES: &'static [&'static str] = &["sub_agent", "spawn_subagent", "task"];
    type Input = SpawnAgentInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    fn effects(&self, _input: &Self::Input, _session: &Session) -> Vec<Effect> {
        // The child's own calls are each judged by its gate and asked about through the
        // parent's approver; starting it changes only the session's state.
        vec![Effect::OwnState { changes: true }]
    }

    fn title(&self, input: &Self::Input) -> String {
        let profile = match input.profile.unwrap_or_default() {
            Profile::Explore => "explore",
            Profile::General => "general",
        };
        let background = if input.background.unwrap_or(false) {
            ", background"
        } else {
            ""
        };
        format!(
            "{} ({profile}{background}) {}",
            Self::NAME,
            short_task(&input.task)
        )
    }

    async fn run(&self, input: SpawnAgentInput, ctx: ToolContext) -> ToolResult {
        let task = input.task.trim().to_owned();
        if task.is_empty() {
            return Err(ToolError::new(
                "task is empty: say what the sub-agent should find or do, and what to answer with",
            ));
        }
        let profile = input.profile.unwrap_or_default();
        let agents = self.agents.find(&ctx.session)?;
        let inner = Arc::clone(&agents.inner);
        if input.background.unwrap_or(false) {
            Ok(spawn_background(&inner, task, profile, &ctx))
        } else {
            run_foreground(&inner, &task, profile, &ctx).await
        }
    }
}

/// A token that fires when either the parent's call (its run) or the sub-agents' stop does;
/// cancel it when done, so that its watcher ends.
fn child_token(inner: &Inner, call: &ToolContext) -> tokio_util::sync::CancellationToken {
    let token = inner.stop_token().child_token();
    let (watched, call) = (token.clone(), call.cancel.clone());
    tokio::spawn(async move {
        tokio::select! {
            () = call.cancelled() => watched.cancel(),
            () = watched.cancelled() => {}
        }
    });
    token
}

/// Why `id` waits, for the model and the event.
fn queued_line(inner: &Inner, ahead: &[String]) -> String {
    format!(
        "queued behind {} (at most {} sub-agent{} run at once)",
        ahead.join(", "),
        inner.config.max_running,
        if inner.config.max_running == 1 {
            ""
        } else {
            "s"
        }
    )
}

async fn run_foreground(
    inner: &Arc<Inner>,
    task: &str,
    profile: Profile,
    ctx: &ToolContext,
) -> ToolResult {
    let id = inner.add_record(task, false);
    // The call's listener hears the child's steps (MCP progress notifications).
    inner.update(&id, |r| r.progress = ctx.progress.clone());
    let cancel = child_token(inner, ctx);
    let mut waited = None;
    let permit = match Arc::clone(&inner.slots).try_acquire_owned() {
        Ok(permit) => permit,
        Err(_) => {
            let ahead = inner.others_active(&id);
            let line = queued_line(inner, &ahead);
            inner.update(&id, |r| r.line = line.clone());
            waited = Some(ahead);
            tokio::select! {
                permit = Arc::clone(&inner.slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => unreachable!("the sub-agents' semaphore is never closed"),
                },
                () = cancel.cancelled() => {
                    inner.finish(&id, SubAgentState::Stopped);
                    inner.forget_progress(&id);
                    return Err(ToolError::new(format!(
                        "sub-agent {id} was stopped while it waited for its turn"
                    )));
                }
            }
        }
    };
    inner.update(&id, |r| {
        r.state = SubAgentState::Running;
        r.line = "started".to_owned();
    });
    let ended = inner.run_child(&id, task, profile, &cancel).await;
    drop(permit);
    cancel.cancel();
    inner.finish(&id, ended.state);
    inner.forget_progress(&id);
    let waited = waited
        .map(|ahead| format!(" after waiting for {}", ahead.join(", ")))
        .unwrap_or_default();
    let footer = format!(
        "\n\n(sub-agent {id}, {}{waited}; its whole transcript: read_sub_agent with id=\"{id}\")",
        match ended.state {
            SubAgentState::Finished => "finished",
            SubAgentState::Stopped => "stopped",
            _ => "did not finish",
        }
    );
    let text = format!("{}{footer}", ended.text);
    let output = if ended.state == SubAgentState::Finished {
        ToolOutput::ok(text)
    } else {
        ToolOutput::error(text)
    };
    // A child that did not finish is an error the model reads, with what it said.
    output.with_meta("sub_agent", id).into_result()
}

fn spawn_background(
    inner: &Arc<Inner>,
    task: String,
    profile: Profile,
    ctx: &ToolContext,
) -> ToolOutput {
    let id = inner.add_record(&task, true);
    let cancel = child_token(inner, ctx);
    let permit = Arc::clone(&inner.slots).try_acquire_owned().ok();
    let text = match &permit {
        Some(_) => {
            inner.update(&id, |r| {
                r.state = SubAgentState::Running;
                r.line = "started".to_owned();
            });
            format!(
                "sub-agent {id} started in the background. Go on with other work; its result \
                 arrives as a sub_agent_result call when it ends (read_sub_agent with \
                 id=\"{id}\" pages its whole transcript then)."
            )
        }
        None => {
            let ahead = inner.others_active(&id);
            let line = queued_line(inner, &ahead);
            inner.update(&id, |r| r.line = line.clone());
            format!(
                "sub-agent {id} is {line}; it starts when one ends, and its result arrives as a \
                 sub_agent_result call. Go on with other work meanwhile."
            )
        }
    };
    let child = Arc::clone(inner);
    let child_id = id.clone();
    let handle = tokio::spawn(async move {
        let permit = match permit {
            Some(permit) => permit,
            None => tokio::select! {
                permit = Arc::clone(&child.slots).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => unreachable!("the sub-agents' semaphore is never closed"),
                },
                () = cancel.cancelled() => {
                    let ended = super::child::Ended {
                        state: SubAgentState::Stopped,
                        text: format!("sub-agent {child_id} was stopped while it waited for its turn"),
                    };
                    child.deliver(&child_id, &task, ended);
                    return;
                }
            },
        };
        child.update(&child_id, |r| {
            r.state = SubAgentState::Running;
            r.line = "started".to_owned();
        });
        let ended = child.run_child(&child_id, &task, profile, &cancel).await;
        drop(permit);
        cancel.cancel();
        child.deliver(&child_id, &task, ended);
    });
    lock(&inner.background).push(handle);
    ToolOutput::ok(text).with_meta("sub_agent", id)
}

/// Page the transcript of a sub-agent you started (spawn_agent): everything it read, ran and
/// said, numbered by line. The same paging as read_file: lines 1-2000 by default; for more, call
/// again with `offset` = the first line to show; a last note says `showing lines A-B of N`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadSubAgentInput {
    /// The sub-agent's id, as spawn_agent gave it (`sub-1`).
    pub id: String,
    /// The first line to show, counting from 1. Default: 1.
    pub offset: Option<i64>,
    /// The most lines to show. Default: 2000.
    pub limit: Option<i64>,
}

/// The `read_sub_agent` tool.
pub struct ReadSubAgentTool {
    agents: Agents,
}

impl ReadSubAgentTool {
    /// `read_sub_agent` for `agents`.
    pub fn new(agents: SubAgents) -> Self {
        ReadSubAgentTool {
            agents: Agents::Of(agents),
        }
    }

    /// `read_sub_agent` for the sub-agents attached to the calling session
    /// ([`SubAgents::attach`]).
    pub fn of_session() -> Self {
        ReadSubAgentTool {
            agents: Agents::OfSession,
        }
    }
}

impl Tool for ReadSubAgentTool {
    const NAME: &'static str = "read_sub_agent";
    // Few tasks in a small window need a child agent.
    const ON_DEMAND: bool = true;
    type Input = ReadSubAgentInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, _input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![Effect::OwnState { changes: false }]
    }

    fn title(&self, input: &Self::Input) -> String {
        format!("{} {}", Self::NAME, input.id)
    }

    async fn run(&self, input: ReadSubAgentInput, ctx: ToolContext) -> ToolResult {
        let id = input.id.trim();
        let agents = self.agents.find(&ctx.session)?;
        let records = lock(&agents.inner.records);
        let Some(record) = records.iter().find(|r| r.id == id) else {
            // A child of an earlier process of this (resumed) session is read from the store.
            if let Some(text) = stored_transcript(&agents.inner.parent.sink, id) {
                return page(id, &text, input.offset, input.limit);
            }
            let known: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
            return Err(ToolError::new(if known.is_empty() {
                format!("there is no sub-agent {id}: none was started in this session")
            } else {
                format!(
                    "there is no sub-agent {id}; the sub-agents of this session are {}",
                    known.join(", ")
                )
            }));
        };
        let Some(transcript) = &record.transcript else {
            return Ok(ToolOutput::ok(format!(
                "sub-agent {id} is still {} ({}); its transcript can be read once it ends, and \
                 its result arrives as a sub_agent_result call",
                if record.state == SubAgentState::Queued {
                    "queued"
                } else {
                    "running"
                },
                record.line
            )));
        };
        page(id, transcript, input.offset, input.limit)
    }
}

/// `transcript` of child `id`, paged with `read_file`'s rules.
fn page(id: &str, transcript: &str, offset: Option<i64>, limit: Option<i64>) -> ToolResult {
    let shown = format!("the transcript of sub-agent {id}");
    let pager = Pager {
        tool: ReadSubAgentTool::NAME,
        what: "the transcript",
    };
    let mut output =
        page_text(transcript, &shown, pager, offset, limit).unwrap_or_else(ToolOutput::from);
    // Lines of a transcript, not of a file in the workspace (in an error too).
    output.metadata.path = None;
    output.into_result()
}
