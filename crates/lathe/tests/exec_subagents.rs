//! Sub-agents in `lathe exec`: a background child's progress in `--json` under its id, its
//! result read by the parent as a `sub_agent_result` pair, and the tree of sessions in `lathe
//! sessions list` and `show`.

use serde_json::json;

use lathe_testkit::{Part, Script};

use crate::agent_harness::*;
use crate::pty::exec_on_terminal;

#[test]
fn a_background_child_shows_in_json_events_and_in_the_session_tree() {
    let script = Script::new()
        .chat_when(
            "You are sub-agent sub-1,",
            reply().text("a.txt says alpha.").done(),
        )
        .chat(
            reply()
                .tool_call(
                    "spawn_agent",
                    json!({"task": "read a.txt", "background": true}),
                )
                .done(),
        )
        .chat(reply().text("Asked a helper.").done())
        .chat(reply().text("It says alpha.").done());
    let h = Harness::new(script);
    h.write("a.txt", "alpha\n");
    let output = h.exec("what does a.txt say?", &["--json", "--approval", "auto"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let updates = of_type(&events, "sub_agent");
    assert!(!updates.is_empty(), "{events:#?}");
    assert!(updates.iter().all(|u| u["id"] == "sub-1"), "{updates:#?}");
    assert_eq!(updates.last().unwrap()["state"], "finished");
    let child_id = updates
        .iter()
        .find_map(|u| u["session_id"].as_str())
        .expect("the child's session id")
        .to_owned();
    let parent_id = of_type(&events, "run_started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // The parent read the child's answer as a call and its result, before its last turn.
    let bodies = h.bodies();
    let last = messages(bodies.last().unwrap());
    let at = last
        .iter()
        .position(|m| {
            m["tool_calls"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["function"]["name"] == "sub_agent_result")
            })
        })
        .expect("no sub_agent_result call");
    assert_eq!(last[at + 1]["role"], "tool");
    assert!(
        last[at + 1]["content"]
            .as_str()
            .unwrap()
            .contains("a.txt says alpha."),
        "{:?}",
        last[at + 1]
    );

    let show = |id: &str| {
        let shown = h.lathe().args(["sessions", "show", id]).output().unwrap();
        assert_exit(&shown, 0);
        stdout(&shown)
    };
    let parent = show(&parent_id);
    assert!(parent.contains("\nsub-agents\n  └ "), "{parent}");
    assert!(parent.contains(&child_id), "{parent}");
    let child = show(&child_id);
    assert!(
        child.starts_with(&format!("sub-agent of session {parent_id}\n")),
        "{child}"
    );
    let list = h.lathe().args(["sessions", "list"]).output().unwrap();
    let list = stdout(&list);
    assert!(list.contains(&format!("  └ {child_id}")), "{list}");
}

#[test]
fn piped_exec_shows_when_a_child_starts_and_how_it_ended() {
    let script = Script::new()
        .chat_when(
            "You are sub-agent sub-1,",
            reply().text("a.txt says alpha.").done(),
        )
        .chat(
            reply()
                .tool_call("spawn_agent", json!({"task": "read a.txt"}))
                .done(),
        )
        .chat(reply().text("It says alpha.").done());
    let h = Harness::new(script);
    h.write("a.txt", "alpha\n");
    let output = h.exec("what does a.txt say?", &["--approval", "auto"]);
    assert_exit(&output, 0);
    let shown = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        shown.contains("sub-agent sub-1: started (read a.txt)\n"),
        "{shown}"
    );
    assert!(
        shown.contains("✓ sub-agent sub-1: finished (read a.txt)\n"),
        "{shown}"
    );
}

#[test]
fn on_a_terminal_a_running_child_is_one_line_that_updates() {
    let mut slow = reply().text("a.txt says alpha.").done();
    // The child's model takes a while: long enough for its line to be drawn.
    slow.parts.insert(0, Part::DelayMs(2000));
    let script = Script::new()
        .chat_when("You are sub-agent sub-1,", slow)
        .chat(
            reply()
                .tool_call("spawn_agent", json!({"task": "read a.txt"}))
                .done(),
        )
        .chat(reply().text("It says alpha.").done());
    let h = Harness::new(script);
    h.write("a.txt", "alpha\n");
    let url = h.server.url();
    let (screen, code) = exec_on_terminal(
        &h,
        &[
            "what does a.txt say?",
            "--model",
            MODEL,
            "--base-url",
            &url,
            "--approval",
            "auto",
        ],
    );
    assert_eq!(code, 0, "{screen}");
    // The spinner's line, redrawn in place (carriage returns, no new lines).
    assert!(screen.contains("sub-agent sub-1: turn 1"), "{screen:?}");
    assert!(
        !screen.contains("sub-agent sub-1: turn 1\n"),
        "a running child's line is not left on the screen: {screen:?}"
    );
    assert!(
        screen.contains("✓ sub-agent sub-1: finished (read a.txt)"),
        "{screen:?}"
    );
}

/// A child's turns: a `write_file` of `path`, then its answer.
fn writes(script: Script, id: &str, path: &str) -> Script {
    let opening = format!("You are sub-agent {id},");
    script
        .chat_when(
            &opening,
            reply()
                .tool_call("write_file", json!({"path": path, "content": "new\n"}))
                .done(),
        )
        .chat_when(&opening, reply().text(&format!("Wrote {path}.")).done())
}

#[test]
fn a_childs_file_changes_are_in_the_parents_report_with_its_label() {
    let script = writes(writes(Script::new(), "sub-1", "c.txt"), "sub-2", "d.txt")
        .chat(
            reply()
                .tool_call(
                    "spawn_agent",
                    json!({"task": "write c.txt", "profile": "general"}),
                )
                .done(),
        )
        .chat(
            reply()
                .tool_call(
                    "spawn_agent",
                    json!({"task": "write d.txt", "profile": "general", "background": true}),
                )
                .done(),
        )
        .chat(reply().text("Started it.").done())
        .chat(reply().text("Both written.").done());
    let h = Harness::new(script);
    let output = h.exec("write c.txt and d.txt", &["--json", "--approval", "auto"]);
    assert_exit(&output, 0);
    assert_eq!(h.read("c.txt"), "new\n");
    assert_eq!(h.read("d.txt"), "new\n");
    let events = json_lines(&output);
    let result = of_type(&events, "run_result")[0];
    assert_eq!(
        result["files_changed"],
        json!([
            {"path": "c.txt", "added": 1, "removed": 0, "created": true, "deleted": false,
             "sub_agents": ["sub-1"]},
            {"path": "d.txt", "added": 1, "removed": 0, "created": true, "deleted": false,
             "sub_agents": ["sub-2"]},
        ]),
        "{result:#}"
    );

    // The human end line counts them too.
    let script = writes(Script::new(), "sub-1", "c.txt")
        .chat(
            reply()
                .tool_call(
                    "spawn_agent",
                    json!({"task": "write c.txt", "profile": "general"}),
                )
                .done(),
        )
        .chat(reply().text("Written.").done());
    let h = Harness::new(script);
    let output = h.exec("write c.txt", &["--approval", "auto"]);
    assert_exit(&output, 0);
    let shown = format!("{}{}", stdout(&output), stderr(&output));
    assert!(shown.contains(" · 1 file changed (+1 -0) · "), "{shown}");
}
