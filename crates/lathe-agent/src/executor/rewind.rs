//! Cutting the conversation back to before a turn: where each model turn of this process began
//! in the history (turn marks, moved by compactions), and the rewind that cuts there.

use super::Executor;
use crate::events::Event;
use crate::message::Message;

/// Where a model turn began in the history.
#[derive(Debug, Clone)]
pub(super) struct TurnMark {
    /// The session-wide turn number.
    pub(super) turn: u32,
    /// The history's length before the turn: before its task's message, for a task's first
    /// turn.
    pub(super) len: usize,
    /// The seq of the newest stored message then.
    pub(super) stored: u64,
    /// The message at `len - 1` as it was before the turn's task was merged into it (a task
    /// after a failed turn joins the user message the history ended with).
    pub(super) merged_into: Option<Message>,
}

/// Where a turn begins, before it runs and before its number is known: a [`TurnMark`]
/// without its turn.
#[derive(Debug, Clone)]
pub(super) struct TurnStart {
    /// The history's length before the turn.
    pub(super) len: usize,
    /// The seq of the newest stored message then.
    pub(super) stored: u64,
    /// The message the turn's task was merged into, as it was before.
    pub(super) merged_into: Option<Message>,
}

impl Executor {
    /// Cuts the conversation back to before session turn `turn` (a task's first turn: to
    /// before the task's message), and returns the messages cut; `None` when this process
    /// did not run that turn (an earlier process of a resumed session did, or no one yet).
    /// The next turns are numbered on from the newest, so numbers are never reused.
    ///
    /// The stored history is cut too ([`Event::ConversationRewound`]), so a later `--resume`
    /// goes on from here.
    pub fn rewind(&mut self, turn: u32) -> Option<Vec<Message>> {
        let at = self.marks.iter().position(|m| m.turn == turn)?;
        let mark = self.marks[at].clone();
        let len = mark.len.min(self.history.len());
        self.marks.truncate(at);
        self.context.forget_from(len);
        let newest = self.sink.recorded_messages();
        if newest > mark.stored {
            self.sink.emit(Event::ConversationRewound {
                turn,
                first_message: mark.stored + 1,
                last_message: newest,
            });
        }
        let mut cut = self.history.split_off(len);
        self.stored_seqs.truncate(len);
        if let Some(before) = mark.merged_into
            && let Some(joined) = self.history.last_mut()
        {
            // The task had joined the message before it: that message gets back what it had.
            cut.insert(0, std::mem::replace(joined, before));
        }
        Some(cut)
    }

    /// Whether [`Executor::rewind`] can cut back to before session turn `turn`: this process
    /// ran it, and no rewind cut it yet.
    pub fn can_rewind(&self, turn: u32) -> bool {
        self.marks.iter().any(|m| m.turn == turn)
    }

    /// Where a turn that is not a task's first begins: at the end of the history as it is now.
    pub(super) fn turn_start(&self) -> TurnStart {
        TurnStart {
            len: self.history.len(),
            stored: self.sink.recorded_messages(),
            merged_into: None,
        }
    }

    /// Marks where session turn `turn` began, from `start`, moved by the compactions made
    /// since the first `compactions` (one in the turn moved where it began, or replaced it:
    /// then there is no mark).
    pub(super) fn mark_turn(&mut self, turn: u32, start: TurnStart, compactions: usize) {
        // A compaction in the turn moved where it began, or replaced it.
        let mark = self.compactions[compactions..]
            .iter()
            .try_fold(start.len, |at, shift| shift.moved(at));
        if let Some(mark) = mark {
            self.marks.push(TurnMark {
                turn,
                len: mark,
                stored: start.stored,
                merged_into: start.merged_into,
            });
        }
    }
}
