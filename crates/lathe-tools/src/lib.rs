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
// Preparing, planning and dispatching a call return the model's answer (a `ToolOutput`) when the
// call cannot go on: it is a result to hand on, not an error to propagate cheaply, and the `Ok`
// sides (a `Plan`, which holds a `ToolOutput` itself, a `PreparedCall`) are as large. Boxing it
// would only add an allocation to every refusal.
#![allow(clippy::result_large_err)]

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
    ApprovalDecision, ApprovalRequest, Approver, CallStatus, Dispatcher, Gate, Hook, Outcome,
    Verdict,
};
pub use meta::{CommandMeta, CommandState, FileChange, LineRange, Metadata};
pub use registry::{BoundCall, DynTool, PreparedCall, Registry, RegistryError, ToolDefinition};
pub use session::{Session, ToolConfig};
pub use tool::{
    Effect, Plan, PlannedWrite, ProgressSink, Tool, ToolContext, ToolHints, ToolKind, ToolOutput,
    ToolProgress,
};
pub use workspace::{Access, PathError, ResolvedPath, Workspace};
