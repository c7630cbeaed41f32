//! Lathe's tool runtime: the typed tool contract, the registry that erases it once, workspace
//! containment, and the built-in tools. No model, no HTTP, no terminal.
//!
//! ```
//! use lathe_tools::{Registry, Session, ToolConfig, ToolContext, Workspace};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # std::fs::write(dir.path().join("hello.txt"), "hi\n").unwrap();
//! let workspace = Workspace::new(dir.path()).unwrap();
//! let session = Session::new(workspace, ToolConfig::default(), dir.path().join(".state")).unwrap();
//! let registry = Registry::builtin();
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! let output = runtime.block_on(registry.call(
//!     "no_such_tool",
//!     serde_json::json!({}),
//!     ToolContext::new(session),
//! ));
//! assert!(output.is_error);
//! ```
#![deny(missing_docs)]
#![allow(
    clippy::result_large_err,
    reason = "a ToolOutput is the result the model reads, returned by value from every step of \
              a call; boxing it would put a Box in every tool's signature to save a move"
)]

pub mod args;
pub mod budget;
pub mod dispatch;
pub mod meta;
pub mod registry;
pub mod schema;
pub mod session;
pub mod tool;
pub mod tools;
pub mod watch;
pub mod workspace;

pub use dispatch::{
    ApprovalDecision, ApprovalRequest, Approver, Authorized, CallInfo, CallStatus, Dispatcher,
    FixedAnswer, Gate, Hook, NonInteractive, Outcome, Refuse, Verdict,
};
pub use meta::{CommandMeta, CommandState, FileChange, LineRange, Metadata};
pub use registry::{BoundCall, DynTool, PreparedCall, Registry, RegistryError, ToolDefinition};
pub use session::{Session, ToolConfig};
pub use tool::{
    Effect, Plan, PlannedWrite, ProgressSink, Tool, ToolContext, ToolHints, ToolKind, ToolOutput,
    ToolProgress,
};
pub use workspace::{Access, PathError, ResolvedPath, Workspace};
