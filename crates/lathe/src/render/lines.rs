//! The lines the renderer composes from a run's facts, and that other commands show the same
//! way: the end line, the denied calls and what would allow them, the window meter, the line
//! after a checkpoint, a diff as the terminal shows it, the plan, a failed command's last lines.

use lathe_agent::events::{RunReport, RunStatus};
use lathe_runtime::CommandState;

use super::{Style, sanitize};

/// Longest diff shown after an edit; the rest is counted.
const MAX_DIFF_LINES: usize = 60;

/// Last lines of a failed command's output shown under its line.
pub(super) const FAILED_OUTPUT_LINES: usize = 5;

/// How denied calls can be allowed, under the end line that lists them.
pub const ALLOW_HINT: &str = "  to allow them: rerun with --approval auto (in chat: /approval \
auto), or add a [permissions] allow rule to .lathe/config.toml (see `lathe policy`)";

/// How a denied memory change can be made, under the end line: no mode or rule allows one
/// unasked ([`DenialKind::Memory`](lathe_agent::events::DenialKind::Memory)).
pub const MEMORY_HINT: &str = "  memory changes ask in every mode and no rule allows them \
unasked: approve it when asked (run on a terminal: lathe chat, or lathe exec), or edit the \
memory yourself with `lathe memory edit`";

/// The hints under the denied line: each kind of denial says what would let it run.
pub fn allow_hints(report: &RunReport) -> Vec<&'static str> {
    use lathe_agent::events::DenialKind;
    let mut hints = Vec::new();
    if report.denied.iter().any(|d| d.kind == DenialKind::Approval) {
        hints.push(ALLOW_HINT);
    }
    if report.denied.iter().any(|d| d.kind == DenialKind::Memory) {
        hints.push(MEMORY_HINT);
    }
    hints
}

/// The line that closes a run: how it ended, turns, files changed and time.
/// `Done · 3 turns · 2 files changed (+10 -2) · 12.3 s`, or `... · no files changed · ...`.
/// `shown_error` is the error line printed last: a failure's message equal to it is not repeated.
pub fn end_line(s: &Style, report: &RunReport, shown_error: Option<&str>) -> String {
    let message = report
        .message
        .as_deref()
        .filter(|m| shown_error != Some(*m))
        .map(sanitize);
    let turns = report.turns;
    let turns = format!("{turns} turn{}", if turns == 1 { "" } else { "s" });
    let files = match report.files_changed.len() {
        0 => "no files changed".to_owned(),
        n => {
            let (added, removed) = report
                .files_changed
                .iter()
                .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed));
            format!(
                "{n} file{} changed (+{added} -{removed})",
                if n == 1 { "" } else { "s" }
            )
        }
    };
    let took = format!("{:.1} s", report.duration_ms as f64 / 1000.0);
    match report.status {
        RunStatus::Finished => s.green(&format!("Done · {turns} · {files} · {took}")),
        RunStatus::MaxTurns => s.yellow(&format!(
            "Stopped: {} · {turns} · {files} · {took}",
            message.as_deref().unwrap_or("the turn limit was hit")
        )),
        RunStatus::Failed => s.red(&match message.as_deref() {
            Some(message) => format!("Failed: {message} · {turns} · {files} · {took}"),
            None => format!("Failed · {turns} · {files} · {took}"),
        }),
        RunStatus::Stopped => {
            s.yellow(&format!("Stopped by the user · {turns} · {files} · {took}"))
        }
    }
}

/// The window meter under a chat turn, from the server's counts of the run's last model turn:
/// `context 3,210/8,192 tokens (39%) · 41.2 tokens/s`. The fill is that turn's prompt and
/// reply (what the window holds now); the speed is the run's generated tokens over the
/// server's own generation time, or over the time waited for the model when the server does
/// not time itself. `None` when the server gave no counts.
pub fn meter_line(report: &RunReport) -> Option<String> {
    use lathe_agent::provider::window::thousands;
    let window = report.context_window?;
    let last = report
        .turn_usage
        .iter()
        .rev()
        .find(|t| t.usage.prompt_tokens.is_some())?;
    let used = last.usage.prompt_tokens.unwrap_or(0) + last.usage.completion_tokens.unwrap_or(0);
    let percent = used.saturating_mul(100) / window.max(1);
    let mut line = format!(
        "context {}/{} tokens ({percent}%)",
        thousands(used),
        thousands(window)
    );
    if let Some(speed) = tokens_per_second(report) {
        line.push_str(&format!(" · {speed:.1} tokens/s"));
    }
    Some(line)
}

/// Generated tokens per second over a run: by the server's clock where it timed every turn
/// that generated, else by the time waited for the model.
pub fn tokens_per_second(report: &RunReport) -> Option<f64> {
    let turns = &report.turn_usage;
    let generated: u64 = turns.iter().filter_map(|t| t.usage.completion_tokens).sum();
    if generated == 0 {
        return None;
    }
    let timed = turns
        .iter()
        .all(|t| t.usage.completion_tokens.is_none() || t.usage.generation_ms.is_some());
    let ms: u64 = if timed {
        turns.iter().filter_map(|t| t.usage.generation_ms).sum()
    } else {
        report.model_ms
    };
    (ms > 0).then(|| generated as f64 * 1000.0 / ms as f64)
}

/// The line after a chat turn that changed files: `2 files changed (+10 -2) · /diff · /undo ·
/// turn 3` (the number `/diff N` and `/rewind N` take).
pub fn checkpoint_line(checkpoint: &lathe_agent::events::Checkpoint) -> String {
    let n = checkpoint.files.len();
    format!(
        "{n} file{} changed (+{} -{}) · /diff · /undo · turn {}",
        if n == 1 { "" } else { "s" },
        checkpoint.added,
        checkpoint.removed,
        checkpoint.turn
    )
}

/// The line under the end line naming the calls that were denied, when some were:
/// `2 calls were denied: shell "cargo fmt", write_file src/a.rs`.
pub fn denied_line(report: &RunReport) -> Option<String> {
    let denied = &report.denied;
    if denied.is_empty() {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    for call in denied {
        let name = sanitize(&call.description).into_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    let count = match denied.len() {
        1 => "1 call was denied".to_owned(),
        n => format!("{n} calls were denied"),
    };
    let nothing = if report.changes_denied {
        "; nothing was written"
    } else {
        ""
    };
    Some(format!("{count}: {}{nothing}", names.join(", ")))
}

/// Whether a command that ended this way failed.
pub(super) fn failed(command: &CommandState) -> bool {
    match command {
        CommandState::Running => false,
        CommandState::Exited { exit_code } => *exit_code != 0,
        CommandState::Signaled { .. }
        | CommandState::TimedOut { .. }
        | CommandState::Killed { .. }
        | CommandState::Other { .. } => true,
    }
}

/// The last `count` lines of `output` that are not blank, sanitized, oldest first.
pub(super) fn last_lines(output: &str, count: usize) -> Vec<String> {
    let mut lines: Vec<String> = output
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(count)
        .map(|l| sanitize(l.trim_end()).into_owned())
        .collect();
    lines.reverse();
    lines
}

/// A change's diff as the terminal shows it, indented and coloured: its first
/// [`MAX_DIFF_LINES`] lines, then how many more there are. The diff is the one the call's
/// events carry (and the approval prompt showed); `lathe sessions show` replays it the same way.
pub fn diff_lines(style: &Style, diff: &str) -> Vec<String> {
    let lines: Vec<&str> = diff.lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(MAX_DIFF_LINES)
        .map(|text| {
            let text = &*sanitize(text);
            let shown = if text.starts_with("+++") || text.starts_with("---") {
                style.bold(text)
            } else if text.starts_with('+') {
                style.green(text)
            } else if text.starts_with('-') {
                style.red(text)
            } else if text.starts_with("@@") {
                style.cyan(text)
            } else {
                style.dim(text)
            };
            format!("    {shown}")
        })
        .collect();
    if lines.len() > MAX_DIFF_LINES {
        out.push(style.dim(&format!(
            "    … {} more diff lines",
            lines.len() - MAX_DIFF_LINES
        )));
    }
    out
}

/// The model's plan as the terminal shows it when it changes: a count, then a line per step
/// (`[x]` done, `[>]` in progress, `[ ]` pending), indented under the call that made it.
pub fn plan_lines(steps: &[lathe_runtime::checklist::ChecklistStep]) -> Vec<String> {
    use lathe_runtime::checklist::StepStatus;
    if steps.is_empty() {
        return vec!["  plan cleared".to_owned()];
    }
    let done = steps
        .iter()
        .filter(|s| s.status == StepStatus::Completed)
        .count();
    let mut rows = vec![format!("  plan ({done}/{} done)", steps.len())];
    for step in steps {
        rows.push(format!("  {} {}", step.status.mark(), step.step));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_did_not_exit_zero_failed() {
        let cases = [
            (CommandState::Exited { exit_code: 0 }, false),
            (CommandState::Exited { exit_code: 1 }, true),
            (CommandState::Running, false),
            (CommandState::Signaled { signal: 9 }, true),
            (
                CommandState::TimedOut {
                    limit: std::time::Duration::from_secs(1),
                },
                true,
            ),
        ];
        for (state, expected) in cases {
            assert_eq!(failed(&state), expected, "{state:?}");
        }
    }

    #[test]
    fn the_last_lines_skip_blank_ones_and_are_sanitized() {
        let output = "one\ntwo\n\nthree \x1b[2J\r\n\n  \n";
        assert_eq!(last_lines(output, 2), ["two", "three ^[[2J"]);
        assert_eq!(last_lines(output, 9), ["one", "two", "three ^[[2J"]);
    }

    fn report(status: RunStatus, files: &[(&str, u64, u64)], denied: &[&str]) -> RunReport {
        RunReport {
            status,
            turns: 3,
            duration_ms: 12_345,
            message: Some("stopped after 3 turns".into()),
            files_changed: files
                .iter()
                .map(|(path, added, removed)| lathe_agent::events::ChangedFile {
                    path: (*path).into(),
                    added: *added,
                    removed: *removed,
                    created: false,
                    deleted: false,
                    sub_agents: Vec::new(),
                })
                .collect(),
            denied: denied
                .iter()
                .map(|d| lathe_agent::events::DeniedCall {
                    call_id: "c".into(),
                    tool: "shell".into(),
                    description: (*d).into(),
                    reason: "no terminal".into(),
                    kind: lathe_agent::events::DenialKind::Approval,
                })
                .collect(),
            ..RunReport::default()
        }
    }

    #[test]
    fn the_end_line_has_the_facts_in_one_line() {
        let s = Style::plain();
        let done = report(RunStatus::Finished, &[("a.rs", 8, 2), ("b.rs", 2, 0)], &[]);
        assert_eq!(
            end_line(&s, &done, None),
            "Done · 3 turns · 2 files changed (+10 -2) · 12.3 s"
        );
        let none = report(RunStatus::Finished, &[], &[]);
        assert_eq!(
            end_line(&s, &none, None),
            "Done · 3 turns · no files changed · 12.3 s"
        );
        let one = report(RunStatus::MaxTurns, &[("a.rs", 1, 1)], &[]);
        assert_eq!(
            end_line(&s, &one, None),
            "Stopped: stopped after 3 turns · 3 turns · 1 file changed (+1 -1) · 12.3 s"
        );
        assert_eq!(denied_line(&none), None);
    }

    #[test]
    fn denied_calls_are_listed_once_each() {
        let mut denied = report(
            RunStatus::Finished,
            &[],
            &[
                "shell \"cargo fmt\"",
                "write_file src/a.rs",
                "shell \"cargo fmt\"",
            ],
        );
        assert_eq!(
            denied_line(&denied).unwrap(),
            "3 calls were denied: shell \"cargo fmt\", write_file src/a.rs"
        );
        denied.changes_denied = true;
        denied.denied.truncate(1);
        assert_eq!(
            denied_line(&denied).unwrap(),
            "1 call was denied: shell \"cargo fmt\"; nothing was written"
        );
    }
}
