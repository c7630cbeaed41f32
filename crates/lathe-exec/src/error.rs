//! The crate's error type.

use std::io;
use std::path::PathBuf;

use crate::command::CommandId;
use crate::sandbox::SandboxError;

/// What can go wrong when supervising commands.
///
/// The variants a caller can fix by asking differently ([`EmptyCommand`](Self::EmptyCommand),
/// [`TooManyRunning`](Self::TooManyRunning), [`UnknownCommand`](Self::UnknownCommand),
/// [`Cwd`](Self::Cwd), [`ShutDown`](Self::ShutDown)) carry the fields a caller needs to say
/// what to do instead; their messages only say what happened. The others are faults of the
/// machine.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The command was empty or only whitespace.
    #[error("the command is empty")]
    EmptyCommand,
    /// The limit of commands running at once was reached.
    #[error("{running} commands are already running, the most allowed at once is {limit}")]
    TooManyRunning {
        /// The most commands allowed to run at once.
        limit: usize,
        /// How many are running.
        running: usize,
    },
    /// No command with this id exists in this session.
    #[error("there is no command '{id}' in this session")]
    UnknownCommand {
        /// The id as given.
        id: String,
    },
    /// The working directory does not exist or is not a directory.
    #[error("cannot run in '{}': {reason}", .path.display())]
    Cwd {
        /// The directory.
        path: PathBuf,
        /// Why it cannot be used.
        reason: String,
    },
    /// The supervisor was shut down and runs nothing more.
    #[error("the session has ended: no more commands can be started")]
    ShutDown,
    /// The state directory for artifacts could not be created or read.
    #[error("cannot use the state directory '{}': {source}", .path.display())]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The shell could not be started.
    #[error("cannot start '{}' for command '{command}': {source}", .shell.display())]
    Spawn {
        /// The shell binary.
        shell: PathBuf,
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Setting up the output pipe or the reader failed.
    #[error("cannot set up the output capture for '{command}': {source}")]
    Capture {
        /// The command line.
        command: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// A command's artifact could not be read.
    #[error("cannot read the output of command {id} from '{}': {source}", .path.display())]
    Artifact {
        /// The command.
        id: CommandId,
        /// The artifact file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The sandbox could not be prepared or applied.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    /// A background task of the supervisor failed (panicked or was cancelled).
    #[error("internal error in the command supervisor: {0}")]
    Internal(String),
}
