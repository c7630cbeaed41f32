//! The executor: a thin loop that wires the parts together.
//!
//! Each iteration builds a request (system prompt, history, the definitions of the tools offered
//! now: `resolve` only while a previewed change is pending) and keeps it inside the window
//! ([`ContextWindow`]); the provider streams the answer through
//! [`collect_turn_with`](crate::stream::collect_turn_with); the [`ToolRunner`] runs the calls; the results go back into the history.
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
//!
//! One module per part (private; their docs are in the source): `run` is the loop and each
//! turn's calls, `turn` one model turn (the request, the streamed answer, its retries),
//! `end_checks` what is checked before a run may end, `closing` the summary turn and the
//! report, `resume` a stored session read back, `rewind` the turn marks and cutting back to
//! one, `pending` the steering to a pending action, `fit` and `compact` the window, `guard`
//! the repeat guard, `checkpoint` the snapshots around a turn's calls, `sub_agents` the
//! children.

mod checkpoint;
mod closing;
mod compact;
mod end_checks;
mod fit;
mod guard;
mod pending;
mod resume;
mod rewind;
mod run;
mod sub_agents;
mod turn;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use lathe_checkpoint::CheckpointRecorder;
use lathe_runtime::vision::{Vision, set_vision};
use lathe_store::SessionStatus;

use crate::context::ContextWindow;
use crate::events::{Event, RunReport, RunStatus};
use crate::message::{Message, push_merged};
use crate::parser::ToolNames;
use crate::prompt::{PromptInputs, system_prompt_for};
use crate::provider::{ChatOptions, Provider, ToolProtocol};
use crate::runner::ToolRunner;
use crate::sink::EventSink;
use crate::stream::WAITING_EVERY;

pub use closing::SUMMARY_REQUEST;
pub use compact::{COMPACT_SYSTEM, Compaction, SUMMARY_HEAD};
pub use end_checks::{NUDGE, asks_for_change, claims_change};
pub use fit::result_chars;
pub use guard::{Repeat, RepeatGuard};

/// The default limit on model turns in one run.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// How long the model may stay silent, before or during its answer, by default: 10 minutes
/// (a large model loading from disk can take minutes before its first token).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// How many times a turn whose answer was cut (connection lost, idle timeout) is asked for
/// again, by default.
pub const DEFAULT_STREAM_RETRIES: u32 = 2;

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
    marks: Vec<rewind::TurnMark>,
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

    fn fail(&self, message: String) -> String {
        self.sink.emit(Event::Error {
            message: message.clone(),
        });
        message
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

    fn set_status(&self, status: SessionStatus) {
        self.sink.update_status(status);
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
