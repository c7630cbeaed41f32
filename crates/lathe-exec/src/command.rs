//! One supervised command: its id, status, and the task that watches it to the end.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::capture::Capture;
use crate::error::ExecError;
use crate::lineage::{self, Filter};
use crate::procfs::TagMatch;
use crate::reader::ReaderHandle;
use crate::tree::{self, TreeTarget};

/// Grandchildren may hold the output pipe open after the shell exits (`sleep 100 &`). The
/// reader stops waiting for them as soon as the pipe is empty (see `reader`), so this bound
/// only matters when a leftover process writes without pause: past it the command is reported
/// finished and the reader keeps filling the artifact in the background.
pub const DRAIN_BOUND: Duration = Duration::from_secs(2);

/// A command's number in its session (1, 2, ...). Its artifact is `cmd-<id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CommandId(pub u64);

impl CommandId {
    /// The artifact's file name in the session's state directory.
    pub fn artifact_name(&self) -> String {
        format!("cmd-{}", self.0)
    }
}

impl fmt::Display for CommandId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for CommandId {
    type Err = ExecError;

    /// Accepts `3`, `cmd-3` and `#3`; anything else (a path, say) is an unknown command.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        let digits = trimmed
            .strip_prefix("cmd-")
            .or_else(|| trimmed.strip_prefix('#'))
            .unwrap_or(trimmed);
        match digits.parse::<u64>() {
            Ok(n) if digits.bytes().all(|b| b.is_ascii_digit()) => Ok(CommandId(n)),
            _ => Err(ExecError::UnknownCommand { id: s.to_owned() }),
        }
    }
}

/// Why the supervisor killed a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// A caller asked for it ([`Supervisor::kill`](crate::Supervisor::kill)).
    Requested,
    /// The caller cancelled the foreground call: "aborted by user".
    Cancelled,
    /// The session ended.
    Shutdown,
}

/// Where a command is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandStatus {
    /// Still running.
    Running,
    /// Exited by itself with this code.
    Exited {
        /// The exit code.
        code: i32,
    },
    /// Died from a signal the supervisor did not send.
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// Killed by the supervisor.
    Killed {
        /// Why.
        reason: KillReason,
    },
    /// Killed because it ran past the configured hard limit
    /// ([`SupervisorBuilder::command_timeout`](crate::SupervisorBuilder::command_timeout)), or
    /// past its own [`PipedSpec::timeout`](crate::PipedSpec::timeout).
    TimedOut {
        /// The limit.
        limit: Duration,
    },
}

impl CommandStatus {
    /// Whether the command is still running.
    pub fn is_running(&self) -> bool {
        matches!(self, CommandStatus::Running)
    }

    /// A short label for lists: `running`, `exited (0)`, `killed`, `timed out`, ...
    pub fn label(&self) -> String {
        match self {
            CommandStatus::Running => "running".to_owned(),
            CommandStatus::Exited { code } => format!("exited ({code})"),
            CommandStatus::Signaled { signal } => format!("died ({})", signal_name(*signal)),
            CommandStatus::Killed {
                reason: KillReason::Cancelled,
            } => "killed (aborted by user)".to_owned(),
            CommandStatus::Killed {
                reason: KillReason::Shutdown,
            } => "killed (session ended)".to_owned(),
            CommandStatus::Killed { .. } => "killed".to_owned(),
            CommandStatus::TimedOut { .. } => "timed out".to_owned(),
        }
    }
}

impl fmt::Display for CommandStatus {
    /// The status in neutral words: `exit code 0`, `killed by signal 9 (SIGKILL)`, `killed on
    /// request`, `aborted by user`, ... (a caller that names its own ways of killing words the
    /// status itself).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandStatus::Running => f.write_str("still running"),
            CommandStatus::Exited { code } => write!(f, "exit code {code}"),
            CommandStatus::Signaled { signal } => {
                write!(f, "killed by signal {signal} ({})", signal_name(*signal))
            }
            CommandStatus::Killed {
                reason: KillReason::Requested,
            } => f.write_str("killed on request"),
            CommandStatus::Killed {
                reason: KillReason::Cancelled,
            } => f.write_str("aborted by user"),
            CommandStatus::Killed {
                reason: KillReason::Shutdown,
            } => f.write_str("killed at the end of the session"),
            CommandStatus::TimedOut { limit } => write!(
                f,
                "killed: ran past the hard limit of {}",
                crate::report::format_duration(*limit)
            ),
        }
    }
}

fn signal_name(signal: i32) -> &'static str {
    nix::sys::signal::Signal::try_from(signal).map_or("unknown signal", |s| s.as_str())
}

/// A piece of output as it arrives, for live display or progress notifications.
#[derive(Debug, Clone, Copy)]
pub struct OutputDelta<'a> {
    /// The command.
    pub id: CommandId,
    /// The raw bytes just read (stdout and stderr interleaved).
    pub bytes: &'a [u8],
    /// All bytes printed so far, these included.
    pub total_bytes: u64,
}

/// Called on the reader thread for each chunk of output: must return quickly (hand the bytes to
/// a channel, or coalesce them); a slow observer slows the command down.
pub type OutputObserver = Arc<dyn Fn(OutputDelta<'_>) + Send + Sync>;

/// Locks a mutex, recovering from poisoning: a panic elsewhere must not wedge the supervisor.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Debug)]
struct EntryState {
    status: CommandStatus,
    finished: Option<Instant>,
    kill_reason: Option<KillReason>,
}

/// The supervisor's record of one command.
pub(crate) struct CommandEntry {
    pub(crate) id: CommandId,
    pub(crate) command: String,
    pub(crate) started: Instant,
    pub(crate) artifact_path: PathBuf,
    pub(crate) capture: Arc<Mutex<Capture>>,
    /// The sandbox summary for the header, when sandboxed.
    pub(crate) sandbox: Option<String>,
    pub(crate) tag: TagMatch,
    pub(crate) hard_timeout: Option<Duration>,
    /// The shell's pid, and whether tokio has reaped it (after which the pid may be reused).
    pub(crate) pid: Option<i32>,
    pub(crate) reaped: AtomicBool,
    background: AtomicBool,
    state: Mutex<EntryState>,
    kill: CancellationToken,
    done: tokio::sync::watch::Sender<bool>,
}

impl CommandEntry {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        id: CommandId,
        command: String,
        artifact_path: PathBuf,
        capture: Arc<Mutex<Capture>>,
        sandbox: Option<String>,
        tag: TagMatch,
        hard_timeout: Option<Duration>,
        pid: Option<i32>,
    ) -> Self {
        CommandEntry {
            id,
            command,
            started: Instant::now(),
            artifact_path,
            capture,
            sandbox,
            tag,
            hard_timeout,
            pid,
            reaped: AtomicBool::new(false),
            background: AtomicBool::new(false),
            state: Mutex::new(EntryState {
                status: CommandStatus::Running,
                finished: None,
                kill_reason: None,
            }),
            kill: CancellationToken::new(),
            done: tokio::sync::watch::channel(false).0,
        }
    }

    pub(crate) fn status(&self) -> CommandStatus {
        lock(&self.state).status
    }

    pub(crate) fn is_running(&self) -> bool {
        self.status().is_running()
    }

    /// Time from start to finish, or to now while running.
    pub(crate) fn runtime(&self) -> Duration {
        let finished = lock(&self.state).finished;
        finished.unwrap_or_else(Instant::now) - self.started
    }

    pub(crate) fn set_background(&self) {
        self.background.store(true, Ordering::Relaxed);
    }

    pub(crate) fn is_background(&self) -> bool {
        self.background.load(Ordering::Relaxed)
    }

    /// Asks the monitor to kill the command; the first reason wins. Returns `false` when the
    /// command had already finished.
    pub(crate) fn request_kill(&self, reason: KillReason) -> bool {
        let mut state = lock(&self.state);
        if !state.status.is_running() {
            return false;
        }
        state.kill_reason.get_or_insert(reason);
        self.kill.cancel();
        true
    }

    /// Waits until the command has finished (exited and drained).
    pub(crate) async fn wait_done(&self) {
        let mut done = self.done.subscribe();
        let _ = done.wait_for(|finished| *finished).await;
    }

    fn finish(&self, status: CommandStatus) {
        {
            let mut state = lock(&self.state);
            state.status = status;
            state.finished = Some(Instant::now());
        }
        self.done.send_replace(true);
    }
}

/// Watches one command to its end: exit, kill request, or hard timeout. Then drains the output
/// and records the final status.
pub(crate) async fn monitor(
    entry: Arc<CommandEntry>,
    mut child: tokio::process::Child,
    mut reader: ReaderHandle,
    grace: Duration,
    not_before: u64,
    supervisor: String,
) {
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let hard_timeout = async {
        match entry.hard_timeout {
            Some(limit) => tokio::time::sleep(limit).await,
            None => std::future::pending().await,
        }
    };
    enum Ending {
        Exited(std::io::Result<std::process::ExitStatus>),
        Kill(CommandStatus),
    }
    let ending = tokio::select! {
        status = child.wait() => Ending::Exited(status),
        () = entry.kill.cancelled() => {
            let reason = lock(&entry.state).kill_reason.unwrap_or(KillReason::Requested);
            Ending::Kill(CommandStatus::Killed { reason })
        }
        () = hard_timeout => Ending::Kill(CommandStatus::TimedOut {
            limit: entry.hard_timeout.unwrap_or_default(),
        }),
    };
    let status = match ending {
        // A kill that won the race against the monitor (the session's end kills trees
        // directly) is still reported as the kill it was, not as an anonymous signal.
        Ending::Exited(Ok(status)) => match (exit_status(status), lock(&entry.state).kill_reason) {
            (CommandStatus::Signaled { .. }, Some(reason)) => CommandStatus::Killed { reason },
            (status, _) => status,
        },
        Ending::Exited(Err(error)) => {
            tracing::warn!("waiting for command {}: {error}", entry.id);
            CommandStatus::Exited { code: -1 }
        }
        Ending::Kill(status) => {
            // The shell is not reaped until `wait` below, so its pid (and so its session and
            // process group ids) cannot be reused while the tree is being killed.
            let target = TreeTarget {
                mains: pid.into_iter().collect(),
                tag: Some(entry.tag.clone()),
                not_before,
                orphans: false,
                owner: Some(Filter::Command(supervisor.clone(), entry.id)),
            };
            let killed = tokio::task::spawn_blocking(move || tree::kill_tree(&target, grace)).await;
            if let Err(error) = killed {
                tracing::warn!("killing command {}: {error}", entry.id);
            }
            let _ = child.wait().await;
            status
        }
    };
    entry.reaped.store(true, Ordering::SeqCst);
    if let Some(pid) = pid {
        tree::release_owned(pid);
    }
    // The shell's children are ours now: attribute them while it is still clear whose they are.
    lineage::command_reaped(&supervisor, entry.id);
    reader.notify_exit();
    if !reader.wait_drained(DRAIN_BOUND).await {
        tracing::debug!("command {}: output still arriving after exit", entry.id);
    }
    entry.finish(status);
}

pub(crate) fn exit_status(status: std::process::ExitStatus) -> CommandStatus {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => CommandStatus::Exited { code },
        (None, Some(signal)) => CommandStatus::Signaled { signal },
        (None, None) => CommandStatus::Exited { code: -1 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_leniently_but_never_as_paths() {
        assert_eq!("3".parse::<CommandId>().unwrap(), CommandId(3));
        assert_eq!(" cmd-12 ".parse::<CommandId>().unwrap(), CommandId(12));
        assert_eq!("#7".parse::<CommandId>().unwrap(), CommandId(7));
        for bad in [
            "",
            "../cmd-1",
            "cmd-1/../../etc/passwd",
            "+3",
            "-1",
            "3.0",
            "cmd-",
        ] {
            let err = bad.parse::<CommandId>().unwrap_err();
            assert!(matches!(err, ExecError::UnknownCommand { .. }), "{bad}");
        }
        assert_eq!(CommandId(5).artifact_name(), "cmd-5");
    }

    #[test]
    fn statuses_read_well() {
        assert_eq!(CommandStatus::Exited { code: 2 }.to_string(), "exit code 2");
        assert_eq!(
            CommandStatus::Signaled { signal: 9 }.to_string(),
            "killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            CommandStatus::Killed {
                reason: KillReason::Cancelled
            }
            .to_string(),
            "aborted by user"
        );
        assert_eq!(
            CommandStatus::Killed {
                reason: KillReason::Requested
            }
            .to_string(),
            "killed on request"
        );
        assert_eq!(
            CommandStatus::TimedOut {
                limit: Duration::from_secs(30)
            }
            .to_string(),
            "killed: ran past the hard limit of 30.0 s"
        );
        assert_eq!(
            CommandStatus::TimedOut {
                limit: Duration::from_secs(30)
            }
            .label(),
            "timed out"
        );
        assert_eq!(CommandStatus::Exited { code: 0 }.label(), "exited (0)");
        assert!(CommandStatus::Running.is_running());
    }
}
