//! The model's plan in `lathe exec`: a `plan_updated` event in `--json`, the checklist on the
//! terminal, and the newest plan in `lathe sessions show`.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

fn script() -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call(
                    "update_plan",
                    json!({"plan": [
                        {"step": "Read a.txt", "status": "completed"},
                        {"step": "Answer", "status": "in_progress"}
                    ]}),
                )
                .done(),
        )
        .chat(
            reply()
                .tool_call(
                    "update_plan",
                    json!({"plan": [
                        {"step": "Read a.txt", "status": "completed"},
                        {"step": "Answer", "status": "completed"}
                    ]}),
                )
                .done(),
        )
        .chat(reply().text("It says alpha.").done())
}

#[test]
fn the_plan_is_an_event_a_checklist_and_part_of_the_stored_session() {
    let h = Harness::new(script());
    h.write("a.txt", "alpha\n");
    let output = h.exec("what does a.txt say?", &["--json"]);
    assert_exit(&output, 0);
    let plans: Vec<serde_json::Value> = json_lines(&output)
        .into_iter()
        .filter(|e| e["type"] == "plan_updated")
        .collect();
    assert_eq!(plans.len(), 2, "{plans:?}");
    assert_eq!(
        plans[0]["steps"],
        json!([
            {"step": "Read a.txt", "status": "completed"},
            {"step": "Answer", "status": "in_progress"}
        ])
    );

    let session = h.newest_session();
    let show = h
        .lathe()
        .args(["sessions", "show", session.id.as_str()])
        .output()
        .unwrap();
    assert_exit(&show, 0);
    let text = stdout(&show);
    assert!(
        text.contains("plan\n  [x] Read a.txt\n  [x] Answer\n"),
        "{text}"
    );
    let show = h
        .lathe()
        .args(["sessions", "show", session.id.as_str(), "--json"])
        .output()
        .unwrap();
    let value: serde_json::Value = serde_json::from_slice(&show.stdout).unwrap();
    assert_eq!(
        value["plan"][1],
        json!({"step": "Answer", "status": "completed"})
    );
}

#[test]
fn the_terminal_shows_the_plan_as_a_checklist() {
    let h = Harness::new(script());
    h.write("a.txt", "alpha\n");
    let output = h.exec("what does a.txt say?", &[]);
    assert_exit(&output, 0);
    let err = String::from_utf8_lossy(&output.stderr).into_owned();
    let out = stdout(&output);
    let all = format!("{out}{err}");
    assert!(
        all.contains("  plan (1/2 done)\n  [x] Read a.txt\n  [>] Answer\n"),
        "{all}"
    );
    assert!(all.contains("  plan (2/2 done)"), "{all}");
}
