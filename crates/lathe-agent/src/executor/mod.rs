//! The executor: a thin loop that wires the parts together.
//!
//! Each iteration builds a request (system prompt, history, the definitions of the tools offered
//! now: `resolve` only while a previewed change is pending) and keeps it inside the window
//! ([`ContextWindow`]); the provider streams the answer through
//! [`collect_turn_with`]; the [`ToolRunner`] runs the calls; the results go back into the history.
//! It ends when the model answers without a call (the completion marker counts only there, never
//! next to a call whose result the model has not seen), at the turn limit, on an error it cannot
//! recover from, or when the user stops it. It does not itself stream or run tools.
//!
//! At the end it questions once a claim of a change that did not happen (the nudge, see
//! [`claims_change`]), asks a model that made calls and never said a word for a short summary
//! (one more turn), and closes with [`Event::RunResult`]: the answer, files changed, calls
//! denied, tokens and times.
//!
//! While a previewed change is pending, the requests steer the model to `resolve` it: a forced
//! tool choice where the server has one, a reminder in every request (see the `pending`
//! module's docs in the source, or the README's "Previews waiting for a decision").

mod checkpoint;
mod compact;
mod fit;
mod guard;
mod pending;
mod sub_agents;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use lathe_checkpoint::CheckpointRecorder;
use lathe_runtime::Tool;
use lathe_runtime::checklist::{self, ChecklistStep};
use lathe_runtime::vision::{Vision, set_vision};
use lathe_store::SessionStatus;
use lathe_tools::resolve::ResolveTool;

use crate::context::{ContextWindow, ResultNote, shorten_turn, turn_budget};
use crate::events::{AnswerSource, Event, RunReport, RunStatus};
use crate::message::{INTERRUPTED_BY_USER, Message, push_merged};
use crate::parser::{ToolNames, malformed_call_message};
use crate::prompt::{PromptInputs, system_prompt_for};
use crate::provider::{
    ChatOptions, ChatRequest, ChunkStream, Provider, ProviderError, ToolProtocol, Truncation,
};
use crate::runner::summary::RunTally;
use crate::runner::{BatchCall, CallResult, STOPPED_BEFORE_RUNNING, ToolRunner};
use crate::sink::EventSink;
use crate::stream::{
    AssistantTurn, Quiet, Silence, StreamError, StreamLimits, WAITING_EVERY, collect_turn_with,
};

pub use compact::{COMPACT_SYSTEM, Compaction, SUMMARY_HEAD};
pub use fit::result_chars;
pub use guard::{NUDGE, Repeat, RepeatGuard, asks_for_change, claims_change};

/// The default limit on model turns in one run.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// How long the model may stay silent, before or during its answer, by default: 10 minutes
/// (a large model loading from disk can take minutes before its first token).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// How many times a turn whose answer was cut (connection lost, idle timeout) is asked for
/// again, by default.
pub const DEFAULT_STREAM_RETRIES: u32 = 2;

/// The result of a call that a stopped Lathe never answered, on resume.
const INTERRUPTED: &str = "this call was interrupted: Lathe stopped before it finished, so its \
result is unknown. Check the state before you repeat it.";

/// What the model reads when it ended a task that made calls without a word: one more turn,
/// with no tools offered (on native calls), for the user's closing message.
pub const SUMMARY_REQUEST: &str = "Summarise in 2-3 sentences what you did and what the \
result is. Do not call any tools.";

/// The result of a call made in the summary turn: it is not run.
const SUMMARY_ONLY: &str = "not run: the task has ended, and this turn was only for a summary";

/// What the model reads when its answer was cut off by the output limit.
const CONTINUE: &str = "Your last reply was cut off by the output limit. Continue from where \
it stopped; keep each reply and each tool call short enough to fit.";

/// How the executor runs.
#[derive(Debug, Clone)]
pub struct ExecutorConfig {
    /// The model.
    pub model: String,
    /// The most model turns in one run. By default, [`DEFAULT_MAX_TURNS`].
    pub max_turns: u32,
    /// Options sent with each request.
    pub options: ChatOptions,
    /// How tools reach the model. By default, automatic.
    pub tool_protocol: ToolProtocol,
    /// The window context shortening keeps within, in tokens. By default, `options.num_ctx`.
    pub context_window: Option<u64>,
    /// The longest the model may stay silent, waiting for its first token or between two
    /// pieces of its answer; past it the answer counts as cut. `None` waits for ever. By
    /// default, [`DEFAULT_IDLE_TIMEOUT`].
    pub idle_timeout: Option<Duration>,
    /// How often silence is reported ([`Event::Waiting`]). By default, every 5 s.
    pub waiting_every: Duration,
    /// How many times a turn whose answer was cut before any tool call is asked for again.
    /// By default, [`DEFAULT_STREAM_RETRIES`].
    pub stream_retries: u32,
    /// The pause before the first such retry; it doubles for each next one. By default, 1 s.
    pub stream_retry_delay: Duration,
}

impl ExecutorConfig {
    /// Defaults for `model`.
    pub fn new(model: impl Into<String>) -> Self {
        ExecutorConfig {
            model: model.into(),
            max_turns: DEFAULT_MAX_TURNS,
            options: ChatOptions::default(),
            tool_protocol: ToolProtocol::Auto,
            context_window: None,
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            waiting_every: WAITING_EVERY,
            stream_retries: DEFAULT_STREAM_RETRIES,
            stream_retry_delay: Duration::from_secs(1),
        }
    }
}

/// What a request offers the model.
#[derive(Debug, Clone, Copy)]
enum Offer {
    /// A turn of the task: the tools offered now, steered to a pending action.
    Work,
    /// The closing summary: the tools only when the text protocol needs them for the history's
    /// shape, nothing forced.
    Summary {
        /// Whether the tools go too.
        tools: bool,
    },
}

/// How one attempt at a turn's answer went wrong.
enum Attempt {
    /// The answer was cut (connection lost, silent past the idle timeout).
    Cut(Box<StreamError>),
    /// The server refused or failed for good.
    Failed(ProviderError),
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    /// How.
    pub status: RunStatus,
    /// Model turns used.
    pub turns: u32,
    /// Why it stopped, when it did not simply finish.
    pub message: Option<String>,
    /// The final answer: the model's last text, or the summary that replaced it.
    pub answer: String,
    /// What the run did, as its [`Event::RunResult`] said.
    pub report: RunReport,
}

/// Runs tasks in one session, keeping the history across them (chat asks several).
pub struct Executor {
    provider: Arc<dyn Provider>,
    runner: Arc<ToolRunner>,
    sink: EventSink,
    config: ExecutorConfig,
    names: Arc<ToolNames>,
    /// The definitions of the tools offered in the last request, and their names: rebuilt only
    /// when the offered set changes.
    tools: Vec<Value>,
    offered: Option<Vec<String>>,
    /// The pending action the last forced tool choice was for: each action gets one.
    forced_for: Option<u64>,
    history: Vec<Message>,
    context: ContextWindow,
    calls_made: u64,
    /// Snapshots around each turn's calls, when the workspace has checkpoints.
    checkpoints: Option<Arc<CheckpointRecorder>>,
    /// Model turns of the session so far, over all its tasks (a resumed session's included).
    session_turns: u32,
    /// Where each model turn of this process began in the history, for [`Executor::rewind`].
    marks: Vec<TurnMark>,
    /// For the history's first messages, those a resume read from the store: the seq of the
    /// newest stored message each stands for (0: none), so that a compaction of them records
    /// what it replaced.
    stored_seqs: Vec<u64>,
    /// The children the model may start, when it may.
    sub_agents: Option<crate::subagent::SubAgents>,
    /// How each compaction of this process moved the history (turn marks follow them).
    compactions: Vec<compact::Shift>,
    /// The history's length when the model last failed to write a summary: automatic
    /// compaction waits for a few more messages before it asks again.
    summary_failed_at: Option<usize>,
}

/// Where a model turn began in the history.
#[derive(Debug, Clone)]
struct TurnMark {
    /// The session-wide turn number.
    turn: u32,
    /// The history's length before the turn: before its task's message, for a task's first
    /// turn.
    len: usize,
    /// The seq of the newest stored message then.
    stored: u64,
    /// The message at `len - 1` as it was before the turn's task was merged into it (a task
    /// after a failed turn joins the user message the history ended with).
    merged_into: Option<Message>,
}

impl Executor {
    /// An executor with a fresh system prompt for the runner's workspace (with its `AGENTS.md`
    /// and the project's memory, read now).
    pub fn new(
        provider: Arc<dyn Provider>,
        runner: Arc<ToolRunner>,
        sink: EventSink,
        config: ExecutorConfig,
    ) -> Self {
        let registry = runner.registry();
        let names: Vec<String> = registry.names().into_iter().map(str::to_owned).collect();
        let prompt = system_prompt_for(
            &PromptInputs::for_session(runner.session(), names),
            registry.profile(),
        );
        let window = config
            .context_window
            .unwrap_or(u64::from(config.options.num_ctx));
        let mut executor = Executor {
            provider,
            names: Arc::new(tool_names(registry)),
            tools: Vec::new(),
            offered: None,
            forced_for: None,
            history: Vec::new(),
            context: ContextWindow::new(window),
            calls_made: 0,
            checkpoints: None,
            session_turns: 0,
            marks: Vec::new(),
            stored_seqs: Vec::new(),
            sub_agents: None,
            compactions: Vec::new(),
            summary_failed_at: None,
            runner,
            sink,
            config,
        };
        executor.push(Message::system(prompt));
        let tools = executor.offered_tools().to_vec();
        executor.apply_result_budget(&tools);
        executor
    }

    /// Continues a stored conversation: `history` without its old system prompt goes after the
    /// fresh one. Nothing is stored again. Calls left without a result (a run killed mid-turn)
    /// get one saying so, since servers refuse a call without its result.
    ///
    /// Runs of user messages, and of assistant messages, are merged into one (sessions stored
    /// before Lathe merged them hold two in a row after a failed turn).
    pub fn resume(&mut self, history: Vec<Message>) {
        self.resume_stored(history.into_iter().map(|m| (m, 0)).collect());
    }

    /// [`Executor::resume`] with the seq of the newest stored message each message stands for
    /// ([`stored_history_seqs`](crate::sink::stored_history_seqs)): a compaction of the
    /// resumed part is then recorded with the stored messages it replaced, so the next resume
    /// reads the summary instead of compacting them again.
    pub fn resume_stored(&mut self, history: Vec<(Message, u64)>) {
        // Runs merged first, each keeping the newest seq of what it joined.
        let (mut messages, mut seqs) = (Vec::new(), Vec::new());
        for (message, seq) in history {
            if matches!(message, Message::System { .. }) {
                continue;
            }
            if push_merged(&mut messages, message) {
                if let Some(last) = seqs.last_mut() {
                    *last = seq.max(*last);
                }
            } else {
                seqs.push(seq);
            }
        }
        self.stored_seqs.resize(self.history.len(), 0);
        let mut pending: std::collections::VecDeque<crate::message::ToolCall> = Default::default();
        for (message, seq) in messages.into_iter().zip(seqs) {
            if let Message::Tool(result) = message {
                pending.pop_front();
                self.history.push(Message::Tool(result));
                self.stored_seqs.push(seq);
                continue;
            }
            for call in pending.drain(..) {
                self.history.push(Message::tool_result(&call, INTERRUPTED));
                self.stored_seqs.push(0);
            }
            if let Message::Assistant(turn) = &message {
                pending.extend(turn.tool_calls.iter().cloned());
            }
            if push_merged(&mut self.history, message) {
                if let Some(last) = self.stored_seqs.last_mut() {
                    *last = seq.max(*last);
                }
            } else {
                self.stored_seqs.push(seq);
            }
        }
        for call in pending.drain(..) {
            self.history.push(Message::tool_result(&call, INTERRUPTED));
            self.stored_seqs.push(0);
        }
    }

    /// Goes on with the plan a stored session had (`update_plan`'s checklist), as its stored
    /// events say ([`last_plan`](crate::stored::last_plan)): a resumed session's model keeps
    /// its plan, and "done" with open steps is questioned as before.
    pub fn restore_plan(&mut self, steps: Vec<ChecklistStep>) {
        checklist::restore(self.runner.session(), steps);
    }

    /// Snapshots the workspace around each turn's calls through `hook` (see
    /// [`AgentBuilder::checkpoints`](crate::AgentBuilder::checkpoints)).
    pub fn set_checkpoints(&mut self, hook: Option<Arc<CheckpointRecorder>>) {
        self.checkpoints = hook;
    }

    /// The checkpoints, when there are any.
    pub fn checkpoints(&self) -> Option<&Arc<CheckpointRecorder>> {
        self.checkpoints.as_ref()
    }

    /// Says how many model turns the session had before this process (a resumed session's
    /// stored `turn_started` events), so that turn numbers stay unique across the session.
    pub fn set_turns_before(&mut self, turns: u32) {
        self.session_turns = turns;
    }

    /// Model turns of the session so far, over all its tasks: the number of its newest turn.
    pub fn session_turns(&self) -> u32 {
        self.session_turns
    }

    /// Cuts the conversation back to before session turn `turn` (a task's first turn: to
    /// before the task's message), and returns the messages cut; `None` when this process
    /// did not run that turn (an earlier process of a resumed session did, or no one yet).
    /// The next turns are numbered on from the newest, so numbers are never reused.
    ///
    /// The stored history is cut too ([`Event::ConversationRewound`]), so a later `--resume`
    /// goes on from here.
    pub fn rewind(&mut self, turn: u32) -> Option<Vec<Message>> {
        let at = self.marks.iter().position(|m| m.turn == turn)?;
        let mark = self.marks[at].clone();
        let len = mark.len.min(self.history.len());
        self.marks.truncate(at);
        self.context.forget_from(len);
        let newest = self.sink.recorded_messages();
        if newest > mark.stored {
            self.sink.emit(Event::ConversationRewound {
                turn,
                first_message: mark.stored + 1,
                last_message: newest,
            });
        }
        let mut cut = self.history.split_off(len);
        self.stored_seqs.truncate(len);
        if let Some(before) = mark.merged_into
            && let Some(joined) = self.history.last_mut()
        {
            // The task had joined the message before it: that message gets back what it had.
            cut.insert(0, std::mem::replace(joined, before));
        }
        Some(cut)
    }

    /// Whether [`Executor::rewind`] can cut back to before session turn `turn`: this process
    /// ran it, and no rewind cut it yet.
    pub fn can_rewind(&self, turn: u32) -> bool {
        self.marks.iter().any(|m| m.turn == turn)
    }

    /// The conversation so far, as sent (old results may be shortened).
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The window the requests are fitted to, in tokens.
    pub fn context_window(&self) -> u64 {
        self.context.window()
    }

    /// Fits the next requests to a `window`-token window (the server's turned out smaller, or
    /// the user changed it), and the tools' results to a quarter of it.
    pub fn set_context_window(&mut self, window: u64) {
        self.context.set_window(window);
        if let Some(agents) = &self.sub_agents {
            agents.set_window(self.context.window());
        }
        let tools = self.offered_tools().to_vec();
        self.apply_result_budget(&tools);
    }

    /// Offers the tools and the system prompt in `profile` from the next request on (chat's
    /// `/model NAME`, to a model with a window of another size).
    pub fn set_profile(&mut self, profile: lathe_runtime::Profile) {
        if self.runner.registry().profile() == profile {
            return;
        }
        let mut registry = self.runner.registry().clone();
        registry.use_profile(profile);
        self.runner = Arc::new(self.runner.with_registry(Arc::new(registry)));
        let registry = self.runner.registry();
        self.names = Arc::new(tool_names(registry));
        let names = registry.names().into_iter().map(str::to_owned).collect();
        let prompt = system_prompt_for(
            &PromptInputs::for_session(self.runner.session(), names),
            profile,
        );
        if let Some(first @ Message::System { .. }) = self.history.first_mut() {
            *first = Message::system(prompt);
        }
        self.offered = None;
        let tools = self.offered_tools().to_vec();
        self.apply_result_budget(&tools);
    }

    /// The options sent with the next requests (chat's `/model NAME`: the new model's
    /// `num_ctx`).
    pub fn set_options(&mut self, options: ChatOptions) {
        self.config.options = options;
    }

    /// Replaces the older part of the conversation with a summary the model writes now (chat's
    /// `/compact`; it happens by itself when a request would not fit). `Err` says why nothing
    /// changed.
    pub async fn compact(&mut self, cancel: &CancellationToken) -> Result<Compaction, String> {
        let tools = self.offered_tools().to_vec();
        self.compact_history(&tools, true, cancel).await
    }

    /// The model in use.
    pub fn model(&self) -> &str {
        &self.config.model
    }

    /// Switches the model for the next turns (`/model NAME`).
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.config.model = model.into();
    }

    /// How it runs.
    pub fn config(&self) -> &ExecutorConfig {
        &self.config
    }

    /// Where its events go.
    pub fn sink(&self) -> &EventSink {
        &self.sink
    }

    /// The tool runner (its gate switches approval modes).
    pub fn runner(&self) -> &Arc<ToolRunner> {
        &self.runner
    }

    /// Records `message` and adds it to the history, merged into the last message when both
    /// are the user's or both the assistant's (see [`push_merged`]): the store keeps each as
    /// it came, and reading it back merges them the same way.
    fn push(&mut self, message: Message) {
        self.sink.record_message(&message);
        push_merged(&mut self.history, message);
    }

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
        images: Vec<crate::message::Image>,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        let began = Instant::now();
        self.set_status(SessionStatus::Running);
        let before_task = (self.history.len(), self.sink.recorded_messages());
        let last = self.history.last().cloned();
        self.push(Message::user_with_images(task, images));
        let merged_into = last.filter(|_| self.history.len() == before_task.0);
        let wants_change = asks_for_change(task);
        let mut tally = RunTally::default();
        let mut nudged = false;
        let mut plan_checked = false;
        let mut continued = false;
        let mut repeats = RepeatGuard::default();
        // The model's last text of the run.
        let mut answer = String::new();
        let mut turns = 0;
        // The ids of the checkpoints this run recorded.
        let mut checkpoints: Vec<String> = Vec::new();
        let outcome = loop {
            if turns >= self.config.max_turns {
                let limit = self.config.max_turns;
                break (
                    RunStatus::MaxTurns,
                    Some(format!(
                        "stopped after {limit} turns: the --max-turns limit ({limit}) was hit"
                    )),
                );
            }
            if cancel.is_cancelled() {
                break (RunStatus::Stopped, None);
            }
            self.deliver_sub_agent_results();
            turns += 1;
            let (mark, stored, merged) = if turns == 1 {
                (before_task.0, before_task.1, merged_into.clone())
            } else {
                (self.history.len(), self.sink.recorded_messages(), None)
            };
            let asked = Instant::now();
            let compactions = self.compactions.len();
            let turn = self.model_turn(turns, cancel, Offer::Work).await;
            let session_turn = self.session_turns;
            // A compaction in the turn moved where it began, or replaced it.
            let mark = self.compactions[compactions..]
                .iter()
                .try_fold(mark, |at, shift| shift.moved(at));
            if let Some(mark) = mark {
                self.marks.push(TurnMark {
                    turn: session_turn,
                    len: mark,
                    stored,
                    merged_into: merged,
                });
            }
            tally.model_time += asked.elapsed();
            let turn = match turn {
                Ok(turn) => turn,
                Err(message) => break (RunStatus::Failed, Some(message)),
            };
            tally.turn(turn.usage);
            let text = turn.content.trim();
            if !text.is_empty() {
                answer = text.to_owned();
            }
            if turn.cancelled {
                self.answer_unrun(&turn, STOPPED_BEFORE_RUNNING);
                break (RunStatus::Stopped, None);
            }
            let mut malformed: Vec<String> =
                turn.malformed.iter().map(malformed_call_message).collect();
            malformed.extend(turn.note.clone());
            if turn.calls.is_empty() {
                if !malformed.is_empty() {
                    self.push(Message::user(malformed.join("\n")));
                    continue;
                }
                if turn.hit_length_limit() && !continued && !turn.task_complete {
                    continued = true;
                    self.push(Message::user(CONTINUE));
                    continue;
                }
                // A claim of a change that did not happen, on a task that asked for one, is
                // questioned once. A question, or a denied change, is not (the user stopped it).
                if wants_change
                    && !nudged
                    && !tally.wrote
                    && !tally.any_denied()
                    && claims_change(text, turn.task_complete)
                {
                    nudged = true;
                    self.push(Message::user(NUDGE));
                    continue;
                }
                // "Done" with steps of its own plan still open is questioned once.
                if !plan_checked && let Some(reminder) = open_steps_reminder(self.runner.session())
                {
                    plan_checked = true;
                    self.push(Message::user(reminder));
                    continue;
                }
                // Background sub-agents still at work: wait, and read what they found.
                match self.await_sub_agents(cancel).await {
                    sub_agents::Waited::Nothing => {}
                    sub_agents::Waited::Results => continue,
                    sub_agents::Waited::Cancelled => break (RunStatus::Stopped, None),
                }
                break (RunStatus::Finished, None);
            }
            let (planned, stop) = self.schedule(&turn, &mut repeats);
            let started = Instant::now();
            self.runner.host().begin_turn(session_turn);
            self.tell_tools_vision().await;
            let plan_revision = checklist::revision(self.runner.session());
            let results = self.runner.run_batch(&planned, &self.sink, cancel).await;
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
            tally.tool_time += started.elapsed();
            repeats.answered(results.iter().map(|r| &r.output));
            for result in &results {
                tally.call(result);
            }
            self.fold_sub_agent_changes(&mut tally);
            self.record_results(&turn, &results);
            if checklist::revision(self.runner.session()) != plan_revision {
                self.sink.emit(Event::PlanUpdated {
                    steps: checklist::current(self.runner.session()),
                });
            }
            if !malformed.is_empty() {
                self.push(Message::user(malformed.join("\n")));
            }
            if cancel.is_cancelled() {
                break (RunStatus::Stopped, None);
            }
            if let Some(message) = stop {
                break (RunStatus::Failed, Some(message));
            }
            // A completion marker next to calls is ignored: the model has not seen their
            // results yet, so it cannot know the task is done. It counts in a turn without calls.
        };
        let (status, message) = outcome;
        // No child outlives the run that started it.
        self.stop_sub_agents().await;
        self.fold_sub_agent_changes(&mut tally);
        let mut answer_from = AnswerSource::Model;
        // Calls and then not a word: ask for a short summary, and if that brings nothing
        // either, say what the last calls did.
        if status == RunStatus::Finished && answer.is_empty() && tally.made_calls() {
            turns += 1;
            answer = self.summary_turn(turns, cancel, &mut tally).await;
            answer_from = AnswerSource::Summary;
            if answer.is_empty() {
                answer = tally.closing_line();
                answer_from = AnswerSource::ToolResults;
                if !answer.is_empty() {
                    self.sink.emit(Event::TextDelta {
                        text: format!("{answer}\n"),
                    });
                }
            }
        }
        if answer.is_empty() {
            answer_from = AnswerSource::None;
        }
        let left = pending::left(&self.runner.session().pending_summaries());
        if let Some(message) = pending::left_notice(&left) {
            self.sink.emit(Event::Notice { message });
        }
        self.sink.emit(Event::RunFinished {
            status,
            turns,
            message: message.clone(),
        });
        self.set_status(match status {
            RunStatus::Finished => SessionStatus::Completed,
            RunStatus::MaxTurns => SessionStatus::MaxTurns,
            RunStatus::Failed => SessionStatus::Failed,
            RunStatus::Stopped => SessionStatus::Interrupted,
        });
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

    /// One request and its streamed answer, recorded in the history. `Err` is the message of
    /// an error the run cannot recover from (already emitted).
    ///
    /// An answer cut before it held a complete tool call (the connection lost, the model
    /// silent past the idle timeout) is asked for again, up to
    /// [`ExecutorConfig::stream_retries`] times, and its partial text never reaches the
    /// history. An answer cut after complete calls keeps its text and those calls, which run as
    /// usual: asking again would make the model decide anew, and running them is what it had
    /// asked for; only the cut rest is lost. When the retries run out the run fails, and the
    /// history ends with the user's message.
    async fn model_turn(
        &mut self,
        turn: u32,
        cancel: &CancellationToken,
        offer: Offer,
    ) -> Result<AssistantTurn, String> {
        let tools = match offer {
            Offer::Work | Offer::Summary { tools: true } => self.offered_tools().to_vec(),
            Offer::Summary { tools: false } => Vec::new(),
        };
        self.session_turns += 1;
        if let Err(message) = self.fit_request(&tools, cancel).await {
            return Err(self.fail(message));
        }
        self.sink.emit(Event::TurnStarted {
            turn,
            model: self.config.model.clone(),
        });
        let (tool_choice, reminder) = match offer {
            Offer::Work => self.steer_to_pending(),
            Offer::Summary { .. } => (None, None),
        };
        let (mut request, mut estimate) = self.request(tools, tool_choice, reminder.as_deref());
        let sink = self.sink.clone();
        let mut emit = move |event: Event| sink.emit(event);
        let retries = self.config.stream_retries;
        let mut cuts = 0;
        let mut overflowed = false;
        let turn_data = loop {
            let error = match self.attempt(&request, cancel, &mut emit).await {
                Ok(turn_data) => break turn_data,
                Err(Attempt::Failed(error @ ProviderError::ContextOverflow { .. })) => {
                    if overflowed {
                        let message = self.overflow_failure(&error);
                        return Err(self.fail(message));
                    }
                    overflowed = true;
                    match self
                        .after_overflow(&error, estimate, &request.tools, cancel)
                        .await
                    {
                        Ok(message) => emit(Event::Notice { message }),
                        Err(why) => {
                            let message = format!("{error}; {why}");
                            return Err(self.fail(message));
                        }
                    }
                    let tools = std::mem::take(&mut request.tools);
                    let choice = request.tool_choice.take();
                    (request, estimate) = self.request(tools, choice, reminder.as_deref());
                    continue;
                }
                Err(Attempt::Failed(error)) => return Err(self.fail(error.to_string())),
                Err(Attempt::Cut(failure)) if !failure.partial.calls.is_empty() => {
                    let n = failure.partial.calls.len();
                    emit(Event::Notice {
                        message: format!(
                            "{}; running the {n} complete tool call{} it had sent (the rest of the answer is lost)",
                            cut_reason(&failure.error),
                            if n == 1 { "" } else { "s" },
                        ),
                    });
                    break Box::new(failure).partial;
                }
                Err(Attempt::Cut(failure)) => failure.error,
            };
            if cuts >= retries {
                let tries = retries + 1;
                return Err(self.fail(format!(
                    "{error}; gave up after {tries} tr{}. Check the model server (its log says why the answer stopped) and ask again",
                    if tries == 1 { "y" } else { "ies" }
                )));
            }
            cuts += 1;
            emit(Event::AnswerRestarted {
                attempt: cuts,
                retries,
                message: format!("{}; retrying ({cuts} of {retries})", cut_reason(&error)),
            });
            let delay = self.config.stream_retry_delay * 2u32.saturating_pow(cuts - 1);
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => {
                    break AssistantTurn { cancelled: true, ..AssistantTurn::default() };
                }
            }
        };
        if let Some(actual) = turn_data.usage.and_then(|u| u.prompt_tokens) {
            self.context.calibrate(estimate, actual);
            // A server that counted far fewer tokens than were sent cut the prompt: said, so
            // that nothing is lost unseen.
            if let Some(cut) = Truncation::detect(estimate, actual) {
                // Treated as an overflow: what the server kept, and what it wrote, fit its
                // window, so the next requests are fitted to that.
                let assumed = self.context.window();
                let kept = actual
                    + turn_data
                        .usage
                        .and_then(|u| u.completion_tokens)
                        .unwrap_or(0);
                let mut message = cut.warning(assumed);
                if kept < assumed {
                    self.set_context_window(kept);
                    message.push_str(&format!(
                        "; until then, requests are fitted to {} tokens",
                        crate::provider::window::thousands(kept)
                    ));
                }
                self.sink.emit(Event::Notice { message });
            }
        }
        let mut message = turn_data.to_message();
        if turn_data.cancelled
            && let Message::Assistant(partial) = &mut message
        {
            // The model should know its reply was cut, and by whom.
            if partial.content.is_empty() {
                partial.content = INTERRUPTED_BY_USER.to_owned();
            } else {
                partial.content = format!("{}\n\n{INTERRUPTED_BY_USER}", partial.content);
            }
        }
        // The user saw it whole, and it stays the run's answer; the history keeps what fits.
        if let Some(cut) = shorten_turn(&mut message, turn_budget(self.context.window())) {
            tracing::info!(cut, "kept a reply too long for the window shortened");
        }
        self.push(message);
        self.sink.emit(Event::TurnFinished {
            turn,
            finish_reason: turn_data.finish_reason.clone(),
            usage: turn_data.usage,
            task_complete: turn_data.task_complete,
        });
        Ok(turn_data)
    }

    /// The request for the history as it is now, with `tools`, the forced `tool_choice` and the
    /// pending `reminder`; and its prompt's estimated tokens.
    fn request(
        &self,
        tools: Vec<Value>,
        tool_choice: Option<String>,
        reminder: Option<&str>,
    ) -> (ChatRequest, u64) {
        let estimate = self.context.estimate(&self.history, &tools);
        let mut options = self.config.options.clone();
        if options.max_tokens.is_none() {
            options.max_tokens = Some(self.output_cap(estimate));
        }
        let mut messages = self.history.clone();
        if let Some(reminder) = reminder {
            pending::remind(&mut messages, reminder);
        }
        let request = ChatRequest {
            model: self.config.model.clone(),
            messages,
            tools,
            options,
            tool_protocol: self.config.tool_protocol,
            tool_choice,
        };
        (request, estimate)
    }

    /// Sends `request` once and reads its answer, reporting silence meanwhile.
    async fn attempt(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        emit: &mut (dyn FnMut(Event) + Send),
    ) -> Result<AssistantTurn, Attempt> {
        let limits = StreamLimits {
            idle_timeout: self.config.idle_timeout,
            waiting_every: self.config.waiting_every,
            stop_repetition: true,
        };
        let mut silence = Silence::new(limits);
        let opening = self.provider.chat(request);
        tokio::pin!(opening);
        let stream: ChunkStream = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    return Ok(AssistantTurn { cancelled: true, ..AssistantTurn::default() });
                }
                opened = &mut opening => match opened {
                    Ok(stream) => break stream,
                    Err(error) => return Err(Attempt::Failed(error)),
                },
                quiet = silence.next() => match quiet {
                    Quiet::Report(seconds) => emit(Event::Waiting { seconds }),
                    Quiet::Stalled(after) => {
                        return Err(Attempt::Cut(Box::new(StreamError {
                            error: ProviderError::Stalled { after },
                            partial: AssistantTurn::default(),
                        })));
                    }
                },
            }
        };
        match collect_turn_with(stream, Arc::clone(&self.names), cancel, emit, limits).await {
            Ok(turn) => Ok(turn),
            Err(failure) if failure.error.is_lost_mid_stream() => {
                Err(Attempt::Cut(Box::new(failure)))
            }
            Err(failure) => Err(Attempt::Failed(failure.error)),
        }
    }

    /// The definitions of the tools offered now ([`lathe_runtime::Registry::offered`]), rebuilt
    /// only when the set changed since the last request.
    fn offered_tools(&mut self) -> &[Value] {
        let registry = self.runner.registry();
        let session = self.runner.session();
        let names: Vec<&str> = registry.offered(session).map(|d| d.name.as_str()).collect();
        if self.offered.as_deref().is_none_or(|known| known != names) {
            self.tools = registry
                .offered(session)
                .map(lathe_runtime::ToolDefinition::to_function)
                .collect();
            self.offered = Some(names.into_iter().map(str::to_owned).collect());
        }
        &self.tools
    }

    /// While an action is pending: the tool the request forces (`resolve`, on the first request
    /// since the action became the newest) and the reminder it ends with. See the `pending`
    /// module.
    fn steer_to_pending(&mut self) -> (Option<String>, Option<String>) {
        let resolve = <ResolveTool as Tool>::NAME;
        let session = self.runner.session();
        if !self.runner.registry().is_offered(resolve, session) {
            return (None, None);
        }
        let waiting = session.pending_summaries();
        let Some(newest) = waiting.last().map(|a| a.id) else {
            return (None, None);
        };
        let reminder = pending::reminder(&waiting, resolve);
        let choice = (self.forced_for != Some(newest)).then(|| {
            self.forced_for = Some(newest);
            resolve.to_owned()
        });
        (choice, reminder)
    }

    fn fail(&self, message: String) -> String {
        self.sink.emit(Event::Error {
            message: message.clone(),
        });
        message
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

    /// Tells the tools whether the model can see images (`read_file` sends them only then),
    /// from the provider's capabilities, and if not, what would let it.
    async fn tell_tools_vision(&self) {
        let model = &self.config.model;
        let sees = self
            .provider
            .capabilities(model)
            .await
            .is_ok_and(|c| c.vision);
        let vision = if sees {
            Vision::Sees
        } else {
            Vision::Blind {
                hint: crate::provider::no_vision_hint(self.provider.kind(), model),
            }
        };
        set_vision(self.runner.session(), vision);
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
    fn answer_unrun(&mut self, turn: &AssistantTurn, text: &str) {
        for call in &turn.calls {
            self.push(Message::tool_result(&call.to_tool_call(), text));
        }
    }

    fn set_status(&self, status: SessionStatus) {
        self.sink.update_status(status);
    }
}

/// What the user is told about a cut answer, before what happens next.
/// The plan tool's name.

/// What the model reads when it answers while steps of its plan are open (once a run): the open
/// steps, and what to do about them. `None` when the plan has none open.
fn open_steps_reminder(session: &lathe_runtime::Session) -> Option<String> {
    let open = checklist::open_steps(session);
    if open.is_empty() {
        return None;
    }
    let steps: Vec<String> = open
        .iter()
        .map(|s| format!("{} {}", s.status.mark(), s.step))
        .collect();
    Some(format!(
        "Your plan still has {} open step(s):\n{}\nDo them now, or, if they are done or no \
         longer needed, say so with update_plan (mark them completed, or leave them out), then \
         give your final answer.",
        open.len(),
        steps.join("\n")
    ))
}

fn cut_reason(error: &ProviderError) -> String {
    match error {
        ProviderError::Stalled { after } => format!(
            "the model sent nothing for {} s, the idle timeout",
            after.as_secs()
        ),
        _ => "connection to the model lost mid-answer".to_owned(),
    }
}

/// The names calls are parsed against: every tool, offered now or not (a call to one that is
/// hidden, `resolve` with nothing pending, still parses, and its result says why it did
/// nothing), with its parameter names, so positional Python-style calls can be mapped, and the
/// tools' aliases (`bash` for `shell`), resolved as the registry does.
fn tool_names(registry: &lathe_runtime::Registry) -> ToolNames {
    let all = match registry.function_definitions() {
        Value::Array(tools) => tools,
        _ => Vec::new(),
    };
    ToolNames::from_definitions(&all).with_aliases(registry.definitions().flat_map(|d| {
        d.aliases
            .iter()
            .map(move |alias| (alias.as_str(), d.name.as_str()))
    }))
}
