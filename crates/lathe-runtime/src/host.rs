//! The host of a session's calls: the one place a front end's call pipeline is put together.
//!
//! A [`Host`] is built once per session from the registry and the gate, with what runs around
//! every call: the recorder of each turn's changes (checkpoints, [`TurnRecorder`]) and the other
//! hooks (project hooks, branch guards, audit logs). It hands out the [`Dispatcher`] every call
//! goes through and owns the turn scope: [`Host::begin_turn`] and [`Host::end_turn`] bracket the
//! calls of one turn. The agent, its sub-agents ([`Host::child`]), `lathe mcp` and `lathe tool`
//! are all built through it, so one call gets the same hooks and checkpoints in each of them.
//!
//! ```
//! use std::sync::Arc;
//!
//! use lathe_runtime::{ApprovalMode, Gate, Host, Registry};
//!
//! let root = std::env::temp_dir();
//! let host = Host::builder(Arc::new(Registry::new()), Arc::new(Gate::new(ApprovalMode::Ask, &root)))
//!     .build();
//! // No recorder: a turn records nothing.
//! host.begin_turn(1);
//! assert_eq!(host.end_turn(), Ok(None));
//! assert_eq!(host.dispatcher().gate().mode(), ApprovalMode::Ask);
//! ```

use std::sync::Arc;

use crate::dispatch::{Dispatcher, Gate, Hook};
use crate::registry::Registry;

/// What a turn changed, as its recorder counted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnChange {
    /// Files changed.
    pub files: usize,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// Records what each turn changes, so it can be taken back: a [`Hook`] that snapshots before a
/// call changes the workspace, told when a turn begins and ends (`lathe-checkpoint`'s
/// `CheckpointRecorder`).
pub trait TurnRecorder: Hook {
    /// Calls from now on belong to `turn`.
    fn begin_turn(&self, turn: u32);

    /// Ends the current turn and records what it left: what it changed, `None` when it changed
    /// nothing, `Err` with why it could not be recorded (the calls ran; undo will not cover
    /// them).
    fn end_turn(&self) -> Result<Option<TurnChange>, String>;
}

/// A session's call pipeline: the dispatcher over its registry and gate with its hooks, and the
/// recorder of its turns. Cheap to clone.
#[derive(Clone)]
pub struct Host {
    dispatcher: Arc<Dispatcher>,
    recorder: Option<Arc<dyn TurnRecorder>>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("dispatcher", &self.dispatcher)
            .field("recorder", &self.recorder.is_some())
            .finish()
    }
}

/// Builds a [`Host`]: [`Host::builder`].
pub struct HostBuilder {
    registry: Arc<Registry>,
    gate: Arc<Gate>,
    recorder: Option<Arc<dyn TurnRecorder>>,
    hooks: Vec<Arc<dyn Hook>>,
}

impl HostBuilder {
    /// Records each turn's changes with `recorder`; it runs before every other hook, so a
    /// snapshot is taken before a hook's own work.
    pub fn checkpoints(mut self, recorder: Option<Arc<dyn TurnRecorder>>) -> Self {
        self.recorder = recorder;
        self
    }

    /// Adds a hook that runs around every call, after those added before it.
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Adds hooks that run around every call, in order, after those added before.
    pub fn hooks(mut self, hooks: impl IntoIterator<Item = Arc<dyn Hook>>) -> Self {
        self.hooks.extend(hooks);
        self
    }

    /// The host.
    pub fn build(self) -> Host {
        Host::assemble(self.registry, self.gate, self.recorder, self.hooks)
    }
}

impl Host {
    /// A host over `registry`, deciding with `gate`; no recorder and no hooks until added.
    pub fn builder(registry: Arc<Registry>, gate: Arc<Gate>) -> HostBuilder {
        HostBuilder {
            registry,
            gate,
            recorder: None,
            hooks: Vec::new(),
        }
    }

    fn assemble(
        registry: Arc<Registry>,
        gate: Arc<Gate>,
        recorder: Option<Arc<dyn TurnRecorder>>,
        hooks: Vec<Arc<dyn Hook>>,
    ) -> Host {
        let mut dispatcher = Dispatcher::new(registry, gate);
        if let Some(recorder) = &recorder {
            dispatcher = dispatcher.with_hook(Arc::clone(recorder) as Arc<dyn Hook>);
        }
        for hook in hooks {
            dispatcher = dispatcher.with_hook(hook);
        }
        Host {
            dispatcher: Arc::new(dispatcher),
            recorder,
        }
    }

    /// A host around a dispatcher assembled by hand (its hooks as they are), recording no turns.
    pub fn from_dispatcher(dispatcher: Arc<Dispatcher>) -> Host {
        Host {
            dispatcher,
            recorder: None,
        }
    }

    /// The dispatcher every call of the session goes through.
    pub fn dispatcher(&self) -> &Arc<Dispatcher> {
        &self.dispatcher
    }

    /// The tools.
    pub fn registry(&self) -> &Arc<Registry> {
        self.dispatcher.registry()
    }

    /// The gate.
    pub fn gate(&self) -> &Arc<Gate> {
        self.dispatcher.gate()
    }

    /// The recorder of the session's turns, when it keeps checkpoints.
    pub fn recorder(&self) -> Option<&Arc<dyn TurnRecorder>> {
        self.recorder.as_ref()
    }

    /// A sub-agent's host over its own registry and gate: its calls pass the parent's hooks
    /// (the recorder's included, so what it changes is part of the parent's turn), and the turn
    /// scope stays the parent's: a child's [`begin_turn`](Self::begin_turn) and
    /// [`end_turn`](Self::end_turn) record nothing.
    pub fn child(&self, registry: Arc<Registry>, gate: Arc<Gate>) -> Host {
        Host {
            dispatcher: Arc::new(self.dispatcher.with_parts(registry, gate)),
            recorder: None,
        }
    }

    /// The same pipeline, turn scope included, over `registry`: the session's tools in another
    /// profile.
    pub fn with_registry(&self, registry: Arc<Registry>) -> Host {
        Host {
            dispatcher: Arc::new(self.dispatcher.with_registry(registry)),
            recorder: self.recorder.clone(),
        }
    }

    /// The calls from now on belong to `turn` (numbered across the whole session).
    pub fn begin_turn(&self, turn: u32) {
        if let Some(recorder) = &self.recorder {
            recorder.begin_turn(turn);
        }
    }

    /// Ends the current turn: what it changed (`None`: nothing, or no recorder), or why it could
    /// not be recorded. Recording snapshots the workspace: from async code, use
    /// [`finish_turn`](Self::finish_turn).
    pub fn end_turn(&self) -> Result<Option<TurnChange>, String> {
        match &self.recorder {
            Some(recorder) => recorder.end_turn(),
            None => Ok(None),
        }
    }

    /// [`end_turn`](Self::end_turn) on a blocking thread, so the snapshot does not hold up an
    /// async worker.
    pub async fn finish_turn(&self) -> Result<Option<TurnChange>, String> {
        let Some(recorder) = self.recorder.clone() else {
            return Ok(None);
        };
        tokio::task::spawn_blocking(move || recorder.end_turn())
            .await
            .unwrap_or_else(|err| Err(format!("recording the turn stopped: {err}")))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::dispatch::{CallInfo, FixedAnswer, Outcome};
    use crate::tool::{ResultExt, ToolResult};
    use crate::{
        ApprovalDecision, ApprovalMode, Effect, FileChange, Session, Tool, ToolContext, ToolKind,
        ToolOutput, Workspace,
    };

    /// Touches a file: a call that changes the workspace.
    struct Touch;

    #[derive(Deserialize, JsonSchema)]
    struct TouchInput {
        /// The file.
        path: String,
    }

    impl Tool for Touch {
        const NAME: &'static str = "touch";
        type Input = TouchInput;

        fn kind(&self) -> ToolKind {
            ToolKind::Edit
        }

        fn effects(&self, input: &TouchInput, _session: &Session) -> Vec<Effect> {
            vec![Effect::Write {
                path: input.path.clone(),
            }]
        }

        async fn run(&self, input: TouchInput, ctx: ToolContext) -> ToolResult {
            let root = ctx.session.workspace().root().to_path_buf();
            std::fs::write(root.join(&input.path), "").or_model(|err| err.to_string())?;
            Ok(ToolOutput::ok("touched"))
        }
    }

    /// Writes down what it is told, in order, under its name.
    struct Log {
        name: &'static str,
        seen: Arc<Mutex<Vec<String>>>,
    }

    impl Log {
        fn note(&self, what: &str) {
            self.seen
                .lock()
                .unwrap()
                .push(format!("{} {what}", self.name));
        }
    }

    impl Hook for Log {
        fn before_run(&self, call: &CallInfo, _: &[FileChange], _: &Session) -> Result<(), String> {
            self.note(&format!("before {}", call.name));
            Ok(())
        }

        fn after(&self, call: &CallInfo, _: &mut Outcome, _: &Session) {
            self.note(&format!("after {}", call.name));
        }
    }

    impl TurnRecorder for Log {
        fn begin_turn(&self, turn: u32) {
            self.note(&format!("begin {turn}"));
        }

        fn end_turn(&self) -> Result<Option<TurnChange>, String> {
            self.note("end");
            Ok(Some(TurnChange::default()))
        }
    }

    #[tokio::test]
    async fn the_recorder_runs_first_and_owns_the_turn_a_child_passes_the_hooks_only() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::new(
            Workspace::new(dir.path()).unwrap(),
            Default::default(),
            dir.path().join(".state"),
        )
        .unwrap();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let log = |name| Log {
            name,
            seen: Arc::clone(&seen),
        };
        let mut registry = Registry::new();
        registry.register(Touch);
        let registry = Arc::new(registry);
        let gate = Arc::new(Gate::new(ApprovalMode::Full, dir.path()));
        let host = Host::builder(Arc::clone(&registry), Arc::clone(&gate))
            .hook(Arc::new(log("hook")))
            .checkpoints(Some(Arc::new(log("recorder"))))
            .build();
        let approver = FixedAnswer(ApprovalDecision::AllowOnce);
        let call = |host: Host| {
            let session = Arc::clone(&session);
            let approver = &approver;
            async move {
                host.dispatcher()
                    .call(
                        "touch",
                        json!({"path": "a"}),
                        approver,
                        ToolContext::new(session),
                    )
                    .await
            }
        };
        host.begin_turn(1);
        assert!(!call(host.clone()).await.output.is_error);
        assert_eq!(host.finish_turn().await, Ok(Some(TurnChange::default())));
        let child = host.child(registry, gate);
        child.begin_turn(2);
        assert!(!call(child.clone()).await.output.is_error);
        assert_eq!(child.finish_turn().await, Ok(None));
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "recorder begin 1",
                "recorder before touch",
                "hook before touch",
                "recorder after touch",
                "hook after touch",
                "recorder end",
                // The child's call passes both; its turn is its parent's.
                "recorder before touch",
                "hook before touch",
                "recorder after touch",
                "hook after touch",
            ]
        );
    }

    /// Where each hook call and each turn end ran: the thread's id.
    #[derive(Default)]
    struct Threads(Mutex<Vec<(String, std::thread::ThreadId)>>);

    impl Threads {
        fn note(&self, what: &str) {
            self.0
                .lock()
                .unwrap()
                .push((what.to_owned(), std::thread::current().id()));
        }
    }

    impl Hook for Threads {
        fn before_run(&self, call: &CallInfo, _: &[FileChange], _: &Session) -> Result<(), String> {
            let what = if call.effects.iter().all(Effect::only_reads) {
                "before a read"
            } else {
                "before a change"
            };
            self.note(what);
            Ok(())
        }
    }

    impl TurnRecorder for Threads {
        fn begin_turn(&self, _turn: u32) {}

        fn end_turn(&self) -> Result<Option<TurnChange>, String> {
            self.note("end of turn");
            Ok(None)
        }
    }

    /// Reads nothing, says it only reads.
    struct Look;

    impl Tool for Look {
        const NAME: &'static str = "look";
        type Input = TouchInput;

        fn kind(&self) -> ToolKind {
            ToolKind::Read
        }

        fn effects(&self, input: &TouchInput, _session: &Session) -> Vec<Effect> {
            vec![Effect::Read {
                path: input.path.clone(),
            }]
        }

        async fn run(&self, _input: TouchInput, _ctx: ToolContext) -> ToolResult {
            Ok(ToolOutput::ok("looked"))
        }
    }

    #[tokio::test]
    async fn a_snapshot_before_a_change_and_the_end_of_a_turn_run_off_the_async_thread() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::new(
            Workspace::new(dir.path()).unwrap(),
            Default::default(),
            dir.path().join(".state"),
        )
        .unwrap();
        let threads = Arc::new(Threads::default());
        let mut registry = Registry::new();
        registry.register(Touch);
        registry.register(Look);
        let gate = Arc::new(Gate::new(ApprovalMode::Full, dir.path()));
        let host = Host::builder(Arc::new(registry), gate)
            .checkpoints(Some(Arc::clone(&threads) as Arc<dyn TurnRecorder>))
            .build();
        let approver = FixedAnswer(ApprovalDecision::AllowOnce);
        for name in ["look", "touch"] {
            let ctx = ToolContext::new(Arc::clone(&session));
            let outcome = host
                .dispatcher()
                .call(name, json!({"path": "a"}), &approver, ctx)
                .await;
            assert!(!outcome.output.is_error, "{}", outcome.output.text);
        }
        assert_eq!(host.finish_turn().await, Ok(None));
        // This test's runtime has one thread: the async code runs on the test's own.
        let here = std::thread::current().id();
        let seen = threads.0.lock().unwrap();
        let whats: Vec<&str> = seen.iter().map(|(what, _)| what.as_str()).collect();
        assert_eq!(whats, ["before a read", "before a change", "end of turn"]);
        assert_eq!(seen[0].1, here, "a read's hooks run inline");
        assert_ne!(
            seen[1].1, here,
            "the snapshot before a change ran on the async thread"
        );
        assert_ne!(
            seen[2].1, here,
            "the end of the turn ran on the async thread"
        );
    }
}
