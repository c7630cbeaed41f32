//! Terminal rendering of a run's events: streamed text, a spinner then "Thought for Ns" for
//! thinking, one line per tool call, coloured diffs for edits, and a closing summary. Plain text
//! when piped; `--json` writes each event as one JSON line, exactly as stored.

mod spinner;
mod style;

use std::collections::HashMap;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use lathe_agent::approval::{EditPreview, preview_edit};
use lathe_agent::events::{ApprovalDecision, Event, RunStatus, ToolStatus};
use lathe_agent::sink::EventHandler;
use lathe_tools::Session;

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
    /// Edit previews worked out when a call started, shown when it succeeds.
    previews: HashMap<String, EditPreview>,
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
    session: Option<Arc<Session>>,
    state: Mutex<State>,
}

impl Renderer {
    /// A renderer in `mode`. With a tool session, edits are shown as diffs.
    pub fn new(mode: OutputMode, session: Option<Arc<Session>>) -> Arc<Self> {
        let style = Style::for_stdout();
        let spinner =
            (mode == OutputMode::Human && style.is_terminal() && Style::stderr_is_terminal())
                .then(Spinner::start);
        Arc::new(Renderer {
            mode,
            style,
            spinner,
            session,
            state: Mutex::new(State {
                at_line_start: true,
                previews: HashMap::new(),
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
        state.previews.clear();
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
            Event::ToolCallStarted {
                call_id,
                name,
                arguments,
                summary,
            } => {
                if let Some(session) = &self.session
                    && let Some(preview) = preview_edit(name, arguments, session.workspace())
                {
                    state.previews.insert(call_id.clone(), preview);
                }
                spin(summary);
            }
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
                call_id,
                status,
                summary,
                stats,
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
                let preview = state.previews.remove(call_id);
                if *status == ToolStatus::Ok {
                    if let Some(stats) = stats {
                        state.added += stats.added;
                        state.removed += stats.removed;
                    }
                    if let Some(preview) = preview {
                        if !state.files.contains(&preview.path) {
                            state.files.push(preview.path.clone());
                        }
                        write_diff(&mut state, s, &preview.diff);
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
    let lines: Vec<&str> = diff.lines().collect();
    for text in lines.iter().take(MAX_DIFF_LINES) {
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
        line(state, &format!("    {shown}"));
    }
    if lines.len() > MAX_DIFF_LINES {
        line(
            state,
            &style.dim(&format!(
                "    … {} more diff lines",
                lines.len() - MAX_DIFF_LINES
            )),
        );
    }
}
