//! Terminal rendering of a run's events: streamed text, a spinner then "Thought for Ns" for
//! thinking, one line per tool call, coloured diffs for edits, and a closing summary. Plain text
//! when piped; `--json` writes each event as one JSON line, exactly as stored.
//!
//! Every text that came from the model or a tool passes through [`sanitize()`] before it is
//! written, so only the renderer's own styling reaches the terminal.

mod sanitize;
mod spinner;
mod style;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use lathe_agent::events::{ApprovalDecision, Event, RunStatus, ToolStatus};
use lathe_agent::sink::EventHandler;
use lathe_tools::CommandState;

pub use sanitize::sanitize;
pub use spinner::Spinner;
pub use style::Style;

/// Longest diff shown after an edit; the rest is counted.
const MAX_DIFF_LINES: usize = 60;

/// Last lines of a failed command's output shown under its line.
const FAILED_OUTPUT_LINES: usize = 5;

/// Output kept per running call for those lines; more than five lines need, unless a line is
/// very long, and bounded so that a chatty command costs little.
const OUTPUT_TAIL_BYTES: usize = 4096;

/// How events are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    /// For people: on a terminal with colour and a spinner, plain when piped.
    Human,
    /// One JSON object per event per line.
    Json,
}

struct State {
    /// Whether the last thing written to stdout ended a line.
    at_line_start: bool,
    /// Files changed in this run and their stats.
    files: Vec<String>,
    added: u64,
    removed: u64,
    began: Instant,
    /// The end of each running call's output, for the lines shown if it fails.
    output_tails: HashMap<String, String>,
}

/// Writes events to the terminal.
pub struct Renderer {
    mode: OutputMode,
    style: Style,
    spinner: Option<Spinner>,
    state: Mutex<State>,
}

impl Renderer {
    /// A renderer in `mode`. Everything it shows comes from the events (the diff of an edit is
    /// the one its finished event carries, the same the approval prompt showed).
    pub fn new(mode: OutputMode) -> Arc<Self> {
        let style = Style::for_stdout();
        let spinner =
            (mode == OutputMode::Human && style.is_terminal() && Style::stderr_is_terminal())
                .then(Spinner::start);
        Arc::new(Renderer {
            mode,
            style,
            spinner,
            state: Mutex::new(State {
                at_line_start: true,
                files: Vec::new(),
                added: 0,
                removed: 0,
                began: Instant::now(),
                output_tails: HashMap::new(),
            }),
        })
    }

    /// The renderer as the sink's user interface.
    pub fn handler(self: &Arc<Self>) -> EventHandler {
        let me = Arc::clone(self);
        Arc::new(move |event: &Event| me.handle(event))
    }

    /// The style in use.
    pub fn style(&self) -> &Style {
        &self.style
    }

    /// Stops the spinner and ends a line left open, before something else writes (a prompt).
    pub fn pause(&self) {
        if let Some(spinner) = &self.spinner {
            spinner.stop();
        }
        let mut state = self.lock();
        if !state.at_line_start {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
            state.at_line_start = true;
        }
    }

    /// Starts a new run's clock and counters (chat runs several).
    pub fn reset(&self) {
        let mut state = self.lock();
        state.files.clear();
        state.added = 0;
        state.removed = 0;
        state.began = Instant::now();
        state.output_tails.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one event.
    pub fn handle(&self, event: &Event) {
        if self.mode == OutputMode::Json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", escape_c1(&line));
                let _ = out.flush();
            }
            return;
        }
        let mut state = self.lock();
        let spin = |label: &str| {
            if let Some(spinner) = &self.spinner {
                spinner.show(label);
            }
        };
        let stop = || {
            if let Some(spinner) = &self.spinner {
                spinner.stop();
            }
        };
        let s = &self.style;
        match event {
            Event::TurnStarted { .. } => spin("Working…"),
            Event::TextDelta { text } => {
                stop();
                print(&mut state, &sanitize(text));
            }
            Event::ThinkingDelta { .. } => spin("Thinking…"),
            Event::ThinkingDone { duration_ms } => {
                stop();
                let secs = ((*duration_ms as f64) / 1000.0).round().max(1.0) as u64;
                line(&mut state, &s.dim(&format!("Thought for {secs}s")));
            }
            Event::ToolCallSeen { .. } | Event::FilesChanged { .. } => {}
            Event::ToolCallStarted { summary, .. } => spin(summary),
            Event::ApprovalRequested {
                tool: _,
                description,
                diff,
                ..
            } => {
                stop();
                line(
                    &mut state,
                    &format!("{} {}", s.yellow("?"), s.bold(&sanitize(description))),
                );
                if let Some(diff) = diff {
                    write_diff(&mut state, s, diff);
                }
            }
            Event::ApprovalResolved { decision, .. } => {
                if let ApprovalDecision::AllowSession = decision {
                    line(&mut state, &s.dim("  allowed for the rest of this session"));
                }
            }
            Event::ToolOutputDelta { call_id, text, .. } => {
                let tail = state.output_tails.entry(call_id.clone()).or_default();
                tail.push_str(text);
                if tail.len() > OUTPUT_TAIL_BYTES {
                    let mut cut = tail.len() - OUTPUT_TAIL_BYTES;
                    while !tail.is_char_boundary(cut) {
                        cut += 1;
                    }
                    tail.drain(..cut);
                }
                if let Some(last) = text.lines().rev().map(str::trim).find(|l| !l.is_empty())
                    && let Some(spinner) = &self.spinner
                {
                    spinner.detail(last);
                }
            }
            Event::ToolCallFinished {
                call_id,
                status,
                summary,
                changes,
                command,
                ..
            } => {
                stop();
                let tail = state.output_tails.remove(call_id);
                let command_failed = command.as_ref().is_some_and(failed);
                let mark = match status {
                    ToolStatus::Ok if command_failed => s.red("✗"),
                    ToolStatus::Ok => s.green("✓"),
                    ToolStatus::Error => s.red("✗"),
                    ToolStatus::Denied | ToolStatus::Refused => s.yellow("⊘"),
                    ToolStatus::Cancelled => s.yellow("■"),
                };
                line(&mut state, &format!("{mark} {}", sanitize(summary)));
                if command_failed && let Some(tail) = tail {
                    for shown in last_lines(&tail, FAILED_OUTPUT_LINES) {
                        line(&mut state, &s.dim(&format!("    {shown}")));
                    }
                }
                // What the call changed, whatever its status (a call that failed half-way
                // may have written some files).
                for change in changes {
                    state.added += change.added;
                    state.removed += change.removed;
                    if !state.files.contains(&change.path) {
                        state.files.push(change.path.clone());
                    }
                    if !change.diff.is_empty() {
                        write_diff(&mut state, s, &change.diff);
                    }
                }
            }
            Event::WorkspaceChanged { message, .. } => {
                stop();
                line(
                    &mut state,
                    &format!(
                        "{} {}",
                        s.yellow("!"),
                        s.yellow(&format!("workspace safety: {}", sanitize(message)))
                    ),
                );
            }
            Event::Waiting { seconds } => {
                // The spinner redraws its line: text left open would be wiped.
                if self.spinner.is_some() && !state.at_line_start {
                    print(&mut state, "\n");
                }
                spin(&format!("waiting for the model ({seconds}s)"));
            }
            Event::AnswerRestarted { message, .. } => {
                stop();
                if !state.at_line_start {
                    print(&mut state, "\n");
                }
                line(
                    &mut state,
                    &s.yellow(&format!("{}; the answer starts over", sanitize(message))),
                );
            }
            Event::Notice { message } => {
                stop();
                line(&mut state, &s.dim(&format!("note: {}", sanitize(message))));
            }
            Event::TurnFinished { .. } => {
                stop();
                if !state.at_line_start {
                    print(&mut state, "\n");
                }
            }
            Event::RunFinished {
                status,
                turns,
                message,
            } => {
                stop();
                let message = message.as_deref().map(sanitize);
                let took = state.began.elapsed().as_secs_f64();
                let files = match state.files.len() {
                    0 => String::new(),
                    n => format!(
                        " · {n} file{} changed (+{} -{})",
                        if n == 1 { "" } else { "s" },
                        state.added,
                        state.removed
                    ),
                };
                let turns = format!("{turns} turn{}", if *turns == 1 { "" } else { "s" });
                let text = match status {
                    RunStatus::Finished => s.green(&format!("Done · {turns} · {took:.1} s{files}")),
                    RunStatus::MaxTurns => s.yellow(&format!(
                        "Stopped: {} · {turns}{files}",
                        message.as_deref().unwrap_or("the turn limit was hit")
                    )),
                    RunStatus::Failed => s.red(&format!(
                        "Failed: {} · {turns}{files}",
                        message.as_deref().unwrap_or("error")
                    )),
                    RunStatus::Stopped => {
                        s.yellow(&format!("Stopped by the user · {turns}{files}"))
                    }
                };
                line(&mut state, &text);
            }
            Event::Error { message } => {
                stop();
                if !state.at_line_start {
                    print(&mut state, "\n");
                }
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{}", s.red(&format!("error: {}", sanitize(message))));
            }
        }
    }
}

impl Drop for Renderer {
    fn drop(&mut self) {
        if let Some(spinner) = &self.spinner {
            spinner.stop();
        }
    }
}

fn print(state: &mut State, text: &str) {
    if text.is_empty() {
        return;
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    state.at_line_start = text.ends_with('\n');
}

/// Writes a whole line, starting a new one first if text was left open.
fn line(state: &mut State, text: &str) {
    let mut out = std::io::stdout().lock();
    if !state.at_line_start {
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    state.at_line_start = true;
}

/// A JSON line with DEL and the C1 controls written as `\u` escapes. JSON escapes the C0
/// controls but allows these raw, and a terminal showing `--json` output would act on them;
/// they can only occur inside strings (the rest of the line is ASCII), so the line reads back
/// to the exact same text.
fn escape_c1(line: &str) -> std::borrow::Cow<'_, str> {
    let is_c1 = |c: char| ('\u{7f}'..='\u{9f}').contains(&c);
    if !line.chars().any(is_c1) {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if is_c1(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Whether a command that ended this way failed.
fn failed(command: &CommandState) -> bool {
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
fn last_lines(output: &str, count: usize) -> Vec<String> {
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

fn write_diff(state: &mut State, style: &Style, diff: &str) {
    for shown in diff_lines(style, diff) {
        line(state, &shown);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_escape_c1_and_read_back_exactly() {
        let event = Event::TextDelta {
            text: "a\u{9b}31m\u{9d}0;t\u{9c}\x7f\x1b]0;x\x07 ✓".into(),
        };
        let line = serde_json::to_string(&event).unwrap();
        let escaped = escape_c1(&line);
        assert!(!escaped.chars().any(char::is_control), "{escaped}");
        let back: Event = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, event);
    }

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
}
