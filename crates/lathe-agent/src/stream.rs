//! The stream processor: chunks in, events out, and the finished assistant turn.
//!
//! It strips the completion marker (holding back a partial one, `[TASK`, until the next chunk
//! decides it), splits a leading `<think>...</think>` out of the content for servers that
//! leave it there, scans text and thinking for written tool calls (see [`crate::parser`]),
//! resolves native calls against the real tool names, and times the thinking.
//!
//! Text after a call written in the text is dropped: the model has not seen the result yet, so
//! whatever it says there (an invented `<tool_result>`, an answer built on it) is a guess. The
//! text protocol's stop strings end most such answers on the server; this holds when a server
//! ignores them.

use crate::events::Event;
use crate::message::{AssistantMessage, Message};
use crate::parser::{Malformed, ParsedCall, Scanner, Scope, Segment, ToolNames, resolve_native};
use crate::provider::{Chunk, ChunkStream, Done, ProviderError, Usage};
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What the model writes when it considers the task done. Never shown to the user.
pub const COMPLETION_MARKER: &str = "[TASK_COMPLETE]";

/// Where a model starts inventing the result of its own call; no call after it is real.
const INVENTED_RESULT: &str = "<tool_result";

/// Text after the first call written in the text, which is never shown.
#[derive(Debug, Default)]
enum AfterCall {
    /// No call yet: text is shown.
    #[default]
    Before,
    /// After a call: text is dropped (and kept here only to find an invented result split
    /// across chunks); further calls still count.
    Dropping(String),
    /// The model began to invent a result: everything, calls too, is dropped.
    Invented,
}

/// A finished assistant turn.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AssistantTurn {
    /// The text shown to the user: recovered calls and the marker removed.
    pub content: String,
    /// The thinking shown to the user.
    pub thinking: String,
    /// Calls to run, in order: native calls, then calls recovered from the text (a text call
    /// equal to a native one is dropped as a duplicate); calls found in the thinking only when
    /// there are no others.
    pub calls: Vec<ParsedCall>,
    /// Blocks meant as calls that could not be read; the model should be told.
    pub malformed: Vec<Malformed>,
    /// Whether the model wrote the completion marker.
    pub task_complete: bool,
    /// The server's finish reason.
    pub finish_reason: Option<String>,
    /// Token counts.
    pub usage: Option<Usage>,
    /// Total time spent thinking, when the model thought.
    pub thinking_duration: Option<Duration>,
    /// Notices from the provider layer (already emitted as events).
    pub notices: Vec<String>,
    /// Whether the server said the answer was complete.
    pub complete: bool,
    /// Whether the user stopped the turn.
    pub cancelled: bool,
}

impl AssistantTurn {
    /// The turn as it goes into the history: its text, thinking and calls.
    pub fn to_message(&self) -> Message {
        Message::Assistant(AssistantMessage {
            content: self.content.trim().to_string(),
            thinking: Some(self.thinking.trim().to_string()).filter(|t| !t.is_empty()),
            tool_calls: self.calls.iter().map(ParsedCall::to_tool_call).collect(),
        })
    }

    /// Whether the model stopped because it hit its output limit.
    pub fn hit_length_limit(&self) -> bool {
        self.finish_reason.as_deref() == Some("length")
    }
}

/// Removes every [`COMPLETION_MARKER`], holding back a tail that may be the start of one.
#[derive(Debug, Default)]
struct MarkerFilter {
    held: String,
    seen: bool,
}

impl MarkerFilter {
    fn push(&mut self, text: &str) -> String {
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

    fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Splits `<think>...</think>` at the start of the content into thinking.
#[derive(Debug)]
enum ThinkTags {
    Start(String),
    Inside(String),
    Content,
}

impl ThinkTags {
    /// Returns (thinking, content).
    fn push(&mut self, text: &str) -> (String, String) {
        match self {
            ThinkTags::Content => (String::new(), text.to_string()),
            ThinkTags::Start(buf) => {
                buf.push_str(text);
                let trimmed = buf.trim_start();
                if trimmed.len() < THINK_OPEN.len() && THINK_OPEN.starts_with(trimmed) {
                    return (String::new(), String::new());
                }
                if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
                    let rest = rest.to_string();
                    *self = ThinkTags::Inside(String::new());
                    return self.push(&rest);
                }
                let content = std::mem::take(buf);
                *self = ThinkTags::Content;
                (String::new(), content)
            }
            ThinkTags::Inside(held) => {
                held.push_str(text);
                if let Some(at) = held.find(THINK_CLOSE) {
                    let thinking = held[..at].to_string();
                    let content = held[at + THINK_CLOSE.len()..].trim_start().to_string();
                    *self = ThinkTags::Content;
                    return (thinking, content);
                }
                let keep = (1..THINK_CLOSE.len())
                    .rev()
                    .find(|&k| held.ends_with(&THINK_CLOSE[..k]))
                    .unwrap_or(0);
                let rest = held.split_off(held.len() - keep);
                let thinking = std::mem::replace(held, rest);
                (thinking, String::new())
            }
        }
    }

    fn finish(&mut self) -> (String, String) {
        match std::mem::replace(self, ThinkTags::Content) {
            ThinkTags::Start(buf) => (String::new(), buf),
            ThinkTags::Inside(held) => (held, String::new()),
            ThinkTags::Content => (String::new(), String::new()),
        }
    }
}

impl AfterCall {
    /// `segment` if it still counts: everything before the first call, calls after it until
    /// an invented result.
    fn take(&mut self, segment: Segment) -> Option<Segment> {
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

/// Turns chunks into events and an [`AssistantTurn`].
pub struct StreamProcessor {
    names: Arc<ToolNames>,
    text_marker: MarkerFilter,
    thinking_marker: MarkerFilter,
    think_tags: ThinkTags,
    text_scan: Scanner,
    thinking_scan: Scanner,
    turn: AssistantTurn,
    text_calls: Vec<ParsedCall>,
    thinking_calls: Vec<ParsedCall>,
    thinking_since: Option<Instant>,
    after_call: AfterCall,
    /// When the last thinking arrived: a call that is generated after it ends the thinking
    /// there, not when the server gets round to sending the call.
    last_thinking: Option<Instant>,
}

impl StreamProcessor {
    /// A processor resolving tool names against `names`.
    pub fn new(names: Arc<ToolNames>) -> Self {
        StreamProcessor {
            text_scan: Scanner::new(Arc::clone(&names), Scope::Text),
            thinking_scan: Scanner::new(Arc::clone(&names), Scope::Thinking),
            names,
            text_marker: MarkerFilter::default(),
            thinking_marker: MarkerFilter::default(),
            think_tags: ThinkTags::Start(String::new()),
            turn: AssistantTurn::default(),
            text_calls: Vec::new(),
            thinking_calls: Vec::new(),
            thinking_since: None,
            after_call: AfterCall::Before,
            last_thinking: None,
        }
    }

    /// Takes one chunk; `emit` receives the events it causes.
    pub fn push(&mut self, chunk: Chunk, emit: &mut dyn FnMut(Event)) {
        match chunk {
            Chunk::Text(text) => {
                let text = self.text_marker.push(&text);
                self.content(&text, emit);
            }
            Chunk::Thinking(text) => {
                let text = self.thinking_marker.push(&text);
                self.thinking(&text, emit);
            }
            Chunk::PartialCall(call) => self.partial_call(call, emit),
            Chunk::ToolCall(call) => {
                self.end_thinking(emit);
                self.turn.calls.push(resolve_native(call, &self.names));
            }
            Chunk::Notice(message) => {
                emit(Event::Notice {
                    message: message.clone(),
                });
                self.turn.notices.push(message);
            }
            Chunk::Done(Done {
                finish_reason,
                usage,
            }) => {
                self.end_thinking(emit);
                self.turn.finish_reason = finish_reason;
                self.turn.usage = usage;
                self.turn.complete = true;
            }
        }
    }

    fn content(&mut self, text: &str, emit: &mut dyn FnMut(Event)) {
        let (thinking, content) = self.think_tags.push(text);
        self.thinking(&thinking, emit);
        self.scanned_content(&content, emit);
    }

    fn scanned_content(&mut self, content: &str, emit: &mut dyn FnMut(Event)) {
        if content.is_empty() {
            return;
        }
        let segments = self.text_scan.push(content);
        self.apply_text(segments, emit);
    }

    fn apply_text(&mut self, segments: Vec<Segment>, emit: &mut dyn FnMut(Event)) {
        for segment in segments {
            let segment = match self.after_call.take(segment) {
                Some(segment) => segment,
                None => continue,
            };
            match segment {
                Segment::Text(text) => self.show_text(text, emit),
                Segment::Call(call) => {
                    self.end_thinking(emit);
                    self.text_calls.push(call);
                }
                Segment::Malformed(m) => {
                    self.show_text(m.text.clone(), emit);
                    self.turn.malformed.push(m);
                }
            }
        }
    }

    fn show_text(&mut self, text: String, emit: &mut dyn FnMut(Event)) {
        if text.is_empty() {
            return;
        }
        if !text.trim().is_empty() {
            self.end_thinking(emit);
        }
        self.turn.content.push_str(&text);
        emit(Event::TextDelta { text });
    }

    fn thinking(&mut self, text: &str, emit: &mut dyn FnMut(Event)) {
        if text.is_empty() {
            return;
        }
        if self.thinking_since.is_none() {
            self.thinking_since = Some(Instant::now());
        }
        self.last_thinking = Some(Instant::now());
        for segment in self.thinking_scan.push(text) {
            self.apply_thinking(segment, emit);
        }
    }

    fn apply_thinking(&mut self, segment: Segment, emit: &mut dyn FnMut(Event)) {
        let text = match segment {
            Segment::Text(text) => text,
            Segment::Malformed(m) => m.text,
            Segment::Call(call) => {
                self.thinking_calls.push(call);
                return;
            }
        };
        if !text.is_empty() {
            self.turn.thinking.push_str(&text);
            emit(Event::ThinkingDelta { text });
        }
    }

    /// A native call is being generated: the thinking is over (it ended with its last piece,
    /// not now: Ollama holds a call back until it is whole), and the user is told which call.
    fn partial_call(&mut self, call: crate::provider::PartialCall, emit: &mut dyn FnMut(Event)) {
        if let (Some(since), Some(last)) = (self.thinking_since, self.last_thinking) {
            self.thinking_since = None;
            let elapsed = last.saturating_duration_since(since);
            self.turn.thinking_duration =
                Some(self.turn.thinking_duration.unwrap_or_default() + elapsed);
            emit(Event::ThinkingDone {
                duration_ms: elapsed.as_millis() as u64,
            });
        }
        let name = self.names.known(&call.name).unwrap_or(call.name);
        emit(Event::ToolCallStreaming {
            index: call.index,
            name,
            path: call.path,
        });
    }

    fn end_thinking(&mut self, emit: &mut dyn FnMut(Event)) {
        if let Some(since) = self.thinking_since.take() {
            let elapsed = since.elapsed();
            self.turn.thinking_duration =
                Some(self.turn.thinking_duration.unwrap_or_default() + elapsed);
            emit(Event::ThinkingDone {
                duration_ms: elapsed.as_millis() as u64,
            });
        }
    }

    /// Ends the answer: flushes held text, settles the calls, emits one
    /// [`Event::ToolCallSeen`] per call, and returns the turn.
    pub fn finish(mut self, emit: &mut dyn FnMut(Event)) -> AssistantTurn {
        let thinking_tail = self.thinking_marker.finish();
        self.thinking(&thinking_tail, emit);
        let text_tail = self.text_marker.finish();
        self.content(&text_tail, emit);
        let (thinking, content) = self.think_tags.finish();
        self.thinking(&thinking, emit);
        self.scanned_content(&content, emit);
        for segment in self.thinking_scan.finish() {
            self.apply_thinking(segment, emit);
        }
        let segments = self.text_scan.finish();
        self.apply_text(segments, emit);
        self.end_thinking(emit);

        let mut turn = std::mem::take(&mut self.turn);
        turn.task_complete = self.text_marker.seen || self.thinking_marker.seen;
        let native = turn.calls.len();
        for call in std::mem::take(&mut self.text_calls) {
            // Some templates leak the native call into the text as well.
            let duplicate = turn.calls[..native]
                .iter()
                .any(|n| n.name == call.name && n.arguments == call.arguments);
            if !duplicate {
                turn.calls.push(call);
            }
        }
        if turn.calls.is_empty() {
            turn.calls = std::mem::take(&mut self.thinking_calls);
        }
        for (index, call) in turn.calls.iter().enumerate() {
            emit(Event::ToolCallSeen {
                index,
                name: call.name.clone(),
                arguments: call.arguments.clone(),
            });
        }
        turn
    }
}

/// A stream that failed, with what arrived before the failure. Calls in `partial` may be cut
/// off and should not be run.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct StreamError {
    /// What went wrong.
    #[source]
    pub error: ProviderError,
    /// The turn up to the failure.
    pub partial: AssistantTurn,
}

/// Reads `stream` to its end through a [`StreamProcessor`], emitting events as they come.
/// Stops early, with `cancelled` set, when `cancel` fires; dropping the stream closes the
/// connection, which stops the generation on the server.
pub async fn collect_turn(
    mut stream: ChunkStream,
    names: Arc<ToolNames>,
    cancel: &CancellationToken,
    emit: &mut (dyn FnMut(Event) + Send),
) -> Result<AssistantTurn, StreamError> {
    let mut processor = StreamProcessor::new(names);
    loop {
        let item = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                drop(stream);
                let mut turn = processor.finish(emit);
                turn.cancelled = true;
                return Ok(turn);
            }
            item = stream.next() => item,
        };
        match item {
            Some(Ok(chunk)) => {
                let done = matches!(chunk, Chunk::Done(_));
                processor.push(chunk, emit);
                if done {
                    return Ok(processor.finish(emit));
                }
            }
            Some(Err(error)) => {
                return Err(StreamError {
                    error,
                    partial: processor.finish(emit),
                });
            }
            None => return Ok(processor.finish(emit)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    fn run(chunks: Vec<Chunk>) -> (AssistantTurn, Vec<Event>) {
        let mut events = Vec::new();
        let mut p = StreamProcessor::new(Arc::new(ToolNames::new(["read_file", "write_file"])));
        for c in chunks {
            p.push(c, &mut |e| events.push(e));
        }
        let turn = p.finish(&mut |e| events.push(e));
        (turn, events)
    }

    fn shown(events: &[Event]) -> String {
        events
            .iter()
            .filter_map(|e| {
                if let Event::TextDelta { text } = e {
                    Some(text.as_str())
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn marker_is_stripped_across_chunks_and_recorded() {
        let parts = ["Done. [TA", "SK_COMP", "LETE] bye [", "TASK", " not it]"];
        let (turn, events) = run(parts.iter().map(|p| Chunk::Text(p.to_string())).collect());
        assert_eq!(turn.content, "Done.  bye [TASK not it]");
        assert_eq!(shown(&events), turn.content);
        assert!(turn.task_complete);
        assert!(!events.iter().any(|e| matches!(e, Event::TextDelta { text } if text.contains('[') && text.contains("TASK_"))));
    }

    #[test]
    fn partial_marker_at_the_end_is_text() {
        let (turn, _) = run(vec![Chunk::Text("see [TASK_COMP".into())]);
        assert_eq!(turn.content, "see [TASK_COMP");
        assert!(!turn.task_complete);
    }

    #[test]
    fn marker_in_thinking_is_stripped_too() {
        let (turn, _) = run(vec![
            Chunk::Thinking("ok [TASK_COMPLETE]".into()),
            Chunk::Text("fine".into()),
        ]);
        assert_eq!(turn.thinking, "ok ");
        assert!(turn.task_complete);
    }

    #[test]
    fn thinking_is_timed_and_closed_once_text_starts() {
        let (turn, events) = run(vec![
            Chunk::Thinking("let me".into()),
            Chunk::Thinking(" think".into()),
            Chunk::Text("Answer".into()),
            Chunk::Done(Done {
                finish_reason: Some("stop".into()),
                usage: None,
            }),
        ]);
        assert_eq!(turn.thinking, "let me think");
        assert!(turn.thinking_duration.is_some());
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                Event::ThinkingDelta { .. } => "thinking",
                Event::ThinkingDone { .. } => "done",
                Event::TextDelta { .. } => "text",
                _ => "other",
            })
            .collect();
        assert_eq!(kinds, ["thinking", "thinking", "done", "text"]);
        assert!(turn.complete);
    }

    #[test]
    fn think_tags_in_content_become_thinking() {
        let (turn, _) = run(vec![
            Chunk::Text("<thi".into()),
            Chunk::Text("nk>plan</th".into()),
            Chunk::Text("ink>\n\nHi".into()),
        ]);
        assert_eq!(turn.thinking, "plan");
        assert_eq!(turn.content, "Hi");
        let (turn, _) = run(vec![Chunk::Text("I <think> inline".into())]);
        assert_eq!(turn.content, "I <think> inline");
        assert!(turn.thinking.is_empty());
    }

    #[test]
    fn native_and_text_calls_are_merged_without_duplicates() {
        let (turn, events) = run(vec![
            Chunk::Text("Reading.\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n".into()),
            Chunk::Text("<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call>".into()),
            Chunk::ToolCall(ToolCall::new("read_file", json!({"path": "a"}))),
        ]);
        let paths: Vec<&str> = turn
            .calls
            .iter()
            .map(|c| c.arguments["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["a", "b"]);
        // The newline after the first call is text after a call, and dropped.
        assert_eq!(turn.content, "Reading.\n");
        let seen = events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallSeen { .. }))
            .count();
        assert_eq!(seen, 2);
    }

    #[test]
    fn calls_in_thinking_count_only_without_others() {
        let call =
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"t\"}}</tool_call>";
        let (turn, _) = run(vec![
            Chunk::Thinking(format!("maybe {call}")),
            Chunk::Text("ok".into()),
        ]);
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.thinking, "maybe ");
        let (turn, _) = run(vec![
            Chunk::Thinking(format!("maybe {call}")),
            Chunk::ToolCall(ToolCall::new(
                "write_file",
                json!({"path": "x", "content": ""}),
            )),
        ]);
        assert_eq!(turn.calls.len(), 1);
        assert_eq!(turn.calls[0].name, "write_file");
    }

    #[test]
    fn message_for_history() {
        let (turn, _) = run(vec![
            Chunk::Thinking("plan".into()),
            Chunk::Text("Reading.\n\n".into()),
            Chunk::ToolCall(ToolCall {
                id: Some("c1".into()),
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
            }),
        ]);
        assert_eq!(
            turn.to_message(),
            Message::Assistant(AssistantMessage {
                content: "Reading.".into(),
                thinking: Some("plan".into()),
                tool_calls: vec![ToolCall {
                    id: Some("c1".into()),
                    name: "read_file".into(),
                    arguments: json!({"path": "a"})
                }],
            })
        );
    }
}
