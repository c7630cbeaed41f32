//! [`Agent`]: one session's executor with its runner, gate, approver and event sink, put
//! together by [`AgentBuilder`] from the parts that have no sensible default (a provider, a
//! model, the tool session) and setters for the rest.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use lathe_checkpoint::{CheckpointRecorder, Checkpoints};
use lathe_policy::{PermissionsConfig, PolicyError};
use lathe_runtime::{Hook, Host, Profile, Registry, Session, TurnRecorder};

use crate::approval::{ApprovalMode, Approver, Gate, NonInteractive};
use crate::events::Event;
use crate::executor::{Executor, ExecutorConfig, RunOutcome};
use crate::message::Message;
use crate::provider::{ChatOptions, Provider, ToolProtocol};
use crate::runner::ToolRunner;
use crate::sink::EventSink;
use crate::subagent::{Parent, SerializedApprover, SubAgentConfig, SubAgents};

/// Why an [`AgentBuilder`] could not build.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A permission rule or sensitive-path pattern does not parse.
    #[error("invalid permissions: {0}")]
    Permissions(#[source] PolicyError),
}

/// An agent session: runs tasks one after another, keeping the history across them.
pub struct Agent {
    executor: Executor,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.model())
            .field("runner", self.executor.runner())
            .field("sink", self.executor.sink())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A builder for an agent that asks `provider` for `model` and runs tools in `tools` (the
    /// workspace, its state directory and the tools' configuration).
    pub fn builder(
        provider: Arc<dyn Provider>,
        model: impl Into<String>,
        tools: Arc<Session>,
    ) -> AgentBuilder {
        AgentBuilder {
            provider,
            tools,
            config: ExecutorConfig::new(model),
            registry: None,
            gate: GateConfig::default(),
            approver: None,
            sink: None,
            hooks: Vec::new(),
            checkpoints: None,
            turns_before: 0,
            sub_agents: None,
            profile: None,
        }
    }

    /// Runs `task` until the model is done, a limit is hit, an error ends it, or `cancel`
    /// fires. When it returns, every event of the run has been stored and shown.
    pub async fn run(&mut self, task: &str, cancel: &CancellationToken) -> RunOutcome {
        self.executor.run(task, cancel).await
    }

    /// [`Agent::run`] with images in the task's message, for a model that can see.
    pub async fn run_with_images(
        &mut self,
        task: &str,
        images: Vec<crate::message::Image>,
        cancel: &CancellationToken,
    ) -> RunOutcome {
        self.executor.run_with_images(task, images, cancel).await
    }

    /// Cuts the conversation back to before session turn `turn` (see [`Executor::rewind`]).
    pub fn rewind(&mut self, turn: u32) -> Option<Vec<Message>> {
        self.executor.rewind(turn)
    }

    /// Replaces the older part of the conversation with a summary the model writes (chat's
    /// `/compact`; see [`Executor::compact`]).
    pub async fn compact(
        &mut self,
        cancel: &CancellationToken,
    ) -> Result<crate::executor::Compaction, String> {
        self.executor.compact(cancel).await
    }

    /// The checkpoints of the session, when it keeps any.
    pub fn checkpoints(&self) -> Option<&Arc<Checkpoints>> {
        self.executor.checkpoints().map(|hook| hook.checkpoints())
    }

    /// Continues a stored conversation (see [`Executor::resume`]).
    pub fn resume(&mut self, history: Vec<Message>) {
        self.executor.resume(history);
    }

    /// Continues a stored conversation read with its seqs (see [`Executor::resume_stored`]).
    pub fn resume_stored(&mut self, history: Vec<(Message, u64)>) {
        self.executor.resume_stored(history);
    }

    /// Goes on with a stored session's plan: [`stored::last_plan`](crate::stored::last_plan)
    /// of its events (see [`Executor::restore_plan`]).
    pub fn restore_plan(&mut self, steps: Vec<lathe_runtime::checklist::ChecklistStep>) {
        self.executor.restore_plan(steps);
    }

    /// The model in use.
    pub fn model(&self) -> &str {
        self.executor.model()
    }

    /// Switches the model for the next turns.
    pub fn set_model(&mut self, model: impl Into<String>) {
        self.executor.set_model(model);
    }

    /// The approval gate (to switch modes, or see the current one).
    pub fn gate(&self) -> &Arc<Gate> {
        self.executor.runner().gate()
    }

    /// Where events go (to flush it, or hand it to code that must wait for it).
    pub fn sink(&self) -> &EventSink {
        self.executor.sink()
    }

    /// The executor underneath.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// The executor underneath, to change.
    pub fn executor_mut(&mut self) -> &mut Executor {
        &mut self.executor
    }
}

/// The gate's settings, when the builder makes the gate.
#[derive(Default)]
struct GateConfig {
    given: Option<Arc<Gate>>,
    mode: ApprovalMode,
    permissions: PermissionsConfig,
    skip_approvals: bool,
}

/// Builds an [`Agent`]; from [`Agent::builder`].
#[must_use = "an agent builder does nothing until `build` is called"]
pub struct AgentBuilder {
    provider: Arc<dyn Provider>,
    tools: Arc<Session>,
    config: ExecutorConfig,
    registry: Option<Arc<Registry>>,
    gate: GateConfig,
    approver: Option<Arc<dyn Approver>>,
    sink: Option<EventSink>,
    hooks: Vec<Arc<dyn Hook>>,
    checkpoints: Option<Arc<CheckpointRecorder>>,
    turns_before: u32,
    sub_agents: Option<SubAgentConfig>,
    profile: Option<Profile>,
}

impl AgentBuilder {
    /// The tools the model may call.
    ///
    /// By default, the built-in tools ([`lathe_tools::builtin`]).
    pub fn registry(mut self, registry: Arc<Registry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// How much of the system prompt and the tools' definitions each request carries
    /// ([`Profile`]): the compact profile's short descriptions, common parameters and tools on
    /// demand fit a small window.
    ///
    /// By default, chosen by the window ([`Profile::for_window`]): compact for 16,384 tokens
    /// and less, full above.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// How much runs without asking.
    ///
    /// By default, [`ApprovalMode::Ask`]. Ignored when a [`gate`](AgentBuilder::gate) is given.
    pub fn approval(mut self, mode: ApprovalMode) -> Self {
        self.gate.mode = mode;
        self
    }

    /// Permission rules (`[permissions]` of the configuration: allow, ask and deny rules,
    /// sensitive paths), checked when [`build`](AgentBuilder::build) makes the gate.
    ///
    /// By default, none beyond the built-in sensitive paths. Ignored when a
    /// [`gate`](AgentBuilder::gate) is given.
    pub fn permissions(mut self, permissions: PermissionsConfig) -> Self {
        self.gate.permissions = permissions;
        self
    }

    /// Never ask, not even for critical commands; deny rules and read-only still refuse
    /// (`--dangerously-skip-approvals`).
    ///
    /// By default, this is disabled. Ignored when a [`gate`](AgentBuilder::gate) is given.
    pub fn dangerously_skip_approvals(mut self, yes: bool) -> Self {
        self.gate.skip_approvals = yes;
        self
    }

    /// A gate made elsewhere (shared with another front end, say), instead of the one the
    /// builder makes from [`approval`](AgentBuilder::approval),
    /// [`permissions`](AgentBuilder::permissions) and
    /// [`dangerously_skip_approvals`](AgentBuilder::dangerously_skip_approvals).
    ///
    /// By default, the builder makes the gate, for the tool session's workspace.
    pub fn gate(mut self, gate: Arc<Gate>) -> Self {
        self.gate.given = Some(gate);
        self
    }

    /// Who answers when the gate asks.
    ///
    /// By default, [`NonInteractive`]: every call that would ask is denied, with a message
    /// that tells the model why.
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = Some(approver);
        self
    }

    /// Where events, history messages and the session's status go.
    ///
    /// By default, nowhere: a [detached](EventSink::detached) sink whose handler does nothing,
    /// so nothing is stored or shown.
    pub fn sink(mut self, sink: EventSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// A hook run around every call (after the checkpoints' hook, in the order given).
    ///
    /// By default, none.
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.hooks.push(hook);
        self
    }

    /// Records the workspace before the first change of each model turn and after the turn's
    /// calls, so that `lathe undo` and chat's `/undo` can take a turn back; each turn that
    /// changed files is announced as [`Event::CheckpointCreated`]. Turns are numbered across
    /// the session (see [`turns_before`](AgentBuilder::turns_before)).
    ///
    /// By default, none: nothing is recorded.
    pub fn checkpoints(mut self, checkpoints: Arc<Checkpoints>) -> Self {
        self.checkpoints = Some(Arc::new(CheckpointRecorder::new(checkpoints)));
        self
    }

    /// How many model turns the session had before (a resumed session: its stored
    /// `turn_started` events); the first turn of this agent is the next.
    ///
    /// By default, 0: the first turn is turn 1.
    pub fn turns_before(mut self, turns: u32) -> Self {
        self.turns_before = turns;
        self
    }

    /// The most model turns in one run.
    ///
    /// By default, [`DEFAULT_MAX_TURNS`](crate::executor::DEFAULT_MAX_TURNS) (50).
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.config.max_turns = turns;
        self
    }

    /// Options sent with each request (context window, thinking, temperature, output cap).
    ///
    /// By default, [`ChatOptions::default`]: a window of
    /// [`DEFAULT_NUM_CTX`](crate::provider::DEFAULT_NUM_CTX) tokens, thinking left to the model.
    pub fn options(mut self, options: ChatOptions) -> Self {
        self.config.options = options;
        self
    }

    /// How tools reach the model: natively, described in the prompt, or whichever the model
    /// supports.
    ///
    /// By default, [`ToolProtocol::Auto`].
    pub fn tool_protocol(mut self, protocol: ToolProtocol) -> Self {
        self.config.tool_protocol = protocol;
        self
    }

    /// The window, in tokens, that the conversation is kept within (older results shortened,
    /// then compacted).
    ///
    /// By default, the context window of the [`options`](AgentBuilder::options)
    /// (`num_ctx`).
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.config.context_window = Some(tokens);
        self
    }

    /// The longest the model may stay silent, waiting for its first token or between two
    /// pieces of its answer, before the answer counts as cut (and is asked for again, see
    /// [`stream_retries`](AgentBuilder::stream_retries)); `None` waits for ever. Silence is
    /// reported every few seconds as [`Event::Waiting`].
    ///
    /// By default, [`DEFAULT_IDLE_TIMEOUT`](crate::executor::DEFAULT_IDLE_TIMEOUT) (600 s).
    pub fn idle_timeout(mut self, timeout: Option<std::time::Duration>) -> Self {
        self.config.idle_timeout = timeout;
        self
    }

    /// How often silence is reported as [`Event::Waiting`] while the model says nothing.
    ///
    /// By default, every 5 s.
    pub fn waiting_every(mut self, every: std::time::Duration) -> Self {
        self.config.waiting_every = every;
        self
    }

    /// How many times a turn whose answer was cut before any complete tool call (connection
    /// lost, idle timeout) is asked for again, and the pause before the first retry (it
    /// doubles for each next one).
    ///
    /// By default, [`DEFAULT_STREAM_RETRIES`](crate::executor::DEFAULT_STREAM_RETRIES) (2),
    /// after 1 s.
    pub fn stream_retries(mut self, retries: u32, delay: std::time::Duration) -> Self {
        self.config.stream_retries = retries;
        self.config.stream_retry_delay = delay;
        self
    }

    /// Lets the model hand tasks to sub-agents (`spawn_agent`, `read_sub_agent`; see
    /// [`crate::subagent`]): children on the same provider and model, at most
    /// `config.max_running` at once, their approval requests sent to this agent's
    /// [`approver`](AgentBuilder::approver), labelled.
    ///
    /// By default, none: the model has no sub-agent tools.
    pub fn sub_agents(mut self, config: SubAgentConfig) -> Self {
        self.sub_agents = Some(config);
        self
    }

    /// The agent, with a fresh system prompt for the workspace (with its `AGENTS.md`).
    ///
    /// Fails when the gate cannot be made: a permission rule that does not parse.
    pub fn build(self) -> Result<Agent, BuildError> {
        let gate = match self.gate.given {
            Some(gate) => gate,
            None => Arc::new(
                Gate::with_permissions(
                    &self.gate.permissions,
                    self.gate.mode,
                    self.tools.workspace().root(),
                    self.gate.skip_approvals,
                )
                .map_err(BuildError::Permissions)?,
            ),
        };
        let registry = self
            .registry
            .unwrap_or_else(|| Arc::new(lathe_tools::builtin()));
        let approver = self.approver.unwrap_or_else(|| Arc::new(NonInteractive));
        let sink = self
            .sink
            .unwrap_or_else(|| EventSink::detached(Arc::new(|_: &Event| {})));
        // The profile is chosen before the sub-agents get the parent's tools: a child's
        // definitions are in its parent's profile.
        let window = self
            .config
            .context_window
            .unwrap_or(u64::from(self.config.options.num_ctx));
        let profile = self.profile.unwrap_or(Profile::for_window(window));
        let registry = if registry.profile() == profile {
            registry
        } else {
            let mut in_profile = (*registry).clone();
            in_profile.use_profile(profile);
            Arc::new(in_profile)
        };
        // The session's pipeline, built once: the checkpoints' recorder first, then the hooks.
        let host = Host::builder(registry, gate)
            .checkpoints(
                self.checkpoints
                    .clone()
                    .map(|hook| hook as Arc<dyn TurnRecorder>),
            )
            .hooks(self.hooks)
            .build();
        let (host, approver, sub_agents) = match self.sub_agents {
            None => (host, approver, None),
            Some(config) => {
                // The parent and its children ask one approver, one request at a time.
                let approver: Arc<dyn Approver> = Arc::new(SerializedApprover::new(approver));
                let agents = SubAgents::new(
                    config,
                    Parent {
                        provider: Arc::clone(&self.provider),
                        config: self.config.clone(),
                        host: host.clone(),
                        approver: Arc::clone(&approver),
                        session: Arc::clone(&self.tools),
                        sink: sink.clone(),
                    },
                );
                let mut with_tools = (**host.registry()).clone();
                agents.register(&mut with_tools);
                (
                    host.with_registry(Arc::new(with_tools)),
                    approver,
                    Some(agents),
                )
            }
        };
        let runner = Arc::new(ToolRunner::with_host(host, self.tools, approver));
        let mut executor = Executor::new(self.provider, runner, sink, self.config);
        executor.set_sub_agents(sub_agents);
        executor.set_checkpoints(self.checkpoints);
        executor.set_turns_before(self.turns_before);
        Ok(Agent { executor })
    }
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("config", &self.config)
            .field("mode", &self.gate.mode)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use lathe_runtime::{ToolConfig, Workspace};
    use lathe_store::{NewSession, Store};
    use lathe_testkit::{Script, ScriptedServer, ollama};

    use super::*;
    use crate::approval::NonInteractive;
    use crate::events::{RunStatus, ToolStatus};
    use crate::executor::DEFAULT_MAX_TURNS;
    use crate::provider::{ProviderConfig, ProviderKind, RetryPolicy, Think, connect};

    const MODEL: &str = "qwen3:8b";

    struct Parts {
        dir: tempfile::TempDir,
        tools: Arc<Session>,
    }

    fn parts() -> Parts {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let tools = Session::new(
            Workspace::new(&root).unwrap(),
            ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        Parts { dir, tools }
    }

    /// A provider for `url`, failing at once rather than retrying.
    fn provider(url: &str) -> Arc<dyn Provider> {
        connect(
            ProviderKind::Ollama,
            ProviderConfig::new(url).retry(RetryPolicy::none()),
        )
        .unwrap()
    }

    /// Nothing listens there: building never talks to the server.
    const NOWHERE: &str = "http://127.0.0.1:9";

    #[test]
    fn the_defaults_are_the_documented_ones() {
        let p = parts();
        let agent = Agent::builder(provider(NOWHERE), MODEL, Arc::clone(&p.tools))
            .build()
            .unwrap();
        assert_eq!(agent.model(), MODEL);
        assert_eq!(agent.gate().mode(), ApprovalMode::Ask);
        let config = agent.executor().config();
        assert_eq!(config.max_turns, DEFAULT_MAX_TURNS);
        assert_eq!(config.max_turns, 50);
        assert_eq!(config.options, ChatOptions::default());
        assert_eq!(config.tool_protocol, ToolProtocol::Auto);
        assert_eq!(config.context_window, None);
        assert_eq!(
            config.idle_timeout,
            Some(std::time::Duration::from_secs(600))
        );
        assert_eq!(config.stream_retries, 2);
        let runner = agent.executor().runner();
        assert_eq!(runner.registry().names(), lathe_tools::builtin().names());
        assert!(Arc::ptr_eq(runner.session(), &p.tools));
        assert_eq!(agent.sink().session(), None, "nothing is stored");
    }

    #[test]
    fn each_setter_reaches_its_part() {
        let p = parts();
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path().join("sessions.sqlite3")).unwrap();
        let id = store.create_session(NewSession::default()).unwrap();
        let mut registry = lathe_tools::builtin();
        registry.retain(|d| d.name == "read_file");
        let options = ChatOptions {
            num_ctx: 8192,
            think: Think::Off,
            ..ChatOptions::default()
        };
        let agent = Agent::builder(provider(NOWHERE), MODEL, Arc::clone(&p.tools))
            .registry(Arc::new(registry))
            .approval(ApprovalMode::ReadOnly)
            .max_turns(7)
            .options(options.clone())
            .tool_protocol(ToolProtocol::Text)
            .context_window(4000)
            .idle_timeout(None)
            .stream_retries(5, std::time::Duration::from_millis(7))
            .sink(EventSink::new(store, id.clone(), Arc::new(|_: &Event| {})))
            .build()
            .unwrap();
        assert_eq!(agent.gate().mode(), ApprovalMode::ReadOnly);
        let config = agent.executor().config();
        assert_eq!(
            (
                config.max_turns,
                config.tool_protocol,
                config.context_window
            ),
            (7, ToolProtocol::Text, Some(4000))
        );
        assert_eq!(
            (
                config.idle_timeout,
                config.stream_retries,
                config.stream_retry_delay
            ),
            (None, 5, std::time::Duration::from_millis(7))
        );
        assert_eq!(config.options, options);
        assert_eq!(agent.executor().runner().registry().names(), ["read_file"]);
        assert_eq!(agent.sink().session(), Some(id));
    }

    #[test]
    fn a_given_gate_is_used_as_it_is() {
        let p = parts();
        let gate = Arc::new(Gate::new(ApprovalMode::Auto, p.tools.workspace().root()));
        let agent = Agent::builder(provider(NOWHERE), MODEL, Arc::clone(&p.tools))
            .approval(ApprovalMode::Full)
            .gate(Arc::clone(&gate))
            .build()
            .unwrap();
        assert!(Arc::ptr_eq(agent.gate(), &gate));
        assert_eq!(agent.gate().mode(), ApprovalMode::Auto);
    }

    #[test]
    fn a_permission_rule_that_does_not_parse_fails_the_build() {
        let p = parts();
        let permissions = PermissionsConfig {
            allow: vec!["shell(ls".into()],
            ..PermissionsConfig::default()
        };
        let err = Agent::builder(provider(NOWHERE), MODEL, Arc::clone(&p.tools))
            .permissions(permissions)
            .build()
            .unwrap_err();
        assert!(matches!(err, BuildError::Permissions(_)), "{err:?}");
        assert!(err.to_string().contains("shell(ls"), "{err}");
    }

    #[tokio::test]
    async fn by_default_a_call_that_would_ask_is_denied_and_not_run() {
        let script = Script::new()
            .chat(
                ollama::turn(MODEL)
                    .tool_call("write_file", json!({"path": "a.txt", "content": "x\n"}))
                    .done(),
            )
            .chat(ollama::turn(MODEL).text("I could not write it.").done());
        let server =
            ScriptedServer::start(script.ollama_models(&[MODEL], &["completion", "tools"]))
                .unwrap();
        let p = parts();
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = EventSink::detached(Arc::new(move |e: &Event| {
            let _ = tx.send(e.clone());
        }));
        let mut agent = Agent::builder(provider(&server.url()), MODEL, Arc::clone(&p.tools))
            .sink(sink)
            .build()
            .unwrap();
        let outcome = agent.run("say hello", &CancellationToken::new()).await;
        assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
        assert!(!p.dir.path().join("ws/a.txt").exists());
        let result = agent
            .executor()
            .history()
            .iter()
            .find_map(|m| match m {
                Message::Tool(result) => Some(result.content.clone()),
                _ => None,
            })
            .unwrap();
        assert!(result.contains(NonInteractive::MESSAGE), "{result}");
        // The run's events were all shown by the time it returned.
        let shown: Vec<Event> = rx.try_iter().collect();
        assert!(shown.iter().any(|e| matches!(
            e,
            Event::ToolCallFinished {
                status: ToolStatus::Denied,
                ..
            }
        )));
        assert!(matches!(shown.last(), Some(Event::RunResult(_))));
    }
}
