//! The dispatcher's seam: a [`Hook`] that records the workspace before the first call of a turn
//! that may change it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use lathe_policy::AnalysisContext;
use lathe_runtime::{
    CallInfo, Effect, FileChange, Hook, Outcome, Session, TurnChange, TurnRecorder,
};

use crate::{Checkpoints, DiffStat, Result};

/// Checkpoints around the calls of each turn. The agent loop (or any front end) says when a
/// turn begins and ends; the hook snapshots before the first call of the turn whose effects are
/// not read-only (a write, an edit, a shell command that is not read-only, anything unknown).
///
/// A snapshot that fails does not stop the call: the call's result says that it is not
/// covered by undo.
#[derive(Debug)]
pub struct CheckpointRecorder {
    checkpoints: Arc<Checkpoints>,
    turn: AtomicU32,
    home: PathBuf,
    /// Why the snapshot of a call failed, by call id, for its result.
    failures: Mutex<Vec<(String, String)>>,
}

impl CheckpointRecorder {
    /// A hook recording into `checkpoints`, starting at turn 1.
    pub fn new(checkpoints: Arc<Checkpoints>) -> Self {
        CheckpointRecorder {
            checkpoints,
            turn: AtomicU32::new(1),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default(),
            failures: Mutex::new(Vec::new()),
        }
    }

    /// The checkpoints.
    pub fn checkpoints(&self) -> &Arc<Checkpoints> {
        &self.checkpoints
    }

    /// Calls from now on belong to `turn`.
    pub fn begin_turn(&self, turn: u32) {
        self.turn.store(turn, Ordering::SeqCst);
    }

    /// Ends the current turn: records what it left, and returns the size of its change
    /// (`None` when it changed nothing).
    #[expect(
        clippy::disallowed_methods,
        reason = "synchronous: async callers go through Host::finish_turn"
    )]
    pub fn end_turn(&self) -> Result<Option<DiffStat>> {
        self.checkpoints
            .after_turn(self.turn.load(Ordering::SeqCst))
    }

    /// Whether a call with these effects may change the workspace: see [`changes_workspace`].
    pub fn may_change(&self, effects: &[Effect], session: &Session) -> bool {
        may_change(effects, session, &self.home)
    }
}

/// Whether a call with these effects may change the workspace (and so is snapshotted before
/// it runs): a write, an edit, a shell command that is not read-only, anything unknown.
pub fn changes_workspace(effects: &[Effect], session: &Session) -> bool {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    may_change(effects, session, &home)
}

fn may_change(effects: &[Effect], session: &Session, home: &std::path::Path) -> bool {
    effects.iter().any(|effect| match effect {
        Effect::Command { command, cwd, .. } => {
            let root = session.workspace().root();
            let mut ctx = AnalysisContext::new(root, home);
            if let Some(cwd) = cwd {
                ctx = ctx.with_cwd(root.join(cwd));
            }
            !lathe_policy::analyze(command, &ctx).is_safe()
        }
        other => !other.only_reads(),
    })
}

impl Hook for CheckpointRecorder {
    #[expect(
        clippy::disallowed_methods,
        reason = "the dispatcher runs before_run hooks on a blocking thread"
    )]
    fn before_run(
        &self,
        call: &CallInfo,
        changes: &[FileChange],
        session: &Session,
    ) -> std::result::Result<(), String> {
        if !self.may_change(&call.effects, session) {
            return Ok(());
        }
        let turn = self.turn.load(Ordering::SeqCst);
        let mut result = self.checkpoints.before_change(turn);
        for change in changes {
            if result.is_err() {
                break;
            }
            result = self
                .checkpoints
                .before_file_change(turn, std::path::Path::new(&change.path));
        }
        if let Err(err) = result {
            tracing::warn!("no checkpoint before {}: {err}", call.title);
            self.failures
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((call.call_id.clone(), err.to_string()));
        }
        Ok(())
    }

    fn after(&self, call: &CallInfo, outcome: &mut Outcome, _session: &Session) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = failures.iter().position(|(id, _)| *id == call.call_id) {
            let (_, why) = failures.remove(at);
            outcome.output.text.push_str(&format!(
                "\n[note: no checkpoint could be made before this call ({why}); undo will not cover its changes]"
            ));
        }
    }
}

impl TurnRecorder for CheckpointRecorder {
    fn begin_turn(&self, turn: u32) {
        CheckpointRecorder::begin_turn(self, turn);
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "called on a blocking thread (Host::finish_turn) or by synchronous code"
    )]
    fn end_turn(&self) -> std::result::Result<Option<TurnChange>, String> {
        CheckpointRecorder::end_turn(self)
            .map(|stat| {
                stat.map(|stat| TurnChange {
                    files: stat.files,
                    added: stat.added,
                    removed: stat.removed,
                })
            })
            .map_err(|err| err.to_string())
    }
}
