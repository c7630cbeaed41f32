//! What one line of input is: a message for the SDK, a line to answer with a JSON-RPC error, or
//! nothing to answer.
//!
//! Unparsable text gets `-32700`; JSON that is not a message gets `-32600`, with the request's id
//! when it can be read; a known method whose params do not fit gets `-32602`. Malformed
//! notifications and responses are never answered (JSON-RPC forbids it).

use rmcp::service::{RoleServer, RxJsonRpcMessage};
use serde_json::{Value, json};

const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// What one input line turned out to be.
#[derive(Debug)]
pub enum Incoming {
    /// A message for the SDK.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Not a message: answer with this JSON-RPC error and read on.
    Reply(Value),
    /// Nothing to answer (a blank line, a malformed notification or response): log why.
    Ignore(String),
}

/// How messages arrive, for the hints of the errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One message per line (stdio).
    Lines,
    /// One message per HTTP request body.
    Http,
}

impl Framing {
    fn one_message(self) -> &'static str {
        match self {
            Framing::Lines => "each message must be one JSON-RPC 2.0 object on a single line",
            Framing::Http => "the body must be one JSON-RPC 2.0 object",
        }
    }
}

/// Requests that reach this server and that it answers: what `-32601` lists.
pub const SERVED_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "logging/setLevel",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
];

/// Requests of MCP that this server does not implement (their capabilities are not declared).
const UNSERVED_REQUESTS: &[&str] = &[
    "completion/complete",
    "resources/subscribe",
    "resources/unsubscribe",
];

fn method_not_found(id: Value, method: &str) -> Value {
    let what = if UNSERVED_REQUESTS.contains(&method) {
        format!("`{method}` is part of MCP, but this server does not offer it")
    } else {
        format!("`{method}` is not an MCP method this server knows")
    };
    error_reply(
        id,
        -32601,
        format!(
            "method not found: {what}. The methods it serves: {}. Lathe's tools are called with \
             `tools/call` (list them with `tools/list`)",
            SERVED_REQUESTS.join(", ")
        ),
    )
}

/// Classifies one message (a line without its newline, or an HTTP body).
pub fn classify(line: &[u8], framing: Framing) -> Incoming {
    let line = line.strip_prefix(UTF8_BOM).unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Incoming::Ignore("blank line".into());
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(err) => {
            return Incoming::Reply(error_reply(
                Value::Null,
                -32700,
                format!("parse error: {err}; {}", framing.one_message()),
            ));
        }
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() {
            format!(
                "batches are not supported; send one JSON-RPC object {}",
                match framing {
                    Framing::Lines => "per line",
                    Framing::Http => "per request",
                }
            )
        } else {
            format!(
                "invalid request: expected a JSON-RPC 2.0 object, got {}",
                kind_of(&value)
            )
        };
        return Incoming::Reply(error_reply(Value::Null, -32600, what));
    };
    let id = object
        .get("id")
        .filter(|id| id.is_string() || id.as_i64().is_some())
        .cloned();
    let method = object
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return reply_or_ignore(
            id,
            method.is_some(),
            -32600,
            "invalid request: `jsonrpc` must be \"2.0\"".into(),
        );
    }
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(message) => match misread_request(&message, object) {
            Some(reply) => Incoming::Reply(reply),
            None => Incoming::Message(Box::new(message)),
        },
        Err(err) => match (&method, &id) {
            (Some(method), Some(_)) => Incoming::Reply(error_reply(
                id.clone().unwrap_or(Value::Null),
                -32602,
                format!("invalid params for `{method}`: {err}"),
            )),
            (Some(method), None) if object.contains_key("id") => Incoming::Reply(error_reply(
                Value::Null,
                -32600,
                format!("invalid request `{method}`: the id must be a string or an integer"),
            )),
            (Some(method), None) => {
                Incoming::Ignore(format!("malformed notification `{method}` ignored: {err}"))
            }
            (None, _) if object.contains_key("result") || object.contains_key("error") => {
                Incoming::Ignore(format!("malformed response ignored: {err}"))
            }
            (None, _) => Incoming::Reply(error_reply(
                id.unwrap_or(Value::Null),
                -32600,
                "invalid request: a request needs a string `method`".into(),
            )),
        },
    }
}

/// Client request methods of MCP. rmcp reads a known method whose params do not fit as a custom
/// request and answers "method not found"; the truth is "invalid params".
const KNOWN_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "logging/setLevel",
    "completion/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

fn misread_request(
    message: &RxJsonRpcMessage<RoleServer>,
    object: &serde_json::Map<String, Value>,
) -> Option<Value> {
    let rmcp::model::JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let method = object.get("method").and_then(Value::as_str).unwrap_or("");
    if UNSERVED_REQUESTS.contains(&method) {
        let id = object.get("id").cloned().unwrap_or(Value::Null);
        return Some(method_not_found(id, method));
    }
    let rmcp::model::ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    if !KNOWN_REQUESTS.contains(&custom.method.as_str()) {
        let id = object.get("id").cloned().unwrap_or(Value::Null);
        return Some(method_not_found(id, &custom.method));
    }
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    let detail = match custom.method.as_str() {
        "tools/call" => serde_json::from_value::<rmcp::model::CallToolRequestParams>(params)
            .err()
            .map(|err| format!(": {err}"))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    Some(error_reply(
        id,
        -32602,
        format!(
            "invalid params for `{}`{detail}; see the MCP schema for this method",
            custom.method
        ),
    ))
}

fn reply_or_ignore(id: Option<Value>, has_method: bool, code: i64, message: String) -> Incoming {
    match id {
        Some(id) => Incoming::Reply(error_reply(id, code, message)),
        None if has_method => Incoming::Ignore(format!("notification ignored: {message}")),
        None => Incoming::Reply(error_reply(Value::Null, code, message)),
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON-RPC error response.
pub fn error_reply(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match classify(line.as_bytes(), Framing::Lines) {
            Incoming::Reply(value) => value,
            other => panic!("expected a reply for {line:?}, got {other:?}"),
        }
    }

    #[test]
    fn unparsable_text_is_a_parse_error_without_id() {
        let value = reply("{not json");
        assert_eq!(value["error"]["code"], -32700);
        assert_eq!(value["id"], Value::Null);
        assert_eq!(reply("\u{feff}garbage")["error"]["code"], -32700);
    }

    #[test]
    fn json_that_is_not_a_message_is_an_invalid_request() {
        assert_eq!(reply("[1,2]")["error"]["code"], -32600);
        assert_eq!(reply("42")["error"]["code"], -32600);
        assert_eq!(reply("{}")["error"]["code"], -32600);
        let value = reply(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#);
        assert_eq!(value["error"]["code"], -32600);
        assert_eq!(value["id"], 7);
    }

    #[test]
    fn bad_params_of_a_request_keep_its_id() {
        let value =
            reply(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":5}}"#);
        assert_eq!(value["error"]["code"], -32602);
        assert_eq!(value["id"], "a");
        let value = reply(r#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#);
        assert_eq!(value["error"]["code"], -32602);
        assert_eq!(value["id"], 9);
    }

    #[test]
    fn unknown_methods_are_answered_with_what_is_served() {
        let value = reply(r#"{"jsonrpc":"2.0","id":1,"method":"vendor/thing","params":{}}"#);
        assert_eq!(value["error"]["code"], -32601);
        assert_eq!(value["id"], 1);
        let message = value["error"]["message"].as_str().unwrap();
        assert!(message.contains("`vendor/thing`"), "{message}");
        assert!(message.contains("tools/call"), "{message}");
        let value = reply(r#"{"jsonrpc":"2.0","id":"p","method":"completion/complete"}"#);
        assert_eq!(value["error"]["code"], -32601);
        assert_eq!(value["id"], "p");
        let message = value["error"]["message"].as_str().unwrap();
        assert!(message.contains("does not offer it"), "{message}");
    }

    #[test]
    fn the_parse_error_hint_fits_the_framing() {
        let Incoming::Reply(http) = classify(b"{bad", Framing::Http) else {
            panic!("a reply");
        };
        let message = http["error"]["message"].as_str().unwrap();
        assert!(!message.contains("single line"), "{message}");
        assert!(message.contains("the body"), "{message}");
        assert!(
            reply("{bad")["error"]["message"]
                .as_str()
                .unwrap()
                .contains("single line")
        );
    }

    #[test]
    fn malformed_notifications_and_blank_lines_get_no_answer() {
        assert!(matches!(
            classify(b"   \r", Framing::Lines),
            Incoming::Ignore(_)
        ));
        // A notification with an unreadable id-less shape: never answered.
        assert!(matches!(
            classify(
                br#"{"jsonrpc":"2.0","method":"notifications/progress","params":7}"#,
                Framing::Lines
            ),
            Incoming::Ignore(_) | Incoming::Message(_)
        ));
        assert!(matches!(
            classify(
                br#"{"jsonrpc":"2.0","id":1,"result":7,"error":{}}"#,
                Framing::Lines
            ),
            Incoming::Ignore(_)
        ));
    }

    #[test]
    fn valid_messages_pass() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        ] {
            assert!(
                matches!(
                    classify(line.as_bytes(), Framing::Lines),
                    Incoming::Message(_)
                ),
                "{line}"
            );
        }
    }
}
