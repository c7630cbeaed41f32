//! Checkpoints in `lathe chat`, in a real pseudo-terminal: the line after a turn that changed
//! files, `/diff`, `/undo`, `/redo`, and `/rewind N`, which puts the code back and cuts the
//! conversation (the next request, and a later `--resume`, lack the rewound messages).

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::{Terminal, wait_for_requests};

fn write(path: &str, content: &str) -> lathe_testkit::ollama::OllamaTurn {
    reply().tool_call("write_file", json!({"path": path, "content": content}))
}

#[test]
fn diff_undo_redo_and_rewind_in_chat() {
    let script = Script::new()
        .chat(write("a.txt", "alpha\n").done())
        .chat(reply().text("Made a.").done())
        .chat(write("b.txt", "beta\nbeta\n").done())
        .chat(reply().text("Made b.").done())
        .chat(reply().text("Fresh start.").done())
        .chat(write("c.txt", "gamma\n").done())
        .chat(reply().text("Resumed fine.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "auto"]);
    term.wait_for("> ");
    term.type_line("/help");
    term.wait_for("/rewind N");

    term.type_line("make a");
    term.wait_for("1 file changed (+1 -0) · /diff · /undo · turn 1");
    term.wait_for("Made a.");
    term.type_line("/diff");
    term.wait_for("+alpha");
    term.type_line("/undo");
    term.wait_for("undid turn 1 of session");
    assert!(!h.ws.join("a.txt").exists());
    term.type_line("/redo");
    term.wait_for("redid turn 1 of session");
    assert_eq!(h.read("a.txt"), "alpha\n");

    term.type_line("make b");
    term.wait_for("1 file changed (+2 -0) · /diff · /undo · turn 3");
    term.wait_for("Made b.");
    term.type_line("/diff 3 --stat");
    term.wait_for("b.txt");
    term.type_line("/rewind 9");
    term.wait_for("turn 9 is not in this conversation");
    term.type_line("/rewind 3");
    term.wait_for("rewound the conversation to before turn 3");
    assert!(!h.ws.join("b.txt").exists(), "the code went back");
    assert_eq!(h.read("a.txt"), "alpha\n", "what came before stays");

    term.type_line("after the rewind");
    term.wait_for("Fresh start.");
    let bodies = wait_for_requests(&h, &term, 5);
    assert_eq!(user_texts(&bodies[4]), ["make a", "after the rewind"]);
    assert!(!bodies[4].to_string().contains("beta"), "{}", bodies[4]);
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);

    // A later --resume sees the conversation as the rewind left it.
    let id = h.newest_session().id.to_string();
    let mut term = Terminal::start(&h, &["--resume", &id]);
    term.wait_for("resumed session");
    // The resumed chat has the session's checkpoints, and /undo never clobbers a file changed
    // since the turn.
    h.write("a.txt", "the user's own\n");
    term.type_line("/undo");
    term.wait_for("left alone, changed since by someone else (/undo --force overwrites them)");
    assert_eq!(h.read("a.txt"), "the user's own\n");
    // Its turns are numbered on from the five the session had (1-2, 3-4, 5).
    term.type_line("and on");
    term.wait_for("1 file changed (+1 -0) · /diff · /undo · turn 6");
    term.wait_for("Resumed fine.");
    let bodies = wait_for_requests(&h, &term, 6);
    assert_eq!(
        user_texts(&bodies[5]),
        ["make a", "after the rewind", "and on"]
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}
