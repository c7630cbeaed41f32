//! Every user-visible step of a run, as data (DESIGN.md, "One turn, as data").
//!
//! Events are stored as JSON and printed by `lathe exec --json`, so each serialises as an object
//! with a `type` tag: `{"type":"text_delta","text":"Hel"}`.

use crate::provider::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use lathe_runtime::watch::{Change as WorkspaceChange, ChangeKind, Watched};

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A request to the model is about to be sent.
    TurnStarted {
        /// 1-based number of the model turn within the run.
        turn: u32,
        /// Model name.
        model: String,
    },
    /// Text the user sees, already cleaned of recovered tool calls and the completion marker.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Thinking text.
    ThinkingDelta {
        /// The new thinking text.
        text: String,
    },
    /// The model stopped thinking.
    ThinkingDone {
        /// How long this stretch of thinking lasted, in milliseconds.
        duration_ms: u64,
    },
    /// A native tool call is being generated (sent when its name is known, and again when the
    /// file it works on is): a large `write_file` can take the model many seconds. Nothing runs
    /// until [`Event::ToolCallSeen`].
    ToolCallStreaming {
        /// Position of the call in the turn, from 0.
        index: usize,
        /// Tool name as resolved (or as written, when unknown).
        name: String,
        /// The file the call works on, once it can be read from the arguments so far.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// The model asked for a tool call (native or recovered from its text).
    ToolCallSeen {
        /// Position of the call in the turn, from 0.
        index: usize,
        /// Tool name as resolved (or as written, when unknown).
        name: String,
        /// Arguments.
        arguments: Value,
    },
    /// A tool call starts running.
    ToolCallStarted {
        /// Call id (the model's, or one given by the executor).
        call_id: String,
        /// Tool name.
        name: String,
        /// Arguments.
        arguments: Value,
        /// One line for humans: `read_file src/main.rs (lines 1-120)`.
        summary: String,
    },
    /// The user is asked to approve a call.
    ApprovalRequested {
        /// Call id.
        call_id: String,
        /// Tool name.
        tool: String,
        /// What the call would do, for humans.
        description: String,
        /// A unified diff, for edits.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diff: Option<String>,
    },
    /// The user (or the policy) answered an approval request.
    ApprovalResolved {
        /// Call id.
        call_id: String,
        /// The answer.
        decision: ApprovalDecision,
    },
    /// Output from a running call (a shell command's stdout or stderr).
    ToolOutputDelta {
        /// Call id.
        call_id: String,
        /// Which stream.
        stream: OutputStream,
        /// The new text.
        text: String,
    },
    /// A call finished.
    ToolCallFinished {
        /// Call id.
        call_id: String,
        /// Tool name.
        name: String,
        /// How it ended.
        status: ToolStatus,
        /// One line for humans: `shell cargo test -> exit 0, 3.2 s`.
        summary: String,
        /// Lines added and removed, for calls that changed files.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stats: Option<DiffStats>,
        /// The files the call changed, each with its diff (what the terminal shows, and what
        /// `lathe sessions show` replays).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        changes: Vec<FileChange>,
        /// For calls that run a command: how the command ended. A command that exited non-zero
        /// is a call that succeeded (the model reads its output) but a command that failed,
        /// and the terminal shows it as failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<lathe_runtime::CommandState>,
        /// Wall time, in milliseconds.
        duration_ms: u64,
    },
    /// Files changed by the calls of a turn, relative to the workspace root.
    FilesChanged {
        /// The paths.
        paths: Vec<String>,
    },
    /// A model turn's calls changed files, and the change was recorded as a checkpoint: `lathe
    /// undo --session ID` (or `/undo` in chat) takes it back. Sent after the turn's calls, only
    /// when the workspace differs from before them (shell commands' changes included).
    CheckpointCreated(Checkpoint),
    /// The conversation was cut back to before a turn (chat's `/rewind N`): the stored
    /// messages from `first_message` to `last_message` (their seqs in the session's history)
    /// are no longer part of it, and a resumed session does not see them.
    ConversationRewound {
        /// The session-wide turn it was cut back to before.
        turn: u32,
        /// The seq of the first message cut.
        first_message: u64,
        /// The seq of the last message cut.
        last_message: u64,
    },
    /// The older part of the conversation was replaced by a summary the model wrote, to keep
    /// the requests inside the context window (automatically, or chat's `/compact`). The
    /// stored messages from `first_message` to `last_message` stay in the store; a resumed
    /// session reads `summary` in their place. Both are 0 when the replaced messages were not
    /// stored by this process (then a resumed session reads them all again).
    ContextCompacted {
        /// Asked for (`/compact`), rather than needed.
        manual: bool,
        /// How many messages the summary replaced.
        messages: usize,
        /// The request's estimated tokens before, without the reserved output.
        tokens_before: u64,
        /// And after.
        tokens_after: u64,
        /// The seq of the first stored message replaced.
        first_message: u64,
        /// The seq of the last stored message replaced.
        last_message: u64,
        /// The message that replaced them, as the model reads it.
        summary: String,
    },
    /// A call changed a place whose code can later run outside the sandbox: the workspace's
    /// `.lathe/` (its configuration), git's hooks, configuration or attributes.
    WorkspaceChanged {
        /// The call after which the change was seen (it may come from a background command
        /// that ran meanwhile).
        call_id: String,
        /// What changed.
        changes: Vec<WorkspaceChange>,
        /// For humans: what it means and what Lathe did about it.
        message: String,
    },
    /// Something the user should know that is not an error (for example: switched to the text
    /// tool protocol for this model).
    Notice {
        /// The message.
        message: String,
    },
    /// The model's plan changed (an `update_plan` call succeeded): the whole plan, in order.
    PlanUpdated {
        /// Every step with its status; empty when the model cleared the plan.
        steps: Vec<lathe_runtime::checklist::ChecklistStep>,
    },
    /// A sub-agent (`spawn_agent`) was queued, started, took a step, or ended: one line for
    /// humans that replaces the previous one for the same `id`.
    SubAgent(SubAgentUpdate),
    /// Nothing has come from the model for a while (a model loading, a slow or stuck server):
    /// sent every few seconds of silence (5 by default), never more often.
    Waiting {
        /// How long it has been silent, in whole seconds.
        seconds: u64,
    },
    /// The answer of this turn was cut (the connection was lost, or the model was silent past
    /// the idle timeout) and is asked for again: the text and thinking shown since the turn
    /// started are void, and the answer starts over.
    AnswerRestarted {
        /// Which retry this is, from 1.
        attempt: u32,
        /// How many retries a turn gets.
        retries: u32,
        /// For humans: `connection to the model lost mid-answer; retrying (1 of 2)`.
        message: String,
    },
    /// A model turn ended.
    TurnFinished {
        /// 1-based number of the model turn.
        turn: u32,
        /// Why the model stopped, as the server said (`stop`, `length`, `tool_calls`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<String>,
        /// Token counts, when the server sent them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<Usage>,
        /// Whether the model wrote the completion marker.
        task_complete: bool,
    },
    /// The whole run ended.
    RunFinished {
        /// How.
        status: RunStatus,
        /// Model turns used.
        turns: u32,
        /// A closing line for humans, when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A fault of the runtime or the model server (not a tool's error, which is a result).
    Error {
        /// The message, lowercase, with the offending value.
        message: String,
    },
    /// The first event of a headless run (`lathe exec`): the session and how it runs.
    RunStarted(RunStart),
    /// The last event of a run, after [`Event::RunFinished`]: everything a caller needs to know
    /// about it in one object (`lathe exec --json` ends with it).
    RunResult(RunReport),
}

/// Where a sub-agent is, as its [`Event::SubAgent`] says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubAgentUpdate {
    /// The sub-agent's id in its parent (`sub-1`): what `read_sub_agent` takes.
    pub id: String,
    /// The task it was given.
    pub task: String,
    /// Where it is.
    pub state: SubAgentState,
    /// For humans: its latest step (`turn 2`, `grep TODO`), or how it ended.
    pub line: String,
    /// Its own stored session (`lathe sessions show ID`), when sessions are stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Where a sub-agent is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubAgentState {
    /// Waiting for another sub-agent to finish (at most `max_sub_agents` run at once).
    Queued,
    /// Working.
    Running,
    /// Done; its answer went to the parent.
    Finished,
    /// Ended without finishing: an error, its turn limit; the parent read why.
    Failed,
    /// Stopped with its parent (Ctrl-C, the parent's run or session ending).
    Stopped,
}

impl SubAgentState {
    /// True once it has ended, one way or another.
    pub fn ended(self) -> bool {
        matches!(
            self,
            SubAgentState::Finished | SubAgentState::Failed | SubAgentState::Stopped
        )
    }
}

/// A turn's recorded change: the seed's `filesChanged` with its checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The checkpoint's id (a step of the session's checkpoints, as `lathe sessions show`
    /// lists them).
    pub step: String,
    /// The turn, numbered across the whole session (`lathe undo --turn N`, `/diff N`,
    /// `/rewind N`).
    pub turn: u32,
    /// The files the turn changed, with lines added and removed.
    pub files: Vec<ChangedFile>,
    /// Lines added, over all files.
    pub added: u64,
    /// Lines removed, over all files.
    pub removed: u64,
}

/// How a headless run is set up, as its first event says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStart {
    /// The session's id (`lathe sessions show ID`, `lathe chat --resume ID`).
    pub session_id: String,
    /// The model.
    pub model: String,
    /// The wire format: `ollama` or `openai`.
    pub provider: String,
    /// The model server.
    pub base_url: String,
    /// The workspace root, absolute.
    pub workspace: String,
    /// The approval mode: `read-only`, `ask` or `auto`.
    pub approval: String,
    /// The turn limit.
    pub max_turns: u32,
}

/// What a run did, in one object: the closing event of every run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunReport {
    /// The session's id, when the run is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// How the run ended.
    pub status: RunStatus,
    /// Why it stopped, when it did not simply finish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The final answer.
    pub answer: String,
    /// Where the answer came from.
    pub answer_from: AnswerSource,
    /// Model turns used.
    pub turns: u32,
    /// Files changed, in the order they were first changed, with lines added and removed.
    pub files_changed: Vec<ChangedFile>,
    /// The ids of the checkpoints the run's turns recorded, oldest first (see
    /// [`Event::CheckpointCreated`]).
    #[serde(default)]
    pub checkpoints: Vec<String>,
    /// Calls that were denied (by the user, the policy, or because nobody could be asked).
    pub denied: Vec<DeniedCall>,
    /// True when the model tried to change files and every such call was denied, so nothing
    /// was written: the task needed an approval it did not get (`lathe exec` exits 3).
    pub changes_denied: bool,
    /// Token totals over the run's turns, as the server counted them.
    pub usage: TokenTotals,
    /// Each model turn's counts, in order, as the server gave them (turns it gave none for
    /// are left out). Left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turn_usage: Vec<TurnUsage>,
    /// The context window the run kept within, in tokens (the smaller of the configured and
    /// the server's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Wall time of the whole run, in milliseconds.
    pub duration_ms: u64,
    /// Time spent waiting for the model, in milliseconds.
    pub model_ms: u64,
    /// Time spent running tools (approval prompts included), in milliseconds.
    pub tool_ms: u64,
    /// Changes a tool previewed that were neither applied nor discarded when the run ended,
    /// oldest first: nothing of them was written. Left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingLeft>,
}

/// A previewed change still pending at the end of a run (not applied).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingLeft {
    /// Its short summary, as the tool gave it.
    pub label: String,
    /// The tool that previewed it.
    pub source: String,
    /// The files it would change, relative to the workspace root.
    #[serde(default)]
    pub files: Vec<String>,
}

/// Where a run's final answer came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSource {
    /// The model's own last text.
    #[default]
    Model,
    /// The model ended without any text and answered a request for a short summary.
    Summary,
    /// Neither gave text: the answer lists what the last tool calls did.
    ToolResults,
    /// There is no answer (the run failed or was stopped before any text).
    None,
}

/// A file a run changed, with its line counts summed over the run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// Relative to the workspace root.
    pub path: String,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// The run created it.
    #[serde(default)]
    pub created: bool,
    /// The run deleted it.
    #[serde(default)]
    pub deleted: bool,
    /// The sub-agents that changed it (`sub-1`), in the order they did; empty when only the
    /// run's own calls did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sub_agents: Vec<String>,
}

/// A call that was denied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeniedCall {
    /// The call's id, as in its `tool_call_finished` event.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// What it would have done: `shell "cargo fmt"`, `write_file src/a.rs`.
    pub description: String,
    /// Why it was denied, in one sentence.
    pub reason: String,
    /// What would let it run: the answer to what the user can do next.
    #[serde(default)]
    pub kind: DenialKind,
}

/// What kind of approval a denied call needed, which says what would let it run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DenialKind {
    /// An ordinary call: a less careful approval mode or an allow rule would let it run.
    #[default]
    Approval,
    /// A change of the project's memory: it asks in every mode and no allow rule lets it run
    /// unasked, so only a person's answer (on a terminal) does, or editing the memory by hand.
    Memory,
}

/// One model turn's token counts, as the server gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnUsage {
    /// The turn of the run, from 1 (as its [`Event::TurnFinished`] numbers it).
    pub turn: u32,
    /// The counts.
    #[serde(flatten)]
    pub usage: Usage,
}

/// Tokens over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenTotals {
    /// Prompt tokens, summed over the turns.
    pub prompt_tokens: u64,
    /// Generated tokens, summed over the turns.
    pub completion_tokens: u64,
}

/// The answer to an approval request (stored as given).
pub use lathe_runtime::ApprovalDecision;

/// Which output stream a delta came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// How a tool call ended: the pipeline's status, stored as given.
pub use lathe_runtime::CallStatus as ToolStatus;

/// A file a call changed, with its diff: the same bytes the approval prompt showed.
pub use lathe_runtime::FileChange;

/// Lines added and removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DiffStats {
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model answered without a call (a completion marker next to a call does not end it).
    #[default]
    Finished,
    /// The turn limit was reached.
    MaxTurns,
    /// An unrecoverable error.
    Failed,
    /// The user stopped it.
    Stopped,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One event of each kind worth checking, fields filled: a table of cases.
    fn samples() -> Vec<Event> {
        vec![
            Event::TurnStarted {
                turn: 1,
                model: "m".into(),
            },
            Event::TextDelta { text: "hi".into() },
            Event::ThinkingDone { duration_ms: 1200 },
            Event::ToolCallStreaming {
                index: 0,
                name: "write_file".into(),
                path: Some("notes.md".into()),
            },
            Event::ToolCallSeen {
                index: 0,
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
            },
            Event::ApprovalResolved {
                call_id: "c".into(),
                decision: ApprovalDecision::Deny {
                    message: Some("no".into()),
                },
            },
            Event::ToolCallFinished {
                call_id: "c".into(),
                name: "edit_file".into(),
                status: ToolStatus::Ok,
                summary: "edit_file a.rs".into(),
                stats: Some(DiffStats {
                    added: 3,
                    removed: 1,
                }),
                changes: vec![FileChange {
                    path: "a.rs".into(),
                    created: false,
                    deleted: false,
                    added: 3,
                    removed: 1,
                    diff: "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1,3 @@\n-a\n+b\n+c\n+d\n".into(),
                }],
                command: Some(lathe_runtime::CommandState::Exited { exit_code: 2 }),
                duration_ms: 5,
            },
            Event::TurnFinished {
                turn: 1,
                finish_reason: Some("stop".into()),
                usage: Some(Usage {
                    prompt_tokens: Some(10),
                    completion_tokens: None,
                    ..Usage::default()
                }),
                task_complete: true,
            },
            Event::WorkspaceChanged {
                call_id: "c".into(),
                changes: vec![WorkspaceChange {
                    path: ".git/hooks/pre-commit".into(),
                    change: ChangeKind::Created,
                    what: Watched::GitHook,
                    keys: Vec::new(),
                }],
                message: "m".into(),
            },
            Event::Waiting { seconds: 5 },
            Event::AnswerRestarted {
                attempt: 1,
                retries: 2,
                message: "m".into(),
            },
            Event::RunFinished {
                status: RunStatus::MaxTurns,
                turns: 50,
                message: None,
            },
            Event::RunStarted(RunStart {
                session_id: "s".into(),
                model: "m".into(),
                provider: "ollama".into(),
                base_url: "http://127.0.0.1:11434".into(),
                workspace: "/w".into(),
                approval: "ask".into(),
                max_turns: 50,
            }),
            Event::RunResult(RunReport {
                session_id: Some("s".into()),
                status: RunStatus::Finished,
                message: None,
                answer: "Done.".into(),
                answer_from: AnswerSource::ToolResults,
                turns: 3,
                files_changed: vec![ChangedFile {
                    path: "a.rs".into(),
                    added: 1,
                    removed: 2,
                    created: false,
                    deleted: false,
                    sub_agents: Vec::new(),
                }],
                denied: vec![DeniedCall {
                    call_id: "call_1".into(),
                    tool: "shell".into(),
                    description: "shell \"cargo fmt\"".into(),
                    reason: "no terminal".into(),
                    kind: DenialKind::Approval,
                }],
                checkpoints: vec!["3f2a".into()],
                changes_denied: false,
                usage: TokenTotals {
                    prompt_tokens: 5,
                    completion_tokens: 1,
                },
                turn_usage: vec![TurnUsage {
                    turn: 1,
                    usage: Usage {
                        prompt_tokens: Some(5),
                        completion_tokens: Some(1),
                        generation_ms: Some(40),
                    },
                }],
                context_window: Some(8_192),
                duration_ms: 9,
                model_ms: 4,
                tool_ms: 3,
                pending: vec![PendingLeft {
                    label: "rename foo".into(),
                    source: "ast_edit".into(),
                    files: vec!["a.rs".into()],
                }],
            }),
            Event::CheckpointCreated(Checkpoint {
                step: "3f2a".into(),
                turn: 4,
                files: vec![ChangedFile {
                    path: "gone.sh".into(),
                    added: 0,
                    removed: 2,
                    created: false,
                    deleted: true,
                    sub_agents: Vec::new(),
                }],
                added: 0,
                removed: 2,
            }),
            Event::ConversationRewound {
                turn: 3,
                first_message: 7,
                last_message: 12,
            },
            Event::ContextCompacted {
                manual: false,
                messages: 14,
                tokens_before: 3_100,
                tokens_after: 900,
                first_message: 2,
                last_message: 15,
                summary: "[Summary ...] Task: fix the parser.".into(),
            },
        ]
    }

    #[test]
    fn events_carry_a_type_tag_and_round_trip() {
        for event in samples() {
            let value = serde_json::to_value(&event).unwrap();
            assert!(value["type"].is_string(), "{value}");
            let back: Event = serde_json::from_value(value).unwrap();
            assert_eq!(back, event);
        }
    }

    #[test]
    fn an_event_is_one_object_with_its_tag_first() {
        assert_eq!(
            serde_json::to_string(&Event::TextDelta { text: "x".into() }).unwrap(),
            r#"{"type":"text_delta","text":"x"}"#
        );
    }

    #[test]
    fn the_lifecycle_events_are_flat_objects_too() {
        let value = serde_json::to_value(Event::RunResult(RunReport::default())).unwrap();
        assert_eq!(value["type"], "run_result");
        assert_eq!(value["status"], "finished");
        assert_eq!(value["usage"]["prompt_tokens"], 0);
    }
}
