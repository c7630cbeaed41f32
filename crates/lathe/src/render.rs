//! Terminal rendering of a run's events: streamed text (gated and batched, see [`batch`]), a
//! spinner then "Thought for Ns" for thinking, `Writing <file>…` while a native call is
//! generated, one line per tool call, coloured diffs for edits, and a closing summary. Plain
//! text when piped; `--json` writes each event as one JSON line, exactly as stored.
//!
//! Every text that came from the model or a tool passes through [`sanitize()`] before it is
//! written, so only the renderer's own styling reaches the terminal.

pub mod batch;
mod events;
mod lines;
mod spinner;
mod style;

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::Instant;

use batch::TextBatch;

use lathe_agent::events::Event;
use lathe_agent::sink::EventHandler;

pub use lathe_config::sanitize::sanitize;
pub use lines::{diff_lines, meter_line, plan_lines};
pub use spinner::Spinner;
pub use style::Style;

/// Output kept per running call for the lines shown if it fails
/// ([`lines::FAILED_OUTPUT_LINES`]): more than five lines need, unless a line is very long, and
/// bounded so that a chatty command costs little.
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
    /// The end of each running call's output, for the lines shown if it fails.
    output_tails: HashMap<String, String>,
    /// The last error shown: the closing line of a run that failed with it does not repeat it.
    shown_error: Option<String>,
    /// Streamed text not written yet.
    batch: TextBatch,
}

/// Wakes the renderer when held text is due ([`batch::BATCH`] after the last write).
#[derive(Default)]
struct Flusher {
    due: Mutex<Option<Instant>>,
    wake: Condvar,
    quit: AtomicBool,
}

impl Flusher {
    fn at(&self, when: Instant) {
        let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        if due.is_none_or(|d| when < d) {
            *due = Some(when);
            self.wake.notify_one();
        }
    }

    /// Waits for the next due time; false when the renderer is gone.
    fn wait(&self) -> bool {
        let mut due = self.due.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if self.quit.load(Ordering::SeqCst) {
                return false;
            }
            match *due {
                None => due = self.wake.wait(due).unwrap_or_else(PoisonError::into_inner),
                Some(at) => {
                    let now = Instant::now();
                    if now >= at {
                        *due = None;
                        return true;
                    }
                    due = self
                        .wake
                        .wait_timeout(due, at - now)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
    }

    fn stop(&self) {
        self.quit.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }
}

/// Writes events to the terminal.
pub struct Renderer {
    mode: OutputMode,
    style: Style,
    spinner: Option<Spinner>,
    state: Mutex<State>,
    flusher: Arc<Flusher>,
    hints: Mutex<UndoHints>,
}

/// What the terminal suggests after a change was recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UndoHints {
    /// Nothing (`lathe exec --json`, tests).
    #[default]
    None,
    /// `lathe exec`: the end line names `lathe undo`.
    Exec,
    /// `lathe chat`: a line after each turn that changed files, with `/diff` and `/undo`.
    Chat,
}

impl Renderer {
    /// A renderer in `mode`. Everything it shows comes from the events (the diff of an edit is
    /// the one its finished event carries, the same the approval prompt showed).
    pub fn new(mode: OutputMode) -> Arc<Self> {
        let style = Style::for_stdout();
        let spinner =
            (mode == OutputMode::Human && style.is_terminal() && Style::stderr_is_terminal())
                .then(Spinner::start);
        let renderer = Arc::new(Renderer {
            mode,
            style,
            spinner,
            state: Mutex::new(State {
                at_line_start: true,
                output_tails: HashMap::new(),
                shown_error: None,
                batch: TextBatch::default(),
            }),
            flusher: Arc::new(Flusher::default()),
            hints: Mutex::new(UndoHints::None),
        });
        if mode == OutputMode::Human {
            let flusher = Arc::clone(&renderer.flusher);
            let renderer = Arc::downgrade(&renderer);
            let _ = std::thread::Builder::new()
                .name("text-batch".into())
                .spawn(move || flush_loop(&flusher, &renderer));
        }
        renderer
    }

    /// What to suggest once a turn's change is recorded (see [`UndoHints`]).
    pub fn set_undo_hints(&self, hints: UndoHints) {
        *self.hints.lock().unwrap_or_else(PoisonError::into_inner) = hints;
    }

    fn undo_hints(&self) -> UndoHints {
        *self.hints.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes held text that has become due.
    fn flush_due(&self) {
        let mut state = self.lock();
        if let Some(text) = state.batch.due(Instant::now()) {
            self.write_text(&mut state, &text);
        } else if let Some(at) = state.batch.next_due() {
            self.flusher.at(at);
        }
    }

    /// Writes streamed text, which ends the spinner's wait.
    fn write_text(&self, state: &mut State, text: &str) {
        if text.is_empty() {
            return;
        }
        if let Some(spinner) = &self.spinner {
            spinner.stop();
        }
        print(state, text);
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
        let held = state.batch.flush();
        self.write_text(&mut state, &held);
        if !state.at_line_start {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
            state.at_line_start = true;
        }
    }

    /// Forgets what the last run left (chat runs several).
    pub fn reset(&self) {
        let mut state = self.lock();
        state.output_tails.clear();
        state.shown_error = None;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes one event: as a JSON line, or through the method for its kind (see [`events`]).
    pub fn handle(&self, event: &Event) {
        if self.mode == OutputMode::Json {
            write_json(event);
            return;
        }
        let mut state = self.lock();
        let state = &mut *state;
        if let Event::TextDelta { text } = event {
            self.on_text(state, text);
            return;
        }
        // Held text goes out before anything else is written, in order; a turn's end (or a
        // new turn) also closes the first-chunk gate again.
        let held = match event {
            Event::TurnStarted { .. } | Event::TurnFinished { .. } | Event::RunFinished { .. } => {
                state.batch.end_turn()
            }
            _ => state.batch.flush(),
        };
        self.write_text(state, &held);
        match event {
            Event::TurnStarted { .. } => self.spin("Working…"),
            Event::TextDelta { .. } => {}
            Event::ToolCallStreaming { name, path, .. } => {
                self.on_call_streaming(state, name, path.as_deref());
            }
            Event::ThinkingDelta { .. } => self.spin("Thinking…"),
            Event::ThinkingDone { duration_ms } => self.on_thought(state, *duration_ms),
            // Chat's /rewind says what it did itself.
            Event::ToolCallSeen { .. }
            | Event::FilesChanged { .. }
            | Event::ConversationRewound { .. } => {}
            Event::CheckpointCreated(checkpoint) => self.on_checkpoint(state, checkpoint),
            Event::ToolCallStarted { summary, .. } => self.spin(summary),
            Event::ApprovalRequested {
                description, diff, ..
            } => self.on_approval_requested(state, description, diff.as_deref()),
            Event::ApprovalResolved { decision, .. } => self.on_approval_resolved(state, decision),
            Event::ToolOutputDelta { call_id, text, .. } => self.on_output(state, call_id, text),
            Event::ToolCallFinished {
                call_id,
                status,
                summary,
                changes,
                command,
                ..
            } => self.on_call_finished(state, call_id, *status, summary, changes, command.as_ref()),
            Event::WorkspaceChanged { message, .. } => self.on_workspace_changed(state, message),
            Event::Waiting { seconds } => self.on_waiting(state, *seconds),
            Event::AnswerRestarted { message, .. } => self.on_answer_restarted(state, message),
            Event::PlanUpdated { steps } => self.on_plan(state, steps),
            Event::SubAgent(update) => self.on_sub_agent(state, update),
            Event::Notice { message } => self.on_notice(state, message),
            Event::ContextCompacted {
                manual,
                messages,
                tokens_before,
                tokens_after,
                ..
            } => self.on_compacted(state, *manual, *messages, *tokens_before, *tokens_after),
            Event::TurnFinished { .. } => self.on_turn_finished(state),
            // The end line comes with the report, which has all the facts.
            Event::RunFinished { .. } | Event::RunStarted(_) => {}
            Event::RunResult(report) => self.on_result(state, report),
            Event::Error { message } => self.on_error(state, message),
        }
    }
}

/// `--json`: the event as one line, exactly as stored (C1 controls escaped).
fn write_json(event: &Event) {
    if let Ok(line) = serde_json::to_string(event) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", escape_c1(&line));
        let _ = out.flush();
    }
}

impl Drop for Renderer {
    fn drop(&mut self) {
        if let Some(spinner) = &self.spinner {
            spinner.stop();
        }
        self.flusher.stop();
        let held = self.lock().batch.flush();
        if !held.is_empty() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(held.as_bytes());
            let _ = out.flush();
        }
    }
}

fn flush_loop(flusher: &Flusher, renderer: &Weak<Renderer>) {
    while flusher.wait() {
        match renderer.upgrade() {
            Some(renderer) => renderer.flush_due(),
            None => return,
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

fn write_diff(state: &mut State, style: &Style, diff: &str) {
    for shown in diff_lines(style, diff) {
        line(state, &shown);
    }
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
}
