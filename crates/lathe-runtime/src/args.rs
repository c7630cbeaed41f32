//! Lenient argument handling: what small models send is brought to the schema's shape before it
//! is validated, so that a near-miss costs no turn.
//!
//! In order: arguments given as a JSON string holding an object are parsed; keys are matched to
//! the schema's properties exactly, then after folding case and `_`/`-`, then through aliases
//! (`file`, `file_path`, `filePath` for `path`); scalars that arrive as strings are coerced to the
//! schema's type when the whole string parses; a string with no real newline but a literal `\n`
//! has its escapes turned into the real characters, unless the whole string says it is meant as
//! written (LaTeX, a Windows path, a regex, text about escapes: see [`undo_double_escape`]).
//! Tools whose text goes to a file (`write_file`'s `content`, `edit_file`'s strings) take their
//! strings raw and repair them themselves, knowing the file's type, and say so in the result.

use serde_json::{Map, Value};

mod escapes;

pub use escapes::unescape;
pub use escapes::{FileKind, REPAIR_NOTE, meant_literally, undo_double_escape};

/// Names models use for a path parameter.
const PATH_ALIASES: &[&str] = &[
    "path",
    "file",
    "file_path",
    "filepath",
    "filename",
    "file_name",
];

/// Other names models use for a parameter, learnt from other agents' tools (folded form first),
/// applied only when the schema has the target and not the alias.
const ALIASES: &[(&str, &str)] = &[
    ("i", "case_insensitive"),
    ("ignorecase", "case_insensitive"),
    ("caseinsensitive", "case_insensitive"),
    ("headlimit", "limit"),
    ("maxresults", "limit"),
    ("regex", "pattern"),
    ("query", "pattern"),
    ("cmd", "command"),
    ("oldstr", "old_string"),
    ("old", "old_string"),
    ("newstr", "new_string"),
    ("new", "new_string"),
    ("contents", "content"),
    ("filecontent", "content"),
    ("directory", "path"),
    ("dir", "path"),
    ("workdir", "cwd"),
    ("workingdirectory", "cwd"),
    ("commandid", "id"),
    // apply_patch: OpenCode's `patchText`, Codex's free-form `input`.
    ("patchtext", "patch"),
    ("input", "patch"),
];

/// An argument problem the model can fix; `Display` says which parameter and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ArgumentError(pub String);

/// Folds a name for comparison: lowercase, without `_`, `-`, `.` and spaces.
pub fn fold_name(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Brings `args` to the shape of `schema` (an object schema with inlined subschemas) and checks
/// required parameters and types.
pub fn normalize(args: Value, schema: &Value) -> Result<Value, ArgumentError> {
    normalize_keeping(args, schema, &[])
}

/// [`normalize`], leaving the strings of the parameters named in `raw` (at any depth) as given:
/// no double-escape repair.
pub fn normalize_keeping(
    args: Value,
    schema: &Value,
    raw: &[&str],
) -> Result<Value, ArgumentError> {
    let args = match args {
        Value::Null => Value::Object(Map::new()),
        Value::String(text) => match parse_whole(&text) {
            Some(Value::Object(map)) => Value::Object(map),
            Some(Value::Null) => Value::Object(Map::new()),
            _ if text.trim().is_empty() => Value::Object(Map::new()),
            _ => {
                return Err(ArgumentError(format!(
                    "the arguments must be a JSON object of parameters, got the string {}",
                    preview(&Value::String(text))
                )));
            }
        },
        other => other,
    };
    normalize_value(args, schema, "", Repair::Yes(raw))
}

/// Whether strings get the double-escape repair, and the parameters exempt below this point.
#[derive(Clone, Copy)]
enum Repair<'a> {
    Yes(&'a [&'a str]),
    No,
}

fn normalize_value(
    value: Value,
    schema: &Value,
    at: &str,
    repair: Repair<'_>,
) -> Result<Value, ArgumentError> {
    let types = schema_types(schema);
    if types.is_empty() {
        return Ok(value);
    }
    let value = coerce(value, &types);
    let matched = types.iter().any(|t| type_matches(&value, t));
    if !matched {
        return Err(ArgumentError(format!(
            "{} must be {}, got {}",
            describe_at(at),
            expected(schema, &types),
            preview(&value)
        )));
    }
    if let (Some(minimum), Some(number)) = (
        schema.get("minimum").and_then(Value::as_f64),
        value.as_f64(),
    ) && number < minimum
    {
        return Err(ArgumentError(format!(
            "{} must be {} or more, got {}",
            describe_at(at),
            Value::from(minimum as i64),
            preview(&value)
        )));
    }
    let value = match value {
        Value::Object(map) if types.iter().any(|t| t == "object") => {
            Value::Object(normalize_object(map, schema, at, repair)?)
        }
        Value::Array(items) if types.iter().any(|t| t == "array") => {
            let item_schema = schema.get("items").cloned().unwrap_or(Value::Bool(true));
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                out.push(normalize_value(
                    item,
                    &item_schema,
                    &format!("{at}[{i}]"),
                    repair,
                )?);
            }
            Value::Array(out)
        }
        Value::String(text) if matches!(repair, Repair::Yes(_)) => {
            Value::String(repair_double_escape(text))
        }
        other => other,
    };
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(&value)
    {
        // Accept a case-insensitive match for string enums ("Content" for "content").
        let folded = value.as_str().map(fold_name);
        if let Some(hit) = allowed
            .iter()
            .find(|a| a.as_str().is_some() && a.as_str().map(fold_name) == folded)
        {
            return Ok(hit.clone());
        }
        let names: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(ArgumentError(format!(
            "{} must be one of {}, got {}",
            describe_at(at),
            names.join(", "),
            preview(&value)
        )));
    }
    Ok(value)
}

fn normalize_object(
    map: Map<String, Value>,
    schema: &Value,
    at: &str,
    repair: Repair<'_>,
) -> Result<Map<String, Value>, ArgumentError> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut out = Map::new();
    let mut unknown = Vec::new();
    for (key, value) in map {
        match match_key(&key, properties) {
            Some(name) if !out.contains_key(&name) => {
                let sub = &properties[&name];
                let child_at = if at.is_empty() {
                    name.clone()
                } else {
                    format!("{at}.{name}")
                };
                // A null for an optional parameter means "not given".
                if value.is_null() && !schema_types(sub).iter().any(|t| t == "null") {
                    continue;
                }
                let child_repair = match repair {
                    Repair::Yes(raw) if raw.contains(&name.as_str()) => Repair::No,
                    other => other,
                };
                out.insert(name, normalize_value(value, sub, &child_at, child_repair)?);
            }
            Some(_) => {}
            None => unknown.push(key),
        }
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let missing: Vec<&str> = required
        .iter()
        .copied()
        .filter(|name| !out.contains_key(*name))
        .collect();
    if missing.is_empty() && !unknown.is_empty() {
        let mut message = String::new();
        for key in &unknown {
            let hint = closest_property(key, properties)
                .map(|name| format!(" (did you mean `{name}`?)"))
                .unwrap_or_default();
            message.push_str(&format!(
                "unknown parameter `{}`{hint}\n",
                qualified(at, key)
            ));
        }
        message.push_str(&format!(
            "the parameters are: {}",
            properties.keys().cloned().collect::<Vec<_>>().join(", ")
        ));
        return Err(ArgumentError(message));
    }
    if !missing.is_empty() {
        let mut message = String::new();
        for name in &missing {
            let sub = &properties.get(*name).cloned().unwrap_or(Value::Null);
            let doc = sub
                .get("description")
                .and_then(Value::as_str)
                .map(|d| format!(": {}", first_sentence(d)))
                .unwrap_or_default();
            message.push_str(&format!(
                "missing required parameter `{}` ({}){doc}\n",
                qualified(at, name),
                expected(sub, &schema_types(sub))
            ));
        }
        if !unknown.is_empty() {
            message.push_str(&format!(
                "unknown parameters given: {}\n",
                unknown.join(", ")
            ));
        }
        let names: Vec<&String> = properties.keys().collect();
        message.push_str(&format!(
            "the parameters are: {}",
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        return Err(ArgumentError(message));
    }
    Ok(out)
}

/// The property most like an unknown key, when one is close enough to be a likely typo.
fn closest_property(key: &str, properties: &Map<String, Value>) -> Option<String> {
    let folded = fold_name(key);
    properties
        .keys()
        .map(|name| (strsim::jaro_winkler(&folded, &fold_name(name)), name))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, name)| name.clone())
}

/// Finds the schema property a given key means.
fn match_key(key: &str, properties: &Map<String, Value>) -> Option<String> {
    if properties.contains_key(key) {
        return Some(key.to_owned());
    }
    let folded = fold_name(key);
    if let Some(name) = properties.keys().find(|name| fold_name(name) == folded) {
        return Some(name.clone());
    }
    if let Some((_, target)) = ALIASES
        .iter()
        .find(|(alias, target)| *alias == folded && properties.contains_key(*target))
    {
        return Some((*target).to_owned());
    }
    let is_path_alias = PATH_ALIASES.iter().any(|alias| fold_name(alias) == folded);
    if is_path_alias {
        return PATH_ALIASES
            .iter()
            .find(|alias| properties.contains_key(**alias))
            .map(|alias| (*alias).to_owned());
    }
    None
}

fn schema_types(schema: &Value) -> Vec<String> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => {
            if schema.get("properties").is_some() {
                vec!["object".to_owned()]
            } else {
                Vec::new()
            }
        }
    }
}

fn type_matches(value: &Value, ty: &str) -> bool {
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// Coerces a value to one of `types` when it plainly means that.
fn coerce(value: Value, types: &[String]) -> Value {
    if types.iter().any(|t| type_matches(&value, t)) {
        return value;
    }
    let wants = |t: &str| types.iter().any(|x| x == t);
    match value {
        Value::String(text) => {
            let trimmed = text.trim();
            if wants("boolean") {
                match trimmed.to_ascii_lowercase().as_str() {
                    "true" => return Value::Bool(true),
                    "false" => return Value::Bool(false),
                    _ => {}
                }
            }
            if let Some(parsed) = parse_whole(trimmed) {
                let parsed = coerce_number(parsed, types);
                if types.iter().any(|t| type_matches(&parsed, t)) {
                    return parsed;
                }
            }
            if wants("array") {
                return Value::Array(vec![Value::String(text)]);
            }
            Value::String(text)
        }
        Value::Number(_) if wants("integer") && coerce_number(value.clone(), types).is_i64() => {
            coerce_number(value, types)
        }
        Value::Number(_) | Value::Bool(_) if wants("string") => Value::String(value.to_string()),
        Value::Number(_) => coerce_number(value, types),
        other if wants("array") && !other.is_null() => Value::Array(vec![other]),
        other => other,
    }
}

/// `10.0` where an integer is wanted becomes `10`.
fn coerce_number(value: Value, types: &[String]) -> Value {
    if types.iter().any(|t| t == "integer")
        && let Some(f) = value.as_f64()
        && !value.is_i64()
        && !value.is_u64()
        && f.fract() == 0.0
        && f.abs() < 9e15
    {
        return Value::from(f as i64);
    }
    value
}

fn parse_whole(text: &str) -> Option<Value> {
    serde_json::from_str(text.trim()).ok()
}

/// The double-escape repair of an argument with no file to go by: `text` with its double escapes
/// undone when the whole string says it was escaped twice ([`undo_double_escape`]), else as
/// given.
pub fn repair_double_escape(text: String) -> String {
    undo_double_escape(&text, FileKind::Other).unwrap_or(text)
}

/// Says that the tool refused `value` for parameter `name`, and what `schema` expects there.
pub(crate) fn describe_invalid(name: &str, value: &Value, schema: &Value) -> String {
    let doc = schema
        .get("description")
        .and_then(Value::as_str)
        .map(|d| format!(": {}", first_sentence(d)))
        .unwrap_or_default();
    format!(
        "parameter `{name}` cannot be {} (expected {}{doc})",
        preview(value),
        expected(schema, &schema_types(schema))
    )
}

fn describe_at(at: &str) -> String {
    if at.is_empty() {
        "the arguments".to_owned()
    } else {
        format!("parameter `{at}`")
    }
}

fn qualified(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    }
}

fn expected(schema: &Value, types: &[String]) -> String {
    let mut names: Vec<String> = types
        .iter()
        .filter(|t| *t != "null")
        .map(|t| match t.as_str() {
            "integer" => "an integer".to_owned(),
            "array" => {
                let item = schema
                    .get("items")
                    .map(|i| schema_types(i).join(" or "))
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| "value".to_owned());
                format!("an array of {item}")
            }
            "object" => "an object".to_owned(),
            other => format!("a {other}"),
        })
        .collect();
    if names.is_empty() {
        names.push("a value".to_owned());
    }
    names.join(" or ")
}

fn first_sentence(doc: &str) -> &str {
    let line = doc.lines().next().unwrap_or(doc);
    match line.find(". ") {
        Some(end) => &line[..=end],
        None => line,
    }
}

fn preview(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 80 {
        let cut: String = text.chars().take(77).collect();
        format!("{cut}...")
    } else {
        text
    }
}

#[cfg(test)]
mod tests;
