//! One line per tool call, for humans: `read_file src/main.rs (lines 1-120)`,
//! `shell cargo test -> exit 0, 3.2 s`.
//!
//! The line is the call's title (the tool's own, [`lathe_runtime::Tool::title`]) and what its
//! typed result metadata says happened; nothing here knows a tool by name.
//!
//! After the run, the same results make the closing line built from the last calls, when the
//! model gave no text at all, and the denied calls' lines in its report (see the `tally`
//! module).

use std::time::Duration;

use serde_json::Value;

use lathe_runtime::{CommandState, Metadata, ToolOutput};

use crate::events::{DiffStats, ToolStatus};
use crate::runner::CallResult;
use crate::text::cut;

/// Longest error text shown in a line.
const ARG_CHARS: usize = 100;

/// The line for a call that could not be prepared (an unknown tool, arguments that do not
/// fit): the name as written and its arguments.
pub fn unprepared(name: &str, arguments: &Value) -> String {
    lathe_runtime::registry::generic_title(name, arguments)
}

/// The line shown when a call ends. `runs_command` is true for calls that run a command (their
/// command status is what they did; other calls that only look at a command show counts).
pub fn finished(
    title: &str,
    runs_command: bool,
    status: ToolStatus,
    output: &ToolOutput,
    elapsed: Duration,
) -> String {
    let meta = &output.metadata;
    match status {
        ToolStatus::Denied => return format!("{title} -> denied"),
        ToolStatus::Cancelled => return format!("{title} -> stopped"),
        ToolStatus::Refused => return format!("{title} -> refused: {}", first_line(&output.text)),
        ToolStatus::Error if !runs_command || meta.command.is_none() => {
            return format!("{title} -> error: {}", first_line(&output.text));
        }
        _ => {}
    }
    if runs_command && let Some(command) = &meta.command {
        let how = match &command.status {
            CommandState::Running => {
                return format!("{title} -> running in the background as {}", command.id);
            }
            CommandState::Exited { exit_code } => format!("exit {exit_code}"),
            CommandState::Signaled { signal } => format!("killed by signal {signal}"),
            CommandState::TimedOut { .. } => "timed out".to_owned(),
            CommandState::Killed { label } | CommandState::Other { label } => label.clone(),
        };
        return format!("{title} -> {how}, {}", seconds(elapsed));
    }
    let mut line = title.to_owned();
    if let Some(lines) = &meta.lines {
        line.push_str(&format!(" (lines {}-{})", lines.first, lines.last));
    }
    if let Some(stats) = stats(meta) {
        line.push_str(&format!(" (+{} -{})", stats.added, stats.removed));
    }
    if let Some(found) = &meta.found {
        line.push_str(&format!(" -> {found}"));
    }
    line
}

/// Lines added and removed over the files a call changed.
pub fn stats(meta: &Metadata) -> Option<DiffStats> {
    meta.line_counts()
        .map(|(added, removed)| DiffStats { added, removed })
}

/// `3.2 s`.
pub fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn first_line(text: &str) -> String {
    cut(crate::text::first_line(text), ARG_CHARS)
}

/// How many of the last calls the closing summary built from tool results speaks of.
pub(crate) const SUMMARISED_CALLS: usize = 6;

/// What the user reads when the model ended a run that made calls without any text, and did
/// not answer the request for a summary either: what the last calls did, in one line, built
/// from their results. `Edited src/a.rs (+3 -1); ran `cargo test` (exit 0).` Each entry is a
/// result with what the gate worked out about its call.
pub fn from_results(results: &[&CallResult]) -> String {
    let from = results.len().saturating_sub(SUMMARISED_CALLS);
    let mut parts: Vec<String> = Vec::new();
    for result in &results[from..] {
        for part in described(result) {
            if !parts.contains(&part) {
                parts.push(part);
            }
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    let mut line = parts.join("; ");
    // A sentence of its own words starts with a capital; a tool's name is left as it is.
    if ["edited ", "created ", "deleted ", "ran "]
        .iter()
        .any(|verb| line.starts_with(verb))
    {
        line[..1].make_ascii_uppercase();
    }
    line.push('.');
    line
}

/// What one call did, as parts of that line.
fn described(result: &CallResult) -> Vec<String> {
    let title = result
        .summary
        .split(" -> ")
        .next()
        .unwrap_or(&result.summary);
    match result.status {
        ToolStatus::Denied => return vec![format!("{title} was denied")],
        ToolStatus::Cancelled => return vec![format!("{title} was stopped")],
        ToolStatus::Refused => return vec![format!("{title} was not run")],
        ToolStatus::Ok | ToolStatus::Error => {}
    }
    let mut parts: Vec<String> = result
        .changes
        .iter()
        .map(|change| {
            if change.deleted {
                format!("deleted {}", change.path)
            } else if change.created {
                format!("created {} (+{})", change.path, change.added)
            } else {
                format!(
                    "edited {} (+{} -{})",
                    change.path, change.added, change.removed
                )
            }
        })
        .collect();
    if let (Some(command), Some(meta)) = (&result.command, &result.output.metadata.command) {
        let how = match &meta.status {
            CommandState::Running => "still running".to_owned(),
            CommandState::Exited { exit_code } => format!("exit {exit_code}"),
            CommandState::Signaled { signal } => format!("killed by signal {signal}"),
            CommandState::TimedOut { .. } => "timed out".to_owned(),
            CommandState::Killed { label } | CommandState::Other { label } => label.clone(),
        };
        parts.push(format!("ran `{}` ({how})", cut(command.trim(), ARG_CHARS)));
    } else if parts.is_empty() {
        parts.push(match result.status {
            ToolStatus::Error => format!("{title} failed"),
            _ => result.summary.clone(),
        });
    }
    parts
}

/// How a denied call is named in a run's report: `shell "cargo fmt"` for a command,
/// otherwise its title (`write_file src/a.rs`).
pub fn denied_description(result: &CallResult) -> String {
    if let Some(command) = &result.command {
        return format!("{} \"{}\"", result.name, cut(command.trim(), ARG_CHARS));
    }
    result
        .summary
        .strip_suffix(" -> denied")
        .unwrap_or(&result.summary)
        .to_owned()
}

/// Why a call was denied, in one sentence: the start of what the model read.
pub fn denied_reason(result: &CallResult) -> String {
    let text = crate::text::first_line(&result.output.text);
    let sentence = match text.find(". ") {
        Some(end) => &text[..end],
        None => text.trim_end_matches('.'),
    };
    cut(sentence, 2 * ARG_CHARS)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use lathe_runtime::{CommandMeta, FileChange, LineRange};
    use serde_json::json;

    #[test]
    fn lines_as_the_issue_shows_them() {
        let output = ToolOutput::ok("").with_lines(LineRange {
            first: 1,
            last: 120,
            total: Some(300),
        });
        assert_eq!(
            finished(
                "read_file src/main.rs",
                false,
                ToolStatus::Ok,
                &output,
                Duration::ZERO
            ),
            "read_file src/main.rs (lines 1-120)"
        );
        let output = ToolOutput::ok("exit 0").with_command(CommandMeta {
            id: 1,
            status: CommandState::Exited { exit_code: 0 },
        });
        assert_eq!(
            finished(
                "shell cargo test",
                true,
                ToolStatus::Ok,
                &output,
                Duration::from_millis(3_200)
            ),
            "shell cargo test -> exit 0, 3.2 s"
        );
    }

    #[test]
    fn background_and_signals() {
        let running = ToolOutput::ok("started").with_command(CommandMeta {
            id: 4,
            status: CommandState::Running,
        });
        assert_eq!(
            finished(
                "shell npm run dev",
                true,
                ToolStatus::Ok,
                &running,
                Duration::ZERO
            ),
            "shell npm run dev -> running in the background as 4"
        );
        let killed = ToolOutput::error("killed").with_command(CommandMeta {
            id: 5,
            status: CommandState::Signaled { signal: 9 },
        });
        assert_eq!(
            finished(
                "shell sleep 9",
                true,
                ToolStatus::Error,
                &killed,
                Duration::ZERO
            ),
            "shell sleep 9 -> killed by signal 9, 0.0 s"
        );
        // A call that only looks at a command shows no exit line.
        let looked = ToolOutput::ok("output").with_command(CommandMeta {
            id: 5,
            status: CommandState::Exited { exit_code: 0 },
        });
        assert_eq!(
            finished(
                "command_output 5",
                false,
                ToolStatus::Ok,
                &looked,
                Duration::ZERO
            ),
            "command_output 5"
        );
    }

    #[test]
    fn edits_denials_errors_and_counts() {
        let edit = ToolOutput::ok("Edited").with_change(FileChange {
            path: "a.rs".into(),
            created: false,
            deleted: false,
            added: 3,
            removed: 1,
            diff: String::new(),
        });
        assert_eq!(
            finished(
                "edit_file a.rs",
                false,
                ToolStatus::Ok,
                &edit,
                Duration::ZERO
            ),
            "edit_file a.rs (+3 -1)"
        );
        let out = ToolOutput::error("the user denied this");
        assert_eq!(
            finished(
                "edit_file a.rs",
                false,
                ToolStatus::Denied,
                &out,
                Duration::ZERO
            ),
            "edit_file a.rs -> denied"
        );
        let out = ToolOutput::error("old_string was not found in a.rs\nclosest: ...");
        assert_eq!(
            finished(
                "edit_file a.rs",
                false,
                ToolStatus::Error,
                &out,
                Duration::ZERO
            ),
            "edit_file a.rs -> error: old_string was not found in a.rs"
        );
        let found = ToolOutput::ok("...").with_found("12 matches");
        assert_eq!(
            finished("grep \"fn\"", false, ToolStatus::Ok, &found, Duration::ZERO),
            "grep \"fn\" -> 12 matches"
        );
    }

    #[test]
    fn unprepared_calls_show_their_arguments() {
        assert_eq!(
            unprepared("meat", &json!({"a": 1, "b": "x"})),
            "meat a=1 b=x"
        );
        assert_eq!(unprepared("meat", &json!({})), "meat");
        let long = "x".repeat(500);
        assert!(
            unprepared("deploy", &json!({"target": long}))
                .chars()
                .count()
                < 120
        );
    }

    /// A call's result, as the runner makes it, for the tests of the report.
    pub(in crate::runner) fn result(
        name: &str,
        status: ToolStatus,
        summary: &str,
        output: ToolOutput,
    ) -> CallResult {
        CallResult {
            call_id: "c".into(),
            name: name.into(),
            kind: None,
            status,
            changes: output.metadata.changes.clone(),
            output,
            summary: summary.into(),
            changes_memory: false,
            changes_files: false,
            command: None,
        }
    }

    /// `result` as the gate judged the call: running `command`, changing files or not.
    pub(in crate::runner) fn judged(
        mut result: CallResult,
        command: Option<&str>,
        changes_files: bool,
    ) -> CallResult {
        result.command = command.map(str::to_owned);
        result.changes_files = changes_files;
        result
    }

    #[test]
    fn the_closing_line_says_what_the_last_calls_did() {
        let edit = result(
            "edit_file",
            ToolStatus::Ok,
            "edit_file src/a.rs (+3 -1)",
            ToolOutput::ok("Edited").with_change(FileChange::counted("src/a.rs", 3, 1)),
        );
        let test = result(
            "shell",
            ToolStatus::Ok,
            "shell cargo test -> exit 0, 1.0 s",
            ToolOutput::ok("ok").with_command(CommandMeta {
                id: 1,
                status: CommandState::Exited { exit_code: 0 },
            }),
        );
        let read = result(
            "read_file",
            ToolStatus::Ok,
            "read_file b.rs (lines 1-9)",
            ToolOutput::ok("..."),
        );
        let denied = result(
            "write_file",
            ToolStatus::Denied,
            "write_file c.rs -> denied",
            ToolOutput::error("the user denied this: no"),
        );
        let test = judged(test, Some("cargo test"), false);
        assert_eq!(
            from_results(&[&read, &edit, &test, &test]),
            "read_file b.rs (lines 1-9); edited src/a.rs (+3 -1); ran `cargo test` (exit 0)."
        );
        assert_eq!(
            from_results(&[&edit, &denied]),
            "Edited src/a.rs (+3 -1); write_file c.rs was denied."
        );
        assert_eq!(from_results(&[]), "");
        // Only the last six calls count.
        let many: Vec<&CallResult> = std::iter::once(&edit)
            .chain(std::iter::repeat_n(&read, 6))
            .collect();
        assert!(!from_results(&many).contains("src/a.rs"));
    }

    #[test]
    fn denied_calls_are_named_and_their_reason_is_one_sentence() {
        let denied = result(
            "shell",
            ToolStatus::Denied,
            "shell cargo fmt -> denied",
            ToolOutput::error(
                "the user denied this: this call needs approval. Do not retry it; carry on",
            ),
        );
        assert_eq!(
            denied_description(&judged(denied.clone(), Some("cargo fmt"), true)),
            "shell \"cargo fmt\""
        );
        assert_eq!(
            denied_reason(&denied),
            "the user denied this: this call needs approval"
        );
        let write = result(
            "write_file",
            ToolStatus::Denied,
            "write_file src/a.rs -> denied",
            ToolOutput::error("denied by Lathe's policy: read-only mode"),
        );
        assert_eq!(denied_description(&write), "write_file src/a.rs");
        assert_eq!(
            denied_reason(&write),
            "denied by Lathe's policy: read-only mode"
        );
    }
}
