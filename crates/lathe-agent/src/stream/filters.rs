//! What the processor holds back or takes out of the text before it counts: the completion
//! marker, reasoning the server left in the content, and text after a call written in the text.

use super::COMPLETION_MARKER;
use crate::parser::Segment;

/// Where a model starts inventing the result of its own call; no call after it is real.
const INVENTED_RESULT: &str = "<tool_result";

/// Text after the first call written in the text, which is never shown.
#[derive(Debug, Default)]
pub(super) enum AfterCall {
    /// No call yet: text is shown.
    #[default]
    Before,
    /// After a call: text is dropped (and kept here only to find an invented result split
    /// across chunks); further calls still count.
    Dropping(String),
    /// The model began to invent a result: everything, calls too, is dropped.
    Invented,
}

/// Removes every [`COMPLETION_MARKER`], holding back a tail that may be the start of one.
#[derive(Debug, Default)]
pub(super) struct MarkerFilter {
    held: String,
    /// Whether a marker was removed.
    pub(super) seen: bool,
}

impl MarkerFilter {
    pub(super) fn push(&mut self, text: &str) -> String {
        let mut s = std::mem::take(&mut self.held);
        s.push_str(text);
        // Removing one marker can join the halves of another: `[TASK_[TASK_COMPLETE]COMPLETE]`.
        while s.contains(COMPLETION_MARKER) {
            s = s.replace(COMPLETION_MARKER, "");
            self.seen = true;
        }
        let keep = (1..COMPLETION_MARKER.len())
            .rev()
            .find(|&k| s.ends_with(&COMPLETION_MARKER[..k]))
            .unwrap_or(0);
        self.held = s.split_off(s.len() - keep);
        s
    }

    pub(super) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// Reasoning at the start of the content, for servers that leave it there: `<think>`,
/// Seed-OSS's `<seed:think>`, gpt-oss harmony's analysis channel (with or without its
/// `<|start|>assistant`), Apertus's `<|inner_prefix|>`.
const THINK_TAGS: &[(&str, &str)] = &[
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
    ("<|channel|>analysis<|message|>", "<|end|>"),
    (
        "<|start|>assistant<|channel|>analysis<|message|>",
        "<|end|>",
    ),
    ("<|inner_prefix|>", "<|inner_suffix|>"),
];

/// Harmony's analysis channel, which may also come later in a reply (after a preamble or
/// between calls): special tokens, never prose.
const LATER_THINK: &[&str] = &[
    "<|start|>assistant<|channel|>analysis<|message|>",
    "<|channel|>analysis<|message|>",
];
const LATER_THINK_CLOSE: &str = "<|end|>";

/// Splits reasoning out of the content: at its start (see [`THINK_TAGS`]), and harmony's
/// analysis channel anywhere (see [`LATER_THINK`]).
#[derive(Debug)]
pub(super) enum ThinkTags {
    Start(String),
    Inside(String, &'static str),
    /// In the answer, holding a tail that may begin [`LATER_THINK`].
    Content(String),
}

impl ThinkTags {
    /// Returns (thinking, content).
    pub(super) fn push(&mut self, text: &str) -> (String, String) {
        match self {
            ThinkTags::Content(held) => {
                held.push_str(text);
                let found = LATER_THINK
                    .iter()
                    .filter_map(|open| held.find(open).map(|k| (k, open.len())))
                    .min();
                if let Some((at, len)) = found {
                    let content = held[..at].to_string();
                    let rest = held[at + len..].to_string();
                    *self = ThinkTags::Inside(String::new(), LATER_THINK_CLOSE);
                    let (thinking, more) = self.push(&rest);
                    return (thinking, content + &more);
                }
                let keep = LATER_THINK
                    .iter()
                    .filter_map(|open| (1..open.len()).rev().find(|&k| held.ends_with(&open[..k])))
                    .max()
                    .unwrap_or(0);
                let tail = held.split_off(held.len() - keep);
                (String::new(), std::mem::replace(held, tail))
            }
            ThinkTags::Start(buf) => {
                buf.push_str(text);
                let trimmed = buf.trim_start();
                if THINK_TAGS
                    .iter()
                    .any(|(open, _)| trimmed.len() < open.len() && open.starts_with(trimmed))
                {
                    return (String::new(), String::new());
                }
                if let Some((rest, close)) = THINK_TAGS
                    .iter()
                    .find_map(|(open, close)| trimmed.strip_prefix(open).map(|r| (r, *close)))
                {
                    let rest = rest.to_string();
                    *self = ThinkTags::Inside(String::new(), close);
                    return self.push(&rest);
                }
                let content = std::mem::take(buf);
                *self = ThinkTags::Content(String::new());
                self.push(&content)
            }
            ThinkTags::Inside(held, close) => {
                let close = *close;
                held.push_str(text);
                if let Some(at) = held.find(close) {
                    let thinking = held[..at].to_string();
                    let content = held[at + close.len()..].trim_start().to_string();
                    *self = ThinkTags::Content(String::new());
                    let (more, content) = self.push(&content);
                    return (thinking + &more, content);
                }
                let keep = (1..close.len())
                    .rev()
                    .filter(|&k| close.is_char_boundary(k))
                    .find(|&k| held.ends_with(&close[..k]))
                    .unwrap_or(0);
                let rest = held.split_off(held.len() - keep);
                let thinking = std::mem::replace(held, rest);
                (thinking, String::new())
            }
        }
    }

    pub(super) fn finish(&mut self) -> (String, String) {
        match std::mem::replace(self, ThinkTags::Content(String::new())) {
            ThinkTags::Start(buf) => (String::new(), buf),
            ThinkTags::Inside(held, _) => (held, String::new()),
            ThinkTags::Content(held) => (String::new(), held),
        }
    }
}

impl AfterCall {
    /// `segment` if it still counts: everything before the first call, calls after it until
    /// an invented result.
    pub(super) fn take(&mut self, segment: Segment) -> Option<Segment> {
        match (&mut *self, segment) {
            (AfterCall::Before, segment @ Segment::Call(_)) => {
                *self = AfterCall::Dropping(String::new());
                Some(segment)
            }
            (AfterCall::Before, segment) => Some(segment),
            (AfterCall::Invented, _) => None,
            (AfterCall::Dropping(_), segment @ Segment::Call(_)) => Some(segment),
            (AfterCall::Dropping(held), Segment::Text(text)) => {
                held.push_str(&text);
                if held.contains(INVENTED_RESULT) {
                    tracing::debug!("dropped an invented tool result after a call");
                    *self = AfterCall::Invented;
                } else {
                    // Only a tail that may begin the tag matters to the next piece.
                    let keep = held.len().saturating_sub(INVENTED_RESULT.len());
                    let keep = (keep..=held.len())
                        .find(|&i| held.is_char_boundary(i))
                        .unwrap_or(held.len());
                    held.drain(..keep);
                }
                None
            }
            (AfterCall::Dropping(_), Segment::Malformed(_)) => None,
        }
    }
}
