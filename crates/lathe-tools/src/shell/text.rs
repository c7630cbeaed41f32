//! What the command tools tell the model, worded from `lathe-exec`'s data: result headers and
//! previews, pages and search results of `command_output`, the `list_commands` table, what
//! `kill_command` did, and the errors a model can fix. `lathe-exec` returns fields (ids,
//! offsets, omitted ranges, artifact sizes, statuses); this module is the one place that turns
//! them into sentences and names the tools to call next, so every hint has one spelling.
//!
//! Statuses, the sandbox summary and the faults of the machine keep `lathe-exec`'s plain
//! `Display` (neutral words such as `exit code 3` or `aborted by user`), except where the
//! model-facing wording names a tool or a setting ([`status`]).

use lathe_exec::{
    CommandId, CommandReport, CommandStatus, CommandSummary, Detached, ExecError, KillOutcome,
    KillReason, OutputPage, SearchResult, format_duration, format_size,
};

use crate::command_output::CommandOutputTool;
use crate::kill_command::KillCommandTool;
use crate::list_commands::ListCommandsTool;
use lathe_runtime::tool::Tool;

const SHELL: &str = super::ShellTool::NAME;
const COMMAND_OUTPUT: &str = CommandOutputTool::NAME;
const KILL_COMMAND: &str = KillCommandTool::NAME;
const LIST_COMMANDS: &str = ListCommandsTool::NAME;

/// A command line in a list is cut to this many characters.
const MAX_LISTED_COMMAND: usize = 200;

/// `command_output {"id": 4}`: read a command's output from the start.
fn read_call(id: CommandId) -> String {
    format!("{COMMAND_OUTPUT} {{\"id\": {id}}}")
}

/// `command_output {"id": 4, "offset": 42}`: read on from `offset`.
fn read_from_call(id: CommandId, offset: u64) -> String {
    format!("{COMMAND_OUTPUT} {{\"id\": {id}, \"offset\": {offset}}}")
}

/// `command_output {"id": 4, "search": "REGEX"}`, with `pattern` as JSON, and the offset to
/// search from when there is one.
fn search_call(id: CommandId, pattern: &str, from: Option<u64>) -> String {
    let pattern = json_string(pattern);
    match from {
        Some(offset) => format!(
            "{COMMAND_OUTPUT} {{\"id\": {id}, \"search\": {pattern}, \"offset\": {offset}}}"
        ),
        None => format!("{COMMAND_OUTPUT} {{\"id\": {id}, \"search\": {pattern}}}"),
    }
}

/// How to follow a command that keeps running.
fn follow(id: CommandId) -> String {
    format!(
        "{} reads its output, {KILL_COMMAND} {{\"id\": {id}}} stops it, {LIST_COMMANDS} shows it",
        read_call(id)
    )
}

/// A status as a result header says it: `exit code 0`, `killed by signal 9 (SIGKILL)`,
/// `killed by kill_command`, ... `lathe-exec`'s words, but for the two that name a tool or a
/// setting.
pub(crate) fn status(status: CommandStatus) -> String {
    match status {
        CommandStatus::Killed {
            reason: KillReason::Requested,
        } => format!("killed by {KILL_COMMAND}"),
        CommandStatus::TimedOut { limit } => format!(
            "killed: ran past the hard limit of {} (command_timeout)",
            format_duration(limit)
        ),
        other => other.to_string(),
    }
}

/// A status in the header of a page or a search: `running` rather than `still running`.
fn status_phrase(status: CommandStatus) -> String {
    match status {
        CommandStatus::Running => "running".to_owned(),
        other => self::status(other),
    }
}

/// A command's result header: status (exit code, signal, kill), wall time, size in bytes and
/// lines, the command's id and, when sandboxed, the sandbox, or why it was not
/// (`unsandboxed`).
pub(crate) fn header(report: &CommandReport, unsandboxed: Option<&str>) -> String {
    let size = format!(
        "{} bytes, {}",
        report.total_bytes,
        plural(report.total_lines, "line", "lines")
    );
    let mut parts = match report.detached {
        Some(Detached::Background) => {
            vec![format!(
                "started in the background as command {}",
                report.id
            )]
        }
        Some(Detached::SoftTimeout { after }) => vec![
            format!(
                "still running after the {} timeout, moved to the background as command {}",
                format_duration(after),
                report.id
            ),
            format!("{size} so far"),
        ],
        None => vec![
            status(report.status),
            format_duration(report.wall_time),
            size,
            format!("command {}", report.id),
        ],
    };
    if let Some(sandbox) = &report.sandbox {
        parts.push(sandbox.clone());
    }
    if let Some(label) = unsandboxed {
        parts.push(label.to_owned());
    }
    parts.join(" | ")
}

/// A command's whole result: the header, the preview with the omission marker, and notes on
/// the artifact and on how to follow a command that keeps running.
pub(crate) fn report(report: &CommandReport, unsandboxed: Option<&str>) -> String {
    let id = report.id;
    let preview = &report.preview;
    let mut out = String::with_capacity(preview.head.len() + preview.tail.len() + 512);
    out.push_str(&header(report, unsandboxed));
    out.push('\n');
    if report.detached == Some(Detached::Background) && report.total_bytes == 0 {
        out.push_str(&format!("[{}]", follow(id)));
        return out;
    }
    if report.total_bytes == 0 {
        out.push_str("(no output)\n");
    } else {
        push_line(&mut out, &preview.head);
        if let Some(omitted) = preview.omitted {
            let lines = if omitted.first_line == omitted.last_line {
                format!("part of line {}", omitted.first_line)
            } else {
                format!("lines {}-{}", omitted.first_line, omitted.last_line)
            };
            out.push_str(&format!(
                "[... {} bytes omitted ({lines}); {} reads them ...]\n",
                omitted.bytes(),
                read_from_call(id, omitted.start)
            ));
            push_line(&mut out, &preview.tail);
        }
    }
    let artifact = &report.artifact;
    if let Some(error) = &artifact.error {
        out.push_str(&format!(
            "[the artifact {} could not be written ({error}): only its first {} bytes are kept]\n",
            artifact.name, artifact.kept_bytes
        ));
    } else if report.total_bytes > artifact.kept_bytes && !report.status.is_running() {
        out.push_str(&format!(
            "[the output passed the artifact cap of {}: the first {} bytes are kept, the other {} were counted but not kept]\n",
            format_size(artifact.cap),
            artifact.kept_bytes,
            report.total_bytes - artifact.kept_bytes
        ));
    }
    if report.is_cut() {
        out.push_str(&format!(
            "[full output: {} bytes kept as artifact {}; read it with {} or search it with {}]\n",
            artifact.kept_bytes,
            artifact.name,
            read_from_call(id, 0),
            search_call(id, "REGEX", None)
        ));
    }
    if report.detached.is_some() {
        out.push_str(&format!("[command {id} keeps running: {}]\n", follow(id)));
    }
    while out.ends_with('\n') {
        out.pop();
    }
    out
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
}

/// A page of `command_output`: a header line, the bytes (invalid UTF-8 replaced), and what to
/// read next.
pub(crate) fn page(page: &OutputPage) -> String {
    let id = page.id;
    let status = status_phrase(page.status);
    if page.bytes.is_empty() {
        let mut out = if page.available == 0 {
            format!("[command {id} ({status}): no output yet]")
        } else if page.status.is_running() && page.offset >= page.available {
            format!(
                "[command {id} ({status}): no output past byte {} yet]",
                page.available
            )
        } else {
            format!(
                "[command {id} ({status}): offset {} is at or past the end of the output ({} bytes); \
                 use an offset below {}]",
                page.offset, page.available, page.available
            )
        };
        if page.status.is_running() {
            out.push_str(&format!(
                "\n[command {id} is still running: read again later with {}]",
                read_from_call(id, page.available.min(page.offset))
            ));
        }
        return out;
    }
    let mut out = String::with_capacity(page.bytes.len() + 256);
    out.push_str(&format!(
        "[command {id} ({status}): bytes {}-{} of {}, lines {}-{}]\n",
        page.offset,
        page.end(),
        page.available,
        page.first_line,
        page.last_line()
    ));
    out.push_str(&String::from_utf8_lossy(&page.bytes));
    if !out.ends_with('\n') {
        out.push('\n');
    }
    if page.more() {
        out.push_str(&format!(
            "[{} more bytes: {}]",
            page.available - page.end(),
            read_from_call(id, page.end())
        ));
    } else if page.status.is_running() || !page.complete {
        out.push_str(&format!(
            "[end of the output so far; command {id} is still writing: read what comes next with {}]",
            read_from_call(id, page.end())
        ));
    } else if page.total_bytes > page.available {
        out.push_str(&format!(
            "[end of the artifact: the other {} bytes passed the artifact cap and were not kept]",
            page.total_bytes - page.available
        ));
    } else {
        out.push_str("[end of output]");
    }
    out
}

/// The note after a page cut shorter than asked to fit the result budget.
pub(crate) fn page_limited(fits: usize) -> String {
    format!("\n[the page was limited to {fits} bytes to fit the result budget]")
}

/// A search of `command_output`: numbered matching lines (`N:text`, as `grep -n` prints them)
/// and where to search next.
pub(crate) fn search(result: &SearchResult) -> String {
    let id = result.id;
    let mut out = format!(
        "[command {id} ({}): {} matching /{}/ (case-insensitive) in bytes {}-{}",
        status_phrase(result.status),
        plural(result.total_matches, "line", "lines"),
        result.pattern,
        result.start,
        result.end
    );
    if result.total_matches > result.matches.len() as u64 {
        out.push_str(&format!(", showing the first {}", result.matches.len()));
    }
    out.push_str("]\n");
    if let Some(reason) = &result.literal_because {
        out.push_str(&format!(
            "[the pattern is not a valid regex ({reason}); it was searched as literal text]\n"
        ));
    }
    for m in &result.matches {
        out.push_str(&format!("{}:{}\n", m.line, m.text));
    }
    if let Some(next) = result.next_offset {
        out.push_str(&format!(
            "[more matches: {}]\n",
            search_call(id, &result.pattern, Some(next))
        ));
    }
    if result.status.is_running() {
        out.push_str(&format!(
            "[command {id} is still running: its output may grow; search again later]\n"
        ));
    } else if result.total_bytes > result.end {
        out.push_str(&format!(
            "[the other {} bytes passed the artifact cap and were not kept, so they were not \
             searched; the result's preview shows the output's last lines]\n",
            result.total_bytes - result.end
        ));
    }
    out.pop();
    out
}

/// Drops matches from the end until [`search`]'s text is at most `max_chars` characters
/// (keeping at least one), and points `next_offset` at the first one dropped.
pub(crate) fn fit_search(result: &mut SearchResult, max_chars: usize) {
    while result.matches.len() > 1 && search(result).chars().count() > max_chars {
        if let Some(dropped) = result.matches.pop() {
            result.next_offset = Some(dropped.offset);
        }
    }
}

/// The `list_commands` table.
pub(crate) fn list(commands: &[CommandSummary]) -> String {
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
        if command.chars().count() > MAX_LISTED_COMMAND {
            command = command.chars().take(MAX_LISTED_COMMAND).collect::<String>() + "...";
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

/// What `kill_command` did, in a sentence.
pub(crate) fn kill(outcome: &KillOutcome) -> String {
    match outcome {
        KillOutcome::Killed {
            id,
            status: CommandStatus::Killed { .. },
            runtime,
        } => format!(
            "killed command {id} and all its processes after {}",
            format_duration(*runtime)
        ),
        KillOutcome::Killed { id, status, .. } => format!(
            "command {id} finished by itself before it could be killed: {}",
            self::status(*status)
        ),
        KillOutcome::AlreadyFinished {
            id,
            status,
            leftovers_killed: 0,
        } => format!(
            "command {id} had already finished ({}); nothing to kill",
            self::status(*status)
        ),
        KillOutcome::AlreadyFinished {
            id,
            status,
            leftovers_killed,
        } => format!(
            "command {id} had already finished ({}); killed {} it had left running in the background",
            self::status(*status),
            plural(*leftovers_killed as u64, "process", "processes")
        ),
    }
}

/// An error of `lathe-exec` as the model reads it: the ones it can fix say how; the faults of
/// the machine are `lathe-exec`'s own message.
pub(crate) fn error(error: &ExecError) -> String {
    match error {
        ExecError::EmptyCommand => {
            "the command is empty: give a shell command to run, for example \"ls -la\"".to_owned()
        }
        ExecError::TooManyRunning { running, .. } => format!(
            "{running} commands are already running, the most allowed at once: stop one with \
             {KILL_COMMAND} or wait for one to finish ({LIST_COMMANDS} shows them)"
        ),
        ExecError::UnknownCommand { id } => format!(
            "there is no command '{id}' in this session: {LIST_COMMANDS} shows the commands and \
             their ids"
        ),
        other => other.to_string(),
    }
}

/// A negative command id, refused.
pub(crate) fn negative_id(given: &str) -> String {
    format!(
        "parameter `id` cannot be {given}: command ids are positive numbers such as 3, as \
         `{SHELL}` or `{LIST_COMMANDS}` gave them"
    )
}

/// The status a progress listener gets for output it was not shown live.
pub(crate) fn not_shown_live(bytes: u64) -> String {
    format!("{bytes} bytes of output not shown live (the result and {COMMAND_OUTPUT} have them)")
}

/// `1 line`, `2 lines`.
fn plural(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A JSON string literal, for the hints that show a call.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
