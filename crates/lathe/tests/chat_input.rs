//! The input line of `lathe chat` in a real pseudo-terminal (issue 14): editing keys, bracketed
//! paste, multi-line input, history across chats, Ctrl-C that clears a draft and re-arms, and
//! the slash commands `/status`, `/clear` and `/init`.

use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::{DEADLINE, Terminal, wait_for_requests, wait_for_run_end};

const LEFT: &str = "\x1b[D";
const HOME: &str = "\x1b[H";
const END: &str = "\x1b[F";
const UP: &str = "\x1b[A";
const ALT_B: &str = "\x1bb";
const ALT_ENTER: &str = "\x1b\r";
const CTRL_A: &str = "\x01";
const CTRL_D: &str = "\x04";
const CTRL_E: &str = "\x05";
const CTRL_U: &str = "\x15";
const CTRL_W: &str = "\x17";

/// What the editing keys did is what the model gets, and no escape byte with it.
#[test]
fn editing_keys_shape_the_message_the_model_gets() {
    let script = Script::new().chat(reply().text("Edited.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    // A draft killed with Ctrl-U; words typed out of order and put right with Home/End,
    // Ctrl-A/E, arrows, Alt-B and Ctrl-W.
    for keys in [
        "garbage", CTRL_U, "world", CTRL_A, "hello ", END, "!", HOME, CTRL_E, " junk", CTRL_W,
        "there", ALT_B, "over ", CTRL_E, "X", LEFT, "Y",
    ] {
        term.type_raw(keys);
    }
    term.type_raw("\r");
    term.wait_for("Edited.");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 1, "{}", term.screen());
    assert_eq!(
        user_texts(&bodies[0]),
        ["hello world! over thereYX"],
        "{}",
        term.screen()
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// A paste of four lines is one message (one request), and so are lines joined with Alt-Enter
/// or continued with a trailing `\`.
#[test]
fn a_bracketed_paste_of_four_lines_is_one_message() {
    let script = Script::new()
        .chat(reply().text("One paste.").done())
        .chat(reply().text("One message.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "read-only"]);
    term.wait_for("> ");
    term.type_raw("\x1b[200~line one\rline two\r\nline three\nline four\x1b[201~");
    term.type_raw("\r");
    term.wait_for("One paste.");
    term.wait_for_after("One paste.", "> ");
    term.type_raw("first \\\r");
    term.type_raw("second");
    term.type_raw(ALT_ENTER);
    term.type_raw("third\r");
    term.wait_for("One message.");
    let bodies = wait_for_requests(&h, &term, 2);
    assert_eq!(bodies.len(), 2, "{}", term.screen());
    assert_eq!(
        user_texts(&bodies[1]),
        [
            "line one\nline two\nline three\nline four",
            "first \nsecond\nthird"
        ],
        "{}",
        term.screen()
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// What was typed in one chat is recalled with Up in the next; Ctrl-D on an empty line exits.
#[test]
fn history_is_kept_across_chats() {
    let script = Script::new()
        .chat(reply().text("First chat.").done())
        .chat(reply().text("A big one.").done())
        .chat(reply().text("Second chat.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "read-only"]);
    term.wait_for("> ");
    term.type_line("remember this task");
    term.wait_for("First chat.");
    term.wait_for_after("First chat.", "> ");
    // Too big to keep (over 8 KiB): sent, not remembered.
    let big = "y".repeat(9000);
    term.type_raw(&format!("\x1b[200~{big}\x1b[201~\r"));
    term.wait_for("A big one.");
    term.wait_for_after("A big one.", "> ");
    term.type_raw(CTRL_D);
    assert_eq!(term.wait_exit(), 0, "{}", term.screen());
    let file = h.data.join("chat_history");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("remember this task"), "{saved:?}");
    assert!(!saved.contains("yyyy"), "{saved:?}");
    assert_eq!(user_texts(&h.bodies()[1]).last(), Some(&big));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "the history is readable by others: {mode:o}"
    );

    let mut term = Terminal::start(&h, &["--approval", "read-only"]);
    term.wait_for("> ");
    term.type_raw(UP);
    term.type_raw("\r");
    term.wait_for("Second chat.");
    let bodies = h.bodies();
    assert_eq!(
        user_texts(bodies.last().unwrap()),
        ["remember this task"],
        "{}",
        term.screen()
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// A turn the server stalls, stopped with Ctrl-C; a draft typed afterwards is cleared by the
/// next Ctrl-C, not taken for the second press that exits; and once the re-arm window has
/// passed, a Ctrl-C on the empty prompt only hints again.
#[test]
fn ctrl_c_clears_a_draft_after_stopping_a_turn_and_re_arms() {
    let window_ms = 300;
    let script = Script::new()
        .chat(
            reply()
                .text("Working on it")
                .unfinished()
                .delay(Duration::from_secs(3600)),
        )
        .chat(reply().text("Still here.").done())
        .chat(reply().text("And here.").done());
    let h = Harness::new(script);
    let window = window_ms.to_string();
    let mut term =
        Terminal::start_with_env(&h, &[], &[("LATHE_CHAT_CTRL_C_WINDOW_MS", window.as_str())]);
    term.wait_for("> ");
    term.type_line("a long task");
    term.wait_for("Working on it");
    term.ctrl_c();
    term.wait_for("stopping the turn");
    wait_for_run_end(&h, 1);
    term.wait_for_after("stopping the turn", "> ");

    term.type_raw("my draft");
    term.wait_for("my draft");
    term.ctrl_c();
    term.type_line("next task");
    term.wait_for("Still here.");
    assert!(
        term.child.try_wait().unwrap().is_none(),
        "{}",
        term.screen()
    );
    let bodies = h.bodies();
    assert_eq!(
        user_texts(bodies.last().unwrap())
            .last()
            .map(String::as_str),
        Some("next task"),
        "the draft was cleared: {}",
        term.screen()
    );

    // Two stops in a row: the second Ctrl-C comes long after the window, so it only hints.
    term.wait_for_after("Still here.", "> ");
    term.ctrl_c();
    term.wait_for("press Ctrl-C again to exit");
    std::thread::sleep(Duration::from_millis(window_ms * 3));
    term.ctrl_c();
    term.wait_for_n("press Ctrl-C again to exit", 2);
    term.type_line("last task");
    term.wait_for("And here.");
    assert!(
        term.child.try_wait().unwrap().is_none(),
        "{}",
        term.screen()
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// Ctrl-C on an empty prompt hints; the second press within the window exits.
#[test]
fn ctrl_c_twice_on_an_empty_prompt_exits() {
    let h = Harness::new(Script::new());
    let mut term = Terminal::start_with_env(&h, &[], &[("LATHE_CHAT_CTRL_C_WINDOW_MS", "600000")]);
    term.wait_for("> ");
    term.ctrl_c();
    term.wait_for("press Ctrl-C again to exit");
    assert!(term.child.try_wait().unwrap().is_none());
    term.ctrl_c();
    assert_eq!(term.wait_exit(), 130, "{}", term.screen());
}

#[test]
fn status_shows_the_model_server_session_window_tokens_and_mode() {
    let script = Script::new().chat(reply().text("Counted.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "auto"]);
    term.wait_for("> ");
    term.type_line("/status");
    term.wait_for("workspace  ");
    let id = h.newest_session().id.to_string();
    let screen = term.screen();
    assert!(screen.contains("model      qwen3:8b"), "{screen}");
    assert!(
        screen.contains(&format!("provider   ollama at {}", h.server.url())),
        "{screen}"
    );
    assert!(screen.contains(&format!("session    {id}")), "{screen}");
    assert!(
        screen.contains("tokens (") && screen.contains("(estimated)"),
        "{screen}"
    );
    assert!(screen.contains("tokens     0 in, 0 out"), "{screen}");
    assert!(screen.contains("approval   auto"), "{screen}");
    assert!(
        screen.contains(&format!("workspace  {}", h.ws.display())),
        "{screen}"
    );

    // After a turn, the server's counts (26 in, 12 out).
    term.type_line("count something");
    term.wait_for("Counted.");
    term.wait_for_after("Counted.", "> ");
    term.type_line("/status");
    term.wait_for("tokens     26 in, 12 out (this session)");
    let screen = term.screen();
    let after = &screen[screen.find("Counted.").unwrap()..];
    assert!(after.contains("context    38/"), "{after}");
    assert!(!after.contains("(estimated)"), "{after}");

    term.type_line("/stauts");
    term.wait_for("unknown command /stauts; /help lists them (did you mean /status?)");
    term.type_line("/help");
    term.wait_for("Alt-Enter inserts a newline");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

#[test]
fn clear_starts_a_new_conversation_in_a_new_session() {
    let script = Script::new()
        .chat(reply().text("Answer one.").done())
        .chat(reply().text("Answer two.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "auto"]);
    term.wait_for("> ");
    term.type_line("first conversation");
    term.wait_for("Answer one.");
    let first = h.newest_session().id.to_string();
    term.type_line("/clear");
    term.wait_for("new conversation · session ");
    let second = h.newest_session().id.to_string();
    assert_ne!(first, second);
    term.wait_for(&format!("session {second} · qwen3:8b · approval auto"));
    term.type_line("second conversation");
    term.wait_for("Answer two.");
    let bodies = h.bodies();
    assert_eq!(user_texts(&bodies[1]), ["second conversation"]);
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    let store = h.store();
    let old = store.session(&first).unwrap();
    assert_eq!(old.status.as_str(), "completed");
    assert_eq!(old.title.as_deref(), Some("first conversation"));
    let new = store.session(&second).unwrap();
    assert_eq!(new.title.as_deref(), Some("second conversation"));
    assert_eq!(new.approval, "auto");
    assert!(!store.events(&new.id).unwrap().is_empty());
}

/// `/init` asks the model to look at the project and write AGENTS.md (through the approval of
/// write_file); with AGENTS.md there, it asks for an improvement instead.
#[test]
fn init_has_the_model_write_agents_md() {
    let content = "# AGENTS.md\n\nBuild with `cargo build`; test with `cargo test`.\n";
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "write_file",
                    json!({"path": "AGENTS.md", "content": content}),
                )
                .done(),
        )
        .chat(reply().text("Wrote AGENTS.md.").done())
        .chat(reply().text("Nothing to improve.").done());
    let h = Harness::new(script);
    h.write("Cargo.toml", "[package]\nname = \"demo\"\n");
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("/init");
    term.wait_for("Allow? [y]es / [n]o / [a]lways");
    term.type_line("y");
    term.wait_for("Wrote AGENTS.md.");
    assert_eq!(h.read("AGENTS.md"), content);
    let bodies = h.bodies();
    let asked = user_texts(&bodies[0]);
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0].starts_with("Write AGENTS.md at the workspace root")
            && asked[0].contains("how to run the tests"),
        "{asked:?}"
    );

    term.type_line("/init");
    term.wait_for("AGENTS.md exists: asking the model to improve it");
    term.wait_for("Nothing to improve.");
    let bodies = h.bodies();
    let asked = user_texts(&bodies[2]);
    assert!(
        asked
            .last()
            .unwrap()
            .starts_with("AGENTS.md already exists"),
        "{asked:?}"
    );
    assert_eq!(h.read("AGENTS.md"), content);
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// Ctrl-C at an approval question (read by the line editor as a key, not a signal) denies the
/// call and stops the turn, as Ctrl-C during the turn does; the chat goes on.
#[test]
fn ctrl_c_at_an_approval_question_stops_the_turn() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({"command": "echo hi > made.txt"}))
                .done(),
        )
        .chat(reply().text("Back again.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("make a file");
    term.wait_for("Allow? [y]es / [n]o / [a]lways");
    term.ctrl_c();
    term.wait_for("stopping the turn");
    let events = wait_for_run_end(&h, 1);
    assert_eq!(events.last().unwrap()["status"], "stopped", "{events:#?}");
    assert!(!h.ws.join("made.txt").exists());
    term.wait_for_after("stopping the turn", "> ");
    term.type_line("still there?");
    term.wait_for("Back again.");
    let bodies = h.bodies();
    assert_eq!(
        bodies.len(),
        2,
        "the stopped turn asked nothing more: {}",
        term.screen()
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// In `lathe exec` too, Ctrl-C at an approval question stops the run there: the call is not
/// run, the model is asked nothing more, and exec exits 130.
#[test]
fn ctrl_c_at_an_approval_question_stops_exec() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({"command": "echo hi > made.txt"}))
                .done(),
        )
        .chat(reply().text("Carrying on without it.").done());
    let h = Harness::new(script);
    let mut term = Terminal::exec(&h, "make a file", &[]);
    term.wait_for("Allow? [y]es / [n]o / [a]lways");
    term.ctrl_c();
    assert_eq!(term.wait_exit(), 130, "{}", term.screen());
    assert!(!h.ws.join("made.txt").exists());
    assert_eq!(
        h.bodies().len(),
        1,
        "the stopped run asked nothing more: {}",
        term.screen()
    );
}

/// Without a terminal, chat reads plain lines, one message each, and what a terminal would have
/// sent as keys (arrows, a bell) never reaches the model.
#[test]
fn piped_lines_are_messages_without_control_bytes() {
    let script = Script::new()
        .chat(reply().text("First.").done())
        .chat(reply().text("Second.").done());
    let h = Harness::new(script);
    let mut chat = h
        .lathe()
        .args(["chat", "--model", MODEL, "--base-url", &h.server.url()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"what does the\x1b[D\x1b[A code say\x07\nsecond question\n")
        .unwrap();
    let out = chat.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "{out:?}");
    assert_eq!(
        user_texts(&bodies[1]),
        ["what does the code say", "second question"]
    );
}

/// A chat ended by a signal while its prompt holds the terminal leaves the terminal as it found
/// it (echo and line input back), not in the line editor's raw mode.
#[test]
fn a_signal_at_the_prompt_gives_the_terminal_back() {
    use nix::sys::termios::LocalFlags;
    let h = Harness::new(Script::new());
    let mut term = Terminal::start(&h, &[]);
    let before = term.local_flags();
    assert!(before.contains(LocalFlags::ICANON | LocalFlags::ECHO));
    term.wait_for("> ");
    let start = Instant::now();
    while term.local_flags().contains(LocalFlags::ICANON) {
        assert!(
            start.elapsed() < DEADLINE,
            "the prompt never took the terminal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(term.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    assert_eq!(term.wait_exit(), 128 + 15, "{}", term.screen());
    let after = term.local_flags();
    assert!(
        after.contains(LocalFlags::ICANON | LocalFlags::ECHO),
        "{after:?}; the screen:\n{}",
        term.screen()
    );
    // Bracketed paste is off again too.
    term.wait_for_after("> ", "\x1b[?2004l");
}
