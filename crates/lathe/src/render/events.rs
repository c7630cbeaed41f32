//! What the renderer does with each event: one method per kind of event, called by
//! [`Renderer::handle`](super::Renderer::handle) with the state locked and held text written.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::time::Instant;

use lathe_agent::events::{
    ApprovalDecision, Checkpoint, FileChange, RunReport, SubAgentState, SubAgentUpdate, ToolStatus,
};
use lathe_runtime::checklist::ChecklistStep;
use lathe_runtime::{CommandState, ToolKind};

use super::lines::{
    FAILED_OUTPUT_LINES, allow_hints, checkpoint_line, denied_line, end_line, failed, last_lines,
    plan_lines,
};
use super::{OUTPUT_TAIL_BYTES, Renderer, State, UndoHints, line, print, sanitize, write_diff};

impl Renderer {
    /// Shows `label` on the spinner, when there is one.
    pub(super) fn spin(&self, label: &str) {
        if let Some(spinner) = &self.spinner {
            spinner.show(label);
        }
    }

    /// Stops the spinner, when there is one.
    pub(super) fn stop(&self) {
        if let Some(spinner) = &self.spinner {
            spinner.stop();
        }
    }

    /// Ends a line of text left open before the spinner redraws its line, which would wipe it.
    fn end_open_line(&self, state: &mut State) {
        if self.spinner.is_some() && !state.at_line_start {
            print(state, "\n");
        }
    }

    /// Streamed text: held by the batch, written when it is due.
    pub(super) fn on_text(&self, state: &mut State, text: &str) {
        match state.batch.push(&sanitize(text), Instant::now()) {
            Some(text) => self.write_text(state, &text),
            None => {
                if let Some(at) = state.batch.next_due() {
                    self.flusher.at(at);
                }
            }
        }
    }

    /// A native call being generated: `Writing notes.md…` or `Calling grep…`.
    pub(super) fn on_call_streaming(&self, state: &mut State, name: &str, path: Option<&str>) {
        self.end_open_line(state);
        self.spin(&streaming_label(name, path));
    }

    /// The model stopped thinking: `Thought for Ns`.
    pub(super) fn on_thought(&self, state: &mut State, duration_ms: u64) {
        self.stop();
        let secs = ((duration_ms as f64) / 1000.0).round().max(1.0) as u64;
        line(state, &self.style.dim(&format!("Thought for {secs}s")));
    }

    /// A turn's change was recorded: in chat, the line with `/diff` and `/undo`.
    pub(super) fn on_checkpoint(&self, state: &mut State, checkpoint: &Checkpoint) {
        if self.undo_hints() == UndoHints::Chat {
            self.stop();
            line(state, &self.style.dim(&checkpoint_line(checkpoint)));
        }
    }

    /// An approval question: what the call does, and its diff.
    pub(super) fn on_approval_requested(
        &self,
        state: &mut State,
        description: &str,
        diff: Option<&str>,
    ) {
        let s = &self.style;
        self.stop();
        line(
            state,
            &format!("{} {}", s.yellow("?"), s.bold(&sanitize(description))),
        );
        if let Some(diff) = diff {
            write_diff(state, s, diff);
        }
    }

    /// An approval's answer: said only when it holds for the rest of the session.
    pub(super) fn on_approval_resolved(&self, state: &mut State, decision: &ApprovalDecision) {
        if let ApprovalDecision::AllowSession = decision {
            line(
                state,
                &self.style.dim("  allowed for the rest of this session"),
            );
        }
    }

    /// A running call's output: its end kept for the lines shown if it fails, its last line
    /// on the spinner.
    pub(super) fn on_output(&self, state: &mut State, call_id: &str, text: &str) {
        let tail = state.output_tails.entry(call_id.to_owned()).or_default();
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

    /// A call's line with its mark, a failed command's last lines, and the diffs of what it
    /// changed.
    pub(super) fn on_call_finished(
        &self,
        state: &mut State,
        call_id: &str,
        status: ToolStatus,
        summary: &str,
        changes: &[FileChange],
        command: Option<&CommandState>,
    ) {
        let s = &self.style;
        self.stop();
        let tail = state.output_tails.remove(call_id);
        let command_failed = command.is_some_and(failed);
        let mark = match status {
            ToolStatus::Ok if command_failed => s.red("✗"),
            ToolStatus::Ok => s.green("✓"),
            ToolStatus::Error => s.red("✗"),
            ToolStatus::Denied | ToolStatus::Refused => s.yellow("⊘"),
            ToolStatus::Cancelled => s.yellow("■"),
        };
        line(state, &format!("{mark} {}", sanitize(summary)));
        if command_failed && let Some(tail) = tail {
            for shown in last_lines(&tail, FAILED_OUTPUT_LINES) {
                line(state, &s.dim(&format!("    {shown}")));
            }
        }
        // What the call changed, whatever its status (a call that failed half-way may have
        // written some files).
        for change in changes {
            if !change.diff.is_empty() {
                write_diff(state, s, &change.diff);
            }
        }
    }

    /// Someone else changed the workspace during the run.
    pub(super) fn on_workspace_changed(&self, state: &mut State, message: &str) {
        let s = &self.style;
        self.stop();
        line(
            state,
            &format!(
                "{} {}",
                s.yellow("!"),
                s.yellow(&format!("workspace safety: {}", sanitize(message)))
            ),
        );
    }

    /// Nothing from the model for a while.
    pub(super) fn on_waiting(&self, state: &mut State, seconds: u64) {
        self.end_open_line(state);
        self.spin(&format!("waiting for the model ({seconds}s)"));
    }

    /// The answer was cut and starts over.
    pub(super) fn on_answer_restarted(&self, state: &mut State, message: &str) {
        self.stop();
        if !state.at_line_start {
            print(state, "\n");
        }
        line(
            state,
            &self
                .style
                .yellow(&format!("{}; the answer starts over", sanitize(message))),
        );
    }

    /// The model's plan changed.
    pub(super) fn on_plan(&self, state: &mut State, steps: &[ChecklistStep]) {
        self.stop();
        for row in plan_lines(steps) {
            line(state, &self.style.dim(&sanitize(&row)));
        }
    }

    /// A sub-agent's progress: one line that updates on a terminal (its start alone, piped),
    /// and a line with its mark when it ends.
    pub(super) fn on_sub_agent(&self, state: &mut State, update: &SubAgentUpdate) {
        let s = &self.style;
        let label = format!("sub-agent {}: {}", update.id, sanitize(&update.line));
        match update.state {
            SubAgentState::Queued | SubAgentState::Running => {
                if self.spinner.is_some() {
                    if !state.at_line_start {
                        print(state, "\n");
                    }
                    self.spin(&label);
                } else if update.line == "started" || update.state == SubAgentState::Queued {
                    line(
                        state,
                        &s.dim(&format!("{label} ({})", sanitize(&update.task))),
                    );
                }
            }
            SubAgentState::Finished | SubAgentState::Failed | SubAgentState::Stopped => {
                self.stop();
                let mark = match update.state {
                    SubAgentState::Finished => s.green("✓"),
                    SubAgentState::Failed => s.red("✗"),
                    _ => s.yellow("■"),
                };
                line(
                    state,
                    &format!("{mark} {label} ({})", sanitize(&update.task)),
                );
            }
        }
    }

    /// Something the user should know: `note: ...`.
    pub(super) fn on_notice(&self, state: &mut State, message: &str) {
        self.stop();
        line(
            state,
            &self.style.dim(&format!("note: {}", sanitize(message))),
        );
    }

    /// Earlier messages were replaced with a summary.
    pub(super) fn on_compacted(
        &self,
        state: &mut State,
        manual: bool,
        messages: usize,
        tokens_before: u64,
        tokens_after: u64,
    ) {
        self.stop();
        let why = if manual {
            ""
        } else {
            " to fit the context window"
        };
        line(
            state,
            &self.style.dim(&format!(
                "note: replaced {messages} earlier messages with a summary{why} (about {tokens_before} -> {tokens_after} tokens; the full history stays in the session)"
            )),
        );
    }

    /// A model turn ended: its text ends its line.
    pub(super) fn on_turn_finished(&self, state: &mut State) {
        self.stop();
        if !state.at_line_start {
            print(state, "\n");
        }
    }

    /// The run's report: the undo hint of `lathe exec`, the end line, and the calls denied with
    /// what would let them run.
    pub(super) fn on_result(&self, state: &mut State, report: &RunReport) {
        let s = &self.style;
        self.stop();
        // An error is printed once: the `error:` line already said it.
        let shown_error = state.shown_error.take();
        // Above the end line, which keeps its place under the answer.
        if self.undo_hints() == UndoHints::Exec
            && !report.checkpoints.is_empty()
            && let Some(id) = &report.session_id
        {
            line(state, &s.dim(&format!("undo: lathe undo --session {id}")));
        }
        line(state, &end_line(s, report, shown_error.as_deref()));
        if let Some(denied) = denied_line(report) {
            line(state, &s.yellow(&denied));
            for hint in allow_hints(report) {
                line(state, &s.dim(hint));
            }
        }
    }

    /// An error, on stderr; remembered so that the end line does not repeat it.
    pub(super) fn on_error(&self, state: &mut State, message: &str) {
        use std::io::Write;
        self.stop();
        if !state.at_line_start {
            print(state, "\n");
        }
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "{}",
            self.style.red(&format!("error: {}", sanitize(message)))
        );
        state.shown_error = Some(message.to_owned());
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
