//! Protocol-level tests of `lathe mcp` with the Rust SDK's own client (rmcp, feature `client`):
//! malformed input on the wire, progress notifications, cancellation, disconnects and signals.
//! A proxy sits between the client and the server, so raw bytes can be written to the server's
//! stdin and every line it writes can be inspected.

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RoleClient, RunningService};
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::{Mutex, mpsc};

use crate::mcp_support::Fixture;

const DEADLINE: Duration = Duration::from_secs(30);

/// The server, with a proxy in front of its stdio.
struct Server {
    child: Child,
    stdin: Arc<Mutex<Option<ChildStdin>>>,
    /// Every line the server wrote, parsed.
    seen: mpsc::UnboundedReceiver<Value>,
    /// The client's end of the proxy.
    client_end: Option<tokio::io::DuplexStream>,
}

impl Server {
    fn start(fixture: &Fixture) -> Server {
        let mut command = tokio::process::Command::from(fixture.command(&[]));
        // Malformed input is logged as a warning; only errors are worth the test output.
        command
            .env("LATHE_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = command.spawn().expect("lathe mcp starts");
        let stdin = Arc::new(Mutex::new(child.stdin.take()));
        let stdout = child.stdout.take().expect("stdout");
        let (client_end, proxy_end) = tokio::io::duplex(1 << 20);
        let (proxy_read, mut proxy_write) = tokio::io::split(proxy_end);
        let (seen_tx, seen) = mpsc::unbounded_channel();

        // server -> client, teed into `seen`
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let injected = serde_json::from_str::<Value>(&line).ok().map(|value| {
                    // Answers to the lines the test injected are not the client's business.
                    let answer_to_injected = value.get("id").is_some_and(|id| {
                        id.is_null() || id.as_str().is_some_and(|s| s.starts_with("inj-"))
                    });
                    let _ = seen_tx.send(value);
                    answer_to_injected
                });
                if injected == Some(true) {
                    continue;
                }
                if proxy_write
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
        });
        // client -> server, line by line so injected bytes never split a message
        let writer = Arc::clone(&stdin);
        tokio::spawn(async move {
            let mut lines = BufReader::new(proxy_read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let mut guard = writer.lock().await;
                let Some(stdin) = guard.as_mut() else { break };
                if stdin
                    .write_all(format!("{line}\n").as_bytes())
                    .await
                    .is_err()
                {
                    break;
                }
            }
            // The client hung up: close the server's stdin, as a real client does.
            writer.lock().await.take();
        });
        Server {
            child,
            stdin,
            seen,
            client_end: Some(client_end),
        }
    }

    async fn inject(&self, bytes: &[u8]) {
        let mut guard = self.stdin.lock().await;
        let stdin = guard.as_mut().expect("stdin open");
        stdin.write_all(bytes).await.expect("write to the server");
        stdin.flush().await.expect("flush");
    }

    /// The next line the server wrote that `wanted` accepts (others are skipped).
    async fn expect(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + DEADLINE;
        loop {
            match tokio::time::timeout_at(deadline, self.seen.recv()).await {
                Ok(Some(value)) if wanted(&value) => return value,
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the server closed its output while waiting for {what}"),
                Err(_) => panic!("timed out waiting for {what}"),
            }
        }
    }

    async fn connect<H: ClientHandler>(&mut self, handler: H) -> RunningService<RoleClient, H> {
        let end = self.client_end.take().expect("one client per server");
        handler.serve(end).await.expect("the client connects")
    }
}

fn is_error(code: i64, id: Value) -> impl Fn(&Value) -> bool {
    move |v| v["error"]["code"] == code && v["id"] == id
}

fn call(name: &str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(arguments)
}

fn text_of(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(&result.content)
        .unwrap_or_default()
        .to_string()
}

fn processes_with(mark: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(entry.path().join("stat"))
            .ok()
            .and_then(|s| {
                s.rsplit_once(')')
                    .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            })
            .unwrap_or(true);
        if !zombie && cmdline.windows(mark.len()).any(|w| w == mark.as_bytes()) {
            found.push(pid);
        }
    }
    found
}

async fn wait_until(what: &str, mut predicate: impl FnMut() -> bool) {
    let started = Instant::now();
    while !predicate() {
        assert!(
            started.elapsed() < DEADLINE,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn marker() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("{}.{}", 100_000 + std::process::id(), nanos % 1_000_000 + 1)
}

#[derive(Default, Clone)]
struct Collector {
    progress: Arc<std::sync::Mutex<Vec<ProgressNotificationParam>>>,
}

impl ClientHandler for Collector {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(params);
    }
}

#[tokio::test]
async fn malformed_messages_get_json_rpc_errors_and_the_server_keeps_serving() {
    let fixture = Fixture::new();
    let mut server = Server::start(&fixture);

    // Before the handshake: garbage, a batch, a stray notification and a stray response.
    server.inject(b"this is not json\n").await;
    server
        .expect("a parse error", is_error(-32700, Value::Null))
        .await;
    server
        .inject(b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]\n")
        .await;
    server
        .expect("a batch refusal", is_error(-32600, Value::Null))
        .await;
    server
        .inject(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n{\"jsonrpc\":\"2.0\",\"id\":\"inj-77\",\"result\":{}}\n")
        .await;

    let client = server.connect(Collector::default()).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("lathe")
    );
    assert_eq!(
        info.server_info.as_ref().map(|i| i.version.as_str()),
        Some(env!("CARGO_PKG_VERSION"))
    );

    // After the handshake: invalid UTF-8, a wrong jsonrpc version, bad params of a known
    // method, and a request without a method.
    server.inject(b"\xff\xfe\xfd\n").await;
    server
        .expect(
            "a parse error for invalid UTF-8",
            is_error(-32700, Value::Null),
        )
        .await;
    server
        .inject(b"{\"jsonrpc\":\"1.0\",\"id\":\"inj-old\",\"method\":\"ping\"}\n")
        .await;
    server
        .expect(
            "an invalid request with the id",
            is_error(-32600, json!("inj-old")),
        )
        .await;
    server
        .inject(b"{\"jsonrpc\":\"2.0\",\"id\":\"inj-bad\",\"method\":\"tools/call\",\"params\":{\"name\":7}}\n")
        .await;
    let bad = server
        .expect(
            "invalid params with the id",
            is_error(-32602, json!("inj-bad")),
        )
        .await;
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("tools/call"),
        "{bad}"
    );
    server
        .inject(b"{\"jsonrpc\":\"2.0\",\"id\":\"inj-12\",\"params\":{}}\n")
        .await;
    server
        .expect(
            "an invalid request for a missing method",
            is_error(-32600, json!("inj-12")),
        )
        .await;

    // A valid call still works.
    let result = client
        .call_tool(call("read_file", json!({"path": "hello.txt"})))
        .await
        .expect("read_file answers");
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(
        text_of(&result).contains("hello from the workspace"),
        "{result:?}"
    );

    // An unknown tool is a protocol error naming the real tools.
    let err = client
        .call_tool(call("read_fil", json!({"path": "hello.txt"})))
        .await
        .expect_err("unknown tool");
    assert!(err.to_string().contains("read_file"), "{err}");
    client.cancel().await.expect("the client closes");
}

/// Error replies written by Lathe's own wire layer and the SDK's answers interleave in a burst:
/// every request gets exactly one reply, none lost (they were, when the SDK dropped the read
/// that was writing an error reply).
#[tokio::test]
async fn a_burst_of_good_and_bad_messages_gets_every_reply() {
    let fixture = Fixture::new();
    let mut server = Server::start(&fixture);
    let client = server.connect(Collector::default()).await;
    let rounds = 20;
    let mut burst = String::new();
    for i in 0..rounds {
        burst.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":\"inj-p{i}\",\"method\":\"ping\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"id\":\"inj-l{i}\",\"method\":\"tools/list\",\"params\":[]}}\n\
             {{bad\n"
        ));
    }
    server.inject(burst.as_bytes()).await;
    let mut pings = std::collections::HashSet::new();
    let mut lists = std::collections::HashSet::new();
    let mut parse_errors = 0;
    while pings.len() < rounds || lists.len() < rounds || parse_errors < rounds {
        let value = server.expect("the replies to the burst", |_| true).await;
        match value["id"].as_str() {
            Some(id) if id.starts_with("inj-p") && value.get("result").is_some() => {
                assert!(pings.insert(id.to_owned()), "two replies to {id}");
            }
            Some(id) if id.starts_with("inj-l") && value.get("error").is_some() => {
                assert!(lists.insert(id.to_owned()), "two replies to {id}");
            }
            _ if value["id"].is_null() && value["error"]["code"] == -32700 => parse_errors += 1,
            _ => {}
        }
    }
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn long_commands_send_progress_with_their_output() {
    let fixture = Fixture::new();
    let mut server = Server::start(&fixture);
    let collector = Collector::default();
    let client = server.connect(collector.clone()).await;
    let script = "for i in 1 2 3 4 5 6; do echo tick-$i; sleep 0.25; done";
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(call(
                "shell",
                json!({"command": script, "timeout": 120}),
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("the call is sent");
    let token = handle.progress_token.clone();
    let response = handle.await_response().await.expect("the call answers");
    let ServerResult::CallToolResult(result) = response else {
        panic!("expected a tool result, got {response:?}");
    };
    assert_eq!(result.is_error, Some(false), "{result:?}");
    assert!(text_of(&result).contains("tick-6"), "{result:?}");

    let progress = collector
        .progress
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let ours: Vec<&ProgressNotificationParam> = progress
        .iter()
        .filter(|p| p.progress_token == token)
        .collect();
    assert!(!ours.is_empty(), "no progress for the call: {progress:?}");
    assert_eq!(
        ours.len(),
        progress.len(),
        "progress for another token: {progress:?}"
    );
    let values: Vec<f64> = ours.iter().map(|p| p.progress).collect();
    assert!(
        values.windows(2).all(|w| w[0] < w[1]),
        "progress must increase: {values:?}"
    );
    let messages: String = ours.iter().filter_map(|p| p.message.clone()).collect();
    assert!(
        messages.contains("tick-1"),
        "progress carries the output: {messages:?}"
    );
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn cancelled_notification_kills_the_running_command() {
    let fixture = Fixture::new();
    let mut server = Server::start(&fixture);
    let client = server.connect(Collector::default()).await;
    let mark = marker();
    let handle = client
        .send_cancellable_request(
            ClientRequest::CallToolRequest(CallToolRequest::new(call(
                "shell",
                json!({"command": format!("sleep {mark}"), "timeout": 3600}),
            ))),
            PeerRequestOptions::no_options(),
        )
        .await
        .expect("the call is sent");
    wait_until("the command runs", || !processes_with(&mark).is_empty()).await;
    handle
        .cancel(Some("the test stops it".into()))
        .await
        .expect("notifications/cancelled is sent");
    wait_until("the cancelled command is gone", || {
        processes_with(&mark).is_empty()
    })
    .await;
    let still = client
        .call_tool(call("read_file", json!({"path": "hello.txt"})))
        .await
        .expect("the server keeps serving");
    assert_eq!(still.is_error, Some(false));
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn disconnect_during_a_call_kills_everything_and_the_server_exits() {
    let fixture = Fixture::new();
    let mut server = Server::start(&fixture);
    let client = server.connect(Collector::default()).await;
    let foreground = marker();
    let background = marker() + "1";
    let started = client
        .call_tool(call(
            "shell",
            json!({"command": format!("sleep {background}"), "background": true}),
        ))
        .await
        .expect("background start");
    assert_eq!(started.is_error, Some(false), "{started:?}");
    let peer = client.peer().clone();
    let fg = foreground.clone();
    tokio::spawn(async move {
        let _ = peer
            .call_tool(call(
                "shell",
                json!({"command": format!("sleep {foreground}")}),
            ))
            .await;
    });
    wait_until("both commands run", || {
        !processes_with(&fg).is_empty() && !processes_with(&background).is_empty()
    })
    .await;
    // Hang up: the proxy closes the server's stdin.
    drop(client);
    wait_until("no command is left", || {
        processes_with(&fg).is_empty() && processes_with(&background).is_empty()
    })
    .await;
    let status = tokio::time::timeout(DEADLINE, server.child.wait())
        .await
        .expect("lathe mcp exits after the client left")
        .expect("exit status");
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn sigterm_kills_the_session_commands_before_exiting() {
    let fixture = Fixture::new();
    let mut server = Server::start(&fixture);
    let client = server.connect(Collector::default()).await;
    let mark = marker();
    let started = client
        .call_tool(call(
            "shell",
            json!({"command": format!("sleep {mark}"), "background": true}),
        ))
        .await
        .expect("background start");
    assert_eq!(started.is_error, Some(false), "{started:?}");
    wait_until("the command runs", || !processes_with(&mark).is_empty()).await;
    let pid = server.child.id().expect("pid");
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success());
    let exit = tokio::time::timeout(DEADLINE, server.child.wait())
        .await
        .expect("lathe mcp exits on SIGTERM")
        .expect("exit status");
    // 128 + SIGTERM, as a shell reports a process the signal ended.
    assert_eq!(exit.code(), Some(143), "{exit}");
    wait_until("the command is gone", || processes_with(&mark).is_empty()).await;
    drop(client);
}
