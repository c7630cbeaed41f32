//! The stdio wire: newline-delimited JSON-RPC with our own handling of what the SDK's transport
//! would drop or die on.
//!
//! rmcp's line transport ignores input that is not JSON and ends the whole service when a valid
//! notification arrives before `initialize`. MCP servers must answer a malformed request with a
//! JSON-RPC error and keep serving, so every line is classified first (`classify.rs`), and
//! notifications or responses that arrive before the lifecycle started are logged and dropped.
//! Only well-formed messages reach the SDK.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientRequest, GetMeta, ProtocolVersion};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_util::sync::CancellationToken;

use super::classify::{Framing, Incoming, classify, error_reply};

/// The longest message accepted. Tool arguments carry whole files (`write_file`), so this is
/// generous; a longer line is discarded and answered with an error instead of growing memory
/// without bound.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

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
                classify(&line, Framing::Lines)
            };
            match incoming {
                Incoming::Message(message) => {
                    if let Some(message) = self.admit(*message) {
                        return Some(message);
                    }
                }
                Incoming::Reply(reply) => {
                    tracing::warn!(%reply, "malformed message");
                    // Written by a task of its own: the SDK drops this `receive` future whenever
                    // another branch of its loop is ready first, and a reply awaited here would
                    // be lost with it (the line is consumed already). The writer's lock keeps
                    // whole lines apart.
                    let writer = Arc::clone(&self.writer);
                    let eof = self.eof.clone();
                    tokio::spawn(async move {
                        if let Err(err) = write_value(&writer, &reply).await {
                            tracing::error!("cannot write an error reply: {err}");
                            eof.cancel();
                        }
                    });
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
    use serde_json::json;

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
