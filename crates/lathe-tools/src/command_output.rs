//! `command_output`: read a command's output, running or finished, by byte range or by regex,
//! from the artifact `shell` kept. Only the session's own commands can be read.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::shell::{IdArg, command_meta, exec_error, parse_id, text};
use lathe_runtime::commands::commands;
use lathe_runtime::session::Session;
use lathe_runtime::text::title;
use lathe_runtime::tool::{Effect, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult};

/// Characters of a result kept for the header and the notes around the bytes of a page.
const PAGE_MARGIN: usize = 600;
/// The smallest page, whatever the result budget.
const MIN_PAGE: usize = 1024;

/// The `command_output` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct CommandOutputTool;

/// Read the full output of a command started with `shell`, finished or still running.
///
/// Without `search`: returns bytes `offset` to `offset + limit` (default 40 KiB, less when the
/// result budget is smaller), exactly as the command printed them, after a header naming the
/// byte range, the total size and the line numbers the range covers; a note at the end gives the
/// next `offset` when more remains. With `search`: the lines matching a case-insensitive regex
/// (an invalid regex is searched as literal text), numbered like `grep -n`, at most `limit`
/// (default 100), with the total number of matching lines; `offset` starts the search at that
/// byte.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CommandOutputInput {
    /// The command's id, as `shell` or `list_commands` gave it.
    pub id: IdArg,
    /// A regex to search the output for (case-insensitive), e.g. `error|warning`.
    #[serde(default)]
    pub search: Option<String>,
    /// Byte offset to start reading or searching at. Default 0.
    #[serde(default)]
    pub offset: Option<u64>,
    /// Bytes to read (default 40960), or with `search` the most matching lines to show
    /// (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

impl Tool for CommandOutputTool {
    const NAME: &'static str = "command_output";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Read a `shell` command's whole output by id: bytes from `offset` (up to `limit`), or the lines matching the regex `search`."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("id", ""), ("search", ""), ("offset", ""), ("limit", "")]);
    const ON_DEMAND: bool = true;
    type Input = CommandOutputInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = (input, session);
        vec![Effect::OwnState { changes: false }]
    }

    fn title(&self, input: &Self::Input) -> String {
        title(Self::NAME, &input.id.as_written())
    }

    async fn run(&self, input: CommandOutputInput, ctx: ToolContext) -> ToolResult {
        let id = parse_id(&input.id)?;
        let commands = commands(&ctx.session);
        let supervisor = commands.supervisor().map_err(ToolError::new)?;
        if input.limit == Some(0) {
            let what = if input.search.as_deref().is_some_and(|p| !p.is_empty()) {
                format!(
                    "the most matching lines to show; default {}",
                    lathe_exec::DEFAULT_SEARCH_LIMIT
                )
            } else {
                format!(
                    "the most bytes to show; default {}",
                    lathe_exec::DEFAULT_READ_LIMIT
                )
            };
            return Err(ToolError::new(format!(
                "limit must be 1 or more ({what}), got 0"
            )));
        }
        let budget = ctx.session.result_budget();
        let offset = input.offset.unwrap_or(0);
        let pattern = input.search.filter(|p| !p.is_empty());
        if let Some(pattern) = pattern {
            let mut result = supervisor
                .search_output(id, &pattern, offset, input.limit)
                .await
                .map_err(exec_error)?;
            text::fit_search(&mut result, budget.saturating_sub(100).max(MIN_PAGE));
            let lines: Vec<u64> = result.matches.iter().map(|m| m.line).collect();
            let mut output = ToolOutput::ok(text::search(&result))
                .with_command(command_meta(id, result.status))
                .with_meta("total_matches", result.total_matches)
                .with_meta("lines", lines);
            if let Some(next) = result.next_offset {
                output = output.with_meta("next_offset", next);
            }
            return Ok(output);
        }
        let wanted = input.limit.unwrap_or(lathe_exec::DEFAULT_READ_LIMIT);
        let fits = budget.saturating_sub(PAGE_MARGIN).max(MIN_PAGE);
        let page = supervisor
            .read_output(id, offset, Some(wanted.min(fits)))
            .await
            .map_err(exec_error)?;
        let mut shown = text::page(&page);
        if wanted > fits && page.more() {
            shown.push_str(&text::page_limited(fits));
        }
        let mut output = ToolOutput::ok(shown)
            .with_command(command_meta(id, page.status))
            .with_meta("offset", page.offset)
            .with_meta("end", page.end())
            .with_meta("available", page.available)
            .with_meta("total_bytes", page.total_bytes)
            .with_meta("first_line", page.first_line)
            .with_meta("more", page.more());
        if page.more() {
            output = output.with_meta("next_offset", page.end());
        }
        Ok(output)
    }
}
