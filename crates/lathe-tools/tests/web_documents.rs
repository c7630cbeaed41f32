//! `web_fetch` of a PDF read by `read_document`'s conversion: lathe-web converts no documents
//! itself; the built-in tools provide the reader it hands a fetched PDF to.

use std::sync::Arc;

use lathe_runtime::{
    ApprovalDecision, ApprovalMode, ApprovalRequest, Approver, CallStatus, Dispatcher, Gate,
    Outcome, Session, ToolConfig, ToolContext, Workspace,
};
use lathe_testkit::{Framing, Response, Script, ScriptedServer};
use serde_json::{Value, json};

struct Fixture {
    dir: tempfile::TempDir,
    session: Arc<Session>,
}

/// Never asked: the gate is in `full` mode and loopback is allowed by a rule.
struct Unasked;

impl Approver for Unasked {
    fn approve<'a>(
        &'a self,
        _request: &'a ApprovalRequest,
    ) -> futures::future::BoxFuture<'a, ApprovalDecision> {
        Box::pin(async { panic!("nothing should ask") })
    }
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let session = Session::new(
            Workspace::new(&root).unwrap(),
            ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        Fixture { dir, session }
    }

    async fn call(&self, name: &str, arguments: Value) -> Outcome {
        let permissions = lathe_runtime::PermissionsConfig {
            allow: vec!["fetch(127.0.0.1)".to_owned()],
            ..Default::default()
        };
        lathe_web::configure(&self.session, lathe_web::WebConfig::default(), &permissions);
        let mut registry = lathe_tools::builtin();
        lathe_web::register(&mut registry);
        let root = self.session.workspace().root().to_path_buf();
        let gate = Gate::with_permissions(&permissions, ApprovalMode::Full, &root, false).unwrap();
        Dispatcher::new(Arc::new(registry), Arc::new(gate))
            .call(
                name,
                arguments,
                &Unasked,
                ToolContext::new(Arc::clone(&self.session)),
            )
            .await
    }
}

#[tokio::test]
async fn a_pdf_fetched_by_web_fetch_is_read_as_read_document_reads_it() {
    let pdf = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../lathe-documents/tests/fixtures/pages.pdf"),
    )
    .unwrap();
    let server = ScriptedServer::start(
        Script::new().always(
            "/paper.pdf",
            Response::new(200)
                .header("content-type", "application/pdf")
                .bytes(pdf.clone())
                .framing(Framing::Length),
        ),
    )
    .unwrap();
    let f = Fixture::new();
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/paper.pdf", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    // The pages as read_document shows them, the page without text as a gap.
    let text = &out.output.text;
    assert!(text.contains("read_document reads it again"), "{text}");
    assert!(text.contains("Page two says bravo."), "{text}");
    assert!(
        text.contains("(page 3: no text layer (scanned?); OCR is not available)"),
        "{text}"
    );
    assert!(text.contains("3 of 4 pages had text"), "{text}");
    let saved = out.output.metadata.path.clone().unwrap();
    assert_eq!(std::fs::read(&saved).unwrap(), pdf);
    assert!(saved.starts_with(f.dir.path().join("state").to_str().unwrap()));
}
