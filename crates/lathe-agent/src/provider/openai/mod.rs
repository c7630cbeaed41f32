//! The OpenAI-compatible chat completions API over SSE: llama.cpp's server, vLLM, LM Studio,
//! Ollama's `/v1`.
//!
//! A request that names a tool the model must call ([`ChatRequest::tool_choice`]) sends
//! `"tool_choice": {"type": "function", "function": {"name": ...}}`. A server that refuses it
//! (an error naming `tool_choice`, see [`refuses_tool_choice`]) gets the same request again
//! without it, once, with a [`Chunk::Notice`](super::Chunk::Notice) saying so; the provider
//! remembers, and sends none to that server from then on.

mod decode;

pub(crate) use decode::OpenAiDecoder;

use super::error::{ProviderError, refuses_tool_choice, refuses_tools};
use super::http::{HttpClient, chunk_stream, retrying};
use super::{
    Capabilities, ChatRequest, Chunk, ChunkStream, Provider, ProviderConfig, ProviderKind,
};
use crate::message::{Message, ToolCall};
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A client for an OpenAI-compatible server.
pub struct OpenAiProvider {
    shared: Arc<Shared>,
    echo_reasoning: bool,
    /// `[model] vision`: the only way to know.
    vision: bool,
}

/// What a retried request needs after the call that started it returned.
struct Shared {
    http: HttpClient,
    /// Models whose server refused tools.
    no_tools: Mutex<HashSet<String>>,
    /// The server refused a named `tool_choice`: none is sent any more.
    no_tool_choice: AtomicBool,
    /// The notice of that refusal, until an answer carries it.
    untold: Mutex<Option<String>>,
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl OpenAiProvider {
    /// A client for the server in `config`. A base URL without a path gets `/v1`; the API key
    /// is the configured one, else `OPENAI_API_KEY`.
    pub fn new(mut config: ProviderConfig) -> Result<Self, ProviderError> {
        let base = normalise_base(&config.base_url)?;
        config.api_key = resolve_api_key(config.api_key.take(), |name| std::env::var(name).ok());
        Ok(OpenAiProvider {
            shared: Arc::new(Shared {
                http: HttpClient::new(&config, base, ProviderKind::OpenAi)?,
                no_tools: Mutex::new(HashSet::new()),
                no_tool_choice: AtomicBool::new(false),
                untold: Mutex::new(None),
            }),
            echo_reasoning: config.echo_reasoning,
            vision: config.vision.unwrap_or(false),
        })
    }

    async fn open(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let shared = Arc::clone(&self.shared);
        let body = Arc::new(request_body(request, self.echo_reasoning));
        let model: Arc<str> = Arc::from(request.model.as_str());
        let with_tools = !request.tools.is_empty();
        let policy = shared.http.retry_policy();
        retrying(policy, move || {
            let (shared, body, model) =
                (Arc::clone(&shared), Arc::clone(&body), Arc::clone(&model));
            async move { shared.attempt(&model, &body, with_tools).await }
        })
        .await
    }
}

impl Shared {
    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let list = self.http.get_json("/models").await?;
        Ok(list["data"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(|m| m["id"].as_str())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// One `/chat/completions` request, its errors explained. A body with a `tool_choice` the
    /// server refuses is sent again without it (see the module docs).
    async fn attempt(
        &self,
        model: &str,
        body: &Value,
        with_tools: bool,
    ) -> Result<ChunkStream, ProviderError> {
        let Some(choice) = body.get("tool_choice") else {
            return self.attempt_once(model, body, with_tools).await;
        };
        let mut plain = body.clone();
        if let Some(fields) = plain.as_object_mut() {
            fields.remove("tool_choice");
        }
        if !self.no_tool_choice.load(Ordering::Relaxed) {
            match self.http.open_stream("/chat/completions", body).await {
                Ok((first, rest)) => {
                    return Ok(chunk_stream(first, rest, OpenAiDecoder::default()));
                }
                Err(ProviderError::Http { status, body, .. })
                    if refuses_tool_choice(status, &body) =>
                {
                    tracing::info!(status, %body, "server refused a named tool_choice; sending none from now on");
                    self.no_tool_choice.store(true, Ordering::Relaxed);
                    let name = choice["function"]["name"].as_str().unwrap_or("the tool");
                    *lock(&self.untold) = Some(format!(
                        "the model server does not take a forced tool choice (it answered \
                         {status}: {body}); asked again without it, and from now on the request \
                         only reminds the model to call `{name}`"
                    ));
                }
                Err(error) => return Err(self.explain(model, error, with_tools).await),
            }
        }
        let stream = self.attempt_once(model, &plain, with_tools).await?;
        // Said with the first answer that comes without it (a retry may come between).
        Ok(match lock(&self.untold).take() {
            Some(notice) => {
                Box::pin(futures::stream::iter([Ok(Chunk::Notice(notice))]).chain(stream))
            }
            None => stream,
        })
    }

    /// One `/chat/completions` request as it is, its errors explained.
    async fn attempt_once(
        &self,
        model: &str,
        body: &Value,
        with_tools: bool,
    ) -> Result<ChunkStream, ProviderError> {
        match self.http.open_stream("/chat/completions", body).await {
            Ok((first, rest)) => Ok(chunk_stream(first, rest, OpenAiDecoder::default())),
            Err(error) => Err(self.explain(model, error, with_tools).await),
        }
    }

    /// `error`, the failure of a chat request, with what it means: an unknown model, a refusal
    /// of tools (remembered for the model).
    async fn explain(&self, model: &str, error: ProviderError, with_tools: bool) -> ProviderError {
        match error {
            e @ ProviderError::Http { status: 404, .. } => match self.models().await {
                Ok(available) if !available.iter().any(|m| m == model) => {
                    ProviderError::UnknownModel {
                        model: model.to_string(),
                        url: self.http.base_url().to_string(),
                        available,
                    }
                }
                _ => e,
            },
            ProviderError::Http { body, .. } if with_tools && refuses_tools(&body) => {
                self.no_tools
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(model.to_string());
                ProviderError::ToolsUnsupported {
                    model: model.to_string(),
                    message: body,
                }
            }
            e => e,
        }
    }
}

/// The configured key, else the one in the environment; an empty key is no key.
pub(crate) fn resolve_api_key(
    configured: Option<String>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    configured
        .or_else(|| env("OPENAI_API_KEY"))
        .filter(|k| !k.trim().is_empty())
}

/// `http://host:8080` -> `http://host:8080/v1`; a URL with a path is kept as given.
fn normalise_base(base: &str) -> Result<String, ProviderError> {
    let trimmed = base.trim().trim_end_matches('/');
    let url = reqwest::Url::parse(trimmed)
        .map_err(|e| ProviderError::Config(format!("base url '{base}' does not parse: {e}")))?;
    if url.path().is_empty() || url.path() == "/" {
        Ok(format!("{trimmed}/v1"))
    } else {
        Ok(trimmed.to_string())
    }
}

pub(crate) fn request_body(request: &ChatRequest, echo_reasoning: bool) -> Value {
    let mut body = json!({
        "model": request.model,
        "messages": messages_to_wire(&request.messages, echo_reasoning),
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.clone());
        if let Some(name) = &request.tool_choice {
            body["tool_choice"] = json!({"type": "function", "function": {"name": name}});
        }
    }
    if let Some(t) = request.options.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = request.options.max_tokens {
        body["max_tokens"] = json!(n);
    }
    if !request.options.stop.is_empty() {
        body["stop"] = json!(request.options.stop);
    }
    body
}

/// History in the OpenAI format: arguments as JSON strings, results matched by `tool_call_id`.
/// Calls without an id (Ollama's, or recovered from text) get a stable one here, and a result
/// without an id takes the id of the first unanswered call of the same tool.
///
/// Tool messages carry text only: a result's images follow the results in a user message
/// ([`super::images_after_results`]) as `image_url` content parts with `data:` URLs, the
/// shape llama.cpp's server (with a multimodal projector) and vLLM take.
pub(crate) fn messages_to_wire(messages: &[Message], echo_reasoning: bool) -> Vec<Value> {
    let mut pending: Vec<(String, String)> = Vec::new();
    let messages = super::images_after_results(messages);
    let mut out = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        out.push(match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content, images } if images.is_empty() => {
                json!({"role": "user", "content": content})
            }
            Message::User { content, images } => {
                let mut parts = Vec::with_capacity(images.len() + 1);
                if !content.is_empty() {
                    parts.push(json!({"type": "text", "text": content}));
                }
                for image in images {
                    parts.push(json!({"type": "image_url", "image_url": {
                        "url": format!("data:{};base64,{}", image.media_type, image.data)
                    }}));
                }
                json!({"role": "user", "content": parts})
            }
            Message::Assistant(a) => {
                let mut m = json!({"role": "assistant"});
                m["content"] = if a.content.is_empty() && !a.tool_calls.is_empty() {
                    Value::Null
                } else {
                    json!(a.content)
                };
                if echo_reasoning
                    && let Some(thinking) = a.thinking.as_deref().filter(|t| !t.is_empty())
                {
                    m["reasoning_content"] = json!(thinking);
                }
                if !a.tool_calls.is_empty() {
                    pending.clear();
                    let calls: Vec<Value> = a
                        .tool_calls
                        .iter()
                        .enumerate()
                        .map(|(j, c)| {
                            let id = c.id.clone().unwrap_or_else(|| format!("call_{i}_{j}"));
                            pending.push((id.clone(), c.name.clone()));
                            json!({"id": id, "type": "function",
                                "function": {"name": c.name, "arguments": arguments_string(c)}})
                        })
                        .collect();
                    m["tool_calls"] = Value::Array(calls);
                }
                m
            }
            Message::Tool(t) => {
                let id = match &t.tool_call_id {
                    Some(id) => {
                        pending.retain(|(p, _)| p != id);
                        id.clone()
                    }
                    None => {
                        let at = pending
                            .iter()
                            .position(|(_, name)| *name == t.tool_name)
                            .unwrap_or(0);
                        if at < pending.len() {
                            pending.remove(at).0
                        } else {
                            format!("call_{i}")
                        }
                    }
                };
                json!({"role": "tool", "tool_call_id": id, "content": t.content})
            }
        });
    }
    out
}

fn arguments_string(call: &ToolCall) -> String {
    match &call.arguments {
        Value::String(s) if serde_json::from_str::<Value>(s).is_ok() => s.clone(),
        _ => Value::Object(call.arguments_object()).to_string(),
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
    }

    fn base_url(&self) -> &str {
        self.shared.http.base_url()
    }

    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>> {
        // No standard way to ask; assume tools until the server refuses them.
        let refused = self
            .shared
            .no_tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(model);
        Box::pin(async move {
            Ok(Capabilities {
                tools: !refused,
                thinking: true,
                context_length: None,
                vision: self.vision,
            })
        })
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        Box::pin(self.shared.models())
    }

    fn served_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u32>> {
        Box::pin(super::window::served_window_openai(
            &self.shared.http,
            model,
        ))
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChunkStream, ProviderError>> {
        Box::pin(self.open(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::AssistantMessage;

    #[test]
    fn base_urls() {
        assert_eq!(normalise_base("http://h:8080").unwrap(), "http://h:8080/v1");
        assert_eq!(
            normalise_base("http://h:8080/").unwrap(),
            "http://h:8080/v1"
        );
        assert_eq!(
            normalise_base("http://h:11434/v1/").unwrap(),
            "http://h:11434/v1"
        );
        assert_eq!(
            normalise_base("http://h/api/openai").unwrap(),
            "http://h/api/openai"
        );
        assert!(matches!(
            normalise_base("not a url"),
            Err(ProviderError::Config(_))
        ));
    }

    #[test]
    fn api_key_from_config_then_environment() {
        let env = |_: &str| Some("from-env".to_string());
        assert_eq!(resolve_api_key(Some("k".into()), env).as_deref(), Some("k"));
        assert_eq!(resolve_api_key(None, env).as_deref(), Some("from-env"));
        assert_eq!(resolve_api_key(None, |_| None), None);
        assert_eq!(resolve_api_key(None, |_| Some(" ".into())), None);
    }

    #[test]
    fn history_in_openais_shape_with_ids_filled_in() {
        let a = ToolCall::new("read_file", json!({"path": "a"}));
        let b = ToolCall::new("grep", json!({"pattern": "x"}));
        let wire = messages_to_wire(
            &[
                Message::user("go"),
                Message::Assistant(AssistantMessage {
                    content: String::new(),
                    thinking: Some("plan".into()),
                    tool_calls: vec![a.clone(), b.clone()],
                }),
                Message::tool_result(&b, "B"),
                Message::tool_result(&a, "A"),
            ],
            false,
        );
        assert_eq!(wire[1]["content"], Value::Null);
        assert!(wire[1].get("reasoning_content").is_none());
        assert_eq!(wire[1]["tool_calls"][0]["id"], "call_1_0");
        assert_eq!(wire[1]["tool_calls"][0]["type"], "function");
        assert_eq!(
            wire[1]["tool_calls"][0]["function"]["arguments"],
            "{\"path\":\"a\"}"
        );
        assert_eq!(
            wire[2],
            json!({"role": "tool", "tool_call_id": "call_1_1", "content": "B"})
        );
        assert_eq!(
            wire[3],
            json!({"role": "tool", "tool_call_id": "call_1_0", "content": "A"})
        );
        let echoed = messages_to_wire(
            &[Message::Assistant(AssistantMessage {
                content: "x".into(),
                thinking: Some("t".into()),
                tool_calls: vec![],
            })],
            true,
        );
        assert_eq!(echoed[0]["reasoning_content"], "t");
    }

    #[test]
    fn body_asks_for_usage_and_sends_tools_when_given() {
        let mut request = ChatRequest::new(
            "m",
            vec![Message::user("hi")],
            vec![json!({"type": "function"})],
        );
        request.options.max_tokens = Some(100);
        let body = request_body(&request, false);
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["tools"][0]["type"], "function");
        assert_eq!(body["max_tokens"], 100);
        assert!(
            body.get("tool_choice").is_none(),
            "vLLM refuses tool_choice without its flags"
        );
        request.tool_choice = Some("resolve".into());
        assert_eq!(
            request_body(&request, false)["tool_choice"],
            json!({"type": "function", "function": {"name": "resolve"}})
        );
        request.tools.clear();
        assert!(
            request_body(&request, false).get("tool_choice").is_none(),
            "no tool choice without tools"
        );
    }
}
