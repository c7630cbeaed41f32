//! A session's command outputs as MCP resources (`lathe://commands/{id}/output`), so a client
//! can read a large artifact without a tool call, and the log notifications of a session
//! (`logging/setLevel`).

use std::io::Read;

use lathe_exec::CommandId;
use lathe_runtime::Session;
use lathe_runtime::commands;
use rmcp::ErrorData as McpError;
use rmcp::model::{ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult};
use serde_json::{Value, json};

/// The URI template of a command's output.
pub const TEMPLATE: &str = "lathe://commands/{id}/output";

/// The most of an output one `resources/read` returns; the rest is read with `command_output`.
pub const MAX_READ_BYTES: u64 = 8 * 1024 * 1024;

fn resource_uri(id: u64) -> String {
    format!("lathe://commands/{id}/output")
}

/// The outputs of the session's commands, oldest first.
pub fn list(session: &Session) -> Result<ListResourcesResult, McpError> {
    // A session that never ran a command has none, and gets no supervisor for asking.
    let commands = session.existing_extension::<commands::Commands>();
    let resources: Vec<Value> = match commands.as_ref().map(|c| c.supervisor()) {
        Some(Ok(supervisor)) => supervisor
            .list()
            .into_iter()
            .map(|summary| {
                json!({
                    "uri": resource_uri(summary.id.0),
                    "name": format!("cmd-{}", summary.id.0),
                    "title": format!("Output of `{}`", shorten(&summary.command)),
                    "description": format!(
                        "{} ({}; {} bytes, {} lines so far)",
                        shorten(&summary.command),
                        summary.status.label(),
                        summary.output_bytes,
                        summary.output_lines
                    ),
                    "mimeType": "text/plain",
                    "size": summary.output_bytes,
                })
            })
            .collect(),
        _ => Vec::new(),
    };
    serde_json::from_value(json!({"resources": resources}))
        .map_err(|err| McpError::internal_error(format!("resource list: {err}"), None))
}

/// The template every command output follows.
pub fn templates() -> Result<ListResourceTemplatesResult, McpError> {
    serde_json::from_value(json!({"resourceTemplates": [{
        "uriTemplate": TEMPLATE,
        "name": "command-output",
        "title": "Output of a command",
        "description": "The full output (stdout and stderr merged, as written) of a command this \
                        session ran, by the id `shell` or `list_commands` gave",
        "mimeType": "text/plain",
    }]}))
    .map_err(|err| McpError::internal_error(format!("resource templates: {err}"), None))
}

/// The output of the command `uri` names.
pub fn read(session: &Session, uri: &str) -> Result<ReadResourceResult, McpError> {
    let id = parse(uri)?;
    let commands = session.existing_extension::<commands::Commands>();
    let report = commands
        .as_ref()
        .and_then(|commands| commands.supervisor().ok())
        .ok_or(())
        .and_then(|supervisor| supervisor.report(CommandId(id)).map_err(|_| ()))
        .map_err(|()| {
            McpError::resource_not_found(
                format!(
                    "no command {id} in this session: `resources/list` (or the `list_commands` \
                 tool) shows the commands and their ids"
                ),
                None,
            )
        })?;
    let mut text = String::new();
    let path = &report.artifact.path;
    // A command that printed nothing has no file.
    if path.exists() {
        let file = std::fs::File::open(path).map_err(|err| {
            McpError::internal_error(format!("cannot read {}: {err}", path.display()), None)
        })?;
        let mut bytes = Vec::new();
        file.take(MAX_READ_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|err| {
                McpError::internal_error(format!("cannot read {}: {err}", path.display()), None)
            })?;
        text = String::from_utf8_lossy(&bytes).into_owned();
        let kept = report.artifact.kept_bytes;
        if kept > MAX_READ_BYTES {
            text.push_str(&format!(
                "\n[the first {MAX_READ_BYTES} of {kept} bytes: read the rest with the \
                 `command_output` tool, id {id}, offset {MAX_READ_BYTES}]\n"
            ));
        }
    }
    serde_json::from_value(json!({"contents": [{
        "uri": resource_uri(id),
        "mimeType": "text/plain",
        "text": text,
    }]}))
    .map_err(|err| McpError::internal_error(format!("resource read: {err}"), None))
}

fn parse(uri: &str) -> Result<u64, McpError> {
    uri.strip_prefix("lathe://commands/")
        .and_then(|rest| rest.strip_suffix("/output"))
        .and_then(|id| id.strip_prefix("cmd-").unwrap_or(id).parse::<u64>().ok())
        .ok_or_else(|| {
            McpError::resource_not_found(
                format!(
                    "unknown resource `{}`: this server offers command outputs as {TEMPLATE}, \
                     e.g. lathe://commands/1/output",
                    lathe_runtime::registry::shown_name(uri)
                ),
                None,
            )
        })
}

fn shorten(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    if line.chars().count() <= 80 && !command.contains('\n') {
        return line.to_owned();
    }
    let cut: String = line.chars().take(77).collect();
    format!("{cut}...")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_command_ids() {
        assert_eq!(parse("lathe://commands/3/output").unwrap(), 3);
        assert_eq!(parse("lathe://commands/cmd-4/output").unwrap(), 4);
        for bad in [
            "lathe://commands/x/output",
            "file:///etc/passwd",
            "lathe://commands/3",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.message.contains(TEMPLATE), "{}", err.message);
        }
    }
}
