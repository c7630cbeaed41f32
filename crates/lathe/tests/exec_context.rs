//! `lathe exec` on a long session: the conversation is kept inside the model's window by
//! shortening old tool results first, each to a one-line summary that keeps its artifact id.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

const READS: usize = 8;

fn file_text(i: usize) -> String {
    (0..200)
        .map(|line| format!("file {i} line {line:03} with some words to fill it\n"))
        .collect()
}

#[test]
fn old_tool_results_are_shortened_near_the_window() {
    let mut script = Script::new();
    for i in 0..READS {
        script = script.chat(
            reply()
                .tool_call("read_file", json!({"path": format!("f{i}.txt")}))
                .done(),
        );
    }
    script = script
        .chat(
            reply()
                .tool_call("shell", json!({"command": "seq 1 4000"}))
                .done(),
        )
        .chat(
            reply()
                .tool_call("read_file", json!({"path": "last.txt"}))
                .done(),
        )
        .chat(reply().text("Read everything.").done());
    let h = Harness::new(script);
    for i in 0..READS {
        h.write(&format!("f{i}.txt"), &file_text(i));
    }
    h.write("last.txt", &file_text(99));
    h.write(".lathe/config.toml", "[model]\ncontext_window = 16000\n");
    let output = h.exec(
        "read all the files",
        &["--approval", "auto", "--max-turns", "20"],
    );
    assert_exit(&output, 0);

    let bodies = h.bodies();
    assert_eq!(bodies.len(), READS + 3);
    // Ollama is told the window.
    assert_eq!(bodies[0]["options"]["num_ctx"], 16000);
    let size = |i: usize| bodies[i].to_string().len();
    let last = messages(bodies.last().unwrap());
    let results: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), READS + 2, "every call keeps its result");
    assert!(
        results[0].starts_with("[shortened to save context: read_file f0.txt (lines 1-200)"),
        "{}",
        results[0]
    );
    // The command's output is shortened too, keeping the artifact id to read it again.
    let shell = results[READS];
    if shell.starts_with("[shortened") {
        assert!(shell.contains("cmd-"), "{shell}");
    }
    // The newest result is whole.
    assert!(
        results[READS + 1].contains("file 99 line 199"),
        "{}",
        results[READS + 1]
    );
    // The requests stop growing once shortening starts.
    assert!(
        size(bodies.len() - 1) < size(READS - 1) * 2,
        "{} vs {}",
        size(bodies.len() - 1),
        size(READS - 1)
    );
    // The first request (the task) is never cut.
    assert_eq!(last[1]["content"], "read all the files");

    // The stored history keeps the full results.
    let store = h.store();
    let session = h.newest_session();
    let stored = store.messages(&session.id).unwrap();
    let first_result = stored.iter().find(|m| m.role == "tool").unwrap();
    assert!(
        first_result.body["content"]
            .as_str()
            .unwrap()
            .contains("file 0 line 199")
    );
}
