//! `lathe chat` in a real terminal: a pseudo-terminal whose other end the test types into, with
//! the chat as the terminal's session leader so that Ctrl-C (`\x03`) is a real SIGINT.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::{DEADLINE, Terminal, wait_for_run_end};

/// Processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    lathe_testkit::processes_with(marker)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

fn wait_until_gone(marker: &str) {
    let start = Instant::now();
    while !processes_with(marker).is_empty() {
        assert!(
            start.elapsed() < DEADLINE,
            "processes left behind: {:?}",
            processes_with(marker)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_approval_prompt_turn_allowed_then_denied_with_a_reason() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({"command": "echo hi > made.txt"}))
                .done(),
        )
        .chat(reply().text("Made it.").done())
        .chat(
            reply()
                .tool_call("shell", json!({"command": "rm made.txt"}))
                .done(),
        )
        .chat(reply().text("Left it alone.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("create made.txt");
    term.wait_for("? shell echo hi > made.txt");
    term.wait_for("Allow? [y]es / [n]o / [a]lways");
    // The question waits until the events before it (the call being asked about) are shown.
    let screen = term.screen();
    let call = screen.find("? shell echo hi > made.txt").unwrap();
    assert!(call < screen.find("Allow?").unwrap(), "{screen}");
    term.type_line("y");
    term.wait_for("Made it.");
    assert_eq!(h.read("made.txt"), "hi\n");

    term.wait_for_n("> ", 2);
    term.type_line("now remove it");
    term.wait_for("? shell rm made.txt");
    term.wait_for_n("Allow?", 2);
    term.type_line("n");
    term.wait_for("Reason for the model");
    term.type_line("keep the file");
    term.wait_for("Left it alone.");
    assert!(h.ws.join("made.txt").exists());
    let bodies = h.bodies();
    let denied = messages(&bodies[3]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(denied, "the user denied this: keep the file");

    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    let session = h.newest_session();
    assert_eq!(session.title.as_deref(), Some("create made.txt"));
    let events = h.stored_events();
    assert_eq!(of_type(&events, "approval_requested").len(), 2);
}

#[test]
fn ctrl_c_stops_a_running_command_then_twice_exits() {
    let marker = "987654321";
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "shell",
                    json!({"command": format!("echo started > started.txt; sleep {marker}")}),
                )
                .done(),
        )
        .chat(
            reply()
                .tool_call("shell", json!({"command": format!("sleep {marker}1")}))
                .done(),
        );
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "full"]);
    term.wait_for("> ");
    term.type_line("run the long thing");
    let start = Instant::now();
    while !h.ws.join("started.txt").exists() {
        assert!(
            start.elapsed() < DEADLINE,
            "the command never started; screen:\n{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!processes_with(marker).is_empty(), "the command runs");
    term.ctrl_c();
    term.wait_for("stopping the turn");
    wait_until_gone(marker);
    let events = wait_for_run_end(&h, 1);
    assert!(
        term.child.try_wait().unwrap().is_none(),
        "one Ctrl-C does not exit"
    );
    let finished = of_type(&events, "tool_call_finished");
    assert_eq!(finished.len(), 1, "{events:#?}\n{}", term.screen());
    assert_eq!(finished[0]["status"], "cancelled", "{events:#?}");
    assert_eq!(events.last().unwrap()["status"], "stopped");
    assert_eq!(h.newest_session().status.as_str(), "interrupted");

    // A second task starts a command; Ctrl-C twice exits with nothing left behind.
    term.type_line("again");
    let second = format!("{marker}1");
    let start = Instant::now();
    while processes_with(&second).is_empty() {
        assert!(
            start.elapsed() < DEADLINE,
            "the second command never started; screen:\n{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    term.ctrl_c();
    term.wait_for_n("stopping the turn", 2);
    term.ctrl_c();
    let code = term.wait_exit();
    assert_ne!(code, 0);
    wait_until_gone(&second);
}

#[test]
fn slash_commands_and_resume() {
    let script = Script::new()
        .chat(reply().text("First answer.").done())
        .chat(reply().text("Second answer.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "read-only"]);
    term.wait_for("> ");
    term.type_line("/help");
    term.wait_for("/approval [MODE]");
    term.type_line("/approval auto");
    term.wait_for("approval is now auto");
    // A name the server does not have is refused, naming what it has.
    term.type_line("/model other-model");
    term.wait_for("other-model is not on the model server; it has: qwen3:8b");
    term.type_line("/model qwen3:8b");
    term.wait_for("model is now qwen3:8b");
    term.type_line("hello there");
    term.wait_for("First answer.");
    term.type_line("/sessions");
    term.wait_for("hello there");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    let id = h.newest_session().id.to_string();

    // Resuming restores what the session started with (the approval mode here) and shows the
    // end of the conversation so far.
    let mut term = Terminal::start(&h, &["--resume", &id]);
    term.wait_for("resumed session");
    term.wait_for("> hello there");
    term.wait_for("First answer.");
    term.wait_for("approval read-only");
    term.type_line("and again");
    term.wait_for("Second answer.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    let bodies = h.bodies();
    let second = messages(&bodies[1]);
    let texts: Vec<&str> = second
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        texts.contains(&"hello there")
            && texts.contains(&"First answer.")
            && texts.contains(&"and again"),
        "{texts:?}"
    );
    assert_eq!(second.iter().filter(|m| m["role"] == "system").count(), 1);
}

#[test]
fn chat_asks_once_whether_to_trust_a_workspace_file_that_asks_for_more() {
    for (answer, mode, said) in [
        ("n", "approval ask", "not trusted: going on without them"),
        ("y", "approval full", "trusted: its settings apply"),
    ] {
        let h = Harness::new(Script::new());
        h.write(".lathe/config.toml", "[agent]\napproval = \"full\"\n");
        let mut term = Terminal::start(&h, &[]);
        term.wait_for("asks for settings that weaken safety");
        term.wait_for("agent.approval = \"full\"");
        term.wait_for("Trust this file? [y/N]");
        term.type_line(answer);
        term.wait_for(said);
        term.wait_for(mode);
        term.wait_for("> ");
        term.type_line("/exit");
        assert_eq!(term.wait_exit(), 0, "{}", term.screen());
        // The answer holds for the next start: asked again only when not trusted.
        let out = h
            .lathe()
            .args(["trust", "--list"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&out.stdout).contains("matches");
        assert_eq!(listed, answer == "y", "{answer}: {out:?}");
    }
}

/// On a real terminal too, only the renderer's own styling reaches it: the model's OSC 0, OSC
/// 52, CSI and C1 sequences (each split across stream chunks) and a failed command's output
/// are shown as visible text (issue 14).
#[test]
fn model_escape_sequences_never_reach_the_terminal() {
    use crate::exec_terminal::{FAILING_COMMAND, HOSTILE_CHUNKS};
    let mut turn = reply();
    for chunk in HOSTILE_CHUNKS {
        turn = turn.text(chunk);
    }
    let script = Script::new()
        .chat(
            turn.tool_call("shell", json!({ "command": FAILING_COMMAND }))
                .done(),
        )
        .chat(reply().text("All told.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "full"]);
    term.wait_for("> ");
    term.type_line("say hello");
    term.wait_for("All told.");
    let screen = term.screen();
    for raw in [
        "\x1b]", "\x07", "\x1b[2J", "\x1b[31m", "\u{9b}", "\u{9d}", "\u{9c}",
    ] {
        assert!(
            !screen.contains(raw),
            "{raw:?} reached the terminal: {screen:?}"
        );
    }
    assert!(
        screen.contains("Title ^[]0;owned^G clip ^[]52;c;aGVsbG8=^G"),
        "{screen:?}"
    );
    assert!(screen.contains("^[[31mred overwritten"), "{screen:?}");
    assert!(screen.contains("✗ shell "), "{screen:?}");
    assert!(screen.contains("bad ^[]52;c;eA==^G"), "{screen:?}");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}
