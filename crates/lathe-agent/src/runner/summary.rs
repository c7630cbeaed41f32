//! One line per tool call, for humans: `read_file src/main.rs (lines 1-120)`,
//! `shell cargo test -> exit 0, 3.2 s`.
//!
//! The line is the call's title (the tool's own, [`lathe_tools::Tool::title`]) and what its
//! typed result metadata says happened; nothing here knows a tool by name.

use std::time::Duration;

use serde_json::Value;

use lathe_tools::{CommandState, Metadata, ToolOutput};

use crate::events::{DiffStats, ToolStatus};
use crate::text::cut;

/// Longest error text shown in a line.
const ARG_CHARS: usize = 100;

/// The line for a call that could not be prepared (an unknown tool, arguments that do not
/// fit): the name as written and its arguments.
pub fn unprepared(name: &str, arguments: &Value) -> String {
    lathe_tools::registry::generic_title(name, arguments)
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

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_tools::{CommandMeta, FileChange, LineRange};
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
}
