//! `lathe exec` where the run does not simply finish: denials, the turn limit, the repeat guard,
//! the nudge.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

#[test]
fn without_a_terminal_a_call_that_would_ask_is_denied_and_the_model_told() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "edit_file",
                    json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
                )
                .done(),
        )
        .chat(
            reply()
                .text("I could not change it; rerun with --approval auto.")
                .done(),
        );
    let h = Harness::new(script);
    h.write("a.txt", "one\n");
    // The default mode is ask, and the test's stdin is not a terminal.
    let output = h.exec("change one to two in a.txt", &[]);
    // The change the task needed was denied and nothing was written.
    assert_exit(&output, 3);
    assert_eq!(h.read("a.txt"), "one\n", "nothing was written");
    let out = stdout(&output);
    assert!(out.contains("edit_file a.txt -> denied"), "{out}");
    let bodies = h.bodies();
    let result = messages(&bodies[1]).last().unwrap().clone();
    assert_eq!(result["role"], "tool");
    let text = result["content"].as_str().unwrap();
    // Nobody was asked: the model is not told that a user denied it.
    assert!(
        text.starts_with("this call needs the user's approval, and this run has no terminal"),
        "{text}"
    );
    assert!(text.contains("--approval auto"), "{text}");
    // The edit the user was asked about is shown.
    assert!(out.contains("-one") && out.contains("+two"), "{out}");
}

#[test]
fn read_only_mode_runs_reads_and_refuses_changes() {
    let script = Script::new()
        .chat(
            reply()
                .tool_calls(&[
                    (None, "read_file", json!({"path": "a.txt"})),
                    (None, "shell", json!({"command": "touch made.txt"})),
                ])
                .done(),
        )
        .chat(reply().text("Read it; could not run the command.").done());
    let h = Harness::new(script);
    h.write("a.txt", "one\n");
    let output = h.exec(
        "look at a.txt and create made.txt",
        &["--approval", "read-only", "--json"],
    );
    let events = json_lines(&output);
    let finished = of_type(&events, "tool_call_finished");
    assert_eq!(finished[0]["status"], "ok");
    assert_eq!(finished[1]["status"], "denied");
    assert!(!h.ws.join("made.txt").exists());
    let results = messages(&h.bodies()[1])
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect::<Vec<_>>();
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .contains("read-only"),
        "{}",
        results[1]
    );
}

#[test]
fn the_turn_limit_stops_the_run_says_so_and_exits_1() {
    let mut script = Script::new();
    for i in 0..4 {
        script = script.chat(
            reply()
                .tool_call("read_file", json!({"path": format!("f{i}.txt")}))
                .done(),
        );
    }
    let h = Harness::new(script);
    let output = h.exec("read every file", &["--max-turns", "3"]);
    assert_exit(&output, 1);
    assert_eq!(h.bodies().len(), 3);
    let out = stdout(&output);
    assert!(out.contains("--max-turns limit (3) was hit"), "{out}");
    assert_eq!(h.newest_session().status.as_str(), "max_turns");
    let events = h.stored_events();
    assert_eq!(events[events.len() - 2]["type"], "run_finished");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "run_result");
    assert_eq!(last["status"], "max_turns");
    assert!(
        last["message"].as_str().unwrap().contains("limit"),
        "{last}"
    );
}

#[test]
fn the_same_call_three_times_in_a_row_is_refused_in_band() {
    let h = Harness::new(
        Script::new()
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "echo x >> count.txt"}))
                    .done(),
            )
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "echo x >> count.txt"}))
                    .done(),
            )
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "echo x >> count.txt"}))
                    .done(),
            )
            .chat(reply().text("Stopping.").done()),
    );
    let output = h.exec("append x to count.txt", &["--approval", "auto"]);
    assert_exit(&output, 0);
    assert_eq!(h.read("count.txt"), "x\nx\n", "the third call did not run");
    let bodies = h.bodies();
    let told = messages(&bodies[3]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.contains("3 times in a row") && told.contains("not run again"),
        "{told}"
    );
    assert!(
        stdout(&output).contains("-> refused"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_model_that_keeps_repeating_is_stopped() {
    let mut script = Script::new();
    for _ in 0..6 {
        script = script.chat(
            reply()
                .tool_call("read_file", json!({"path": "a.txt"}))
                .done(),
        );
    }
    let h = Harness::new(script);
    h.write("a.txt", "one\n");
    let output = h.exec("read a.txt", &[]);
    assert_exit(&output, 1);
    assert_eq!(h.bodies().len(), 4, "stopped at the fourth identical call");
    assert!(
        stdout(&output).contains("4 times in a row"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn a_change_task_that_wrote_nothing_is_nudged_once() {
    let h = Harness::new(
        Script::new()
            .chat(reply().tool_call("shell", json!({"command": "ls"})).done())
            .chat(reply().text("Done: I've fixed it.").done())
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "echo fixed > bug.txt"}))
                    .done(),
            )
            .chat(reply().text("Fixed it.").done()),
    );
    h.write("bug.txt", "broken\n");
    let output = h.exec("fix bug.txt", &["--approval", "auto"]);
    assert_exit(&output, 0);
    assert_eq!(h.read("bug.txt"), "fixed\n");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4);
    let nudge = messages(&bodies[2]).last().unwrap();
    assert_eq!(nudge["role"], "user");
    assert!(
        nudge["content"]
            .as_str()
            .unwrap()
            .contains("no file was written"),
        "{nudge}"
    );
    // Only once: the other requests carry no nudge.
    let nudges = messages(&bodies[3])
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.contains("no file was written"))
        })
        .count();
    assert_eq!(nudges, 1);
}

#[test]
fn a_nudged_model_that_still_changes_nothing_finishes() {
    let h = Harness::new(
        Script::new()
            .chat(reply().text("Fixed the typo.").done())
            .chat(
                reply()
                    .text("Still nothing to fix: the file is correct.")
                    .done(),
            ),
    );
    let output = h.exec("fix the typo in README", &[]);
    assert_exit(&output, 0);
    assert_eq!(h.bodies().len(), 2);
    // The end line says so.
    let out = stdout(&output);
    assert!(out.contains("Done · 2 turns · no files changed ·"), "{out}");
}

/// Issue 14: a plain question was nudged as if it had asked for a change.
#[test]
fn a_question_is_never_nudged_even_when_the_answer_says_done() {
    for (task, answer) in [
        (
            "What does add return? Just explain.",
            "It returns a + b. Done.",
        ),
        // Another language: unsure, so no nudge.
        (
            "Korrigiere den Tippfehler in README",
            "Erledigt, ich habe ihn korrigiert.",
        ),
        // A change task whose answer claims nothing: it says why nothing changed.
        (
            "fix the typo in README",
            "There is no typo: nothing to change.",
        ),
    ] {
        let h = Harness::new(Script::new().chat(reply().text(answer).done()));
        let output = h.exec(task, &[]);
        assert_exit(&output, 0);
        assert_eq!(h.bodies().len(), 1, "{task}: nudged");
    }
}
