//! What a run did so far, for its closing report: files changed, calls denied, tokens and
//! times, and its last calls (for the closing line built from them, see [`from_results`]).

use std::time::Duration;

use super::CallResult;
use super::summary::{SUMMARISED_CALLS, denied_description, denied_reason, from_results};
use crate::events::{
    ChangedFile, DenialKind, DeniedCall, RunReport, TokenTotals, ToolStatus, TurnUsage,
};
use crate::provider::Usage;

/// What a run did so far, for its closing report: files changed, calls denied, tokens and
/// time, and its last calls (for the summary built from them).
#[derive(Debug, Default)]
pub(crate) struct RunTally {
    /// A call that changes files succeeded (or a call reported a changed file).
    pub wrote: bool,
    /// A call that would have changed files was denied.
    change_denied: bool,
    files: Vec<ChangedFile>,
    denied: Vec<DeniedCall>,
    usage: TokenTotals,
    /// Model turns counted so far.
    turns: u32,
    /// Each turn's counts, when the server gave them.
    turn_usage: Vec<TurnUsage>,
    /// Time waiting for the model.
    pub model_time: Duration,
    /// Time running tools.
    pub tool_time: Duration,
    /// The last calls, newest last.
    recent: Vec<CallResult>,
}

impl RunTally {
    /// Counts a model turn's tokens.
    pub fn turn(&mut self, usage: Option<Usage>) {
        self.turns += 1;
        if let Some(usage) = usage {
            self.usage.prompt_tokens += usage.prompt_tokens.unwrap_or(0);
            self.usage.completion_tokens += usage.completion_tokens.unwrap_or(0);
            self.turn_usage.push(TurnUsage {
                turn: self.turns,
                usage,
            });
        }
    }

    /// Counts a call's result ([`CallResult::changes_files`]: whether the call is one that
    /// changes files, an edit or a command that does not only read, whatever its status).
    pub fn call(&mut self, result: &CallResult) {
        let changes_files = result.changes_files;
        if result.status == ToolStatus::Ok && changes_files || !result.changes.is_empty() {
            self.wrote = true;
        }
        if result.status == ToolStatus::Denied {
            self.change_denied |= changes_files;
            self.denied.push(DeniedCall {
                call_id: result.call_id.clone(),
                tool: result.name.clone(),
                description: denied_description(result),
                reason: denied_reason(result),
                kind: if result.changes_memory {
                    DenialKind::Memory
                } else {
                    DenialKind::Approval
                },
            });
        }
        // What a call changed counts whatever its status: one that failed half-way may have
        // written some files.
        for change in &result.changes {
            match self.files.iter_mut().find(|f| f.path == change.path) {
                Some(file) => {
                    file.added += change.added;
                    file.removed += change.removed;
                    file.deleted = change.deleted;
                }
                None => self.files.push(ChangedFile {
                    path: change.path.clone(),
                    added: change.added,
                    removed: change.removed,
                    created: change.created,
                    deleted: change.deleted,
                    sub_agents: Vec::new(),
                }),
            }
        }
        self.recent.push(result.clone());
        if self.recent.len() > SUMMARISED_CALLS {
            self.recent.remove(0);
        }
    }

    /// Counts the files a sub-agent changed (each labelled with it), merged by path with the
    /// run's own.
    pub fn sub_agent_files(&mut self, files: Vec<ChangedFile>) {
        for change in files {
            self.wrote = true;
            match self.files.iter_mut().find(|f| f.path == change.path) {
                Some(file) => {
                    file.added += change.added;
                    file.removed += change.removed;
                    file.deleted = change.deleted;
                    for by in change.sub_agents {
                        if !file.sub_agents.contains(&by) {
                            file.sub_agents.push(by);
                        }
                    }
                }
                None => self.files.push(change),
            }
        }
    }

    /// Whether any call was denied.
    pub fn any_denied(&self) -> bool {
        !self.denied.is_empty()
    }

    /// Whether any call was made.
    pub fn made_calls(&self) -> bool {
        !self.recent.is_empty()
    }

    /// The closing line built from the last calls' results.
    pub fn closing_line(&self) -> String {
        let results: Vec<&CallResult> = self.recent.iter().collect();
        from_results(&results)
    }

    /// The report of the run.
    pub fn report(self, start: RunReport) -> RunReport {
        RunReport {
            changes_denied: self.change_denied && !self.wrote,
            files_changed: self.files,
            denied: self.denied,
            usage: self.usage,
            turn_usage: self.turn_usage,
            model_ms: millis(self.model_time),
            tool_ms: millis(self.tool_time),
            ..start
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::summary::tests::{judged, result};
    use lathe_runtime::{FileChange, ToolOutput};

    #[test]
    fn the_tally_sums_files_and_tokens_and_sees_denied_changes() {
        let mut tally = RunTally::default();
        tally.turn(Some(Usage {
            prompt_tokens: Some(10),
            completion_tokens: Some(2),
            ..Usage::default()
        }));
        tally.turn(Some(Usage {
            prompt_tokens: Some(5),
            completion_tokens: None,
            ..Usage::default()
        }));
        tally.turn(None);
        let denied = result(
            "write_file",
            ToolStatus::Denied,
            "write_file a.rs -> denied",
            ToolOutput::error("no"),
        );
        tally.call(&judged(denied.clone(), None, true));
        // A denied read is not a denied change.
        let mut reads = RunTally::default();
        reads.call(&denied);
        assert!(!reads.report(RunReport::default()).changes_denied);
        let report = std::mem::take(&mut tally).report(RunReport::default());
        assert!(report.changes_denied);
        assert_eq!(report.usage.prompt_tokens, 15);
        assert_eq!(report.usage.completion_tokens, 2);
        // Each turn the server counted, numbered as the run numbers its turns.
        let turns: Vec<(u32, Option<u64>)> = report
            .turn_usage
            .iter()
            .map(|t| (t.turn, t.usage.prompt_tokens))
            .collect();
        assert_eq!(turns, [(1, Some(10)), (2, Some(5))]);
        // A change that ran means the denials did not stop the task.
        let edit = result(
            "edit_file",
            ToolStatus::Ok,
            "edit_file a.rs (+1 -0)",
            ToolOutput::ok("Edited").with_change(FileChange::counted("a.rs", 1, 0)),
        );
        let (denied, edit) = (judged(denied, None, true), judged(edit, None, true));
        tally.call(&denied);
        tally.call(&edit);
        tally.call(&edit);
        let report = tally.report(RunReport::default());
        assert!(!report.changes_denied);
        assert_eq!(report.files_changed.len(), 1);
        assert_eq!(
            (
                report.files_changed[0].added,
                report.files_changed[0].removed
            ),
            (2, 0)
        );
    }
}
