//! The OpenAI-compatible wire format: SSE chat completion chunks, `/v1/models`, error bodies.

use crate::script::Response;
use serde_json::{Value, json};

/// A streamed `/chat/completions` reply being built: one SSE event per call.
#[derive(Debug, Clone)]
pub struct OpenAiTurn {
    model: String,
    events: Vec<String>,
    newline: &'static str,
    started: bool,
}

/// Starts a streamed chat reply from `model`. The first delta carries `role: assistant`, as
/// vLLM and llama.cpp send it.
pub fn turn(model: &str) -> OpenAiTurn {
    OpenAiTurn {
        model: model.to_string(),
        events: Vec::new(),
        newline: "\n",
        started: false,
    }
}

impl OpenAiTurn {
    /// Ends lines with `\r\n` instead of `\n` (both are valid SSE).
    pub fn crlf(mut self) -> Self {
        self.newline = "\r\n";
        self
    }

    fn chunk(mut self, mut delta: Value, finish_reason: Option<&str>) -> Self {
        if !self.started {
            delta["role"] = json!("assistant");
            self.started = true;
        }
        let chunk = json!({
            "id": "chatcmpl-scripted",
            "object": "chat.completion.chunk",
            "created": 1_735_689_600u64,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish_reason}],
        });
        self.data(&chunk.to_string())
    }

    /// An event `data: <payload>` followed by a blank line.
    fn data(mut self, payload: &str) -> Self {
        let nl = self.newline;
        self.events.push(format!("data: {payload}{nl}{nl}"));
        self
    }

    /// A content delta.
    pub fn text(self, text: &str) -> Self {
        self.chunk(json!({"content": text}), None)
    }

    /// A reasoning delta under `reasoning_content` (vLLM, llama.cpp, DeepSeek).
    pub fn reasoning(self, text: &str) -> Self {
        self.reasoning_under("reasoning_content", text)
    }

    /// A reasoning delta under another field name (`reasoning` for Ollama's `/v1` and
    /// OpenRouter, `thinking` for some proxies).
    pub fn reasoning_under(self, field: &str, text: &str) -> Self {
        let mut delta = json!({"content": null});
        delta[field] = json!(text);
        self.chunk(delta, None)
    }

    /// The first fragment of a tool call: id and name, empty arguments.
    pub fn tool_call_start(self, index: usize, id: &str, name: &str) -> Self {
        self.chunk(
            json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}}]}),
            None,
        )
    }

    /// A later fragment of a tool call's arguments.
    pub fn tool_call_arguments(self, index: usize, fragment: &str) -> Self {
        self.chunk(
            json!({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]}),
            None,
        )
    }

    /// A whole tool call streamed as a start then one delta per argument fragment.
    pub fn tool_call(mut self, index: usize, id: &str, name: &str, fragments: &[&str]) -> Self {
        self = self.tool_call_start(index, id, name);
        for fragment in fragments {
            self = self.tool_call_arguments(index, fragment);
        }
        self
    }

    /// A raw `delta` object (for shapes the helpers do not cover).
    pub fn delta(self, delta: Value) -> Self {
        self.chunk(delta, None)
    }

    /// A final chunk with an empty delta and `finish_reason`.
    pub fn finish(self, reason: &str) -> Self {
        self.chunk(json!({}), Some(reason))
    }

    /// The usage chunk (`choices: []`), as sent with `stream_options.include_usage`.
    pub fn usage(self, prompt_tokens: u64, completion_tokens: u64) -> Self {
        let chunk = json!({
            "id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 1_735_689_600u64,
            "model": self.model, "choices": [],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens},
        });
        self.data(&chunk.to_string())
    }

    /// A mid-stream error event: `data: {"error": {"message": ...}}`.
    pub fn error(self, message: &str) -> Self {
        let payload = json!({"error": {"message": message, "type": "server_error", "code": 500}});
        self.data(&payload.to_string())
    }

    /// A comment line (`: ...`), which clients must ignore.
    pub fn comment(mut self, text: &str) -> Self {
        let nl = self.newline;
        self.events.push(format!(": {text}{nl}{nl}"));
        self
    }

    /// Any text, sent as given.
    pub fn raw(mut self, text: &str) -> Self {
        self.events.push(text.to_string());
        self
    }

    /// The events so far.
    pub fn events(&self) -> &[String] {
        &self.events
    }

    /// Ends with `data: [DONE]` and returns the response, one HTTP chunk per event.
    pub fn done(self) -> Response {
        let nl = self.newline;
        let done = format!("data: [DONE]{nl}{nl}");
        self.raw(&done).unfinished()
    }

    /// The response with the events so far and no `[DONE]`.
    pub fn unfinished(self) -> Response {
        let mut response = Response::new(200)
            .header("content-type", "text/event-stream")
            .header("cache-control", "no-cache");
        for event in self.events {
            response = response.text(event);
        }
        response
    }
}

/// `/v1/models`: the models the server serves.
pub fn models(models: &[&str]) -> Response {
    let data: Vec<Value> = models
        .iter()
        .map(|m| json!({"id": m, "object": "model", "created": 1_735_689_600u64, "owned_by": "scripted"}))
        .collect();
    Response::json(200, &json!({"object": "list", "data": data}))
}

/// vLLM's `/v1/models`: each model with its `max_model_len` (the window it serves).
pub fn vllm_models(models: &[(&str, u64)]) -> Response {
    let data: Vec<Value> = models
        .iter()
        .map(|(m, len)| {
            json!({"id": m, "object": "model", "created": 1_735_689_600u64, "owned_by": "vllm",
                "root": m, "parent": null, "max_model_len": len,
                "permission": [{"id": "modelperm-scripted", "object": "model_permission"}]})
        })
        .collect();
    Response::json(200, &json!({"object": "list", "data": data}))
}

/// llama.cpp's `/props` for a server started with `-c n_ctx` (one slot): the slot's window
/// under `default_generation_settings.n_ctx`, as current builds answer.
pub fn llama_cpp_props(n_ctx: u64) -> Response {
    Response::json(
        200,
        &json!({
            "default_generation_settings": {"id": 0, "id_task": -1, "n_ctx": n_ctx,
                "speculative": false, "is_processing": false,
                "params": {"n_predict": -1, "temperature": 0.8, "top_k": 40, "top_p": 0.95}},
            "total_slots": 1,
            "model_path": "/models/scripted.gguf",
            "chat_template": "{{ messages }}",
            "modalities": {"vision": false, "audio": false},
            "build_info": "b6000-scripted",
        }),
    )
}

/// LM Studio's `/api/v0/models`: each model `(id, max_context_length, loaded_context_length)`,
/// the last only for a loaded model.
pub fn lmstudio_models(models: &[(&str, u64, Option<u64>)]) -> Response {
    let data: Vec<Value> = models
        .iter()
        .map(|(id, max, loaded)| {
            let mut model = json!({"id": id, "object": "model", "type": "llm",
                "publisher": "scripted", "arch": "llama", "compatibility_type": "gguf",
                "quantization": "Q4_K_M", "state": if loaded.is_some() { "loaded" } else { "not-loaded" },
                "max_context_length": max});
            if let Some(loaded) = loaded {
                model["loaded_context_length"] = json!(loaded);
            }
            model
        })
        .collect();
    Response::json(200, &json!({"object": "list", "data": data}))
}

/// An error body in the OpenAI shape: `{"error": {"message", "type", "code"}}`.
pub fn error(status: u16, message: &str) -> Response {
    Response::json(
        status,
        &json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
    )
}

/// vLLM's answer to a request with tools when it was started without tool parsing.
pub fn vllm_tools_unsupported() -> Response {
    Response::json(
        400,
        &json!({"object": "error",
            "message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set",
            "type": "BadRequestError", "param": null, "code": 400}),
    )
}

/// llama.cpp's server (`llama-server`) refusing a prompt of `prompt_tokens` tokens for a slot
/// of `n_ctx`: 400 with its own error type and the two counts.
pub fn llama_cpp_overflow(prompt_tokens: u64, n_ctx: u64) -> Response {
    Response::json(
        400,
        &json!({"error": {"code": 400,
            "message": format!("request ({prompt_tokens} tokens) exceeds the available context size ({n_ctx} tokens), try increasing it"),
            "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens, "n_ctx": n_ctx}}),
    )
}

/// vLLM refusing `prompt_tokens` of messages plus `completion_tokens` of output for a model of
/// `max_model_len`: 400 in its `{"object": "error", ...}` shape.
pub fn vllm_overflow(max_model_len: u64, prompt_tokens: u64, completion_tokens: u64) -> Response {
    let total = prompt_tokens + completion_tokens;
    Response::json(
        400,
        &json!({"object": "error",
            "message": format!("This model's maximum context length is {max_model_len} tokens. However, you requested {total} tokens ({prompt_tokens} in the messages, {completion_tokens} in the completion). Please reduce the length of the messages or completion."),
            "type": "BadRequestError", "param": null, "code": 400}),
    )
}

/// LM Studio refusing a prompt of `prompt_tokens` for a model loaded with `context_length`:
/// 400 with its message as a plain `{"error": "..."}`.
pub fn lmstudio_overflow(prompt_tokens: u64, context_length: u64) -> Response {
    Response::json(
        400,
        &json!({"error": format!("Trying to keep the first {prompt_tokens} tokens when context the overflows. However, the model is loaded with context length of only {context_length} tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input")}),
    )
}

/// What an OpenAI-compatible server answers for a model it does not serve.
pub fn model_not_found(model: &str) -> Response {
    Response::json(
        404,
        &json!({"error": {"message": format!("The model `{model}` does not exist."),
            "type": "NotFoundError", "param": null, "code": 404}}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_sse_in_openais_shape() {
        let response = turn("m")
            .text("Hi")
            .tool_call(0, "call_1", "read_file", &["{\"pa", "th\":\"a\"}"])
            .finish("tool_calls")
            .usage(3, 4)
            .done();
        let body = String::from_utf8(response.body_bytes()).unwrap();
        let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 7);
        let first: Value = serde_json::from_str(events[0].strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(first["choices"][0]["delta"]["content"], "Hi");
        assert_eq!(events[6], "data: [DONE]");
    }

    #[test]
    fn crlf_turn_uses_crlf() {
        let body = String::from_utf8(turn("m").crlf().text("x").done().body_bytes()).unwrap();
        assert!(body.ends_with("data: [DONE]\r\n\r\n"));
        assert!(!body.replace("\r\n", "").contains('\n'));
    }
}
