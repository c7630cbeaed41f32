//! The registry: typed tools erased once, serving the agent and the MCP server alike.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::args::{self, fold_name};
use crate::budget;
use crate::schema::tool_schema;
use crate::tool::{Tool, ToolContext, ToolHints, ToolKind, ToolOutput};

/// A tool's definition as sent to models and MCP clients.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDefinition {
    /// The model-facing name.
    pub name: &'static str,
    /// The description (the input type's doc comment).
    pub description: String,
    /// The JSON Schema of the parameters.
    pub parameters: Value,
    /// What the tool does to the world.
    #[serde(skip)]
    pub kind: ToolKind,
    /// Hints for MCP clients.
    #[serde(skip)]
    pub hints: ToolHints,
    /// String parameters passed through without the double-escape repair
    /// ([`Tool::RAW_STRINGS`]).
    #[serde(skip)]
    pub raw_strings: &'static [&'static str],
}

impl ToolDefinition {
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

/// A call whose tool name was resolved and whose arguments were normalised and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedCall {
    /// The registered name the call resolved to.
    pub name: &'static str,
    /// The normalised arguments.
    pub arguments: Value,
    /// What the tool does to the world.
    pub kind: ToolKind,
}

trait ErasedTool: Send + Sync {
    fn call(&self, args: Value, ctx: ToolContext)
    -> BoxFuture<'static, Result<ToolOutput, String>>;

    /// Why `args` do not deserialize into the tool's input, or `None` when they do.
    fn reject(&self, args: &Value) -> Option<String>;
}

struct Erased<T: Tool>(Arc<T>);

impl<T: Tool> ErasedTool for Erased<T> {
    fn call(
        &self,
        args: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, String>> {
        let tool = Arc::clone(&self.0);
        Box::pin(async move {
            let input: T::Input = serde_json::from_value(args).map_err(|err| err.to_string())?;
            Ok(tool.run(input, ctx).await)
        })
    }

    fn reject(&self, args: &Value) -> Option<String> {
        T::Input::deserialize(args).err().map(|err| err.to_string())
    }
}

struct Entry {
    definition: ToolDefinition,
    tool: Box<dyn ErasedTool>,
}

/// All the tools one session can call.
#[derive(Default)]
pub struct Registry {
    entries: Vec<Entry>,
    by_name: HashMap<&'static str, usize>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| e.definition.name))
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// A registry with every built-in tool.
    pub fn builtin() -> Self {
        let mut registry = Registry::new();
        crate::tools::register_builtin(&mut registry);
        registry
    }

    /// Adds a tool.
    ///
    /// # Panics
    /// When a tool of the same name is already registered: that is a programming error.
    pub fn register<T: Tool>(&mut self, tool: T) {
        assert!(
            !self.by_name.contains_key(T::NAME),
            "tool `{}` registered twice",
            T::NAME
        );
        let (description, parameters) = tool_schema::<T::Input>();
        let definition = ToolDefinition {
            name: T::NAME,
            description,
            parameters,
            kind: tool.kind(),
            hints: tool.hints(),
            raw_strings: T::RAW_STRINGS,
        };
        self.by_name.insert(T::NAME, self.entries.len());
        self.entries.push(Entry {
            definition,
            tool: Box::new(Erased(Arc::new(tool))),
        });
    }

    /// Keeps only the tools `keep` accepts (for sub-agents and read-only sessions).
    pub fn retain(&mut self, mut keep: impl FnMut(&ToolDefinition) -> bool) {
        self.entries.retain(|e| keep(&e.definition));
        self.by_name = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.definition.name, i))
            .collect();
    }

    /// The definitions, in registration order.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.entries.iter().map(|e| &e.definition)
    }

    /// The definitions in the function-calling shape, as one JSON array.
    pub fn function_definitions(&self) -> Value {
        Value::Array(
            self.definitions()
                .map(ToolDefinition::to_function)
                .collect(),
        )
    }

    /// The definition of `name` (exact).
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.by_name.get(name).map(|&i| &self.entries[i].definition)
    }

    /// The registered names.
    pub fn names(&self) -> Vec<&'static str> {
        self.definitions().map(|d| d.name).collect()
    }

    /// Resolves a tool name as a model wrote it: exactly, then after folding case, `_`, `-` and
    /// `.`. On failure, the closest real names (at most three).
    pub fn resolve_name(&self, name: &str) -> Result<&'static str, Vec<&'static str>> {
        if name.len() > MAX_TOOL_NAME_BYTES {
            return Err(Vec::new());
        }
        if let Some(&i) = self.by_name.get(name) {
            return Ok(self.entries[i].definition.name);
        }
        let folded = fold_name(name);
        if let Some(def) = self.definitions().find(|d| fold_name(d.name) == folded) {
            return Ok(def.name);
        }
        Err(closest(name, &self.names()))
    }

    /// Resolves the name and normalises the arguments, or returns the result the model should
    /// read (unknown tool, bad arguments).
    pub fn prepare(&self, name: &str, arguments: Value) -> Result<PreparedCall, ToolOutput> {
        let name = self.resolve_name(name).map_err(|close| {
            let hint = if close.is_empty() {
                String::new()
            } else {
                format!(" Did you mean {}?", quote_list(&close))
            };
            ToolOutput::error(format!(
                "unknown tool `{}`.{hint} The tools are: {}.",
                shown_name(name),
                self.names().join(", ")
            ))
        })?;
        let definition = self
            .definition(name)
            .expect("resolved names are registered");
        let arguments =
            args::normalize_keeping(arguments, &definition.parameters, definition.raw_strings)
                .map_err(|err| {
                    ToolOutput::error(format!("invalid arguments for `{name}`: {err}"))
                })?;
        Ok(PreparedCall {
            name,
            arguments,
            kind: definition.kind,
        })
    }

    /// Runs a call: resolves, normalises, runs, and fits the result to the budget.
    pub async fn call(&self, name: &str, arguments: Value, ctx: ToolContext) -> ToolOutput {
        match self.prepare(name, arguments) {
            Ok(call) => self.run_prepared(&call, ctx).await,
            Err(output) => output,
        }
    }

    /// Runs a call that [`Registry::prepare`] accepted.
    pub async fn run_prepared(&self, call: &PreparedCall, ctx: ToolContext) -> ToolOutput {
        let Some(&index) = self.by_name.get(call.name) else {
            return ToolOutput::error(format!("unknown tool `{}`", call.name));
        };
        let session = Arc::clone(&ctx.session);
        crate::watch::before_call(&session, self.entries[index].definition.kind);
        let future = self.entries[index].tool.call(call.arguments.clone(), ctx);
        let mut output = match AssertUnwindSafe(future).catch_unwind().await {
            Ok(Ok(output)) => output,
            Ok(Err(serde_message)) => ToolOutput::error(format!(
                "invalid arguments for `{}`: {}",
                call.name,
                self.explain_rejection(index, &call.arguments, &serde_message)
            )),
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                ToolOutput::error(format!(
                    "internal error in `{}`: {what}. This is a bug in Lathe, not in the call; try another way",
                    call.name
                ))
            }
        };
        bound_metadata(&mut output.metadata);
        let budget_chars = session.config().result_budget;
        let (text, saved) = budget::fit(std::mem::take(&mut output.text), budget_chars, &session);
        output.text = text;
        if let Some(saved) = saved {
            output.metadata.insert(
                "full_result".into(),
                Value::String(saved.display().to_string()),
            );
        }
        // After the budget: what changed in git's hooks or `.lathe/` is never cut from view.
        crate::watch::after_call(&session, &mut output);
        output
    }
}

impl Registry {
    /// Says which parameter the tool's input type refused, found by leaving each one out in
    /// turn: the model must learn which parameter to fix, not the name of a Rust type.
    fn explain_rejection(&self, index: usize, arguments: &Value, serde_message: &str) -> String {
        let entry = &self.entries[index];
        let Some(map) = arguments.as_object() else {
            return serde_message.to_owned();
        };
        let culprit = map.keys().find(|key| {
            let mut without = map.clone();
            without.remove(*key);
            let without = Value::Object(without);
            match entry.tool.reject(&without) {
                None => true,
                Some(message) => message.contains(&format!("missing field `{key}`")),
            }
        });
        match culprit {
            Some(key) => {
                let schema = entry
                    .definition
                    .parameters
                    .get("properties")
                    .and_then(|p| p.get(key))
                    .cloned()
                    .unwrap_or(Value::Null);
                args::describe_invalid(key, &map[key], &schema)
            }
            None => serde_message.to_owned(),
        }
    }
}

/// Tool names longer than this are not looked up (none is near it): an unknown name is echoed
/// in the error only as its start and its length.
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// The longest string kept in a result's metadata. Metadata echoes what a call was given (a
/// path, a diff of the content written); a longer string is cut, saying so and naming this
/// limit, so a huge argument is not copied into every result that mentions it.
pub const MAX_METADATA_STRING_BYTES: usize = 256 * 1024;

/// `name` as an error message may quote it: whole when short, else its start and its length.
pub fn shown_name(name: &str) -> String {
    if name.len() <= MAX_TOOL_NAME_BYTES {
        return name.to_owned();
    }
    let mut end = 40;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}...` ({} bytes; tool names are at most {MAX_TOOL_NAME_BYTES} bytes)`",
        &name[..end],
        name.len()
    )
}

/// Cuts every string in `metadata` (nested ones too) to [`MAX_METADATA_STRING_BYTES`].
pub fn bound_metadata(metadata: &mut serde_json::Map<String, Value>) {
    for value in metadata.values_mut() {
        bound_value(value);
    }
}

fn bound_value(value: &mut Value) {
    match value {
        Value::String(text) if text.len() > MAX_METADATA_STRING_BYTES => {
            let total = text.len();
            let mut end = MAX_METADATA_STRING_BYTES;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            text.shrink_to_fit();
            text.push_str(&format!(
                "\n[cut: {total} bytes; metadata values are at most {MAX_METADATA_STRING_BYTES} bytes]"
            ));
        }
        Value::Array(items) => items.iter_mut().for_each(bound_value),
        Value::Object(map) => map.values_mut().for_each(bound_value),
        _ => {}
    }
}

fn quote_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names most like `name`: by edit distance after folding, and names sharing a word.
pub fn closest(name: &str, names: &[&'static str]) -> Vec<&'static str> {
    let folded = fold_name(name);
    let mut scored: Vec<(f64, &'static str)> = names
        .iter()
        .map(|candidate| {
            let other = fold_name(candidate);
            let mut score = strsim::jaro_winkler(&folded, &other);
            if !folded.is_empty() && (other.contains(&folded) || folded.contains(&other)) {
                score += 0.2;
            }
            let words = |s: &str| {
                s.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() > 2)
                    .map(str::to_lowercase)
                    .collect::<Vec<_>>()
            };
            let shared = words(name).iter().any(|w| words(candidate).contains(w));
            if shared {
                score += 0.15;
            }
            (score, *candidate)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    // Names other agents and shells use for the same job count as the closest of all.
    for (synonyms, tool) in SYNONYMS {
        if synonyms.contains(&folded.as_str())
            && let Some(real) = names.iter().find(|n| *n == tool)
        {
            scored.retain(|(_, n)| n != real);
            scored.insert(0, (f64::MAX, real));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// Tool names models learned elsewhere (folded), and the built-in tool that does that job.
const SYNONYMS: &[(&[&str], &str)] = &[
    (
        &[
            "bash",
            "sh",
            "run",
            "exec",
            "execute",
            "executecommand",
            "runcommand",
            "terminal",
            "command",
            "cmd",
            "runshellcommand",
            "shellcommand",
        ],
        "shell",
    ),
    (
        &[
            "cat",
            "read",
            "view",
            "open",
            "openfile",
            "viewfile",
            "readfiles",
        ],
        "read_file",
    ),
    (
        &[
            "search",
            "rg",
            "ripgrep",
            "grepsearch",
            "searchfiles",
            "findinfiles",
            "codesearch",
        ],
        "grep",
    ),
    (&["find", "findfiles", "filesearch", "globfiles"], "glob"),
    (
        &["ls", "listdir", "listdirectory", "tree", "dir"],
        "list_files",
    ),
    (&["write", "createfile", "create", "savefile"], "write_file"),
    (
        &[
            "edit",
            "strreplace",
            "strreplaceeditor",
            "replace",
            "replaceinfile",
            "patch",
            "applypatch",
            "multiedit",
        ],
        "edit_file",
    ),
];
