//! Shared by the tests of lathe-agent and its benches: the agent harness ([`Harness`]: an agent
//! put together by `Agent::builder` against the scripted model server, its events captured)
//! with small tools of the tests' own; and for the provider tests, tool definitions, a provider
//! per server, and a helper that runs one request to its end.

mod harness;
pub mod tools;

pub use harness::*;

use lathe_agent::events::Event;
use lathe_agent::parser::ToolNames;
use lathe_agent::provider::{
    ChatRequest, Provider, ProviderConfig, ProviderError, ProviderKind, RetryPolicy, connect,
};
use lathe_agent::stream::{AssistantTurn, StreamError, collect_turn};
use serde_json::{Value, json};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub fn tools() -> Vec<Value> {
    let tool = |name: &str, description: &str, params: Value, required: &[&str]| {
        json!({"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": params, "required": required}}})
    };
    vec![
        tool(
            "read_file",
            "Read a file.",
            json!({"path": {"type": "string"}, "offset": {"type": "integer"}}),
            &["path"],
        ),
        tool(
            "write_file",
            "Write a file.",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            &["path", "content"],
        ),
        tool(
            "grep",
            "Search files.",
            json!({"pattern": {"type": "string"}}),
            &["pattern"],
        ),
        tool(
            "shell",
            "Run a command.",
            json!({"command": {"type": "string"}}),
            &["command"],
        ),
    ]
}

pub fn names() -> Arc<ToolNames> {
    Arc::new(ToolNames::from_definitions(&tools()))
}

/// A provider for `url`, wrapped for the automatic text protocol, retrying at once.
pub fn provider(kind: ProviderKind, url: &str) -> Arc<dyn Provider> {
    connect(
        kind,
        ProviderConfig::new(url)
            .retry(RetryPolicy::immediate(3))
            .api_key(Some("sk-test".into())),
    )
    .expect("provider")
}

#[derive(Debug)]
pub enum Failure {
    Open(ProviderError),
    Stream(Box<StreamError>),
}

impl Failure {
    pub fn error(&self) -> &ProviderError {
        match self {
            Failure::Open(e) => e,
            Failure::Stream(s) => &s.error,
        }
    }
}

/// Sends `request` and reads the answer to its end.
pub async fn try_turn(
    provider: &dyn Provider,
    request: &ChatRequest,
) -> Result<(AssistantTurn, Vec<Event>), Failure> {
    let stream = provider.chat(request).await.map_err(Failure::Open)?;
    let mut events = Vec::new();
    let turn = collect_turn(stream, names(), &CancellationToken::new(), &mut |e| {
        events.push(e)
    })
    .await
    .map_err(|e| Failure::Stream(Box::new(e)))?;
    Ok((turn, events))
}

pub async fn turn(provider: &dyn Provider, request: &ChatRequest) -> (AssistantTurn, Vec<Event>) {
    match try_turn(provider, request).await {
        Ok(out) => out,
        Err(e) => panic!("turn failed: {e:?}"),
    }
}

/// The text the user saw.
pub fn shown(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| {
            if let Event::TextDelta { text } = e {
                Some(text.as_str())
            } else {
                None
            }
        })
        .collect()
}

pub fn notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| {
            if let Event::Notice { message } = e {
                Some(message.clone())
            } else {
                None
            }
        })
        .collect()
}

/// A loopback URL where nothing listens.
pub fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Whether the call would change something, as its tool says for its input (the runner asks the
/// same of the registry before refusing a cut-off call).
pub fn changes(call: &lathe_agent::parser::ParsedCall) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let session = tool_session(dir.path(), &dir.path().join(".state"), Default::default());
    lathe_tools::builtin()
        .prepare(&call.name, call.arguments.clone(), &session)
        .map(|prepared| !prepared.only_reads())
        .unwrap_or(true)
}

/// Tokens of `text` as Lathe estimates them: 3.5 bytes a token.
pub fn tokens(text: &str) -> u64 {
    (text.len() as u64 * 2).div_ceil(7)
}

/// A recorded request's prompt tokens by the same estimate: its tools, and its messages (4 a
/// message for its framing).
pub fn prompt_tokens(body: &Value) -> u64 {
    let text = |v: &Value| v.as_str().map_or(0, tokens);
    let mut total: u64 = body["tools"]
        .as_array()
        .map_or(0, |t| t.iter().map(|t| tokens(&t.to_string())).sum());
    for message in body["messages"].as_array().into_iter().flatten() {
        total += 4 + text(&message["content"]) + text(&message["thinking"]);
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            total += 3
                + text(&call["function"]["name"])
                + tokens(&call["function"]["arguments"].to_string());
        }
    }
    total
}

/// The reply cap a recorded request was sent with (Ollama's `num_predict`, or `max_tokens`).
pub fn reply_cap(body: &Value) -> Option<u64> {
    body["options"]["num_predict"]
        .as_u64()
        .or_else(|| body["max_tokens"].as_u64())
}
