//! Ollama's native API: `POST /api/chat` streaming NDJSON, `/api/show`, `/api/tags`.

mod decode;

pub(crate) use decode::OllamaDecoder;

use super::error::{ProviderError, refuses_tools};
use super::http::{HttpClient, chunk_stream, retrying};
use super::{
    Capabilities, ChatRequest, ChunkStream, Provider, ProviderConfig, ProviderKind, Think,
};
use crate::message::Message;
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What a model can do when the server does not say.
const ASSUMED: Capabilities = Capabilities {
    tools: true,
    thinking: false,
    context_length: None,
    vision: false,
};

/// Ollama's port when `OLLAMA_HOST` does not give one.
const DEFAULT_PORT: u16 = 11434;

/// A client for Ollama's native API.
pub struct OllamaProvider {
    shared: Arc<Shared>,
}

/// What a retried request needs after the call that started it returned.
struct Shared {
    http: HttpClient,
    capabilities: Mutex<HashMap<String, Capabilities>>,
    /// `[model] vision`, over what `/api/show` says.
    vision: Option<bool>,
}

impl OllamaProvider {
    /// A client for the server in `config`.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/').to_string();
        Ok(OllamaProvider {
            shared: Arc::new(Shared {
                http: HttpClient::new(&config, base, ProviderKind::Ollama)?,
                capabilities: Mutex::new(HashMap::new()),
                vision: config.vision,
            }),
        })
    }

    /// The base URL for an `OLLAMA_HOST` value, read as Ollama's own client reads it: without a
    /// scheme the port defaults to 11434 (`box` -> `http://box:11434`); with an explicit scheme
    /// the scheme's own port applies (`https://box` is port 443); a server's listen-everywhere
    /// address (`0.0.0.0`, `[::]`) is reached on loopback.
    pub fn base_url_from_host(host: &str) -> String {
        let host = host.trim().trim_end_matches('/');
        let (scheme, rest, explicit) = match host.split_once("://") {
            Some((scheme, rest)) => (scheme.to_string(), rest.to_string(), true),
            None => ("http".to_string(), host.to_string(), false),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
            None => (rest, String::new()),
        };
        let authority = match authority.as_str() {
            "" | "0.0.0.0" => "127.0.0.1".to_string(),
            "[::]" => "[::1]".to_string(),
            a => a
                .strip_prefix("0.0.0.0:")
                .map(|port| format!("127.0.0.1:{port}"))
                .or_else(|| a.strip_prefix("[::]:").map(|port| format!("[::1]:{port}")))
                .unwrap_or_else(|| a.to_string()),
        };
        let has_port = match authority.rfind(']') {
            Some(bracket) => authority[bracket..].contains(':'),
            None => authority.contains(':'),
        };
        let authority = if has_port || explicit {
            authority
        } else {
            format!("{authority}:{DEFAULT_PORT}")
        };
        format!("{scheme}://{authority}{path}")
    }
}

impl Shared {
    fn cached(&self, model: &str) -> Option<Capabilities> {
        self.capabilities
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(model)
            .copied()
    }

    fn remember(&self, model: &str, capabilities: Capabilities) {
        self.capabilities
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(model.to_string(), capabilities);
    }

    async fn fetch_capabilities(&self, model: &str) -> Result<Capabilities, ProviderError> {
        let mut capabilities = self.asked_capabilities(model).await?;
        if let Some(vision) = self.vision {
            capabilities.vision = vision;
        }
        Ok(capabilities)
    }

    async fn asked_capabilities(&self, model: &str) -> Result<Capabilities, ProviderError> {
        if let Some(c) = self.cached(model) {
            return Ok(c);
        }
        let capabilities = match self
            .http
            .post_json("/api/show", &json!({ "model": model }))
            .await
        {
            Ok(show) => parse_show(&show),
            Err(e @ ProviderError::Http { status: 404, .. }) => {
                return Err(self.explain_not_found(model, e).await);
            }
            // A server that stayed busy through the retries: assume for this request only, and
            // ask again next time (the chat request's own retries tell the user they wait).
            Err(e) if e.is_transient() => {
                tracing::debug!(error = %e, "no capabilities for {model} this time");
                return Ok(ASSUMED);
            }
            // An old server or a proxy without /api/show: assume tools (a refusal will tell),
            // and do not send `think`, which servers refuse for models that cannot think.
            Err(ProviderError::Http { .. } | ProviderError::Protocol(_)) => ASSUMED,
            Err(e) => return Err(e),
        };
        self.remember(model, capabilities);
        Ok(capabilities)
    }

    async fn models(&self) -> Result<Vec<String>, ProviderError> {
        let tags = self.http.get_json("/api/tags").await?;
        Ok(tags["models"]
            .as_array()
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| {
                        m.get("name")
                            .or_else(|| m.get("model"))
                            .and_then(Value::as_str)
                    })
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// A 404 for `model`: an unknown model, with the list, unless the server does have it; a
    /// server without Ollama's API that answers the OpenAI-compatible one is the wrong
    /// protocol.
    async fn explain_not_found(&self, model: &str, original: ProviderError) -> ProviderError {
        match self.models().await {
            Ok(available) if !available.iter().any(|m| same_model(m, model)) => {
                ProviderError::UnknownModel {
                    model: model.to_string(),
                    url: self.http.base_url().to_string(),
                    available,
                }
            }
            Ok(_) => original,
            Err(_) if self.speaks_openai().await => ProviderError::WrongProtocol {
                url: self.http.base_url().to_string(),
            },
            Err(_) => original,
        }
    }

    /// Whether the server answers the OpenAI-compatible model list: at `{base}/models` for a
    /// base URL that ends in `/v1`, else at `{base}/v1/models`.
    async fn speaks_openai(&self) -> bool {
        let base = self.http.base_url().trim_end_matches('/');
        let path = if base.ends_with("/v1") {
            "/models"
        } else {
            "/v1/models"
        };
        match self.http.get_json(path).await {
            Ok(list) => list["data"].is_array(),
            Err(_) => base.ends_with("/v1"),
        }
    }

    /// One `/api/chat` request, its errors explained.
    async fn attempt(
        &self,
        model: &str,
        body: &Value,
        with_tools: bool,
        capabilities: Capabilities,
    ) -> Result<ChunkStream, ProviderError> {
        match self.http.open_stream("/api/chat", body).await {
            Ok((first, rest)) => Ok(chunk_stream(first, rest, OllamaDecoder::default())),
            Err(e @ ProviderError::Http { status: 404, .. }) => {
                Err(self.explain_not_found(model, e).await)
            }
            Err(ProviderError::Http { body, .. }) if with_tools && refuses_tools(&body) => {
                self.remember(
                    model,
                    Capabilities {
                        tools: false,
                        ..capabilities
                    },
                );
                Err(ProviderError::ToolsUnsupported {
                    model: model.to_string(),
                    message: body,
                })
            }
            Err(e) => Err(e),
        }
    }
}

impl OllamaProvider {
    async fn open(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let shared = Arc::clone(&self.shared);
        let capabilities = shared.fetch_capabilities(&request.model).await?;
        let body = Arc::new(request_body(request, &capabilities));
        let model: Arc<str> = Arc::from(request.model.as_str());
        let with_tools = !request.tools.is_empty();
        let policy = shared.http.retry_policy();
        retrying(policy, move || {
            let (shared, body, model) =
                (Arc::clone(&shared), Arc::clone(&body), Arc::clone(&model));
            async move {
                shared
                    .attempt(&model, &body, with_tools, capabilities)
                    .await
            }
        })
        .await
    }
}

/// `llama3.2` and `llama3.2:latest` are the same model.
fn same_model(listed: &str, wanted: &str) -> bool {
    let full = |m: &str| {
        if m.contains(':') {
            m.to_string()
        } else {
            format!("{m}:latest")
        }
    };
    listed == wanted || full(listed) == full(wanted)
}

/// Capabilities from an `/api/show` answer. Servers before the `capabilities` field report
/// tools through the template.
fn parse_show(show: &Value) -> Capabilities {
    let context_length = show["model_info"].as_object().and_then(|info| {
        info.iter()
            .find(|(k, _)| k.ends_with(".context_length"))
            .and_then(|(_, v)| v.as_u64())
    });
    match show.get("capabilities").and_then(Value::as_array) {
        Some(list) => {
            let has = |name: &str| list.iter().any(|c| c.as_str() == Some(name));
            Capabilities {
                tools: has("tools"),
                thinking: has("thinking"),
                context_length,
                vision: has("vision"),
            }
        }
        None => Capabilities {
            tools: show["template"]
                .as_str()
                .is_some_and(|t| t.contains(".Tools")),
            thinking: false,
            context_length,
            vision: false,
        },
    }
}

/// The `/api/chat` body.
pub(crate) fn request_body(request: &ChatRequest, capabilities: &Capabilities) -> Value {
    let options = &request.options;
    let mut opts = Map::new();
    opts.insert("num_ctx".into(), json!(options.num_ctx));
    if let Some(t) = options.temperature {
        opts.insert("temperature".into(), json!(t));
    }
    if let Some(n) = options.max_tokens {
        opts.insert("num_predict".into(), json!(n));
    }
    if !options.stop.is_empty() {
        opts.insert("stop".into(), json!(options.stop));
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages_to_wire(&request.messages),
        "stream": true,
        "options": opts,
    });
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(request.tools.clone());
    }
    if capabilities.thinking {
        body["think"] = match &options.think {
            Think::Auto => json!(true),
            Think::Off => json!(false),
            Think::Level(level) => json!(level),
        };
    }
    if let Some(keep_alive) = &options.keep_alive {
        body["keep_alive"] = json!(keep_alive);
    }
    body
}

/// History in Ollama's format: tool call arguments as objects, the assistant's `thinking` sent
/// back, tool results with `tool_name` (and `tool_call_id` when the call had an id).
///
/// Images (base64, in the message's `images`) go in user messages only: tool results' images
/// follow the results in a user message ([`super::images_after_results`]), since not every
/// Ollama version reads `images` on a tool message.
pub(crate) fn messages_to_wire(messages: &[Message]) -> Vec<Value> {
    super::images_after_results(messages)
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content, images } => {
                let mut out = json!({"role": "user", "content": content});
                if !images.is_empty() {
                    out["images"] = images.iter().map(|i| json!(i.data)).collect();
                }
                out
            }
            Message::Assistant(a) => {
                let mut out = json!({"role": "assistant", "content": a.content});
                if let Some(thinking) = a.thinking.as_deref().filter(|t| !t.is_empty()) {
                    out["thinking"] = json!(thinking);
                }
                if !a.tool_calls.is_empty() {
                    let calls: Vec<Value> = a
                        .tool_calls
                        .iter()
                        .map(|c| {
                            let mut call = json!({"function": {"name": c.name, "arguments": c.arguments_object()}});
                            if let Some(id) = &c.id {
                                call["id"] = json!(id);
                            }
                            call
                        })
                        .collect();
                    out["tool_calls"] = Value::Array(calls);
                }
                out
            }
            Message::Tool(t) => {
                let mut out = json!({"role": "tool", "tool_name": t.tool_name, "content": t.content});
                if let Some(id) = &t.tool_call_id {
                    out["tool_call_id"] = json!(id);
                }
                out
            }
        })
        .collect()
}

impl Provider for OllamaProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Ollama
    }

    fn base_url(&self) -> &str {
        self.shared.http.base_url()
    }

    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>> {
        Box::pin(self.shared.fetch_capabilities(model))
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        Box::pin(self.shared.models())
    }

    fn served_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u32>> {
        Box::pin(async move {
            let capabilities = self.shared.fetch_capabilities(model).await.ok()?;
            capabilities
                .context_length
                .filter(|&n| n > 0)
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX))
        })
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
    use crate::message::{AssistantMessage, ToolCall};

    #[test]
    fn host_forms() {
        assert_eq!(
            OllamaProvider::base_url_from_host("0.0.0.0"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("0.0.0.0:9999"),
            "http://127.0.0.1:9999"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("box"),
            "http://box:11434"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("http://box:1/"),
            "http://box:1"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("https://box"),
            "https://box"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("[::1]"),
            "http://[::1]:11434"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("[::1]:5"),
            "http://[::1]:5"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("[::]"),
            "http://[::1]:11434"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("http://box"),
            "http://box"
        );
        assert_eq!(
            OllamaProvider::base_url_from_host("localhost:8000"),
            "http://localhost:8000"
        );
    }

    #[test]
    fn body_sends_num_ctx_always_and_think_only_when_the_model_can() {
        let mut request = ChatRequest::new("m", vec![Message::user("hi")], vec![]);
        request.options.keep_alive = Some("30m".into());
        let plain = Capabilities {
            tools: true,
            thinking: false,
            context_length: None,
            vision: false,
        };
        let body = request_body(&request, &plain);
        assert_eq!(body["options"]["num_ctx"], super::super::DEFAULT_NUM_CTX);
        assert_eq!(body["stream"], true);
        assert_eq!(body["keep_alive"], "30m");
        assert!(body.get("think").is_none());
        assert!(body.get("tools").is_none());
        assert!(body["options"].get("stop").is_none());
        let thinker = Capabilities {
            thinking: true,
            ..plain
        };
        assert_eq!(request_body(&request, &thinker)["think"], true);
        request.options.think = Think::Level("high".into());
        assert_eq!(request_body(&request, &thinker)["think"], "high");
        request.options.think = Think::Off;
        assert_eq!(request_body(&request, &thinker)["think"], false);
    }

    #[test]
    fn history_in_ollamas_shape() {
        let call = ToolCall::new("read_file", json!({"path": "a"}));
        let with_id = ToolCall {
            id: Some("c9".into()),
            name: "grep".into(),
            arguments: json!("{\"pattern\":\"x\"}"),
        };
        let wire = messages_to_wire(&[
            Message::Assistant(AssistantMessage {
                content: "ok".into(),
                thinking: Some("plan".into()),
                tool_calls: vec![call.clone(), with_id.clone()],
            }),
            Message::tool_result(&call, "1: fn main"),
            Message::tool_result(&with_id, "none"),
        ]);
        assert_eq!(
            wire[0],
            json!({"role": "assistant", "content": "ok", "thinking": "plan", "tool_calls": [
                {"function": {"name": "read_file", "arguments": {"path": "a"}}},
                {"id": "c9", "function": {"name": "grep", "arguments": {"pattern": "x"}}}
            ]})
        );
        assert_eq!(
            wire[1],
            json!({"role": "tool", "tool_name": "read_file", "content": "1: fn main"})
        );
        assert_eq!(
            wire[2],
            json!({"role": "tool", "tool_name": "grep", "content": "none", "tool_call_id": "c9"})
        );
    }

    #[test]
    fn show_parsing() {
        let c = parse_show(
            &json!({"capabilities": ["completion", "tools"], "model_info": {"qwen3.context_length": 40960}}),
        );
        assert_eq!(
            c,
            Capabilities {
                tools: true,
                thinking: false,
                context_length: Some(40960),
                vision: false,
            }
        );
        let old = parse_show(&json!({"template": "{{ if .Tools }}..."}));
        assert!(old.tools);
        assert!(!parse_show(&json!({"template": "{{ .Prompt }}"})).tools);
    }

    #[test]
    fn latest_tag_is_the_same_model() {
        assert!(same_model("llama3.2:latest", "llama3.2"));
        assert!(same_model("llama3.2", "llama3.2:latest"));
        assert!(!same_model("llama3.2:1b", "llama3.2"));
    }
}
