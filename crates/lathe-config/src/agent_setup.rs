//! What `lathe exec` and `lathe chat` share: the `[model]` and `[agent]` configuration, the
//! flags that override it, and what a session needs before [`Agent::builder`] puts it together
//! (the provider, the model, the stored session, the tool session).
//!
//! Precedence: flags over environment (`OLLAMA_HOST`, `OPENAI_BASE_URL`, `LATHE_MODEL`,
//! `LATHE_PROVIDER`, `LATHE_CONTEXT_WINDOW`, `OPENAI_API_KEY`) over configuration files over
//! defaults.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use serde::Deserialize;

use lathe_agent::approval::ApprovalMode;
use lathe_agent::executor::DEFAULT_MAX_TURNS;
use lathe_agent::provider::{
    ChatOptions, DEFAULT_NUM_CTX, OllamaProvider, Provider, ProviderConfig, ProviderKind, Think,
    ToolProtocol, WindowChoice, connect,
};
use lathe_agent::subagent::{self, SubAgentConfig};
use lathe_agent::{Agent, AgentBuilder, BuildError};
use lathe_runtime::Session;
use lathe_store::{NewSession, Session as StoredSession, SessionId, SessionStatus, Store};

use crate::setup::Setup;

/// Where an Ollama server listens by default.
pub const DEFAULT_OLLAMA_URL: &str = "http://127.0.0.1:11434";
/// Where an OpenAI-compatible server (llama.cpp's `llama-server`) listens by default.
pub const DEFAULT_OPENAI_URL: &str = "http://127.0.0.1:8080/v1";
/// Longest session title kept from the first prompt.
const TITLE_CHARS: usize = 80;
/// The smallest context window Lathe accepts, in tokens: the system prompt and the tool
/// definitions take about 1,400 of them even in the compact profile, and the task, the
/// results and the reply need the rest.
pub const MIN_CONTEXT_WINDOW: u32 = 2_048;

/// The `[model]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// `ollama` or `openai`. By default, `ollama`.
    pub provider: Option<ProviderKind>,
    /// The model name.
    pub name: Option<String>,
    /// The server's base URL.
    pub base_url: Option<String>,
    /// Bearer token for OpenAI-compatible servers (`OPENAI_API_KEY` wins when set).
    pub api_key: Option<String>,
    /// Context window in tokens: sent to Ollama as `num_ctx`, and what the agent keeps the
    /// conversation within. By default, 32,768.
    pub context_window: Option<u32>,
    /// How long Ollama keeps the model loaded (`"30m"`, `"-1"`).
    pub keep_alive: Option<String>,
    /// `auto`, `off`, or an effort level (`low`, `medium`, `high`). By default, `auto`.
    pub think: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Cap on tokens generated per reply.
    pub max_tokens: Option<u32>,
    /// `auto`, `native` or `text`. By default, `auto`.
    pub tool_protocol: Option<ToolProtocol>,
    /// How long the model may stay silent (before its first token, or between two pieces of
    /// its answer) before the answer counts as cut and is asked for again: seconds or `"10m"`;
    /// 0 never. By default, 600 seconds.
    pub idle_timeout: Option<crate::config::Timeout>,
    /// How much of the system prompt and the tool definitions each request carries: `full`,
    /// `compact` (short descriptions, common parameters, optional tools on demand), or `auto`:
    /// compact for windows of 16,384 tokens and less. By default, `auto`.
    pub prompt_profile: Option<PromptProfile>,
    /// Whether the model takes images (`read_file` on a PNG, `@shot.png` in `lathe chat`).
    /// Ollama says so itself (`vision` in `/api/show`); OpenAI-compatible servers cannot, so
    /// set `true` for a vision model there (llama.cpp's server with `--mmproj`, vLLM).
    /// `false` never sends images. By default, what the server says (OpenAI: no).
    pub vision: Option<bool>,
}

/// `[model] prompt_profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptProfile {
    /// By the window.
    #[default]
    Auto,
    /// Always the full definitions.
    Full,
    /// Always the compact ones.
    Compact,
}

/// The `[agent]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The approval mode when no flag gives one. By default, `ask`.
    pub approval: Option<ApprovalMode>,
    /// The turn limit of one task. By default, 50.
    pub max_turns: Option<u32>,
    /// Record the workspace around each turn's changes, for `lathe undo` and `/undo`. By
    /// default, true.
    pub checkpoints: Option<bool>,
    /// Before the first change, create and switch to the branch `lathe/<session id>` when the
    /// workspace is a git repository with a clean tree. By default, false.
    pub git_branch: Option<bool>,
    /// How many sub-agents (`spawn_agent`) run at once; the others wait. 0 turns them off. By
    /// default, 1 (they share the model server).
    pub max_sub_agents: Option<usize>,
    /// The turn limit of one sub-agent. By default, 20.
    pub sub_agent_max_turns: Option<u32>,
}

/// Flags `exec` and `chat` share.
#[derive(Debug, Args, Clone, Default)]
pub struct ModelArgs {
    /// The model (env LATHE_MODEL, or `[model] name`).
    #[arg(long, short = 'm')]
    pub model: Option<String>,
    /// The model server's protocol: ollama or openai (any OpenAI-compatible server).
    #[arg(long, value_parser = parse_provider)]
    pub provider: Option<ProviderKind>,
    /// The model server (env OLLAMA_HOST / OPENAI_BASE_URL; default http://127.0.0.1:11434 for
    /// ollama, http://127.0.0.1:8080/v1 for openai).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// How much runs without asking: read-only, ask, auto or full (default: ask).
    #[arg(long, value_parser = parse_mode)]
    pub approval: Option<ApprovalMode>,
    /// Never ask, not even for critical commands (deny rules and read-only still refuse).
    #[arg(long)]
    pub dangerously_skip_approvals: bool,
    /// Before the first change, switch to a new branch lathe/SESSION_ID (the workspace must
    /// be a git repository with a clean tree; or `[agent] git_branch = true`).
    #[arg(long)]
    pub branch: bool,
    /// The model's context window in tokens, at least 2048 (env LATHE_CONTEXT_WINDOW, or
    /// `[model] context_window`; default 32768). A server with a smaller one is used at its own.
    #[arg(long, value_name = "TOKENS", value_parser = parse_context_window)]
    pub context_window: Option<u32>,
}

/// A context window in tokens, as `--context-window`, `LATHE_CONTEXT_WINDOW` and `[model]
/// context_window` give it: a whole number of at least [`MIN_CONTEXT_WINDOW`].
pub fn parse_context_window(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let tokens: u64 = text.replace('_', "").parse().map_err(|_| {
        format!(
            "'{}' is not a number of tokens: give the model's window as a whole number, such as \
             8192 (at least {MIN_CONTEXT_WINDOW})",
            crate::sanitize::sanitize(text)
        )
    })?;
    check_context_window(tokens)
}

/// `tokens` as a context window, or why it cannot be one.
fn check_context_window(tokens: u64) -> Result<u32, String> {
    use lathe_agent::provider::window::thousands;
    let min = thousands(u64::from(MIN_CONTEXT_WINDOW));
    match u32::try_from(tokens) {
        Ok(0) => Err(format!(
            "a window of 0 tokens holds no request: give the model's window in tokens, at least \
             {min} (such as 8192)"
        )),
        Ok(n) if n < MIN_CONTEXT_WINDOW => Err(format!(
            "a window of {n} tokens is too small: the system prompt and the tool definitions \
             alone take about 1,400 tokens (compact profile), and the task and the reply need \
             room too; give at least {min} (8,192 or more works much better)"
        )),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "a window of {} tokens is more than any model has: give the model's window in \
             tokens, such as 32768",
            thousands(tokens)
        )),
    }
}

/// `ollama` or `openai` (also `openai-compatible`), as flags and stored sessions spell them.
pub fn parse_provider(s: &str) -> Result<ProviderKind, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "ollama" => Ok(ProviderKind::Ollama),
        "openai" | "openai-compatible" => Ok(ProviderKind::OpenAi),
        other => Err(format!("unknown provider '{other}': use ollama or openai")),
    }
}

fn parse_mode(s: &str) -> Result<ApprovalMode, String> {
    s.parse()
        .map_err(|e: lathe_policy::PolicyError| e.to_string())
}

/// Everything resolved from flags, environment and configuration.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The protocol.
    pub provider: ProviderKind,
    /// The server.
    pub base_url: String,
    /// The model, when one was given.
    pub model: Option<String>,
    /// Bearer token.
    pub api_key: Option<String>,
    /// Request options.
    pub options: ChatOptions,
    /// How tools reach the model.
    pub tool_protocol: ToolProtocol,
    /// The approval mode.
    pub approval: ApprovalMode,
    /// The turn limit.
    pub max_turns: u32,
    /// Never ask (`--dangerously-skip-approvals`).
    pub skip_approvals: bool,
    /// The longest silence of the model (`[model] idle_timeout`); `None` waits for ever.
    pub idle_timeout: Option<std::time::Duration>,
    /// Whether the model takes images (`[model] vision`); `None`: what the server says.
    pub vision: Option<bool>,
    /// Keep checkpoints (`[agent] checkpoints`).
    pub checkpoints: bool,
    /// A branch per session (`--branch`, `[agent] git_branch`).
    pub git_branch: bool,
    /// Sub-agents (`[agent] max_sub_agents`, `sub_agent_max_turns`); `None` when turned off.
    pub sub_agents: Option<SubAgentConfig>,
    /// The window as configured (`--context-window`, `LATHE_CONTEXT_WINDOW`, `[model]
    /// context_window`, or the default), before the server was asked ([`Resolved::fit_window`]).
    pub configured_window: u32,
    /// Where `configured_window` came from: `--context-window`, `LATHE_CONTEXT_WINDOW`,
    /// `[model] context_window` or `the default`.
    pub window_source: &'static str,
    /// The window the server said it has, once asked.
    pub served_window: Option<u32>,
    /// The prompt profile, when one is configured (`None`: by the window).
    pub profile: Option<lathe_runtime::Profile>,
}

/// Resolves the model side from `args`, the environment (read through `env`) and `setup`.
pub fn resolve(
    setup: &Setup,
    args: &ModelArgs,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Resolved> {
    let model_config = &setup.config.model;
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    // A misspelt LATHE_PROVIDER is said, not passed over for another server.
    let env_provider = match (args.provider, env("LATHE_PROVIDER")) {
        (None, Some(text)) => Some(parse_provider(&text).map_err(|why| {
            anyhow::anyhow!(
                "LATHE_PROVIDER={}: {why}; or unset it",
                crate::sanitize::sanitize(text.trim())
            )
        })?),
        _ => None,
    };
    let provider = args
        .provider
        .or(env_provider)
        .or(model_config.provider)
        .unwrap_or(ProviderKind::Ollama);
    let env_url = match provider {
        ProviderKind::Ollama => env("OLLAMA_HOST").map(|h| OllamaProvider::base_url_from_host(&h)),
        ProviderKind::OpenAi => env("OPENAI_BASE_URL"),
    };
    let base_url = args
        .base_url
        .clone()
        .or(env_url)
        .or_else(|| model_config.base_url.clone())
        .unwrap_or_else(|| match provider {
            ProviderKind::Ollama => DEFAULT_OLLAMA_URL.to_owned(),
            ProviderKind::OpenAi => DEFAULT_OPENAI_URL.to_owned(),
        });
    let model = args
        .model
        .clone()
        .or_else(|| env("LATHE_MODEL"))
        .or_else(|| model_config.name.clone());
    let think = match model_config.think.as_deref().map(str::trim) {
        None | Some("auto") | Some("") => Think::Auto,
        Some("off") | Some("false") | Some("none") => Think::Off,
        Some(level) => Think::Level(level.to_owned()),
    };
    let (num_ctx, window_source) = if let Some(tokens) = args.context_window {
        (tokens, "--context-window")
    } else if let Some(text) = env("LATHE_CONTEXT_WINDOW") {
        let tokens = parse_context_window(&text).map_err(|why| {
            anyhow::anyhow!(
                "LATHE_CONTEXT_WINDOW={}: {why}; or unset it to use [model] context_window",
                crate::sanitize::sanitize(text.trim())
            )
        })?;
        (tokens, "LATHE_CONTEXT_WINDOW")
    } else if let Some(tokens) = model_config.context_window {
        let tokens = check_context_window(u64::from(tokens)).map_err(|why| {
            anyhow::anyhow!(
                "[model] context_window = {tokens} in the configuration: {why} (or pass \
                 --context-window TOKENS)"
            )
        })?;
        (tokens, "[model] context_window")
    } else {
        (DEFAULT_NUM_CTX, "the default")
    };
    let options = ChatOptions {
        num_ctx,
        keep_alive: model_config.keep_alive.clone(),
        think,
        temperature: model_config.temperature,
        max_tokens: model_config.max_tokens,
        ..ChatOptions::default()
    };
    Ok(Resolved {
        configured_window: options.num_ctx,
        window_source,
        served_window: None,
        profile: match model_config.prompt_profile.unwrap_or_default() {
            PromptProfile::Auto => None,
            PromptProfile::Full => Some(lathe_runtime::Profile::Full),
            PromptProfile::Compact => Some(lathe_runtime::Profile::Compact),
        },
        provider,
        base_url,
        model,
        api_key: env("OPENAI_API_KEY").or_else(|| model_config.api_key.clone()),
        options,
        tool_protocol: model_config.tool_protocol.unwrap_or_default(),
        approval: args
            .approval
            .or(setup.config.agent.approval)
            .unwrap_or(ApprovalMode::Ask),
        max_turns: setup.config.agent.max_turns.unwrap_or(DEFAULT_MAX_TURNS),
        skip_approvals: args.dangerously_skip_approvals,
        checkpoints: setup.config.agent.checkpoints.unwrap_or(true),
        git_branch: args.branch || setup.config.agent.git_branch.unwrap_or(false),
        sub_agents: match setup.config.agent.max_sub_agents {
            Some(0) => None,
            running => Some(SubAgentConfig {
                max_running: running.unwrap_or(subagent::DEFAULT_MAX_RUNNING),
                max_turns: setup
                    .config
                    .agent
                    .sub_agent_max_turns
                    .unwrap_or(subagent::DEFAULT_MAX_TURNS),
            }),
        },
        vision: model_config.vision,
        idle_timeout: match model_config.idle_timeout {
            None => Some(lathe_agent::executor::DEFAULT_IDLE_TIMEOUT),
            Some(timeout) => timeout.0,
        },
    })
}

/// The provider for `resolved`.
pub fn provider(resolved: &Resolved) -> anyhow::Result<Arc<dyn Provider>> {
    // The agent watches the model's silence itself (`[model] idle_timeout`, which says what
    // happened and retries); the client's own read timeout is only a backstop behind it.
    let backstop = resolved
        .idle_timeout
        .map(|idle| idle + std::time::Duration::from_secs(30));
    let config = ProviderConfig::new(resolved.base_url.clone())
        .api_key(resolved.api_key.clone())
        .vision(resolved.vision)
        .read_timeout(backstop);
    connect(resolved.provider, config).map_err(|e| anyhow::anyhow!("{e}"))
}

/// The model to use, or an error that says how to give one and what the server has.
pub async fn require_model(resolved: &Resolved, provider: &dyn Provider) -> anyhow::Result<String> {
    if let Some(model) = &resolved.model {
        return Ok(model.clone());
    }
    let available = match provider.list_models().await {
        Ok(models) if !models.is_empty() => format!(
            " The server at {} has: {}.",
            resolved.base_url,
            models.join(", ")
        ),
        Ok(_) => String::new(),
        // Said now, or the user gives a model only to learn that the server is not there.
        Err(err) => format!(" The server could not be asked for its models: {err}."),
    };
    anyhow::bail!(
        "no model given: pass --model NAME, set LATHE_MODEL, or set name under [model] in .lathe/config.toml.{available}"
    )
}

/// A new stored session for this workspace and model, titled after the task.
pub fn create_session(
    store: &Store,
    setup: &Setup,
    resolved: &Resolved,
    model: &str,
    title: Option<&str>,
) -> anyhow::Result<SessionId> {
    let provider = match resolved.provider {
        ProviderKind::Ollama => "ollama",
        ProviderKind::OpenAi => "openai",
    };
    let workspace = setup
        .root
        .canonicalize()
        .unwrap_or_else(|_| setup.root.clone());
    let id = store.create_session(NewSession {
        workspace,
        provider: provider.to_owned(),
        model: model.to_owned(),
        approval: resolved.approval.as_str().to_owned(),
        title: title.map(session_title).filter(|t| !t.is_empty()),
        parent: None,
        extra: serde_json::json!({"base_url": resolved.base_url}),
    })?;
    Ok(id)
}

/// The first line of a task, cut to a title.
pub fn session_title(task: &str) -> String {
    lathe_agent::text::cut(lathe_agent::text::first_line(task), TITLE_CHARS)
}

/// Where a session keeps its artifacts and saved results.
pub fn session_state_dir(id: &SessionId) -> PathBuf {
    crate::state::data_dir().join("sessions").join(id.as_str())
}

/// Held while this process runs stored session `id`: an exclusive `flock` on `owner.lock` in the
/// session's state directory, which the kernel releases however the process ends (SIGKILL
/// included), so `lathe sessions` can tell a session that is running from one whose process is
/// gone.
#[derive(Debug)]
pub struct SessionOwner {
    _file: std::fs::File,
}

/// The owner file of stored session `id`.
fn owner_path(id: &SessionId) -> PathBuf {
    session_state_dir(id).join("owner.lock")
}

/// Takes ownership of stored session `id` for this process; fails when another Lathe process
/// runs it now.
pub fn own_session(id: &SessionId) -> anyhow::Result<SessionOwner> {
    use std::os::fd::AsRawFd;
    let path = owner_path(id);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)?;
    // SAFETY: flock on a descriptor this function owns; it takes no pointers.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        anyhow::bail!(
            "session {id} is running in another Lathe process; wait for it to end, or start a new session"
        );
    }
    Ok(SessionOwner { _file: file })
}

/// Whether a process holds stored session `id` now ([`own_session`]).
pub fn session_is_owned(id: &SessionId) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(owner_path(id)) else {
        return false;
    };
    // SAFETY: as above; a shared lock that is granted is dropped with the file.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) != 0 }
}

/// A session stored as running whose process is gone (killed, or the machine went down) is
/// interrupted: said so in the store, and in what is shown.
pub fn settle(store: &Store, session: &mut StoredSession) {
    if session.status == SessionStatus::Running
        && !session_is_owned(&session.id)
        && store
            .update_session_status(&session.id, SessionStatus::Interrupted)
            .is_ok()
    {
        session.status = SessionStatus::Interrupted;
    }
}

/// The checkpoints of stored session `id` in the workspace, or `None` when they are turned off
/// (`[agent] checkpoints = false`) or cannot be kept; then a line on stderr says why, and the
/// session runs without them. A fallback that covers only the file tools says so too.
pub fn checkpoints(
    resolved: &Resolved,
    setup: &Setup,
    id: &SessionId,
) -> Option<Arc<lathe_checkpoint::Checkpoints>> {
    if !resolved.checkpoints {
        return None;
    }
    let opened = crate::state::open_store().and_then(|store| {
        lathe_checkpoint::Checkpoints::builder(
            crate::state::data_dir(),
            setup
                .root
                .canonicalize()
                .unwrap_or_else(|_| setup.root.clone()),
            id.as_str(),
        )
        .store(store)
        .build()
        .map_err(anyhow::Error::new)
    });
    match opened {
        Ok(checkpoints) => {
            if checkpoints.coverage() == lathe_checkpoint::Coverage::FileTools {
                eprintln!("lathe: {}", checkpoints.coverage().note());
            }
            Some(Arc::new(checkpoints))
        }
        Err(err) => {
            eprintln!(
                "lathe: no checkpoints for this session ({err:#}): undo will not cover its changes"
            );
            None
        }
    }
}

/// How many model turns stored session `id` had (its `turn_started` events), so that a
/// resumed session numbers its turns on.
pub fn stored_turns(store: &Store, id: &SessionId) -> u32 {
    store.events(id).map_or(0, |events| {
        let n = events.iter().filter(|e| e.kind == "turn_started").count();
        u32::try_from(n).unwrap_or(u32::MAX)
    })
}

/// The tool session for stored session `id`.
pub fn tool_session(setup: &Setup, id: &SessionId) -> anyhow::Result<Arc<Session>> {
    setup.session(session_state_dir(id))
}

impl Resolved {
    /// Asks the server what window it serves `model` with and uses the smaller of that and
    /// the configured one (`options.num_ctx`, which Ollama is sent and the agent keeps the
    /// conversation within). Returns the note to show when the server's is smaller (once per
    /// session); a server that does not say changes nothing.
    pub async fn fit_window(&mut self, provider: &dyn Provider, model: &str) -> Option<String> {
        let served = provider.served_window(model).await;
        let choice = WindowChoice::new(self.configured_window, served);
        self.served_window = choice.served;
        self.options.num_ctx = choice.window;
        choice.note()
    }

    /// The prompt profile for the window in use: `[model] prompt_profile` when it forces one,
    /// else by the window (compact up to 16,384 tokens).
    pub fn prompt_profile(&self) -> lathe_runtime::Profile {
        self.profile
            .unwrap_or(lathe_runtime::Profile::for_window(u64::from(
                self.options.num_ctx,
            )))
    }

    /// Chat's `/model NAME`: asks the server what window it serves `model` with (as
    /// [`Resolved::fit_window`]) and has `agent` use that window (Ollama is sent it as
    /// `num_ctx`), and the prompt profile for it, from the next request on. Returns the line
    /// to show when the window or the profile changed: `window now 8,192 tokens (the
    /// server's); compact tool profile`.
    pub async fn refit(
        &mut self,
        provider: &dyn Provider,
        agent: &mut Agent,
        model: &str,
    ) -> Option<String> {
        let executor = agent.executor_mut();
        let before = (
            executor.context_window(),
            executor.runner().registry().profile(),
        );
        let _ = self.fit_window(provider, model).await;
        let window = u64::from(self.options.num_ctx);
        let profile = self.prompt_profile();
        executor.set_options(self.options.clone());
        executor.set_profile(profile);
        executor.set_context_window(window);
        if before == (window, profile) {
            return None;
        }
        let source = match self.served_window {
            Some(served) if served < self.configured_window => "the server's",
            _ => self.window_source,
        };
        Some(format!(
            "window now {} tokens ({source}); {} tool profile",
            lathe_agent::provider::window::thousands(window),
            profile.as_str()
        ))
    }

    /// `builder` with what was resolved here: the approval mode (and
    /// `--dangerously-skip-approvals`), the turn limit, the request options and the tool
    /// protocol.
    pub fn configure(&self, builder: AgentBuilder) -> AgentBuilder {
        let builder = match self.sub_agents {
            Some(config) => builder.sub_agents(config),
            None => builder,
        };
        let builder = match self.profile {
            Some(profile) => builder.profile(profile),
            None => builder,
        };
        builder
            .registry(Arc::new(crate::setup::registry()))
            .approval(self.approval)
            .dangerously_skip_approvals(self.skip_approvals)
            .max_turns(self.max_turns)
            .options(self.options.clone())
            .tool_protocol(self.tool_protocol)
            .idle_timeout(self.idle_timeout)
    }

    /// `builder` with the checkpoints of stored session `id` (see [`checkpoints`]), numbering
    /// turns on from the `turns_before` the session had, and with the branch per session when
    /// it is asked for (its line goes to `sink`).
    pub fn with_checkpoints(
        &self,
        builder: AgentBuilder,
        setup: &Setup,
        id: &SessionId,
        turns_before: u32,
        sink: &lathe_agent::sink::EventSink,
    ) -> AgentBuilder {
        let mut builder = builder.turns_before(turns_before);
        if self.git_branch {
            builder = builder.hook(Arc::new(crate::branch::BranchGuard::new(
                &setup.root,
                id.as_str(),
                sink.clone(),
            )));
        }
        match checkpoints(self, setup, id) {
            Some(checkpoints) => builder.checkpoints(checkpoints),
            None => builder,
        }
    }
}

/// Builds the agent, reporting a configuration it cannot be built from.
pub fn build(builder: AgentBuilder) -> anyhow::Result<Agent> {
    builder.build().map_err(|err| match err {
        BuildError::Permissions(err) => crate::config::invalid_permissions(err),
        other => anyhow::Error::new(other),
    })
}

/// The environment as `resolve` reads it.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(toml_text: &str) -> Setup {
        let config: crate::config::Config = toml::from_str(toml_text).unwrap();
        Setup {
            root: std::env::temp_dir(),
            config,
            workspace_file: None,
        }
    }

    #[test]
    fn sub_agents_are_on_by_default_configurable_and_off_at_zero() {
        let resolve_with = |toml_text: &str| {
            resolve(&setup(toml_text), &ModelArgs::default(), |_| None)
                .unwrap()
                .sub_agents
        };
        assert_eq!(resolve_with(""), Some(SubAgentConfig::default()));
        assert_eq!(
            resolve_with("[agent]\nmax_sub_agents = 2\nsub_agent_max_turns = 5\n"),
            Some(SubAgentConfig {
                max_running: 2,
                max_turns: 5
            })
        );
        assert_eq!(resolve_with("[agent]\nmax_sub_agents = 0\n"), None);
    }

    #[test]
    fn flags_over_environment_over_files() {
        let setup = setup(
            "[model]\nname = \"file-model\"\nbase_url = \"http://file:1\"\ncontext_window = 8192\n[agent]\napproval = \"auto\"\nmax_turns = 7\n",
        );
        let none = |_: &str| None;
        let r = resolve(&setup, &ModelArgs::default(), none).unwrap();
        assert_eq!(r.model.as_deref(), Some("file-model"));
        assert_eq!(r.base_url, "http://file:1");
        assert_eq!(
            (r.approval, r.max_turns, r.options.num_ctx),
            (ApprovalMode::Auto, 7, 8192)
        );
        let env = |name: &str| match name {
            "LATHE_MODEL" => Some("env-model".to_owned()),
            "OLLAMA_HOST" => Some("0.0.0.0:1234".to_owned()),
            _ => None,
        };
        let r = resolve(&setup, &ModelArgs::default(), env).unwrap();
        assert_eq!(r.model.as_deref(), Some("env-model"));
        assert_eq!(r.base_url, "http://127.0.0.1:1234");
        let args = ModelArgs {
            model: Some("flag-model".into()),
            provider: Some(ProviderKind::OpenAi),
            base_url: Some("http://flag:2/v1".into()),
            approval: Some(ApprovalMode::ReadOnly),
            dangerously_skip_approvals: false,
            branch: false,
            context_window: None,
        };
        let r = resolve(&setup, &args, env).unwrap();
        assert_eq!(
            (r.model.as_deref(), r.base_url.as_str()),
            (Some("flag-model"), "http://flag:2/v1")
        );
        assert_eq!(
            (r.provider, r.approval),
            (ProviderKind::OpenAi, ApprovalMode::ReadOnly)
        );
    }

    #[test]
    fn the_window_comes_from_the_flag_the_environment_the_file_or_the_default() {
        let window = |toml_text: &str, flag: Option<u32>, env: Option<&str>| {
            let args = ModelArgs {
                context_window: flag,
                ..ModelArgs::default()
            };
            let env = |name: &str| {
                (name == "LATHE_CONTEXT_WINDOW")
                    .then(|| env.map(str::to_owned))
                    .flatten()
            };
            resolve(&setup(toml_text), &args, env)
                .map(|r| (r.options.num_ctx, r.configured_window, r.window_source))
                .map_err(|e| e.to_string())
        };
        let file = "[model]\ncontext_window = 8192\n";
        assert_eq!(window("", None, None), Ok((32_768, 32_768, "the default")));
        assert_eq!(
            window(file, None, None),
            Ok((8_192, 8_192, "[model] context_window"))
        );
        assert_eq!(
            window(file, None, Some("16384")),
            Ok((16_384, 16_384, "LATHE_CONTEXT_WINDOW"))
        );
        assert_eq!(
            window(file, Some(4_096), Some("16384")),
            Ok((4_096, 4_096, "--context-window"))
        );
        let err = window(file, None, Some("lots")).unwrap_err();
        assert!(
            err.starts_with("LATHE_CONTEXT_WINDOW=lots: 'lots' is not a number of tokens"),
            "{err}"
        );
        let err = window("[model]\ncontext_window = 512\n", None, None).unwrap_err();
        assert!(
            err.starts_with("[model] context_window = 512 in the configuration: a window of 512 tokens is too small")
                && err.contains("at least 2,048")
                && err.contains("--context-window"),
            "{err}"
        );
    }

    #[test]
    fn a_misspelt_provider_in_the_environment_is_an_error() {
        let env = |name: &str| (name == "LATHE_PROVIDER").then(|| "olama".to_owned());
        let err = resolve(&setup(""), &ModelArgs::default(), env).unwrap_err();
        assert_eq!(
            err.to_string(),
            "LATHE_PROVIDER=olama: unknown provider 'olama': use ollama or openai; or unset it"
        );
        let env = |name: &str| (name == "LATHE_PROVIDER").then(|| "openai".to_owned());
        let r = resolve(&setup(""), &ModelArgs::default(), env).unwrap();
        assert_eq!(r.provider, ProviderKind::OpenAi);
    }

    #[test]
    fn a_context_window_is_a_whole_number_of_at_least_the_minimum() {
        assert_eq!(parse_context_window("8192"), Ok(8_192));
        assert_eq!(parse_context_window(" 32_768 "), Ok(32_768));
        assert_eq!(parse_context_window("2048"), Ok(MIN_CONTEXT_WINDOW));
        let err = parse_context_window("0").unwrap_err();
        assert!(err.contains("0 tokens holds no request"), "{err}");
        let err = parse_context_window("2047").unwrap_err();
        assert!(
            err.contains("2047 tokens is too small") && err.contains("at least 2,048"),
            "{err}"
        );
        let err = parse_context_window("8k").unwrap_err();
        assert!(err.starts_with("'8k' is not a number of tokens"), "{err}");
        assert!(parse_context_window("-1").is_err());
        let err = parse_context_window("99999999999").unwrap_err();
        assert!(err.contains("more than any model has"), "{err}");
    }

    #[test]
    fn defaults() {
        let r = resolve(&setup(""), &ModelArgs::default(), |_| None).unwrap();
        assert_eq!(
            (r.provider, r.base_url.as_str()),
            (ProviderKind::Ollama, DEFAULT_OLLAMA_URL)
        );
        assert_eq!(
            (r.approval, r.max_turns, r.model),
            (ApprovalMode::Ask, 50, None)
        );
    }

    #[test]
    fn the_idle_timeout_is_seconds_and_zero_never() {
        let idle = |text: &str| resolve(&setup(text), &ModelArgs::default(), |_| None).unwrap();
        assert_eq!(
            idle("").idle_timeout,
            Some(std::time::Duration::from_secs(600))
        );
        assert_eq!(
            idle("[model]\nidle_timeout = 45\n").idle_timeout,
            Some(std::time::Duration::from_secs(45))
        );
        assert_eq!(
            idle("[model]\nidle_timeout = \"2m\"\n").idle_timeout,
            Some(std::time::Duration::from_secs(120))
        );
        assert_eq!(idle("[model]\nidle_timeout = 0\n").idle_timeout, None);
        let err = toml::from_str::<crate::config::Config>("[model]\nidle_timeout = \"soon\"\n")
            .unwrap_err();
        assert!(err.to_string().contains("idle_timeout"), "{err}");
        assert!(err.to_string().contains("\"10m\""), "{err}");
    }

    #[test]
    fn unknown_keys_in_the_sections_are_errors() {
        let err = toml::from_str::<crate::config::Config>("[model]\nnmae = \"x\"\n").unwrap_err();
        assert!(err.to_string().contains("nmae"), "{err}");
        assert!(toml::from_str::<crate::config::Config>("[agent]\napproval = \"yolo\"\n").is_err());
    }

    /// An agent built the way `exec` and `chat` build it, from `toml_text`.
    fn agent_from(toml_text: &str) -> anyhow::Result<Agent> {
        let setup = setup(toml_text);
        let resolved = resolve(&setup, &ModelArgs::default(), |_| None).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let tools = Session::new(
            lathe_runtime::Workspace::new(dir.path()).unwrap(),
            lathe_runtime::ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        // Building never talks to the server.
        build(
            resolved
                .configure(Agent::builder(provider(&resolved)?, "m", tools))
                .permissions(setup.config.permissions.clone()),
        )
    }

    #[test]
    fn the_resolved_settings_reach_the_agent() {
        let agent = agent_from(
            "[model]\ncontext_window = 8192\ntool_protocol = \"text\"\n[agent]\napproval = \"auto\"\nmax_turns = 7\n",
        )
        .unwrap();
        assert_eq!(agent.gate().mode(), ApprovalMode::Auto);
        let config = agent.executor().config();
        assert_eq!(
            (
                config.max_turns,
                config.options.num_ctx,
                config.tool_protocol
            ),
            (7, 8192, ToolProtocol::Text)
        );
        let agent = agent_from("").unwrap();
        assert_eq!(agent.gate().mode(), ApprovalMode::Ask);
        assert_eq!(agent.executor().config().max_turns, DEFAULT_MAX_TURNS);
    }

    #[test]
    fn an_invalid_permission_rule_is_a_configuration_error() {
        let err = agent_from("[permissions]\nallow = [\"shell(ls\"]\n").unwrap_err();
        let err = err.to_string();
        assert!(
            err.starts_with("invalid [permissions] in the configuration: ")
                && err.contains("shell(ls"),
            "{err}"
        );
    }

    #[test]
    fn titles_are_the_first_line_cut() {
        assert_eq!(
            session_title("\n  fix the build\nand more"),
            "fix the build"
        );
        assert_eq!(session_title(&"x".repeat(100)).chars().count(), 81);
    }
}
