//! The agent test harness: a temporary workspace, the scripted model server, the tool session,
//! a real SQLite store with the session's row, and an agent put together by [`Agent::builder`]
//! whose events are captured; [`Harness`] says how, [`Run`] is what it made.
//!
//! ```ignore
//! let mut run = Harness::new()
//!     .script(Script::new().chat(reply().text("Hi.").done()))
//!     .tools(cat())
//!     .file("notes.txt", "hello\n")
//!     .config(|c| c.max_turns = 2)
//!     .start();
//! let outcome = run.agent.run("say hi", &CancellationToken::new()).await;
//! assert_eq!(run.events().len(), 12);
//! ```
//!
//! By default: Ollama's wire with [`MODEL`] listed as `completion` and `tools`, no retries, the
//! built-in tools, `auto` mode, the builder's defaults for the rest (its profile chosen by the
//! window), and a sink that stores in the session's row and captures every event.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use lathe_agent::Agent;
use lathe_agent::approval::{ApprovalMode, Approver};
use lathe_agent::events::Event;
use lathe_agent::executor::ExecutorConfig;
use lathe_agent::message::Message;
use lathe_agent::provider::{Provider, ProviderConfig, ProviderKind, RetryPolicy, connect};
use lathe_agent::runner::ToolRunner;
use lathe_agent::sink::{EventHandler, EventSink};
use lathe_agent::subagent::SubAgentConfig;
use lathe_checkpoint::Checkpoints;
use lathe_runtime::{Hook, Profile, Registry, Session, ToolConfig, Workspace};
use lathe_store::{NewSession, SessionId, Store};
use lathe_testkit::{Response, Script, ScriptedServer, ollama, openai};

/// The model every script answers as, unless a harness names another.
pub const MODEL: &str = "qwen3:8b";

/// Every event an agent showed, in order.
pub type Events = Arc<Mutex<Vec<Event>>>;

/// One streamed Ollama reply of [`MODEL`].
pub fn reply() -> ollama::OllamaTurn {
    ollama::turn(MODEL)
}

/// A turn that calls `name` with `arguments`, in `kind`'s wire format (an OpenAI-compatible
/// server gives the call the id `id`; Ollama's wire gives none).
pub fn call(kind: ProviderKind, id: &str, name: &str, arguments: Value) -> Response {
    match kind {
        ProviderKind::Ollama => reply().tool_call(name, arguments).done(),
        ProviderKind::OpenAi => calls(kind, &[(id, name, arguments)]),
    }
}

/// A turn that makes every call of `calls` (id, name, arguments), in `kind`'s wire format.
pub fn calls(kind: ProviderKind, calls: &[(&str, &str, Value)]) -> Response {
    match kind {
        ProviderKind::Ollama => {
            let calls: Vec<(Option<&str>, &str, Value)> = calls
                .iter()
                .map(|(_, name, args)| (None, *name, args.clone()))
                .collect();
            reply().tool_calls(&calls).done()
        }
        ProviderKind::OpenAi => {
            let mut turn = openai::turn(MODEL);
            for (i, (id, name, args)) in calls.iter().enumerate() {
                turn = turn.tool_call(i, id, name, &[&args.to_string()]);
            }
            turn.finish("tool_calls").done()
        }
    }
}

/// A turn that says `text`, in `kind`'s wire format.
pub fn text(kind: ProviderKind, text: &str) -> Response {
    match kind {
        ProviderKind::Ollama => reply().text(text).done(),
        ProviderKind::OpenAi => openai::turn(MODEL).text(text).finish("stop").done(),
    }
}

/// A tool session over the workspace at `root`, its state in `state`.
pub fn tool_session(root: &Path, state: &Path, config: ToolConfig) -> Arc<Session> {
    Session::new(Workspace::new(root).unwrap(), config, state.to_path_buf()).unwrap()
}

/// What [`Harness::wrap_provider`] is given.
type WrapProvider = Box<dyn FnOnce(Arc<dyn Provider>) -> Arc<dyn Provider>>;

/// What a harness carries over to [`Run::again`].
#[derive(Clone)]
struct Settings {
    kind: ProviderKind,
    capabilities: Vec<String>,
    retry: RetryPolicy,
    api_key: Option<String>,
    vision: Option<bool>,
    tool_config: ToolConfig,
    registry: Option<Arc<Registry>>,
    config: ExecutorConfig,
    profile: Option<Profile>,
    approval: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    hooks: Vec<Arc<dyn Hook>>,
    sub_agents: Option<SubAgentConfig>,
    checkpoints: bool,
    turns_before: u32,
    stored: bool,
    on_event: Option<EventHandler>,
    ui: Option<EventHandler>,
}

/// What a run shares with the one it goes on from ([`Run::again`]).
struct Shared {
    dir: Arc<tempfile::TempDir>,
    root: PathBuf,
    server: Arc<ScriptedServer>,
    store: Store,
    session: SessionId,
    tools: Arc<Session>,
    checkpoints: Option<Arc<Checkpoints>>,
}

/// How to put an agent together for a test; [`Harness::start`] does it.
#[must_use = "a harness does nothing until `start` is called"]
pub struct Harness {
    settings: Settings,
    /// The script, and whether it is served as it is (without the harness's model listing).
    script: Option<(Script, bool)>,
    files: Vec<(String, Vec<u8>)>,
    events: Option<Events>,
    wrap: Option<WrapProvider>,
    from: Option<Shared>,
    state: Option<String>,
}

impl Harness {
    /// The defaults (see the module's documentation), and an empty script: every chat request
    /// is answered 500.
    pub fn new() -> Self {
        Harness {
            settings: Settings {
                kind: ProviderKind::Ollama,
                capabilities: vec!["completion".into(), "tools".into()],
                retry: RetryPolicy::none(),
                api_key: None,
                vision: None,
                tool_config: ToolConfig::default(),
                registry: None,
                config: ExecutorConfig::new(MODEL),
                profile: None,
                approval: ApprovalMode::Auto,
                approver: None,
                hooks: Vec::new(),
                sub_agents: None,
                checkpoints: false,
                turns_before: 0,
                stored: true,
                on_event: None,
                ui: None,
            },
            script: None,
            files: Vec::new(),
            events: None,
            wrap: None,
            from: None,
            state: None,
        }
    }

    /// What the model server plays; the harness lists the model for the wire (Ollama's
    /// `/api/tags` and `/api/show` with the [capabilities](Harness::capabilities), or
    /// `/v1/models`).
    pub fn script(mut self, script: Script) -> Self {
        self.script = Some((script, false));
        self
    }

    /// What the model server plays, served as it is: the script lists the models itself (or
    /// lists none).
    pub fn bare_script(mut self, script: Script) -> Self {
        self.script = Some((script, true));
        self
    }

    /// The wire format the server speaks and the provider asks in. By default, Ollama's.
    pub fn kind(mut self, kind: ProviderKind) -> Self {
        self.settings.kind = kind;
        self
    }

    /// The model asked for (and listed). By default, [`MODEL`].
    pub fn model(mut self, model: &str) -> Self {
        self.settings.config.model = model.to_owned();
        self
    }

    /// The provider's retries of transient failures. By default, none.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.settings.retry = retry;
        self
    }

    /// The provider's API key. By default, none.
    pub fn api_key(mut self, key: &str) -> Self {
        self.settings.api_key = Some(key.to_owned());
        self
    }

    /// The provider's `vision` setting. By default, `None`.
    pub fn vision(mut self, vision: Option<bool>) -> Self {
        self.settings.vision = vision;
        self
    }

    /// Wraps the provider the harness connects (to time it, say).
    #[allow(dead_code, reason = "the benches' (a module of each)")]
    pub fn wrap_provider(
        mut self,
        wrap: impl FnOnce(Arc<dyn Provider>) -> Arc<dyn Provider> + 'static,
    ) -> Self {
        self.wrap = Some(Box::new(wrap));
        self
    }

    /// The tools the model may call. By default, the built-in ones.
    pub fn tools(mut self, registry: Registry) -> Self {
        self.settings.registry = Some(Arc::new(registry));
        self
    }

    /// The tool session's configuration. By default, [`ToolConfig::default`].
    pub fn tool_config(mut self, config: ToolConfig) -> Self {
        self.settings.tool_config = config;
        self
    }

    /// Changes the executor's configuration (limits, options, protocol, window, timeouts),
    /// which the builder's setters pass on.
    pub fn config(mut self, configure: impl FnOnce(&mut ExecutorConfig)) -> Self {
        configure(&mut self.settings.config);
        self
    }

    /// The model's window: the context window and the `num_ctx` sent.
    pub fn window(self, tokens: u64) -> Self {
        self.config(|c| {
            c.context_window = Some(tokens);
            c.options.num_ctx = u32::try_from(tokens).unwrap();
        })
    }

    /// The prompt profile. By default, the builder's choice by the window.
    pub fn profile(mut self, profile: Profile) -> Self {
        self.settings.profile = Some(profile);
        self
    }

    /// The approval mode. By default, `auto`.
    pub fn approval(mut self, mode: ApprovalMode) -> Self {
        self.settings.approval = mode;
        self
    }

    /// Who answers the gate. By default, the builder's (nobody: every ask is denied).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.settings.approver = Some(approver);
        self
    }

    /// A hook around every call.
    pub fn hook(mut self, hook: Arc<dyn Hook>) -> Self {
        self.settings.hooks.push(hook);
        self
    }

    /// Lets the model start sub-agents.
    pub fn sub_agents(mut self, config: SubAgentConfig) -> Self {
        self.settings.sub_agents = Some(config);
        self
    }

    /// Keeps checkpoints of the workspace (in the data directory, as session `s1`).
    pub fn checkpoints(mut self) -> Self {
        self.settings.checkpoints = true;
        self
    }

    /// Model turns the session had before.
    pub fn turns_before(mut self, turns: u32) -> Self {
        self.settings.turns_before = turns;
        self
    }

    /// A sink that stores nothing (the session's row stays empty); events are still captured.
    pub fn detached(mut self) -> Self {
        self.settings.stored = false;
        self
    }

    /// Also sees each event as it is shown, before it is captured.
    pub fn on_event(mut self, on_event: impl Fn(&Event) + Send + Sync + 'static) -> Self {
        self.settings.on_event = Some(Arc::new(on_event));
        self
    }

    /// Shows the events with `ui` instead of capturing them.
    #[allow(dead_code, reason = "the benches' (a module of each)")]
    pub fn ui(mut self, ui: EventHandler) -> Self {
        self.settings.ui = Some(ui);
        self
    }

    /// Captures the events into `events` (a list the test made first, for an approver to read).
    pub fn events(mut self, events: Events) -> Self {
        self.events = Some(events);
        self
    }

    /// A workspace file written before the agent is built (its directories made).
    pub fn file(mut self, path: &str, content: impl AsRef<[u8]>) -> Self {
        self.files
            .push((path.to_owned(), content.as_ref().to_vec()));
        self
    }

    /// (With [`Run::again`]) a new tool session, its state in `state` under the temporary
    /// directory: another process, rather than the same one going on.
    pub fn new_tool_session(mut self, state: &str) -> Self {
        self.state = Some(state.to_owned());
        self
    }

    /// Puts it all together.
    pub fn start(self) -> Run {
        let Harness {
            settings,
            script,
            files,
            events,
            wrap,
            from,
            state,
        } = self;
        let serve = |script: Option<(Script, bool)>| {
            let (script, bare) = script.unwrap_or((Script::new(), false));
            let model = settings.config.model.as_str();
            let script = match (bare, settings.kind) {
                (true, _) => script,
                (false, ProviderKind::Ollama) => {
                    let capabilities: Vec<&str> =
                        settings.capabilities.iter().map(String::as_str).collect();
                    script.ollama_models(&[model], &capabilities)
                }
                (false, ProviderKind::OpenAi) => script.openai_models(&[model]),
            };
            Arc::new(ScriptedServer::start(script).unwrap())
        };
        let shared = match from {
            Some(mut shared) => {
                if script.is_some() {
                    shared.server = serve(script);
                }
                if let Some(state) = state {
                    shared.tools = tool_session(
                        &shared.root,
                        &shared.dir.path().join(state),
                        settings.tool_config.clone(),
                    );
                }
                shared
            }
            None => {
                let dir = tempfile::tempdir().unwrap();
                let root = dir.path().join("ws");
                std::fs::create_dir(&root).unwrap();
                for (path, content) in &files {
                    let path = root.join(path);
                    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                    std::fs::write(path, content).unwrap();
                }
                let server = serve(script);
                let state = dir.path().join(state.as_deref().unwrap_or("state"));
                let tools = tool_session(&root, &state, settings.tool_config.clone());
                let store = Store::open(dir.path().join("db/sessions.sqlite3")).unwrap();
                let session = store
                    .create_session(NewSession {
                        workspace: root.clone(),
                        provider: "scripted".into(),
                        model: settings.config.model.clone(),
                        approval: settings.approval.to_string(),
                        ..NewSession::default()
                    })
                    .unwrap();
                let checkpoints = settings.checkpoints.then(|| {
                    Arc::new(
                        Checkpoints::builder(dir.path().join("data"), &root, "s1")
                            .build()
                            .unwrap(),
                    )
                });
                Shared {
                    dir: Arc::new(dir),
                    root,
                    server,
                    store,
                    session,
                    tools,
                    checkpoints,
                }
            }
        };
        let provider = connect(
            settings.kind,
            ProviderConfig::new(shared.server.url())
                .retry(settings.retry)
                .api_key(settings.api_key.clone())
                .vision(settings.vision),
        )
        .unwrap();
        let provider = match wrap {
            Some(wrap) => wrap(provider),
            None => provider,
        };
        let events = events.unwrap_or_default();
        let handler: EventHandler = match (&settings.ui, &settings.on_event) {
            (Some(ui), _) => Arc::clone(ui),
            (None, on_event) => {
                let seen = Arc::clone(&events);
                let on_event = on_event.clone();
                Arc::new(move |e: &Event| {
                    if let Some(on_event) = &on_event {
                        on_event(e);
                    }
                    seen.lock().unwrap().push(e.clone());
                })
            }
        };
        let sink = if settings.stored {
            EventSink::new(shared.store.clone(), shared.session.clone(), handler)
        } else {
            EventSink::detached(handler)
        };
        let config = &settings.config;
        let mut builder = Agent::builder(provider, config.model.clone(), Arc::clone(&shared.tools))
            .approval(settings.approval)
            .max_turns(config.max_turns)
            .options(config.options.clone())
            .tool_protocol(config.tool_protocol)
            .idle_timeout(config.idle_timeout)
            .waiting_every(config.waiting_every)
            .stream_retries(config.stream_retries, config.stream_retry_delay)
            .turns_before(settings.turns_before)
            .sink(sink);
        if let Some(window) = config.context_window {
            builder = builder.context_window(window);
        }
        if let Some(registry) = &settings.registry {
            builder = builder.registry(Arc::clone(registry));
        }
        if let Some(profile) = settings.profile {
            builder = builder.profile(profile);
        }
        if let Some(approver) = &settings.approver {
            builder = builder.approver(Arc::clone(approver));
        }
        for hook in &settings.hooks {
            builder = builder.hook(Arc::clone(hook));
        }
        if let Some(config) = settings.sub_agents {
            builder = builder.sub_agents(config);
        }
        if let Some(checkpoints) = &shared.checkpoints {
            builder = builder.checkpoints(Arc::clone(checkpoints));
        }
        Run {
            agent: builder.build().unwrap(),
            dir: shared.dir,
            root: shared.root,
            server: shared.server,
            store: shared.store,
            session: shared.session,
            tools: shared.tools,
            checkpoints: shared.checkpoints,
            events,
            settings,
        }
    }
}

/// An agent a [`Harness`] put together, with what it runs in and against.
pub struct Run {
    /// The temporary directory: the workspace `ws`, the tool state `state`, the store `db`,
    /// the checkpoints `data`.
    pub dir: Arc<tempfile::TempDir>,
    /// The workspace.
    pub root: PathBuf,
    pub server: Arc<ScriptedServer>,
    pub store: Store,
    /// The session's row in the store.
    pub session: SessionId,
    /// The events shown so far.
    pub events: Events,
    pub agent: Agent,
    pub tools: Arc<Session>,
    checkpoints: Option<Arc<Checkpoints>>,
    settings: Settings,
}

impl Run {
    /// The events shown so far.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// The notices shown so far.
    pub fn notices(&self) -> Vec<String> {
        super::notices(&self.events())
    }

    /// The text the user saw.
    pub fn shown(&self) -> String {
        super::shown(&self.events())
    }

    /// The messages of chat request `request` as the server received them.
    pub fn messages(&self, request: usize) -> Vec<Value> {
        self.server.chat_bodies()[request]["messages"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// The agent's conversation.
    pub fn history(&self) -> &[Message] {
        self.agent.executor().history()
    }

    /// The agent's tool runner.
    pub fn runner(&self) -> &Arc<ToolRunner> {
        self.agent.executor().runner()
    }

    /// The session's checkpoints: the agent's, or (when it keeps none) those the harness would
    /// have given it, opened now.
    pub fn checkpoints(&self) -> Arc<Checkpoints> {
        self.checkpoints.clone().unwrap_or_else(|| {
            Arc::new(
                Checkpoints::builder(self.dir.path().join("data"), &self.root, "s1")
                    .build()
                    .unwrap(),
            )
        })
    }

    /// A workspace file's text, if it is there.
    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path)).ok()
    }

    /// A harness for another agent on this run's parts, set up as this one: the same
    /// workspace, server, store row, tool session and checkpoints (each of which the harness
    /// may replace: [`script`](Harness::script) starts another server,
    /// [`new_tool_session`](Harness::new_tool_session) opens another tool session), its events
    /// captured anew. It goes on with the stored conversation only when the test resumes it.
    pub fn again(&self) -> Harness {
        let mut harness = Harness::new();
        harness.settings = self.settings.clone();
        harness.from = Some(Shared {
            dir: Arc::clone(&self.dir),
            root: self.root.clone(),
            server: Arc::clone(&self.server),
            store: self.store.clone(),
            session: self.session.clone(),
            tools: Arc::clone(&self.tools),
            checkpoints: self.checkpoints.clone(),
        });
        harness
    }
}
