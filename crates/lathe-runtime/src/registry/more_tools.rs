//! `more_tools`: lists and enables the tools a registry offers on demand
//! ([`Registry::defer`](crate::Registry::defer)).
//!
//! A small window cannot carry every definition in every request: tools from MCP servers, the
//! web and documents can wait behind this one tool. The model asks for what it needs; an
//! enabled tool is offered in every later request of the session. A deferred tool stays
//! callable by name all along: this tool is how the model learns that it exists and what it
//! takes.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::args::fold_name;
use crate::registry::ToolDefinition;
use crate::session::Session;
use crate::text::one_line;
use crate::tool::{
    Effect, Tool, ToolContext, ToolError, ToolHints, ToolKind, ToolOutput, ToolResult, hints_for,
};

/// At most this many tools are listed per call; a query narrows the list.
const MAX_LISTED: usize = 40;

/// List the tools that are not offered up front (tools from MCP servers, the web, documents),
/// or enable some of them. Call it without arguments, or with a `query`, to see what exists;
/// then call it with `enable` to get their full descriptions and parameters. Enabled tools are
/// offered from then on.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MoreToolsInput {
    /// Words to look for in the tools' names and descriptions (optional).
    #[serde(default)]
    pub query: Option<String>,
    /// Names of the tools to enable (optional).
    #[serde(default)]
    pub enable: Vec<String>,
}

/// The `more_tools` tool over one registry's deferred tools (registered by
/// [`Registry::defer`](crate::Registry::defer), rebuilt when that set changes).
#[derive(Debug, Clone)]
pub struct MoreToolsTool {
    catalog: Arc<Vec<ToolDefinition>>,
}

impl MoreToolsTool {
    /// The tool over `catalog`, the definitions of the deferred tools.
    pub(crate) fn new(catalog: Vec<ToolDefinition>) -> Self {
        MoreToolsTool {
            catalog: Arc::new(catalog),
        }
    }

    fn find(&self, name: &str) -> Option<&ToolDefinition> {
        let folded = fold_name(name.trim());
        self.catalog
            .iter()
            .find(|d| d.name == name.trim())
            .or_else(|| self.catalog.iter().find(|d| fold_name(&d.name) == folded))
    }

    fn names(&self) -> String {
        self.catalog
            .iter()
            .map(|d| format!("`{}`", d.name))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn enable(&self, names: &[String], session: &Session) -> ToolResult {
        let mut text = String::new();
        let mut enabled = Vec::new();
        let mut unknown = Vec::new();
        for name in names {
            match self.find(name) {
                Some(definition) => {
                    session.enable_tool(&definition.name);
                    if enabled.contains(&definition.name) {
                        continue;
                    }
                    enabled.push(definition.name.clone());
                    text.push_str(&format!(
                        "\n## {}\n{}\nParameters: {}\n",
                        definition.name,
                        definition.description.trim(),
                        definition.parameters
                    ));
                }
                None => unknown.push(format!("`{}`", name.trim())),
            }
        }
        let mut head = match enabled.len() {
            0 => String::new(),
            1 => "Enabled 1 tool; it is offered from now on and can be called now:\n".to_owned(),
            n => {
                format!("Enabled {n} tools; they are offered from now on and can be called now:\n")
            }
        };
        if !unknown.is_empty() {
            head.push_str(&format!(
                "Not a tool to enable: {}. The tools you can enable: {}.\n",
                unknown.join(", "),
                self.names()
            ));
        }
        let output = head + &text;
        let output = output.trim_end().to_owned();
        if enabled.is_empty() {
            Err(ToolError::new(output))
        } else {
            Ok(ToolOutput::ok(output).with_meta("enabled", enabled))
        }
    }

    fn list(&self, query: Option<&str>, session: &Session) -> ToolOutput {
        let words: Vec<String> = query
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        let matches: Vec<&ToolDefinition> = self
            .catalog
            .iter()
            .filter(|d| {
                let haystack = format!("{} {}", d.name, d.description).to_lowercase();
                words.iter().all(|w| haystack.contains(w.as_str()))
            })
            .collect();
        if matches.is_empty() {
            return ToolOutput::ok(format!(
                "No tool matches `{}`. The tools you can enable: {}.",
                query.unwrap_or("").trim(),
                self.names()
            ));
        }
        let mut text = match (words.is_empty(), matches.len()) {
            (true, 1) => "1 more tool can be enabled:\n".to_owned(),
            (true, n) => format!("{n} more tools can be enabled:\n"),
            (false, 1) => "1 tool matches:\n".to_owned(),
            (false, n) => format!("{n} tools match:\n"),
        };
        for definition in matches.iter().take(MAX_LISTED) {
            let state = if session.tool_enabled(&definition.name) {
                " (enabled)"
            } else {
                ""
            };
            text.push_str(&format!(
                "- {}{state}: {}\n",
                definition.name,
                one_line(&definition.description, 120)
            ));
        }
        if matches.len() > MAX_LISTED {
            text.push_str(&format!(
                "({} more not listed: add words to the query to narrow it.)\n",
                matches.len() - MAX_LISTED
            ));
        }
        text.push_str("Call more_tools with enable: [\"NAME\"] to use one.");
        ToolOutput::ok(text)
    }
}

impl Tool for MoreToolsTool {
    const NAME: &'static str = "more_tools";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"List the tools not offered up front (by `query`), or `enable` some by name: their definitions come back and they are offered from then on."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("query", ""), ("enable", "")]);
    type Input = MoreToolsInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    fn hints(&self) -> ToolHints {
        ToolHints {
            idempotent: true,
            ..hints_for(ToolKind::Session)
        }
    }

    fn offered(&self, session: &Session) -> bool {
        self.catalog.iter().any(|d| !session.tool_enabled(&d.name))
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        // Changes which definitions the session's requests carry; nothing outside it.
        vec![Effect::OwnState {
            changes: !input.enable.is_empty(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        match (&input.query, input.enable.as_slice()) {
            (_, [_, ..]) => format!("{} enable {}", Self::NAME, input.enable.join(", ")),
            (Some(query), []) => format!("{} {}", Self::NAME, one_line(query, 60)),
            (None, []) => Self::NAME.to_owned(),
        }
    }

    async fn run(&self, input: MoreToolsInput, ctx: ToolContext) -> ToolResult {
        if input.enable.is_empty() {
            Ok(self.list(input.query.as_deref(), &ctx.session))
        } else {
            self.enable(&input.enable, &ctx.session)
        }
    }
}
