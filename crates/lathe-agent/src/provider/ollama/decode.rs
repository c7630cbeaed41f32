//! Ollama's NDJSON lines to chunks: thinking, content, whole tool calls, the `done` line, and
//! `{"error": ...}` lines.

use crate::message::ToolCall;
use crate::provider::error::ProviderError;
use crate::provider::http::WireDecoder;
use crate::provider::ndjson::NdjsonDecoder;
use crate::provider::partial::{PartialCall, path_of};
use crate::provider::{Chunk, Done, Usage};
use serde_json::{Value, json};
use std::collections::VecDeque;

/// Ollama's NDJSON lines to chunks.
#[derive(Default)]
pub(crate) struct OllamaDecoder {
    lines: NdjsonDecoder,
    done: bool,
    failed: bool,
    /// Calls seen so far.
    calls: usize,
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
                let text = crate::text::cut(&String::from_utf8_lossy(line), 200);
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
                let call = tool_call(call);
                out.push_back(Ok(Chunk::PartialCall(PartialCall {
                    index: self.calls,
                    name: call.name.clone(),
                    path: path_of(&call.arguments),
                })));
                self.calls += 1;
                out.push_back(Ok(Chunk::ToolCall(call)));
            }
        }
        if value["done"].as_bool() == Some(true) {
            self.done = true;
            let usage = (value.get("prompt_eval_count").is_some()
                || value.get("eval_count").is_some())
            .then(|| Usage {
                prompt_tokens: value["prompt_eval_count"].as_u64(),
                completion_tokens: value["eval_count"].as_u64(),
                // Nanoseconds.
                generation_ms: value["eval_duration"].as_u64().map(|ns| ns / 1_000_000),
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
            out.push_back(Err(ProviderError::ConnectionLost(
                "the stream ended before the model finished".into(),
            )));
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

    fn decode(bytes: &[u8]) -> Vec<Result<Chunk, ProviderError>> {
        let mut d = OllamaDecoder::default();
        let mut out = VecDeque::new();
        d.feed(bytes, &mut out);
        d.finish(&mut out);
        out.into_iter().collect()
    }

    #[test]
    fn a_whole_call_is_announced_with_its_path() {
        let out = decode(
            b"{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"write_file\",\"arguments\":{\"content\":\"x\",\"path\":\"notes.md\"}}}]},\"done\":false}\n",
        );
        assert_eq!(
            out[0].as_ref().unwrap(),
            &Chunk::PartialCall(PartialCall {
                index: 0,
                name: "write_file".into(),
                path: Some("notes.md".into())
            })
        );
        assert!(matches!(out[1], Ok(Chunk::ToolCall(_))));
    }

    #[test]
    fn lines_to_chunks() {
        let out = decode(
            b"{\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":\"hm\"},\"done\":false}\n\
              {\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"done\":false}\n\
              {\"message\":{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1}}},{\"id\":\"c2\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"b\\\":2}\"}}]},\"done\":false}\n\
              {\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\",\"eval_count\":5}\n",
        );
        let all: Vec<Chunk> = out.into_iter().map(Result::unwrap).collect();
        // Each whole call is announced just before it, with its position.
        let partial = |index, name: &str| {
            Chunk::PartialCall(PartialCall {
                index,
                name: name.into(),
                path: None,
            })
        };
        assert_eq!(all[2], partial(0, "f"));
        assert_eq!(all[4], partial(1, "g"));
        let chunks: Vec<Chunk> = all
            .into_iter()
            .filter(|c| !matches!(c, Chunk::PartialCall(_)))
            .collect();
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
                    completion_tokens: Some(5),
                    ..Usage::default()
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
        assert!(matches!(
            out.last(),
            Some(Err(ProviderError::ConnectionLost(_)))
        ));
        let out = decode(b"<html>oops</html>\n");
        assert!(matches!(out.as_slice(), [Err(ProviderError::Protocol(_))]));
    }
}
