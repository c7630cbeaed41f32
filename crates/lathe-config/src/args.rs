//! The flags every command takes, for the crates that set a process up from them.

use std::path::PathBuf;

use clap::Args;

/// Flags every command takes.
#[derive(Debug, Args, Clone)]
pub struct CommonArgs {
    /// The workspace root (default: the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A configuration file, read over the user's and the workspace's.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
}
