//! The finished assistant turn: what the model said, thought and called.

use std::time::Duration;

use super::Repetition;
use crate::message::{AssistantMessage, Message};
use crate::parser::{Malformed, ParsedCall};
use crate::provider::Usage;

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
