//! The registry: typed tools erased once, serving the agent and the MCP server alike.
//!
//! The parts: a tool's definition ([`ToolDefinition`]), the erased tool and call
//! ([`DynTool`], [`BoundCall`], [`PreparedCall`]), the profiles and deferral behind
//! `more_tools`, running a prepared call, titles, and the bounds on metadata. This file holds
//! the registry itself: adding tools, resolving names and preparing calls.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use serde_json::Value;

mod definition;
mod erased;
mod metadata;
pub mod more_tools;
mod names;
mod profile;
mod run;
mod title;

pub use definition::ToolDefinition;
pub use erased::{BoundCall, DynTool, PreparedCall};
pub use metadata::{MAX_METADATA_STRING_BYTES, bound_metadata};
pub use names::{MAX_TOOL_NAME_BYTES, closest, names_are_unique, shown_name};
pub use run::plan_off_thread;
pub use title::generic_title;

use crate::args::{self, fold_name};
use crate::profile::Profile;
use crate::session::Session;
use crate::tool::{Tool, ToolOutput};
use definition::compact_definition;
use erased::Typed;
use more_tools::MoreToolsTool;
use names::quote_list;
use run::internal_error;
use title::shown_title;

/// The message for a call to a tool [`Session::allow_only`] left out.
fn not_allowed(name: &str, session: &Session) -> ToolOutput {
    let (names, why) = session.allowed_tools().unwrap_or_default();
    let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    ToolOutput::error(format!(
        "`{name}` is not available now: {why}. Use one of: {}.",
        if names.is_empty() {
            "(none)".to_owned()
        } else {
            names.join(", ")
        }
    ))
}

/// Why a tool could not be added to a registry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The name, or one of its aliases, is already taken by another tool's name or alias, as
    /// given or after folding case, `_`, `-`, `.` and spaces (the way [`Registry::resolve_name`]
    /// matches what a model wrote): `Read-File` is taken by `read_file`.
    #[error("tool name `{name}` is already taken by `{taken_by}`")]
    NameTaken {
        /// The name that collides.
        name: String,
        /// The tool that has it.
        taken_by: String,
    },
    /// The name (or an alias) is empty, has nothing but `_`, `-`, `.` and spaces, or is longer
    /// than [`MAX_TOOL_NAME_BYTES`].
    #[error(
        "tool name `{0}` is empty, has no letter or digit, or is longer than \
         {MAX_TOOL_NAME_BYTES} bytes"
    )]
    BadName(String),
}

/// All the tools one session can call: the built-ins and any added at run time. Cloning is
/// cheap (the tools are shared): a sub-agent's registry starts as a copy of its parent's.
#[derive(Default, Clone)]
pub struct Registry {
    entries: Vec<Arc<dyn DynTool>>,
    /// Names and aliases, each to its entry.
    by_name: HashMap<String, usize>,
    /// The same, folded (case, `_`, `-`, `.`): no two tools share a folded name either.
    by_folded: HashMap<String, usize>,
    /// The tools offered on demand only ([`Registry::defer`]), by name.
    deferred: HashSet<String>,
    /// The profile the definitions are in ([`Registry::use_profile`]).
    profile: Profile,
    /// Typed tools with a compact form: both forms, by name.
    forms: HashMap<String, Forms>,
    /// The full parameters schema of each tool whose advertised one is compact: what its
    /// arguments are brought to, so that a parameter left unlisted stays accepted.
    accepts: HashMap<String, Value>,
    /// Typed tools that are offered on demand in the compact profile ([`Tool::ON_DEMAND`]).
    on_demand: HashSet<String>,
    /// Tools added with [`Registry::add`] at run time, not typed ([`Registry::register`]).
    added: HashSet<String>,
    /// The tools the compact profile deferred (given back by the full profile).
    deferred_by_profile: HashSet<String>,
}

/// A typed tool in both profiles.
#[derive(Clone)]
struct Forms {
    full: Arc<dyn DynTool>,
    compact: Arc<dyn DynTool>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.entries.iter().map(|e| &e.definition().name))
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Registry::default()
    }

    /// Adds a typed tool.
    ///
    /// # Panics
    /// When its name or an alias is already taken: for typed tools that is a programming
    /// error (the built-in list is checked when it compiles).
    pub fn register<T: Tool>(&mut self, tool: T) {
        let definition = ToolDefinition::of(&tool);
        let compact = compact_definition::<T>(&definition);
        let tool = Arc::new(tool);
        let full: Arc<dyn DynTool> = Arc::new(Typed {
            tool: Arc::clone(&tool),
            definition,
        });
        if let Err(err) = self.add_entry(Arc::clone(&full), false) {
            panic!(
                "`{}` registered twice, or under a name taken: {err}",
                T::NAME
            );
        }
        if T::ON_DEMAND {
            self.on_demand.insert(T::NAME.to_owned());
        }
        if let Some(compact) = compact {
            self.accepts
                .insert(T::NAME.to_owned(), full.definition().parameters.clone());
            let compact: Arc<dyn DynTool> = Arc::new(Typed {
                tool,
                definition: compact,
            });
            if self.profile == Profile::Compact {
                self.swap(T::NAME, Arc::clone(&compact));
            }
            // `more_tools` is made anew whenever its catalog changes, in the profile's form.
            if T::NAME != MoreToolsTool::NAME {
                self.forms
                    .insert(T::NAME.to_owned(), Forms { full, compact });
            }
        }
        if self.profile == Profile::Compact && T::ON_DEMAND {
            self.defer_for_profile(T::NAME);
        }
    }

    /// Adds a tool at run time (a tool from another MCP server, an embedder's own). Fails when
    /// its name or an alias is taken, as given or after folding (see
    /// [`RegistryError::NameTaken`]), so a remote tool can never shadow a built-in, nor catch
    /// the calls a model meant for one.
    ///
    /// In the compact profile ([`Registry::use_profile`]) the tool is offered on demand.
    pub fn add(&mut self, tool: Arc<dyn DynTool>) -> Result<(), RegistryError> {
        let name = tool.definition().name.clone();
        self.add_entry(tool, true)?;
        if self.profile == Profile::Compact && name != MoreToolsTool::NAME {
            self.defer_for_profile(&name);
        }
        Ok(())
    }

    /// Adds `tool`; `at_run_time` for a tool that is not typed.
    fn add_entry(
        &mut self,
        tool: Arc<dyn DynTool>,
        at_run_time: bool,
    ) -> Result<(), RegistryError> {
        let definition = tool.definition();
        let names: Vec<&String> = std::iter::once(&definition.name)
            .chain(&definition.aliases)
            .collect();
        for name in &names {
            if name.len() > MAX_TOOL_NAME_BYTES || fold_name(name).is_empty() {
                return Err(RegistryError::BadName(shown_name(name)));
            }
        }
        for name in &names {
            let taken = self
                .by_name
                .get(name.as_str())
                .or_else(|| self.by_folded.get(&fold_name(name)))
                .copied();
            if let Some(i) = taken {
                return Err(RegistryError::NameTaken {
                    name: (*name).clone(),
                    taken_by: self.entries[i].definition().name.clone(),
                });
            }
        }
        let index = self.entries.len();
        for name in names {
            self.by_folded.insert(fold_name(name), index);
            self.by_name.insert(name.clone(), index);
        }
        if at_run_time && definition.name != MoreToolsTool::NAME {
            self.added.insert(definition.name.clone());
        }
        self.entries.push(tool);
        Ok(())
    }

    /// Keeps only the tools `keep` accepts (for sub-agents and read-only sessions). `more_tools`
    /// stays while a deferred tool does.
    pub fn retain(&mut self, mut keep: impl FnMut(&ToolDefinition) -> bool) {
        self.retain_entries(|d| d.name == MoreToolsTool::NAME || keep(d));
        self.rebuild_more_tools();
    }

    fn retain_entries(&mut self, mut keep: impl FnMut(&ToolDefinition) -> bool) {
        self.entries.retain(|e| keep(e.definition()));
        self.by_name.clear();
        self.by_folded.clear();
        for (i, entry) in self.entries.iter().enumerate() {
            let definition = entry.definition();
            for name in std::iter::once(&definition.name).chain(&definition.aliases) {
                self.by_folded.insert(fold_name(name), i);
                self.by_name.insert(name.clone(), i);
            }
        }
    }

    /// The definitions, in registration order.
    pub fn definitions(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.entries.iter().map(|e| e.definition())
    }

    /// The definitions of the tools offered in `session` now ([`Tool::offered`]: `resolve`
    /// only while an action is pending; a deferred tool once enabled), in registration order.
    /// What a request to a model should list; every tool stays callable by name.
    pub fn offered<'a>(
        &'a self,
        session: &'a Session,
    ) -> impl Iterator<Item = &'a ToolDefinition> + 'a {
        self.entries
            .iter()
            .filter(move |e| self.entry_offered(e.as_ref(), session))
            .map(|e| e.definition())
    }

    /// Whether the registered tool `name` is offered in `session` now.
    pub fn is_offered(&self, name: &str, session: &Session) -> bool {
        self.by_name
            .get(name)
            .is_some_and(|&i| self.entry_offered(self.entries[i].as_ref(), session))
    }

    fn entry_offered(&self, entry: &dyn DynTool, session: &Session) -> bool {
        let name = &entry.definition().name;
        session.tool_allowed(name)
            && entry.offered(session)
            && (!self.deferred.contains(name) || session.tool_enabled(name))
    }

    /// The definitions in the function-calling shape, as one JSON array.
    pub fn function_definitions(&self) -> Value {
        Value::Array(
            self.definitions()
                .map(ToolDefinition::to_function)
                .collect(),
        )
    }

    /// The definition of `name` (exact, or an exact alias).
    pub fn definition(&self, name: &str) -> Option<&ToolDefinition> {
        self.by_name
            .get(name)
            .map(|&i| self.entries[i].definition())
    }

    /// The registered names.
    pub fn names(&self) -> Vec<&str> {
        self.definitions().map(|d| d.name.as_str()).collect()
    }

    /// Resolves a tool name as a model wrote it: exactly, as an alias, then either after
    /// folding case, `_`, `-` and `.`. On failure, the closest real names (at most three).
    pub fn resolve_name(&self, name: &str) -> Result<&str, Vec<&str>> {
        if name.len() > MAX_TOOL_NAME_BYTES {
            return Err(Vec::new());
        }
        if let Some(&i) = self.by_name.get(name) {
            return Ok(&self.entries[i].definition().name);
        }
        if let Some(&i) = self.by_folded.get(&fold_name(name)) {
            return Ok(&self.entries[i].definition().name);
        }
        // Aliases count as the tool's names here too: `bsh` is close to `bash`, so `shell`.
        let candidates: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        let mut close: Vec<&str> = Vec::new();
        for candidate in closest(name, &candidates) {
            let real = self.entries[self.by_name[candidate]]
                .definition()
                .name
                .as_str();
            if !close.contains(&real) {
                close.push(real);
            }
        }
        Err(close)
    }

    /// The message the model reads for a tool name that resolves to nothing.
    pub fn unknown_tool(&self, name: &str) -> ToolOutput {
        let close = self.resolve_name(name).err().unwrap_or_default();
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
    }

    /// The arguments brought to the schema of the tool at `index` (its raw strings left as
    /// given).
    fn normalise(&self, index: usize, arguments: Value) -> Result<Value, args::ArgumentError> {
        let definition = self.entries[index].definition();
        let raw: Vec<&str> = definition.raw_strings.iter().map(String::as_str).collect();
        args::normalize_keeping(arguments, self.accepted(definition), &raw)
    }

    /// Resolves the name, normalises and binds the arguments, and works out the call's effects
    /// in `session`; or returns the result the model should read (unknown tool, bad
    /// arguments).
    pub fn prepare(
        &self,
        name: &str,
        arguments: Value,
        session: &Session,
    ) -> Result<PreparedCall, ToolOutput> {
        let Ok(name) = self.resolve_name(name) else {
            return Err(self.unknown_tool(name));
        };
        if !session.tool_allowed(name) {
            return Err(not_allowed(name, session));
        }
        let index = self.by_name[name];
        let entry = &self.entries[index];
        let definition = entry.definition();
        let arguments = self
            .normalise(index, arguments)
            .map_err(|err| ToolOutput::error(format!("invalid arguments for `{name}`: {err}")))?;
        // The tool's own code answers from here on (a run-time tool's above all): a panic in
        // it is a result the model reads, not the end of the session.
        let answered = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let bound = entry.bind(&arguments).map_err(|serde_message| {
                ToolOutput::error(format!(
                    "invalid arguments for `{name}`: {}",
                    self.explain_rejection(index, &arguments, &serde_message)
                ))
            })?;
            let effects = bound.effects(session);
            let title = shown_title(name, bound.title(), &arguments);
            Ok::<_, ToolOutput>((bound, effects, title))
        }));
        let (bound, effects, title) = match answered {
            Ok(answered) => answered?,
            Err(panic) => return Err(internal_error(name, &*panic)),
        };
        Ok(PreparedCall {
            name: name.to_owned(),
            arguments,
            kind: definition.kind,
            effects,
            title,
            judgement: None,
            bound,
        })
    }
}

impl Registry {
    /// The parameters schema arguments of `definition`'s tool are brought to: the full one,
    /// whatever the profile.
    fn accepted<'a>(&'a self, definition: &'a ToolDefinition) -> &'a Value {
        self.accepts
            .get(&definition.name)
            .unwrap_or(&definition.parameters)
    }

    /// Says which parameter the tool's input type refused, found by leaving each one out in
    /// turn: the model must learn which parameter to fix, not the name of a Rust type.
    fn explain_rejection(&self, index: usize, arguments: &Value, serde_message: &str) -> String {
        let entry = &self.entries[index];
        let definition = entry.definition();
        let Some(map) = arguments.as_object() else {
            return serde_message.to_owned();
        };
        let culprit = map.keys().find(|key| {
            let mut without = map.clone();
            without.remove(*key);
            let without = Value::Object(without);
            match entry.bind(&without) {
                Ok(_) => true,
                Err(message) => message.contains(&format!("missing field `{key}`")),
            }
        });
        match culprit {
            Some(key) => {
                let schema = self
                    .accepted(definition)
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
