//! Every request fits the window.
//!
//! Before each request the executor estimates its tokens (system prompt, tool definitions,
//! history: [`ContextWindow::estimate`], about 3.5 bytes a token, raised by what the server
//! reports) and keeps room for the reply: the configured `max_tokens`, or a quarter of the
//! window ([`default_output_cap`]), and a margin of 5% of the window for the estimate's error.
//! What does not fit is made to, in this order, each step only when the one before was not
//! enough:
//!
//! 1. every tool result the model has seen is shortened to one line, then old thinking and old
//!    long texts (`ContextWindow::shorten`); this happens past 75% of the window anyway;
//! 2. the older part of the conversation is replaced by a summary the model writes (the
//!    `compact` module);
//! 3. everything is shortened, the results the model has not seen yet too.
//!
//! Shortening and compaction change the history itself, so each decision is made once and the
//! next requests start with the same bytes (the server's prompt cache keeps working). A
//! request that still cannot fit is not sent: the run fails saying what takes the room.
//!
//! Each tool result is cut to a quarter of the window when it is made (the registry's result
//! budget, lowered through [`lathe_runtime::Session::limit_result_budget`]), with the whole
//! output saved where the model can read it.
//!
//! A server that answers that the request is longer than its window
//! ([`ProviderError::ContextOverflow`]) teaches the executor its window and its count; the
//! request is shrunk (to at most 70% of what was sent) and sent once more, and a second
//! refusal fails the run with a message naming the window and the setting.

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::Executor;
use crate::context::{TARGET_PERCENT, default_output_cap};
use crate::provider::ProviderError;

/// Room kept free in every request for the estimate's error: this share of the window.
const MARGIN_PERCENT: u64 = 5;
/// The largest share of the window one tool result may take.
const RESULT_SHARE_PERCENT: u64 = 25;
/// Results are never cut below this many characters by the window.
const MIN_RESULT_CHARS: usize = 1_000;
/// After an overflow the request is shrunk to at most this share of its estimate.
const AFTER_OVERFLOW_PERCENT: u64 = 70;
/// The shortest reply a request is sent with: below it there is no room for an answer.
const MIN_REPLY_TOKENS: u64 = 256;

/// The conversation is given at least this share of the window before the reply's room is cut
/// (a fixed part that takes most of a small window leaves the reply less, not the history).
const CONVERSATION_MIN_PERCENT: u64 = 15;

/// The largest tool result, in characters, for a `window`-token window whose conversation has
/// `room` tokens: a quarter of the window and half the room (at 3.5 characters a token), never
/// under 1,000 characters.
pub fn result_chars(window: u64, room: u64) -> usize {
    let tokens = (window * RESULT_SHARE_PERCENT / 100).min(room / 2);
    usize::try_from(tokens * 7 / 2)
        .unwrap_or(usize::MAX)
        .max(MIN_RESULT_CHARS)
}

/// The tokens kept free for the estimate's error in a `window`-token window.
pub fn margin(window: u64) -> u64 {
    window * MARGIN_PERCENT / 100
}

impl Executor {
    /// The fixed part of a request with `tools`: the system prompt and the tool definitions.
    pub(super) fn fixed_part(&self, tools: &[Value]) -> u64 {
        self.context.estimate(&self.history[..1], tools)
    }

    /// Lowers the tools' result budget to what the window can take, with `tools` offered.
    pub(super) fn apply_result_budget(&self, tools: &[Value]) {
        let fixed = self.fixed_part(tools);
        let room = self.prompt_budget(fixed).saturating_sub(fixed);
        self.runner
            .session()
            .limit_result_budget(Some(result_chars(self.context.window(), room)));
    }

    /// The tokens the reply is given with a `fixed`-token fixed part: the configured cap, or a
    /// quarter of the window, less when the fixed part leaves the conversation under 15% of
    /// the window, never under 256.
    pub(super) fn output_reserve(&self, fixed: u64) -> u64 {
        let window = self.context.window();
        match self.config.options.max_tokens {
            Some(cap) => u64::from(cap),
            None => {
                let room = window.saturating_sub(
                    fixed + margin(window) + window * CONVERSATION_MIN_PERCENT / 100,
                );
                u64::from(default_output_cap(window, 0))
                    .min(room)
                    .max(MIN_REPLY_TOKENS)
            }
        }
    }

    /// The most tokens the prompt of a request may take with a `fixed`-token fixed part: the
    /// window less the reply and the margin.
    pub(super) fn prompt_budget(&self, fixed: u64) -> u64 {
        let window = self.context.window();
        window.saturating_sub(self.output_reserve(fixed) + margin(window))
    }

    /// The reply cap sent with a prompt estimated at `estimate` tokens when none is
    /// configured: what [`default_output_cap`] gives with the margin counted as prompt.
    pub(super) fn output_cap(&self, estimate: u64) -> u32 {
        let window = self.context.window();
        default_output_cap(window, estimate + margin(window))
    }

    /// Makes the next request, with `tools`, fit the window (see the module's docs).
    pub(super) async fn fit_request(
        &mut self,
        tools: &[Value],
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        if let Some(done) = self.context.fit(&mut self.history, tools) {
            tracing::info!(
                before = done.before,
                after = done.after,
                results = done.results,
                "shortened the context"
            );
        }
        self.apply_result_budget(tools);
        let budget = self.prompt_budget(self.fixed_part(tools));
        if self.context.estimate(&self.history, tools) <= budget {
            return Ok(());
        }
        self.shrink_to(budget, tools, cancel).await
    }

    /// Shrinks the history until a request with `tools` is estimated at `target` tokens or
    /// less: old results and texts shortened, then compaction, then everything shortened.
    /// `Err` says why it cannot fit.
    pub(super) async fn shrink_to(
        &mut self,
        target: u64,
        tools: &[Value],
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        let window = self.context.window();
        let old = target.min(window * TARGET_PERCENT / 100);
        self.context.shorten(&mut self.history, tools, old, false);
        if self.context.estimate(&self.history, tools) <= target {
            return Ok(());
        }
        match self.compact_history(tools, false, cancel).await {
            Ok(_) if self.context.estimate(&self.history, tools) <= target => return Ok(()),
            Ok(_) => {}
            Err(why) => tracing::info!(%why, "no compaction; shortening instead"),
        }
        self.context.shorten(&mut self.history, tools, target, true);
        let estimate = self.context.estimate(&self.history, tools);
        if estimate <= target {
            return Ok(());
        }
        // Over the target but with room for a short reply: sent, with the reply capped.
        if estimate + MIN_REPLY_TOKENS + margin(window) <= window
            && self.config.options.max_tokens.is_none()
        {
            return Ok(());
        }
        let fixed = self.fixed_part(tools);
        Err(format!(
            "the request does not fit the model's context window of {window} tokens, even with \
             the conversation shortened: it needs about {estimate} tokens (the system prompt and \
             the {} tool definitions alone about {fixed}), and {} more are kept for the reply. \
             Give the model a larger window ([model] context_window or --context-window, and \
             the server's own: llama-server -c, Ollama's num_ctx, vLLM's --max-model-len, LM \
             Studio's context length), offer fewer tools, or start a new session",
            tools.len(),
            self.output_reserve(fixed),
        ))
    }

    /// After the server refused a request estimated at `estimate` tokens as too long
    /// (`error`): learns its window and count, and shrinks the history for one more try.
    /// Returns what the user is told, or `Err` when it cannot shrink.
    pub(super) async fn after_overflow(
        &mut self,
        error: &ProviderError,
        estimate: u64,
        tools: &[Value],
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let ProviderError::ContextOverflow {
            prompt_tokens,
            window,
            ..
        } = error
        else {
            return Err(error.to_string());
        };
        let assumed = self.context.window();
        let mut told = String::new();
        if let Some(served) = *window
            && served < assumed
        {
            self.set_context_window(served);
            told = format!(
                "; its window is {served} tokens, not the {assumed} Lathe assumed ([model] \
                 context_window, --context-window): requests are fitted to {served} from now on"
            );
        }
        if let Some(counted) = *prompt_tokens {
            self.context.calibrate(estimate, counted);
        }
        let target = self
            .prompt_budget(self.fixed_part(tools))
            .min(estimate * AFTER_OVERFLOW_PERCENT / 100);
        self.shrink_to(target, tools, cancel).await?;
        Ok(format!(
            "the model server refused the request as longer than the model's context window{told}; \
             shortened the conversation and asking again"
        ))
    }

    /// The message a run fails with when the server refused a request as too long twice.
    pub(super) fn overflow_failure(&self, error: &ProviderError) -> String {
        let window = self.context.window();
        format!(
            "{error}; it was shortened once and refused again. Lathe keeps requests within {window} \
             tokens: set [model] context_window (or --context-window) to the window the server \
             really runs with (or give the model a larger one: llama-server -c, Ollama's \
             num_ctx, vLLM's --max-model-len, LM Studio's context length), or start a new \
             session"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_take_at_most_a_quarter_of_the_window() {
        assert_eq!(result_chars(2_048, 10_000), 1_792);
        assert_eq!(result_chars(8_192, 10_000), 7_168);
        assert_eq!(result_chars(32_768, 30_000), 28_672);
        assert_eq!(result_chars(1_000, 10_000), MIN_RESULT_CHARS);
        // A fixed part that takes most of the window leaves results half the room.
        assert_eq!(result_chars(8_192, 1_200), 2_100);
    }
}
