//! Reading a stream to its end through a [`StreamProcessor`], watched for silence, the user
//! stopping it and a reply fallen into a loop.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

#[cfg(doc)]
use super::RepetitionGuard;
use super::repetition::cut_repeats;
use super::{AssistantTurn, StreamProcessor, WAITING_EVERY};
use crate::events::Event;
use crate::parser::ToolNames;
use crate::provider::{Chunk, ChunkStream, ProviderError};

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
    let repetition = processor.repetition().cloned();
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
