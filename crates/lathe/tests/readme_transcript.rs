//! The transcript in README.md's "First run" section is this test's output: the real `lathe exec`
//! against the scripted model server, stdout and stderr in one stream as a terminal shows them
//! (piped, so without colour). The test fails when the two drift apart; to re-record the README
//! after a deliberate change of the output, run
//! `LATHE_RECORD_README=1 cargo test -p lathe --test integration readme_transcript::`.
//!
//! Session ids and durations differ between runs, so they are compared as placeholders; the
//! recording keeps the values of the run that wrote it. The temporary workspace is shown as
//! `~/my-project`, the directory the README's example runs in.

use std::fs::File;

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

const README: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");

/// The line before the recorded block in README.md.
const MARKER: &str = "<!-- transcript: tests/readme_transcript.rs -->";

const TASK: &str = "fix the failing test in test_calc.py";

fn script() -> Script {
    Script::new()
        .chat(
            reply()
                .thinking("Run the test first to see what fails.")
                .tool_call("shell", json!({"command": "python3 test_calc.py"}))
                .done(),
        )
        .chat(
            reply()
                .text("The average is off by one. Let me look at `calc.py`.")
                .tool_call("read_file", json!({"path": "calc.py"}))
                .done(),
        )
        .chat(
            reply()
                .tool_call(
                    "edit_file",
                    json!({
                        "path": "calc.py",
                        "old_string": "len(numbers) + 1",
                        "new_string": "len(numbers)",
                    }),
                )
                .done(),
        )
        .chat(
            reply()
                .tool_call("shell", json!({"command": "python3 test_calc.py"}))
                .done(),
        )
        .chat(
            reply()
                .text(
                    "Fixed: `average` in `calc.py` added 1 to the mean. The test passes now. \
                     [TASK_COMPLETE]",
                )
                .done(),
        )
}

/// Session ids and numbers of seconds as `#`, so two runs compare equal.
fn mask(transcript: &str) -> String {
    transcript
        .lines()
        .map(|line| match line.strip_prefix("session ") {
            Some(rest) => format!("session #{}", &rest[rest.find(' ').unwrap_or(rest.len())..]),
            None if line.starts_with("undo: lathe undo --session ") => {
                "undo: lathe undo --session #".to_owned()
            }
            None => mask_seconds(line),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `0.1 s`, `4.2 s` and `1s` become `# s` and `#s`.
fn mask_seconds(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let starts_number =
            chars[i].is_ascii_digit() && (i == 0 || !chars[i - 1].is_alphanumeric());
        if starts_number {
            let mut j = i;
            while j < chars.len() && (chars[j].is_ascii_digit() || chars[j] == '.') {
                j += 1;
            }
            let unit = match chars.get(j) {
                Some('s') => Some(j + 1),
                Some(' ') if chars.get(j + 1) == Some(&'s') => Some(j + 2),
                _ => None,
            };
            let ends_word = |k: usize| chars.get(k).is_none_or(|c| !c.is_alphanumeric());
            if let Some(end) = unit.filter(|&end| ends_word(end)) {
                out.push('#');
                out.extend(&chars[j..end]);
                i = end;
                continue;
            }
            out.extend(&chars[i..j]);
            i = j;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// The fenced block after the marker: its byte range in `readme` and its text.
fn recorded_block(readme: &str) -> (std::ops::Range<usize>, &str) {
    let marker = readme
        .find(MARKER)
        .unwrap_or_else(|| panic!("README.md has no `{MARKER}` line"));
    let open = marker + readme[marker..].find("```\n").expect("a fenced block") + 4;
    let close = open + readme[open..].find("```\n").expect("the block's end");
    (open..close, &readme[open..close])
}

#[test]
fn the_readme_transcript_is_what_the_binary_prints() {
    let h = Harness::new(script());
    h.write(
        "calc.py",
        "def average(numbers):\n    return sum(numbers) / len(numbers) + 1\n",
    );
    h.write(
        "test_calc.py",
        // Its own message rather than an assertion's traceback, whose shape varies with the
        // Python version.
        "import sys\n\
         from calc import average\n\
         \n\
         result = average([1, 2, 3])\n\
         if result != 2:\n    \
         sys.exit(f\"FAIL: average([1, 2, 3]) returned {result}, expected 2\")\n\
         print(\"ok\")\n",
    );
    let log = h.dir.path().join("transcript.txt");
    let file = File::create(&log).unwrap();
    let status = h
        .lathe()
        .arg("exec")
        .arg(TASK)
        .args(["--model", MODEL, "--base-url", &h.server.url()])
        .args(["--approval", "auto"])
        .stdin(std::process::Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .status()
        .unwrap();
    let transcript = std::fs::read_to_string(&log)
        .unwrap()
        .replace(&h.ws.display().to_string(), "~/my-project");
    assert!(status.success(), "{status}:\n{transcript}");
    assert!(
        h.read("calc.py").contains("/ len(numbers)\n"),
        "{transcript}"
    );

    let readme = std::fs::read_to_string(README).unwrap();
    let (range, recorded) = recorded_block(&readme);
    if std::env::var_os("LATHE_RECORD_README").is_some() {
        let mut updated = readme.clone();
        updated.replace_range(range, &transcript);
        std::fs::write(README, updated).unwrap();
        return;
    }
    assert_eq!(
        mask(recorded),
        mask(&transcript),
        "README.md's transcript differs from what `lathe exec` prints now; if the change is \
         meant, re-record it with LATHE_RECORD_README=1 (see this file's doc)"
    );
}

#[test]
fn masking_hides_ids_and_seconds_only() {
    assert_eq!(
        mask("session 1m8mf6j34raw4 · qwen3:8b · approval auto"),
        "session # · qwen3:8b · approval auto"
    );
    assert_eq!(
        mask("✗ shell python3 test_calc.py -> exit 1, 0.1 s"),
        "✗ shell python3 test_calc.py -> exit 1, # s"
    );
    assert_eq!(mask("Thought for 12s"), "Thought for #s");
    assert_eq!(
        mask("undo: lathe undo --session 1m8mf6j34raw4"),
        "undo: lathe undo --session #"
    );
    assert_eq!(
        mask("Done · 5 turns · 4.2 s · 1 file"),
        "Done · 5 turns · # s · 1 file"
    );
    assert_eq!(mask("(lines 1-2) +1 -1 v3s"), "(lines 1-2) +1 -1 v3s");
}
