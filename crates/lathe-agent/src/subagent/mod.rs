//! Sub-agents: `spawn_agent` starts a child agent on one task, with its own session, context and
//! tools; `read_sub_agent` pages what it did.
//!
//! A child is a real [`Executor`](crate::executor::Executor) on the parent's provider and model
//! (one model server: children share the GPU, hence at most [`DEFAULT_MAX_RUNNING`] at once by
//! default, the others queued), over the same workspace with a tool session of its own, stored
//! as a session whose parent is the parent's. Its tools come from its profile: `explore` reads
//! (`read_file`, `grep`, `glob`, `list_files`, and `shell` under a read-only gate), `general` has
//! the parent's tools under the parent's own gate; never `spawn_agent` itself, so sub-agents do
//! not spawn sub-agents. Its tools' definitions are in its parent's prompt profile (compact in a
//! small window), and it keeps its requests within the parent's window as the parent knows it
//! when the child starts (a smaller one its server turned out to serve included:
//! [`SubAgents::set_window`]). Its approval requests go to the parent's approver, labelled with its
//! id and task; the answers reach it as they would reach the parent.
//!
//! In the foreground the call waits and returns the child's answer. In the background it returns
//! the child's id at once; when the child ends, its result waits here until the parent's executor
//! takes it ([`SubAgents::take_results`]) before its next request and adds it to the history as
//! a `sub_agent_result` call with its result. No child outlives its parent's run: a parent that
//! answers while children run waits for them (and then reads their results in one more turn),
//! and a run that ends otherwise stops them ([`SubAgents::stop`]), as does the end of the
//! parent's tool session (their commands are killed with their sessions).

mod child;
mod tools;

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::{Notify, Semaphore};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use lathe_runtime::{ProgressSink, Registry, Session, ToolDefinition, ToolProgress};

use crate::approval::Approver;
use crate::events::{ChangedFile, Event, SubAgentState, SubAgentUpdate};
use crate::executor::ExecutorConfig;
use crate::provider::Provider;
use crate::sink::EventSink;
use lathe_runtime::Host;

pub use child::{SerializedApprover, transcript};
pub use tools::{
    Profile, ReadSubAgentInput, ReadSubAgentTool, SUB_AGENT_RESULT, SpawnAgentInput, SpawnAgentTool,
};

/// How many sub-agents run at once by default: one, since they share the parent's model
/// server (one local GPU); the others wait in a queue.
pub const DEFAULT_MAX_RUNNING: usize = 1;

/// The most model turns of one sub-agent, by default.
pub const DEFAULT_MAX_TURNS: u32 = 20;

/// How sub-agents run (`[agent] max_sub_agents`, `sub_agent_max_turns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubAgentConfig {
    /// How many run at once; the others wait. By default, [`DEFAULT_MAX_RUNNING`].
    pub max_running: usize,
    /// The most model turns of each. By default, [`DEFAULT_MAX_TURNS`].
    pub max_turns: u32,
}

impl Default for SubAgentConfig {
    fn default() -> Self {
        SubAgentConfig {
            max_running: DEFAULT_MAX_RUNNING,
            max_turns: DEFAULT_MAX_TURNS,
        }
    }
}

/// A background sub-agent's result, waiting for its parent's next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubAgentResult {
    /// The sub-agent's id (`sub-1`).
    pub id: String,
    /// What the parent's model reads: its answer, or why it did not finish.
    pub text: String,
}

/// What the parent lends its children: an [`Agent`](crate::Agent)'s own parts, or, for a
/// front end with no agent of its own (`lathe mcp`, where the client is the parent), parts
/// made for it.
pub struct Parent {
    /// The model server the children ask.
    pub provider: Arc<dyn Provider>,
    /// The children's model and request options (`max_turns` is the sub-agents' own).
    pub config: ExecutorConfig,
    /// The parent's host: its tools without the sub-agent tools (a `general` child's), its gate
    /// (a `general` child's, and what an `explore` child's read-only gate is made from), and its
    /// hooks and checkpoints, which a child's calls go through too, so that a child's changes
    /// are part of the parent's turn (`lathe undo` takes them back).
    pub host: Host,
    /// Who answers the children's approval requests (labelled with the child's id and task).
    pub approver: Arc<dyn Approver>,
    /// The parent's tool session: the workspace, and the end that stops the children.
    pub session: Arc<Session>,
    /// Where the children's updates go ([`Event::SubAgent`]), and the store of their sessions.
    pub sink: EventSink,
}

/// One child, as the parent knows it.
struct Record {
    id: String,
    task: String,
    background: bool,
    state: SubAgentState,
    /// Its stored session, when sessions are stored.
    session_id: Option<String>,
    /// Its transcript, once it has ended.
    transcript: Option<String>,
    /// The latest step, for `read_sub_agent` on a child that still runs.
    line: String,
    /// Its tool session while it runs (shut down with the parent's).
    tools: Option<Arc<Session>>,
    /// The progress listener of the `spawn_agent` call that waits for it (foreground), which
    /// hears each of its updates as a status line.
    progress: Option<ProgressSink>,
}

pub(crate) struct Inner {
    config: SubAgentConfig,
    parent: Parent,
    slots: Arc<Semaphore>,
    /// Cancelled to stop every child; replaced by a fresh one afterwards.
    stop: Mutex<CancellationToken>,
    next: AtomicU32,
    records: Mutex<Vec<Record>>,
    results: Mutex<Vec<SubAgentResult>>,
    /// The files children changed, each labelled with its child, not yet taken by the
    /// parent's run.
    changes: Mutex<Vec<ChangedFile>>,
    background: Mutex<Vec<JoinHandle<()>>>,
    /// Woken when a background child ends.
    ended: Notify,
    /// The parent's window as its executor knows it now (a served window learned during the
    /// session included), in tokens; 0 before it said ([`SubAgents::set_window`]).
    window: AtomicU64,
}

/// The sub-agents of one parent agent: the manager behind `spawn_agent` and `read_sub_agent`.
/// Cheap to clone; clones share the children.
#[derive(Clone)]
pub struct SubAgents {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for SubAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubAgents")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

impl SubAgents {
    /// The sub-agents of `parent`, run as `config` says.
    pub fn new(config: SubAgentConfig, parent: Parent) -> Self {
        // A resumed session numbers its children on from those it had: an id is never reused.
        let before = stored_children(&parent.sink).len();
        let inner = Arc::new(Inner {
            slots: Arc::new(Semaphore::new(config.max_running.max(1))),
            config,
            stop: Mutex::new(CancellationToken::new()),
            next: AtomicU32::new(u32::try_from(before).unwrap_or(u32::MAX)),
            records: Mutex::new(Vec::new()),
            results: Mutex::new(Vec::new()),
            changes: Mutex::new(Vec::new()),
            background: Mutex::new(Vec::new()),
            ended: Notify::new(),
            window: AtomicU64::new(0),
            parent,
        });
        // The parent's session ending (exec's end, a signal, an MCP session closed) stops the
        // children and kills their commands at once. Weak: the session must not keep them.
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        inner.parent.session.on_shutdown(move || {
            if let Some(inner) = weak.upgrade() {
                inner.stop_now();
            }
        });
        SubAgents { inner }
    }

    /// Says the parent's window is now `tokens` (its executor fitted its requests to a smaller
    /// one the server turned out to serve): the children started from now on keep theirs
    /// within it. Until then, the window of the parent's configuration.
    pub fn set_window(&self, tokens: u64) {
        self.inner.window.store(tokens, Ordering::Relaxed);
    }

    /// Adds `spawn_agent` and `read_sub_agent` to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(SpawnAgentTool::new(self.clone()));
        registry.register(ReadSubAgentTool::new(self.clone()));
    }

    /// Makes these the sub-agents of tool session `session`: the tools of
    /// [`SpawnAgentTool::of_session`] and [`ReadSubAgentTool::of_session`] find them there. The
    /// first attached stays; returns the session's.
    ///
    /// The session's end stops them and lets them go: they hold their parent's session, which
    /// then holds them no longer, so neither outlives the other's end.
    pub fn attach(&self, session: &Session) -> SubAgents {
        let mut first = false;
        let attached = session.extension(|| {
            first = true;
            Attached(Mutex::new(Some(self.clone())))
        });
        if first {
            let slot = Arc::clone(&attached);
            session.on_shutdown(move || {
                if let Some(agents) = lock(&slot.0).take() {
                    agents.inner.stop_now();
                }
            });
        }
        let agents = lock(&attached.0).clone();
        agents.unwrap_or_else(|| self.clone())
    }

    /// The sub-agents attached to `session` ([`SubAgents::attach`]), if any (none once the
    /// session has ended).
    pub fn of_session(session: &Session) -> Option<SubAgents> {
        session
            .existing_extension::<Attached>()
            .and_then(|attached| lock(&attached.0).clone())
    }

    /// How they run.
    pub fn config(&self) -> SubAgentConfig {
        self.inner.config
    }

    /// The results of background children that ended since the last call, oldest first.
    pub fn take_results(&self) -> Vec<SubAgentResult> {
        std::mem::take(&mut *lock(&self.inner.results))
    }

    /// The files children changed since the last call, each labelled with its child: the
    /// parent's run counts them as its own changes.
    pub fn take_changes(&self) -> Vec<ChangedFile> {
        std::mem::take(&mut *lock(&self.inner.changes))
    }

    /// Whether results of background children wait to be taken.
    pub fn has_results(&self) -> bool {
        !lock(&self.inner.results).is_empty()
    }

    /// Background children queued or running.
    pub fn active(&self) -> usize {
        lock(&self.inner.records)
            .iter()
            .filter(|r| r.background && !r.state.ended())
            .count()
    }

    /// Waits until no background child is queued or running; `false` when `cancel` fired
    /// first.
    pub async fn wait(&self, cancel: &CancellationToken) -> bool {
        loop {
            let ended = self.inner.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.active() == 0 {
                return true;
            }
            tokio::select! {
                () = ended => {}
                () = cancel.cancelled() => return false,
            }
        }
    }

    /// Stops every child still queued or running and waits until they have ended (their
    /// commands killed, their results queued as stopped). Children spawned later run again.
    pub async fn stop(&self) {
        let old = {
            let mut stop = lock(&self.inner.stop);
            std::mem::replace(&mut *stop, CancellationToken::new())
        };
        old.cancel();
        let handles = std::mem::take(&mut *lock(&self.inner.background));
        for handle in handles {
            let _ = handle.await;
        }
    }
}

/// The sub-agents of a tool session, kept in it until it ends.
struct Attached(Mutex<Option<SubAgents>>);

/// The definitions of `spawn_agent` and `read_sub_agent`, as a model or an MCP client sees
/// them, from the tools themselves (for lists such as `lathe tools`).
pub fn definitions() -> Vec<ToolDefinition> {
    let mut registry = Registry::new();
    register_for_sessions(&mut registry);
    registry.definitions().cloned().collect()
}

/// Adds `spawn_agent` and `read_sub_agent` to `registry` for the sub-agents of whichever tool
/// session calls them ([`SubAgents::attach`]): one registry serving many sessions. A session
/// with none attached answers that sub-agents are not available there.
pub fn register_for_sessions(registry: &mut Registry) {
    registry.register(SpawnAgentTool::of_session());
    registry.register(ReadSubAgentTool::of_session());
}

impl Inner {
    fn stop_token(&self) -> CancellationToken {
        lock(&self.stop).clone()
    }

    /// Stops every child at once, without waiting: their runs are cancelled and their
    /// commands killed (the parent's session is ending).
    fn stop_now(&self) {
        self.stop_token().cancel();
        let running: Vec<Arc<Session>> = lock(&self.records)
            .iter()
            .filter_map(|r| r.tools.clone())
            .collect();
        for tools in running {
            tools.shutdown();
        }
    }

    fn emit(&self, record: &Record) {
        if let Some(progress) = &record.progress {
            progress(ToolProgress::Status {
                message: format!("sub-agent {}: {}", record.id, record.line),
            });
        }
        self.parent.sink.emit(Event::SubAgent(SubAgentUpdate {
            id: record.id.clone(),
            task: record.task.clone(),
            state: record.state,
            line: record.line.clone(),
            session_id: record.session_id.clone(),
        }));
    }

    /// Changes the record of `id` and announces it.
    fn update(&self, id: &str, change: impl FnOnce(&mut Record)) {
        let mut records = lock(&self.records);
        if let Some(record) = records.iter_mut().find(|r| r.id == id) {
            change(record);
            self.emit(record);
        }
    }

    /// Stops telling the call that waited for `id` about it (the call has returned).
    fn forget_progress(&self, id: &str) {
        if let Some(record) = lock(&self.records).iter_mut().find(|r| r.id == id) {
            record.progress = None;
        }
    }

    /// Children queued or running, other than `id`.
    fn others_active(&self, id: &str) -> Vec<String> {
        lock(&self.records)
            .iter()
            .filter(|r| r.id != id && !r.state.ended())
            .map(|r| r.id.clone())
            .collect()
    }
}

/// The stored sessions of the children of the parent's stored session (none when it is not
/// stored), oldest first.
fn stored_children(sink: &EventSink) -> Vec<lathe_store::Session> {
    match (sink.store(), sink.session()) {
        (Some(store), Some(parent)) => store.children(&parent).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The title a child's stored session gets: its id first, so that a resumed parent finds it.
fn child_title(id: &str, task: &str) -> String {
    format!("[{id}] {}", short_task(task))
}

/// The transcript of child `id` of an earlier process of the parent's session, from the store.
fn stored_transcript(sink: &EventSink, id: &str) -> Option<String> {
    let prefix = format!("[{id}] ");
    let child = stored_children(sink)
        .into_iter()
        .find(|s| s.title.as_deref().is_some_and(|t| t.starts_with(&prefix)))?;
    let history = crate::sink::stored_history(&sink.store()?, &child.id).ok()?;
    Some(transcript(&history))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The number of characters of a task shown in labels and events.
const TASK_SHOWN: usize = 60;

/// `task` on one line, cut to [`TASK_SHOWN`] characters.
fn short_task(task: &str) -> String {
    let line = task.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= TASK_SHOWN {
        return line;
    }
    let cut: String = line.chars().take(TASK_SHOWN - 3).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Gate;

    #[test]
    fn sub_agents_attached_to_a_session_let_it_go_when_it_ends() {
        use lathe_runtime::{ToolConfig, Workspace};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let session = Session::new(
            Workspace::new(&root).unwrap(),
            ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        let provider = crate::provider::connect(
            crate::provider::ProviderKind::Ollama,
            crate::provider::ProviderConfig::new("http://127.0.0.1:9"),
        )
        .unwrap();
        let gate = Gate::with_permissions(
            &lathe_policy::PermissionsConfig::default(),
            crate::approval::ApprovalMode::Auto,
            &root,
            false,
        )
        .unwrap();
        let agents = SubAgents::new(
            SubAgentConfig::default(),
            Parent {
                provider,
                config: ExecutorConfig::new("m"),
                host: Host::builder(Arc::new(lathe_tools::builtin()), Arc::new(gate)).build(),
                approver: Arc::new(crate::approval::NonInteractive),
                session: Arc::clone(&session),
                sink: EventSink::detached(Arc::new(|_: &Event| {})),
            },
        );
        agents.attach(&session);
        let inner = Arc::downgrade(&agents.inner);
        drop(agents);
        assert!(SubAgents::of_session(&session).is_some());
        let weak = Arc::downgrade(&session);
        session.shutdown();
        assert!(SubAgents::of_session(&session).is_none());
        drop(session);
        // Without the end letting them go, each would keep the other alive.
        assert!(weak.upgrade().is_none(), "the session outlived its end");
        assert!(
            inner.upgrade().is_none(),
            "the sub-agents outlived the session"
        );
    }

    #[test]
    fn tasks_are_shown_on_one_short_line() {
        assert_eq!(short_task("find\n  the   tests"), "find the tests");
        let long = "x".repeat(100);
        let shown = short_task(&long);
        assert_eq!(shown.chars().count(), TASK_SHOWN);
        assert!(shown.ends_with("..."));
    }
}
