//! OpenAI SSE events to chunks: content, reasoning under any of its names, tool calls
//! assembled from `delta.tool_calls` fragments, usage, the finish reason, errors.

use crate::message::ToolCall;
use crate::provider::error::ProviderError;
use crate::provider::http::WireDecoder;
use crate::provider::partial::{PartialCall, PathScan, path_of};
use crate::provider::sse::{SseDecoder, SseEvent};
use crate::provider::{Chunk, Done, Usage};
use serde_json::{Value, json};
use std::collections::VecDeque;

/// A call being assembled from `delta.tool_calls` fragments.
struct Assembling {
    index: i64,
    id: Option<String>,
    name: String,
    arguments: String,
    /// A server that sent arguments as an object instead of a string.
    arguments_value: Option<Value>,
    /// Looks for the file the call works on as the arguments stream in.
    scan: PathScan,
    /// Whether the user was told of the call (by name), and of its path.
    told_name: bool,
    told_path: bool,
}

#[derive(Default)]
pub(crate) struct OpenAiDecoder {
    events: SseDecoder,
    calls: Vec<Assembling>,
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
                let text = crate::text::cut(data, 200);
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
                generation_ms: self.usage.and_then(|u| u.generation_ms),
            });
        }
        // llama.cpp times the generation itself, in the last chunks.
        if let Some(ms) = value["timings"]["predicted_ms"]
            .as_f64()
            .filter(|ms| *ms > 0.0)
        {
            let usage = self.usage.get_or_insert_with(Usage::default);
            usage.generation_ms = Some(ms.round() as u64);
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
                self.fragment(fragment, out);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.finish_reason = Some(reason.to_string());
        }
    }

    /// Adds one `tool_calls` fragment: `index` says which call; a new non-empty id on an index
    /// already seen starts another call (servers that put every call at index 0).
    fn fragment(&mut self, fragment: &Value, out: &mut VecDeque<Result<Chunk, ProviderError>>) {
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
        let position = at.unwrap_or(self.calls.len());
        let call = match at {
            Some(at) => &mut self.calls[at],
            None => {
                self.calls.push(Assembling {
                    index,
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                    arguments_value: None,
                    scan: PathScan::default(),
                    told_name: false,
                    told_path: false,
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
        let mut path = None;
        match &function["arguments"] {
            Value::String(s) => {
                call.arguments.push_str(s);
                path = call.scan.feed(s);
            }
            Value::Null => {}
            other => {
                call.arguments_value = Some(other.clone());
                path = path_of(other);
            }
        }
        if call.name.is_empty() || call.told_path {
            return;
        }
        if path.is_some() || !call.told_name {
            call.told_name = true;
            call.told_path = path.is_some();
            out.push_back(Ok(Chunk::PartialCall(PartialCall {
                index: position,
                name: call.name.clone(),
                path,
            })));
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
                    ProviderError::ConnectionLost(
                        "the stream ended before the model finished".into(),
                    ),
                    out,
                );
            }
        }
    }

    fn is_finished(&self) -> bool {
        self.done || self.failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let chunks: Vec<Chunk> = decode(&text)
            .into_iter()
            .map(Result::unwrap)
            .filter(|c| !matches!(c, Chunk::PartialCall(_)))
            .collect();
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
                    completion_tokens: Some(3),
                    ..Usage::default()
                })
            })
        );
    }

    #[test]
    fn a_streaming_call_is_announced_by_name_then_once_its_path_is_whole() {
        let text = [
            delta(json!({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "write_file", "arguments": ""}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\": \"no"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "tes.md\", \"content\": \""}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "# Notes\\n\"}"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "grep", "arguments": "{\"pattern\": \"x\"}"}}]})),
            "data: [DONE]\n\n".to_string(),
        ]
        .concat();
        let partial: Vec<PartialCall> = decode(&text)
            .into_iter()
            .filter_map(|c| match c {
                Ok(Chunk::PartialCall(p)) => Some(p),
                _ => None,
            })
            .collect();
        let call = |index, name: &str, path: Option<&str>| PartialCall {
            index,
            name: name.into(),
            path: path.map(str::to_string),
        };
        assert_eq!(
            partial,
            [
                call(0, "write_file", None),
                call(0, "write_file", Some("notes.md")),
                call(1, "grep", None),
            ]
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
        assert!(matches!(
            out.last(),
            Some(Err(ProviderError::ConnectionLost(_)))
        ));
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
        let out: Vec<_> = decode(&text)
            .into_iter()
            .filter(|c| !matches!(c, Ok(Chunk::PartialCall(_))))
            .collect();
        assert!(
            matches!(&out[0], Ok(Chunk::ToolCall(c)) if c.arguments == Value::String("{\"content\": \"abc".into()))
        );
    }
}
