//! Sub-agents in `lathe chat` on a real pseudo-terminal: a running child is shown as its
//! progress line (its current step), then its end line.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::Terminal;

/// The child's command waits for this file, which the test creates once it has seen the
/// child's progress line: the child is certainly still running while the line is checked.
const GO: &str = "go.flag";

#[test]
fn a_running_child_shows_its_progress_line_then_its_end_line() {
    // Short enough that its line is not cut to the terminal's width.
    let wait = format!("until [ -e {GO} ]; do sleep 0.05; done");
    let script = Script::new()
        .chat_when(
            "You are sub-agent sub-1,",
            reply()
                .tool_call("shell", json!({"command": wait, "timeout": 600}))
                .done(),
        )
        .chat_when(
            "You are sub-agent sub-1,",
            reply().text("It was released.").done(),
        )
        .chat(
            reply()
                .tool_call(
                    "spawn_agent",
                    json!({"task": "wait for the flag", "profile": "general"}),
                )
                .done(),
        )
        .chat(reply().text("The helper says it was released.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "auto"]);
    term.wait_for("> ");
    term.type_line("wait for the flag");
    // While the child runs: its line shows its current step.
    term.wait_for(&format!("sub-agent sub-1: shell {wait}"));
    let running = term.screen();
    assert!(
        !running.contains("sub-agent sub-1: finished"),
        "the end line came before the child ended: {running}"
    );
    h.write(GO, "");
    term.wait_for("✓ sub-agent sub-1: finished (wait for the flag)");
    term.wait_for("The helper says it was released.");
    let screen = term.screen();
    let progress = screen
        .find(&format!("sub-agent sub-1: shell {wait}"))
        .unwrap();
    let end = screen.find("✓ sub-agent sub-1: finished").unwrap();
    assert!(progress < end, "{screen}");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0, "{}", term.screen());
}
