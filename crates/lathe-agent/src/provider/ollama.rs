//! Ollama's native API: `POST /api/chat` streaming NDJSON, `/api/show`, `/api/tags`.

use super::error::{ProviderError, refuses_tools};
use super::http::{HttpClient, WireDecoder, chunk_stream};
use super::ndjson::NdjsonDecoder;
use super::{
    Capabilities, ChatRequest, Chunk, ChunkStream, Done, Provider, ProviderConfig, ProviderKind,
    Think, Usage,
};
use crate::message::{Message, ToolCall};
use futures::future::BoxFuture;
use serde_json::{Map, Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

/// Ollama's port when `OLLAMA_HOST` does not give one.
const DEFAULT_PORT: u16 = 11434;

/// A client for Ollama's native API.
pub struct OllamaProvider {
    http: HttpClient,
    capabilities: Mutex<HashMap<String, Capabilities>>,
}

impl OllamaProvider {
    /// A client for the server in `config`.
    pub fn new(config: ProviderConfig) -> Result<Self, ProviderError> {
        let base = config.base_url.trim_end_matches('/').to_string();
        Ok(OllamaProvider {
            http: HttpClient::new(&config, base)?,
            capabilities: Mutex::new(HashMap::new()),
        })
    }

    /// The base URL for an `OLLAMA_HOST` value, which Ollama accepts without a scheme or a port
    /// (`0.0.0.0`, `localhost:8080`, `https://box`).
    pub fn base_url_from_host(host: &str) -> String {
        let host = host.trim().trim_end_matches('/');
        let (scheme, rest) = match host.split_once("://") {
            Some((scheme, rest)) => (scheme.to_string(), rest.to_string()),
            None => ("http".to_string(), host.to_string()),
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
            None => (rest, String::new()),
        };
        // 0.0.0.0 is how a server is told to listen everywhere; a client reaches it on loopback.
        let authority = match authority.as_str() {
            "" | "0.0.0.0" => "127.0.0.1".to_string(),
            a => a
                .strip_prefix("0.0.0.0:")
                .map(|port| format!("127.0.0.1:{port}"))
                .unwrap_or_else(|| a.to_string()),
        };
        let has_port = match authority.rfind(']') {
            Some(bracket) => authority[bracket..].contains(':'),
            None => authority.contains(':'),
        };
        let authority = if has_port || scheme == "https" {
            authority
        } else {
            format!("{authority}:{DEFAULT_PORT}")
        };
        format!("{scheme}://{authority}{path}")
    }

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
            // An old server or a proxy without /api/show: assume tools (a refusal will tell),
            // and do not send `think`, which servers refuse for models that cannot think.
            Err(ProviderError::Http { .. } | ProviderError::Protocol(_)) => Capabilities {
                tools: true,
                thinking: false,
                context_length: None,
            },
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

    /// A 404 for `model`: an unknown model, with the list, unless the server does have it.
    async fn explain_not_found(&self, model: &str, original: ProviderError) -> ProviderError {
        match self.models().await {
            Ok(available) if !available.iter().any(|m| same_model(m, model)) => {
                ProviderError::UnknownModel {
                    model: model.to_string(),
                    url: self.http.base_url().to_string(),
                    available,
                }
            }
            _ => original,
        }
    }

    async fn open(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let capabilities = self.fetch_capabilities(&request.model).await?;
        let body = request_body(request, &capabilities);
        match self.http.open_stream("/api/chat", &body).await {
            Ok((first, rest)) => Ok(chunk_stream(first, rest, OllamaDecoder::default())),
            Err(e @ ProviderError::Http { status: 404, .. }) => {
                Err(self.explain_not_found(&request.model, e).await)
            }
            Err(ProviderError::Http { body, .. })
                if !request.tools.is_empty() && refuses_tools(&body) =>
            {
                self.remember(
                    &request.model,
                    Capabilities {
                        tools: false,
                        ..capabilities
                    },
                );
                Err(ProviderError::ToolsUnsupported {
                    model: request.model.clone(),
                    message: body,
                })
            }
            Err(e) => Err(e),
        }
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
            }
        }
        None => Capabilities {
            tools: show["template"]
                .as_str()
                .is_some_and(|t| t.contains(".Tools")),
            thinking: false,
            context_length,
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
pub(crate) fn messages_to_wire(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| match m {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
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

/// Ollama's NDJSON lines to chunks.
#[derive(Default)]
pub(crate) struct OllamaDecoder {
    lines: NdjsonDecoder,
    done: bool,
    failed: bool,
}

impl OllamaDecoder {
    fn line(&mut self, line: &[u8], out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        if self.done || self.failed {
            return;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                self.failed = true;
                let text = super::error::cut(&String::from_utf8_lossy(line), 200);
                out.push_back(Err(ProviderError::Protocol(format!(
                    "{e} in ollama line '{text}'"
                ))));
                return;
            }
        };
        if let Some(error) = value.get("error") {
            self.failed = true;
            let message = error
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| error.to_string());
            out.push_back(Err(ProviderError::MidStream(message)));
            return;
        }
        let message = &value["message"];
        if let Some(thinking) = message["thinking"].as_str().filter(|t| !t.is_empty()) {
            out.push_back(Ok(Chunk::Thinking(thinking.to_string())));
        }
        if let Some(content) = message["content"].as_str().filter(|t| !t.is_empty()) {
            out.push_back(Ok(Chunk::Text(content.to_string())));
        }
        if let Some(calls) = message["tool_calls"].as_array() {
            for call in calls {
                out.push_back(Ok(Chunk::ToolCall(tool_call(call))));
            }
        }
        if value["done"].as_bool() == Some(true) {
            self.done = true;
            let usage = (value.get("prompt_eval_count").is_some()
                || value.get("eval_count").is_some())
            .then(|| Usage {
                prompt_tokens: value["prompt_eval_count"].as_u64(),
                completion_tokens: value["eval_count"].as_u64(),
            });
            let finish_reason = value["done_reason"].as_str().map(str::to_string);
            out.push_back(Ok(Chunk::Done(Done {
                finish_reason,
                usage,
            })));
        }
    }
}

/// A native call: `{"id"?, "function": {"name", "arguments"}}`. Arguments normally arrive as
/// an object; a string is kept for the parser to repair.
fn tool_call(call: &Value) -> ToolCall {
    let function = &call["function"];
    let arguments = match &function["arguments"] {
        Value::String(s) => serde_json::from_str::<Value>(s)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| Value::String(s.clone())),
        Value::Null => json!({}),
        other => other.clone(),
    };
    ToolCall {
        id: call["id"]
            .as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        name: function["name"].as_str().unwrap_or_default().to_string(),
        arguments,
    }
}

impl WireDecoder for OllamaDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.feed(bytes, |line| self.line(line, out));
        self.lines = lines;
    }

    fn finish(&mut self, out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        let mut lines = std::mem::take(&mut self.lines);
        lines.finish(|line| self.line(line, out));
        if !self.done && !self.failed {
            self.failed = true;
            out.push_back(Err(ProviderError::MidStream(
                "the stream ended before the model finished".into(),
            )));
        }
    }

    fn is_finished(&self) -> bool {
        self.done || self.failed
    }
}

impl Provider for OllamaProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Ollama
    }

    fn base_url(&self) -> &str {
        self.http.base_url()
    }

    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>> {
        Box::pin(self.fetch_capabilities(model))
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        Box::pin(self.models())
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

    fn decode(bytes: &[u8]) -> Vec<Result<Chunk, ProviderError>> {
        let mut d = OllamaDecoder::default();
        let mut out = VecDeque::new();
        d.feed(bytes, &mut out);
        d.finish(&mut out);
        out.into_iter().collect()
    }

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
    }

    #[test]
    fn lines_to_chunks() {
        let out = decode(
            b"{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"hm\"},\"done\":false}\n\
              {\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n\
              {\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}},{\"id\":\"c2\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"b\\\":2}\"}}]},\"done\":false}\n\
              {\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"eval_count\":5}\n",
        );
        let chunks: Vec<Chunk> = out.into_iter().map(Result::unwrap).collect();
        assert_eq!(chunks[0], Chunk::Thinking("hm".into()));
        assert_eq!(chunks[1], Chunk::Text("Hi".into()));
        assert_eq!(
            chunks[2],
            Chunk::ToolCall(ToolCall::new("f", json!({"a": 1})))
        );
        assert_eq!(
            chunks[3],
            Chunk::ToolCall(ToolCall {
                id: Some("c2".into()),
                name: "g".into(),
                arguments: json!({"b": 2})
            })
        );
        assert_eq!(
            chunks[4],
            Chunk::Done(Done {
                finish_reason: Some("stop".into()),
                usage: Some(Usage {
                    prompt_tokens: None,
                    completion_tokens: Some(5)
                })
            })
        );
    }

    #[test]
    fn done_without_reason_or_counts_is_tolerated() {
        let out = decode(b"{\"message\":{\"content\":\"x\"},\"done\":true}");
        assert_eq!(out.len(), 2);
        assert!(matches!(
            out[1],
            Ok(Chunk::Done(Done {
                finish_reason: None,
                usage: None
            }))
        ));
    }

    #[test]
    fn error_line_is_an_error_not_content() {
        let out = decode(
            b"{\"message\":{\"content\":\"a\"},\"done\":false}\n{\"error\":\"out of memory\"}\n",
        );
        assert!(matches!(&out[1], Err(ProviderError::MidStream(m)) if m == "out of memory"));
        assert_eq!(out.len(), 2);
    }

    #[test]
    fn missing_done_and_garbage_are_errors() {
        let out = decode(b"{\"message\":{\"content\":\"a\"},\"done\":false}\n");
        assert!(matches!(out.last(), Some(Err(ProviderError::MidStream(_)))));
        let out = decode(b"<html>oops</html>\n");
        assert!(matches!(out.as_slice(), [Err(ProviderError::Protocol(_))]));
    }

    #[test]
    fn body_sends_num_ctx_always_and_think_only_when_the_model_can() {
        let mut request = ChatRequest::new("m", vec![Message::user("hi")], vec![]);
        request.options.keep_alive = Some("30m".into());
        let plain = Capabilities {
            tools: true,
            thinking: false,
            context_length: None,
        };
        let body = request_body(&request, &plain);
        assert_eq!(body["options"]["num_ctx"], super::super::DEFAULT_NUM_CTX);
        assert_eq!(body["stream"], true);
        assert_eq!(body["keep_alive"], "30m");
        assert!(body.get("think").is_none());
        assert!(body.get("tools").is_none());
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
                context_length: Some(40960)
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
