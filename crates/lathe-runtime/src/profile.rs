//! Prompt profiles: how much of each tool's definition a request carries.
//!
//! The definitions of all built-in tools are about 5,700 tokens. In a window of 16k tokens or
//! less that is a third of the window or more, before the task has begun, so such windows get
//! the compact profile: each tool's short description ([`Tool::COMPACT_DESCRIPTION`]), only its
//! common parameters listed ([`Tool::COMPACT_PARAMETERS`]; the others are still accepted), and
//! the tools few tasks need ([`Tool::ON_DEMAND`], and every tool added at run time: MCP
//! servers', sub-agents') offered on demand through `more_tools`
//! ([`Registry::use_profile`](crate::Registry::use_profile)).
//!
//! [`Tool::COMPACT_DESCRIPTION`]: crate::Tool::COMPACT_DESCRIPTION
//! [`Tool::COMPACT_PARAMETERS`]: crate::Tool::COMPACT_PARAMETERS
//! [`Tool::ON_DEMAND`]: crate::Tool::ON_DEMAND

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The largest window, in tokens, that gets [`Profile::Compact`] by default.
pub const COMPACT_WINDOW_MAX: u64 = 16_384;

/// How much of the tools' definitions (and of the system prompt) a request carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// Every tool, every parameter, the full descriptions.
    #[default]
    Full,
    /// Short descriptions, the common parameters, optional tools on demand: for small windows.
    Compact,
}

impl Profile {
    /// The profile for a window of `tokens`: compact up to [`COMPACT_WINDOW_MAX`], else full.
    pub fn for_window(tokens: u64) -> Profile {
        if tokens <= COMPACT_WINDOW_MAX {
            Profile::Compact
        } else {
            Profile::Full
        }
    }

    /// `full` or `compact`.
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Full => "full",
            Profile::Compact => "compact",
        }
    }
}

/// The compact form of a parameters schema: only the `listed` properties, in the schema's
/// order, each with its short description (none for `""`) and without the descriptions nested
/// in it (the types and `enum` lists stay); `required` keeps the listed ones.
pub(crate) fn compact_schema(full: &Value, listed: &[(&str, &str)]) -> Value {
    let mut schema = full.clone();
    let Some(object) = schema.as_object_mut() else {
        return schema;
    };
    if let Some(Value::Object(properties)) = object.get_mut("properties") {
        let kept: Map<String, Value> = std::mem::take(properties)
            .into_iter()
            .filter_map(|(name, mut property)| {
                let (_, short) = listed.iter().find(|(n, _)| *n == name)?;
                strip_descriptions(&mut property);
                if !short.is_empty()
                    && let Some(fields) = property.as_object_mut()
                {
                    fields.insert("description".into(), Value::String((*short).to_owned()));
                }
                Some((name, property))
            })
            .collect();
        *properties = kept;
    }
    if let Some(Value::Array(required)) = object.get_mut("required") {
        required.retain(|r| listed.iter().any(|(n, _)| Some(*n) == r.as_str()));
    }
    schema
}

/// Drops the descriptions, and the defaults and minimums the short descriptions imply
/// (`false`, `0`), at any depth.
fn strip_descriptions(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.remove("description");
            object.remove("default");
            object.remove("minimum");
            for (key, inner) in object.iter_mut() {
                // A property named `description` is a parameter, not a doc string.
                if key == "properties"
                    && let Value::Object(properties) = inner
                {
                    properties.values_mut().for_each(strip_descriptions);
                } else {
                    strip_descriptions(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn windows_up_to_16k_are_compact() {
        assert_eq!(Profile::for_window(2_048), Profile::Compact);
        assert_eq!(Profile::for_window(16_384), Profile::Compact);
        assert_eq!(Profile::for_window(16_385), Profile::Full);
        assert_eq!(Profile::for_window(32_768), Profile::Full);
    }

    #[test]
    fn a_compact_schema_lists_the_chosen_parameters_with_short_descriptions() {
        let full = json!({"type": "object", "required": ["a", "c"], "properties": {
            "a": {"type": "string", "description": "long a"},
            "b": {"type": "integer", "description": "long b"},
            "d": {"type": "boolean", "default": false, "description": "d"},
            "c": {"type": "array", "description": "long c", "items": {"type": "object",
                "description": "one", "properties": {"x": {"type": "string", "description": "x",
                "minimum": 0}}}},
        }});
        let compact = compact_schema(&full, &[("c", ""), ("a", "short a"), ("d", "")]);
        assert_eq!(
            compact,
            json!({"type": "object", "required": ["a", "c"], "properties": {
                "a": {"type": "string", "description": "short a"},
                "d": {"type": "boolean"},
                "c": {"type": "array", "items": {"type": "object",
                    "properties": {"x": {"type": "string"}}}},
            }})
        );
    }
}
