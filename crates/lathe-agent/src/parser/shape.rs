//! Which JSON objects are tool calls, and where their name and arguments are.

use super::json::parse_whole;
use super::names::ToolNames;
use super::{Repair, add_repairs};
use serde_json::{Map, Value};

/// Keys a model puts the tool name under, in the order tried.
const NAME_KEYS: &[&str] = &[
    "name",
    "tool",
    "tool_name",
    "toolName",
    "function",
    "function_name",
    "action",
];
/// Keys a model puts the arguments under, in the order tried.
const ARGUMENT_KEYS: &[&str] = &[
    "arguments",
    "args",
    "params",
    "parameters",
    "input",
    "action_input",
    "tool_input",
    "kwargs",
];
/// Keys that wrap calls: `{"tool_calls": [...]}`.
const WRAPPER_KEYS: &[&str] = &["tool_calls", "tool_call", "function_call", "calls"];
/// Below this similarity to a real tool, an object with an unknown name outside an explicit
/// wrapper is data, not a misspelt call.
const TYPO_SIMILARITY: f64 = 0.7;

/// Where the object was found, which decides how sure we are that it is meant as a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Context {
    /// Inside a call wrapper (`<tool_call>`, `[TOOL_CALLS]`, ...): any name is a call, unknown
    /// names get an answer.
    Explicit,
    /// Bare JSON or a fence: a call only when it names a real tool (or nearly, with explicit
    /// arguments).
    Implicit,
}

/// A call read from an object, before its name is resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallParts {
    pub written: String,
    pub arguments: Value,
    pub id: Option<String>,
    pub repairs: Vec<Repair>,
}

/// The calls in `value`: one object, an array of them, or a `{"tool_calls": [...]}` wrapper.
/// `None` when any element is not a call (a JSON sample is text as a whole).
pub(crate) fn calls_in(
    value: &Value,
    names: &ToolNames,
    context: Context,
) -> Option<Vec<CallParts>> {
    calls_in_depth(value, names, context, 0)
}

fn calls_in_depth(
    value: &Value,
    names: &ToolNames,
    context: Context,
    depth: usize,
) -> Option<Vec<CallParts>> {
    if depth > 2 {
        return None;
    }
    match value {
        Value::Array(items) if !items.is_empty() => {
            let mut out = Vec::new();
            for item in items {
                out.extend(calls_in_depth(item, names, context, depth + 1)?);
            }
            Some(out)
        }
        Value::Object(map) => {
            if map.len() == 1
                && let Some((key, inner)) = map.iter().next()
                && WRAPPER_KEYS.contains(&key.as_str())
                && (inner.is_array() || inner.is_object())
            {
                return calls_in_depth(inner, names, Context::Explicit, depth + 1);
            }
            // Apertus: `{"NAME": {arguments}}`, inside a wrapper and for a real tool only.
            if context == Context::Explicit
                && map.len() == 1
                && let Some((key, Value::Object(arguments))) = map.iter().next()
                && names.known(key).is_some()
            {
                return Some(vec![CallParts {
                    written: key.clone(),
                    arguments: Value::Object(arguments.clone()),
                    id: None,
                    repairs: Vec::new(),
                }]);
            }
            object_call(map, names, context).map(|c| vec![c])
        }
        _ => None,
    }
}

/// One object as a call.
pub(crate) fn object_call(
    obj: &Map<String, Value>,
    names: &ToolNames,
    context: Context,
) -> Option<CallParts> {
    let mut repairs = Vec::new();
    let id = obj.get("id").and_then(Value::as_str).map(str::to_string);
    // OpenAI's shape: {"type": "function", "function": {"name", "arguments"}}.
    let (written, raw_arguments, explicit_arguments) =
        if let Some(function) = obj.get("function").and_then(Value::as_object) {
            let name = function.get("name")?.as_str()?.to_string();
            let arguments = ARGUMENT_KEYS.iter().find_map(|k| function.get(*k)).cloned();
            let explicit = arguments.is_some();
            (
                name,
                arguments.unwrap_or(Value::Object(Map::new())),
                explicit,
            )
        } else {
            let (name_key, name) = NAME_KEYS.iter().find_map(|k| {
                obj.get(*k)
                    .and_then(Value::as_str)
                    .map(|v| (*k, v.to_string()))
            })?;
            match ARGUMENT_KEYS.iter().find_map(|k| obj.get(*k)) {
                Some(arguments) => (name, arguments.clone(), true),
                None => {
                    // Arguments at the top level: {"name": "read_file", "path": "a.rs"}.
                    let rest: Map<String, Value> = obj
                        .iter()
                        .filter(|(k, _)| *k != name_key && !matches!(k.as_str(), "id" | "type"))
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if !rest.is_empty() {
                        repairs.push(Repair::TopLevelArguments);
                    }
                    (name, Value::Object(rest), false)
                }
            }
        };
    let written = written.trim().to_string();
    if written.is_empty() || written.chars().count() > 100 {
        return None;
    }
    let arguments = arguments_object(raw_arguments, &mut repairs)?;
    if looks_like_definition(obj, &arguments) {
        return None;
    }
    if context == Context::Implicit && names.known(&written).is_none() {
        // An unknown name outside a wrapper: a misspelt call only when it is close to a real
        // tool and its arguments are explicit; otherwise it is data ({"name": "my-app", ...}).
        if !explicit_arguments || names.similarity(&written) < TYPO_SIMILARITY {
            return None;
        }
    }
    Some(CallParts {
        written,
        arguments,
        id,
        repairs,
    })
}

/// Arguments as an object: null is empty, a string holding JSON is read (twice at most, for
/// double encoding).
pub(crate) fn arguments_object(value: Value, repairs: &mut Vec<Repair>) -> Option<Value> {
    let mut value = value;
    for _ in 0..3 {
        match value {
            Value::Object(_) => return Some(value),
            Value::Null => return Some(Value::Object(Map::new())),
            Value::String(ref s) if s.trim().is_empty() => return Some(Value::Object(Map::new())),
            Value::String(ref s) => {
                let parsed = parse_whole(s)?;
                add_repairs(repairs, &[Repair::ArgumentsAsString]);
                add_repairs(repairs, &parsed.repairs);
                if let Some(cut) = parsed.cut_off {
                    add_repairs(
                        repairs,
                        &[Repair::Truncated {
                            in_string: cut.in_string,
                        }],
                    );
                }
                value = parsed.value;
            }
            _ => return None,
        }
    }
    None
}

/// A tool definition the model echoed (`{"name", "description", "parameters": {"type":
/// "object", "properties": ...}}`) is not a call.
fn looks_like_definition(obj: &Map<String, Value>, arguments: &Value) -> bool {
    let schema_like = arguments.get("type").and_then(Value::as_str) == Some("object")
        && arguments.get("properties").is_some_and(Value::is_object);
    let described = obj.contains_key("description")
        || obj
            .get("function")
            .and_then(|f| f.get("description"))
            .is_some();
    schema_like || (described && arguments.get("properties").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> ToolNames {
        ToolNames::new(["read_file", "write_file", "grep"])
    }

    fn one(value: Value, context: Context) -> Option<CallParts> {
        calls_in(&value, &names(), context).map(|mut v| {
            assert_eq!(v.len(), 1);
            v.remove(0)
        })
    }

    #[test]
    fn every_name_and_argument_key() {
        for name_key in NAME_KEYS {
            for args_key in ARGUMENT_KEYS {
                let mut obj = Map::new();
                obj.insert(name_key.to_string(), json!("read_file"));
                obj.insert(args_key.to_string(), json!({"path": "a"}));
                let call = one(Value::Object(obj), Context::Implicit)
                    .unwrap_or_else(|| panic!("{name_key}/{args_key}"));
                assert_eq!(call.written, "read_file");
                assert_eq!(call.arguments, json!({"path": "a"}));
            }
        }
    }

    #[test]
    fn openai_shape_top_level_and_string_arguments() {
        let call = one(
            json!({"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"x\"}"}}),
            Context::Implicit,
        )
        .unwrap();
        assert_eq!(call.id.as_deref(), Some("c1"));
        assert_eq!(call.arguments, json!({"pattern": "x"}));
        assert!(call.repairs.contains(&Repair::ArgumentsAsString));

        let call = one(
            json!({"name": "read_file", "path": "a.rs", "type": "x"}),
            Context::Implicit,
        )
        .unwrap();
        assert_eq!(call.arguments, json!({"path": "a.rs"}));
        assert!(call.repairs.contains(&Repair::TopLevelArguments));

        let call = one(
            json!({"name": "grep", "arguments": "\"{\\\"pattern\\\": \\\"y\\\"}\""}),
            Context::Implicit,
        )
        .unwrap();
        assert_eq!(call.arguments, json!({"pattern": "y"}), "double-encoded");
        let call = one(
            json!({"name": "grep", "arguments": null}),
            Context::Implicit,
        )
        .unwrap();
        assert_eq!(call.arguments, json!({}));
    }

    #[test]
    fn wrappers_and_arrays() {
        let calls = calls_in(
            &json!({"tool_calls": [{"name": "grep", "arguments": {}}, {"name": "read_file", "arguments": {}}]}),
            &names(),
            Context::Implicit,
        )
        .unwrap();
        assert_eq!(calls.len(), 2);
        // One element that is not a call makes the whole array data.
        assert!(
            calls_in(
                &json!([{"name": "grep", "arguments": {}}, {"x": 1}]),
                &names(),
                Context::Implicit
            )
            .is_none()
        );
        assert!(calls_in(&json!([]), &names(), Context::Implicit).is_none());
    }

    #[test]
    fn data_is_not_a_call() {
        for value in [
            json!({"name": "my-app", "version": "1.0.0"}),
            json!({"name": "John", "arguments": {"age": 3}}),
            json!({"path": "a.rs"}),
            json!({"name": "read_file", "arguments": [1, 2]}),
            json!({"name": "read_file", "description": "Reads", "parameters": {"type": "object", "properties": {}}}),
            json!({"type": "function", "function": {"name": "grep", "description": "x", "parameters": {"type": "object", "properties": {"a": {}}}}}),
            json!({"name": "", "arguments": {}}),
            json!("read_file"),
        ] {
            assert!(one(value.clone(), Context::Implicit).is_none(), "{value}");
        }
    }

    #[test]
    fn unknown_names_depend_on_the_context() {
        assert!(
            one(
                json!({"name": "raed_file", "arguments": {"path": "a"}}),
                Context::Implicit
            )
            .is_some()
        );
        assert!(one(json!({"name": "raed_file", "path": "a"}), Context::Implicit).is_none());
        assert!(
            one(
                json!({"name": "deploy", "arguments": {}}),
                Context::Implicit
            )
            .is_none()
        );
        assert!(
            one(
                json!({"name": "deploy", "arguments": {}}),
                Context::Explicit
            )
            .is_some()
        );
    }
}
