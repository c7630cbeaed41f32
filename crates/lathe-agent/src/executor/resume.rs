//! Going on with a stored session: its history read back after the fresh system prompt, runs
//! of messages merged as the store's reader merges them, a result for every call a stopped
//! Lathe never answered, and the plan the model kept restored from its newest `update_plan`
//! result.

use std::collections::VecDeque;

use lathe_runtime::checklist::{self, ChecklistStep};

use super::Executor;
use crate::message::{Message, ToolCall, push_merged};

/// The result of a call that a stopped Lathe never answered, on resume.
const INTERRUPTED: &str = "this call was interrupted: Lathe stopped before it finished, so its \
result is unknown. Check the state before you repeat it.";

impl Executor {
    /// Continues a stored conversation: `history` without its old system prompt goes after the
    /// fresh one. Nothing is stored again. Calls left without a result (a run killed mid-turn)
    /// get one saying so, since servers refuse a call without its result.
    ///
    /// Runs of user messages, and of assistant messages, are merged into one (sessions stored
    /// before Lathe merged them hold two in a row after a failed turn).
    pub fn resume(&mut self, history: Vec<Message>) {
        self.resume_stored(history.into_iter().map(|m| (m, 0)).collect());
    }

    /// [`Executor::resume`] with the seq of the newest stored message each message stands for
    /// ([`stored_history_seqs`](crate::sink::stored_history_seqs)): a compaction of the
    /// resumed part is then recorded with the stored messages it replaced, so the next resume
    /// reads the summary instead of compacting them again.
    pub fn resume_stored(&mut self, history: Vec<(Message, u64)>) {
        let (messages, seqs) = merged_runs(history);
        self.append_resumed(messages, seqs);
    }

    /// Appends the resumed `messages` (with their `seqs`) to the history, each call that has no
    /// result followed by one saying it was interrupted.
    fn append_resumed(&mut self, messages: Vec<Message>, seqs: Vec<u64>) {
        self.stored_seqs.resize(self.history.len(), 0);
        let mut pending: VecDeque<ToolCall> = VecDeque::new();
        for (message, seq) in messages.into_iter().zip(seqs) {
            if let Message::Tool(result) = message {
                pending.pop_front();
                self.history.push(Message::Tool(result));
                self.stored_seqs.push(seq);
                continue;
            }
            for call in pending.drain(..) {
                self.history.push(Message::tool_result(&call, INTERRUPTED));
                self.stored_seqs.push(0);
            }
            if let Message::Assistant(turn) = &message {
                pending.extend(turn.tool_calls.iter().cloned());
            }
            if push_merged(&mut self.history, message) {
                if let Some(last) = self.stored_seqs.last_mut() {
                    *last = seq.max(*last);
                }
            } else {
                self.stored_seqs.push(seq);
            }
        }
        for call in pending.drain(..) {
            self.history.push(Message::tool_result(&call, INTERRUPTED));
            self.stored_seqs.push(0);
        }
    }

    /// Goes on with the plan a stored session had (`update_plan`'s checklist), as its stored
    /// events say ([`last_plan`](crate::stored::last_plan)): a resumed session's model keeps
    /// its plan, and "done" with open steps is questioned as before.
    pub fn restore_plan(&mut self, steps: Vec<ChecklistStep>) {
        checklist::restore(self.runner.session(), steps);
    }
}

/// The stored messages without their system prompt, runs merged first, each keeping the newest
/// seq of what it joined.
fn merged_runs(history: Vec<(Message, u64)>) -> (Vec<Message>, Vec<u64>) {
    // Runs merged first, each keeping the newest seq of what it joined.
    let (mut messages, mut seqs) = (Vec::new(), Vec::new());
    for (message, seq) in history {
        if matches!(message, Message::System { .. }) {
            continue;
        }
        if push_merged(&mut messages, message) {
            if let Some(last) = seqs.last_mut() {
                *last = seq.max(*last);
            }
        } else {
            seqs.push(seq);
        }
    }
    (messages, seqs)
}
