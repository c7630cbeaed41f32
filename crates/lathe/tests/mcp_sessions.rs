//! `lathe mcp --listen` over raw HTTP, as curl would drive it: when sessions end, what a
//! closed stream means, the protocol's edges, and where a remembered approval applies.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mcp_support::Fixture;
use crate::mcp_support::http::{self as raw, open_session, post, request, tool_call};

/// Longest wait for anything that should happen.
const DEADLINE: Duration = Duration::from_secs(30);

struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(fixture: &Fixture, extra: &[&str]) -> Server {
        let mut args = vec!["--listen", "127.0.0.1:0"];
        args.extend_from_slice(extra);
        let mut child = fixture
            .command(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("lathe runs");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("listening on http://").nth(1) {
                    let _ = tx.send(rest.trim_end_matches("/mcp").to_owned());
                }
            }
        });
        let address = rx.recv_timeout(DEADLINE).expect("the listening address");
        Server { child, address }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    fn wait(&mut self) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return status;
            }
            assert!(started.elapsed() < DEADLINE, "lathe mcp did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn open_fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.child.id()))
            .expect("fds")
            .count()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn ping(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
}

/// Whether the session still exists: a ping in it is answered rather than 404.
fn alive(address: &str, session: &str) -> bool {
    let mut response = post(address, Some(session), &ping(99));
    match response.status {
        404 => false,
        200 => {
            response.until_answer(&Value::from(99));
            true
        }
        other => panic!("ping answered {other}"),
    }
}

fn processes_with(mark: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if String::from_utf8_lossy(&cmdline).contains(mark) {
            found.push(pid);
        }
    }
    found
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < DEADLINE, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn marker() -> String {
    format!("{}.{}", 4000 + fastrand_like(), std::process::id())
}

/// A number that differs between the tests of one run (no clock involved in any assertion).
fn fastrand_like() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed) * 7
}

fn result_text(answer: &Value) -> String {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// A quiet call that runs longer than the session timeout finishes, and its session lives on.
#[test]
fn a_quiet_call_longer_than_the_timeout_finishes() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &["--session-timeout", "500ms"]);
    let session = open_session(&server.address, json!({}));
    let call = tool_call(1, "shell", json!({"command": "sleep 2; echo done-quietly"}));
    let mut response = post(&server.address, Some(&session), &call);
    assert_eq!(response.status, 200);
    let answer = response.until_answer(&Value::from(1)).pop().unwrap();
    let text = result_text(&answer);
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert!(text.contains("done-quietly"), "{text}");
    assert!(alive(&server.address, &session));
}

/// An idle session whose background command still runs stays; once nothing runs and nothing
/// is open, it expires and its id answers 404.
#[test]
fn an_idle_session_stays_while_its_command_runs_and_expires_after() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &["--session-timeout", "300ms"]);
    let session = open_session(&server.address, json!({}));
    let mark = marker();
    let command = format!("sleep {mark}");
    let call = tool_call(1, "shell", json!({"command": command, "background": true}));
    let answer = post(&server.address, Some(&session), &call)
        .until_answer(&Value::from(1))
        .pop()
        .unwrap();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    let id = answer["result"]["structuredContent"]["command_id"].clone();
    wait_until("the command runs", || !processes_with(&mark).is_empty());
    // Many timeouts pass with no traffic at all.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!processes_with(&mark).is_empty(), "the command was killed");
    assert!(alive(&server.address, &session), "the session expired");

    let kill = tool_call(2, "kill_command", json!({"id": id}));
    post(&server.address, Some(&session), &kill).until_answer(&Value::from(2));
    wait_until("the command is gone", || processes_with(&mark).is_empty());
    wait_until("the idle session expires", || {
        // Each look is itself traffic: look less often than the timeout.
        std::thread::sleep(Duration::from_millis(700));
        !alive(&server.address, &session)
    });
}

/// An idle session with nothing running expires after the timeout.
#[test]
fn an_idle_session_with_nothing_running_expires() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &["--session-timeout", "200ms"]);
    let session = open_session(&server.address, json!({}));
    wait_until("the idle session expires", || {
        std::thread::sleep(Duration::from_millis(500));
        !alive(&server.address, &session)
    });
    let deleted = request(
        &server.address,
        "DELETE",
        &[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", raw::LEGACY_VERSION),
        ],
        None,
    );
    assert_eq!(deleted.status, 404);
}

/// A client that goes away while its call runs (no DELETE, no cancellation) cancels the call:
/// the command is killed.
#[test]
fn a_closed_stream_cancels_its_running_call() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    let session = open_session(&server.address, json!({}));
    let mark = marker();
    let call = tool_call(1, "shell", json!({"command": format!("sleep {mark}")}));
    let response = post(&server.address, Some(&session), &call);
    assert_eq!(response.status, 200);
    wait_until("the command runs", || !processes_with(&mark).is_empty());
    drop(response.into_stream());
    wait_until("the command of the abandoned call is killed", || {
        processes_with(&mark).is_empty()
    });
    assert!(
        alive(&server.address, &session),
        "the session itself lives on"
    );
}

/// DELETE closes a session with 200 (not 202), and answers 404 for one that does not exist.
#[test]
fn delete_answers_200_and_404_for_an_unknown_session() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    let session = open_session(&server.address, json!({}));
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", raw::LEGACY_VERSION),
    ];
    assert_eq!(
        request(&server.address, "DELETE", &headers, None).status,
        200
    );
    assert_eq!(
        request(&server.address, "DELETE", &headers, None).status,
        404
    );
    assert!(!alive(&server.address, &session));
    let unknown = [
        ("Mcp-Session-Id", "no-such-session"),
        ("MCP-Protocol-Version", raw::LEGACY_VERSION),
    ];
    let response = request(&server.address, "DELETE", &unknown, None);
    assert_eq!(response.status, 404);
}

/// An empty POST body is a JSON-RPC parse error (with or without a content type), and a
/// method the server lacks is answered with what it serves.
#[test]
fn empty_bodies_and_unknown_methods_get_json_rpc_errors() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    for headers in [
        vec![("Accept", "application/json, text/event-stream")],
        vec![
            ("Accept", "application/json, text/event-stream"),
            ("Content-Type", "application/json"),
        ],
    ] {
        let response = request(&server.address, "POST", &headers, Some(""));
        assert_eq!(response.status, 400);
        assert!(
            response
                .header("content-type")
                .is_some_and(|v| v.starts_with("application/json"))
        );
        let body: Value = serde_json::from_str(&response.text()).expect("a JSON body");
        assert_eq!(body["error"]["code"], -32700, "{body}");
        assert!(
            !body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("single line")
        );
    }
    let session = open_session(&server.address, json!({}));
    let unknown = json!({"jsonrpc": "2.0", "id": 5, "method": "vendor/frobnicate"});
    let answer = post(&server.address, Some(&session), &unknown)
        .until_answer(&Value::from(5))
        .pop()
        .unwrap();
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("vendor/frobnicate") && message.contains("tools/call"),
        "{message}"
    );
}

/// SIGTERM, SIGHUP and SIGINT end `lathe mcp --listen` with 128 + the signal's number.
#[test]
fn termination_signals_exit_with_128_plus_the_signal() {
    for (signal, code) in [("TERM", 143), ("HUP", 129), ("INT", 130)] {
        let fixture = Fixture::new();
        let mut server = Server::start(&fixture, &[]);
        server.signal(signal);
        assert_eq!(server.wait().code(), Some(code), "SIG{signal}");
    }
}

/// Sessions that never call a tool hold no descriptor and leave no directory; a session's
/// empty run directory goes with it.
#[test]
fn sessions_open_their_resources_on_first_use_and_remove_empty_ones() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    let runs = fixture.data_dir().join("runs");
    let count_runs = || std::fs::read_dir(&runs).map_or(0, |d| d.count());
    // The first session warms up what the process keeps for all (the thread pool, caches).
    let first = open_session(&server.address, json!({}));
    let before = server.open_fds();
    let mut sessions = Vec::new();
    for _ in 0..60 {
        sessions.push(open_session(&server.address, json!({})));
    }
    let after = server.open_fds();
    assert!(
        after < before + 10,
        "{before} fds before, {after} after 60 sessions"
    );
    assert_eq!(
        count_runs(),
        0,
        "run directories of sessions that ran nothing"
    );

    let read = tool_call(1, "read_file", json!({"path": "hello.txt"}));
    let answer = post(&server.address, Some(&first), &read)
        .until_answer(&Value::from(1))
        .pop()
        .unwrap();
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    assert_eq!(
        count_runs(),
        1,
        "the session that read a file has its directory"
    );
    let headers = [
        ("Mcp-Session-Id", first.as_str()),
        ("MCP-Protocol-Version", raw::LEGACY_VERSION),
    ];
    assert_eq!(
        request(&server.address, "DELETE", &headers, None).status,
        200
    );
    wait_until("the empty run directory is removed", || count_runs() == 0);
}

/// The 2026-07-28 lifecycle has no per-client session: a stateless request's approval never
/// offers to remember, and an answer that says "remember" anyway approves that call alone,
/// so a later raw request from anyone is asked again.
#[test]
fn a_stateless_approval_is_never_remembered_for_other_clients() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &["--approval", "ask"]);
    let modern_call = |id: u64, command: &str, answer: Option<(&str, Value)>| {
        let mut params = json!({
            "name": "shell",
            "arguments": {"command": command},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
            }
        });
        if let Some((state, response)) = answer {
            params["requestState"] = json!(state);
            params["inputResponses"] = json!({"approval": response});
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let body = message.to_string();
        let mut response = request(
            &server.address,
            "POST",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", "2026-07-28"),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "shell"),
            ],
            Some(&body),
        );
        assert_eq!(response.status, 200);
        response.until_answer(&Value::from(id)).pop().unwrap()
    };

    let asked = modern_call(1, "touch first.txt", None);
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let schema = &result["inputRequests"]["approval"]["params"]["requestedSchema"];
    assert!(
        schema["properties"].get("remember").is_none(),
        "remembering is offered where nothing would hold it: {schema}"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    let accept = json!({"action": "accept", "content": {"remember": true}});
    let ran = modern_call(2, "touch first.txt", Some((&state, accept)));
    assert_eq!(ran["result"]["isError"], json!(false), "{ran}");
    assert!(fixture.workspace().join("first.txt").exists());

    // Another client (or the same one), with no answer: asked again, not run.
    let again = modern_call(3, "touch second.txt", None);
    assert_eq!(again["result"]["resultType"], "input_required", "{again}");
    assert!(!fixture.workspace().join("second.txt").exists());
}

/// Over the handshake lifecycle, "remember" lasts for the MCP session that said it, and the
/// prompt says so: another session is asked again.
#[test]
fn a_remembered_approval_stays_in_its_mcp_session() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &["--approval", "ask"]);
    let capabilities = json!({"elicitation": {"form": {}}});
    let first = open_session(&server.address, capabilities.clone());
    let second = open_session(&server.address, capabilities);

    let call = tool_call(1, "shell", json!({"command": "touch one.txt"}));
    let mut response = post(&server.address, Some(&first), &call);
    let messages = response.until_elicitation();
    let (request_id, params) = messages;
    let description = params["requestedSchema"]["properties"]["remember"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        description.contains("in this MCP session"),
        "the prompt says where the grant holds: {params}"
    );
    let answer = json!({"jsonrpc": "2.0", "id": request_id,
                        "result": {"action": "accept", "content": {"remember": true}}});
    let accepted = post(&server.address, Some(&first), &answer);
    assert!(accepted.status == 202 || accepted.status == 200);
    let done = response.until_answer(&Value::from(1)).pop().unwrap();
    assert_eq!(done["result"]["isError"], json!(false), "{done}");

    // Remembered in the first session: runs without asking.
    let call = tool_call(2, "shell", json!({"command": "touch two.txt"}));
    let done = post(&server.address, Some(&first), &call)
        .until_answer(&Value::from(2))
        .pop()
        .unwrap();
    assert_eq!(done["result"]["isError"], json!(false), "{done}");
    assert!(fixture.workspace().join("two.txt").exists());

    // Not in the second: it is asked.
    let call = tool_call(3, "shell", json!({"command": "touch three.txt"}));
    let mut response = post(&server.address, Some(&second), &call);
    let (request_id, _) = response.until_elicitation();
    let decline = json!({"jsonrpc": "2.0", "id": request_id, "result": {"action": "decline"}});
    post(&server.address, Some(&second), &decline);
    let done = response.until_answer(&Value::from(3)).pop().unwrap();
    assert_eq!(done["result"]["isError"], json!(true), "{done}");
    assert!(!fixture.workspace().join("three.txt").exists());
}

/// A session's command outputs are resources: listed, read whole by URI, described by a
/// template; an unknown URI says which form the URIs take.
#[test]
fn command_outputs_are_resources() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    let session = open_session(&server.address, json!({}));
    let call = tool_call(
        1,
        "shell",
        json!({"command": "printf 'first line\\nsecond line\\n'"}),
    );
    let answer = post(&server.address, Some(&session), &call)
        .until_answer(&Value::from(1))
        .pop()
        .unwrap();
    let id = answer["result"]["structuredContent"]["command_id"]
        .as_u64()
        .expect("a command id");
    let uri = format!("lathe://commands/{id}/output");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "resources/list"});
    let listed = post(&server.address, Some(&session), &list)
        .until_answer(&Value::from(2))
        .pop()
        .unwrap();
    let resources = listed["result"]["resources"].as_array().expect("resources");
    assert!(
        resources.iter().any(|r| r["uri"] == uri.as_str()),
        "{listed}"
    );

    let read = json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                      "params": {"uri": uri}});
    let contents = post(&server.address, Some(&session), &read)
        .until_answer(&Value::from(3))
        .pop()
        .unwrap();
    assert_eq!(
        contents["result"]["contents"][0]["text"], "first line\nsecond line\n",
        "{contents}"
    );

    let templates = json!({"jsonrpc": "2.0", "id": 4, "method": "resources/templates/list"});
    let templates = post(&server.address, Some(&session), &templates)
        .until_answer(&Value::from(4))
        .pop()
        .unwrap();
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "lathe://commands/{id}/output"
    );

    let unknown = json!({"jsonrpc": "2.0", "id": 5, "method": "resources/read",
                         "params": {"uri": "lathe://commands/999/output"}});
    let missing = post(&server.address, Some(&session), &unknown)
        .until_answer(&Value::from(5))
        .pop()
        .unwrap();
    let message = missing["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("no command 999"), "{missing}");
}

/// `logging/setLevel` is honoured: after it, the session's log notifications (calls started
/// and finished) reach the client's stream, at that level and above only.
#[test]
fn log_notifications_follow_set_level() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    let session = open_session(&server.address, json!({}));
    let set = json!({"jsonrpc": "2.0", "id": 1, "method": "logging/setLevel",
                     "params": {"level": "info"}});
    let answer = post(&server.address, Some(&session), &set)
        .until_answer(&Value::from(1))
        .pop()
        .unwrap();
    assert_eq!(answer["result"], json!({}), "{answer}");
    let mut listening = request(
        &server.address,
        "GET",
        &[
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", raw::LEGACY_VERSION),
        ],
        None,
    );
    assert_eq!(listening.status, 200);
    let call = tool_call(2, "read_file", json!({"path": "hello.txt"}));
    post(&server.address, Some(&session), &call).until_answer(&Value::from(2));
    let log = listening.until_notification("notifications/message");
    assert_eq!(log["params"]["level"], "info", "{log}");
    assert_eq!(log["params"]["data"]["event"], "call finished", "{log}");
    assert_eq!(log["params"]["data"]["tool"], "read_file", "{log}");
}

/// The peak resident memory of process `pid` in MiB (`VmHWM`), read from /proc.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .expect("VmHWM")
        / 1024
}

/// Over stdio, a message four times the 64 MiB limit is answered with an error that names the
/// limit, the server keeps serving, and its memory stays near the limit.
#[test]
fn a_huge_stdio_message_is_refused_with_bounded_memory() {
    use std::io::Write;
    let fixture = Fixture::new();
    let mut child = fixture
        .command(&[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("lathe mcp runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    stdin
        .write_all(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"big.txt","content":""#)
        .expect("head");
    let chunk = vec![b'a'; 1 << 20];
    for _ in 0..256 {
        stdin.write_all(&chunk).expect("body");
    }
    stdin.write_all(b"\"}}}\n").expect("tail");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n")
        .expect("ping");
    let mut answers = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("an answer");
        answers.push(serde_json::from_str::<Value>(&line).expect("JSON"));
    }
    let peak = peak_rss_mib(child.id());
    drop(stdin);
    let _ = child.wait();
    // JSON-RPC answers may come in any order: the refusal is written by a task of its own, so
    // the ping's answer can overtake it.
    let refusal = answers
        .iter()
        .find(|answer| answer.get("error").is_some())
        .unwrap_or_else(|| panic!("no refusal among {answers:?}"));
    let message = refusal["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("67108864 bytes"), "{refusal}");
    let pong = answers
        .iter()
        .find(|answer| answer["id"] == 7)
        .unwrap_or_else(|| panic!("no answer to the ping among {answers:?}"));
    assert!(pong.get("result").is_some(), "{pong}");
    assert!(!fixture.workspace().join("big.txt").exists());
    assert!(peak < 200, "peak RSS {peak} MiB for a 256 MiB message");
}

/// Streams offer no resumption: no event ids, no `retry` hints, on any stream.
#[test]
fn streams_carry_no_event_ids() {
    let fixture = Fixture::new();
    let server = Server::start(&fixture, &[]);
    let session = open_session(&server.address, json!({}));
    let call = tool_call(1, "shell", json!({"command": "echo hi"}));
    let text = post(&server.address, Some(&session), &call).text();
    assert!(text.contains("\"id\":1"), "{text}");
    for line in text.lines() {
        assert!(
            !line.starts_with("id:") && !line.starts_with("retry:"),
            "resumption offered: {line:?} in {text}"
        );
    }
}
