//! How a run closes: no sub-agent left running, a summary asked for when the model made calls
//! and never said a word, what is still pending said, and the report ([`Event::RunResult`]).

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use lathe_store::SessionStatus;

use super::run::RunState;
use super::{Executor, Offer, RunOutcome, pending};
use crate::events::{AnswerSource, Event, PendingLeft, RunReport, RunStatus};
use crate::message::Message;
use crate::provider::ToolProtocol;
use crate::runner::tally::RunTally;

/// What the model reads when it ended a task that made calls without a word: one more turn,
/// with no tools offered (on native calls), for the user's closing message.
pub const SUMMARY_REQUEST: &str = "Summarise in 2-3 sentences what you did and what the \
result is. Do not call any tools.";

/// The result of a call made in the summary turn: it is not run.
const SUMMARY_ONLY: &str = "not run: the task has ended, and this turn was only for a summary";

impl Executor {
    /// Closes a run that ended with `status` (and `message`, why) after it `began`: its
    /// answer, its events and its report.
    pub(super) async fn close_run(
        &mut self,
        mut run: RunState,
        status: RunStatus,
        message: Option<String>,
        began: Instant,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        // No child outlives the run that started it.
        self.stop_sub_agents().await;
        self.fold_sub_agent_changes(&mut run.tally);
        let answer_from = self.closing_answer(&mut run, status, cancel).await;
        let left = self.announce_end(status, run.turns, message.as_deref());
        let RunState {
            tally,
            answer,
            turns,
            checkpoints,
            ..
        } = run;
        let report = tally.report(RunReport {
            session_id: self.sink.session().map(|id| id.as_str().to_owned()),
            status,
            message: message.clone(),
            answer: answer.clone(),
            answer_from,
            turns,
            duration_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            checkpoints,
            pending: left,
            context_window: Some(self.context.window()),
            ..RunReport::default()
        });
        self.sink.emit(Event::RunResult(report.clone()));
        // Whoever reads the store or writes to the terminal after a run sees all of it.
        self.sink.flush().await;
        RunOutcome {
            status,
            turns,
            message,
            answer,
            report,
        }
    }

    /// The run's answer, and where it came from. Calls and then not a word: a short summary is
    /// asked for, and if that brings nothing either, what the last calls did is said.
    async fn closing_answer(
        &mut self,
        run: &mut RunState,
        status: RunStatus,
        cancel: &CancellationToken,
    ) -> AnswerSource {
        let mut answer_from = AnswerSource::Model;
        if status == RunStatus::Finished && run.answer.is_empty() && run.tally.made_calls() {
            run.turns += 1;
            run.answer = self.summary_turn(run.turns, cancel, &mut run.tally).await;
            answer_from = AnswerSource::Summary;
            if run.answer.is_empty() {
                run.answer = run.tally.closing_line();
                answer_from = AnswerSource::ToolResults;
                if !run.answer.is_empty() {
                    self.sink.emit(Event::TextDelta {
                        text: format!("{}\n", run.answer),
                    });
                }
            }
        }
        if run.answer.is_empty() {
            answer_from = AnswerSource::None;
        }
        answer_from
    }

    /// Says what the run leaves pending and that it ended (with `status` after `turns` turns,
    /// for `message`), in events and in the session's status; what it leaves pending, for the
    /// report.
    fn announce_end(
        &self,
        status: RunStatus,
        turns: u32,
        message: Option<&str>,
    ) -> Vec<PendingLeft> {
        let left = pending::left(&self.runner.session().pending_summaries());
        if let Some(message) = pending::left_notice(&left) {
            self.sink.emit(Event::Notice { message });
        }
        self.sink.emit(Event::RunFinished {
            status,
            turns,
            message: message.map(str::to_owned),
        });
        self.set_status(match status {
            RunStatus::Finished => SessionStatus::Completed,
            RunStatus::MaxTurns => SessionStatus::MaxTurns,
            RunStatus::Failed => SessionStatus::Failed,
            RunStatus::Stopped => SessionStatus::Interrupted,
        });
        left
    }

    /// The turn that asks a model which ended without any text for a short summary. Its text,
    /// or nothing when it failed or said nothing.
    async fn summary_turn(
        &mut self,
        turn: u32,
        cancel: &CancellationToken,
        tally: &mut RunTally,
    ) -> String {
        self.push(Message::user(SUMMARY_REQUEST));
        // Native calls: no tools are offered. A model on the text protocol keeps them, so that
        // its history goes out in the same shape (calls as text, results as user messages) as
        // in every other turn; any call it makes is not run.
        let native = match self.config.tool_protocol {
            ToolProtocol::Native => true,
            ToolProtocol::Text => false,
            ToolProtocol::Auto => self
                .provider
                .capabilities(&self.config.model)
                .await
                .is_ok_and(|c| c.tools),
        };
        let asked = Instant::now();
        let answered = self
            .model_turn(turn, cancel, Offer::Summary { tools: !native })
            .await;
        tally.model_time += asked.elapsed();
        let Ok(answered) = answered else {
            return String::new();
        };
        tally.turn(answered.usage);
        if !answered.calls.is_empty() {
            self.answer_unrun(&answered, SUMMARY_ONLY);
        }
        answered.content.trim().to_owned()
    }
}
