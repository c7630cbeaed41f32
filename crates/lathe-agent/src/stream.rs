//! The stream processor: chunks in, events out, and the finished assistant turn.
//!
//! It strips the completion marker (holding back a partial one, `[TASK`, until the next chunk
//! decides it), splits leading reasoning (`<think>`, `<seed:think>`, harmony's analysis
//! channel) out of the content for servers that
//! leave it there, scans text and thinking for written tool calls (see [`crate::parser`]),
//! resolves native calls against the real tool names, and times the thinking.
//!
//! Text after a call written in the text is dropped: the model has not seen the result yet, so
//! whatever it says there (an invented `<tool_result>`, an answer built on it) is a guess. The
//! text protocol's stop strings end most such answers on the server; this holds when a server
//! ignores them.
//!
//! [`collect_turn_with`] also watches the stream itself: silence is reported every few seconds
//! ([`Event::Waiting`]) and ends the turn at the idle timeout ([`ProviderError::Stalled`]), and
//! a reply that has fallen into a loop (the same piece of text over and over, see
//! [`RepetitionGuard`]) is stopped early, its repeats cut from the history, with a note for the
//! model.

use crate::events::Event;
use crate::message::{AssistantMessage, Message};
use crate::parser::{Malformed, ParsedCall, Scanner, Scope, Segment, ToolNames, resolve_native};
use crate::provider::{Chunk, ChunkStream, Done, ProviderError, Usage};
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How often silence is reported, by default.
pub const WAITING_EVERY: Duration = Duration::from_secs(5);

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
    /// there are no others and the answer has no text of its own.
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
    /// The loop the reply fell into, when it was stopped for repeating itself.
    pub repetition: Option<Repetition>,
    /// What the model must be told about this turn before it goes on (its reply was stopped).
    pub note: Option<String>,
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
enum ThinkTags {
    Start(String),
    Inside(String, &'static str),
    /// In the answer, holding a tail that may begin [`LATER_THINK`].
    Content(String),
}

impl ThinkTags {
    /// Returns (thinking, content).
    fn push(&mut self, text: &str) -> (String, String) {
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

    fn finish(&mut self) -> (String, String) {
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

/// What [`collect_turn_with`] watches for besides the answer itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The longest silence between two pieces of the answer before the turn ends with
    /// [`ProviderError::Stalled`]. `None` waits for ever.
    pub idle_timeout: Option<Duration>,
    /// How often silence is reported as [`Event::Waiting`]. By default, [`WAITING_EVERY`].
    pub waiting_every: Duration,
    /// Whether a reply caught in a loop is stopped (see [`RepetitionGuard`]).
    pub stop_repetition: bool,
}

impl Default for StreamLimits {
    /// No idle timeout, silence reported every [`WAITING_EVERY`], loops stopped.
    fn default() -> Self {
        StreamLimits {
            idle_timeout: None,
            waiting_every: WAITING_EVERY,
            stop_repetition: true,
        }
    }
}

/// Silence since the last piece of an answer: when to report it, when to give up.
#[derive(Debug)]
pub struct Silence {
    since: tokio::time::Instant,
    next_report: tokio::time::Instant,
    limits: StreamLimits,
}

/// What a [`Silence`] has come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quiet {
    /// Time to tell the user: silent for this many whole seconds.
    Report(u64),
    /// Silent past the idle timeout.
    Stalled(Duration),
}

impl Silence {
    /// Silence from now.
    pub fn new(limits: StreamLimits) -> Self {
        let since = tokio::time::Instant::now();
        Silence {
            since,
            next_report: since + limits.waiting_every.max(Duration::from_millis(10)),
            limits,
        }
    }

    /// Something arrived: the silence starts again.
    pub fn reset(&mut self) {
        *self = Silence::new(self.limits);
    }

    /// Waits for the next report or the idle timeout. Cancel-safe: dropped before it returns,
    /// it leaves the silence as it was.
    pub async fn next(&mut self) -> Quiet {
        let deadline = self
            .limits
            .idle_timeout
            .map(|limit| (self.since + limit, limit));
        match deadline {
            Some((at, limit)) if at <= self.next_report => {
                tokio::time::sleep_until(at).await;
                Quiet::Stalled(limit)
            }
            _ => {
                tokio::time::sleep_until(self.next_report).await;
                self.next_report += self.limits.waiting_every.max(Duration::from_millis(10));
                Quiet::Report(self.since.elapsed().as_secs())
            }
        }
    }
}

/// Reads `stream` to its end through a [`StreamProcessor`], emitting events as they come.
/// Stops early, with `cancelled` set, when `cancel` fires; dropping the stream closes the
/// connection, which stops the generation on the server. No idle timeout (the HTTP client's
/// read timeout still applies); a reply caught in a loop is stopped.
pub async fn collect_turn(
    stream: ChunkStream,
    names: Arc<ToolNames>,
    cancel: &CancellationToken,
    emit: &mut (dyn FnMut(Event) + Send),
) -> Result<AssistantTurn, StreamError> {
    collect_turn_with(stream, names, cancel, emit, StreamLimits::default()).await
}

/// [`collect_turn`] with `limits`: silence is reported as [`Event::Waiting`] and, past the idle
/// timeout, ends the turn with [`ProviderError::Stalled`]; a reply that repeats itself is
/// stopped (the stream is dropped) and comes back with [`AssistantTurn::repetition`] and a
/// [note](AssistantTurn::note) for the model, its repeats cut from the text. When the stream
/// fails, the partial turn keeps only what was complete ([`StreamProcessor::finish_cut`]).
pub async fn collect_turn_with(
    mut stream: ChunkStream,
    names: Arc<ToolNames>,
    cancel: &CancellationToken,
    emit: &mut (dyn FnMut(Event) + Send),
    limits: StreamLimits,
) -> Result<AssistantTurn, StreamError> {
    let mut processor = StreamProcessor::new(names);
    let mut silence = Silence::new(limits);
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
            quiet = silence.next() => match quiet {
                Quiet::Report(seconds) => {
                    emit(Event::Waiting { seconds });
                    continue;
                }
                Quiet::Stalled(after) => {
                    drop(stream);
                    return Err(StreamError {
                        error: ProviderError::Stalled { after },
                        partial: processor.finish_cut(emit),
                    });
                }
            },
        };
        silence.reset();
        match item {
            Some(Ok(chunk)) => {
                let done = matches!(chunk, Chunk::Done(_));
                processor.push(chunk, emit);
                if limits.stop_repetition && processor.repetition().is_some() {
                    drop(stream);
                    return Ok(stopped_for_repetition(processor, emit));
                }
                if done {
                    return Ok(processor.finish(emit));
                }
            }
            Some(Err(error)) => {
                return Err(StreamError {
                    error,
                    partial: processor.finish_cut(emit),
                });
            }
            None => return Ok(processor.finish(emit)),
        }
    }
}

/// The turn of a reply stopped in a loop: what came before the loop and one round of it, a
/// notice for the user and a note for the model.
fn stopped_for_repetition(
    processor: StreamProcessor,
    emit: &mut (dyn FnMut(Event) + Send),
) -> AssistantTurn {
    let repetition = processor.repetition.clone();
    let mut turn = processor.finish(emit);
    let Some(repetition) = repetition else {
        return turn;
    };
    let cut_content = cut_repeats(&mut turn.content);
    let cut_thinking = cut_repeats(&mut turn.thinking);
    tracing::info!(
        period = repetition.piece.len(),
        cut_content,
        cut_thinking,
        "stopped a reply that repeated itself"
    );
    emit(Event::Notice {
        message: format!(
            "the model was repeating itself (\"{}\" over and over); its reply was stopped",
            repetition.snippet()
        ),
    });
    turn.note = Some(format!(
        "Your reply was stopped: it repeated \"{}\" over and over. Say it once and continue.",
        repetition.snippet()
    ));
    turn.repetition = Some(repetition);
    turn
}

/// A reply caught in a loop: the piece it kept repeating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repetition {
    /// One round of the loop, as written.
    pub piece: String,
    /// How many rounds had been seen when it was stopped.
    pub repeats: usize,
}

impl Repetition {
    /// The piece on one line, cut to a readable length.
    pub fn snippet(&self) -> String {
        let one_line = self.piece.split_whitespace().collect::<Vec<_>>().join(" ");
        let shown = if one_line.is_empty() {
            self.piece.escape_debug().to_string()
        } else {
            one_line
        };
        crate::text::cut(&shown, 60)
    }
}

/// A loop is the tail of the text made of one piece repeated: at least this many bytes of it...
const LOOP_MIN_BYTES: usize = 3_000;
/// ...and at least this many rounds of the piece...
const LOOP_MIN_REPEATS: usize = 8;
/// ...for a piece of at most this many bytes (a paragraph, a few lines of code).
const LOOP_MAX_PIECE: usize = 1_000;
/// The tail is checked again after this many new bytes.
const LOOP_CHECK_EVERY: usize = 128;

/// Sees a reply fall into a loop: the same piece of text (a token, a line, a sentence, a block
/// of lines) repeated back to back, over at least 3,000 bytes and at least 8 rounds. Small
/// models do this until the output limit, sometimes for minutes.
///
/// Legitimate repetitive text does not qualify: table rows, lists of similar names and code
/// with repeated lines differ from each other somewhere, or repeat a few times only; a loop
/// repeats the piece byte for byte, dozens of times.
#[derive(Debug, Default)]
pub struct RepetitionGuard {
    tail: Vec<u8>,
    unchecked: usize,
}

impl RepetitionGuard {
    /// Takes the next piece of the reply; returns the loop once there is one.
    pub fn push(&mut self, text: &str) -> Option<Repetition> {
        self.tail.extend_from_slice(text.as_bytes());
        self.unchecked += text.len();
        let keep = LOOP_MAX_PIECE * LOOP_MIN_REPEATS * 2;
        if self.tail.len() > keep * 2 {
            self.tail.drain(..self.tail.len() - keep);
        }
        if self.unchecked < LOOP_CHECK_EVERY {
            return None;
        }
        self.unchecked = 0;
        let (period, span) = periodic_tail(&self.tail)?;
        let piece = &self.tail[self.tail.len() - period..];
        // Any turn of the loop is one round; show the one that starts a line, a sentence or
        // a word.
        let start = [&b"\n"[..], b". ", b" "]
            .iter()
            .find_map(|sep| {
                piece
                    .windows(sep.len())
                    .rposition(|w| w == *sep)
                    .map(|at| (at + sep.len()) % period)
            })
            .unwrap_or(0);
        let round = [&piece[start..], &piece[..start]].concat();
        Some(Repetition {
            piece: String::from_utf8_lossy(&round).into_owned(),
            repeats: span / period,
        })
    }
}

/// The shortest period of a loop at the end of `bytes`, and how far back the loop goes.
fn periodic_tail(bytes: &[u8]) -> Option<(usize, usize)> {
    let n = bytes.len();
    for period in 1..=LOOP_MAX_PIECE {
        let span = LOOP_MIN_BYTES.max(period * LOOP_MIN_REPEATS);
        if span > n {
            break;
        }
        // From the end back: most periods fail at the first byte.
        let periodic = (n - span + period..n)
            .rev()
            .all(|i| bytes[i] == bytes[i - period]);
        if periodic {
            let mut start = n - span;
            while start > 0 && bytes[start - 1] == bytes[start - 1 + period] {
                start -= 1;
            }
            return Some((period, n - start));
        }
    }
    None
}

/// Cuts a loop at the end of `text` down to one round and a line saying how much was cut;
/// returns the bytes cut (0 when there is no loop).
fn cut_repeats(text: &mut String) -> usize {
    let Some((period, span)) = periodic_tail(text.as_bytes()) else {
        return 0;
    };
    let mut keep = text.len() - span + period;
    // To the end of the line the round ends in, when it ends within one more round.
    if let Some(newline) = text.as_bytes()[keep..]
        .iter()
        .take(period)
        .position(|&b| b == b'\n')
    {
        keep += newline + 1;
    }
    while !text.is_char_boundary(keep) {
        keep += 1;
    }
    let cut = text.len() - keep;
    let rounds = cut.div_ceil(period);
    text.truncate(keep);
    text.push_str(&format!(
        "\n[... the same text {rounds} more times: the reply was stopped here for repeating itself]"
    ));
    cut
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

    /// Feeds `text` in pieces of `size` bytes (at char boundaries), as a stream would.
    fn loops(text: &str, size: usize) -> Option<Repetition> {
        let mut guard = RepetitionGuard::default();
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = size.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            let (piece, tail) = rest.split_at(at);
            if let Some(found) = guard.push(piece) {
                return Some(found);
            }
            rest = tail;
        }
        None
    }

    /// Repetitive text a model writes on purpose: none of it is a loop.
    fn legitimate() -> Vec<(&'static str, String)> {
        let table: String =
            std::iter::once("| name | size | kind |\n|------|------|------|\n".to_owned())
                .chain((0..200).map(|i| format!("| file_{i}.rs | {} | source |\n", 100 + i * 7)))
                .collect();
        let tests: String = (0..300)
            .map(|i| format!("test parser::tests::parses_case_{i} ... ok\n"))
            .collect();
        let code = format!(
            "fn main() {{\n{}{}}}\n",
            "    assert!(ready());\n".repeat(30),
            (0..120)
                .map(|i| format!("    let x{i} = compute({i});\n    println!(\"{{}}\", x{i});\n"))
                .collect::<String>()
        );
        let braces: String = (0..40)
            .map(|depth| format!("{}}}\n", "    ".repeat(40 - depth)))
            .collect();
        let numbers: String = (0..2_000)
            .map(|i| format!("{}, ", i * 7919 % 10_007))
            .collect();
        let prose = "The parser reads the file line by line. Each line is split into fields. \
            Fields that hold numbers are parsed; the others are kept as text. When a line has \
            fewer fields than the header, the missing ones are empty. "
            .repeat(3);
        let rule = format!("{}\n{}\n", "=".repeat(120), "-".repeat(120));
        vec![
            ("a markdown table", table),
            ("a list of similar test names", tests),
            ("code with repeated lines", code),
            ("closing braces", braces),
            ("a list of numbers", numbers),
            ("a paragraph said three times", prose),
            ("rules", rule),
        ]
    }

    /// Degenerate output of small models.
    fn degenerate() -> Vec<(&'static str, String)> {
        vec![
            ("one line over and over", "I will now read the file.\n".repeat(400)),
            (
                "one sentence without newlines",
                format!("Sure! {}", "Let me check that for you. ".repeat(300)),
            ),
            ("a run of one token", format!("The answer is {}", "!".repeat(5_000))),
            ("a run of newlines", format!("Done.{}", "\n".repeat(4_000))),
            (
                "a block of lines",
                format!(
                    "Plan:\n{}",
                    "1. read main.rs\n2. read lib.rs\n3. fix the bug\n".repeat(150)
                ),
            ),
            ("a word", "the ".repeat(2_000)),
            (
                "a long paragraph",
                "We need to update the function so that it handles the empty case, then run the tests again to confirm that everything passes and nothing else broke. ".repeat(40),
            ),
        ]
    }

    #[test]
    fn legitimate_repetition_is_not_a_loop() {
        for (what, text) in legitimate() {
            for size in [1, 7, 64, 4096] {
                assert_eq!(loops(&text, size), None, "{what} in pieces of {size}");
            }
        }
    }

    #[test]
    fn degenerate_repetition_is_a_loop_found_early() {
        for (what, text) in degenerate() {
            for size in [1, 5, 64] {
                let found = loops(&text, size).unwrap_or_else(|| panic!("{what} ({size})"));
                assert!(found.repeats >= LOOP_MIN_REPEATS, "{what}: {found:?}");
                assert!(!found.snippet().is_empty(), "{what}");
            }
        }
        let found = loops(&"I will now read the file.\n".repeat(400), 16).unwrap();
        assert_eq!(found.snippet(), "I will now read the file.");
    }

    #[test]
    fn a_loop_is_cut_to_one_round_in_the_history() {
        let mut text = format!("Reading.\n{}", "again and again\n".repeat(500));
        let cut = cut_repeats(&mut text);
        assert!(cut > 7_000, "{cut}");
        assert!(text.starts_with("Reading.\n"), "{text}");
        assert!(
            text.contains("the reply was stopped here for repeating itself"),
            "{text}"
        );
        assert!(text.len() < 200, "{text}");
        let mut plain = "no loop here".to_owned();
        assert_eq!(cut_repeats(&mut plain), 0);
        assert_eq!(plain, "no loop here");
    }

    #[tokio::test]
    async fn a_loop_stops_the_stream_and_tells_both() {
        let line = Chunk::Text("over and over\n".into());
        let endless = futures::stream::repeat_with(move || Ok(line.clone()));
        let stream: ChunkStream = Box::pin(endless);
        let mut events = Vec::new();
        let turn = collect_turn(
            stream,
            Arc::new(ToolNames::new(["read_file"])),
            &CancellationToken::new(),
            &mut |e| events.push(e),
        )
        .await
        .unwrap();
        assert!(turn.repetition.is_some());
        assert!(!turn.complete);
        let note = turn.note.as_deref().unwrap();
        assert!(
            note.contains("\"over and over\" over and over. Say it once"),
            "{note}"
        );
        assert!(turn.content.len() < 200, "{}", turn.content);
        assert!(events.iter().any(
            |e| matches!(e, Event::Notice { message } if message.contains("its reply was stopped"))
        ));
    }

    #[tokio::test]
    async fn a_loop_in_the_thinking_is_stopped_too() {
        let piece = Chunk::Thinking("Wait, let me reconsider. ".into());
        let stream: ChunkStream = Box::pin(futures::stream::repeat_with(move || Ok(piece.clone())));
        let turn = collect_turn(
            stream,
            Arc::new(ToolNames::new(["read_file"])),
            &CancellationToken::new(),
            &mut |_| {},
        )
        .await
        .unwrap();
        assert_eq!(
            turn.repetition.map(|r| r.snippet()).as_deref(),
            Some("Wait, let me reconsider.")
        );
        assert!(turn.thinking.len() < 200, "{}", turn.thinking);
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
