//! One model turn: the request fitted to the window, the answer streamed (asked for again when
//! it was cut, refitted once when the server says it overflowed), and the reply recorded in the
//! history.

use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{Executor, Offer, pending};
use crate::context::{shorten_turn, turn_budget};
use crate::events::Event;
use crate::message::{INTERRUPTED_BY_USER, Message};
use crate::provider::{ChatRequest, ChunkStream, ProviderError, Truncation};
use crate::stream::{AssistantTurn, Quiet, Silence, StreamError, StreamLimits, collect_turn_with};

/// How one attempt at a turn's answer went wrong.
pub(super) enum Attempt {
    /// The answer was cut (connection lost, silent past the idle timeout).
    Cut(Box<StreamError>),
    /// The server refused or failed for good.
    Failed(ProviderError),
}

/// Where an answer's events go: the executor's sink.
type Emit<'a> = dyn FnMut(Event) + Send + 'a;

impl Executor {
    /// One request and its streamed answer, recorded in the history. `Err` is the message of
    /// an error the run cannot recover from (already emitted).
    ///
    /// An answer cut before it held a complete tool call (the connection lost, the model
    /// silent past the idle timeout) is asked for again, up to
    /// [`ExecutorConfig::stream_retries`](super::ExecutorConfig::stream_retries) times, and its
    /// partial text never reaches the history. An answer cut after complete calls keeps its
    /// text and those calls, which run as usual: asking again would make the model decide
    /// anew, and running them is what it had asked for; only the cut rest is lost. When the
    /// retries run out the run fails, and the history ends with the user's message.
    pub(super) async fn model_turn(
        &mut self,
        turn: u32,
        cancel: &CancellationToken,
        offer: Offer,
    ) -> Result<AssistantTurn, String> {
        let (request, estimate, reminder) = self.open_turn(turn, offer, cancel).await?;
        let (turn_data, estimate) = self
            .answer(request, estimate, reminder.as_deref(), cancel)
            .await?;
        self.note_usage(&turn_data, estimate);
        self.record_turn(turn, &turn_data);
        Ok(turn_data)
    }

    /// Starts session turn `turn`: the history fitted to the window for the tools `offer`
    /// sends, [`Event::TurnStarted`], and the first request, with its estimated prompt tokens
    /// and the pending action's reminder.
    async fn open_turn(
        &mut self,
        turn: u32,
        offer: Offer,
        cancel: &CancellationToken,
    ) -> Result<(ChatRequest, u64, Option<String>), String> {
        let tools = match offer {
            Offer::Work | Offer::Summary { tools: true } => self.offered_tools().to_vec(),
            Offer::Summary { tools: false } => Vec::new(),
        };
        self.session_turns += 1;
        if let Err(message) = self.fit_request(&tools, cancel).await {
            return Err(self.fail(message));
        }
        self.sink.emit(Event::TurnStarted {
            turn,
            model: self.config.model.clone(),
        });
        let (tool_choice, reminder) = match offer {
            Offer::Work => self.steer_to_pending(),
            Offer::Summary { .. } => (None, None),
        };
        let (request, estimate) = self.request(tools, tool_choice, reminder.as_deref());
        Ok((request, estimate, reminder))
    }

    /// The answer to `request`, with the estimate of the request that got it: asked for again
    /// after a cut, up to the retries, and refitted once after an overflow (see
    /// [`Executor::model_turn`]).
    async fn answer(
        &mut self,
        mut request: ChatRequest,
        mut estimate: u64,
        reminder: Option<&str>,
        cancel: &CancellationToken,
    ) -> Result<(AssistantTurn, u64), String> {
        let sink = self.sink.clone();
        let mut emit = move |event: Event| sink.emit(event);
        let retries = self.config.stream_retries;
        let mut cuts = 0;
        let mut overflowed = false;
        let turn_data = loop {
            let error = match self.attempt(&request, cancel, &mut emit).await {
                Ok(turn_data) => break turn_data,
                Err(Attempt::Failed(error @ ProviderError::ContextOverflow { .. })) => {
                    if overflowed {
                        let message = self.overflow_failure(&error);
                        return Err(self.fail(message));
                    }
                    overflowed = true;
                    (request, estimate) = self
                        .refit(&error, request, estimate, reminder, cancel, &mut emit)
                        .await?;
                    continue;
                }
                Err(Attempt::Failed(error)) => return Err(self.fail(error.to_string())),
                Err(Attempt::Cut(failure)) if !failure.partial.calls.is_empty() => {
                    break complete_calls_of(*failure, &mut emit);
                }
                Err(Attempt::Cut(failure)) => failure.error,
            };
            if cuts >= retries {
                let tries = retries + 1;
                return Err(self.fail(format!(
                    "{error}; gave up after {tries} tr{}. Check the model server (its log says why the answer stopped) and ask again",
                    if tries == 1 { "y" } else { "ies" }
                )));
            }
            cuts += 1;
            if let Some(stopped) = self
                .pause_to_retry(&error, cuts, retries, cancel, &mut emit)
                .await
            {
                break stopped;
            }
        };
        Ok((turn_data, estimate))
    }

    /// After the server said `request` overflowed its window: the history fitted to the
    /// window it has (said in a notice), and the request made again from it.
    async fn refit(
        &mut self,
        error: &ProviderError,
        mut request: ChatRequest,
        estimate: u64,
        reminder: Option<&str>,
        cancel: &CancellationToken,
        emit: &mut Emit<'_>,
    ) -> Result<(ChatRequest, u64), String> {
        match self
            .after_overflow(error, estimate, &request.tools, cancel)
            .await
        {
            Ok(message) => emit(Event::Notice { message }),
            Err(why) => {
                let message = format!("{error}; {why}");
                return Err(self.fail(message));
            }
        }
        let tools = std::mem::take(&mut request.tools);
        let choice = request.tool_choice.take();
        Ok(self.request(tools, choice, reminder))
    }

    /// Says the answer was cut (`error`) and that it is asked for again (the `cuts`-th of
    /// `retries` times), then waits before that, a pause that doubles with each retry. The
    /// turn stopped by the user, when they stop it meanwhile.
    async fn pause_to_retry(
        &self,
        error: &ProviderError,
        cuts: u32,
        retries: u32,
        cancel: &CancellationToken,
        emit: &mut Emit<'_>,
    ) -> Option<AssistantTurn> {
        emit(Event::AnswerRestarted {
            attempt: cuts,
            retries,
            message: format!("{}; retrying ({cuts} of {retries})", cut_reason(error)),
        });
        let delay = self.config.stream_retry_delay * 2u32.saturating_pow(cuts - 1);
        tokio::select! {
            () = tokio::time::sleep(delay) => None,
            () = cancel.cancelled() => {
                Some(AssistantTurn { cancelled: true, ..AssistantTurn::default() })
            }
        }
    }

    /// Calibrates the estimates on the tokens the server counted for the prompt estimated at
    /// `estimate`, and says so when the server cut the prompt.
    fn note_usage(&mut self, turn_data: &AssistantTurn, estimate: u64) {
        if let Some(actual) = turn_data.usage.and_then(|u| u.prompt_tokens) {
            self.context.calibrate(estimate, actual);
            // A server that counted far fewer tokens than were sent cut the prompt: said, so
            // that nothing is lost unseen.
            if let Some(cut) = Truncation::detect(estimate, actual) {
                // Treated as an overflow: what the server kept, and what it wrote, fit its
                // window, so the next requests are fitted to that.
                let assumed = self.context.window();
                let kept = actual
                    + turn_data
                        .usage
                        .and_then(|u| u.completion_tokens)
                        .unwrap_or(0);
                let mut message = cut.warning(assumed);
                if kept < assumed {
                    self.set_context_window(kept);
                    message.push_str(&format!(
                        "; until then, requests are fitted to {} tokens",
                        crate::provider::window::thousands(kept)
                    ));
                }
                self.sink.emit(Event::Notice { message });
            }
        }
    }

    /// Adds the reply of session turn `turn` to the history (a stopped one saying so, a long
    /// one shortened) and emits [`Event::TurnFinished`].
    fn record_turn(&mut self, turn: u32, turn_data: &AssistantTurn) {
        let mut message = turn_data.to_message();
        if turn_data.cancelled
            && let Message::Assistant(partial) = &mut message
        {
            // The model should know its reply was cut, and by whom.
            if partial.content.is_empty() {
                partial.content = INTERRUPTED_BY_USER.to_owned();
            } else {
                partial.content = format!("{}\n\n{INTERRUPTED_BY_USER}", partial.content);
            }
        }
        // The user saw it whole, and it stays the run's answer; the history keeps what fits.
        if let Some(cut) = shorten_turn(&mut message, turn_budget(self.context.window())) {
            tracing::info!(cut, "kept a reply too long for the window shortened");
        }
        self.push(message);
        self.sink.emit(Event::TurnFinished {
            turn,
            finish_reason: turn_data.finish_reason.clone(),
            usage: turn_data.usage,
            task_complete: turn_data.task_complete,
        });
    }

    /// The request for the history as it is now, with `tools`, the forced `tool_choice` and the
    /// pending `reminder`; and its prompt's estimated tokens.
    pub(super) fn request(
        &self,
        tools: Vec<Value>,
        tool_choice: Option<String>,
        reminder: Option<&str>,
    ) -> (ChatRequest, u64) {
        let estimate = self.context.estimate(&self.history, &tools);
        let mut options = self.config.options.clone();
        if options.max_tokens.is_none() {
            options.max_tokens = Some(self.output_cap(estimate));
        }
        let mut messages = self.history.clone();
        if let Some(reminder) = reminder {
            pending::remind(&mut messages, reminder);
        }
        let request = ChatRequest {
            model: self.config.model.clone(),
            messages,
            tools,
            options,
            tool_protocol: self.config.tool_protocol,
            tool_choice,
        };
        (request, estimate)
    }

    /// Sends `request` once and reads its answer, reporting silence meanwhile.
    pub(super) async fn attempt(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        emit: &mut Emit<'_>,
    ) -> Result<AssistantTurn, Attempt> {
        let limits = StreamLimits {
            idle_timeout: self.config.idle_timeout,
            waiting_every: self.config.waiting_every,
            stop_repetition: true,
        };
        let mut silence = Silence::new(limits);
        let opening = self.provider.chat(request);
        tokio::pin!(opening);
        let stream: ChunkStream = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    return Ok(AssistantTurn { cancelled: true, ..AssistantTurn::default() });
                }
                opened = &mut opening => match opened {
                    Ok(stream) => break stream,
                    Err(error) => return Err(Attempt::Failed(error)),
                },
                quiet = silence.next() => match quiet {
                    Quiet::Report(seconds) => emit(Event::Waiting { seconds }),
                    Quiet::Stalled(after) => {
                        return Err(Attempt::Cut(Box::new(StreamError {
                            error: ProviderError::Stalled { after },
                            partial: AssistantTurn::default(),
                        })));
                    }
                },
            }
        };
        match collect_turn_with(stream, Arc::clone(&self.names), cancel, emit, limits).await {
            Ok(turn) => Ok(turn),
            Err(failure) if failure.error.is_lost_mid_stream() => {
                Err(Attempt::Cut(Box::new(failure)))
            }
            Err(failure) => Err(Attempt::Failed(failure.error)),
        }
    }
}

/// The complete calls of an answer that was cut after them, which run as usual (said in a
/// notice: the rest of the answer is lost).
fn complete_calls_of(failure: StreamError, emit: &mut Emit<'_>) -> AssistantTurn {
    let n = failure.partial.calls.len();
    emit(Event::Notice {
        message: format!(
            "{}; running the {n} complete tool call{} it had sent (the rest of the answer is lost)",
            cut_reason(&failure.error),
            if n == 1 { "" } else { "s" },
        ),
    });
    failure.partial
}

/// What the user is told about a cut answer, before what happens next.
fn cut_reason(error: &ProviderError) -> String {
    match error {
        ProviderError::Stalled { after } => format!(
            "the model sent nothing for {} s, the idle timeout",
            after.as_secs()
        ),
        _ => "connection to the model lost mid-answer".to_owned(),
    }
}
