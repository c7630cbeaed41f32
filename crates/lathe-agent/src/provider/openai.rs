//! The OpenAI-compatible chat completions API over SSE: llama.cpp's server, vLLM, LM Studio,
//! Ollama's `/v1`.

use super::error::{ProviderError, refuses_tools};
use super::http::{HttpClient, WireDecoder, chunk_stream};
use super::sse::{SseDecoder, SseEvent};
use super::{
    Capabilities, ChatRequest, Chunk, ChunkStream, Done, Provider, ProviderConfig, ProviderKind,
    Usage,
};
use crate::message::{Message, ToolCall};
use futures::future::BoxFuture;
use serde_json::{Value, json};
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

/// A client for an OpenAI-compatible server.
pub struct OpenAiProvider {
    http: HttpClient,
    echo_reasoning: bool,
    /// Models whose server refused tools.
    no_tools: Mutex<HashSet<String>>,
}

impl OpenAiProvider {
    /// A client for the server in `config`. A base URL without a path gets `/v1`; the API key
    /// is the configured one, else `OPENAI_API_KEY`.
    pub fn new(mut config: ProviderConfig) -> Result<Self, ProviderError> {
        let base = normalise_base(&config.base_url)?;
        config.api_key = resolve_api_key(config.api_key.take(), |name| std::env::var(name).ok());
        Ok(OpenAiProvider {
            http: HttpClient::new(&config, base)?,
            echo_reasoning: config.echo_reasoning,
            no_tools: Mutex::new(HashSet::new()),
        })
    }

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

    async fn open(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        let body = request_body(request, self.echo_reasoning);
        match self.http.open_stream("/chat/completions", &body).await {
            Ok((first, rest)) => Ok(chunk_stream(first, rest, OpenAiDecoder::default())),
            Err(e @ ProviderError::Http { status: 404, .. }) => match self.models().await {
                Ok(available) if !available.contains(&request.model) => {
                    Err(ProviderError::UnknownModel {
                        model: request.model.clone(),
                        url: self.http.base_url().to_string(),
                        available,
                    })
                }
                _ => Err(e),
            },
            Err(ProviderError::Http { body, .. })
                if !request.tools.is_empty() && refuses_tools(&body) =>
            {
                self.no_tools
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(request.model.clone());
                Err(ProviderError::ToolsUnsupported {
                    model: request.model.clone(),
                    message: body,
                })
            }
            Err(e) => Err(e),
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
    }
    if let Some(t) = request.options.temperature {
        body["temperature"] = json!(t);
    }
    if let Some(n) = request.options.max_tokens {
        body["max_tokens"] = json!(n);
    }
    body
}

/// History in the OpenAI format: arguments as JSON strings, results matched by `tool_call_id`.
/// Calls without an id (Ollama's, or recovered from text) get a stable one here, and a result
/// without an id takes the id of the first unanswered call of the same tool.
pub(crate) fn messages_to_wire(messages: &[Message], echo_reasoning: bool) -> Vec<Value> {
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut out = Vec::with_capacity(messages.len());
    for (i, message) in messages.iter().enumerate() {
        out.push(match message {
            Message::System { content } => json!({"role": "system", "content": content}),
            Message::User { content } => json!({"role": "user", "content": content}),
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

/// A call being assembled from `delta.tool_calls` fragments.
struct PartialCall {
    index: i64,
    id: Option<String>,
    name: String,
    arguments: String,
    /// A server that sent arguments as an object instead of a string.
    arguments_value: Option<Value>,
}

#[derive(Default)]
pub(crate) struct OpenAiDecoder {
    events: SseDecoder,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    failed: bool,
}

impl OpenAiDecoder {
    fn event(&mut self, event: SseEvent, out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        if self.done || self.failed {
            return;
        }
        let data = event.data.trim();
        if data == "[DONE]" {
            self.end(out);
            return;
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) if event.event.as_deref() == Some("error") => {
                self.fail(ProviderError::MidStream(format!("{data} ({e})")), out);
                return;
            }
            Err(e) => {
                let text = super::error::cut(data, 200);
                self.fail(
                    ProviderError::Protocol(format!("{e} in event '{text}'")),
                    out,
                );
                return;
            }
        };
        if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
            let message = error["message"]
                .as_str()
                .or_else(|| error.as_str())
                .map(str::to_string);
            self.fail(
                ProviderError::MidStream(message.unwrap_or_else(|| error.to_string())),
                out,
            );
            return;
        }
        if event.event.as_deref() == Some("error") {
            self.fail(ProviderError::MidStream(data.to_string()), out);
            return;
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(Usage {
                prompt_tokens: usage["prompt_tokens"].as_u64(),
                completion_tokens: usage["completion_tokens"].as_u64(),
            });
        }
        let Some(choice) = value["choices"].as_array().and_then(|c| c.first()) else {
            return;
        };
        let delta = &choice["delta"];
        // Servers name reasoning differently; some send two names with the same text.
        let reasoning = ["reasoning_content", "reasoning", "thinking"]
            .iter()
            .find_map(|k| delta[*k].as_str().filter(|s| !s.is_empty()));
        if let Some(reasoning) = reasoning {
            out.push_back(Ok(Chunk::Thinking(reasoning.to_string())));
        }
        if let Some(content) = delta["content"].as_str().filter(|s| !s.is_empty()) {
            out.push_back(Ok(Chunk::Text(content.to_string())));
        }
        if let Some(fragments) = delta["tool_calls"].as_array() {
            for fragment in fragments {
                self.fragment(fragment);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
    }

    /// Adds one `tool_calls` fragment: `index` says which call; a new non-empty id on an index
    /// already seen starts another call (servers that put every call at index 0).
    fn fragment(&mut self, fragment: &Value) {
        let index = fragment["index"]
            .as_i64()
            .or_else(|| self.calls.last().map(|c| c.index))
            .unwrap_or(0);
        let id = fragment["id"].as_str().filter(|s| !s.is_empty());
        let function = &fragment["function"];
        let existing = self.calls.iter().rposition(|c| c.index == index);
        let at = match (existing, id) {
            (Some(at), Some(id)) if self.calls[at].id.as_deref().is_some_and(|old| old != id) => {
                None
            }
            (found, _) => found,
        };
        let call = match at {
            Some(at) => &mut self.calls[at],
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                    arguments_value: None,
                });
                self.calls.last_mut().expect("just pushed")
            }
        };
        if call.id.is_none() {
            call.id = id.map(str::to_string);
        }
        if let Some(name) = function["name"].as_str() {
            // The name arrives once; a server that repeats it whole must not double it.
            if call.name != name {
                call.name.push_str(name);
            }
        }
        match &function["arguments"] {
            Value::String(s) => call.arguments.push_str(s),
            Value::Null => {}
            other => call.arguments_value = Some(other.clone()),
        }
    }

    fn end(&mut self, out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        self.done = true;
        for call in std::mem::take(&mut self.calls) {
            let arguments = match call.arguments_value {
                Some(v) => v,
                None if call.arguments.trim().is_empty() => json!({}),
                // A string that does not parse (cut off, single quotes) is kept whole for the
                // parser's repair, which also marks a truncation.
                None => {
                    serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments))
                }
            };
            out.push_back(Ok(Chunk::ToolCall(ToolCall {
                id: call.id,
                name: call.name,
                arguments,
            })));
        }
        out.push_back(Ok(Chunk::Done(Done {
            finish_reason: self.finish_reason.take(),
            usage: self.usage.take(),
        })));
    }

    fn fail(&mut self, error: ProviderError, out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        self.failed = true;
        out.push_back(Err(error));
    }
}

impl WireDecoder for OpenAiDecoder {
    fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        let mut events = std::mem::take(&mut self.events);
        events.feed(bytes, |e| self.event(e, out));
        self.events = events;
    }

    fn finish(&mut self, out: &mut VecDeque<Result<Chunk, ProviderError>>) {
        let mut events = std::mem::take(&mut self.events);
        events.finish(|e| self.event(e, out));
        if !self.done && !self.failed {
            if self.finish_reason.is_some() {
                // Some servers close after the finish reason without `[DONE]`.
                self.end(out);
            } else {
                self.fail(
                    ProviderError::MidStream("the stream ended before the model finished".into()),
                    out,
                );
            }
        }
    }

    fn is_finished(&self) -> bool {
        self.done || self.failed
    }
}

impl Provider for OpenAiProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::OpenAi
    }

    fn base_url(&self) -> &str {
        self.http.base_url()
    }

    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>> {
        // No standard way to ask; assume tools until the server refuses them.
        let refused = self
            .no_tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(model);
        Box::pin(async move {
            Ok(Capabilities {
                tools: !refused,
                thinking: true,
                context_length: None,
            })
        })
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

    fn decode(text: &str) -> Vec<Result<Chunk, ProviderError>> {
        let mut d = OpenAiDecoder::default();
        let mut out = VecDeque::new();
        d.feed(text.as_bytes(), &mut out);
        d.finish(&mut out);
        out.into_iter().collect()
    }

    fn delta(d: Value) -> String {
        format!(
            "data: {}\n\n",
            json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]})
        )
    }

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
    fn fragments_join_per_index_and_a_new_id_starts_a_new_call() {
        let text = [
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "read_file", "arguments": ""}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "grep", "arguments": "{}"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"x\"}"}}]})),
            // Same index 0, different id: a third call.
            delta(json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "list_files", "arguments": ""}}]})),
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n".to_string(),
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n".to_string(),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let chunks: Vec<Chunk> = decode(&text).into_iter().map(Result::unwrap).collect();
        let call = |id: &str, name: &str, args: Value| {
            Chunk::ToolCall(ToolCall {
                id: Some(id.into()),
                name: name.into(),
                arguments: args,
            })
        };
        assert_eq!(chunks[0], call("a", "read_file", json!({"path": "x"})));
        assert_eq!(chunks[1], call("b", "grep", json!({})));
        assert_eq!(chunks[2], call("c", "list_files", json!({})));
        assert_eq!(
            chunks[3],
            Chunk::Done(Done {
                finish_reason: Some("tool_calls".into()),
                usage: Some(Usage {
                    prompt_tokens: Some(7),
                    completion_tokens: Some(3)
                })
            })
        );
    }

    #[test]
    fn reasoning_under_any_name_and_only_once() {
        let text = [
            delta(json!({"reasoning_content": "a"})),
            delta(json!({"reasoning": "b"})),
            delta(json!({"thinking": "c"})),
            delta(json!({"reasoning": "d", "reasoning_content": "d"})),
            delta(json!({"content": "x", "reasoning_content": null})),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let chunks: Vec<Chunk> = decode(&text).into_iter().map(Result::unwrap).collect();
        let thinking: Vec<&Chunk> = chunks
            .iter()
            .filter(|c| matches!(c, Chunk::Thinking(_)))
            .collect();
        assert_eq!(thinking.len(), 4);
        assert_eq!(chunks[4], Chunk::Text("x".into()));
    }

    #[test]
    fn errors_mid_stream_and_at_the_end() {
        let out = decode(&format!(
            "{}data: {{\"error\":{{\"message\":\"overloaded\"}}}}\n\n",
            delta(json!({"content": "a"}))
        ));
        assert!(matches!(&out[1], Err(ProviderError::MidStream(m)) if m == "overloaded"));
        let out = decode("event: error\ndata: boom\n\n");
        assert!(matches!(&out[0], Err(ProviderError::MidStream(m)) if m.starts_with("boom")));
        let out = decode(&delta(json!({"content": "cut"})));
        assert!(matches!(out.last(), Some(Err(ProviderError::MidStream(_)))));
        // A finish reason without [DONE] is a complete answer.
        let out = decode(
            "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\"}]}\n\n",
        );
        assert!(matches!(out.last(), Some(Ok(Chunk::Done(_)))));
    }

    #[test]
    fn unparsable_arguments_are_kept_for_repair() {
        let text = [
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "write_file", "arguments": "{\"content\": \"abc"}}]})),
            "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n".to_string(),
        ]
        .concat();
        let out = decode(&text);
        assert!(
            matches!(&out[0], Ok(Chunk::ToolCall(c)) if c.arguments == Value::String("{\"content\": \"abc".into()))
        );
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
    }
}
