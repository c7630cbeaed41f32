//! Terminal rendering of a run's events: streamed text (gated and batched, see [`batch`]), a
//! spinner then "Thought for Ns" for thinking, `Writing <file>…` while a native call is
//! generated, one line per tool call, coloured diffs for edits, and a closing summary. Plain
//! text when piped; `--json` writes each event as one JSON line, exactly as stored.
//!
//! Every text that came from the model or a tool passes through [`sanitize()`] before it is
//! written, so only the renderer's own styling reaches the terminal.

pub mod batch;
mod spinner;
mod style;

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, PoisonError, Weak};
use std::time::Instant;

use batch::TextBatch;
use lathe_runtime::ToolKind;

use lathe_agent::events::{
    ApprovalDecision, Event, RunReport, RunStatus, SubAgentState, ToolStatus,
};
use lathe_agent::sink::EventHandler;
use lathe_runtime::CommandState;

pub use lathe_config::sanitize::sanitize;
pub use spinner::Spinner;
pub use style::Style;

/// Longest diff shown after an edit; the rest is counted.
const MAX_DIFF_LINES: usize = 60;

/// Last lines of a failed command's output shown under its line.
const FAILED_OUTPUT_LINES: usize = 5;

/// Output kept per running call for those lines; more than five lines need, unless a line is
/// very long, and bounded so that a chatty command costs little.
const OUTPUT_TAIL_BYTES: usize = 4096;

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
        if let Event::TextDelta { text } = event {
            match state.batch.push(&sanitize(text), Instant::now()) {
                Some(text) => self.write_text(&mut state, &text),
                None => {
                    if let Some(at) = state.batch.next_due() {
                        self.flusher.at(at);
                    }
                }
            }
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
        self.write_text(&mut state, &held);
        match event {
            Event::TurnStarted { .. } => spin("Working…"),
            Event::TextDelta { .. } => {}
            Event::ToolCallStreaming { name, path, .. } => {
                // The spinner redraws its line: a line of text left open would be wiped.
                if self.spinner.is_some() && !state.at_line_start {
                    print(&mut state, "\n");
                }
                spin(&streaming_label(name, path.as_deref()));
            }
            Event::ThinkingDelta { .. } => spin("Thinking…"),
            Event::ThinkingDone { duration_ms } => {
                stop();
                let secs = ((*duration_ms as f64) / 1000.0).round().max(1.0) as u64;
                line(&mut state, &s.dim(&format!("Thought for {secs}s")));
            }
            // Chat's /rewind says what it did itself.
            Event::ToolCallSeen { .. }
            | Event::FilesChanged { .. }
            | Event::ConversationRewound { .. } => {}
            Event::CheckpointCreated(checkpoint) => {
                if self.undo_hints() == UndoHints::Chat {
                    stop();
                    line(&mut state, &s.dim(&checkpoint_line(checkpoint)));
                }
            }
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
            Event::PlanUpdated { steps } => {
                stop();
                for row in plan_lines(steps) {
                    line(&mut state, &s.dim(&sanitize(&row)));
                }
            }
            Event::SubAgent(update) => {
                let label = format!("sub-agent {}: {}", update.id, sanitize(&update.line));
                match update.state {
                    // One line that updates, on a terminal; its start alone, piped.
                    SubAgentState::Queued | SubAgentState::Running => {
                        if self.spinner.is_some() {
                            if !state.at_line_start {
                                print(&mut state, "\n");
                            }
                            spin(&label);
                        } else if update.line == "started" || update.state == SubAgentState::Queued
                        {
                            line(
                                &mut state,
                                &s.dim(&format!("{label} ({})", sanitize(&update.task))),
                            );
                        }
                    }
                    SubAgentState::Finished | SubAgentState::Failed | SubAgentState::Stopped => {
                        stop();
                        let mark = match update.state {
                            SubAgentState::Finished => s.green("✓"),
                            SubAgentState::Failed => s.red("✗"),
                            _ => s.yellow("■"),
                        };
                        line(
                            &mut state,
                            &format!("{mark} {label} ({})", sanitize(&update.task)),
                        );
                    }
                }
            }
            Event::Notice { message } => {
                stop();
                line(&mut state, &s.dim(&format!("note: {}", sanitize(message))));
            }
            Event::ContextCompacted {
                manual,
                messages,
                tokens_before,
                tokens_after,
                ..
            } => {
                stop();
                let why = if *manual {
                    ""
                } else {
                    " to fit the context window"
                };
                line(
                    &mut state,
                    &s.dim(&format!(
                        "note: replaced {messages} earlier messages with a summary{why} (about {tokens_before} -> {tokens_after} tokens; the full history stays in the session)"
                    )),
                );
            }
            Event::TurnFinished { .. } => {
                stop();
                if !state.at_line_start {
                    print(&mut state, "\n");
                }
            }
            // The end line comes with the report, which has all the facts.
            Event::RunFinished { .. } | Event::RunStarted(_) => {}
            Event::RunResult(report) => {
                stop();
                // An error is printed once: the `error:` line already said it.
                let shown_error = state.shown_error.take();
                // Above the end line, which keeps its place under the answer.
                if self.undo_hints() == UndoHints::Exec
                    && !report.checkpoints.is_empty()
                    && let Some(id) = &report.session_id
                {
                    line(
                        &mut state,
                        &s.dim(&format!("undo: lathe undo --session {id}")),
                    );
                }
                line(&mut state, &end_line(s, report, shown_error.as_deref()));
                if let Some(denied) = denied_line(report) {
                    line(&mut state, &s.yellow(&denied));
                    for hint in allow_hints(report) {
                        line(&mut state, &s.dim(hint));
                    }
                }
            }
            Event::Error { message } => {
                stop();
                if !state.at_line_start {
                    print(&mut state, "\n");
                }
                let mut err = std::io::stderr().lock();
                let _ = writeln!(err, "{}", s.red(&format!("error: {}", sanitize(message))));
                state.shown_error = Some(message.clone());
            }
        }
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

/// The spinner while a native call is generated: `Writing notes.md…` for a tool that edits
/// files once its path is known (its kind is the tool's own answer), else `Calling grep…`.
fn streaming_label(name: &str, path: Option<&str>) -> String {
    static KINDS: OnceLock<HashMap<String, ToolKind>> = OnceLock::new();
    let kinds = KINDS.get_or_init(|| {
        lathe_config::setup::registry()
            .definitions()
            .map(|d| (d.name.clone(), d.kind))
            .collect()
    });
    match (kinds.get(name), path) {
        (Some(ToolKind::Edit), Some(path)) => format!("Writing {path}…"),
        _ => format!("Calling {name}…"),
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

/// The model's plan as the terminal shows it when it changes: a count, then a line per step
/// (`[x]` done, `[>]` in progress, `[ ]` pending), indented under the call that made it.
pub(crate) fn plan_lines(steps: &[lathe_runtime::checklist::ChecklistStep]) -> Vec<String> {
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
    fn a_call_being_generated_is_named_by_what_its_tool_does() {
        assert_eq!(
            streaming_label("write_file", Some("notes.md")),
            "Writing notes.md…"
        );
        assert_eq!(streaming_label("edit_file", Some("a.rs")), "Writing a.rs…");
        assert_eq!(
            streaming_label("read_file", Some("a.rs")),
            "Calling read_file…"
        );
        assert_eq!(streaming_label("write_file", None), "Calling write_file…");
        assert_eq!(
            streaming_label("mcp__x__y", Some("p")),
            "Calling mcp__x__y…"
        );
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
