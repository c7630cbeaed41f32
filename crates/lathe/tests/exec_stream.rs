//! `lathe exec` when the model's stream breaks: `[model] idle_timeout` from the configuration,
//! what the user is told while the answer is asked for again, and the same as JSON events.

use std::time::Duration;

use lathe_testkit::{Response, Script};

use crate::agent_harness::*;
use crate::pty::{Attach, Terminal};

/// A server that first stays silent, then loses the connection mid-answer, then answers.
fn faulty() -> Script {
    Script::new()
        .chat(
            Response::new(200)
                .delay(Duration::from_secs(120))
                .text("{}\n"),
        )
        .chat(reply().text("Hel").unfinished().then_drop_connection())
        .chat(reply().text("Hello.").done())
}

#[test]
fn a_silent_then_cut_answer_is_asked_for_again_and_the_user_told() {
    let h = Harness::new(faulty());
    h.write(".lathe/config.toml", "[model]\nidle_timeout = \"1s\"\n");
    let output = h.exec("say hello", &[]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(
        out.contains("the model sent nothing for 1 s, the idle timeout; retrying (1 of 2); the answer starts over"),
        "{out}"
    );
    assert!(
        out.contains(
            "connection to the model lost mid-answer; retrying (2 of 2); the answer starts over"
        ),
        "{out}"
    );
    assert!(out.contains("Hello."), "{out}");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["messages"], bodies[2]["messages"]);
}

#[test]
fn json_output_carries_the_restarts() {
    let h = Harness::new(faulty());
    h.write(".lathe/config.toml", "[model]\nidle_timeout = 1\n");
    let output = h.exec("say hello", &["--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let restarts = of_type(&events, "answer_restarted");
    assert_eq!(restarts.len(), 2, "{events:?}");
    assert_eq!(restarts[0]["attempt"], 1);
    assert_eq!(restarts[0]["retries"], 2);
    assert_eq!(
        restarts[1]["message"],
        "connection to the model lost mid-answer; retrying (2 of 2)"
    );
}

/// `lathe exec` on a pseudo-terminal (stdin closed, a session of its own): what the screen
/// shows, read until `done` appears.
fn on_a_terminal(h: &Harness, done: &str) -> String {
    let mut cmd = h.lathe();
    cmd.args([
        "exec",
        "say hello",
        "--model",
        MODEL,
        "--base-url",
        &h.server.url(),
    ]);
    let term = Terminal::spawn(cmd, Attach::OutputOnlyOwnSession);
    // Generous: the machine is slow and shared. Nothing here asserts a duration.
    term.wait_for_within(done, Duration::from_secs(90));
    term.screen()
}

/// Issue 14: a stalled stream was silent; the spinner line now says how long it has waited.
#[test]
fn the_terminal_shows_how_long_the_model_has_been_silent() {
    let mut stalled = reply()
        .text("Hel")
        .unfinished()
        .delay(Duration::from_secs(6));
    stalled
        .parts
        .extend(reply().text("lo, there.").done().parts);
    let h = Harness::new(Script::new().chat(stalled));
    let screen = on_a_terminal(&h, "Done ·");
    assert!(screen.contains("waiting for the model (5s)"), "{screen:?}");
    assert!(screen.contains("Hello, there.\r\nDone ·"), "{screen:?}");
}
