//! `/compact` in `lathe chat`, in a real pseudo-terminal: the older part of the conversation is
//! replaced by the summary the model writes, the terminal says so, and the next request starts
//! with the summary.

use std::time::{Duration, Instant};

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::{DEADLINE, Terminal};

#[test]
fn compact_replaces_the_older_turns_with_the_models_summary() {
    let script = Script::new()
        .chat_when(
            "You summarise a coding agent",
            reply()
                .text("Task: name two colours. Done: said red. Open: nothing.")
                .done(),
        )
        .chat(reply().text("Red.").done())
        .chat(reply().text("Blue.").done())
        .chat(reply().text("Green.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "auto"]);
    term.wait_for("> ");
    term.type_line("/help");
    term.wait_for("/compact");
    term.type_line("name a colour");
    term.wait_for("Red.");
    term.type_line("another one");
    term.wait_for("Blue.");
    term.type_line("/compact");
    term.wait_for("earlier messages with a summary");
    term.type_line("and a third");
    term.wait_for("Green.");
    let start = Instant::now();
    let bodies = loop {
        let bodies = h.bodies();
        if bodies.len() >= 4 || start.elapsed() > DEADLINE {
            break bodies;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(bodies.len(), 4, "{}", term.screen());
    assert!(
        bodies[2]
            .to_string()
            .contains("You summarise a coding agent")
    );
    let last = messages(&bodies[3]);
    let first = last[1]["content"].as_str().unwrap();
    assert!(
        first.starts_with("[Summary of the earlier conversation:")
            && first.contains("Task: name two colours."),
        "{first}"
    );
    assert!(
        !last.iter().any(|m| m["content"] == "name a colour"),
        "the first task is replaced by the summary"
    );
    // The store keeps every message.
    let stored = h.store().messages(&h.newest_session().id).unwrap();
    assert!(
        stored
            .iter()
            .any(|row| row.body["content"] == "name a colour")
    );
}
