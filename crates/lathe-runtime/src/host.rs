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
/// `CheckpointHook`).
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

    /// The same recorder and hooks over another registry and gate: a sub-agent's, whose calls
    /// are recorded in its parent's turns and pass the parent's hooks.
    pub fn child(&self, registry: Arc<Registry>, gate: Arc<Gate>) -> Host {
        Host {
            dispatcher: Arc::new(self.dispatcher.with_parts(registry, gate)),
            recorder: self.recorder.clone(),
        }
    }

    /// The same pipeline over `registry`: the session's tools in another profile.
    pub fn with_registry(&self, registry: Arc<Registry>) -> Host {
        self.child(registry, Arc::clone(self.gate()))
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
