//! The stream processor: chunks in, events out, and the finished [`AssistantTurn`].

use std::sync::Arc;
use std::time::Instant;

use super::filters::{AfterCall, MarkerFilter, ThinkTags};
use super::{AssistantTurn, Repetition, RepetitionGuard};
use crate::events::Event;
use crate::parser::{ParsedCall, Scanner, Scope, Segment, ToolNames, resolve_native};
use crate::provider::{Chunk, Done};

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
    text_loop: RepetitionGuard,
    thinking_loop: RepetitionGuard,
    repetition: Option<Repetition>,
    /// The text received since the last native call (the rest a cut answer drops).
    since_native_call: String,
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
            text_loop: RepetitionGuard::default(),
            thinking_loop: RepetitionGuard::default(),
            repetition: None,
            since_native_call: String::new(),
        }
    }

    /// The loop the reply has fallen into, once one was seen in its text or thinking.
    pub fn repetition(&self) -> Option<&Repetition> {
        self.repetition.as_ref()
    }

    /// Takes one chunk; `emit` receives the events it causes.
    pub fn push(&mut self, chunk: Chunk, emit: &mut dyn FnMut(Event)) {
        match chunk {
            Chunk::Text(text) => {
                if self.repetition.is_none() {
                    self.repetition = self.text_loop.push(&text);
                }
                if !self.turn.calls.is_empty() {
                    self.since_native_call.push_str(&text);
                }
                let text = self.text_marker.push(&text);
                self.content(&text, emit);
            }
            Chunk::Thinking(text) => {
                if self.repetition.is_none() {
                    self.repetition = self.thinking_loop.push(&text);
                }
                let text = self.thinking_marker.push(&text);
                self.thinking(&text, emit);
            }
            Chunk::PartialCall(call) => self.partial_call(call, emit),
            Chunk::ToolCall(call) => {
                self.end_thinking(emit);
                self.turn.calls.push(resolve_native(call, &self.names));
                self.since_native_call.clear();
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
        self.flush(emit);
        self.settle(emit)
    }

    /// Lets out what is held back (a possible marker, tag or call start), as the end of the
    /// answer decides it.
    fn flush(&mut self, emit: &mut dyn FnMut(Event)) {
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
    }

    /// The turn with its calls settled; one [`Event::ToolCallSeen`] per call.
    fn settle(mut self, emit: &mut dyn FnMut(Event)) -> AssistantTurn {
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
        // A call quoted in the reasoning runs only when the answer says nothing of its own:
        // an answer with text is the model's reply, and the call in its reasoning a draft.
        if turn.calls.is_empty() && turn.content.trim().is_empty() {
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

impl StreamProcessor {
    /// Ends an answer whose stream broke: keeps what was complete when it broke (the text,
    /// native calls, calls written in full before the break) and drops the rest (a call cut
    /// half-way, and after a native call the text that followed it). Emits one
    /// [`Event::ToolCallSeen`] per call kept.
    pub fn finish_cut(mut self, emit: &mut dyn FnMut(Event)) -> AssistantTurn {
        let (text_calls, thinking_calls, malformed) = (
            self.text_calls.len(),
            self.thinking_calls.len(),
            self.turn.malformed.len(),
        );
        self.flush(emit);
        // Whatever the end made a call of was cut.
        self.text_calls.truncate(text_calls);
        self.thinking_calls.truncate(thinking_calls);
        self.turn.malformed.truncate(malformed);
        if !self.turn.calls.is_empty() && !self.since_native_call.is_empty() {
            // What came after the last native call is the cut rest: the part of it shown ends
            // the text.
            let rest = &self.since_native_call;
            let content = &self.turn.content;
            let shown = (1..=rest.len().min(content.len()))
                .rev()
                .filter(|&k| rest.is_char_boundary(k))
                .find(|&k| content.ends_with(&rest[..k]))
                .unwrap_or(0);
            let keep = content.len() - shown;
            self.turn.content.truncate(keep);
        }
        self.text_marker.seen = false;
        self.thinking_marker.seen = false;
        self.settle(emit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, Message, ToolCall};
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
        // Issue 19: an answer with text of its own is the reply; the call was a draft.
        let (turn, _) = run(vec![
            Chunk::Thinking(format!("maybe {call}")),
            Chunk::Text("I will not read it.".into()),
        ]);
        assert!(turn.calls.is_empty(), "{:?}", turn.calls);
        assert_eq!(turn.thinking, "maybe ");
        let (turn, _) = run(vec![
            Chunk::Thinking(format!("maybe {call}")),
            Chunk::Text(" \n".into()),
        ]);
        assert_eq!(turn.calls.len(), 1, "an empty answer runs the call");
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

    #[test]
    fn a_cut_answer_keeps_complete_calls_and_drops_a_half_written_one() {
        let complete =
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
        let mut p = StreamProcessor::new(Arc::new(ToolNames::new(["read_file"])));
        let mut events = Vec::new();
        p.push(Chunk::Text(format!("Reading. {complete}")), &mut |e| {
            events.push(e)
        });
        p.push(
            Chunk::Text("<tool_call>{\"name\": \"read_file\", \"arguments\": {\"pa".into()),
            &mut |e| events.push(e),
        );
        let turn = p.finish_cut(&mut |e| events.push(e));
        assert_eq!(turn.calls.len(), 1, "{turn:?}");
        assert_eq!(turn.calls[0].arguments["path"], "a");
        assert_eq!(turn.content, "Reading. ");
        assert!(turn.malformed.is_empty());
        // Cut before the first call ended: no call at all, the text kept.
        let mut p = StreamProcessor::new(Arc::new(ToolNames::new(["read_file"])));
        p.push(
            Chunk::Text("Let me read. <tool_call>{\"name\": \"read_file\", \"argu".into()),
            &mut |_| {},
        );
        let turn = p.finish_cut(&mut |_| {});
        assert!(turn.calls.is_empty(), "{turn:?}");
        assert!(turn.content.starts_with("Let me read."), "{turn:?}");
    }
}
