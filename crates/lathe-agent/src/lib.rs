//! Lathe's agent: model providers, the stream processor, tool-call parsing and repair.
//!
//! One turn, as data: the executor builds a [`provider::ChatRequest`]; a [`provider::Provider`]
//! (from [`provider::connect`]) streams [`provider::Chunk`]s; [`stream::collect_turn`] runs
//! them through the [`stream::StreamProcessor`], which accumulates text, thinking and tool calls
//! (native, or recovered from the text by the [`parser`]) and emits [`events::Event`]s. The
//! resulting [`stream::AssistantTurn`] goes back into the history as a [`message::Message`].
//! The [`executor::Executor`] loops over turns; its [`runner::ToolRunner`] runs each turn's
//! calls past the [`approval::Gate`] and an [`approval::Approver`]; every step is an event that
//! the [`sink::EventSink`] stores and then shows, through one writer thread. With
//! [`AgentBuilder::sub_agents`], the model can hand tasks to child agents ([`subagent`]).
//!
//! # Putting an agent together
//!
//! [`Agent::builder`] takes what has no default (the provider, the model, the tool session)
//! and has a setter, which says its default, for everything else: the tools (built-in), the
//! approval mode (`ask`), permission rules (none), the approver (denies what would ask), the
//! event sink (nothing stored or shown), the turn limit (50), request options and the tool
//! protocol.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use lathe_agent::Agent;
//! use lathe_agent::approval::ApprovalMode;
//! use lathe_agent::events::Event;
//! use lathe_agent::provider::{ProviderConfig, ProviderKind, connect};
//! use lathe_agent::sink::EventSink;
//! use lathe_store::{NewSession, Store};
//! use lathe_runtime::{Session, ToolConfig, Workspace};
//! use tokio_util::sync::CancellationToken;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let provider = connect(ProviderKind::Ollama, ProviderConfig::new("http://127.0.0.1:11434"))?;
//! let root = "/home/me/project";
//! let tools = Session::new(Workspace::new(root)?, ToolConfig::default(), "/tmp/lathe-state".into())?;
//! // Events are stored in a session of the database, then printed.
//! let store = Store::open("/tmp/lathe/sessions.sqlite3")?;
//! let id = store.create_session(NewSession {
//!     workspace: root.into(),
//!     provider: "ollama".into(),
//!     model: "qwen3:8b".into(),
//!     approval: "auto".into(),
//!     ..NewSession::default()
//! })?;
//! let sink = EventSink::new(store, id, Arc::new(|event: &Event| println!("{event:?}")));
//!
//! let mut agent = Agent::builder(provider, "qwen3:8b", tools)
//!     .approval(ApprovalMode::Auto)
//!     .max_turns(20)
//!     .sink(sink)
//!     .build()?;
//! let outcome = agent.run("make the failing test pass", &CancellationToken::new()).await;
//! println!("{:?} after {} turns: {}", outcome.status, outcome.turns, outcome.answer);
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod agent;
pub mod approval;
pub mod attach;
mod context;
pub mod events;
pub mod executor;
pub mod init;
pub mod message;
pub mod parser;
mod prompt;
pub mod provider;
pub mod runner;
pub mod sink;
pub mod stored;
pub mod stream;
pub mod subagent;
pub mod text;

pub use context::ContextWindow;
pub use prompt::{
    FALLBACK_INSTRUCTIONS_FILE, PROJECT_INSTRUCTIONS_FILE, ProjectMemory, PromptInputs,
    gather_instructions, load_memory, system_prompt, system_prompt_for, user_config_dir,
};

pub use agent::{Agent, AgentBuilder, BuildError};
