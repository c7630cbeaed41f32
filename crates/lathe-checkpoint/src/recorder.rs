//! The dispatcher's seam: a [`Hook`] that records the workspace before the first call of a turn
//! that may change it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use lathe_runtime::{CallInfo, FileChange, Hook, Outcome, Session, TurnChange, TurnRecorder};

use crate::{Checkpoints, DiffStat, Result};

/// Checkpoints around the calls of each turn. The agent loop (or any front end) says when a
/// turn begins and ends; the hook snapshots before the first call of the turn that the gate
/// judged may change the workspace ([`Judgement::may_change_workspace`]: a write, an edit, a
/// shell command that is not read-only, anything unknown).
///
/// [`Judgement::may_change_workspace`]: lathe_runtime::Judgement::may_change_workspace
///
/// A snapshot that fails does not stop the call: the call's result says that it is not
/// covered by undo.
#[derive(Debug)]
pub struct CheckpointRecorder {
    checkpoints: Arc<Checkpoints>,
    turn: AtomicU32,
    /// Why the snapshot of a call failed, by call id, for its result.
    failures: Mutex<Vec<(String, String)>>,
}

impl CheckpointRecorder {
    /// A hook recording into `checkpoints`, starting at turn 1.
    pub fn new(checkpoints: Arc<Checkpoints>) -> Self {
        CheckpointRecorder {
            checkpoints,
            turn: AtomicU32::new(1),
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
        _session: &Session,
    ) -> std::result::Result<(), String> {
        if !call.judgement.may_change_workspace {
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
