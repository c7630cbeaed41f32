//! Compaction: the older part of the conversation replaced by a summary the model writes.
//!
//! The history is cut at the start of a model turn or at a user message (never between a call
//! and its result; a resumed session's stored turns are found from the messages); the
//! recent turns after the cut stay verbatim (about a fifth of the window, and at least the
//! newest turn and what the model has not seen yet). The older part is sent, as a plain
//! transcript, in a request of its own that fits the window (long messages cut harder until it
//! does), asking for a summary under fixed headings: the task, what was done, the files
//! changed, what is still open, the plan. The summary, with the current `update_plan` state,
//! becomes one user message after the system prompt. An [`Event::ContextCompacted`] records
//! it: the store keeps every message, and a resumed session reads the summary in place of
//! those it replaced. When the summary request cannot fit or fails, nothing changes (the caller
//! shortens instead).

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use lathe_runtime::checklist;

use super::{Executor, fit::margin};
use crate::events::Event;
use crate::message::Message;
use crate::provider::{ChatRequest, ToolProtocol};
use crate::text::cut;

/// What the summary request's system prompt says.
pub const COMPACT_SYSTEM: &str = "You summarise a coding agent's conversation so that the \
agent can continue the task from your summary alone. Write plain text under these headings: \
Task (what the user asked, with every requirement), Done (what was done and found, with file \
paths, names, commands and errors), Files changed, Open (what is still to do, unanswered \
questions), Plan (the agent's plan and where it stands, if it had one). Be concrete and \
short. Do not call tools; do not address the user.";

/// How the summary message begins (what the model reads in place of the older turns).
pub const SUMMARY_HEAD: &str = "[Summary of the earlier conversation:";

/// The recent part kept verbatim: about this share of the window.
const KEEP_PERCENT: u64 = 20;
/// Each message of the transcript is cut to the first of these lengths, in characters, at
/// which the summary request fits.
const TRANSCRIPT_CUTS: &[usize] = &[4_000, 1_500, 600, 200, 80];
/// After a summary request failed, automatic compaction waits for this many more messages.
const RETRY_AFTER_MESSAGES: usize = 6;
/// The summary's own length cap: this share of the window, at most [`SUMMARY_MAX_TOKENS`] and
/// a third of the conversation's room...
const SUMMARY_SHARE_DIVISOR: u64 = 8;
const SUMMARY_MAX_TOKENS: u64 = 1_024;
/// ...and never under this.
const MIN_SUMMARY_TOKENS: u64 = 128;

/// How a compaction moved the history: the messages from 1 to before `end` were replaced by
/// one, and the message at `end` was merged into it when `merged`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shift {
    end: usize,
    merged: bool,
}

impl Shift {
    /// Where the message that was at `index` (a turn's start) is now; `None` when it was
    /// replaced.
    pub(super) fn moved(self, index: usize) -> Option<usize> {
        if index < self.end || (self.merged && index == self.end) {
            return None;
        }
        Some(index - (self.end - 1) + 1 - usize::from(self.merged))
    }
}

/// What one compaction did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compaction {
    /// Messages replaced.
    pub messages: usize,
    /// The estimated prompt before, in tokens.
    pub before: u64,
    /// And after.
    pub after: u64,
}

/// The longest summary asked for in a `window`-token window.
fn summary_cap(window: u64) -> u64 {
    (window / SUMMARY_SHARE_DIVISOR).min(SUMMARY_MAX_TOKENS)
}

/// The index to cut `history` at: one of `boundaries` (where model turns began), after at
/// least two messages past the system prompt, no later than the newest assistant message,
/// and the earliest whose rest takes `keep` tokens or less (`sizes` per message); the latest
/// allowed when none is that small.
pub(super) fn split_point(
    history: &[Message],
    boundaries: &[usize],
    sizes: &[u64],
    keep: u64,
) -> Option<usize> {
    let newest = history
        .iter()
        .rposition(|m| matches!(m, Message::Assistant(_)))?;
    let mut allowed: Vec<usize> = boundaries
        .iter()
        .copied()
        .filter(|&b| {
            b >= 3
                && b <= newest
                && matches!(
                    history.get(b),
                    Some(Message::User { .. } | Message::Assistant(_))
                )
        })
        .collect();
    allowed.sort_unstable();
    allowed.dedup();
    let rest = |b: usize| sizes[b..].iter().sum::<u64>();
    allowed
        .iter()
        .copied()
        .find(|&b| rest(b) <= keep)
        .or_else(|| allowed.last().copied())
}

/// Where turns begin in `history`, read from the messages themselves: each user message and
/// each assistant message (a model turn's start; its results follow it, so a cut there never
/// parts a call from its result).
fn turn_starts(history: &[Message]) -> Vec<usize> {
    history
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(m, Message::User { .. } | Message::Assistant(_)))
        .map(|(index, _)| index)
        .collect()
}

/// The older part as the summary request shows it, each message cut to `chars` characters.
fn transcript(messages: &[Message], chars: usize) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::System { .. } => continue,
            Message::User { content, .. } => {
                out.push_str(&format!("USER: {}\n\n", cut(content.trim(), chars)));
            }
            Message::Assistant(a) => {
                out.push_str("AGENT:");
                if !a.content.trim().is_empty() {
                    out.push_str(&format!(" {}", cut(a.content.trim(), chars)));
                }
                for call in &a.tool_calls {
                    out.push_str(&format!(
                        "\n  called {} {}",
                        call.name,
                        cut(&call.arguments.to_string(), chars.min(300))
                    ));
                }
                out.push_str("\n\n");
            }
            Message::Tool(t) => out.push_str(&format!(
                "RESULT of {}: {}\n\n",
                t.tool_name,
                cut(t.content.trim(), chars)
            )),
        }
    }
    out
}

impl Executor {
    /// Replaces the older part of the history with a summary the model writes (see the
    /// module's docs). `Err` says why nothing changed.
    pub(super) async fn compact_history(
        &mut self,
        tools: &[Value],
        manual: bool,
        cancel: &CancellationToken,
    ) -> Result<Compaction, String> {
        let before = self.context.estimate(&self.history, tools);
        let sizes: Vec<u64> = self
            .history
            .iter()
            .map(|m| self.context.message_estimate(m))
            .collect();
        let boundaries = self.turn_boundaries();
        let (keep, cap) = self.compaction_budget(tools);
        let Some(end) = split_point(&self.history, &boundaries, &sizes, keep) else {
            return Err("no earlier turns to summarise yet".to_owned());
        };
        let replaced: u64 = sizes[1..end].iter().sum();
        if !manual && replaced < cap {
            return Err(format!(
                "the older turns (about {replaced} tokens) are shorter than a summary could be"
            ));
        }
        if !manual
            && let Some(failed) = self.summary_failed_at
            && self.history.len() < failed + RETRY_AFTER_MESSAGES
        {
            return Err("the last summary request failed; waiting for more turns".to_owned());
        }
        let last_message = self.stored_before(end);
        let summary = match self.summarise(end, cap, cancel).await {
            Ok(summary) => summary,
            Err(why) => {
                self.summary_failed_at = Some(self.history.len());
                return Err(why);
            }
        };
        self.summary_failed_at = None;
        let text = self.summary_message(end, &summary);
        self.replace_with_summary(end, text.clone(), last_message);
        let after = self.context.estimate(&self.history, tools);
        self.sink.emit(Event::ContextCompacted {
            manual,
            messages: end - 1,
            tokens_before: before,
            tokens_after: after,
            first_message: u64::from(last_message > 0),
            last_message,
            summary: text,
        });
        tracing::info!(messages = end - 1, before, after, "compacted the context");
        Ok(Compaction {
            messages: end - 1,
            before,
            after,
        })
    }

    /// Where turns began: this process's marks, and before them (the stored turns of a
    /// resumed session, which have none) each user message and each start of a model turn.
    fn turn_boundaries(&self) -> Vec<usize> {
        let first_mark = self.marks.iter().map(|m| m.len).min().unwrap_or(usize::MAX);
        let mut boundaries: Vec<usize> = turn_starts(&self.history)
            .into_iter()
            .filter(|&b| b < first_mark)
            .collect();
        boundaries.extend(self.marks.iter().map(|m| m.len));
        boundaries
    }

    /// The tokens the recent part keeps, and the summary's cap, for a request with `tools`.
    fn compaction_budget(&self, tools: &[Value]) -> (u64, u64) {
        let window = self.context.window();
        // What the conversation has of the window once the fixed part and the reply are
        // counted: the recent part and the summary take a third of it each at most.
        let fixed = self.fixed_part(tools);
        let room = self.prompt_budget(fixed).saturating_sub(fixed);
        let keep = (window * KEEP_PERCENT / 100).min(room / 3);
        let cap = summary_cap(window).min(room / 3).max(MIN_SUMMARY_TOKENS);
        (keep, cap)
    }

    /// The seq of the newest stored message that the history's messages from 1 to before
    /// `end` stand for (0: unknown).
    fn stored_before(&self, end: usize) -> u64 {
        // The stored messages it replaces: known at a turn of this process, and inside a
        // resumed session's stored part from the seqs its resume read (none otherwise: a later
        // resume then reads them whole, and compacts them again if need be).
        self.marks
            .iter()
            .find(|m| m.len == end)
            .map(|m| m.stored)
            .or_else(|| {
                self.stored_seqs
                    .get(1..end)
                    .and_then(|seqs| seqs.iter().copied().max())
            })
            .unwrap_or(0)
    }

    /// The message that stands for the history's messages from 1 to before `end`: the model's
    /// `summary`, and the plan as it is now.
    fn summary_message(&self, end: usize, summary: &str) -> String {
        let mut text = format!(
            "{SUMMARY_HEAD} {} messages were replaced by this summary to keep the conversation \
             inside the context window; the session keeps them all.]\n\n{}",
            end - 1,
            summary.trim()
        );
        let plan = checklist::current(self.runner.session());
        if !plan.is_empty() {
            let steps: Vec<String> = plan
                .iter()
                .map(|s| format!("{} {}", s.status.mark(), s.step))
                .collect();
            text.push_str(&format!(
                "\n\nYour plan (update_plan) now:\n{}",
                steps.join("\n")
            ));
        }
        text
    }

    /// Puts `text` in the place of the history's messages from 1 to before `end` (which stand
    /// for the stored messages up to `last_message`), and moves the notes and the turn marks
    /// with them.
    fn replace_with_summary(&mut self, end: usize, text: String, last_message: u64) {
        // The summary takes the older part's place; a user message after it joins it.
        self.history.splice(1..end, [Message::user(text)]);
        if self.stored_seqs.len() >= end {
            self.stored_seqs.splice(1..end, [last_message]);
        } else {
            self.stored_seqs.clear();
        }
        let merged = matches!(self.history.get(2), Some(Message::User { .. }));
        if merged {
            let Message::User {
                content: next,
                images: next_images,
            } = self.history.remove(2)
            else {
                unreachable!("checked to be a user message")
            };
            if let Some(Message::User { content, images }) = self.history.get_mut(1) {
                content.push_str("\n\n");
                content.push_str(&next);
                images.extend(next_images);
            }
            if self.stored_seqs.len() > 2 {
                let next = self.stored_seqs.remove(2);
                self.stored_seqs[1] = self.stored_seqs[1].max(next);
            }
        }
        let shift = Shift { end, merged };
        self.context.replace_notes(1, end + usize::from(merged), 1);
        let marks = std::mem::take(&mut self.marks);
        self.marks = marks
            .into_iter()
            .filter_map(|mut m| {
                m.len = shift.moved(m.len)?;
                Some(m)
            })
            .collect();
        self.compactions.push(shift);
    }

    /// The model's summary of the history's messages from 1 to before `end`, from a request
    /// that fits the window.
    async fn summarise(
        &mut self,
        end: usize,
        cap: u64,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let window = self.context.window();
        let budget = window.saturating_sub(cap + margin(window));
        let ask = "Summarise the conversation above under the headings Task, Done, Files \
                   changed, Open and Plan.";
        let messages = TRANSCRIPT_CUTS
            .iter()
            .map(|&chars| {
                vec![
                    Message::system(COMPACT_SYSTEM),
                    Message::user(format!(
                        "The conversation so far:\n\n{}{ask}",
                        transcript(&self.history[1..end], chars)
                    )),
                ]
            })
            .find(|m| self.context.estimate(m, &[]) <= budget)
            .ok_or_else(|| {
                "the older turns are too long to summarise in this window, even cut".to_owned()
            })?;
        let estimate = self.context.estimate(&messages, &[]);
        let mut options = self.config.options.clone();
        options.max_tokens = Some(u32::try_from(cap).unwrap_or(u32::MAX));
        let request = ChatRequest {
            model: self.config.model.clone(),
            messages,
            tools: Vec::new(),
            options,
            tool_protocol: match self.config.tool_protocol {
                ToolProtocol::Text => ToolProtocol::Text,
                _ => ToolProtocol::Native,
            },
            tool_choice: None,
        };
        let sink = self.sink.clone();
        // The summary is not the answer: only the waiting is shown.
        let mut emit = move |event: Event| {
            if matches!(event, Event::Waiting { .. }) {
                sink.emit(event);
            }
        };
        let answered = match self.attempt(&request, cancel, &mut emit).await {
            Ok(answered) => answered,
            Err(super::turn::Attempt::Failed(error)) => return Err(error.to_string()),
            Err(super::turn::Attempt::Cut(failure)) => return Err(failure.error.to_string()),
        };
        if let Some(actual) = answered.usage.and_then(|u| u.prompt_tokens) {
            self.context.calibrate(estimate, actual);
        }
        if answered.cancelled {
            return Err("stopped".to_owned());
        }
        let summary = answered.content.trim();
        if summary.is_empty() {
            return Err("the model wrote no summary".to_owned());
        }
        Ok(summary.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, ToolCall};
    use serde_json::json;

    fn history() -> Vec<Message> {
        let mut h = vec![Message::system("sys"), Message::user("task")];
        for i in 0..4 {
            let call = ToolCall::new("read_file", json!({"path": format!("f{i}")}));
            h.push(Message::Assistant(AssistantMessage {
                tool_calls: vec![call.clone()],
                ..AssistantMessage::default()
            }));
            h.push(Message::tool_result(&call, "x".repeat(100)));
        }
        h
    }

    #[test]
    fn the_cut_is_at_a_turn_and_keeps_the_newest_turn() {
        let h = history();
        let sizes = vec![10u64; h.len()];
        // Turns begin at 1 (the task), 2, 4, 6, 8.
        let marks = [1, 2, 4, 6, 8];
        assert_eq!(split_point(&h, &marks, &sizes, 40), Some(6));
        assert_eq!(split_point(&h, &marks, &sizes, 20), Some(8));
        // Nothing small enough: the newest turn is kept anyway.
        assert_eq!(split_point(&h, &marks, &sizes, 5), Some(8));
        // Too little before any boundary.
        assert_eq!(split_point(&h, &[1, 2], &sizes, 5), None);
    }

    #[test]
    fn marks_move_with_the_history() {
        let shift = Shift {
            end: 6,
            merged: false,
        };
        assert_eq!(shift.moved(4), None);
        assert_eq!(shift.moved(6), Some(2));
        assert_eq!(shift.moved(8), Some(4));
        let merged = Shift {
            end: 6,
            merged: true,
        };
        assert_eq!(merged.moved(6), None);
        assert_eq!(merged.moved(8), Some(3));
    }

    #[test]
    fn the_transcript_shows_calls_and_cut_results() {
        let text = transcript(&history()[1..4], 20);
        assert!(
            text.starts_with("USER: task\n\nAGENT:\n  called read_file {\"path\":\"f0\"}"),
            "{text}"
        );
        assert!(
            text.contains(&format!("RESULT of read_file: {}…", "x".repeat(20))),
            "{text}"
        );
    }
}
