//! The tools that exist, and how a name the model wrote maps onto one.

use serde_json::Value;
use std::collections::HashMap;

// The registry folds names the same way (`Read-File`, `readFile`, `read.file` -> `readfile`).
use lathe_runtime::args::fold_name;

/// Prefixes models put before tool names (`functions.read_file` from OpenAI-style prompts,
/// `default_api.read_file` from Gemini-style ones).
const NAMESPACES: &[&str] = &[
    "functions.",
    "function.",
    "tools.",
    "tool.",
    "default_api.",
    "api.",
];

/// The names (and parameter names) of the tools the model may call.
#[derive(Debug, Clone, Default)]
pub struct ToolNames {
    names: Vec<String>,
    normalised: HashMap<String, usize>,
    /// Parameter names per tool, required ones first, for positional arguments.
    params: Vec<Vec<String>>,
}

/// How a written name matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameMatch {
    /// The exact name.
    Exact(String),
    /// A real name after normalising case, `_`, `-`, `.` and namespaces.
    Normalised(String),
    /// No tool by that name (the registry answers the model, naming the closest).
    Unknown,
}

impl ToolNames {
    /// Tools with these names and no known parameters.
    pub fn new<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut out = ToolNames::default();
        for name in names {
            out.add(name.into(), Vec::new());
        }
        out
    }

    /// Tools from definitions in the function-calling shape (`{"type": "function", "function":
    /// {"name", "parameters"}}`, or the bare function object).
    pub fn from_definitions(definitions: &[Value]) -> Self {
        let mut out = ToolNames::default();
        for definition in definitions {
            let function = definition.get("function").unwrap_or(definition);
            let Some(name) = function["name"].as_str() else {
                continue;
            };
            let parameters = &function["parameters"];
            let mut params: Vec<String> = parameters["required"]
                .as_array()
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(properties) = parameters["properties"].as_object() {
                for key in properties.keys() {
                    if !params.contains(key) {
                        params.push(key.clone());
                    }
                }
            }
            out.add(name.to_string(), params);
        }
        out
    }

    fn add(&mut self, name: String, params: Vec<String>) {
        if self.names.contains(&name) {
            return;
        }
        self.normalised
            .entry(fold_name(&name))
            .or_insert(self.names.len());
        self.names.push(name);
        self.params.push(params);
    }

    /// Adds other names for the tools (`bash` for `shell`: the registry's aliases), as
    /// `(alias, tool)` pairs; an alias resolves like a normalised name. Names win over aliases.
    pub fn with_aliases<I, A, T>(mut self, aliases: I) -> Self
    where
        I: IntoIterator<Item = (A, T)>,
        A: AsRef<str>,
        T: AsRef<str>,
    {
        for (alias, tool) in aliases {
            if let Some(index) = self.names.iter().position(|n| n == tool.as_ref()) {
                self.normalised
                    .entry(fold_name(alias.as_ref()))
                    .or_insert(index);
            }
        }
        self
    }

    /// Whether there are no tools.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names, in the order given.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The parameter names of `tool` (required first), when known.
    pub fn params(&self, tool: &str) -> &[String] {
        self.names
            .iter()
            .position(|n| n == tool)
            .map(|i| self.params[i].as_slice())
            .unwrap_or(&[])
    }

    /// Matches `written` exactly, then normalised (case, `_`, `-`, `.`, spaces, then without a
    /// namespace such as `functions.`).
    pub fn resolve(&self, written: &str) -> NameMatch {
        match self.lookup(written) {
            Some((name, true)) => NameMatch::Exact(name),
            Some((name, false)) => NameMatch::Normalised(name),
            None => NameMatch::Unknown,
        }
    }

    /// The resolved name, when `written` names a real tool.
    pub fn known(&self, written: &str) -> Option<String> {
        self.lookup(written).map(|(name, _)| name)
    }

    /// The real name for `written` and whether it matched exactly; no suggestions computed.
    fn lookup(&self, written: &str) -> Option<(String, bool)> {
        let written = written.trim();
        if self.names.iter().any(|n| n == written) {
            return Some((written.to_string(), true));
        }
        if let Some(name) = self.find_normalised(written) {
            return Some((name, false));
        }
        let lower = written.to_ascii_lowercase();
        NAMESPACES
            .iter()
            .filter_map(|ns| lower.strip_prefix(ns))
            .find_map(|rest| self.find_normalised(rest))
            .map(|name| (name, false))
    }

    fn find_normalised(&self, written: &str) -> Option<String> {
        self.normalised
            .get(&fold_name(written))
            .map(|&i| self.names[i].clone())
    }

    /// How alike `written` is to the closest real name, from 0 to 1.
    pub(crate) fn similarity(&self, written: &str) -> f64 {
        let target = fold_name(written);
        self.names
            .iter()
            .map(|n| strsim::normalized_damerau_levenshtein(&target, &fold_name(n)))
            .fold(0.0, f64::max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names() -> ToolNames {
        ToolNames::new([
            "read_file",
            "write_file",
            "edit_file",
            "grep",
            "list_files",
            "shell",
        ])
    }

    #[test]
    fn exact_then_normalised() {
        let n = names();
        assert_eq!(n.resolve("read_file"), NameMatch::Exact("read_file".into()));
        for written in [
            "ReadFile",
            "read-file",
            "READ_FILE",
            "read.file",
            "readFile",
            " read_file ",
            "functions.read_file",
            "default_api.read_file",
        ] {
            let got = n.resolve(written);
            assert!(
                got == NameMatch::Normalised("read_file".into())
                    || got == NameMatch::Exact("read_file".into()),
                "{written}: {got:?}"
            );
        }
    }

    #[test]
    fn unknown_names_stay_unknown_and_aliases_resolve() {
        let n = names();
        assert_eq!(n.resolve("raed_file"), NameMatch::Unknown);
        assert_eq!(n.resolve("run_shell_command"), NameMatch::Unknown);
        let n = n.with_aliases([("run_shell_command", "shell"), ("cat", "nope")]);
        assert_eq!(
            n.resolve("run_shell_command"),
            NameMatch::Normalised("shell".into())
        );
        assert_eq!(
            n.resolve("RunShellCommand"),
            NameMatch::Normalised("shell".into())
        );
        // An alias of a tool this session does not have is no name.
        assert_eq!(n.resolve("cat"), NameMatch::Unknown);
        assert!(n.similarity("raed_file") > 0.7);
        assert!(n.similarity("my-app") < 0.5);
        assert_eq!(ToolNames::default().resolve("x"), NameMatch::Unknown);
    }

    #[test]
    fn definitions_give_names_and_parameters() {
        let n = ToolNames::from_definitions(&[
            json!({"type": "function", "function": {"name": "read_file",
            "parameters": {"type": "object", "properties": {"offset": {}, "path": {}, "limit": {}}, "required": ["path"]}}}),
        ]);
        assert_eq!(n.names(), ["read_file"]);
        assert_eq!(n.params("read_file"), ["path", "offset", "limit"]);
        assert!(n.params("nope").is_empty());
    }
}
