//! The MCP server handler: the registry's tools, one session per connection, every call
//! through the dispatcher (the session's gate, the client asked by elicitation), progress and
//! cancellation.

use std::sync::{Arc, Mutex, OnceLock};

use lathe_runtime::dispatch::{CallStatus, Outcome};
use lathe_runtime::{Registry, Session, ToolContext};
#[allow(
    deprecated,
    reason = "MCP logging is deprecated by SEP-2577 but still part of the revisions clients speak"
)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::Peer;
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use lathe_checkpoint::session::{SessionCheckpoints, is_checkpoint_tool};
use lathe_config::checkpoints::Recorded;
use lathe_runtime::Host;

use super::approve::ElicitationApprover;
use super::convert;
use super::gate::{self, GateConfig};
use super::progress::Forwarder;
use super::sessions::Links;

/// What every connection of one server shares.
pub struct Shared {
    registry: Arc<Registry>,
    tools: Vec<Tool>,
    /// The tools offered in a session where nothing is pending: what a session not created
    /// yet lists.
    idle_tools: Vec<Tool>,
    gates: GateConfig,
    instructions: String,
    /// The workspace, for its project commands (MCP prompts).
    workspace: std::path::PathBuf,
    new_session: Box<dyn Fn() -> anyhow::Result<Arc<Session>> + Send + Sync>,
    /// The `[hooks]` the dispatcher runs around every call (`PreToolUse`, `PostToolUse`).
    hooks: std::sync::OnceLock<Arc<dyn lathe_runtime::Hook>>,
}

impl Shared {
    /// The server over `registry`, each session with a gate made by `gates`, created by
    /// `new_session`.
    pub fn new(
        registry: Registry,
        gates: GateConfig,
        workspace: &std::path::Path,
        new_session: impl Fn() -> anyhow::Result<Arc<Session>> + Send + Sync + 'static,
    ) -> Arc<Shared> {
        let tools: Vec<Tool> = registry.definitions().map(convert::tool).collect();
        let idle_tools = idle_offered(&registry, workspace, &tools);
        let instructions = format!(
            "Lathe's coding tools over the workspace {}. Paths are relative to the workspace \
             root. Read a file with read_file before changing it with edit_file or write_file. \
             A shell command that outlives its timeout moves to the background: read its output \
             with command_output and stop it with kill_command. Each call that changes files \
             is a checkpoint: list them with checkpoint_list, take one back with \
             checkpoint_restore. A change a tool previews waits, pending, until resolve \
             applies or discards it. Approval mode: {}.",
            workspace.display(),
            gates.mode()
        );
        Arc::new(Shared {
            registry: Arc::new(registry),
            tools,
            idle_tools,
            gates,
            instructions,
            workspace: workspace.to_path_buf(),
            new_session: Box::new(new_session),
            hooks: std::sync::OnceLock::new(),
        })
    }

    /// Runs `hooks` around every call of every session (set once, before serving).
    pub fn set_hooks(&self, hooks: Arc<dyn lathe_runtime::Hook>) {
        let _ = self.hooks.set(hooks);
    }

    /// The host of `session`'s calls, built on its first call: the tools, the session's own
    /// gate, the configured hooks, and the session's checkpoints (opened when a call first
    /// changes something), which record each changing call as a turn of its own.
    fn host(
        &self,
        session: &Arc<Session>,
        gate: Arc<lathe_runtime::Gate>,
        client: &str,
    ) -> (Host, Arc<SessionCheckpoints>) {
        let checkpoints = lathe_config::checkpoints::session_checkpoints(
            session,
            Recorded {
                provider: "mcp".to_owned(),
                model: client.to_owned(),
                approval: self.gates.mode(),
                title: format!("MCP session of {client}"),
            },
        );
        let host = lathe_config::checkpoints::per_call_host(
            session,
            Arc::clone(&self.registry),
            gate,
            self.hooks.get().cloned(),
            Some(&checkpoints),
        );
        (host, checkpoints)
    }

    /// The tools `session` offers now ([`Registry::is_offered`]: `resolve` only while an
    /// action is pending there); the idle list for a session not created yet.
    fn offered(&self, session: Option<&Session>) -> Vec<Tool> {
        match session {
            Some(session) => self
                .tools
                .iter()
                .filter(|tool| self.registry.is_offered(&tool.name, session))
                .cloned()
                .collect(),
            None => self.idle_tools.clone(),
        }
    }

    /// The names of the tools `session` offers now, to tell whether a call changed them.
    fn offered_names(&self, session: &Session) -> Vec<String> {
        self.registry
            .offered(session)
            .map(|definition| definition.name.clone())
            .collect()
    }

    /// A new session, with its own approval gate.
    pub fn session(&self) -> anyhow::Result<Arc<Session>> {
        let session = (self.new_session)()?;
        self.gates.install(&session)?;
        // MCP clients take image content: `read_file` on a PNG answers with the image.
        lathe_runtime::vision::set_vision(&session, lathe_runtime::vision::Vision::Sees);
        Ok(session)
    }
}

/// The tools offered in a session with nothing pending, asked of a blank session (its state
/// directory the system's temporary one, which exists: nothing is created). All of them when
/// even that cannot be made.
fn idle_offered(registry: &Registry, workspace: &std::path::Path, tools: &[Tool]) -> Vec<Tool> {
    let blank = lathe_runtime::Workspace::new(workspace).and_then(|workspace| {
        Session::new(
            workspace,
            lathe_runtime::ToolConfig::default(),
            std::env::temp_dir(),
        )
    });
    match blank {
        Ok(blank) => tools
            .iter()
            .filter(|tool| registry.is_offered(&tool.name, &blank))
            .cloned()
            .collect(),
        Err(err) => {
            tracing::warn!("cannot tell which tools an idle session offers: {err}");
            tools.to_vec()
        }
    }
}

/// A session created on first use: an MCP session that never calls a tool holds no
/// descriptor and no directory. Its state directory is removed at the end if it stayed empty.
pub struct LazySession {
    shared: Arc<Shared>,
    session: Mutex<Option<Arc<Session>>>,
}

impl LazySession {
    /// A session of `shared`, not created yet.
    pub fn new(shared: &Arc<Shared>) -> LazySession {
        LazySession {
            shared: Arc::clone(shared),
            session: Mutex::new(None),
        }
    }

    /// The session, created now if it was not.
    pub fn get(&self) -> anyhow::Result<Arc<Session>> {
        let mut session = self.session.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(session) = session.as_ref() {
            return Ok(Arc::clone(session));
        }
        let created = self.shared.session()?;
        *session = Some(Arc::clone(&created));
        Ok(created)
    }

    /// The session, if it was created.
    pub fn peek(&self) -> Option<Arc<Session>> {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Ends the session if it was created: its commands are killed, an empty state directory
    /// is removed.
    pub fn shutdown(&self) {
        let session = self
            .session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(session) = session {
            session.shutdown();
            lathe_config::state::remove_if_empty(session.state_dir());
        }
    }
}

/// Which session a connection's calls run in.
pub enum Scope {
    /// One connection, one session (stdio).
    Connection(Arc<Session>),
    /// Streamable HTTP: an MCP session (opened by `initialize`) gets its own session; requests
    /// of the stateless 2026-07-28 lifecycle have no connection and share the host's.
    Http {
        /// Set by `initialize`.
        own: OnceLock<LazySession>,
        /// The session of the whole server, for stateless requests.
        host: Arc<LazySession>,
        /// Where an MCP session's Lathe session is recorded for the session manager.
        links: Arc<Links>,
    },
}

/// One connection's handler.
pub struct LatheServer {
    shared: Arc<Shared>,
    scope: Scope,
    /// Cancelled when the connection ends: every call running in it stops.
    closed: CancellationToken,
    /// The least severe log level the client asked for with `logging/setLevel` (its rank in
    /// [`LEVELS`]); no log notifications until it asks.
    log_level: Mutex<Option<usize>>,
}

/// The levels of MCP logging (RFC 5424), least severe first.
const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

impl LatheServer {
    /// A handler for one connection; `closed` ends its running calls.
    pub fn new(shared: Arc<Shared>, scope: Scope, closed: CancellationToken) -> Self {
        LatheServer {
            shared,
            scope,
            closed,
            log_level: Mutex::new(None),
        }
    }

    /// Sends `data` as a log notification of `level` (one of [`LEVELS`]) if the client asked
    /// for that level or a less severe one.
    async fn log(&self, peer: &Peer<RoleServer>, level: &str, data: Value) {
        let wanted = *self.log_level.lock().unwrap_or_else(|e| e.into_inner());
        let rank = LEVELS.iter().position(|l| *l == level).unwrap_or(0);
        if wanted.is_none_or(|wanted| rank < wanted) {
            return;
        }
        let params = serde_json::json!({"level": level, "logger": "lathe", "data": data});
        #[allow(
            deprecated,
            reason = "MCP logging is deprecated by SEP-2577 but still part of the revisions clients speak"
        )]
        match serde_json::from_value::<rmcp::model::LoggingMessageNotificationParam>(params) {
            Ok(params) => {
                if let Err(err) = peer.notify_logging_message(params).await {
                    tracing::debug!("cannot send a log notification: {err}");
                }
            }
            Err(err) => tracing::warn!("log notification: {err}"),
        }
    }

    /// The session resources are read from: the connection's or MCP session's, created now if
    /// it was not.
    fn resource_session(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<Arc<Session>, McpError> {
        self.session(context)
    }

    /// The session a request would run in, if it exists yet (nothing is created).
    fn existing_session(&self) -> Option<Arc<Session>> {
        match &self.scope {
            Scope::Connection(session) => Some(Arc::clone(session)),
            Scope::Http { own, host, .. } => match own.get() {
                Some(own) => own.peek(),
                None => host.peek(),
            },
        }
    }

    fn session(&self, context: &RequestContext<RoleServer>) -> Result<Arc<Session>, McpError> {
        let cannot = |err: anyhow::Error| {
            McpError::internal_error(format!("cannot create a session: {err:#}"), None)
        };
        match &self.scope {
            Scope::Connection(session) => Ok(Arc::clone(session)),
            Scope::Http { own, host, links } => match own.get() {
                Some(own) => {
                    let session = own.get().map_err(cannot)?;
                    if let Some(id) = mcp_session_id(context) {
                        links.link(&id, &session);
                    }
                    Ok(session)
                }
                None => host.get().map_err(cannot),
            },
        }
    }

    /// How long a remembered approval lasts here, as the prompt says it; `None` where there is
    /// no per-client session (stateless HTTP requests share the server's session with every
    /// other client).
    fn remembers(&self) -> Option<&'static str> {
        match &self.scope {
            Scope::Connection(_) => Some("while this connection lasts"),
            Scope::Http { own, .. } => own
                .get()
                .map(|_| "in this MCP session (until the client closes it or it expires)"),
        }
    }

    async fn run_call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let registry = &self.shared.registry;
        // MCP answers a tool it does not have with a protocol error; the text is the one the
        // agent's model reads for the same call.
        if registry.resolve_name(&request.name).is_err() {
            return Err(McpError::invalid_params(
                registry.unknown_tool(&request.name).text,
                None,
            ));
        }
        let session = self.session(&context)?;
        let offered = self.shared.offered_names(&session);
        let outcome = self.dispatch(request, &context, &session).await;
        // A call that left an action pending, or resolved one, changed what tools/list says.
        if self.shared.offered_names(&session) != offered
            && let Err(err) = context.peer.notify_tool_list_changed().await
        {
            tracing::debug!("cannot send tools/list_changed: {err}");
        }
        outcome
    }

    async fn dispatch(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        session: &Arc<Session>,
    ) -> Result<CallToolResponse, McpError> {
        let registry = &self.shared.registry;
        let session = Arc::clone(session);
        let context = context.clone();
        let Some(gate) = gate::of(&session) else {
            return Err(McpError::internal_error(
                "the session has no approval gate",
                None,
            ));
        };
        let client = context
            .peer
            .peer_info()
            .map(|info| info.client_info.name.clone())
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| "an MCP client".to_owned());
        // Before the call is prepared: a restore's effects are the files its checkpoints hold.
        let (host, checkpoints) = self.shared.host(&session, gate, &client);
        let dispatcher = host.dispatcher();
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let call = match dispatcher.prepare(&request.name, arguments, &session) {
            Ok(call) => call,
            Err(outcome) => return Ok(convert::result(outcome.output).into()),
        };
        let name = call.name.clone();
        super::sub_agents::enter(&session, &name, &context, &request);
        let cancel = self.closed.child_token();
        let _link = Link::new(&context.ct, &cancel);
        let call_id = context.id.to_string();
        let approver = ElicitationApprover::new(
            &context,
            &request,
            &session,
            registry,
            &self.shared.gates,
            self.remembers(),
        );
        let authorized = match dispatcher
            .authorize(call, &call_id, &approver, &session, &cancel)
            .await
        {
            Ok(authorized) => authorized,
            Err(outcome) => {
                if let Some(input) = approver.take_input_required() {
                    return Ok((*input).into());
                }
                self.log_unrun(&context.peer, &name, &outcome, approver.asked())
                    .await;
                return Ok(convert::result(outcome.output).into());
            }
        };

        let forwarder = context
            .meta
            .get_progress_token()
            .map(|token| Forwarder::start(context.peer.clone(), token));
        let ctx = ToolContext {
            session,
            cancel,
            progress: forwarder.as_ref().map(|(_, sink)| Arc::clone(sink)),
            call_id: Some(call_id.clone()),
        };
        tracing::info!(tool = name, id = call_id, "call started");
        self.log(
            &context.peer,
            "debug",
            serde_json::json!({"event": "call started", "tool": name, "id": call_id}),
        )
        .await;
        // A call that may change the workspace is a turn of its own, recorded around it; the
        // checkpoint tools record their own steps.
        let own = is_checkpoint_tool(&name);
        let changes = !own
            && authorized.info().judgement.may_change_workspace
            && checkpoints.keeps(&ctx.session);
        let outcome = checkpoints
            .around(&host, changes, own, dispatcher.run(authorized, ctx))
            .await;
        if let Some((forwarder, _)) = forwarder {
            forwarder.finish().await;
        }
        let output = outcome.output;
        tracing::info!(
            tool = name,
            id = call_id,
            is_error = output.is_error,
            "call finished"
        );
        let mut finished = serde_json::json!({
            "event": "call finished",
            "tool": name,
            "id": call_id,
            "is_error": output.is_error,
        });
        if let Some(command) = &output.metadata.command {
            finished["command_id"] = command.id.into();
        }
        self.log(
            &context.peer,
            if output.is_error { "error" } else { "info" },
            finished,
        )
        .await;
        Ok(convert::result(output).into())
    }

    /// Logs a call that ended before it ran: denied by the policy, refused by the person
    /// asked, or stopped.
    async fn log_unrun(&self, peer: &Peer<RoleServer>, tool: &str, outcome: &Outcome, asked: bool) {
        let reason = &outcome.output.text;
        let (event, level) = match outcome.status {
            CallStatus::Denied if !asked => ("call denied", "warning"),
            CallStatus::Denied => ("call refused", "notice"),
            CallStatus::Cancelled => ("call cancelled", "info"),
            // Its plan failed (the text to replace is not in the file): the tool's own error.
            CallStatus::Error | CallStatus::Ok => ("call finished", "error"),
            CallStatus::Refused => ("call refused", "notice"),
        };
        tracing::info!(tool, %reason, "{event}");
        self.log(
            peer,
            level,
            serde_json::json!({"event": event, "tool": tool, "reason": reason}),
        )
        .await;
    }
}

impl Drop for LatheServer {
    fn drop(&mut self) {
        self.closed.cancel();
        match &self.scope {
            Scope::Connection(session) => session.shutdown(),
            Scope::Http { own, .. } => {
                if let Some(own) = own.get() {
                    own.shutdown();
                }
            }
        }
    }
}

/// The `Mcp-Session-Id` the request came with over HTTP.
fn mcp_session_id(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<hyper::http::request::Parts>()
        .and_then(|parts| parts.headers.get("mcp-session-id"))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Forwards the request's cancellation (`notifications/cancelled`, or the connection closing)
/// to the tool's token while the call runs, and no longer: the SDK also cancels the request's
/// token once the response is sent, which must not reach a command that moved to the
/// background.
struct Link(tokio::task::JoinHandle<()>);

impl Link {
    fn new(request: &CancellationToken, tool: &CancellationToken) -> Link {
        let request = request.clone();
        let tool = tool.clone();
        Link(tokio::spawn(async move {
            tokio::select! {
                () = request.cancelled() => tool.cancel(),
                () = tool.cancelled() => {}
            }
        }))
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl ServerHandler for LatheServer {
    fn get_info(&self) -> ServerConfig {
        let mut implementation = Implementation::new("lathe", env!("CARGO_PKG_VERSION"));
        implementation.title = Some("Lathe".into());
        implementation.description = Some(
            "Coding tools with command analysis, approvals and lossless command output".into(),
        );
        #[allow(
            deprecated,
            reason = "MCP logging is deprecated by SEP-2577 but still part of the revisions clients speak"
        )]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_resources()
            .enable_prompts()
            .build();
        let mut info =
            InitializeResult::new(capabilities).with_instructions(self.shared.instructions.clone());
        info.server_info = implementation;
        info
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        if let Scope::Http { own, .. } = &self.scope
            && own.get().is_none()
        {
            let _ = own.set(LazySession::new(&self.shared));
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let session = self.existing_session();
        Ok(ListToolsResult::with_all_items(
            self.shared.offered(session.as_deref()),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.shared.tools.iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.run_call(request, context).await
    }

    #[allow(
        deprecated,
        reason = "MCP logging is deprecated by SEP-2577 but still part of the revisions clients speak"
    )]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let name = serde_json::to_value(request.level)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let rank = LEVELS.iter().position(|l| *l == name).unwrap_or(0);
        *self.log_level.lock().unwrap_or_else(|e| e.into_inner()) = Some(rank);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(super::prompts::list(&self.shared.workspace))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        super::prompts::get(&self.shared.workspace, &request)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let session = self.resource_session(&context)?;
        super::resources::list(&session)
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        super::resources::templates()
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let session = self.resource_session(&context)?;
        super::resources::read(&session, &request.uri).map(ReadResourceResponse::Complete)
    }
}

#[cfg(test)]
mod tests {
    use lathe_policy::{ApprovalMode, PermissionsConfig};
    use lathe_runtime::{PendingAction, Tool as _, ToolOutput};
    use lathe_tools::resolve::ResolveTool;

    use super::*;

    #[test]
    fn resolve_is_offered_only_where_something_is_pending() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let gates = GateConfig::new(
            PermissionsConfig::default(),
            ApprovalMode::Auto,
            &root,
            false,
        )
        .unwrap();
        let state = dir.path().join("state");
        let made = {
            let root = root.clone();
            move || {
                let workspace = lathe_runtime::Workspace::new(&root)?;
                Ok(Session::new(workspace, Default::default(), state.clone())?)
            }
        };
        let shared = Shared::new(lathe_tools::builtin(), gates, &root, made);
        let listed = |tools: Vec<Tool>| -> Vec<String> {
            tools.into_iter().map(|t| t.name.to_string()).collect()
        };
        let idle = listed(shared.offered(None));
        assert!(idle.contains(&"read_file".to_owned()), "{idle:?}");
        assert!(!idle.contains(&ResolveTool::NAME.to_owned()), "{idle:?}");

        let session = shared.session().unwrap();
        assert_eq!(listed(shared.offered(Some(&session))), idle);
        let before = shared.offered_names(&session);
        let action = PendingAction::custom("a change", "test", Vec::new(), |_, _| async {
            ToolOutput::ok("done")
        });
        session.push_pending(action).unwrap();
        let waiting = listed(shared.offered(Some(&session)));
        assert!(
            waiting.contains(&ResolveTool::NAME.to_owned()),
            "{waiting:?}"
        );
        assert_eq!(waiting.len(), idle.len() + 1);
        assert_ne!(
            shared.offered_names(&session),
            before,
            "a push changes the list"
        );
    }
}
