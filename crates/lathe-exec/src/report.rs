//! What a command's run tells its caller, and the text the model reads.

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

    /// The header line: status (exit code, signal, kill), wall time, size in bytes and lines,
    /// the command's id and, when sandboxed, the sandbox.
    pub fn header(&self) -> String {
        let size = format!(
            "{} bytes, {}",
            self.total_bytes,
            plural(self.total_lines, "line", "lines")
        );
        let mut parts = match self.detached {
            Some(Detached::Background) => {
                vec![format!("started in the background as command {}", self.id)]
            }
            Some(Detached::SoftTimeout { after }) => vec![
                format!(
                    "still running after the {} timeout, moved to the background as command {}",
                    format_duration(after),
                    self.id
                ),
                format!("{size} so far"),
            ],
            None => vec![
                self.status.to_string(),
                format_duration(self.wall_time),
                size,
                format!("command {}", self.id),
            ],
        };
        if let Some(sandbox) = &self.sandbox {
            parts.push(sandbox.clone());
        }
        parts.join(" | ")
    }

    /// The whole model-facing text: header, preview with the omission marker, and notes on the
    /// artifact and on how to follow a command that keeps running.
    pub fn to_text(&self) -> String {
        let id = self.id;
        let mut out = self.header();
        out.push('\n');
        if self.detached == Some(Detached::Background) && self.total_bytes == 0 {
            out.push_str(&format!(
                "[command_output {{\"id\": {id}}} reads its output, kill_command {{\"id\": {id}}} \
                 stops it, list_commands shows it]"
            ));
            return out;
        }
        if self.total_bytes == 0 {
            out.push_str("(no output)\n");
        } else {
            push_line(&mut out, &self.preview.head);
            if let Some(omitted) = self.preview.omitted {
                let lines = if omitted.first_line == omitted.last_line {
                    format!("part of line {}", omitted.first_line)
                } else {
                    format!("lines {}-{}", omitted.first_line, omitted.last_line)
                };
                out.push_str(&format!(
                    "[... {} bytes omitted ({lines}); command_output {{\"id\": {id}, \"offset\": {}}} reads them ...]\n",
                    omitted.bytes(),
                    omitted.start
                ));
                push_line(&mut out, &self.preview.tail);
            }
        }
        let artifact = &self.artifact;
        if let Some(error) = &artifact.error {
            out.push_str(&format!(
                "[the artifact {} could not be written ({error}): only its first {} bytes are kept]\n",
                artifact.name, artifact.kept_bytes
            ));
        } else if self.total_bytes > artifact.kept_bytes && !self.status.is_running() {
            out.push_str(&format!(
                "[the output passed the artifact cap of {}: the first {} bytes are kept, the other {} were counted but not kept]\n",
                format_size(artifact.cap),
                artifact.kept_bytes,
                self.total_bytes - artifact.kept_bytes
            ));
        }
        if self.is_cut() {
            out.push_str(&format!(
                "[full output: {} bytes kept as artifact {}; read it with command_output {{\"id\": {id}, \"offset\": 0}} or search it with command_output {{\"id\": {id}, \"search\": \"REGEX\"}}]\n",
                artifact.kept_bytes, artifact.name
            ));
        }
        if self.detached.is_some() {
            out.push_str(&format!(
                "[command {id} keeps running: command_output {{\"id\": {id}}} reads its output, \
                 kill_command {{\"id\": {id}}} stops it, list_commands shows it]\n"
            ));
        }
        while out.ends_with('\n') {
            out.pop();
        }
        out
    }
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
}

/// `1 line`, `2 lines`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
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

/// The model-facing table of commands.
pub fn render_list(commands: &[CommandSummary]) -> String {
    if commands.is_empty() {
        return "no commands have run in this session".to_owned();
    }
    let running = commands.iter().filter(|c| c.status.is_running()).count();
    let mut out = format!(
        "{} in this session, {running} running\nid | status | runtime | output | command\n",
        plural(commands.len() as u64, "command", "commands")
    );
    for c in commands {
        let mut command: String = c.command.split_whitespace().collect::<Vec<_>>().join(" ");
        if command.chars().count() > 200 {
            command = command.chars().take(200).collect::<String>() + "...";
        }
        out.push_str(&format!(
            "{} | {} | {} | {} bytes, {} | {command}\n",
            c.id,
            c.status.label(),
            format_duration(c.runtime),
            c.output_bytes,
            plural(c.output_lines, "line", "lines"),
        ));
    }
    out.pop();
    out
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

impl KillOutcome {
    /// The model-facing sentence.
    pub fn to_text(&self) -> String {
        match self {
            KillOutcome::Killed {
                id,
                status,
                runtime,
            } => match status {
                CommandStatus::Killed { .. } => format!(
                    "killed command {id} and all its processes after {}",
                    format_duration(*runtime)
                ),
                other => {
                    format!("command {id} finished by itself before it could be killed: {other}")
                }
            },
            KillOutcome::AlreadyFinished {
                id,
                status,
                leftovers_killed: 0,
            } => format!("command {id} had already finished ({status}); nothing to kill"),
            KillOutcome::AlreadyFinished {
                id,
                status,
                leftovers_killed,
            } => format!(
                "command {id} had already finished ({status}); killed {} it had left running in the background",
                plural(*leftovers_killed as u64, "process", "processes")
            ),
        }
    }
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
        assert_eq!(plural(1, "line", "lines"), "1 line");
        assert_eq!(plural(0, "line", "lines"), "0 lines");
    }
}
