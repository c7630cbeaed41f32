//! How `lathe exec` reports a run: the first JSON event names the session, the last is the one
//! result; the human end line says the same in one line; denied calls are listed with how to
//! allow them and exit 3; a run that ends without a word gets a summary, or a line built from
//! its last calls.

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::*;

/// What the model reads when it ended without a word (the executor's `SUMMARY_REQUEST`).
const SUMMARY_REQUEST: &str = "Summarise in 2-3 sentences";

fn edit_script(last: &str) -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call("read_file", json!({"path": "greet.txt"}))
                .done_with("stop", Some((100, 10))),
        )
        .chat(
            reply()
                .tool_call(
                    "edit_file",
                    json!({"path": "greet.txt", "old_string": "hello", "new_string": "goodbye"}),
                )
                .done_with("stop", Some((200, 20))),
        )
        .chat(reply().text(last).done_with("stop", Some((300, 30))))
}

#[test]
fn json_starts_with_the_session_and_ends_with_one_result() {
    let h = Harness::new(edit_script("I've changed hello to goodbye."));
    h.write("greet.txt", "hello world\n");
    let output = h.exec(
        "change hello to goodbye in greet.txt",
        &["--approval", "auto", "--json"],
    );
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let session = h.newest_session();

    let first = &events[0];
    assert_eq!(first["type"], "run_started", "{first}");
    assert_eq!(first["session_id"], session.id.as_str());
    assert_eq!(first["model"], MODEL);
    assert_eq!(first["provider"], "ollama");
    assert_eq!(first["base_url"], h.server.url());
    assert_eq!(first["workspace"], h.ws.display().to_string());
    assert_eq!(first["approval"], "auto");
    assert_eq!(first["max_turns"], 50);

    assert_eq!(of_type(&events, "run_result").len(), 1);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_result", "{last}");
    assert_eq!(last["session_id"], session.id.as_str());
    assert_eq!(last["status"], "finished");
    assert_eq!(last["answer"], "I've changed hello to goodbye.");
    assert_eq!(last["answer_from"], "model");
    assert_eq!(last["turns"], 3);
    assert_eq!(
        last["files_changed"],
        json!([{"path": "greet.txt", "added": 1, "removed": 1, "created": false, "deleted": false}])
    );
    assert_eq!(last["denied"], json!([]));
    assert_eq!(last["changes_denied"], false);
    assert_eq!(
        last["usage"],
        json!({"prompt_tokens": 600, "completion_tokens": 60})
    );
    let ms = |key: &str| {
        last[key]
            .as_u64()
            .unwrap_or_else(|| panic!("{key}: {last}"))
    };
    // The model's and the tools' times are parts of the whole.
    assert!(
        ms("model_ms") + ms("tool_ms") <= ms("duration_ms"),
        "{last}"
    );
    // Stored as printed.
    assert_eq!(events, h.stored_events());
}

#[test]
fn the_end_line_has_turns_files_and_time() {
    let h = Harness::new(edit_script("I've changed hello to goodbye."));
    h.write("greet.txt", "hello world\n");
    let output = h.exec(
        "change hello to goodbye in greet.txt",
        &["--approval", "auto"],
    );
    assert_exit(&output, 0);
    let out = stdout(&output);
    let end = out.lines().last().unwrap();
    let (facts, took) = end.rsplit_once(" · ").unwrap();
    assert_eq!(facts, "Done · 3 turns · 1 file changed (+1 -1)", "{out}");
    let seconds = took.strip_suffix(" s").unwrap_or_else(|| panic!("{end}"));
    assert!(seconds.parse::<f64>().is_ok(), "{end}");
}

/// A shell command and a write, both needing approval, with nobody to ask.
fn denied_script() -> Script {
    Script::new()
        .chat(
            reply()
                .tool_calls(&[
                    (None, "shell", json!({"command": "cargo fmt"})),
                    (
                        None,
                        "write_file",
                        json!({"path": "src/a.rs", "content": "fn a() {}\n"}),
                    ),
                ])
                .done(),
        )
        .chat(reply().text("Both changes need your approval.").done())
}

#[test]
fn ask_mode_without_a_terminal_lists_the_denied_calls_and_exits_3() {
    let h = Harness::new(denied_script());
    let output = h.exec("format the code and add src/a.rs", &[]);
    assert_exit(&output, 3);
    assert!(!h.ws.join("src/a.rs").exists());
    let out = stdout(&output);
    assert!(
        out.contains(
            "2 calls were denied: shell \"cargo fmt\", write_file src/a.rs; nothing was written"
        ),
        "{out}"
    );
    assert!(
        out.contains("--approval auto") && out.contains("[permissions] allow rule"),
        "how to allow them: {out}"
    );
    assert!(out.contains("no files changed"), "{out}");
}

#[test]
fn the_result_names_each_denied_call_and_why() {
    let h = Harness::new(denied_script());
    let output = h.exec("format the code and add src/a.rs", &["--json"]);
    assert_exit(&output, 3);
    let events = json_lines(&output);
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_result");
    assert_eq!(last["changes_denied"], true);
    assert_eq!(last["files_changed"], json!([]));
    let denied = last["denied"].as_array().unwrap();
    let named: Vec<(&str, &str)> = denied
        .iter()
        .map(|d| {
            (
                d["tool"].as_str().unwrap(),
                d["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        named,
        [
            ("shell", "shell \"cargo fmt\""),
            ("write_file", "write_file src/a.rs")
        ]
    );
    let finished = of_type(&events, "tool_call_finished");
    for call in denied {
        let reason = call["reason"].as_str().unwrap();
        assert!(reason.contains("no terminal to ask on"), "{reason}");
        // The id leads to the call's own events.
        assert!(
            finished
                .iter()
                .any(|f| f["call_id"] == call["call_id"] && f["status"] == "denied"),
            "{call}"
        );
    }
}

#[test]
fn a_denied_call_next_to_a_change_that_ran_exits_0() {
    let script = Script::new()
        .chat(
            reply()
                .tool_calls(&[
                    (None, "shell", json!({"command": "touch made.txt"})),
                    (
                        None,
                        "write_file",
                        json!({"path": "b.txt", "content": "b\n"}),
                    ),
                ])
                .done(),
        )
        .chat(reply().text("Made one of them.").done());
    let h = Harness::new(script);
    h.write(
        ".lathe/config.toml",
        "[permissions]\nallow = [\"shell(touch *)\"]\n",
    );
    h.trust();
    let output = h.exec("make made.txt and b.txt", &[]);
    assert_exit(&output, 0);
    assert!(h.ws.join("made.txt").exists());
    let out = stdout(&output);
    assert!(
        out.contains("1 call was denied: write_file b.txt\n"),
        "{out}"
    );
}

/// The request for a summary, when the body is one.
fn asked_for_summary(body: &Value) -> bool {
    messages(body).last().is_some_and(|m| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with(SUMMARY_REQUEST))
    })
}

#[test]
fn a_run_that_ends_without_a_word_asks_for_a_summary() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("write_file", json!({"path": "a.txt", "content": "hi\n"}))
                .done(),
        )
        .chat(reply().done())
        .chat(reply().text("I wrote a.txt with a greeting.").done());
    let h = Harness::new(script);
    let output = h.exec("write a.txt", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(!asked_for_summary(&bodies[1]));
    assert!(asked_for_summary(&bodies[2]), "{}", bodies[2]);
    // No tools are offered for it.
    assert!(
        bodies[2]
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{}",
        bodies[2]
    );
    let last = json_lines(&output).pop().unwrap();
    assert_eq!(last["answer"], "I wrote a.txt with a greeting.");
    assert_eq!(last["answer_from"], "summary");
    assert_eq!(last["turns"], 3);
}

#[test]
fn without_a_summary_the_answer_is_built_from_the_last_calls() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "edit_file",
                    json!({"path": "greet.txt", "old_string": "hello", "new_string": "goodbye"}),
                )
                .done(),
        )
        .chat(
            reply()
                .tool_call("shell", json!({"command": "cat greet.txt"}))
                .done(),
        )
        .chat(reply().done())
        .chat(reply().done());
    let h = Harness::new(script);
    h.write("greet.txt", "hello world\n");
    let output = h.exec(
        "change hello to goodbye in greet.txt",
        &["--approval", "auto"],
    );
    assert_exit(&output, 0);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(asked_for_summary(&bodies[3]));
    let expected = "Edited greet.txt (+1 -1); ran `cat greet.txt` (exit 0).";
    let out = stdout(&output);
    assert!(out.contains(&format!("{expected}\n")), "{out}");
    let last = h.stored_events().pop().unwrap();
    assert_eq!(last["type"], "run_result");
    assert_eq!(last["answer"], expected);
    assert_eq!(last["answer_from"], "tool_results");
}

#[test]
fn a_run_with_text_gets_no_summary_turn() {
    let h = Harness::new(edit_script("Changed."));
    h.write("greet.txt", "hello world\n");
    let output = h.exec(
        "change hello to goodbye in greet.txt",
        &["--approval", "auto"],
    );
    assert_exit(&output, 0);
    assert!(!h.bodies().iter().any(asked_for_summary));
}

#[test]
fn the_summary_turn_on_the_text_protocol_keeps_the_history_in_text() {
    let script = Script::new()
        .chat(
            reply()
                .text("<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.txt\", \"content\": \"hi\\n\"}}</tool_call>")
                .done(),
        )
        .chat(reply().done())
        .chat(reply().text("I wrote a.txt.").done());
    let h = Harness::with_capabilities(script, &["completion"]);
    let output = h.exec("write a.txt", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(h.read("a.txt"), "hi\n");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(asked_for_summary(&bodies[2]), "{}", bodies[2]);
    // The call and its result went out as text, as in the turns before: no `tool` role.
    let sent = messages(&bodies[2]);
    assert!(sent.iter().all(|m| m["role"] != "tool"), "{sent:#?}");
    assert!(
        sent.iter().any(|m| m["content"]
            .as_str()
            .is_some_and(|c| c.contains("<tool_result"))),
        "{sent:#?}"
    );
    let last = json_lines(&output).pop().unwrap();
    assert_eq!(last["answer"], "I wrote a.txt.");
    assert_eq!(last["answer_from"], "summary");
}
