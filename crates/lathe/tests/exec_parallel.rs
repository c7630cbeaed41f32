//! `lathe exec` with several calls in one turn, and sessions afterwards.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

#[test]
fn read_only_calls_of_one_turn_run_together_and_results_keep_call_order() {
    let script = Script::new()
        .chat(
            reply()
                .tool_calls(&[
                    (Some("r1"), "read_file", json!({"path": "a.txt"})),
                    (Some("r2"), "grep", json!({"pattern": "beta"})),
                    (Some("r3"), "read_file", json!({"path": "c.txt"})),
                ])
                .done(),
        )
        .chat(reply().text("Read all three.").done());
    let h = Harness::new(script);
    h.write("a.txt", "alpha\n");
    h.write("b.txt", "beta\n");
    h.write("c.txt", "gamma\n");
    let output = h.exec("what do the files say?", &["--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    // All three start before any finishes: they are one concurrent group.
    let positions = |kind: &str| -> Vec<usize> {
        events
            .iter()
            .enumerate()
            .filter(|(_, e)| e["type"] == kind)
            .map(|(i, _)| i)
            .collect()
    };
    let started = positions("tool_call_started");
    let finished = positions("tool_call_finished");
    assert_eq!((started.len(), finished.len()), (3, 3));
    assert!(started.iter().max() < finished.iter().min(), "{events:#?}");
    let ids: Vec<&str> = started
        .iter()
        .map(|&i| events[i]["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "r2", "r3"]);

    let second = messages(&h.bodies()[1]).clone();
    let results: Vec<_> = second.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 3);
    assert_eq!(results[0]["tool_call_id"], "r1");
    assert!(results[0]["content"].as_str().unwrap().contains("alpha"));
    assert_eq!(results[1]["tool_call_id"], "r2");
    assert_eq!(results[1]["tool_name"], "grep");
    assert!(results[1]["content"].as_str().unwrap().contains("b.txt"));
    assert_eq!(results[2]["tool_call_id"], "r3");
    assert!(results[2]["content"].as_str().unwrap().contains("gamma"));
}

#[test]
fn changes_in_one_turn_run_in_the_order_given() {
    let script = Script::new()
        .chat(
            reply()
                .tool_calls(&[
                    (None, "shell", json!({"command": "echo one >> log.txt"})),
                    (None, "read_file", json!({"path": "log.txt"})),
                    (None, "shell", json!({"command": "echo two >> log.txt"})),
                ])
                .done(),
        )
        .chat(reply().text("Logged.").done());
    let h = Harness::new(script);
    let output = h.exec("write a log", &["--approval", "auto"]);
    assert_exit(&output, 0);
    assert_eq!(h.read("log.txt"), "one\ntwo\n");
    let second = messages(&h.bodies()[1]).clone();
    let read = second
        .iter()
        .filter(|m| m["role"] == "tool")
        .nth(1)
        .unwrap();
    let text = read["content"].as_str().unwrap();
    assert!(
        text.contains("one") && !text.contains("two"),
        "the read saw the first write only: {text}"
    );
}

#[test]
fn sessions_list_and_show_after_a_run() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("read_file", json!({"path": "a.txt"}))
                .done(),
        )
        .chat(reply().text("It says alpha.").done());
    let h = Harness::new(script);
    h.write("a.txt", "alpha\n");
    assert_exit(&h.exec("what does a.txt say?", &[]), 0);
    let session = h.newest_session();

    let list = h
        .lathe()
        .args(["sessions", "list", "--json"])
        .output()
        .unwrap();
    assert_exit(&list, 0);
    let listed: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(listed[0]["id"], session.id.as_str());
    assert_eq!(listed[0]["status"], "completed");
    assert_eq!(listed[0]["title"], "what does a.txt say?");

    let list = h.lathe().args(["sessions", "list"]).output().unwrap();
    assert!(
        stdout(&list).contains(session.id.as_str()),
        "{}",
        stdout(&list)
    );

    let prefix = &session.id.as_str()[..10];
    let show = h
        .lathe()
        .args(["sessions", "show", prefix])
        .output()
        .unwrap();
    assert_exit(&show, 0);
    let text = stdout(&show);
    assert!(text.contains("> what does a.txt say?"), "{text}");
    assert!(text.contains("→ read_file a.txt"), "{text}");
    assert!(text.contains("It says alpha."), "{text}");

    let show = h
        .lathe()
        .args(["sessions", "show", session.id.as_str(), "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(value["session"]["id"], session.id.as_str());
    assert_eq!(value["messages"][1]["role"], "user");
    assert_eq!(
        value["events"].as_array().unwrap().last().unwrap()["payload"]["type"],
        "run_result"
    );

    let missing = h
        .lathe()
        .args(["sessions", "show", "zzzz"])
        .output()
        .unwrap();
    assert_exit(&missing, 2);
    assert!(
        stderr(&missing).contains("no session matches 'zzzz'"),
        "{}",
        stderr(&missing)
    );
}
