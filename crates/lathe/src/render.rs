//! Terminal rendering of a run's events: streamed text, a spinner then "Thought for Ns" for
//! thinking, one line per tool call, coloured diffs for edits, and a closing summary. Plain text
//! when piped; `--json` writes each event as one JSON line, exactly as stored.

mod spinner;
mod style;

use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use lathe_agent::events::{ApprovalDecision, Event, RunStatus, ToolStatus};
use lathe_agent::sink::EventHandler;

pub use spinner::Spinner;
pub use style::Style;

/// Longest diff shown after an edit; the rest is counted.
const MAX_DIFF_LINES: usize = 60;

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
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one event.
    pub fn handle(&self, event: &Event) {
        if self.mode == OutputMode::Json {
            if let Ok(line) = serde_json::to_string(event) {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
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
                print(&mut state, text);
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
                    &format!("{} {}", s.yellow("?"), s.bold(description)),
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
            Event::ToolOutputDelta { text, .. } => {
                if let Some(last) = text.lines().rev().map(str::trim).find(|l| !l.is_empty())
                    && let Some(spinner) = &self.spinner
                {
                    spinner.detail(last);
                }
            }
            Event::ToolCallFinished {
                status,
                summary,
                changes,
                ..
            } => {
                stop();
                let mark = match status {
                    ToolStatus::Ok => s.green("✓"),
                    ToolStatus::Error => s.red("✗"),
                    ToolStatus::Denied | ToolStatus::Refused => s.yellow("⊘"),
                    ToolStatus::Cancelled => s.yellow("■"),
                };
                line(&mut state, &format!("{mark} {summary}"));
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
                        s.yellow(&format!("workspace safety: {message}"))
                    ),
                );
            }
            Event::Notice { message } => {
                stop();
                line(&mut state, &s.dim(&format!("note: {message}")));
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
                let _ = writeln!(err, "{}", s.red(&format!("error: {message}")));
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
