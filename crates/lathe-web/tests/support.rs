//! A session over a temporary workspace with the web tools set up, and a dispatcher to call
//! them through the gate.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use lathe_policy::{ApprovalMode, PermissionsConfig};
use lathe_runtime::dispatch::{
    ApprovalDecision, ApprovalRequest, Approver, Dispatcher, Gate, Outcome,
};
use lathe_runtime::{Registry, Session, ToolConfig, ToolContext, Workspace};
use lathe_web::WebConfig;
use serde_json::Value;

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub session: Arc<Session>,
    pub permissions: PermissionsConfig,
}

impl Fixture {
    /// A session whose `[permissions] allow` is `allow`, with `config` for the web tools.
    pub fn new(allow: &[&str], config: WebConfig) -> Self {
        Fixture::with_budget(allow, config, ToolConfig::default().result_budget)
    }

    pub fn with_budget(allow: &[&str], config: WebConfig, budget: usize) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let tools = ToolConfig {
            result_budget: budget,
            ..ToolConfig::default()
        };
        let session = Session::new(
            Workspace::new(&root).unwrap(),
            tools,
            dir.path().join("state"),
        )
        .unwrap();
        let permissions = PermissionsConfig {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            ..PermissionsConfig::default()
        };
        lathe_web::configure(&session, config, &permissions);
        Fixture {
            dir,
            session,
            permissions,
        }
    }

    pub fn registry() -> Registry {
        let mut registry = Registry::new();
        lathe_web::register(&mut registry);
        registry
    }

    /// A dispatcher whose gate is in `mode` with this fixture's rules.
    pub fn dispatcher(&self, mode: ApprovalMode) -> Dispatcher {
        let gate = Gate::with_permissions(
            &self.permissions,
            mode,
            self.session.workspace().root(),
            false,
        )
        .unwrap();
        Dispatcher::new(Arc::new(Fixture::registry()), Arc::new(gate))
    }

    /// One call through a gate in `full` mode (nothing asks: what is judged is the tool's own
    /// guard).
    pub async fn call(&self, name: &str, arguments: Value) -> Outcome {
        self.call_in(ApprovalMode::Full, name, arguments).await
    }

    pub async fn call_in(&self, mode: ApprovalMode, name: &str, arguments: Value) -> Outcome {
        let approver = Answers::new(ApprovalDecision::Deny { message: None });
        self.dispatcher(mode)
            .call(
                name,
                arguments,
                &approver,
                ToolContext::new(Arc::clone(&self.session)),
            )
            .await
    }
}

/// Gives one answer to every question, and keeps the questions.
pub struct Answers {
    answer: ApprovalDecision,
    pub asked: Mutex<Vec<ApprovalRequest>>,
}

impl Answers {
    pub fn new(answer: ApprovalDecision) -> Self {
        Answers {
            answer,
            asked: Mutex::new(Vec::new()),
        }
    }

    pub fn requests(&self) -> Vec<ApprovalRequest> {
        self.asked.lock().unwrap().clone()
    }
}

impl Approver for Answers {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        self.asked.lock().unwrap().push(request.clone());
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}
