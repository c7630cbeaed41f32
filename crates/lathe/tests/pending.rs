//! Pending actions in the front ends: a change a tool previewed waits until `resolve` (or the
//! chat's `/apply` and `/discard`) decides. `lathe tool` one-shot and `--batch`, and `lathe chat`
//! in a real pseudo-terminal against the scripted model server. (`lathe mcp` is driven by the
//! MCP Python SDK in `mcp_python.rs`.)
//!
//! The previewing tool is `apply_patch` with `preview: true`.

use std::io::Write;
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::Terminal;

/// What `resolve` answers with nothing pending.
const NOTHING_PENDING: &str = "No pending action to resolve. Nothing to apply or discard.";

/// `apply_patch` arguments that would create `path` holding `hi`, as a preview.
fn preview(path: &str) -> Value {
    json!({
        "patch": format!("*** Begin Patch\n*** Add File: {path}\n+hi\n*** End Patch"),
        "preview": true
    })
}

/// `lathe tool ARGS` in the harness's workspace, stdin closed.
fn tool(h: &Harness, args: &[&str]) -> Output {
    h.lathe()
        .arg("tool")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `lathe tool --batch ARGS` fed `lines`; its answers, one per line.
fn batch(h: &Harness, args: &[&str], lines: &[Value]) -> (Output, Vec<Value>) {
    let mut child = h
        .lathe()
        .args(["tool", "--batch"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    let answers = json_lines(&output);
    (output, answers)
}

fn resolve(action: &str) -> Value {
    json!({"tool": "resolve", "arguments": {"action": action}})
}

#[test]
fn resolve_alone_says_nothing_is_pending_and_fails() {
    let h = Harness::new(Script::new());
    let out = tool(&h, &["resolve", r#"{"action":"apply"}"#]);
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), format!("{NOTHING_PENDING}\n"));
    let out = tool(&h, &["resolve", r#"{"action":"discard"}"#, "--json"]);
    assert_exit(&out, 1);
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(answer["text"], NOTHING_PENDING);
    assert_eq!(answer["is_error"], true);
}

/// A batch is one session: a file written by one line is what the next line reads, and
/// `resolve` with nothing pending answers so without ending the batch.
#[test]
fn a_batch_is_one_session_and_resolve_with_nothing_pending_goes_on() {
    let h = Harness::new(Script::new());
    let (out, answers) = batch(
        &h,
        &[],
        &[
            json!({"tool": "write_file", "arguments": {"path": "a.txt", "content": "one\n"}}),
            resolve("apply"),
            json!({"tool": "edit_file", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}}),
        ],
    );
    assert_eq!(answers.len(), 3, "{out:?}");
    assert_eq!(answers[1]["text"], NOTHING_PENDING);
    assert_eq!(answers[1]["status"], "error");
    assert_eq!(answers[2]["is_error"], false, "{}", answers[2]);
    assert_eq!(h.read("a.txt"), "two\n");
    assert_exit(&out, 1);
}

#[test]
fn a_batch_preview_waits_for_resolve_apply() {
    let h = Harness::new(Script::new());
    let (out, answers) = batch(
        &h,
        &[],
        &[
            json!({"tool": "apply_patch", "arguments": preview("a.txt")}),
            resolve("apply"),
            json!({"tool": "apply_patch", "arguments": preview("b.txt")}),
            resolve("discard"),
            resolve("apply"),
        ],
    );
    assert_eq!(answers.len(), 5, "{out:?}");
    assert_eq!(answers[0]["is_error"], false, "{}", answers[0]);
    assert_eq!(answers[1]["is_error"], false, "{}", answers[1]);
    assert_eq!(h.read("a.txt"), "hi\n");
    assert_eq!(answers[3]["is_error"], false, "{}", answers[3]);
    assert!(
        !h.ws.join("b.txt").exists(),
        "a discarded preview was written"
    );
    assert_eq!(answers[4]["text"], NOTHING_PENDING);
    assert!(!stderr(&out).contains("pending"), "{}", stderr(&out));
}

#[test]
fn a_batch_that_ends_with_a_preview_says_it_is_dropped() {
    let h = Harness::new(Script::new());
    let (out, answers) = batch(
        &h,
        &[],
        &[json!({"tool": "apply_patch", "arguments": preview("a.txt")})],
    );
    assert_eq!(answers.len(), 1, "{out:?}");
    assert!(
        stderr(&out).contains("the batch ended with 1 change pending, not written"),
        "{out:?}"
    );
    assert!(!h.ws.join("a.txt").exists());
}

#[test]
fn read_only_refuses_resolve_apply_in_a_batch() {
    let h = Harness::new(Script::new());
    let (out, answers) = batch(
        &h,
        &["--approval", "read-only"],
        &[
            json!({"tool": "apply_patch", "arguments": preview("a.txt")}),
            resolve("apply"),
        ],
    );
    assert_eq!(answers.len(), 2, "{out:?}");
    assert_eq!(
        answers[0]["is_error"], false,
        "a preview only reads: {}",
        answers[0]
    );
    assert_eq!(answers[1]["status"], "denied", "{}", answers[1]);
    assert!(!h.ws.join("a.txt").exists());
}

#[test]
fn a_one_shot_preview_says_it_is_not_kept() {
    let h = Harness::new(Script::new());
    let arguments = preview("a.txt").to_string();
    let out = tool(&h, &["apply_patch", &arguments]);
    assert!(
        stderr(&out).contains("the previewed change was not kept"),
        "{out:?}"
    );
    assert!(stderr(&out).contains("--batch"), "{out:?}");
    assert!(!h.ws.join("a.txt").exists());
}

#[test]
fn chat_says_when_nothing_is_pending() {
    let h = Harness::new(Script::new());
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("/help");
    term.wait_for("/discard [REASON]");
    term.type_line("/pending");
    term.wait_for("nothing pending: no tool has a previewed change");
    term.type_line("/apply");
    term.wait_for("nothing pending: there is nothing to apply");
    term.type_line("/discard");
    term.wait_for("nothing pending: there is nothing to discard");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

/// The model previews; the user lists it, applies it (ask mode: typing /apply is the
/// approval), and the model hears of it with the next message; a second preview is discarded.
#[test]
fn chat_pending_apply_and_discard() {
    let script = Script::new()
        .chat(reply().tool_call("apply_patch", preview("a.txt")).done())
        .chat(reply().text("Previewed a.").done())
        .chat(reply().tool_call("apply_patch", preview("b.txt")).done())
        .chat(reply().text("Previewed b.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "ask"]);
    term.wait_for("> ");
    term.type_line("add a greeting");
    term.wait_for("Previewed a.");
    term.wait_for("1 change pending: \"");
    term.wait_for("· /pending · /apply · /discard");
    assert!(!h.ws.join("a.txt").exists(), "a preview wrote the file");

    term.type_line("/pending");
    term.wait_for("1 change pending, newest last");
    term.wait_for("from apply_patch");
    term.wait_for("a.txt (new) +1 -0");
    term.type_line("/apply");
    term.wait_for("1 file changed (+1 -0) · /undo takes it back");
    assert_eq!(h.read("a.txt"), "hi\n");

    term.type_line("another");
    term.wait_for("Previewed b.");
    let bodies = h.bodies();
    let told = messages(&bodies[2])
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(told.contains("The user ran /apply"), "{told}");
    assert!(told.ends_with("another"), "{told}");

    term.type_line("/discard not now");
    term.wait_for("Discarded");
    assert!(!h.ws.join("b.txt").exists());
    term.type_line("/pending");
    term.wait_for("nothing pending");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

#[test]
fn chat_read_only_refuses_apply() {
    let script = Script::new()
        .chat(reply().tool_call("apply_patch", preview("a.txt")).done())
        .chat(reply().text("Previewed a.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "read-only"]);
    term.wait_for("> ");
    term.type_line("add a greeting");
    term.wait_for("Previewed a.");
    term.type_line("/apply");
    term.wait_for("not applied: ");
    term.wait_for("/approval ask lets /apply make the change");
    assert!(!h.ws.join("a.txt").exists());
    term.type_line("/approval ask");
    term.wait_for("approval is now ask");
    term.type_line("/apply");
    term.wait_for("/undo takes it back");
    assert_eq!(h.read("a.txt"), "hi\n");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}

#[test]
fn chat_exit_says_which_pending_changes_are_dropped() {
    let script = Script::new()
        .chat(reply().tool_call("apply_patch", preview("a.txt")).done())
        .chat(reply().text("Previewed a.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("add a greeting");
    term.wait_for("Previewed a.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    term.wait_for("dropped 1 change pending (nothing of it was written)");
    assert!(!h.ws.join("a.txt").exists());
}

/// The model's own `resolve apply` in `ask` is asked about as the preview's write, with its
/// diff on the screen.
#[test]
fn chat_asks_about_the_models_resolve_with_the_diff() {
    let script = Script::new()
        .chat(reply().tool_call("apply_patch", preview("a.txt")).done())
        .chat(
            reply()
                .tool_call("resolve", json!({"action": "apply"}))
                .done(),
        )
        .chat(reply().text("Applied it.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &["--approval", "ask"]);
    term.wait_for("> ");
    term.type_line("add a greeting");
    term.wait_for("Allow? [y]es / [n]o / [a]lways");
    let screen = term.screen();
    assert!(screen.contains("resolve apply"), "{screen}");
    assert!(screen.contains("+hi"), "the diff is shown: {screen}");
    assert_eq!(
        screen.matches("Allow?").count(),
        1,
        "the preview asked: {screen}"
    );
    assert!(!h.ws.join("a.txt").exists());
    term.type_line("y");
    term.wait_for("Applied it.");
    assert_eq!(h.read("a.txt"), "hi\n");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}
