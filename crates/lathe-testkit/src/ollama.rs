//! Ollama's native wire format: NDJSON chat turns, `/api/tags`, `/api/show`, error bodies.
//!
//! The lines are built here independently of Lathe's own client, in the shape Ollama writes
//! them, so tests check the client against the format rather than against itself.

use crate::script::Response;
use serde_json::{Value, json};

const CREATED_AT: &str = "2025-01-01T00:00:00.000000Z";

/// A streamed `/api/chat` reply being built: one NDJSON line per call.
#[derive(Debug, Clone)]
pub struct OllamaTurn {
    model: String,
    lines: Vec<String>,
}

/// Starts a streamed chat reply from `model`.
pub fn turn(model: &str) -> OllamaTurn {
    OllamaTurn {
        model: model.to_string(),
        lines: Vec::new(),
    }
}

impl OllamaTurn {
    fn message(mut self, message: Value) -> Self {
        let line = json!({
            "model": self.model,
            "created_at": CREATED_AT,
            "message": message,
            "done": false,
        });
        self.lines.push(format!("{line}\n"));
        self
    }

    /// A content chunk.
    pub fn text(self, text: &str) -> Self {
        self.message(json!({"role": "assistant", "content": text}))
    }

    /// A thinking chunk (what Ollama sends with `think: true`).
    pub fn thinking(self, text: &str) -> Self {
        self.message(json!({"role": "assistant", "content": "", "thinking": text}))
    }

    /// One chunk carrying one tool call, `arguments` as an object, without an id.
    pub fn tool_call(self, name: &str, arguments: Value) -> Self {
        self.tool_calls(&[(None, name, arguments)])
    }

    /// One chunk carrying one tool call with an id (newer Ollama versions send one).
    pub fn tool_call_with_id(self, id: &str, name: &str, arguments: Value) -> Self {
        self.tool_calls(&[(Some(id), name, arguments)])
    }

    /// One chunk carrying several tool calls: `(id, name, arguments)`.
    pub fn tool_calls(self, calls: &[(Option<&str>, &str, Value)]) -> Self {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(index, (id, name, arguments))| {
                let mut call =
                    json!({"function": {"index": index, "name": name, "arguments": arguments}});
                if let Some(id) = id {
                    call["id"] = json!(id);
                }
                call
            })
            .collect();
        self.message(json!({"role": "assistant", "content": "", "tool_calls": calls}))
    }

    /// A mid-stream error line: `{"error": "..."}`.
    pub fn error(mut self, message: &str) -> Self {
        self.lines
            .push(format!("{}\n", json!({ "error": message })));
        self
    }

    /// Any line, sent as given (a newline is added when missing).
    pub fn raw_line(mut self, line: &str) -> Self {
        let mut line = line.to_string();
        if !line.ends_with('\n') {
            line.push('\n');
        }
        self.lines.push(line);
        self
    }

    /// The lines so far.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Ends with a `done: true` line (`done_reason: "stop"`, token counts) and returns the
    /// response, one HTTP chunk per line.
    pub fn done(self) -> Response {
        self.done_with("stop", Some((26, 12)))
    }

    /// Ends with a `done: true` line with `done_reason` and, when given, `(prompt_eval_count,
    /// eval_count)`; without counts the fields are left out.
    pub fn done_with(mut self, reason: &str, counts: Option<(u64, u64)>) -> Response {
        let mut line = json!({
            "model": self.model,
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": ""},
            "done": true,
            "done_reason": reason,
        });
        if let Some((prompt, eval)) = counts {
            line["total_duration"] = json!(4_883_583_458u64);
            line["load_duration"] = json!(1_334_875u64);
            line["prompt_eval_count"] = json!(prompt);
            line["prompt_eval_duration"] = json!(342_546_000u64);
            line["eval_count"] = json!(eval);
            line["eval_duration"] = json!(4_535_599_000u64);
        }
        self.lines.push(format!("{line}\n"));
        self.unfinished()
    }

    /// The lines so far, then a content chunk of `text` sent over and over until `max_bytes`
    /// were sent or the client hangs up (a model that never stops), then a `done` line.
    pub fn repeating(self, text: &str, max_bytes: u64) -> Response {
        let line = json!({
            "model": self.model,
            "created_at": CREATED_AT,
            "message": {"role": "assistant", "content": text},
            "done": false,
        });
        let done = turn(&self.model).done();
        let mut response = self.unfinished().repeat(format!("{line}\n"), max_bytes);
        response.parts.extend(done.parts);
        response
    }

    /// The response with the lines so far and no `done` line.
    pub fn unfinished(self) -> Response {
        let mut response = Response::new(200).header("content-type", "application/x-ndjson");
        for line in self.lines {
            response = response.text(line);
        }
        response
    }
}

/// `/api/tags`: the models the server has.
pub fn tags(models: &[&str]) -> Response {
    let models: Vec<Value> = models
        .iter()
        .map(|m| {
            json!({
                "name": m, "model": m, "modified_at": CREATED_AT, "size": 1_000_000u64,
                "digest": "0".repeat(64),
                "details": {"format": "gguf", "family": "llama", "parameter_size": "8B", "quantization_level": "Q4_K_M"}
            })
        })
        .collect();
    Response::json(200, &json!({ "models": models }))
}

/// `/api/show`: a model with `capabilities` and, when given, a context length in `model_info`.
pub fn show(capabilities: &[&str], context_length: Option<u64>) -> Response {
    let mut body = json!({
        "modelfile": "FROM scripted",
        "parameters": "",
        "template": "{{ .Prompt }}",
        "details": {"format": "gguf", "family": "llama", "parameter_size": "8B", "quantization_level": "Q4_K_M"},
        "model_info": {"general.architecture": "llama"},
        "capabilities": capabilities,
    });
    if let Some(len) = context_length {
        body["model_info"]["llama.context_length"] = json!(len);
    }
    Response::json(200, &body)
}

/// An error response in Ollama's shape: `{"error": "..."}` with `status`.
pub fn error(status: u16, message: &str) -> Response {
    Response::json(status, &json!({ "error": message }))
}

/// What Ollama answers on `/api/chat` or `/api/show` for a model it does not have.
pub fn model_not_found(model: &str) -> Response {
    error(
        404,
        &format!("model \"{model}\" not found, try pulling it first"),
    )
}

/// What Ollama answers for a prompt longer than the model's `num_ctx` when it does not
/// truncate it: 400, with no counts.
pub fn context_overflow() -> Response {
    error(400, "the input length exceeds the context length")
}

/// What Ollama answers when the request has `tools` and the model's template has none.
pub fn tools_unsupported(model: &str) -> Response {
    error(
        400,
        &format!("registry.ollama.ai/library/{model} does not support tools"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_ndjson_in_ollamas_shape() {
        let response = turn("m")
            .thinking("hm")
            .text("Hi")
            .tool_call_with_id("call_1", "read_file", json!({"path": "a"}))
            .done();
        let body = String::from_utf8(response.body_bytes()).unwrap();
        let lines: Vec<Value> = body
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["message"]["thinking"], "hm");
        assert_eq!(lines[1]["message"]["content"], "Hi");
        assert_eq!(lines[2]["message"]["tool_calls"][0]["id"], "call_1");
        assert_eq!(
            lines[2]["message"]["tool_calls"][0]["function"]["arguments"]["path"],
            "a"
        );
        assert_eq!(lines[3]["done"], true);
        assert_eq!(lines[3]["eval_count"], 12);
        assert_eq!(response.parts.len(), 4);
    }

    #[test]
    fn done_without_counts_leaves_them_out() {
        let body = String::from_utf8(turn("m").done_with("length", None).body_bytes()).unwrap();
        let line: Value = serde_json::from_str(body.trim()).unwrap();
        assert_eq!(line["done_reason"], "length");
        assert!(line.get("eval_count").is_none());
    }
}
