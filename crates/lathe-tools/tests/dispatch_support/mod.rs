//! What the dispatcher's tests share: a real workspace in a temporary directory, approvers and
//! hooks that record what they were given, and small tools of the tests' own (a typed tool that
//! plans its edit, typed tools that do not say what they do, run-time tools).
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use lathe_policy::ApprovalMode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use lathe_runtime::Access;
use lathe_runtime::dispatch::CallInfo;
use lathe_runtime::tool::ResultExt;
use lathe_runtime::{
    ApprovalDecision, ApprovalRequest, Approver, BoundCall, Dispatcher, DynTool, Effect,
    FileChange, Gate, Hook, Outcome, Plan, PlannedWrite, Registry, Session, Tool, ToolConfig,
    ToolContext, ToolDefinition, ToolKind, ToolOutput, Workspace, hints_for,
};
use lathe_runtime::{ToolError, ToolResult, current_stamp, run_planned};

/// A workspace with a few files, and a session over it.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub session: Arc<Session>,
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn a() {}\n// TODO: b\n").unwrap();
        std::fs::write(root.join("notes.txt"), "first\n").unwrap();
        std::fs::write(root.join(".env"), "TOKEN=secret\n").unwrap();
        let workspace = Workspace::new(&root).unwrap();
        let session =
            Session::new(workspace, ToolConfig::default(), dir.path().join("state")).unwrap();
        let root = session.workspace().root().to_path_buf();
        Fixture {
            _dir: dir,
            root,
            session,
        }
    }

    /// The built-in tools and the tests' own typed ones.
    pub fn registry(&self) -> Registry {
        let mut registry = lathe_tools::builtin();
        registry.register(AppendLine);
        registry.register(Bare);
        registry.register(Peek);
        registry
    }

    pub fn dispatcher(&self, mode: ApprovalMode) -> Dispatcher {
        self.dispatcher_with(mode, self.registry())
    }

    pub fn dispatcher_with(&self, mode: ApprovalMode, registry: Registry) -> Dispatcher {
        Dispatcher::new(Arc::new(registry), Arc::new(Gate::new(mode, &self.root)))
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext::new(Arc::clone(&self.session))
    }

    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap_or_default()
    }

    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }
}

/// Wraps an approver and records every request it is asked.
pub struct Recording<A> {
    inner: A,
    pub requests: Mutex<Vec<ApprovalRequest>>,
}

impl<A: Approver> Recording<A> {
    pub fn new(inner: A) -> Self {
        Recording {
            inner,
            requests: Mutex::new(Vec::new()),
        }
    }

    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn asked(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl<A: Approver> Approver for Recording<A> {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        self.requests.lock().unwrap().push(request.clone());
        self.inner.approve(request)
    }
}

/// An approver that never answers (a person who walked away).
pub struct Silent;

impl Approver for Silent {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(futures::future::pending())
    }
}

/// A hook that records what it saw, and refuses, stops or adds where it was told to.
#[derive(Default)]
pub struct Probe {
    pub refuse_before: Option<String>,
    pub stop_before_run: Option<String>,
    pub append_after: Option<String>,
    /// What it saw, in order: `before NAME`, `before_run NAME +A -R`, `after NAME STATUS`.
    pub seen: Mutex<Vec<String>>,
    pub infos: Mutex<Vec<CallInfo>>,
    pub changes: Mutex<Vec<FileChange>>,
}

impl Probe {
    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

impl Hook for Probe {
    fn before(&self, call: &CallInfo, _session: &Session) -> Result<(), String> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("before {}", call.name));
        self.infos.lock().unwrap().push(call.clone());
        self.refuse_before.clone().map_or(Ok(()), Err)
    }

    fn before_run(
        &self,
        call: &CallInfo,
        changes: &[FileChange],
        _session: &Session,
    ) -> Result<(), String> {
        let (added, removed) = changes
            .iter()
            .fold((0, 0), |(a, r), c| (a + c.added, r + c.removed));
        self.seen
            .lock()
            .unwrap()
            .push(format!("before_run {} +{added} -{removed}", call.name));
        self.changes.lock().unwrap().extend(changes.iter().cloned());
        self.stop_before_run.clone().map_or(Ok(()), Err)
    }

    fn after(&self, call: &CallInfo, outcome: &mut Outcome, _session: &Session) {
        self.seen
            .lock()
            .unwrap()
            .push(format!("after {} {:?}", call.name, outcome.status));
        if let Some(text) = &self.append_after {
            outcome.output.text.push_str(text);
        }
    }
}

/// Appends one line to a file.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AppendLineInput {
    /// The file.
    pub path: String,
    /// The line to add.
    pub line: String,
}

/// A typed tool that plans its change, as write_file and edit_file do.
#[derive(Debug, Clone, Copy)]
pub struct AppendLine;

impl Tool for AppendLine {
    const NAME: &'static str = "append_line";
    type Input = AppendLineInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }

    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![Effect::Edit {
            path: input.path.clone(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        format!("append_line {}", input.path)
    }

    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        Some(plan_append(input, session))
    }

    async fn run(&self, input: AppendLineInput, ctx: ToolContext) -> ToolResult {
        run_planned(self, input, ctx).await
    }
}

fn plan_append(input: &AppendLineInput, session: &Session) -> Result<Plan, ToolError> {
    let workspace = session.workspace();
    let target = workspace
        .resolve(&input.path, Access::Write)
        .or_model(|err| err.to_string())?;
    let before = current_stamp(workspace, &target).or_model(|e| e.to_string())?;
    let mut old = String::new();
    if before.is_some() {
        workspace
            .open_read(&target)
            .and_then(|mut f| f.read_to_string(&mut old))
            .or_model(|e| e.to_string())?;
    }
    let shown = target.shown().to_owned();
    let old_lines = old.lines().count();
    let diff = format!(
        "--- a/{shown}\n+++ b/{shown}\n@@ -{old_lines} +{old_lines},2 @@\n{}+{}\n",
        old.lines()
            .last()
            .map(|l| format!(" {l}\n"))
            .unwrap_or_default(),
        input.line
    );
    let change = FileChange {
        path: shown.clone(),
        created: before.is_none(),
        deleted: false,
        added: 1,
        removed: 0,
        diff,
    };
    Ok(Plan {
        writes: vec![PlannedWrite {
            target,
            before,
            content: format!("{old}{}\n", input.line).into_bytes(),
            new_mode: 0o644,
            change,
            remove: false,
        }],
        output: ToolOutput::ok(format!("Appended a line to {shown}.")),
        from_pending: None,
    })
}

/// Does nothing.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct NothingInput {}

/// A session tool that does not say what it does: default hints, default effects.
pub struct Bare;

impl Tool for Bare {
    const NAME: &'static str = "bare";
    type Input = NothingInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    async fn run(&self, _input: NothingInput, _ctx: ToolContext) -> ToolResult {
        Ok(ToolOutput::ok("bare ran"))
    }
}

/// A tool of the Read kind that does not say what it reads (a remote tool claiming read-only).
pub struct Peek;

impl Tool for Peek {
    const NAME: &'static str = "peek";
    type Input = NothingInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    async fn run(&self, _input: NothingInput, _ctx: ToolContext) -> ToolResult {
        Ok(ToolOutput::ok("peek ran"))
    }
}

/// A run-time tool, as one from another MCP server arrives: a name, a JSON Schema, no Rust type.
/// Its calls name no effect (the default: unknown) unless `effects` says otherwise.
pub struct Remote {
    definition: ToolDefinition,
    effects: Option<fn(&Value) -> Vec<Effect>>,
}

impl Remote {
    /// `weather`, alias `forecast`: `{city}` required.
    pub fn weather() -> Remote {
        Remote {
            definition: definition(
                "weather",
                &["forecast"],
                json!({
                    "type": "object",
                    "properties": {
                        "city": {"type": "string", "description": "The city."},
                        "days": {"type": "integer", "description": "How many days."}
                    },
                    "required": ["city"]
                }),
            ),
            effects: None,
        }
    }

    /// `fetch`: reaches the host it is given.
    pub fn fetch() -> Remote {
        Remote {
            definition: definition(
                "fetch",
                &[],
                json!({
                    "type": "object",
                    "properties": {"host": {"type": "string", "description": "The host."}},
                    "required": ["host"]
                }),
            ),
            effects: Some(|args| {
                vec![Effect::Network {
                    host: args["host"].as_str().unwrap_or_default().to_owned(),
                }]
            }),
        }
    }

    /// `effects`: its calls have the effects they list (for judging combinations):
    /// `{"effects": [{"read": "a"}, {"write": "b"}, {"edit": "c"}, {"command": "ls"},
    /// {"network": "host"}, {"unknown": "what"}, {"own": true}]}`.
    pub fn effects() -> Remote {
        Remote {
            definition: definition(
                "effects",
                &[],
                json!({
                    "type": "object",
                    "properties": {
                        "effects": {"type": "array", "description": "The effects."}
                    },
                    "required": ["effects"]
                }),
            ),
            effects: Some(|args| {
                let list = args["effects"].as_array().cloned().unwrap_or_default();
                list.iter().map(effect_of).collect()
            }),
        }
    }

    /// A tool with any name and aliases, for collisions.
    pub fn named(name: &str, aliases: &[&str]) -> Remote {
        Remote {
            definition: definition(name, aliases, json!({"type": "object", "properties": {}})),
            effects: None,
        }
    }
}

fn effect_of(spec: &Value) -> Effect {
    let (key, value) = spec.as_object().and_then(|o| o.iter().next()).unwrap();
    let text = value.as_str().unwrap_or_default().to_owned();
    match key.as_str() {
        "read" => Effect::Read { path: text },
        "write" => Effect::Write { path: text },
        "edit" => Effect::Edit { path: text },
        "command" => Effect::Command {
            command: text,
            cwd: None,
            outside_sandbox: false,
        },
        "network" => Effect::Network { host: text },
        "fetch" => Effect::Fetch { host: text },
        "unknown" => Effect::Unknown { what: text },
        "own" => Effect::OwnState {
            changes: value.as_bool().unwrap_or(false),
        },
        other => panic!("no effect `{other}`"),
    }
}

fn definition(name: &str, aliases: &[&str], parameters: Value) -> ToolDefinition {
    ToolDefinition {
        name: name.to_owned(),
        description: format!("The run-time tool `{name}`."),
        parameters,
        aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
        kind: ToolKind::Session,
        hints: hints_for(ToolKind::Session),
        raw_strings: Vec::new(),
    }
}

impl DynTool for Remote {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String> {
        if arguments.get("city").and_then(Value::as_str) == Some("") {
            return Err("`city` is empty; name a city".to_owned());
        }
        let call = RemoteCall {
            name: self.definition.name.clone(),
            arguments: arguments.clone(),
        };
        Ok(match self.effects {
            Some(effects) => Box::new(Described { call, effects }),
            None => Box::new(call),
        })
    }
}

/// A call that leaves `effects` and `plan` to the defaults of [`BoundCall`].
struct RemoteCall {
    name: String,
    arguments: Value,
}

impl BoundCall for RemoteCall {
    fn title(&self) -> String {
        match self.arguments.get("city").and_then(Value::as_str) {
            Some(city) => format!("{} {city}", self.name),
            None => self.name.clone(),
        }
    }

    fn run(self: Box<Self>, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            let city = self.arguments["city"].as_str().unwrap_or("nowhere");
            ToolOutput::ok(format!("sunny in {city}"))
        })
    }
}

/// A call that says what it does.
struct Described {
    call: RemoteCall,
    effects: fn(&Value) -> Vec<Effect>,
}

impl BoundCall for Described {
    fn effects(&self, _session: &Session) -> Vec<Effect> {
        (self.effects)(&self.call.arguments)
    }

    fn title(&self) -> String {
        self.call.title()
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::new(self.call).run(ctx)
    }
}

/// A run-time tool whose code panics where its arguments say: `{"panic_in": "effects"}`,
/// `"title"`, `"plan"`, `"run"`, `"bind"`. It leaves every default of [`BoundCall`] alone
/// except where it panics.
pub struct Fragile {
    definition: ToolDefinition,
}

impl Fragile {
    pub fn new() -> Fragile {
        Fragile {
            definition: definition(
                "fragile",
                &[],
                json!({
                    "type": "object",
                    "properties": {
                        "panic_in": {"type": "string", "description": "Where to panic."}
                    }
                }),
            ),
        }
    }
}

impl DynTool for Fragile {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String> {
        let at = arguments["panic_in"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if at == "bind" {
            panic!("fragile broke in bind");
        }
        Ok(Box::new(FragileCall { at }))
    }
}

struct FragileCall {
    at: String,
}

impl BoundCall for FragileCall {
    fn effects(&self, _session: &Session) -> Vec<Effect> {
        if self.at == "effects" {
            panic!("fragile broke in effects");
        }
        vec![Effect::OwnState { changes: false }]
    }

    fn title(&self) -> String {
        if self.at == "title" {
            panic!("fragile broke in title");
        }
        "fragile".to_owned()
    }

    fn plan(&self, _session: &Session) -> Option<Result<Plan, ToolOutput>> {
        if self.at == "plan" {
            panic!("fragile broke in plan");
        }
        None
    }

    fn run(self: Box<Self>, _ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        Box::pin(async move {
            if self.at == "run" {
                panic!("fragile broke in run");
            }
            ToolOutput::ok("fragile ran")
        })
    }
}

/// `path` relative to the fixture's root exists.
pub fn exists(root: &Path, path: &str) -> bool {
    root.join(path).exists()
}
