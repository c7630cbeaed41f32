//! lathe-config: how a Lathe process is set up from its configuration. The configuration files
//! and flags ([`config`]), trust in a workspace's own file ([`trust`]), the set-up every front
//! end starts from ([`setup::Setup`]: the workspace, the tool session, the registry), the agent's
//! set-up from it ([`agent_setup`]: provider, model, window, session lock, checkpoints), project
//! hooks and commands, the data directories ([`state`]) and the process's signals.
//!
//! The binary and `lathe-mcp` build on it; it knows no terminal (what it shows is text for a
//! front end to print, passed through [`sanitize::sanitize`] where it came from outside).

pub mod agent_setup;
mod args;
pub mod branch;
pub mod checkpoints;
pub mod config;
pub mod hooks;
pub mod lines;
pub mod mcp;
pub mod project_commands;
pub mod sanitize;
pub mod sessions;
pub mod setup;
pub mod signals;
pub mod state;
pub mod tool_calls;
pub mod trust;

pub use args::CommonArgs;

/// Exit code when the task or tool failed.
pub const EXIT_FAILURE: u8 = 1;
/// Exit code for usage or configuration errors.
pub const EXIT_USAGE: u8 = 2;
