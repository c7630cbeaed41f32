//! The scripted server as a real HTTP client sees it.

use futures::StreamExt;
use lathe_testkit::{
    REQUESTS_PATH, RecordedRequest, Reply, Response, Script, ScriptedServer, ollama, openai,
};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

#[tokio::test]
async fn streams_parts_and_records_the_body() {
    let server =
        ScriptedServer::start(Script::new().chat(ollama::turn("m").text("Hé").done().rechunk(5)))
            .unwrap();
    let client = reqwest::Client::new();
    let response = client
        .post(format!("{}/api/chat", server.url()))
        .json(&json!({"model": "m", "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        body.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(body, ollama::turn("m").text("Hé").done().body_bytes());
    let requests = server.chat_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].json().unwrap()["model"], "m");
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
}

#[tokio::test]
async fn dropped_connection_is_an_error_for_the_client() {
    let server = ScriptedServer::start(
        Script::new().chat(
            openai::turn("m")
                .text("partial")
                .done()
                .truncate_and_drop(20),
        ),
    )
    .unwrap();
    let response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.url()))
        .send()
        .await
        .unwrap();
    let mut stream = response.bytes_stream();
    let mut saw_error = false;
    while let Some(chunk) = stream.next().await {
        if chunk.is_err() {
            saw_error = true;
        }
    }
    assert!(
        saw_error,
        "a body cut off mid-chunk must surface as an error"
    );
}

#[tokio::test]
async fn reset_is_an_error_before_any_response() {
    let server = ScriptedServer::start(Script::new().chat(Reply::Reset)).unwrap();
    let result = reqwest::Client::new()
        .post(format!("{}/api/chat", server.url()))
        .send()
        .await;
    assert!(result.is_err());
}

#[tokio::test]
async fn status_and_json_errors() {
    let server = ScriptedServer::start(
        Script::new()
            .chat(ollama::tools_unsupported("gemma"))
            .chat(Response::new(503)),
    )
    .unwrap();
    let client = reqwest::Client::new();
    let first = client
        .post(format!("{}/api/chat", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 400);
    assert!(
        first
            .text()
            .await
            .unwrap()
            .contains("does not support tools")
    );
    let second = client
        .post(format!("{}/api/chat", server.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(second.status(), 503);
}

#[test]
fn binary_serves_a_script_file_and_reports_requests() {
    let dir = std::env::temp_dir().join(format!("lathe-testkit-bin-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script_path = dir.join("script.json");
    let record_path = dir.join("record.json");
    let script = Script::new().chat(ollama::turn("m").text("hi").done());
    std::fs::write(&script_path, serde_json::to_string(&script).unwrap()).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_scripted-model-server"))
        .arg(&script_path)
        .arg("--record")
        .arg(&record_path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut port = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut port)
        .unwrap();
    let port: u16 = port.trim().parse().unwrap();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let text = client
            .post(format!("http://127.0.0.1:{port}/api/chat"))
            .body("{\"model\":\"m\"}")
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(text.contains("\"content\":\"hi\""));
        let listed: Vec<RecordedRequest> = client
            .get(format!("http://127.0.0.1:{port}{REQUESTS_PATH}"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].json().unwrap()["model"], "m");
    });

    child.stdin.take().unwrap().write_all(b"").unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    let recorded: Vec<RecordedRequest> =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    assert_eq!(recorded.len(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}
