//! One child: its session, tools, gate and approver put together, its run, and how it ended.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::Mutex as AsyncMutex;
use tokio_util::sync::CancellationToken;

use lathe_runtime::{Gate, Registry, Session, ToolConfig, Workspace};
use lathe_store::NewSession;

use super::tools::Profile;
use super::{Inner, Record, SubAgentResult, child_title, lock, short_task};
use crate::approval::{ApprovalDecision, ApprovalMode, ApprovalRequest, Approver};
use crate::events::{ChangedFile, Event, RunStatus, SubAgentState};
use crate::executor::{Executor, RunOutcome};
use crate::message::Message;
use crate::runner::ToolRunner;
use crate::sink::EventSink;

/// The tools of an `explore` child: it reads, searches and runs read-only commands.
const EXPLORE_TOOLS: &[&str] = &["read_file", "grep", "glob", "list_files", "shell"];

/// An approver that answers one request at a time, whoever asks: a parent and its background
/// children share the parent's approver (one terminal, one MCP client), which takes requests
/// one at a time.
pub struct SerializedApprover {
    inner: Arc<dyn Approver>,
    turn: AsyncMutex<()>,
}

impl SerializedApprover {
    /// `inner`, asked one request at a time.
    pub fn new(inner: Arc<dyn Approver>) -> Self {
        SerializedApprover {
            inner,
            turn: AsyncMutex::new(()),
        }
    }
}

impl Approver for SerializedApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            let _turn = self.turn.lock().await;
            self.inner.approve(request).await
        })
    }
}

/// A child's requests, labelled with its id and task, to the parent's approver.
struct Labelled {
    inner: Arc<dyn Approver>,
    label: String,
}

impl Approver for Labelled {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            let mut labelled = request.clone();
            labelled.description = format!("{} {}", self.label, request.description);
            self.inner.approve(&labelled).await
        })
    }
}

/// How a child's run ended, for its parent.
pub(super) struct Ended {
    pub(super) state: SubAgentState,
    /// What the parent's model reads.
    pub(super) text: String,
}

/// How child `id` ended, from the `outcome` of its run.
fn ended(id: &str, outcome: RunOutcome) -> Ended {
    let turns = outcome.turns;
    let plural = if turns == 1 { "" } else { "s" };
    match outcome.status {
        RunStatus::Finished => Ended {
            state: SubAgentState::Finished,
            text: if outcome.answer.is_empty() {
                format!("sub-agent {id} finished in {turns} turn{plural} without an answer")
            } else {
                outcome.answer
            },
        },
        RunStatus::MaxTurns => Ended {
            state: SubAgentState::Failed,
            text: format!(
                "sub-agent {id} did not finish: it reached its limit of {turns} turns.{}",
                last_words(&outcome.answer)
            ),
        },
        RunStatus::Failed => Ended {
            state: SubAgentState::Failed,
            text: format!(
                "sub-agent {id} failed: {}.{}",
                outcome
                    .message
                    .as_deref()
                    .unwrap_or("it stopped with an error"),
                last_words(&outcome.answer)
            ),
        },
        RunStatus::Stopped => Ended {
            state: SubAgentState::Stopped,
            text: format!(
                "sub-agent {id} was stopped before it finished (its parent's run was \
                 stopped).{}",
                last_words(&outcome.answer)
            ),
        },
    }
}

/// What the child reads first: who it is, then its task. The first words are what tells its
/// requests from its parent's.
fn opening(id: &str, task: &str) -> String {
    format!(
        "You are sub-agent {id}, working for another agent that gave you one task. Work on it \
         alone (nobody can answer questions), then end with a short answer it can use: what you \
         found or did, with file paths and line numbers.\n\nTask: {task}"
    )
}

impl Inner {
    /// Runs child `id` on `task` to its end, and says how it ended. `cancel` stops it.
    pub(super) async fn run_child(
        self: &Arc<Self>,
        id: &str,
        task: &str,
        profile: Profile,
        cancel: &CancellationToken,
    ) -> Ended {
        let tools = match child_session(&self.parent.session, id) {
            Ok(tools) => tools,
            Err(err) => {
                return Ended {
                    state: SubAgentState::Failed,
                    text: format!(
                        "sub-agent {id} could not start: its tool session could not be made \
                         ({err}); do the task yourself"
                    ),
                };
            }
        };
        let mut executor = self.child_executor(id, task, profile, &tools);
        let outcome = executor.run(&opening(id, task), cancel).await;
        // Its commands (background ones too) end with it.
        tools.shutdown();
        self.keep_what_it_left(id, &executor, &outcome);
        ended(id, outcome)
    }

    /// The tools child `id` may use in `profile`, and the gate that judges its calls.
    fn child_tools(&self, profile: Profile) -> (Registry, Arc<Gate>) {
        let parent = &self.parent;
        match profile {
            Profile::Explore => {
                let mut registry = lathe_tools::builtin();
                // The parent's definitions' profile (compact in a small window).
                registry.use_profile(parent.host.registry().profile());
                registry.retain(|d| EXPLORE_TOOLS.contains(&d.name.as_str()));
                // Never more than the parent may: read-only, or the parent's own mode if lower.
                (
                    registry,
                    Arc::new(parent.host.gate().with_mode(ApprovalMode::ReadOnly)),
                )
            }
            // The parent's gate itself: its mode (switched live with `/approval`), its rules and
            // what the user allowed for the session.
            Profile::General => (
                (**parent.host.registry()).clone(),
                Arc::clone(parent.host.gate()),
            ),
        }
    }

    /// The executor of child `id` on `task`, with the tools of `profile` in its tool session
    /// `tools`, its approver and its sink, on the parent's provider and window.
    fn child_executor(
        self: &Arc<Self>,
        id: &str,
        task: &str,
        profile: Profile,
        tools: &Arc<Session>,
    ) -> Executor {
        let parent = &self.parent;
        let (registry, gate) = self.child_tools(profile);
        let approver = Arc::new(Labelled {
            inner: Arc::clone(&parent.approver),
            label: format!("[sub-agent {id}: {}]", short_task(task)),
        });
        let sink = self.child_sink(id, task, gate.mode());
        self.update(id, |r| {
            r.tools = Some(Arc::clone(tools));
            r.session_id = sink.session().map(|s| s.as_str().to_owned());
        });
        let runner = Arc::new(ToolRunner::with_host(
            parent.host.child(Arc::new(registry), gate),
            Arc::clone(tools),
            approver,
        ));
        let mut config = parent.config.clone();
        config.max_turns = self.config.max_turns;
        // The parent's window as it is now: a smaller one its server turned out to serve too.
        let window = self.window.load(std::sync::atomic::Ordering::Relaxed);
        if window > 0 {
            config.context_window = Some(window);
        }
        Executor::new(Arc::clone(&parent.provider), runner, sink, config)
    }

    /// Keeps what child `id` leaves when its run ended with `outcome`: its transcript, for
    /// `read_sub_agent`, and the files it changed, for the parent's run.
    fn keep_what_it_left(&self, id: &str, executor: &Executor, outcome: &RunOutcome) {
        let text = transcript(executor.history());
        lock(&self.records)
            .iter_mut()
            .filter(|r| r.id == id)
            .for_each(|r| {
                r.transcript = Some(text.clone());
                r.tools = None;
            });
        // What it changed is the parent's run's change too, labelled with it.
        let files: Vec<ChangedFile> = outcome
            .report
            .files_changed
            .iter()
            .cloned()
            .map(|mut file| {
                file.sub_agents = vec![id.to_owned()];
                file
            })
            .collect();
        lock(&self.changes).extend(files);
    }

    /// The child's sink: stored as a session whose parent is the parent's (when the parent's
    /// is stored), its steps shown through the parent's events.
    fn child_sink(self: &Arc<Self>, id: &str, task: &str, mode: ApprovalMode) -> EventSink {
        let parent = self.parent.sink.clone();
        let id_owned = id.to_owned();
        let weak = Arc::downgrade(self);
        let ui = Arc::new(move |event: &Event| {
            let line = match event {
                Event::TurnStarted { turn, .. } => format!("turn {turn}"),
                Event::ToolCallStarted { summary, .. } => summary.clone(),
                Event::ApprovalRequested { description, .. } => format!("asks: {description}"),
                Event::Error { message } => format!("error: {message}"),
                _ => return,
            };
            if let Some(inner) = weak.upgrade() {
                let mut records = lock(&inner.records);
                if let Some(record) = records.iter_mut().find(|r| r.id == id_owned) {
                    record.line = line;
                    record.state = SubAgentState::Running;
                    inner.emit(record);
                }
            }
        });
        let stored = parent
            .store()
            .zip(parent.session())
            .and_then(|(store, of)| {
                let provider = store
                    .session(of.as_str())
                    .map(|s| s.provider)
                    .unwrap_or_default();
                let new = NewSession {
                    workspace: self.parent.session.workspace().root().to_path_buf(),
                    provider,
                    model: self.parent.config.model.clone(),
                    approval: mode.to_string(),
                    title: Some(child_title(id, task)),
                    parent: Some(of),
                    ..NewSession::default()
                };
                match store.create_session(new) {
                    Ok(child) => Some((store, child)),
                    Err(err) => {
                        tracing::warn!("sub-agent {id}: its session is not stored: {err}");
                        None
                    }
                }
            });
        match stored {
            Some((store, child)) => EventSink::new(store, child, ui),
            None => EventSink::detached(ui),
        }
    }

    /// Records how background child `id` ended, for the parent's next request.
    pub(super) fn deliver(&self, id: &str, task: &str, ended: Ended) {
        let text = format!(
            "sub-agent {id} ({}) {}:\n{}\n\n(its whole transcript: read_sub_agent with id=\"{id}\")",
            short_task(task),
            match ended.state {
                SubAgentState::Finished => "finished",
                SubAgentState::Stopped => "was stopped",
                _ => "did not finish",
            },
            ended.text
        );
        lock(&self.results).push(SubAgentResult {
            id: id.to_owned(),
            text,
        });
        self.finish(id, ended.state);
        self.ended.notify_waiters();
    }

    /// Marks `id` as ended in `state`.
    pub(super) fn finish(&self, id: &str, state: SubAgentState) {
        self.update(id, |r| {
            r.state = state;
            r.line = match state {
                SubAgentState::Finished => "finished".to_owned(),
                SubAgentState::Stopped => "stopped".to_owned(),
                _ => "did not finish".to_owned(),
            };
        });
    }

    /// A new record for a child, announced as queued or running.
    pub(super) fn add_record(&self, task: &str, background: bool) -> String {
        let n = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        let id = format!("sub-{n}");
        let record = Record {
            id: id.clone(),
            task: task.to_owned(),
            background,
            state: SubAgentState::Queued,
            session_id: None,
            transcript: None,
            line: "queued".to_owned(),
            tools: None,
            progress: None,
        };
        lock(&self.records).push(record);
        id
    }
}

/// A tool session for child `id` over the parent's workspace, its state in a directory of its
/// own under the parent's.
fn child_session(parent: &Session, id: &str) -> std::io::Result<Arc<Session>> {
    let config: ToolConfig = parent.config().clone();
    Session::new(
        Workspace::new(parent.workspace().root())?,
        config,
        parent.state_dir().join("sub-agents").join(id),
    )
}

/// The end of an answer that was cut, for the parent: the child's last text, when it had any.
fn last_words(answer: &str) -> String {
    if answer.trim().is_empty() {
        String::new()
    } else {
        format!(" Its last words: {}", answer.trim())
    }
}

/// A conversation as text, one part after another (the system prompt left out): what
/// `read_sub_agent` pages. Ends with a newline.
pub fn transcript(history: &[Message]) -> String {
    let mut out = String::new();
    for message in history {
        match message {
            Message::System { .. } => continue,
            Message::User { content, .. } => {
                out.push_str("## user\n");
                out.push_str(content.trim_end());
                out.push('\n');
            }
            Message::Assistant(turn) => {
                out.push_str("## assistant\n");
                if !turn.content.trim().is_empty() {
                    out.push_str(turn.content.trim_end());
                    out.push('\n');
                }
                for call in &turn.tool_calls {
                    out.push_str(&format!("-> {} {}\n", call.name, call.arguments));
                }
            }
            Message::Tool(result) => {
                out.push_str(&format!("## result of {}\n", result.tool_name));
                out.push_str(result.content.trim_end());
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::ToolCall;

    #[test]
    fn a_transcript_shows_each_part_and_ends_with_a_newline() {
        let call = ToolCall::new("grep", json!({"pattern": "TODO"}));
        let mut turn = crate::message::AssistantMessage {
            content: "Looking.".into(),
            ..Default::default()
        };
        turn.tool_calls.push(call.clone());
        let history = [
            Message::system("secret prompt"),
            Message::user("find TODOs"),
            Message::Assistant(turn),
            Message::tool_result(&call, "a.rs:1: TODO\n"),
            Message::assistant("One, in a.rs."),
        ];
        assert_eq!(
            transcript(&history),
            "## user\nfind TODOs\n## assistant\nLooking.\n-> grep {\"pattern\":\"TODO\"}\n\
             ## result of grep\na.rs:1: TODO\n## assistant\nOne, in a.rs.\n"
        );
    }
}
