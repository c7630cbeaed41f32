//! Model server errors as `lathe exec` and `lathe chat` show them: each once, with advice that
//! fits, and retries that say they are waiting.

use std::io::Write;
use std::process::Stdio;

use lathe_testkit::{Script, openai};

use crate::agent_harness::*;

/// A loopback URL where nothing listens.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

#[test]
fn an_error_is_printed_once_by_exec_and_by_chat() {
    let h = Harness::new(Script::new());
    let url = dead_url();
    let wanted = format!("no model server at {url}");

    let output = h
        .lathe()
        .args(["exec", "hi", "--model", MODEL, "--base-url", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let all = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(count(&all, &wanted), 1, "{all}");
    assert!(
        stderr(&output).contains(&format!("error: {wanted}")),
        "{all}"
    );
    assert!(stdout(&output).contains("Failed · 1 turn"), "{all}");

    let mut chat = h
        .lathe()
        .args(["chat", "--model", MODEL, "--base-url", &url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin.take().unwrap().write_all(b"hi\n").unwrap();
    let output = chat.wait_with_output().unwrap();
    let all = format!("{}{}", stdout(&output), stderr(&output));
    assert_eq!(count(&all, &wanted), 1, "{all}");
    assert!(stdout(&output).contains("Failed · 1 turn"), "{all}");

    // --json: one error event, and nothing besides the events.
    let output = h
        .lathe()
        .args(["exec", "hi", "--json", "--model", MODEL, "--base-url", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let events = json_lines(&output);
    assert_eq!(of_type(&events, "error").len(), 1, "{events:?}");
    assert_eq!(stderr(&output), "");
}

#[test]
fn exec_advice_fits_the_provider_and_the_host() {
    let h = Harness::new(Script::new());
    let url = format!("{}/v1", dead_url());
    let output = h
        .lathe()
        .args(["exec", "hi", "--provider", "openai", "--model", MODEL])
        .args(["--base-url", &url])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let err = stderr(&output);
    assert!(
        err.contains(&format!(
            "no model server at {url}: start an OpenAI-compatible server"
        )),
        "{err}"
    );
    assert!(!err.contains("ollama serve"), "{err}");

    // No model given, and no server either: both are said at once.
    let dead = dead_url();
    let output = h
        .lathe()
        .args(["exec", "hi", "--base-url", &dead])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 2);
    let err = stderr(&output);
    assert!(
        err.contains("no model given: pass --model NAME")
            && err.contains(&format!(
                "The server could not be asked for its models: no model server at {dead}: start Ollama"
            )),
        "{err}"
    );

    let output = h.exec_at("http://lathe-model-server.invalid:11434");
    let err = stderr(&output);
    assert!(
        err.contains("cannot resolve the host name 'lathe-model-server.invalid'"),
        "{err}"
    );
}

#[test]
fn a_busy_server_is_waited_for_and_the_wait_is_shown() {
    let busy = || openai::error(503, "busy").header("retry-after", "1");
    let h = Harness::new(
        Script::new()
            .chat(busy())
            .chat(reply().text("Here after all.").done())
            .chat(busy())
            .chat(reply().text("Here after all.").done()),
    );
    let notice = "model server busy (503): retrying in 1 s (attempt 1 of 3)";
    let output = h.exec("hi", &["--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let notices = of_type(&events, "notice");
    assert_eq!(notices.len(), 1, "{events:?}");
    assert_eq!(notices[0]["message"], notice);
    let output = h.exec("hi", &[]);
    assert_exit(&output, 0);
    assert!(
        stdout(&output).contains(&format!("note: {notice}")),
        "{}",
        stdout(&output)
    );
    assert!(stdout(&output).contains("Here after all."));
}

impl Harness {
    /// `lathe exec hi` against `url`, stdin closed.
    fn exec_at(&self, url: &str) -> std::process::Output {
        self.lathe()
            .args(["exec", "hi", "--model", MODEL, "--base-url", url])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}
