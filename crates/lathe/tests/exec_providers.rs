//! `lathe exec` against an OpenAI-compatible server, and configured through the environment.

use std::process::Stdio;

use serde_json::json;

use lathe_testkit::{Script, openai};

use crate::agent_harness::*;

#[test]
fn an_openai_compatible_server_with_streamed_tool_calls() {
    let script = Script::new()
        .openai_models(&[MODEL])
        .chat(
            openai::turn(MODEL)
                .reasoning("Look at it.")
                .tool_call(0, "call_a", "read_file", &["{\"pa", "th\": \"a.txt\"}"])
                .finish("tool_calls")
                .usage(120, 9)
                .done(),
        )
        .chat(
            openai::turn(MODEL)
                .text("It says ")
                .text("alpha.")
                .finish("stop")
                .done(),
        );
    let h = Harness::new(script);
    h.write("a.txt", "alpha\n");
    let url = format!("{}/v1", h.server.url());
    let mut cmd = h.lathe();
    cmd.args([
        "exec",
        "what does a.txt say?",
        "--provider",
        "openai",
        "--base-url",
        &url,
        "--model",
        MODEL,
    ]);
    cmd.env("OPENAI_API_KEY", "sk-test-key")
        .stdin(Stdio::null());
    let output = cmd.output().unwrap();
    assert_exit(&output, 0);
    assert!(
        stdout(&output).contains("It says alpha."),
        "{}",
        stdout(&output)
    );
    let requests = h.server.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(
        requests[0].path.ends_with("/v1/chat/completions"),
        "{}",
        requests[0].path
    );
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-test-key")
    );
    let second = requests[1].json().unwrap();
    let messages = messages(&second);
    let assistant = &messages[2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_a");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "read_file");
    let arguments: serde_json::Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(arguments, json!({"path": "a.txt"}));
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_a");
    assert!(messages[3]["content"].as_str().unwrap().contains("alpha"));
    let session = h.newest_session();
    assert_eq!(session.provider, "openai");
}

#[test]
fn the_model_and_server_come_from_the_environment() {
    let script = Script::new().chat(reply().text("Hello from the environment.").done());
    let h = Harness::new(script);
    let host = h.server.url().trim_start_matches("http://").to_owned();
    let mut cmd = h.lathe();
    cmd.args(["exec", "say hello"])
        .env("OLLAMA_HOST", &host)
        .env("LATHE_MODEL", MODEL)
        .stdin(Stdio::null());
    let output = cmd.output().unwrap();
    assert_exit(&output, 0);
    assert!(
        stdout(&output).contains("Hello from the environment."),
        "{}",
        stdout(&output)
    );
    assert_eq!(h.bodies()[0]["model"], MODEL);
}

#[test]
fn the_model_and_server_come_from_the_configuration_file() {
    let script = Script::new().chat(reply().text("Configured.").done());
    let h = Harness::new(script);
    h.write(
        ".lathe/config.toml",
        &format!(
            "[model]\nname = \"{MODEL}\"\nbase_url = \"{}\"\ncontext_window = 9000\nkeep_alive = \"10m\"\n[agent]\nmax_turns = 3\n",
            h.server.url()
        ),
    );
    // A server named by the workspace's file applies once the user trusts the file.
    h.trust();
    let output = h
        .lathe()
        .args(["exec", "hello"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let body = &h.bodies()[0];
    assert_eq!(body["options"]["num_ctx"], 9000);
    assert_eq!(body["keep_alive"], "10m");
}

#[test]
fn an_unknown_configuration_key_is_a_usage_error() {
    let h = Harness::new(Script::new());
    h.write(".lathe/config.toml", "[model]\nnmae = \"x\"\n");
    let output = h.exec("hello", &[]);
    assert_exit(&output, 2);
    assert!(stderr(&output).contains("nmae"), "{}", stderr(&output));
}
