//! A small HTTP/1.1 client for `lathe mcp --listen`, as raw as curl: one connection per
//! request, responses read as they come (JSON bodies or SSE streams).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// How long a test waits for any one read before it fails.
pub const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The protocol version of the handshake lifecycle used by these tests.
pub const LEGACY_VERSION: &str = "2025-06-18";

/// A response whose headers were read; the body is read on demand.
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, names in lower case.
    pub headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
}

impl Response {
    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The whole body as text (for responses that end).
    pub fn text(mut self) -> String {
        let mut body = Vec::new();
        let _ = self.reader.read_to_end(&mut body);
        let text = String::from_utf8_lossy(&body).into_owned();
        if self
            .header("transfer-encoding")
            .is_some_and(|v| v.contains("chunked"))
        {
            dechunk(&text)
        } else {
            text
        }
    }

    /// The JSON-RPC messages of the body, read until one answers request `id` (a JSON body, or
    /// the `data:` lines of an SSE stream). Returns every message read, the answer last.
    pub fn until_answer(&mut self, id: &Value) -> Vec<Value> {
        let mut seen = Vec::new();
        let json_body = self
            .header("content-type")
            .is_some_and(|v| v.starts_with("application/json"));
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => panic!("the stream ended before the answer to {id}: {seen:?}"),
                Ok(_) => {}
                Err(err) => panic!("reading the answer to {id}: {err}; so far {seen:?}"),
            }
            let data = if json_body {
                line.trim()
            } else {
                match line.trim().strip_prefix("data:") {
                    Some(data) => data.trim(),
                    None => continue,
                }
            };
            let Ok(message) = serde_json::from_str::<Value>(data) else {
                continue;
            };
            let answered = message.get("id") == Some(id)
                && (message.get("result").is_some() || message.get("error").is_some());
            seen.push(message);
            if answered {
                return seen;
            }
        }
    }

    /// Reads the stream until the server asks `elicitation/create`: its id and params.
    pub fn until_elicitation(&mut self) -> (Value, Value) {
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => panic!("the stream ended before an elicitation"),
                Ok(_) => {}
                Err(err) => panic!("reading for an elicitation: {err}"),
            }
            let Some(data) = line.trim().strip_prefix("data:") else {
                continue;
            };
            let Ok(message) = serde_json::from_str::<Value>(data.trim()) else {
                continue;
            };
            if message["method"] == "elicitation/create" {
                return (message["id"].clone(), message["params"].clone());
            }
            assert!(
                message.get("result").is_none() && message.get("error").is_none(),
                "answered without asking: {message}"
            );
        }
    }

    /// Reads the stream until a notification `method` arrives, and returns it.
    pub fn until_notification(&mut self, method: &str) -> Value {
        loop {
            let mut line = String::new();
            match self.reader.read_line(&mut line) {
                Ok(0) => panic!("the stream ended before {method}"),
                Ok(_) => {}
                Err(err) => panic!("reading for {method}: {err}"),
            }
            let Some(data) = line.trim().strip_prefix("data:") else {
                continue;
            };
            if let Ok(message) = serde_json::from_str::<Value>(data.trim())
                && message["method"] == method
            {
                return message;
            }
        }
    }

    /// The raw stream, for tests that close it early.
    pub fn into_stream(self) -> TcpStream {
        self.reader.into_inner()
    }
}

fn dechunk(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            return text.to_owned();
        };
        if size == 0 || after.len() < size {
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    out
}

/// Sends one request to `address` (`HOST:PORT`) and reads the status and headers.
pub fn request(
    address: &str,
    method: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> Response {
    let mut stream = TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(READ_TIMEOUT))
        .expect("read timeout");
    let mut head = format!("{method} /mcp HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).expect("request head");
    if let Some(body) = body {
        stream.write_all(body.as_bytes()).expect("request body");
    }
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    Response {
        status,
        headers,
        reader,
    }
}

/// A JSON-RPC POST, in session `session` if given, with the headers MCP asks for.
pub fn post(address: &str, session: Option<&str>, message: &Value) -> Response {
    let body = message.to_string();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    if let Some(session) = session {
        headers.push(("Mcp-Session-Id", session));
        headers.push(("MCP-Protocol-Version", LEGACY_VERSION));
    }
    if !method.is_empty() {
        headers.push(("Mcp-Method", &method));
    }
    request(address, "POST", &headers, Some(&body))
}

/// An MCP session of the handshake lifecycle: `initialize`, then `notifications/initialized`.
/// Returns the session id.
pub fn open_session(address: &str, capabilities: Value) -> String {
    let initialize = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": capabilities,
            "clientInfo": {"name": "raw-http-test", "version": "1"}
        }
    });
    let mut response = post(address, None, &initialize);
    assert_eq!(response.status, 200, "initialize");
    let session = response
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    response.until_answer(&Value::from(0));
    let initialized = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let accepted = post(address, Some(&session), &initialized);
    assert!(
        accepted.status == 202 || accepted.status == 200,
        "initialized: {}",
        accepted.status
    );
    session
}

/// A `tools/call` request.
pub fn tool_call(id: u64, name: &str, arguments: Value) -> Value {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}
    })
}
