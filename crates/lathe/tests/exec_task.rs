//! `lathe exec` end to end: the real binary, the scripted model server over real HTTP, a
//! temporary workspace and data directory.

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::*;

fn read_edit_run_script() -> Script {
    Script::new()
        .chat(
            reply()
                .thinking("Read it first.")
                .tool_call("read_file", json!({"path": "greet.txt"}))
                .done(),
        )
        .chat(
            reply()
                .text("Changing it.")
                .tool_call_with_id(
                    "call_9",
                    "edit_file",
                    json!({"path": "greet.txt", "old_string": "hello", "new_string": "goodbye"}),
                )
                .done(),
        )
        .chat(
            reply()
                .tool_call("shell", json!({"command": "cat greet.txt && echo ran"}))
                .done(),
        )
        .chat(
            reply()
                .text("greet.txt now says goodbye. [TASK_COMPLETE]")
                .done(),
        )
}

#[test]
fn reads_edits_runs_a_command_and_finishes() {
    let h = Harness::new(read_edit_run_script());
    h.write("greet.txt", "hello world\n");
    h.write("AGENTS.md", "Always keep greetings lowercase.\n");
    let output = h.exec(
        "change hello to goodbye in greet.txt",
        &["--approval", "auto"],
    );
    assert_exit(&output, 0);
    assert_eq!(h.read("greet.txt"), "goodbye world\n");
    let out = stdout(&output);
    assert!(out.contains("Thought for"), "{out}");
    assert!(out.contains("read_file greet.txt (lines 1-1)"), "{out}");
    assert!(out.contains("edit_file greet.txt (+1 -1)"), "{out}");
    assert!(
        out.contains("shell cat greet.txt && echo ran -> exit 0,"),
        "{out}"
    );
    assert!(out.contains("greet.txt now says goodbye."), "{out}");
    assert!(!out.contains("TASK_COMPLETE"), "{out}");
    assert!(out.contains("Done · 4 turns"), "{out}");
    // Piped output is plain: no colour escapes.
    assert!(!out.contains('\u{1b}'), "{out:?}");

    // Faithful history in what went back to the model.
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4);
    let first = messages(&bodies[0]);
    assert_eq!(first[0]["role"], "system");
    let system = first[0]["content"].as_str().unwrap();
    assert!(system.contains(&h.ws.display().to_string()), "{system}");
    assert!(
        system.contains("Always keep greetings lowercase."),
        "AGENTS.md: {system}"
    );
    assert!(system.contains(std::env::consts::OS), "{system}");
    assert_eq!(
        first[1],
        json!({"role": "user", "content": "change hello to goodbye in greet.txt"})
    );
    let tools: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"read_file") && tools.contains(&"shell"),
        "{tools:?}"
    );

    let last = messages(&bodies[3]);
    assert_eq!(last.len(), 8, "{last:#?}");
    assert_eq!(last[2]["role"], "assistant");
    assert_eq!(last[2]["thinking"], "Read it first.");
    assert_eq!(last[2]["tool_calls"][0]["function"]["name"], "read_file");
    assert_eq!(
        last[2]["tool_calls"][0]["function"]["arguments"],
        json!({"path": "greet.txt"})
    );
    assert_eq!(last[3]["role"], "tool");
    assert_eq!(last[3]["tool_name"], "read_file");
    assert!(
        last[3]["content"].as_str().unwrap().contains("hello world"),
        "{}",
        last[3]
    );
    assert_eq!(last[4]["content"], "Changing it.");
    assert_eq!(last[4]["tool_calls"][0]["id"], "call_9");
    assert_eq!(
        last[4]["tool_calls"][0]["function"]["arguments"]["new_string"],
        "goodbye"
    );
    assert_eq!(last[5]["tool_call_id"], "call_9");
    assert_eq!(last[5]["tool_name"], "edit_file");
    assert_eq!(last[7]["tool_name"], "shell");
    let shell_result = last[7]["content"].as_str().unwrap();
    assert!(
        shell_result.contains("goodbye world") && shell_result.contains("ran"),
        "{shell_result}"
    );

    let session = h.newest_session();
    assert_eq!(session.status.as_str(), "completed");
    assert_eq!(
        session.title.as_deref(),
        Some("change hello to goodbye in greet.txt")
    );
    assert_eq!(session.model, MODEL);
}

#[test]
fn json_output_equals_the_events_in_the_database() {
    let h = Harness::new(read_edit_run_script());
    h.write("greet.txt", "hello world\n");
    let output = h.exec(
        "change hello to goodbye in greet.txt",
        &["--approval", "auto", "--json"],
    );
    assert_exit(&output, 0);
    let printed = json_lines(&output);
    let stored = h.stored_events();
    assert_eq!(printed, stored);
    let types: Vec<&str> = printed
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.first(), Some(&"run_started"));
    assert_eq!(types[1], "turn_started");
    assert_eq!(types.last(), Some(&"run_result"));
    assert_eq!(types[types.len() - 2], "run_finished");
    assert_eq!(printed.last().unwrap()["status"], "finished");
    let finished = of_type(&printed, "tool_call_finished");
    assert_eq!(finished.len(), 3);
    assert_eq!(finished[1]["stats"], json!({"added": 1, "removed": 1}));
    assert!(of_type(&printed, "thinking_done").len() == 1);
    assert_eq!(
        of_type(&printed, "files_changed")[0]["paths"],
        json!(["greet.txt"])
    );
}

#[test]
fn the_text_protocol_for_a_model_without_tools() {
    let script = Script::new()
        .chat(reply().text("I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"greet.txt\"}}\n</tool_call>").done())
        .chat(reply().text("<tool_call>{\"name\": \"edit_file\", \"arguments\": {\"path\": \"greet.txt\", \"old_string\": \"hello\", \"new_string\": \"hi\"}}").done())
        .chat(reply().text("Done.").done());
    let h = Harness::with_capabilities(script, &["completion"]);
    h.write("greet.txt", "hello world\n");
    let output = h.exec(
        "replace hello with hi in greet.txt",
        &["--approval", "auto"],
    );
    assert_exit(&output, 0);
    assert_eq!(h.read("greet.txt"), "hi world\n");
    let out = stdout(&output);
    assert!(
        !out.contains("\"arguments\""),
        "calls are not shown as text: {out}"
    );
    assert!(out.contains("I will read it."), "{out}");
    assert!(
        out.contains("text tool protocol"),
        "the switch is said: {out}"
    );

    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[0]
            .get("tools")
            .is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)),
        "{}",
        bodies[0]
    );
    let system = messages(&bodies[0])[0]["content"].as_str().unwrap();
    assert!(
        system.contains("<tool_call>") && system.contains("read_file"),
        "{system}"
    );
    // The call goes back in the assistant's text, its result as a user message.
    let second = messages(&bodies[1]);
    let assistant = second.iter().find(|m| m["role"] == "assistant").unwrap();
    assert!(
        assistant["content"]
            .as_str()
            .unwrap()
            .contains("<tool_call>"),
        "{assistant}"
    );
    let result = second.last().unwrap();
    assert_eq!(result["role"], "user");
    assert!(
        result["content"].as_str().unwrap().contains("hello world"),
        "{result}"
    );
}

#[test]
fn the_prompt_can_come_from_stdin() {
    let h = Harness::new(Script::new().chat(reply().text("It is a greeting.").done()));
    h.write("greet.txt", "hello\n");
    let mut cmd = h.lathe();
    cmd.args(["exec", "-", "--model", MODEL, "--base-url", &h.server.url()]);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"what is greet.txt?\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 0);
    assert_eq!(
        messages(&h.bodies()[0])[1]["content"],
        "what is greet.txt?\n"
    );
}

#[test]
fn usage_errors_exit_2() {
    let h = Harness::new(Script::new());
    let output = h.exec("   ", &[]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("the task is empty"),
        "{}",
        stderr(&output)
    );
    let output = h.exec("hi", &["--approval", "yolo"]);
    assert_exit(&output, 2);
    let mut cmd = h.lathe();
    let output = cmd
        .args(["exec", "hi", "--base-url", &h.server.url()])
        .output()
        .unwrap();
    assert_exit(&output, 2);
    let err = stderr(&output);
    assert!(
        err.contains("no model given") && err.contains(MODEL),
        "{err}"
    );
}

#[test]
fn a_server_that_is_not_running_fails_with_exit_1() {
    let h = Harness::new(Script::new());
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut cmd = h.lathe();
    let output = cmd
        .args([
            "exec",
            "hi",
            "--model",
            MODEL,
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
        ])
        .output()
        .unwrap();
    assert_exit(&output, 1);
    let all = format!("{}{}", stdout(&output), stderr(&output));
    assert!(all.contains("no model server at"), "{all}");
    assert_eq!(h.newest_session().status.as_str(), "failed");
    let _: Option<Value> = None;
}
