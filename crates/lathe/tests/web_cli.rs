//! The web tools in the binary: registered for `lathe tool` (and exec, chat, mcp), set up from
//! `[web]` and `[permissions]`, and fetching through the proxy the environment names.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use lathe_testkit::{Framing, Response, Script, ScriptedServer};
use serde_json::json;

fn lathe(dir: &Path, config: &str) -> Command {
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let file = dir.join("config.toml");
    std::fs::write(&file, config).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lathe"));
    cmd.arg("--workspace")
        .arg(&ws)
        .arg("--config")
        .arg(&file)
        .env("LATHE_DATA_DIR", dir.join("data"))
        .env("LATHE_CONFIG_DIR", dir.join("config"))
        .stdin(Stdio::null());
    for key in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"] {
        cmd.env_remove(key).env_remove(key.to_ascii_lowercase());
    }
    cmd
}

fn run(cmd: &mut Command) -> (i32, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn rules_and_the_read_only_mode_apply_to_lathe_tool() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(
        Script::new().always(
            "/notes",
            Response::new(200)
                .header("content-type", "text/plain")
                .text("release notes\n")
                .framing(Framing::Length),
        ),
    )
    .unwrap();
    let call = json!({"url": format!("{}/notes", server.url())}).to_string();
    // Without a rule, the loopback server is refused by the tool itself (full mode by default).
    let (code, out) = run(lathe(dir.path(), "").args(["tool", "web_fetch", &call]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("127.0.0.1 is a loopback address"), "{out}");
    assert!(server.requests().is_empty());
    // With it, read-only fetches from that host.
    let allow = "[permissions]\nallow = [\"fetch(127.0.0.1)\"]\n";
    let (code, out) =
        run(lathe(dir.path(), allow).args(["tool", "--approval", "read-only", "web_fetch", &call]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("release notes"), "{out}");
    // Another host in read-only is refused by the gate, naming the rule to add.
    let other = json!({"url": "https://docs.rs/serde"}).to_string();
    let (code, out) = run(lathe(dir.path(), allow).args([
        "tool",
        "--approval",
        "read-only",
        "web_fetch",
        &other,
    ]));
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("`fetch(docs.rs)`"), "{out}");
}

#[test]
fn web_search_uses_the_configured_backend() {
    let dir = tempfile::tempdir().unwrap();
    let server = ScriptedServer::start(Script::new().always(
        "/search",
        Response::json(
            200,
            &json!({"results": [{"title": "Tokio", "url": "https://tokio.rs", "content": "An asynchronous runtime."}]}),
        ),
    ))
    .unwrap();
    let config = format!("[web]\nsearch_url = \"{}/search\"\n", server.url());
    let (code, out) = run(lathe(dir.path(), &config).args([
        "tool",
        "web_search",
        r#"{"query": "async runtime"}"#,
    ]));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("1. Tokio\n   https://tokio.rs\n   An asynchronous runtime."),
        "{out}"
    );
    let (code, out) = run(lathe(dir.path(), "[web]\nmax_byts = 1\n").args([
        "tool",
        "web_search",
        r#"{"query": "x"}"#,
    ]));
    assert_ne!(code, 0, "a misspelt key is an error: {out}");
    assert!(out.contains("max_byts"), "{out}");
}

/// A forward proxy on loopback: answers every request itself and keeps its request lines.
fn proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let lines = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            loop {
                let mut header = String::new();
                match reader.read_line(&mut header) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header == "\r\n" => break,
                    Ok(_) => {}
                }
            }
            lines.lock().unwrap().push(first.trim_end().to_owned());
            let body = "through the proxy\n";
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, seen)
}

#[test]
fn the_proxy_from_the_environment_is_used() {
    let dir = tempfile::tempdir().unwrap();
    let (port, seen) = proxy();
    // A name that resolves nowhere: only the proxy can reach it. The proxy is on loopback and
    // named by the user's environment, so the guard lets the connection to it through.
    let call = json!({"url": "http://docs.example.invalid/guide"}).to_string();
    let (code, out) = run(lathe(dir.path(), "")
        .env("HTTP_PROXY", format!("http://localhost:{port}"))
        .args(["tool", "web_fetch", &call]));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("through the proxy"), "{out}");
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["GET http://docs.example.invalid/guide HTTP/1.1"]
    );
}
