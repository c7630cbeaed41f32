//! The loop of a run: model turns until one ends it, and each turn's calls run as a batch on
//! the dispatcher between the turn's checkpoint hooks, their results tallied for the report
//! and recorded in the history.

use std::time::Instant;

use tokio_util::sync::CancellationToken;

use lathe_runtime::checklist;
use lathe_store::SessionStatus;

use super::end_checks::{EndChecks, Ending};
use super::guard::{Repeat, RepeatGuard};
use super::rewind::TurnStart;
use super::{Executor, Offer, RunOutcome, checkpoint};
use crate::context::ResultNote;
use crate::events::{Event, RunStatus};
use crate::message::{Image, Message};
use crate::parser::malformed_call_message;
use crate::runner::tally::RunTally;
use crate::runner::{BatchCall, CallResult, STOPPED_BEFORE_RUNNING};
use crate::stream::AssistantTurn;

/// How a run's loop ended: its status, and why when it did not simply finish.
pub(super) type End = (RunStatus, Option<String>);

/// What a run has gathered so far.
pub(super) struct RunState {
    /// The counts, times and files of the report.
    pub(super) tally: RunTally,
    /// The checks made before the run may end.
    pub(super) checks: EndChecks,
    /// The repeated calls seen.
    pub(super) repeats: RepeatGuard,
    /// The model's last text of the run.
    pub(super) answer: String,
    /// Model turns used.
    pub(super) turns: u32,
    /// The ids of the checkpoints this run recorded.
    pub(super) checkpoints: Vec<String>,
}

impl RunState {
    /// Nothing gathered yet, for a run of `task`.
    fn new(task: &str) -> Self {
        RunState {
            tally: RunTally::default(),
            checks: EndChecks::new(task),
            repeats: RepeatGuard::default(),
            answer: String::new(),
            turns: 0,
            checkpoints: Vec::new(),
        }
    }
}

impl Executor {
    /// Runs `task` until the model is done, a limit is hit, an error ends it, or `cancel` fires.
    /// When it returns, every event of the run has been stored and shown; the last is
    /// [`Event::RunResult`], the same report the outcome carries.
    pub async fn run(&mut self, task: &str, cancel: &CancellationToken) -> RunOutcome {
        self.run_with_images(task, Vec::new(), cancel).await
    }

    /// [`Executor::run`] with images in the task's message (`lathe chat`'s `@shot.png`), for a
    /// model that can see.
    pub async fn run_with_images(
        &mut self,
        task: &str,
        images: Vec<Image>,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        let began = Instant::now();
        self.set_status(SessionStatus::Running);
        let first = self.start_task(task, images);
        let mut run = RunState::new(task);
        let (status, message) = self.run_turns(&mut run, first, cancel).await;
        self.close_run(run, status, message, began, cancel).await
    }

    /// Adds the task's message to the history, and says where the task's first turn begins:
    /// before that message, or before the message it was merged into.
    fn start_task(&mut self, task: &str, images: Vec<Image>) -> TurnStart {
        let before = self.turn_start();
        let last = self.history.last().cloned();
        self.push(Message::user_with_images(task, images));
        let merged_into = last.filter(|_| self.history.len() == before.len);
        TurnStart {
            merged_into,
            ..before
        }
    }

    /// Model turns, each with its calls, until one ends the run; `first` is where the first
    /// begins.
    async fn run_turns(
        &mut self,
        run: &mut RunState,
        first: TurnStart,
        cancel: &CancellationToken,
    ) -> End {
        let mut first = Some(first);
        loop {
            if run.turns >= self.config.max_turns {
                let limit = self.config.max_turns;
                return (
                    RunStatus::MaxTurns,
                    Some(format!(
                        "stopped after {limit} turns: the --max-turns limit ({limit}) was hit"
                    )),
                );
            }
            if cancel.is_cancelled() {
                return (RunStatus::Stopped, None);
            }
            self.deliver_sub_agent_results();
            run.turns += 1;
            let start = first.take().unwrap_or_else(|| self.turn_start());
            let asked = Instant::now();
            let compactions = self.compactions.len();
            let turn = self.model_turn(run.turns, cancel, Offer::Work).await;
            let session_turn = self.session_turns;
            self.mark_turn(session_turn, start, compactions);
            run.tally.model_time += asked.elapsed();
            let turn = match turn {
                Ok(turn) => turn,
                Err(message) => return (RunStatus::Failed, Some(message)),
            };
            run.tally.turn(turn.usage);
            let text = turn.content.trim();
            if !text.is_empty() {
                run.answer = text.to_owned();
            }
            if turn.cancelled {
                self.answer_unrun(&turn, STOPPED_BEFORE_RUNNING);
                return (RunStatus::Stopped, None);
            }
            let malformed = malformed_notes(&turn);
            if turn.calls.is_empty() {
                match self
                    .check_end(&turn, &malformed, &run.tally, &mut run.checks, cancel)
                    .await
                {
                    Ending::Continue => continue,
                    Ending::End(status) => return (status, None),
                }
            }
            if let Some(end) = self
                .run_calls(&turn, &malformed, session_turn, run, cancel)
                .await
            {
                return end;
            }
            // A completion marker next to calls is ignored: the model has not seen their
            // results yet, so it cannot know the task is done. It counts in a turn without calls.
        }
    }

    /// Runs the calls of `turn` (session turn `session_turn`), records their results and
    /// what the model must read about the calls it meant to make (`malformed`); what ends the
    /// run after them, if anything.
    async fn run_calls(
        &mut self,
        turn: &AssistantTurn,
        malformed: &[String],
        session_turn: u32,
        run: &mut RunState,
        cancel: &CancellationToken,
    ) -> Option<End> {
        let (planned, stop) = self.schedule(turn, &mut run.repeats);
        let started = Instant::now();
        let plan_revision = checklist::revision(self.runner.session());
        let results = self
            .run_between_checkpoints(&planned, session_turn, &mut run.checkpoints, cancel)
            .await;
        run.tally.tool_time += started.elapsed();
        run.repeats.answered(results.iter().map(|r| &r.output));
        self.tally_calls(&results, &mut run.tally);
        self.record_results(turn, &results);
        if checklist::revision(self.runner.session()) != plan_revision {
            self.sink.emit(Event::PlanUpdated {
                steps: checklist::current(self.runner.session()),
            });
        }
        if !malformed.is_empty() {
            self.push(Message::user(malformed.join("\n")));
        }
        if cancel.is_cancelled() {
            return Some((RunStatus::Stopped, None));
        }
        stop.map(|message| (RunStatus::Failed, Some(message)))
    }

    /// Runs the batch `planned` of session turn `session_turn` on the dispatcher, between the
    /// turn's hooks; a checkpoint the turn recorded is added to `checkpoints` and announced.
    async fn run_between_checkpoints(
        &mut self,
        planned: &[BatchCall],
        session_turn: u32,
        checkpoints: &mut Vec<String>,
        cancel: &CancellationToken,
    ) -> Vec<CallResult> {
        self.runner.host().begin_turn(session_turn);
        self.tell_tools_vision().await;
        let results = self.runner.run_batch(planned, &self.sink, cancel).await;
        if let Some(recorded) = checkpoint::end_turn(
            self.runner.host(),
            self.checkpoints.clone(),
            session_turn,
            &self.sink,
        )
        .await
        {
            checkpoints.push(recorded.step.clone());
            self.sink.emit(Event::CheckpointCreated(recorded));
        }
        results
    }

    /// The calls of a turn with their event ids and the repeat guard's refusals; the second
    /// value ends the run after this batch.
    fn schedule(
        &mut self,
        turn: &AssistantTurn,
        repeats: &mut RepeatGuard,
    ) -> (Vec<BatchCall>, Option<String>) {
        let mut stop = None;
        let planned = turn
            .calls
            .iter()
            .map(|call| {
                self.calls_made += 1;
                let refusal = match repeats.check(&call.name, &call.arguments) {
                    Repeat::Fresh => None,
                    Repeat::Refuse(text) => Some(text),
                    Repeat::Stop(text) => {
                        stop.get_or_insert(text.clone());
                        Some(text)
                    }
                };
                BatchCall {
                    call_id: call
                        .id
                        .clone()
                        .unwrap_or_else(|| format!("call_{}", self.calls_made)),
                    call: call.clone(),
                    refusal,
                }
            })
            .collect();
        (planned, stop)
    }

    /// Counts each of `results` in `tally` (as the gate judged its call), and then the files
    /// the sub-agents changed.
    fn tally_calls(&self, results: &[CallResult], tally: &mut RunTally) {
        for result in results {
            tally.call(result);
        }
        self.fold_sub_agent_changes(tally);
    }

    /// One result per call, in call order, each matched to its call by id and name, with the
    /// images it made.
    fn record_results(&mut self, turn: &AssistantTurn, results: &[CallResult]) {
        for (call, result) in turn.calls.iter().zip(results) {
            let mut message =
                Message::tool_result(&call.to_tool_call(), result.output.text.clone());
            if let Message::Tool(t) = &mut message {
                t.images = result.output.images.clone();
                t.pinned = result.output.metadata.pinned;
            }
            let index = self.history.len();
            self.context.note(
                index,
                ResultNote::new(result.summary.clone(), &result.output.metadata),
            );
            self.push(message);
        }
    }

    /// Results for calls that never ran, so the history stays well-formed.
    pub(super) fn answer_unrun(&mut self, turn: &AssistantTurn, text: &str) {
        for call in &turn.calls {
            self.push(Message::tool_result(&call.to_tool_call(), text));
        }
    }
}

/// What the model must read about `turn`'s calls that could not be read, and the note on its
/// reply (it was stopped).
fn malformed_notes(turn: &AssistantTurn) -> Vec<String> {
    let mut malformed: Vec<String> = turn.malformed.iter().map(malformed_call_message).collect();
    malformed.extend(turn.note.clone());
    malformed
}
