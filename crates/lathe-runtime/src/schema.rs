//! Turning a Rust input type into the JSON Schema models read: inlined, without `$schema`,
//! titles or nullable unions, with enums as plain `enum` lists.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

/// The tool description (the input type's doc comment) and its parameters schema.
pub fn tool_schema<T: JsonSchema>() -> (String, Value) {
    let settings = SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    let description = value
        .as_object_mut()
        .and_then(|o| o.remove("description"))
        .and_then(|d| d.as_str().map(str::to_owned))
        .unwrap_or_default();
    clean(&mut value);
    if let Some(object) = value.as_object_mut() {
        object.remove("title");
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        object.insert("type".into(), Value::String("object".into()));
    }
    (description, value)
}

/// A JSON Schema from outside (another MCP server's tool) in the shape the built-in tools'
/// schemas have, so that small models and strict servers read both alike: local `$ref`s
/// (`#/$defs/..`, `#/definitions/..`) inlined, no `$schema`, titles or nullable unions, enums
/// as plain lists, and an `object` at the top with `properties`.
pub fn portable_schema(mut value: Value) -> Value {
    let defs: Map<String, Value> = value
        .as_object_mut()
        .map(|o| {
            let mut defs = Map::new();
            for key in ["$defs", "definitions"] {
                if let Some(Value::Object(found)) = o.remove(key) {
                    defs.extend(found);
                }
            }
            defs
        })
        .unwrap_or_default();
    inline_refs(&mut value, &defs, 0);
    clean(&mut value);
    if !value.is_object() {
        value = Value::Object(Map::new());
    }
    if let Some(object) = value.as_object_mut() {
        object
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        object.insert("type".into(), Value::String("object".into()));
    }
    value
}

/// Replaces `{"$ref": "#/$defs/NAME"}` with the definition (to a depth of 8: a recursive type
/// is left an open object past it).
fn inline_refs(value: &mut Value, defs: &Map<String, Value>, depth: usize) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(target)) = object.get("$ref") {
                let name = target
                    .strip_prefix("#/$defs/")
                    .or_else(|| target.strip_prefix("#/definitions/"));
                let found = name.and_then(|n| defs.get(n)).cloned();
                object.remove("$ref");
                if let (Some(Value::Object(found)), true) = (found, depth < 8) {
                    for (k, v) in found {
                        object.entry(k).or_insert(v);
                    }
                    inline_refs(value, defs, depth + 1);
                    return;
                }
            }
            for child in object.values_mut() {
                inline_refs(child, defs, depth);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| inline_refs(i, defs, depth)),
        _ => {}
    }
}

fn clean(value: &mut Value) {
    match value {
        Value::Object(object) => {
            object.remove("$schema");
            object.remove("title");
            object.remove("definitions");
            // `"default": null` on an optional field (schemars writes it for `#[serde(default)]`
            // options) is not a value of the field's type once `null` is dropped from it, and
            // strict validators reject the schema; absence already says "not given".
            if object.get("default").is_some_and(Value::is_null) {
                object.remove("default");
            }
            if object
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| {
                    matches!(
                        f,
                        "uint"
                            | "uint8"
                            | "uint16"
                            | "uint32"
                            | "uint64"
                            | "int"
                            | "int32"
                            | "int64"
                            | "double"
                            | "float"
                    )
                })
            {
                object.remove("format");
            }
            // Option<T>: ["integer", "null"] -> "integer"; absence already means "not given".
            if let Some(Value::Array(types)) = object.get("type") {
                let kept: Vec<Value> = types
                    .iter()
                    .filter(|t| t.as_str() != Some("null"))
                    .cloned()
                    .collect();
                if kept.len() == 1 {
                    object.insert("type".into(), kept[0].clone());
                } else {
                    object.insert("type".into(), Value::Array(kept));
                }
            }
            // anyOf [X, {type: null}] -> X
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(options)) = object.get(key) {
                    let non_null: Vec<Value> = options
                        .iter()
                        .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                        .cloned()
                        .collect();
                    let all_consts = !non_null.is_empty()
                        && non_null
                            .iter()
                            .all(|o| o.get("const").is_some() || o.get("enum").is_some());
                    if all_consts {
                        let mut values = Vec::new();
                        let mut docs = Vec::new();
                        for option in &non_null {
                            let consts: Vec<Value> = match option.get("const") {
                                Some(c) => vec![c.clone()],
                                None => option["enum"].as_array().cloned().unwrap_or_default(),
                            };
                            if let Some(doc) = option.get("description").and_then(Value::as_str) {
                                for c in &consts {
                                    docs.push(format!(
                                        "`{}`: {doc}",
                                        c.as_str().unwrap_or_default()
                                    ));
                                }
                            }
                            values.extend(consts);
                        }
                        object.remove(key);
                        object.insert("type".into(), Value::String("string".into()));
                        object.insert("enum".into(), Value::Array(values));
                        if !docs.is_empty() {
                            let base = object
                                .get("description")
                                .and_then(Value::as_str)
                                .map(|d| format!("{d} "))
                                .unwrap_or_default();
                            object.insert(
                                "description".into(),
                                Value::String(format!("{base}{}", docs.join("; "))),
                            );
                        }
                    } else if non_null.len() == 1 && options.len() == 2 {
                        let only = non_null[0].clone();
                        object.remove(key);
                        if let Value::Object(inner) = only {
                            for (k, v) in inner {
                                object.entry(k).or_insert(v);
                            }
                        }
                    }
                }
            }
            if let Some(Value::Array(values)) = object.get_mut("enum") {
                values.retain(|v| !v.is_null());
            }
            for child in object.values_mut() {
                clean(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(clean),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Reads things.
    ///
    /// Second paragraph.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Input {
        /// The path.
        path: String,
        /// How many.
        limit: Option<u32>,
        /// What to show.
        mode: Option<Mode>,
        /// Items.
        items: Option<Vec<Item>>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Mode {
        /// Lines.
        Content,
        /// Numbers.
        Count,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        /// A name.
        name: String,
    }

    #[test]
    fn outside_schemas_are_made_portable() {
        let schema = portable_schema(serde_json::json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Args",
            "type": "object",
            "$defs": {"Mode": {"title": "Mode", "enum": ["a", "b"], "type": "string"}},
            "properties": {
                "mode": {"$ref": "#/$defs/Mode"},
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": null}
            }
        }));
        let text = schema.to_string();
        assert!(
            !text.contains("$ref") && !text.contains("$defs") && !text.contains("null"),
            "{text}"
        );
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            serde_json::json!(["a", "b"])
        );
        assert_eq!(schema["properties"]["limit"]["type"], "integer");
        assert_eq!(portable_schema(Value::Null)["type"], "object");
    }

    #[test]
    fn schema_is_inlined_and_plain() {
        let (description, schema) = tool_schema::<Input>();
        assert_eq!(description, "Reads things.\n\nSecond paragraph.");
        let text = schema.to_string();
        assert!(
            !text.contains("$ref") && !text.contains("null") && !text.contains("title"),
            "{text}"
        );
        assert!(!text.contains("\"format\""), "{text}");
        assert_eq!(schema["properties"]["limit"]["type"], "integer");
        assert_eq!(
            schema["properties"]["mode"]["enum"],
            serde_json::json!(["content", "count"])
        );
        assert_eq!(
            schema["properties"]["items"]["items"]["properties"]["name"]["type"],
            "string"
        );
        assert_eq!(schema["required"], serde_json::json!(["path"]));
    }
}
