//! What to run and how the caller waits for it.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use crate::command::OutputObserver;
use crate::sandbox::PreparedSandbox;

/// How the caller waits for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// Wait until it ends, is cancelled, or `soft_timeout` expires (then it keeps running in the
    /// background and the call returns the output so far).
    Foreground {
        /// The caller's patience; `None` waits for the end.
        soft_timeout: Option<Duration>,
    },
    /// Return at once with the command's id.
    Background,
}

/// What to run and how.
#[derive(Clone)]
pub struct CommandSpec {
    /// The shell command line (`bash -c COMMAND`).
    pub command: String,
    /// The working directory (absolute; the caller checks it is allowed).
    pub cwd: PathBuf,
    /// How the caller waits.
    pub launch: Launch,
    /// The Landlock sandbox to run it in, if any; the result header says "sandboxed" when set.
    pub sandbox: Option<PreparedSandbox>,
    /// Called with each chunk of output as it arrives.
    pub on_output: Option<OutputObserver>,
}

impl fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandSpec")
            .field("command", &self.command)
            .field("cwd", &self.cwd)
            .field("launch", &self.launch)
            .field("sandbox", &self.sandbox.is_some())
            .field("on_output", &self.on_output.is_some())
            .finish()
    }
}

impl CommandSpec {
    /// A foreground command without a timeout, unsandboxed.
    pub fn new(command: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        CommandSpec {
            command: command.into(),
            cwd: cwd.into(),
            launch: Launch::Foreground { soft_timeout: None },
            sandbox: None,
            on_output: None,
        }
    }

    /// Waits at most `timeout`, then leaves the command running in the background.
    pub fn soft_timeout(mut self, timeout: Duration) -> Self {
        self.launch = Launch::Foreground {
            soft_timeout: Some(timeout),
        };
        self
    }

    /// Starts the command in the background.
    pub fn background(mut self) -> Self {
        self.launch = Launch::Background;
        self
    }

    /// Runs the command in `sandbox`.
    pub fn sandbox(mut self, sandbox: PreparedSandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Calls `observer` with each chunk of output.
    pub fn on_output(mut self, observer: OutputObserver) -> Self {
        self.on_output = Some(observer);
        self
    }
}
