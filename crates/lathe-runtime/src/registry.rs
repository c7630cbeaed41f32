//! The registry: typed tools erased once, serving the agent and the MCP server alike.

use std::collections::{HashMap, HashSet};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub mod more_tools;
mod names;

pub use names::{MAX_TOOL_NAME_BYTES, closest, names_are_unique, shown_name};

use crate::args::{self, fold_name};
use crate::budget;
use crate::dispatch::{CallStatus, Judgement, Outcome};
use crate::meta::Metadata;
use crate::profile::{Profile, compact_schema};
use crate::schema::tool_schema;
use crate::session::Session;
use crate::tool::{Effect, Plan, Tool, ToolContext, ToolHints, ToolKind, ToolOutput};
use more_tools::MoreToolsTool;
use names::quote_list;

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
fn compact_definition<T: Tool>(full: &ToolDefinition) -> Option<ToolDefinition> {
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

/// A tool behind a trait object, as the registry holds it.
///
/// Typed tools get this from [`Registry::register`]. Tools known only at run time (from another
/// MCP server, an embedder's own) implement it directly and are added with
/// [`Registry::add`]; their calls answer the same questions as a typed tool's ([`BoundCall`]).
pub trait DynTool: Send + Sync {
    /// The definition: name, schema, kind, hints.
    fn definition(&self) -> &ToolDefinition;

    /// Binds normalised arguments to the tool's input, or says why they do not fit (the
    /// registry turns that into a message naming the parameter to fix).
    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String>;

    /// Whether the tool is offered to the model in `session` now ([`Tool::offered`]). By
    /// default, always.
    fn offered(&self, session: &Session) -> bool {
        let _ = session;
        true
    }
}

/// One call with its input bound (typed, for a typed tool): what callers ask of a call before
/// and while it runs.
///
/// The defaults are the safe ones, as for [`Tool`]: a call that does not say what it does is
/// [`Effect::Unknown`] (asked about, refused in `read-only`), and it makes no plan.
pub trait BoundCall: Send {
    /// What the call would do, for the policy ([`Tool::effects`]). By default, one
    /// [`Effect::Unknown`].
    fn effects(&self, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Unknown {
            what: "a tool added at run time that did not say what it does".to_owned(),
        }]
    }

    /// One line for people ([`Tool::title`]).
    fn title(&self) -> String;

    /// What the call would change, when the tool plans ([`Tool::plan`]). Blocking. By default,
    /// `None`: the call is run with [`BoundCall::run`].
    fn plan(&self, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        let _ = session;
        None
    }

    /// Runs the call (for tools that do not plan, or when no plan was made).
    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

struct Typed<T: Tool> {
    tool: Arc<T>,
    definition: ToolDefinition,
}

impl<T: Tool> DynTool for Typed<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String> {
        let input = T::Input::deserialize(arguments).map_err(|err| err.to_string())?;
        Ok(Box::new(Bound {
            tool: Arc::clone(&self.tool),
            input,
        }))
    }

    fn offered(&self, session: &Session) -> bool {
        self.tool.offered(session)
    }
}

struct Bound<T: Tool> {
    tool: Arc<T>,
    input: T::Input,
}

impl<T: Tool> BoundCall for Bound<T> {
    fn effects(&self, session: &Session) -> Vec<Effect> {
        self.tool.effects(&self.input, session)
    }

    fn title(&self) -> String {
        self.tool.title(&self.input)
    }

    fn plan(&self, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        self.tool.plan(&self.input, session)
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let Bound { tool, input } = *self;
        Box::pin(async move { tool.run(input, ctx).await })
    }
}

/// A call whose tool name was resolved, whose arguments were normalised and bound to the
/// tool's input, and whose effects were worked out.
pub struct PreparedCall {
    /// The registered name the call resolved to.
    pub name: String,
    /// The normalised arguments.
    pub arguments: Value,
    /// What the tool does to the world, in general.
    pub kind: ToolKind,
    /// What this call would do, for the policy.
    pub effects: Vec<Effect>,
    /// One line for people.
    pub title: String,
    judgement: Option<Judgement>,
    bound: Box<dyn BoundCall>,
}

impl std::fmt::Debug for PreparedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCall")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("kind", &self.kind)
            .field("effects", &self.effects)
            .field("title", &self.title)
            .field("judgement", &self.judgement)
            .finish_non_exhaustive()
    }
}

impl PreparedCall {
    /// True when every effect of the call only reads: such calls run concurrently.
    pub fn only_reads(&self) -> bool {
        !self.effects.is_empty() && self.effects.iter().all(Effect::only_reads)
    }

    /// Works out what the call would change (blocking; see [`Tool::plan`]).
    pub fn plan(&self, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        self.bound.plan(session)
    }

    /// What the gate worked out about the call, once it has
    /// ([`Dispatcher::judge`](crate::Dispatcher::judge)).
    pub fn judgement(&self) -> Option<&Judgement> {
        self.judgement.as_ref()
    }

    pub(crate) fn set_judgement(&mut self, judgement: Judgement) {
        self.judgement = Some(judgement);
    }
}

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

    /// Puts the definitions in `profile`: [`Profile::Compact`] sends each tool's short
    /// description and common parameters ([`Tool::COMPACT_DESCRIPTION`],
    /// [`Tool::COMPACT_PARAMETERS`]; the parameters left out stay accepted) and defers the
    /// tools few tasks need ([`Tool::ON_DEMAND`]) and every tool added at run time, now or
    /// later, behind `more_tools`; [`Profile::Full`] puts everything back. By default, full.
    pub fn use_profile(&mut self, profile: Profile) {
        if self.profile == profile {
            return;
        }
        self.profile = profile;
        let forms: Vec<(String, Forms)> = self
            .forms
            .iter()
            .map(|(name, forms)| (name.clone(), forms.clone()))
            .collect();
        for (name, forms) in forms {
            let entry = match profile {
                Profile::Full => forms.full,
                Profile::Compact => forms.compact,
            };
            self.swap(&name, entry);
        }
        match profile {
            Profile::Compact => {
                let optional: Vec<String> = self.on_demand.union(&self.added).cloned().collect();
                for name in optional {
                    self.defer_for_profile(&name);
                }
            }
            Profile::Full => {
                let given_back = std::mem::take(&mut self.deferred_by_profile);
                self.deferred.retain(|name| !given_back.contains(name));
            }
        }
        self.rebuild_more_tools();
    }

    /// The profile the definitions are in ([`Registry::use_profile`]).
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// Replaces the entry registered as `name` with `entry` (the same tool in another form).
    fn swap(&mut self, name: &str, entry: Arc<dyn DynTool>) {
        if let Some(&index) = self.by_name.get(name) {
            self.entries[index] = entry;
        }
    }

    fn defer_for_profile(&mut self, name: &str) {
        if !self.deferred.contains(name) && self.defer(name) {
            self.deferred_by_profile.insert(name.to_owned());
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

    /// Offers the tool `name` on demand only: [`Registry::offered`] leaves it out until the
    /// model enables it through the `more_tools` tool (registered with the first deferred tool,
    /// removed with the last) or the embedder calls [`Session::enable_tool`]. It stays callable
    /// by name. For small windows and many tools: those of MCP servers, the web, documents.
    /// False when no tool is registered as `name` (exactly, or an exact alias).
    pub fn defer(&mut self, name: &str) -> bool {
        let Some(&index) = self.by_name.get(name) else {
            return false;
        };
        let name = self.entries[index].definition().name.clone();
        if name == MoreToolsTool::NAME {
            return false;
        }
        if self.deferred.insert(name) {
            self.rebuild_more_tools();
        }
        true
    }

    /// Whether the registered tool `name` is offered on demand only ([`Registry::defer`]).
    pub fn is_deferred(&self, name: &str) -> bool {
        self.deferred.contains(name)
    }

    /// The definitions of the deferred tools, in registration order.
    pub fn deferred(&self) -> impl Iterator<Item = &ToolDefinition> {
        self.definitions()
            .filter(|d| self.deferred.contains(&d.name))
    }

    /// Brings `more_tools` in line with the deferred set: its catalog is every deferred tool
    /// still registered; with none, it goes. A new tool each time, so a cloned registry keeps
    /// its own catalog.
    fn rebuild_more_tools(&mut self) {
        let registered: HashSet<String> = self.definitions().map(|d| d.name.clone()).collect();
        self.deferred.retain(|name| registered.contains(name));
        let catalog: Vec<ToolDefinition> = self.deferred().cloned().collect();
        let existing = self.by_name.get(MoreToolsTool::NAME).copied();
        match (existing, catalog.is_empty()) {
            (Some(index), false) => {
                let tool = MoreToolsTool::new(catalog);
                let mut definition = ToolDefinition::of(&tool);
                if self.profile == Profile::Compact
                    && let Some(compact) = compact_definition::<MoreToolsTool>(&definition)
                {
                    definition = compact;
                }
                self.entries[index] = Arc::new(Typed {
                    tool: Arc::new(tool),
                    definition,
                });
            }
            (None, false) => self.register(MoreToolsTool::new(catalog)),
            (Some(_), true) => self.retain_entries(|d| d.name != MoreToolsTool::NAME),
            (None, true) => {}
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

    /// The title of a call as its tool gives it (`read_file src/main.rs`), without a session:
    /// for showing calls made earlier. A call that does not prepare (an unknown tool, arguments
    /// that do not fit) gets [`generic_title`].
    pub fn title(&self, name: &str, arguments: &Value) -> String {
        let Ok(resolved) = self.resolve_name(name) else {
            return generic_title(name, arguments);
        };
        let index = self.by_name[resolved];
        let Ok(normalised) = self.normalise(index, arguments.clone()) else {
            return generic_title(name, arguments);
        };
        let title = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.entries[index]
                .bind(&normalised)
                .ok()
                .map(|bound| bound.title())
        }));
        match title {
            Ok(Some(title)) => shown_title(resolved, title, &normalised),
            _ => generic_title(resolved, &normalised),
        }
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
            Ok((bound, effects, title))
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

    /// Runs a call without asking anybody: resolves, binds, plans or runs, and fits the result
    /// to the budget. For callers that have authorized the call themselves (tests, embedders);
    /// the agent, `lathe mcp` and `lathe tool` go through the [`Dispatcher`](crate::Dispatcher).
    pub async fn call(&self, name: &str, arguments: Value, ctx: ToolContext) -> ToolOutput {
        let call = match self.prepare(name, arguments, &ctx.session) {
            Ok(call) => call,
            Err(output) => return output,
        };
        match plan_off_thread(call, Arc::clone(&ctx.session)).await {
            Ok((_, Some(Err(output)))) => output,
            Ok((call, plan)) => {
                self.run_prepared(call, plan.and_then(Result::ok), ctx)
                    .await
            }
            Err(outcome) => outcome.output,
        }
    }

    /// Runs a prepared call: applies `plan` when one was made, runs the tool otherwise; then
    /// fits the result to the budget and reports what changed in the workspace's hooks and
    /// configuration.
    pub async fn run_prepared(
        &self,
        call: PreparedCall,
        plan: Option<Plan>,
        ctx: ToolContext,
    ) -> ToolOutput {
        let session = Arc::clone(&ctx.session);
        let name = call.name.clone();
        crate::watch::before_call(&session, call.kind);
        let future: BoxFuture<'static, ToolOutput> = match plan {
            Some(plan) => {
                let session = Arc::clone(&session);
                Box::pin(async move {
                    tokio::task::spawn_blocking(move || plan.apply(&session))
                        .await
                        .unwrap_or_else(|err| {
                            ToolOutput::error(format!("writing stopped unexpectedly: {err}"))
                        })
                })
            }
            None => call.bound.run(ctx),
        };
        let mut output = match AssertUnwindSafe(future).catch_unwind().await {
            Ok(output) => output,
            Err(panic) => internal_error(&name, &*panic),
        };
        bound_metadata(&mut output.metadata);
        let budget_chars = session.result_budget();
        let (text, saved) = budget::fit(std::mem::take(&mut output.text), budget_chars, &session);
        output.text = text;
        if let Some(saved) = saved {
            output.metadata.full_result = Some(saved.display().to_string());
        }
        // After the budget: what changed in git's hooks or `.lathe/` is never cut from view.
        crate::watch::after_call(&session, &mut output);
        output
    }
}

/// Plans `call` on a blocking thread (plans read files), handing the call back with the plan.
///
/// A plan that panics is a failed plan (`Some(Err)`, the result the model reads), like a run
/// that panics. `Err` is the end of a call whose planning thread never ran (the runtime is
/// shutting down): the call is lost with it, and nothing ran.
pub async fn plan_off_thread(
    call: PreparedCall,
    session: Arc<Session>,
) -> Result<(PreparedCall, Option<Result<Plan, ToolOutput>>), Outcome> {
    let name = call.name.clone();
    tokio::task::spawn_blocking(move || {
        let plan = std::panic::catch_unwind(AssertUnwindSafe(|| call.plan(&session)))
            .unwrap_or_else(|panic| Some(Err(internal_error(&call.name, &*panic))));
        (call, plan)
    })
    .await
    .map_err(|err| {
        Outcome::ended(
            CallStatus::Cancelled,
            format!("planning `{name}` stopped before it began ({err}); nothing ran"),
        )
    })
}

/// The result the model reads for a tool that panicked.
fn internal_error(name: &str, panic: &(dyn std::any::Any + Send)) -> ToolOutput {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ToolOutput::error(format!(
        "internal error in `{name}`: {what}. This is a bug in Lathe, not in the call; try \
         another way"
    ))
}

/// Longest title, in characters.
const TITLE_CHARS: usize = 160;

/// Longest rendering of the arguments in a generic title, in characters.
const ARGUMENT_CHARS: usize = 100;

/// The line shown for a call whose tool titled it `title`: one line, or the generic title when
/// the tool gave no title of its own (the default, its bare name).
fn shown_title(name: &str, title: String, arguments: &Value) -> String {
    if title == name {
        generic_title(name, arguments)
    } else {
        crate::text::one_line(&title, TITLE_CHARS)
    }
}

/// The title of a call whose tool gives none, or that could not be prepared (an unknown tool):
/// the name as written and its arguments, `name key=value ...`, on one line.
pub fn generic_title(name: &str, arguments: &Value) -> String {
    use crate::text::one_line;
    let scalar = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let rendered = match arguments.as_object() {
        Some(map) => map
            .iter()
            .map(|(key, value)| format!("{key}={}", one_line(&scalar(value), ARGUMENT_CHARS)))
            .collect::<Vec<_>>()
            .join(" "),
        None if arguments.is_null() => String::new(),
        None => one_line(&arguments.to_string(), ARGUMENT_CHARS),
    };
    let name = one_line(&shown_name(name), ARGUMENT_CHARS);
    let rendered = one_line(&rendered, ARGUMENT_CHARS);
    if rendered.is_empty() {
        name
    } else {
        format!("{name} {rendered}")
    }
}

impl Registry {
    /// Says which parameter the tool's input type refused, found by leaving each one out in
    /// turn: the model must learn which parameter to fix, not the name of a Rust type.
    /// The parameters schema arguments of `definition`'s tool are brought to: the full one,
    /// whatever the profile.
    fn accepted<'a>(&'a self, definition: &'a ToolDefinition) -> &'a Value {
        self.accepts
            .get(&definition.name)
            .unwrap_or(&definition.parameters)
    }

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

/// The longest string kept in a result's metadata. Metadata echoes what a call was given (a
/// path, a diff of the content written); a longer string is cut, saying so and naming this
/// limit, so a huge argument is not copied into every result that mentions it.
pub const MAX_METADATA_STRING_BYTES: usize = 256 * 1024;

/// Cuts every string in `metadata` (nested ones too) to [`MAX_METADATA_STRING_BYTES`].
pub fn bound_metadata(metadata: &mut Metadata) {
    for value in metadata.extra.values_mut() {
        bound_value(value);
    }
    // A path echoes the call's argument too (a 1 MiB path names no file, but is quoted).
    if let Some(path) = &mut metadata.path {
        bound_string(path);
    }
    for change in &mut metadata.changes {
        bound_string(&mut change.path);
        bound_string(&mut change.diff);
    }
}

fn bound_string(text: &mut String) {
    if text.len() > MAX_METADATA_STRING_BYTES {
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
}

fn bound_value(value: &mut Value) {
    match value {
        Value::String(text) => bound_string(text),
        Value::Array(items) => items.iter_mut().for_each(bound_value),
        Value::Object(map) => map.values_mut().for_each(bound_value),
        _ => {}
    }
}
