//! One line per tool call, for humans: `read_file src/main.rs (lines 1-120)`,
//! `shell cargo test -> exit 0, 3.2 s`.

use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;
use serde_json::{Map, Value};

use lathe_tools::ToolOutput;

use crate::events::{DiffStats, ToolStatus};
use crate::text::cut;

/// Longest argument text shown in a line.
const ARG_CHARS: usize = 100;

/// The line shown when a call starts: the tool and what it works on.
pub fn started(name: &str, arguments: &Value) -> String {
    let arg = |key: &str| arguments.get(key).and_then(scalar);
    let subject = match name {
        "read_file" | "write_file" | "edit_file" | "list_files" => {
            arg("path").map(
                |path| match (name, arguments.get("offset").and_then(Value::as_u64)) {
                    ("read_file", Some(offset)) if offset > 1 => {
                        format!("{path} (from line {offset})")
                    }
                    _ => path,
                },
            )
        }
        "shell" => arg("command").map(|c| one_line(&c)),
        "grep" | "glob" => arg("pattern").map(|pattern| {
            let pattern = if name == "grep" {
                format!("{:?}", pattern)
            } else {
                pattern
            };
            match arg("path").filter(|p| p != ".") {
                Some(path) => format!("{pattern} in {path}"),
                None => pattern,
            }
        }),
        "command_output" | "kill_command" => arg("id"),
        _ => None,
    };
    match subject {
        Some(subject) if !subject.is_empty() => format!("{name} {}", cut(&subject, ARG_CHARS)),
        _ => {
            let rendered = render_arguments(arguments);
            if rendered.is_empty() {
                name.to_owned()
            } else {
                format!("{name} {rendered}")
            }
        }
    }
}

/// The line shown when a call ends.
pub fn finished(
    name: &str,
    arguments: &Value,
    status: ToolStatus,
    output: &ToolOutput,
    elapsed: Duration,
) -> String {
    let start = started(name, arguments);
    let meta = &output.metadata;
    match status {
        ToolStatus::Denied => return format!("{start} -> denied"),
        ToolStatus::Cancelled => return format!("{start} -> stopped"),
        ToolStatus::Refused => return format!("{start} -> refused: {}", first_line(&output.text)),
        ToolStatus::Error if name != "shell" => {
            return format!("{start} -> error: {}", first_line(&output.text));
        }
        _ => {}
    }
    match name {
        "read_file" => match shown_lines(meta, &output.text) {
            Some((from, to)) => format!("{start} (lines {from}-{to})"),
            None => start,
        },
        "shell" => {
            // The shell tool reports `status: {state, exit_code | signal | label}`.
            let status_meta = meta.get("status").and_then(Value::as_object);
            let field = |key: &str| {
                status_meta
                    .and_then(|s| s.get(key))
                    .or_else(|| meta.get(key))
                    .cloned()
            };
            let state = field("state").and_then(|v| v.as_str().map(str::to_owned));
            let id = meta
                .get("command_id")
                .or_else(|| meta.get("id"))
                .and_then(scalar);
            let backgrounded = state.as_deref() == Some("running")
                || meta.get("background").and_then(Value::as_bool) == Some(true);
            if backgrounded && status != ToolStatus::Error {
                return match id {
                    Some(id) => format!("{start} -> running in the background as {id}"),
                    None => format!("{start} -> running in the background"),
                };
            }
            let took = ["wall_ms", "duration_ms"]
                .iter()
                .find_map(|k| meta.get(*k).and_then(Value::as_u64))
                .map(Duration::from_millis)
                .unwrap_or(elapsed);
            let how = if let Some(code) = field("exit_code").and_then(|v| v.as_i64()) {
                format!("exit {code}")
            } else if let Some(signal) = field("signal").as_ref().and_then(scalar) {
                format!("killed by signal {signal}")
            } else if let Some(label) = field("label").as_ref().and_then(scalar) {
                label
            } else if state.as_deref() == Some("timed_out") {
                "timed out".to_owned()
            } else if status == ToolStatus::Error {
                format!("error: {}", first_line(&output.text))
            } else {
                "done".to_owned()
            };
            format!("{start} -> {how}, {}", seconds(took))
        }
        "grep" | "glob" | "list_files" => {
            let count = ["matches", "files", "entries"]
                .iter()
                .find_map(|k| meta.get(*k).and_then(Value::as_u64).map(|n| (*k, n)));
            match count {
                Some(("matches", n)) => format!("{start} -> {n} {}", plural(n, "match", "matches")),
                Some((_, n)) => format!("{start} -> {n} {}", plural(n, "entry", "entries")),
                None => start,
            }
        }
        _ => match stats(meta) {
            Some(s) => format!("{start} (+{} -{})", s.added, s.removed),
            None => start,
        },
    }
}

/// Lines added and removed, from an edit's metadata.
pub fn stats(meta: &Map<String, Value>) -> Option<DiffStats> {
    let added = meta.get("added").and_then(Value::as_u64);
    let removed = meta.get("removed").and_then(Value::as_u64);
    if added.is_none() && removed.is_none() {
        return None;
    }
    Some(DiffStats {
        added: added.unwrap_or(0),
        removed: removed.unwrap_or(0),
    })
}

/// `3.2 s`.
pub fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn plural<'a>(n: u64, one: &'a str, many: &'a str) -> &'a str {
    if n == 1 { one } else { many }
}

fn shown_lines(meta: &Map<String, Value>, text: &str) -> Option<(u64, u64)> {
    let from = ["start_line", "first_line", "from", "offset"]
        .iter()
        .find_map(|k| meta.get(*k).and_then(Value::as_u64));
    let to = ["end_line", "last_line", "to", "end"]
        .iter()
        .find_map(|k| meta.get(*k).and_then(Value::as_u64));
    if let (Some(from), Some(to)) = (from, to) {
        return Some((from, to));
    }
    static SHOWING: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)lines ([0-9][0-9,]*)\s*-\s*([0-9][0-9,]*)").expect("valid pattern")
    });
    let number = |s: &str| s.replace(',', "").parse::<u64>().ok();
    SHOWING
        .captures(text)
        .and_then(|c| Some((number(&c[1])?, number(&c[2])?)))
        .or_else(|| {
            // A short file shown whole: count its numbered lines.
            let lines = text
                .lines()
                .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
                .count();
            (lines > 0).then_some((1, lines as u64))
        })
}

fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn render_arguments(arguments: &Value) -> String {
    let Some(map) = arguments.as_object() else {
        return cut(&one_line(&arguments.to_string()), ARG_CHARS);
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| match scalar(v) {
            Some(s) => format!("{k}={}", one_line(&s)),
            None => format!("{k}={}", one_line(&v.to_string())),
        })
        .collect();
    cut(&parts.join(" "), ARG_CHARS)
}

fn one_line(text: &str) -> String {
    let mut lines = text.trim().lines();
    let first = lines.next().unwrap_or("").trim_end().to_owned();
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first
    }
}

fn first_line(text: &str) -> String {
    cut(crate::text::first_line(text), ARG_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(text: &str, meta: Value) -> ToolOutput {
        let mut output = ToolOutput::ok(text);
        output.metadata = meta.as_object().cloned().unwrap_or_default();
        output
    }

    #[test]
    fn lines_as_the_issue_shows_them() {
        let read = json!({"path": "src/main.rs"});
        let output = ok("", json!({"start_line": 1, "end_line": 120}));
        assert_eq!(
            finished("read_file", &read, ToolStatus::Ok, &output, Duration::ZERO),
            "read_file src/main.rs (lines 1-120)"
        );
        let shell = json!({"command": "cargo test"});
        let output = ok(
            "exit 0",
            json!({"status": {"state": "exited", "exit_code": 0}, "wall_ms": 3_200}),
        );
        assert_eq!(
            finished("shell", &shell, ToolStatus::Ok, &output, Duration::ZERO),
            "shell cargo test -> exit 0, 3.2 s"
        );
    }

    #[test]
    fn fallbacks_read_the_text_and_the_clock() {
        let read = json!({"path": "a.rs", "offset": 10});
        let output = ok("...\n(showing lines 10-12 of 40)", json!({}));
        assert_eq!(
            finished("read_file", &read, ToolStatus::Ok, &output, Duration::ZERO),
            "read_file a.rs (from line 10) (lines 10-12)"
        );
        let shell = json!({"command": "make\nmake install"});
        let output = ok("", json!({"exit_code": 2}));
        assert_eq!(
            finished(
                "shell",
                &shell,
                ToolStatus::Error,
                &output,
                Duration::from_millis(1_250)
            ),
            "shell make … -> exit 2, 1.2 s"
        );
    }

    #[test]
    fn background_and_signals() {
        let shell = json!({"command": "sleep 100"});
        let output = ok(
            "",
            json!({"status": {"state": "running"}, "command_id": "cmd-3"}),
        );
        assert_eq!(
            finished("shell", &shell, ToolStatus::Ok, &output, Duration::ZERO),
            "shell sleep 100 -> running in the background as cmd-3"
        );
        let output = ok(
            "",
            json!({"status": {"state": "signaled", "signal": 9}, "wall_ms": 500}),
        );
        assert_eq!(
            finished("shell", &shell, ToolStatus::Error, &output, Duration::ZERO),
            "shell sleep 100 -> killed by signal 9, 0.5 s"
        );
    }

    #[test]
    fn edits_denials_and_errors() {
        let edit = json!({"path": "a.rs", "old_string": "x", "new_string": "y"});
        let output = ok("edited", json!({"added": 3, "removed": 1, "path": "a.rs"}));
        assert_eq!(
            finished("edit_file", &edit, ToolStatus::Ok, &output, Duration::ZERO),
            "edit_file a.rs (+3 -1)"
        );
        assert_eq!(
            stats(&output.metadata),
            Some(DiffStats {
                added: 3,
                removed: 1
            })
        );
        let denied = ToolOutput::error("the user denied this: no");
        assert_eq!(
            finished(
                "edit_file",
                &edit,
                ToolStatus::Denied,
                &denied,
                Duration::ZERO
            ),
            "edit_file a.rs -> denied"
        );
        let error = ToolOutput::error("\nno such file: b.rs\nmore");
        assert_eq!(
            finished(
                "read_file",
                &json!({"path": "b.rs"}),
                ToolStatus::Error,
                &error,
                Duration::ZERO
            ),
            "read_file b.rs -> error: no such file: b.rs"
        );
    }

    #[test]
    fn other_tools_show_their_arguments() {
        assert_eq!(
            started("grep", &json!({"pattern": "fn main", "path": "src"})),
            "grep \"fn main\" in src"
        );
        assert_eq!(
            started("resolve", &json!({"action": "apply"})),
            "resolve action=apply"
        );
        assert_eq!(started("list_commands", &json!({})), "list_commands");
        let long = "x".repeat(300);
        assert!(started("shell", &json!({"command": long})).chars().count() < 120);
    }
}
