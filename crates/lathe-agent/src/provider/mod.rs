//! Model providers: one streaming trait, two wire formats.
//!
//! - [`OllamaProvider`]: Ollama's native `POST /api/chat` (NDJSON), capabilities from
//!   `/api/show`.
//! - [`OpenAiProvider`]: `POST {base}/chat/completions` (SSE), for llama.cpp's server, vLLM,
//!   LM Studio and Ollama's `/v1`.
//! - [`AutoProtocol`]: wraps either and switches a model to the text tool protocol when it has no
//!   native tool calling or its server refuses tools; [`connect`] builds a provider wrapped in
//!   it, which is what the executor should use.
//!
//! A provider only talks to the server: it streams [`Chunk`]s and never interprets the text.
//! Tool calls written in the text are found later by the stream processor.

mod auto;
mod error;
mod http;
pub mod ndjson;
mod ollama;
mod openai;
mod partial;
mod retry;
pub mod sse;
mod text_protocol;
pub mod window;

pub use auto::AutoProtocol;
pub use error::ProviderError;
pub use ollama::OllamaProvider;
pub use openai::OpenAiProvider;
pub use partial::PartialCall;
pub use retry::RetryPolicy;
pub use text_protocol::{TEXT_PROTOCOL_STOP, text_protocol_instructions, to_text_protocol};
pub use window::{Truncation, WindowChoice};

use crate::message::{Message, ToolCall};
use futures::Stream;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Ollama's default context window (2048 or 4096 tokens, depending on the version) cannot
/// hold an agent's system prompt, tool definitions and a few file reads, so a larger one is
/// always sent.
pub const DEFAULT_NUM_CTX: u32 = 32_768;

/// Which wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// Ollama's native API.
    Ollama,
    /// The OpenAI-compatible chat completions API.
    #[serde(rename = "openai")]
    OpenAi,
}

/// One request to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// Model name.
    pub model: String,
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tool definitions in the function-calling shape:
    /// `[{"type": "function", "function": {"name", "description", "parameters"}}]`.
    pub tools: Vec<Value>,
    /// Sampling and runtime options.
    pub options: ChatOptions,
    /// How tools reach the model. By default, [`ToolProtocol::Auto`].
    pub tool_protocol: ToolProtocol,
    /// A tool the model must call in this answer, by name (one of `tools`): the executor names
    /// `resolve` on the turn after a change was previewed. OpenAI-compatible servers get it as
    /// a named `tool_choice`; Ollama and the text protocol have no such thing and ignore it (the
    /// executor reminds the model in the request instead). By default, none.
    pub tool_choice: Option<String>,
}

impl ChatRequest {
    /// A request with default options and the automatic tool protocol.
    pub fn new(model: impl Into<String>, messages: Vec<Message>, tools: Vec<Value>) -> Self {
        ChatRequest {
            model: model.into(),
            messages,
            tools,
            options: ChatOptions::default(),
            tool_protocol: ToolProtocol::Auto,
            tool_choice: None,
        }
    }
}

/// Options sent with each request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatOptions {
    /// Context window in tokens; Ollama's `options.num_ctx`, always sent. By default,
    /// [`DEFAULT_NUM_CTX`].
    pub num_ctx: u32,
    /// How long Ollama keeps the model loaded after the request (`"30m"`, `"-1"`). By default,
    /// the server's own setting.
    pub keep_alive: Option<String>,
    /// Whether a model that can think should. By default, [`Think::Auto`].
    pub think: Think,
    /// Sampling temperature. By default, the server's.
    pub temperature: Option<f32>,
    /// Cap on generated tokens (`num_predict` / `max_tokens`). By default, the server's.
    pub max_tokens: Option<u32>,
    /// Strings that end the generation (Ollama's `options.stop`, OpenAI's `stop`); the text
    /// protocol adds its own. By default, none.
    pub stop: Vec<String>,
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions {
            num_ctx: DEFAULT_NUM_CTX,
            keep_alive: None,
            think: Think::Auto,
            temperature: None,
            max_tokens: None,
            stop: Vec::new(),
        }
    }
}

/// Thinking for models that can think. Nothing is sent for models that cannot: Ollama
/// refuses `think` for them.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Think {
    /// Think when the model can.
    #[default]
    Auto,
    /// Do not think.
    Off,
    /// A named effort level (`"low"`, `"medium"`, `"high"`), for models that take one.
    Level(String),
}

/// How tool definitions reach the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolProtocol {
    /// Native when the model has it and the server accepts it, else the text protocol.
    #[default]
    Auto,
    /// Always native.
    Native,
    /// Always the text protocol: tools described in the system prompt, calls written as
    /// `<tool_call>{...}</tool_call>`.
    Text,
}

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// Answer text.
    Text(String),
    /// Thinking text.
    Thinking(String),
    /// A native tool call being generated: sent when its name is known and again when the file
    /// it works on can be read from its arguments so far (OpenAI-compatible servers stream
    /// them), or once just before the whole call (Ollama sends calls whole). The whole call
    /// follows as [`Chunk::ToolCall`]; nothing is run from this one.
    PartialCall(PartialCall),
    /// A complete native tool call.
    ToolCall(ToolCall),
    /// A message for the user from the provider layer: a switch to the text protocol (once per
    /// model), a retry and its wait (once per retry).
    Notice(String),
    /// The end of the answer.
    Done(Done),
}

/// How an answer ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Done {
    /// `stop`, `length`, `tool_calls`, ... as the server said, when it said.
    pub finish_reason: Option<String>,
    /// Token counts, when sent.
    pub usage: Option<Usage>,
}

/// Token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Tokens generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// How long the server took to generate them, in milliseconds, as it measured it
    /// (Ollama's `eval_duration`, llama.cpp's `timings.predicted_ms`), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_ms: Option<u64>,
}

impl Usage {
    /// Generated tokens per second, by the server's own clock, when it gave both counts.
    pub fn tokens_per_second(&self) -> Option<f64> {
        let tokens = self.completion_tokens?;
        let ms = self.generation_ms.filter(|&ms| ms > 0)?;
        Some(tokens as f64 * 1000.0 / ms as f64)
    }
}

/// What a model that cannot see images is told about them (after "cannot view images"), and
/// the user at `@shot.png`: what would let it.
pub fn no_vision_hint(kind: ProviderKind, model: &str) -> String {
    match kind {
        ProviderKind::Ollama => format!(
            "Ollama does not list `vision` among the capabilities of {model}; use a vision \
             model (qwen2.5vl, gemma3, llava, ...) to show it images."
        ),
        ProviderKind::OpenAi => "If the server's model takes images (llama.cpp's server with \
             --mmproj, vLLM with a vision model), set `vision = true` under [model] in the \
             configuration."
            .to_owned(),
    }
}

/// What a user message says that carries the images of the tool results before it.
pub const RESULT_IMAGES_NOTE: &str = "[the image read by the tool call above]";

/// `messages` with the images of each run of tool results taken off the results and put in a
/// user message after the run (no API takes images in every tool message): into the user
/// message that follows, when one does (so that roles still alternate), else a new one saying
/// [`RESULT_IMAGES_NOTE`]. Borrowed as is when no result has images.
pub(crate) fn images_after_results(messages: &[Message]) -> std::borrow::Cow<'_, [Message]> {
    use std::borrow::Cow;
    if !messages
        .iter()
        .any(|m| matches!(m, Message::Tool(t) if !t.images.is_empty()))
    {
        return Cow::Borrowed(messages);
    }
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    let mut carried: Vec<crate::message::Image> = Vec::new();
    for message in messages {
        match message {
            Message::Tool(t) => {
                let mut t = t.clone();
                carried.append(&mut t.images);
                out.push(Message::Tool(t));
                continue;
            }
            Message::User { content, images } if !carried.is_empty() => {
                carried.extend(images.iter().cloned());
                out.push(Message::user_with_images(
                    content.clone(),
                    std::mem::take(&mut carried),
                ));
                continue;
            }
            _ => {}
        }
        if !carried.is_empty() {
            out.push(Message::user_with_images(
                RESULT_IMAGES_NOTE,
                std::mem::take(&mut carried),
            ));
        }
        out.push(message.clone());
    }
    if !carried.is_empty() {
        out.push(Message::user_with_images(RESULT_IMAGES_NOTE, carried));
    }
    Cow::Owned(out)
}

/// What a model can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Native tool calling.
    pub tools: bool,
    /// Separate thinking output.
    pub thinking: bool,
    /// The model's trained context length, when the server reports it.
    pub context_length: Option<u64>,
    /// The model takes images: Ollama's `/api/show` lists `vision`; for OpenAI-compatible
    /// servers only the configuration can say ([`ProviderConfig::vision`]).
    pub vision: bool,
}

/// The streamed answer. Ends after a [`Chunk::Done`] or an error.
pub type ChunkStream = Pin<Box<dyn Stream<Item = Result<Chunk, ProviderError>> + Send>>;

/// A model server.
pub trait Provider: Send + Sync {
    /// Which wire format.
    fn kind(&self) -> ProviderKind;

    /// The server's base URL.
    fn base_url(&self) -> &str;

    /// What `model` can do; cached per model.
    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>>;

    /// The models the server has.
    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>>;

    /// The context window, in tokens, the server serves `model` with, when it says: Ollama's
    /// context length of the model from `/api/show` (Ollama caps `num_ctx` there), a
    /// llama.cpp slot's `n_ctx`, vLLM's `max_model_len`, LM Studio's loaded context length
    /// (see [`window`]). `None` when the server does not say; never an error. Lathe uses the
    /// smaller of this and the configured window ([`WindowChoice`]). By default, `None`.
    fn served_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u32>> {
        let _ = model;
        Box::pin(async { None })
    }

    /// Sends `request` and streams the answer. Transient failures before the first byte are
    /// retried, each retry told at the start of the stream as a [`Chunk::Notice`] while it
    /// waits; retries that run out end the stream with the last error. Nothing is re-sent after
    /// output has started. An error that is not transient (a refusal, an unknown model) on the
    /// first attempt is this future's `Err`.
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChunkStream, ProviderError>>;
}

/// How to reach a model server.
#[derive(Debug, Clone)]
pub struct ProviderConfig {
    base_url: String,
    api_key: Option<String>,
    retry: RetryPolicy,
    connect_timeout: Duration,
    read_timeout: Option<Duration>,
    echo_reasoning: bool,
    vision: Option<bool>,
}

impl ProviderConfig {
    /// A server at `base_url` (`http://127.0.0.1:11434`, `http://localhost:8080/v1`).
    pub fn new(base_url: impl Into<String>) -> Self {
        ProviderConfig {
            base_url: base_url.into(),
            api_key: None,
            retry: RetryPolicy::default(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Some(Duration::from_secs(600)),
            echo_reasoning: false,
            vision: None,
        }
    }

    /// Whether the model takes images (`[model] vision`): `Some` overrides what the server says
    /// (Ollama's `/api/show`); OpenAI-compatible servers have no way to say, so there `None` is
    /// no. By default, `None`.
    pub fn vision(mut self, vision: Option<bool>) -> Self {
        self.vision = vision;
        self
    }

    /// Bearer token for OpenAI-compatible servers. By default, `OPENAI_API_KEY` when set.
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// Retries before the first byte. By default, [`RetryPolicy::default`].
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// How long to wait for a connection. By default, 10 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one read may wait for bytes; a model loading from disk can take minutes before
    /// its first token. By default, 10 minutes; `None` waits forever.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Whether assistant thinking goes back to an OpenAI-compatible server as
    /// `reasoning_content`. By default, disabled: several servers reject the field in requests
    /// and chat templates drop past reasoning anyway. (Ollama always gets its `thinking` back.)
    pub fn echo_reasoning(mut self, echo: bool) -> Self {
        self.echo_reasoning = echo;
        self
    }
}

/// Decodes a response body, given as the pieces it arrived in, into what a provider's stream
/// yields: for replaying recorded answers, tests and benchmarks. Ends at the first error.
pub fn decode_body(kind: ProviderKind, parts: &[&[u8]]) -> Vec<Result<Chunk, ProviderError>> {
    fn run<D: http::WireDecoder>(
        mut decoder: D,
        parts: &[&[u8]],
    ) -> Vec<Result<Chunk, ProviderError>> {
        let mut out = std::collections::VecDeque::new();
        for part in parts {
            if decoder.is_finished() {
                break;
            }
            decoder.feed(part, &mut out);
        }
        if !decoder.is_finished() {
            decoder.finish(&mut out);
        }
        let mut items: Vec<_> = out.into();
        if let Some(first_error) = items.iter().position(Result::is_err) {
            items.truncate(first_error + 1);
        }
        items
    }
    match kind {
        ProviderKind::Ollama => run(ollama::OllamaDecoder::default(), parts),
        ProviderKind::OpenAi => run(openai::OpenAiDecoder::default(), parts),
    }
}

/// A provider of `kind` for `config`, wrapped in [`AutoProtocol`] so that models without native
/// tools fall back to the text protocol on their own.
pub fn connect(
    kind: ProviderKind,
    config: ProviderConfig,
) -> Result<Arc<dyn Provider>, ProviderError> {
    let inner: Arc<dyn Provider> = match kind {
        ProviderKind::Ollama => Arc::new(OllamaProvider::new(config)?),
        ProviderKind::OpenAi => Arc::new(OpenAiProvider::new(config)?),
    };
    Ok(Arc::new(AutoProtocol::new(inner)))
}
