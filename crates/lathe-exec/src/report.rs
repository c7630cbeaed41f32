//! What a command's run tells its caller, as data: statuses, sizes, the preview and its
//! omitted range, the artifact. Wording it for a reader (which tool reads the rest, how to
//! follow a command that keeps running) is the caller's part.

use std::path::PathBuf;
use std::time::Duration;

use crate::command::{CommandId, CommandStatus};
use crate::preview::Preview;

/// Why a command was still running when its call returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detached {
    /// It was started in the background.
    Background,
    /// The caller's soft timeout expired; it keeps running in the background.
    SoftTimeout {
        /// The timeout that expired.
        after: Duration,
    },
}

/// A command's artifact: the raw output on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactInfo {
    /// Its name, `cmd-<id>`.
    pub name: String,
    /// Where it is (in the session's state directory). Created with the first byte of output:
    /// a command that printed nothing has no file.
    pub path: PathBuf,
    /// Bytes kept in it.
    pub kept_bytes: u64,
    /// The configured cap.
    pub cap: u64,
    /// Why writing it failed, if it did (disk full, ...).
    pub error: Option<String>,
}

/// The outcome of [`Supervisor::run`](crate::Supervisor::run): everything a result header and
/// preview need.
#[derive(Debug, Clone)]
pub struct CommandReport {
    /// The command's id in the session.
    pub id: CommandId,
    /// The command line.
    pub command: String,
    /// Its status when the call returned.
    pub status: CommandStatus,
    /// Set when the call returned while the command keeps running.
    pub detached: Option<Detached>,
    /// Time from start to finish (or to the return of the call).
    pub wall_time: Duration,
    /// Bytes printed (stdout and stderr), including any past the artifact cap.
    pub total_bytes: u64,
    /// Lines printed; a last line without a newline counts.
    pub total_lines: u64,
    /// The head and tail shown to the model.
    pub preview: Preview,
    /// The raw output on disk.
    pub artifact: ArtifactInfo,
    /// The sandbox summary (`sandboxed (landlock abi 7, seccomp): ...`) when the command was
    /// sandboxed.
    pub sandbox: Option<String>,
}

impl CommandReport {
    /// Whether the command ran in the sandbox.
    pub fn is_sandboxed(&self) -> bool {
        self.sandbox.is_some()
    }

    /// Whether the preview leaves part of the output out.
    pub fn is_cut(&self) -> bool {
        self.preview.omitted.is_some()
    }
}

/// A duration for people: `0.02 s`, `12.5 s`, `3 min 4 s`, `2 h 5 min`.
pub fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs < 10.0 {
        format!("{secs:.2} s")
    } else if secs < 60.0 {
        format!("{secs:.1} s")
    } else if secs < 3600.0 {
        format!("{} min {} s", d.as_secs() / 60, d.as_secs() % 60)
    } else {
        format!("{} h {} min", d.as_secs() / 3600, d.as_secs() % 3600 / 60)
    }
}

/// A size for people: `512 bytes`, `10 KiB`, `1 GiB`, `1.5 MiB`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} bytes");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value:.0} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// One line of [`Supervisor::list`](crate::Supervisor::list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandSummary {
    /// The command's id.
    pub id: CommandId,
    /// The command line.
    pub command: String,
    /// Its status now.
    pub status: CommandStatus,
    /// How long it ran, or has been running.
    pub runtime: Duration,
    /// Bytes printed so far.
    pub output_bytes: u64,
    /// Lines printed so far.
    pub output_lines: u64,
    /// Whether it was started in the background or moved there by a soft timeout.
    pub background: bool,
}

/// What [`Supervisor::kill`](crate::Supervisor::kill) did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KillOutcome {
    /// The command was running and was killed (its status says how it ended: it may have
    /// exited by itself just before).
    Killed {
        /// The command.
        id: CommandId,
        /// Its final status.
        status: CommandStatus,
        /// How long it ran.
        runtime: Duration,
    },
    /// The command had already finished.
    AlreadyFinished {
        /// The command.
        id: CommandId,
        /// How it ended.
        status: CommandStatus,
        /// Processes it left running in the background that were killed now.
        leftovers_killed: usize,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_well() {
        assert_eq!(format_size(10), "10 bytes");
        assert_eq!(format_size(1 << 30), "1 GiB");
        assert_eq!(format_size(1536 * 1024), "1.5 MiB");
        assert_eq!(format_duration(Duration::from_millis(20)), "0.02 s");
        assert_eq!(format_duration(Duration::from_secs(185)), "3 min 5 s");
    }
}
