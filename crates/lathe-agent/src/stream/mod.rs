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
//!
//! [`Event::Waiting`]: crate::events::Event::Waiting
//! [`ProviderError::Stalled`]: crate::provider::ProviderError::Stalled
//!
//! Its parts: the [`StreamProcessor`] (chunks to events and a turn), the filters it runs text
//! through (the marker, reasoning tags, text after a call), [`collect_turn_with`] (a stream read
//! to its end, watched for silence), and the [`RepetitionGuard`] (a reply fallen into a loop).

mod collect;
mod filters;
mod processor;
mod repetition;
mod turn;

use std::time::Duration;

pub use collect::{Quiet, Silence, StreamError, StreamLimits, collect_turn, collect_turn_with};
pub use processor::StreamProcessor;
pub use repetition::{Repetition, RepetitionGuard};
pub use turn::AssistantTurn;

/// How often silence is reported, by default.
pub const WAITING_EVERY: Duration = Duration::from_secs(5);

/// What the model writes when it considers the task done. Never shown to the user.
pub const COMPLETION_MARKER: &str = "[TASK_COMPLETE]";
