//! Issue 20 through the binary: the window the server has (a model whose context length is
//! smaller than the configured window), said once; the meter's numbers from the server's own
//! counts in `exec --json`'s result, `lathe sessions show`, and under a chat turn in a real
//! terminal.

use lathe_testkit::{Script, ollama};

use crate::agent_harness::*;
use crate::pty::Terminal;

const NOTE: &str = "the server's window is 4,096 tokens, smaller than the configured 32,768; \
using 4,096 (set [model] context_window or --context-window to silence this)";

/// A server whose model has a context length of 4,096 tokens, answering `answers` replies
/// (each counted by the server as 26 prompt tokens and 12 generated in 4.535599 s).
fn small_model(answers: usize) -> Harness {
    let mut script = Script::new().always(
        "/api/show",
        ollama::show(&["completion", "tools"], Some(4_096)),
    );
    for _ in 0..answers {
        script = script.chat(reply().text("Hello.").done());
    }
    Harness::new(script)
}

#[test]
fn a_server_window_smaller_than_the_configured_one_is_used_and_said_once() {
    let h = small_model(1);
    let output = h.exec("hi", &["--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let notices: Vec<&str> = of_type(&events, "notice")
        .iter()
        .filter_map(|n| n["message"].as_str())
        .collect();
    assert_eq!(notices, [NOTE], "{events:?}");
    // Ollama is sent the window it has, and the run kept within it.
    assert_eq!(h.bodies()[0]["options"]["num_ctx"], 4_096);
    let result = of_type(&events, "run_result")[0];
    assert_eq!(result["context_window"], 4_096);

    // Configured to what the server has: nothing to say.
    let h = small_model(1);
    h.write(".lathe/config.toml", "[model]\ncontext_window = 4096\n");
    let output = h.exec("hi", &["--json"]);
    assert_exit(&output, 0);
    assert!(of_type(&json_lines(&output), "notice").is_empty());
}

#[test]
fn the_result_event_and_sessions_show_carry_the_servers_counts_per_turn() {
    let h = small_model(1);
    let output = h.exec("hi", &["--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let result = of_type(&events, "run_result")[0];
    assert_eq!(
        result["turn_usage"],
        serde_json::json!([{"turn": 1, "prompt_tokens": 26, "completion_tokens": 12,
            "generation_ms": 4_535}]),
        "{result}"
    );
    let id = result["session_id"].as_str().unwrap().to_owned();
    let shown = h.lathe().args(["sessions", "show", &id]).output().unwrap();
    let text = stdout(&shown);
    // 12 tokens in 4.535 s.
    assert!(
        text.contains("tokens\n  turn 1 · 26 in · 12 out · 2.6 tokens/s\n  total · 26 in · 12 out"),
        "{text}"
    );
    let json = h
        .lathe()
        .args(["sessions", "show", &id, "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    assert_eq!(
        value["tokens"],
        serde_json::json!([{"turn": 1, "prompt_tokens": 26, "completion_tokens": 12,
            "generation_ms": 4_535}])
    );
}

#[test]
fn chat_shows_the_window_meter_after_each_turn_and_status_in_detail() {
    let h = small_model(2);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for(&format!("note: {NOTE}"));
    term.wait_for("> ");
    term.type_line("hi");
    term.wait_for("Hello.");
    // The last turn's prompt and reply as the server counted them (26 + 12) in the window,
    // and its speed by the server's clock.
    term.wait_for("context 38/4,096 tokens (0%) · 2.6 tokens/s");
    term.type_line("again");
    term.wait_for_n("context 38/4,096 tokens (0%) · 2.6 tokens/s", 2);
    term.type_line("/status");
    term.wait_for(
        "window     4,096 tokens: configured 32,768 (the default), the server's 4,096; compact prompt profile",
    );
    term.wait_for("speed      2.6 tokens/s (last turn, the server's clock)");
    term.wait_for("tokens     52 in, 24 out (this session)");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    // Said once, not per turn.
    assert_eq!(term.screen().matches("the server's window is").count(), 1);
}
