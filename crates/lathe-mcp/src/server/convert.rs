//! Lathe's tool contract in MCP's shapes: definitions to `Tool`, outputs to `CallToolResult`.

use std::sync::Arc;

use lathe_runtime::{ToolDefinition, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
use serde_json::{Map, Value};

/// The MCP tool for a registry definition: the same name, description and input schema as
/// `lathe tools --json`, a title, and annotations stated from the tool's hints.
///
/// No output schema is declared: a tool's metadata varies by call, and MCP asks that
/// `structuredContent` conform to a declared schema.
pub fn tool(definition: &ToolDefinition) -> Tool {
    let schema = match &definition.parameters {
        Value::Object(object) => object.clone(),
        // MCP requires an object schema; the registry only produces objects, but stay total.
        _ => Map::from_iter([("type".to_owned(), Value::String("object".to_owned()))]),
    };
    let hints = definition.hints;
    let title = title(&definition.name);
    let annotations = ToolAnnotations::with_title(title.clone())
        .read_only(hints.read_only)
        .destructive(!hints.read_only && hints.destructive)
        .idempotent(hints.idempotent)
        .open_world(hints.open_world);
    Tool::new(
        definition.name.clone(),
        definition.description.clone(),
        Arc::new(schema),
    )
    .with_title(title)
    .with_annotations(annotations)
}

/// `read_file` -> `Read file`.
pub fn title(name: &str) -> String {
    let spaced = name.replace(['_', '-'], " ");
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The MCP result for a tool's output: its text as text content, then its images as image
/// content (base64 with their media type), `isError` as the tool said, and the metadata's JSON
/// form ([`lathe_runtime::Metadata::to_json`]) as `structuredContent` when there is any.
pub fn result(output: ToolOutput) -> CallToolResult {
    let mut content = vec![ContentBlock::text(output.text)];
    for image in output.images {
        content.push(ContentBlock::image(image.data, image.media_type));
    }
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    if !output.metadata.is_empty() {
        result.structured_content = Some(Value::Object(output.metadata.to_json()));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_runtime::{CommandMeta, CommandState, FileChange, ToolHints, ToolKind};
    use serde_json::json;

    fn definition(hints: ToolHints) -> ToolDefinition {
        ToolDefinition {
            name: "edit_file".into(),
            description: "Edits a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            aliases: Vec::new(),
            kind: ToolKind::Edit,
            hints,
            raw_strings: Vec::new(),
        }
    }

    #[test]
    fn definitions_keep_name_description_schema_and_state_hints() {
        let hints = ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        };
        let tool = serde_json::to_value(tool(&definition(hints))).unwrap();
        assert_eq!(tool["name"], "edit_file");
        assert_eq!(tool["title"], "Edit file");
        assert_eq!(tool["description"], "Edits a file.");
        assert_eq!(tool["inputSchema"]["properties"]["path"]["type"], "string");
        assert_eq!(
            tool["annotations"],
            json!({"title": "Edit file", "readOnlyHint": false, "destructiveHint": true,
                   "idempotentHint": false, "openWorldHint": false})
        );
        assert!(tool.get("outputSchema").is_none());
    }

    #[test]
    fn read_only_tools_are_never_called_destructive() {
        let hints = ToolHints {
            read_only: true,
            destructive: true,
            idempotent: true,
            open_world: false,
        };
        let tool = serde_json::to_value(tool(&definition(hints))).unwrap();
        assert_eq!(tool["annotations"]["readOnlyHint"], true);
        assert_eq!(tool["annotations"]["destructiveHint"], false);
    }

    #[test]
    fn outputs_map_to_text_is_error_and_structured_content() {
        let plain = serde_json::to_value(result(ToolOutput::ok("hello"))).unwrap();
        assert_eq!(plain["content"], json!([{"type": "text", "text": "hello"}]));
        assert_eq!(plain["isError"], false);
        assert!(plain.get("structuredContent").is_none());

        let failed = ToolOutput::error("no such file").with_path("a.txt");
        let failed = serde_json::to_value(result(failed)).unwrap();
        assert_eq!(failed["isError"], true);
        assert_eq!(failed["structuredContent"], json!({"path": "a.txt"}));
    }

    /// The typed metadata reaches clients as the flat object of the first cut: a single
    /// change's path, counts and diff at the top, every change under `changes`, the command's
    /// id and status; and it reads back as the same metadata.
    #[test]
    fn typed_metadata_round_trips_through_structured_content() {
        let change = FileChange {
            path: "src/a.rs".into(),
            created: false,
            deleted: false,
            added: 1,
            removed: 1,
            diff: "--- a/src/a.rs\n+++ b/src/a.rs\n-one\n+two\n".into(),
        };
        let output = ToolOutput::ok("edited")
            .with_change(change)
            .with_command(CommandMeta {
                id: 4,
                status: CommandState::Running,
            })
            .with_meta("replacements", 1);
        let sent = serde_json::to_value(result(output.clone())).unwrap();
        let structured = &sent["structuredContent"];
        assert_eq!(structured["path"], "src/a.rs");
        assert_eq!(structured["added"], 1);
        assert_eq!(structured["removed"], 1);
        assert_eq!(structured["created"], false);
        assert_eq!(structured["diff"], output.metadata.changes[0].diff);
        assert_eq!(structured["changes"][0]["path"], "src/a.rs");
        assert_eq!(structured["command_id"], 4);
        assert_eq!(structured["status"], json!({"state": "running"}));
        assert_eq!(structured["replacements"], 1);
        let back: lathe_runtime::Metadata = serde_json::from_value(structured.clone()).unwrap();
        assert_eq!(back, output.metadata);
    }
}
