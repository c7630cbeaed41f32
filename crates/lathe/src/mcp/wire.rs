//! The stdio wire: newline-delimited JSON-RPC with our own handling of what the SDK's transport
//! would drop or die on.
//!
//! rmcp's line transport ignores input that is not JSON and ends the whole service when a valid
//! notification arrives before `initialize`. MCP servers must answer a malformed request with a
//! JSON-RPC error and keep serving, so every line is classified here first: unparsable text gets
//! `-32700`, a JSON value that is not a message gets `-32600` (with the request's id when it can be
//! read), and notifications or responses that arrive before the lifecycle started are logged and
//! dropped. Only well-formed messages reach the SDK.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientRequest, GetMeta, ProtocolVersion};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

/// The longest message accepted. Tool arguments carry whole files (`write_file`), so this is
/// generous; a longer line is discarded and answered with an error instead of growing memory
/// without bound.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

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

/// Classifies one line (without its newline).
pub fn classify(line: &[u8]) -> Incoming {
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
                format!(
                    "parse error: {err}; each message must be one JSON-RPC 2.0 object on a single line"
                ),
            ));
        }
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() {
            "batches are not supported; send one JSON-RPC object per line".to_owned()
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
    let rmcp::model::ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    if !KNOWN_REQUESTS.contains(&custom.method.as_str()) {
        return None;
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

/// Whether the SDK's service loop runs yet. Before it does, rmcp treats any message other than
/// a request as fatal, so those are dropped here.
#[derive(Debug)]
enum Lifecycle {
    Starting {
        /// Ids of `ping` and `server/discover` requests: answering them does not start the
        /// lifecycle.
        bootstrap: HashSet<String>,
    },
    Started,
}

/// An MCP transport over a byte stream pair, one JSON-RPC message per line.
pub struct LineTransport<R, W> {
    reader: BufReader<R>,
    line: Vec<u8>,
    oversized: bool,
    writer: Arc<tokio::sync::Mutex<W>>,
    lifecycle: Arc<Mutex<Lifecycle>>,
    eof: CancellationToken,
}

impl<R, W> LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A transport reading `reader` and writing `writer`; `eof` is cancelled as soon as the
    /// input ends, before the SDK drains its in-flight requests, so running calls stop at once.
    pub fn new(reader: R, writer: W, eof: CancellationToken) -> Self {
        LineTransport {
            reader: BufReader::with_capacity(64 * 1024, reader),
            line: Vec::new(),
            oversized: false,
            writer: Arc::new(tokio::sync::Mutex::new(writer)),
            lifecycle: Arc::new(Mutex::new(Lifecycle::Starting {
                bootstrap: HashSet::new(),
            })),
            eof,
        }
    }

    /// Reads one whole line into `self.line`. Cancel-safe: `fill_buf` is, and the partial line
    /// stays in `self.line` for the next call. `Ok(false)` at the end of input.
    async fn read_line(&mut self) -> std::io::Result<bool> {
        loop {
            let available = self.reader.fill_buf().await?;
            if available.is_empty() {
                return Ok(false);
            }
            let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
                Some(end) => (&available[..end], Some(end + 1)),
                None => (available, None),
            };
            if !self.oversized {
                if self.line.len() + chunk.len() > MAX_MESSAGE_BYTES {
                    self.oversized = true;
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(chunk);
                }
            }
            let consumed = found.unwrap_or(available.len());
            self.reader.consume(consumed);
            if found.is_some() {
                return Ok(true);
            }
        }
    }

    /// Applies the lifecycle gate to an incoming message: `None` drops it.
    fn admit(&self, message: RxJsonRpcMessage<RoleServer>) -> Option<RxJsonRpcMessage<RoleServer>> {
        let mut lifecycle = self.lifecycle.lock().unwrap_or_else(|e| e.into_inner());
        let Lifecycle::Starting { bootstrap } = &mut *lifecycle else {
            return Some(message);
        };
        match &message {
            rmcp::model::JsonRpcMessage::Request(request) => {
                match &request.request {
                    ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => {
                        bootstrap.insert(request.id.to_string());
                    }
                    // Started once its response goes out (see `note_outgoing`).
                    ClientRequest::InitializeRequest(_) => {}
                    // The 2026-07-28 lifecycle starts with the first request that carries
                    // complete metadata for a supported version: the SDK serves it (and all
                    // that follows, cancellations included) from its main loop. This mirrors
                    // the SDK's own test.
                    other => {
                        let meta = other.get_meta();
                        let complete = meta
                            .missing_required_keys(&ProtocolVersion::V_2026_07_28)
                            .is_empty();
                        let supported = meta
                            .protocol_version()
                            .is_some_and(|v| ProtocolVersion::KNOWN_VERSIONS.contains(&v));
                        if complete && supported {
                            *lifecycle = Lifecycle::Started;
                        }
                    }
                }
                Some(message)
            }
            other => {
                tracing::warn!(?other, "message before initialize ignored");
                None
            }
        }
    }
}

async fn write_value<W: AsyncWrite + Unpin>(
    writer: &tokio::sync::Mutex<W>,
    value: &Value,
) -> std::io::Result<()> {
    let mut bytes = serde_json::to_vec(value)?;
    bytes.push(b'\n');
    let mut writer = writer.lock().await;
    writer.write_all(&bytes).await?;
    writer.flush().await
}

fn note_outgoing(lifecycle: &Mutex<Lifecycle>, value: &Value) {
    let mut lifecycle = lifecycle.lock().unwrap_or_else(|e| e.into_inner());
    let Lifecycle::Starting { bootstrap } = &*lifecycle else {
        return;
    };
    let started = if value.get("method").is_some() {
        // Only the running service loop sends requests and notifications.
        true
    } else if value.get("result").is_some() {
        let id = value.get("id").map(id_key).unwrap_or_default();
        !bootstrap.contains(&id)
    } else {
        false
    };
    if started {
        *lifecycle = Lifecycle::Started;
    }
}

/// The same spelling as `RequestId`'s `Display`: numbers bare, strings as they are.
fn id_key(id: &Value) -> String {
    match id {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl<R, W> Transport<RoleServer> for LineTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let writer = Arc::clone(&self.writer);
        let lifecycle = Arc::clone(&self.lifecycle);
        async move {
            let value = serde_json::to_value(&item)?;
            note_outgoing(&lifecycle, &value);
            write_value(&writer, &value).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            match self.read_line().await {
                Ok(true) => {}
                Ok(false) => {
                    tracing::info!("input closed");
                    self.eof.cancel();
                    return None;
                }
                Err(err) => {
                    tracing::error!("cannot read input: {err}");
                    self.eof.cancel();
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let incoming = if std::mem::take(&mut self.oversized) {
                Incoming::Reply(error_reply(
                    Value::Null,
                    -32600,
                    format!("message too large: the limit is {MAX_MESSAGE_BYTES} bytes"),
                ))
            } else {
                classify(&line)
            };
            match incoming {
                Incoming::Message(message) => {
                    if let Some(message) = self.admit(*message) {
                        return Some(message);
                    }
                }
                Incoming::Reply(reply) => {
                    tracing::warn!(%reply, "malformed message");
                    if let Err(err) = write_value(&self.writer, &reply).await {
                        tracing::error!("cannot write an error reply: {err}");
                        self.eof.cancel();
                        return None;
                    }
                }
                Incoming::Ignore(why) => tracing::debug!("{why}"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut writer = self.writer.lock().await;
        writer.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Value {
        match classify(line.as_bytes()) {
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
    fn unknown_methods_reach_the_sdk() {
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"vendor/thing","params":{}}"#;
        assert!(matches!(classify(line.as_bytes()), Incoming::Message(_)));
    }

    #[test]
    fn malformed_notifications_and_blank_lines_get_no_answer() {
        assert!(matches!(classify(b"   \r"), Incoming::Ignore(_)));
        // A notification with an unreadable id-less shape: never answered.
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":7}"#),
            Incoming::Ignore(_) | Incoming::Message(_)
        ));
        assert!(matches!(
            classify(br#"{"jsonrpc":"2.0","id":1,"result":7,"error":{}}"#),
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
                matches!(classify(line.as_bytes()), Incoming::Message(_)),
                "{line}"
            );
        }
    }

    #[tokio::test]
    async fn notifications_before_the_lifecycle_are_dropped_and_errors_answered() {
        let (client, server) = tokio::io::duplex(4096);
        let (server_read, server_write) = tokio::io::split(server);
        let eof = CancellationToken::new();
        let mut transport = LineTransport::new(server_read, server_write, eof.clone());
        let (client_read, mut client_write) = tokio::io::split(client);
        client_write
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\nnope\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n",
            )
            .await
            .unwrap();
        let message = transport.receive().await.expect("the ping");
        assert!(matches!(message, rmcp::model::JsonRpcMessage::Request(_)));
        let mut lines = BufReader::new(client_read).lines();
        let answer: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["error"]["code"], -32700);
        client_write.shutdown().await.unwrap();
        assert!(transport.receive().await.is_none());
        assert!(eof.is_cancelled());
    }

    #[tokio::test]
    async fn a_2026_request_starts_the_lifecycle_so_its_cancellation_passes() {
        let (client, server) = tokio::io::duplex(4096);
        let (server_read, server_write) = tokio::io::split(server);
        let mut transport = LineTransport::new(server_read, server_write, CancellationToken::new());
        let (_client_read, mut client_write) = tokio::io::split(client);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "shell", "arguments": {"command": "sleep 100"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}
            }
        }});
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                            "params": {"requestId": 1}});
        client_write
            .write_all(format!("{call}\n{cancel}\n").as_bytes())
            .await
            .unwrap();
        assert!(matches!(
            transport.receive().await,
            Some(rmcp::model::JsonRpcMessage::Request(_))
        ));
        assert!(matches!(
            transport.receive().await,
            Some(rmcp::model::JsonRpcMessage::Notification(_))
        ));
    }
}
