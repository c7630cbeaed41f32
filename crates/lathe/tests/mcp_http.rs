//! `lathe mcp --listen`: the address checks and the HTTP endpoint, with real processes on
//! loopback. (The Python SDK scenario `streamable_http` drives MCP itself over HTTP.)

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::mcp_support::Fixture;

const DEADLINE: Duration = Duration::from_secs(30);

/// The server, with a proxy in front of its stdio.

#[test]
fn listen_refuses_other_machines_unless_allowed() {
    let fixture = Fixture::new();
    let output = fixture
        .command(&["--listen", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .expect("lathe runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--allow-remote"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing on stdout: {output:?}");

    let (child, address) = serving(&fixture, &["--listen", "0.0.0.0:0", "--allow-remote"]);
    assert!(address.starts_with("0.0.0.0:"), "{address}");
    stop(child);
}

#[test]
fn http_endpoint_is_at_mcp_only() {
    let fixture = Fixture::new();
    let (child, address) = serving(&fixture, &["--listen", "127.0.0.1:0"]);
    let mut stream = std::net::TcpStream::connect(&address).expect("connect");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    stream
        .write_all(b"GET /other HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .expect("request");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");
    stop(child);
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// The status line of a POST of `initialize` to `address` with the `Origin` header `origin`.
fn initialize_status(address: &str, origin: Option<&str>) -> String {
    post(address, origin, INITIALIZE)
        .lines()
        .next()
        .unwrap_or_default()
        .to_owned()
}

/// The response (status line, headers and what of the body came) to a JSON POST of `body`.
fn post(address: &str, origin: Option<&str>, body: &str) -> String {
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{origin}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    stream
        .set_read_timeout(Some(DEADLINE))
        .expect("read timeout");
    stream.write_all(request.as_bytes()).expect("request");
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    // Up to the first body bytes; an accepted initialize may keep a stream open.
    while !response.windows(4).any(|w| w == b"\r\n\r\n") || response.ends_with(b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&response).into_owned()
}

/// A body that is not a JSON-RPC message gets a JSON-RPC error with status 400, as over stdio.
#[test]
fn malformed_bodies_get_json_rpc_errors() {
    let fixture = Fixture::new();
    let (child, address) = serving(&fixture, &["--listen", "127.0.0.1:0"]);
    for (body, code) in [
        ("{bad", "-32700"),
        (r#"[{"jsonrpc":"2.0","id":30,"method":"ping"}]"#, "-32600"),
        (r#"{"jsonrpc":"1.0","id":31,"method":"ping"}"#, "-32600"),
    ] {
        let response = post(&address, None, body);
        assert!(response.starts_with("HTTP/1.1 400"), "{body}: {response}");
        assert!(response.contains("application/json"), "{body}: {response}");
        assert!(
            response.contains(&format!("\"code\":{code}")),
            "{body}: {response}"
        );
    }
    assert!(initialize_status(&address, None).contains(" 200"));
    stop(child);
}

/// A page on another site cannot drive a loopback server from the user's browser: a foreign
/// `Origin` is refused (403); this machine's pages and clients without `Origin` are served.
#[test]
fn foreign_browser_origins_are_refused_on_loopback() {
    let fixture = Fixture::new();
    let (child, address) = serving(&fixture, &["--listen", "127.0.0.1:0"]);
    let evil = initialize_status(&address, Some("http://evil.example.com"));
    assert!(evil.contains(" 403"), "{evil}");
    let local = initialize_status(&address, Some("http://localhost:3000"));
    assert!(local.contains(" 200"), "{local}");
    let none = initialize_status(&address, None);
    assert!(none.contains(" 200"), "{none}");
    stop(child);
}

/// `lathe mcp` started with `args`, and the address it says it listens on.
fn serving(fixture: &Fixture, args: &[&str]) -> (std::process::Child, String) {
    let mut child = fixture
        .command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lathe runs");
    let address = listening_address(&mut child);
    (child, address)
}

fn listening_address(child: &mut std::process::Child) -> String {
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let address = rest.trim_end_matches("/mcp").to_owned();
                let _ = tx.send(address);
            }
        }
    });
    rx.recv_timeout(DEADLINE)
        .expect("the server says where it listens")
}

fn stop(mut child: std::process::Child) {
    // SIGTERM: the orderly stop.
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("lathe mcp --listen did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
