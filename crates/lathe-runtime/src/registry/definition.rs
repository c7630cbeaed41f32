//! A tool's definition, as models and MCP clients receive it, in both profiles.

use serde::Serialize;
use serde_json::{Value, json};

use crate::profile::compact_schema;
use crate::schema::tool_schema;
use crate::tool::{Tool, ToolHints, ToolKind};

/// A tool's definition as sent to models and MCP clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The model-facing name.
    pub name: String,
    /// The description (the input type's doc comment).
    pub description: String,
    /// The JSON Schema of the parameters.
    pub parameters: Value,
    /// Other names the tool answers to ([`Tool::ALIASES`]).
    #[serde(skip)]
    pub aliases: Vec<String>,
    /// What the tool does to the world.
    #[serde(skip)]
    pub kind: ToolKind,
    /// Hints for MCP clients.
    #[serde(skip)]
    pub hints: ToolHints,
    /// String parameters passed through without the double-escape repair
    /// ([`Tool::RAW_STRINGS`]).
    #[serde(skip)]
    pub raw_strings: Vec<String>,
}

impl ToolDefinition {
    /// The definition of a typed tool.
    pub fn of<T: Tool>(tool: &T) -> Self {
        let (description, parameters) = tool_schema::<T::Input>();
        ToolDefinition {
            name: T::NAME.to_owned(),
            description,
            parameters,
            aliases: T::ALIASES.iter().map(|a| (*a).to_owned()).collect(),
            kind: tool.kind(),
            hints: tool.hints(),
            raw_strings: T::RAW_STRINGS.iter().map(|r| (*r).to_owned()).collect(),
        }
    }

    /// The function-calling shape OpenAI and Ollama accept.
    pub fn to_function(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }
}

/// The compact form of typed tool `T`'s `full` definition, when `T` has one.
pub(super) fn compact_definition<T: Tool>(full: &ToolDefinition) -> Option<ToolDefinition> {
    if T::COMPACT_DESCRIPTION.is_none() && T::COMPACT_PARAMETERS.is_none() {
        return None;
    }
    let mut compact = full.clone();
    if let Some(description) = T::COMPACT_DESCRIPTION {
        compact.description = description.to_owned();
    }
    if let Some(listed) = T::COMPACT_PARAMETERS {
        compact.parameters = compact_schema(&full.parameters, listed);
    }
    Some(compact)
}
