//! Lathe's agent: model providers, the stream processor, tool-call parsing and repair.
//!
//! One turn, as data: the executor builds a [`provider::ChatRequest`]; a [`provider::Provider`]
//! (from [`provider::connect`]) streams [`provider::Chunk`]s; [`stream::collect_turn`] runs
//! them through the [`stream::StreamProcessor`], which accumulates text, thinking and tool calls
//! (native, or recovered from the text by the [`parser`]) and emits [`events::Event`]s. The
//! resulting [`stream::AssistantTurn`] goes back into the history as a [`message::Message`].
#![deny(missing_docs)]

pub mod approval;
pub mod context;
pub mod events;
pub mod executor;
pub mod message;
pub mod parser;
pub mod prompt;
pub mod provider;
pub mod runner;
pub mod sink;
pub mod stream;
pub mod text;
