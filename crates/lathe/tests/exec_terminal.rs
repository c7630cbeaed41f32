//! What `lathe exec` writes for people (issue 14, terminal experience): the model's escape
//! sequences never reach the output, and a command that failed is shown as failed with the end
//! of its output.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

/// A reply whose text carries a window title (OSC 0), a clipboard write (OSC 52), CSI
/// sequences, a bare `\r` and C1 controls, each sequence split across two stream chunks.
pub const HOSTILE_CHUNKS: [&str; 5] = [
    "Title \x1b]0;own",
    "ed\x07 clip \x1b",
    "]52;c;aGVsbG8=\x07 csi \x1b[2J\x1b[",
    "31mred\r overwritten",
    " \u{9b}1m c1 \u{9d}0;t\u{9c} end",
];

/// What may not reach a terminal from the model: ESC, BEL, a bare CR and C1 controls.
pub fn raw_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
        .collect()
}

fn hostile_script() -> Script {
    let mut turn = reply();
    for chunk in HOSTILE_CHUNKS {
        turn = turn.text(chunk);
    }
    Script::new().chat(turn.done())
}

#[test]
fn model_escape_sequences_never_reach_piped_output() {
    let h = Harness::new(hostile_script());
    let output = h.exec("say hello", &[]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out:?}");
    // Made visible, not silently lost.
    assert!(
        out.contains("Title ^[]0;owned^G clip ^[]52;c;aGVsbG8=^G"),
        "{out:?}"
    );
    assert!(out.contains("csi ^[[2J^[[31mred overwritten"), "{out:?}");
    assert!(
        out.contains("<U+009B>1m c1 <U+009D>0;t<U+009C> end"),
        "{out:?}"
    );
    assert_eq!(raw_controls(&stderr(&output)), Vec::<char>::new());
}

#[test]
fn json_output_keeps_the_exact_text() {
    let h = Harness::new(hostile_script());
    let output = h.exec("say hello", &["--json"]);
    assert_exit(&output, 0);
    // JSON escapes the controls: none is raw on stdout, and each reads back exactly.
    assert_eq!(raw_controls(&stdout(&output)), Vec::<char>::new());
    let events = json_lines(&output);
    let text: String = of_type(&events, "text_delta")
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, HOSTILE_CHUNKS.concat());
}

/// The command a failing call runs: seven lines of output, the last with an OSC 52 in it, and
/// exit 3. Its title carries an OSC 0 too.
pub const FAILING_COMMAND: &str = "for i in 1 2 3 4 5 6 7; do echo line$i; done; printf 'bad \\033]52;c;eA==\\007\\n'; \
     exit 3 # \x1b]0;t\x07";

fn failing_script() -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({ "command": FAILING_COMMAND }))
                .done(),
        )
        .chat(reply().text("It failed.").done())
}

#[test]
fn a_failed_command_gets_the_failure_mark_and_its_last_lines() {
    let h = Harness::new(failing_script());
    let output = h.exec("run it", &["--approval", "full"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert_eq!(raw_controls(&out), Vec::<char>::new(), "{out:?}");
    let call = out
        .lines()
        .position(|l| l.contains("-> exit 3,"))
        .unwrap_or_else(|| panic!("no call line: {out}"));
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[call].starts_with("✗ shell "), "{out}");
    assert!(lines[call].contains("; exit 3 # ^[]0;t^G"), "{out}");
    let shown: Vec<&str> = lines[call + 1..call + 6].iter().map(|l| l.trim()).collect();
    assert_eq!(
        shown,
        ["line4", "line5", "line6", "line7", "bad ^[]52;c;eA==^G"],
        "{out}"
    );
    assert!(!out.contains("line3"), "{out}");
    assert!(lines[call + 6].contains("It failed."), "{out}");
}

#[test]
fn a_command_that_succeeds_keeps_the_success_mark_and_no_output() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({ "command": "echo fine" }))
                .done(),
        )
        .chat(reply().text("All good.").done());
    let h = Harness::new(script);
    let output = h.exec("run it", &["--approval", "full"]);
    assert_exit(&output, 0);
    let out = stdout(&output);
    assert!(out.contains("✓ shell echo fine -> exit 0,"), "{out}");
    assert!(!out.lines().any(|l| l.trim() == "fine"), "{out}");
}
