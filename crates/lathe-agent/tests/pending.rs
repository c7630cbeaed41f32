//! Pending actions in the agent loop: a tool previews a change, and the requests steer the model
//! to `resolve` it (a forced tool choice on OpenAI-compatible servers, a reminder in every
//! request). The whole agent runs ([`Agent::builder`], the built-in tools with `resolve`, the
//! real gate in each approval mode, a real SQLite store) against the scripted model servers,
//! and the tests read the request bodies they recorded.

use std::io::Read;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::approval::{ApprovalDecision, ApprovalMode, Approver, FixedAnswer};
use lathe_agent::events::{Event, RunReport, RunStatus, ToolStatus};
use lathe_agent::message::Message;
use lathe_agent::provider::{ChatRequest, ProviderKind, ToolProtocol};
use lathe_agent::sink::stored_history;
use lathe_runtime::{
    Access, Effect, FileChange, NOTHING_PENDING, PendingAction, Plan, PlannedWrite, Session, Tool,
    ToolContext, ToolError, ToolKind, ToolOutput, ToolResult, current_stamp,
};
use lathe_testkit::{Response, Script, ScriptedServer, ollama, openai};

use crate::common::{Harness, MODEL, Run, reply, text};

const REMINDER: &str = "[Lathe] Pending and not applied yet";
const FILE: &str = "notes.txt";
const BEFORE: &str = "hello\n";
const AFTER: &str = "HELLO\n";

/// Shows what writing a file would change and leaves it pending: nothing is written until
/// `resolve` applies it.
#[derive(Debug, Deserialize, JsonSchema)]
struct PreviewPutInput {
    /// The file.
    path: String,
    /// Its new content.
    content: String,
}

struct PreviewPut;

impl PreviewPut {
    fn plan(input: &PreviewPutInput, session: &Session) -> Result<Plan, String> {
        let workspace = session.workspace();
        let target = workspace
            .resolve(&input.path, Access::Write)
            .map_err(|e| e.to_string())?;
        let before = current_stamp(workspace, &target).map_err(|e| e.to_string())?;
        let mut old = String::new();
        if before.is_some() {
            workspace
                .open_read(&target)
                .and_then(|mut f| f.read_to_string(&mut old))
                .map_err(|e| e.to_string())?;
        }
        let shown = target.shown().to_owned();
        let mut diff = format!("--- a/{shown}\n+++ b/{shown}\n@@ -1 +1 @@\n");
        for line in old.lines() {
            diff.push_str(&format!("-{line}\n"));
        }
        for line in input.content.lines() {
            diff.push_str(&format!("+{line}\n"));
        }
        let change = FileChange {
            path: shown,
            created: before.is_none(),
            deleted: false,
            added: input.content.lines().count() as u64,
            removed: old.lines().count() as u64,
            diff,
        };
        Ok(Plan::new(
            vec![PlannedWrite {
                target,
                before,
                content: input.content.clone().into_bytes(),
                new_mode: 0o644,
                change,
                remove: false,
            }],
            ToolOutput::ok(String::new()),
        ))
    }
}

impl Tool for PreviewPut {
    const NAME: &'static str = "preview_put";
    type Input = PreviewPutInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![Effect::Read {
            path: input.path.clone(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        format!("preview_put {}", input.path)
    }

    async fn run(&self, input: PreviewPutInput, ctx: ToolContext) -> ToolResult {
        let plan = PreviewPut::plan(&input, &ctx.session).map_err(ToolError::new)?;
        let diff = plan.writes[0].change.diff.clone();
        let label = format!("write {}", input.path);
        let notice = ctx
            .session
            .push_pending(PendingAction::from_plan(label, Self::NAME, plan))
            .map_err(ToolError::new)?;
        Ok(ToolOutput::ok(format!("{diff}\n{notice}")))
    }
}

impl Run {
    fn file(&self) -> String {
        std::fs::read_to_string(self.root.join(FILE)).unwrap()
    }

    fn report(&self) -> RunReport {
        match self.events().last() {
            Some(Event::RunResult(report)) => report.clone(),
            other => panic!("the last event is not the report: {other:?}"),
        }
    }

    /// The tools each request offered, by name.
    fn offered(&self) -> Vec<Vec<String>> {
        self.server
            .chat_bodies()
            .iter()
            .map(|body| {
                body["tools"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .collect()
    }

    /// Each request's `tool_choice`, `Null` when it sent none.
    fn choices(&self) -> Vec<Value> {
        self.server
            .chat_bodies()
            .iter()
            .map(|b| b.get("tool_choice").cloned().unwrap_or(Value::Null))
            .collect()
    }

    /// How many times each request carries the reminder, and the content of its last message.
    fn reminders(&self) -> Vec<(usize, String)> {
        self.server
            .chat_bodies()
            .iter()
            .map(|body| {
                let messages = body["messages"].as_array().unwrap();
                let count = messages
                    .iter()
                    .filter_map(|m| m["content"].as_str())
                    .map(|c| c.matches(REMINDER).count())
                    .sum();
                let last = messages.last().unwrap()["content"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                (count, last)
            })
            .collect()
    }

    fn finished(&self, tool: &str) -> Vec<(ToolStatus, Vec<FileChange>)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::ToolCallFinished {
                    name,
                    status,
                    changes,
                    ..
                } if name == tool => Some((status, changes)),
                _ => None,
            })
            .collect()
    }

    fn approvals(&self) -> Vec<(String, Option<String>)> {
        self.events()
            .into_iter()
            .filter_map(|e| match e {
                Event::ApprovalRequested { tool, diff, .. } => Some((tool, diff)),
                _ => None,
            })
            .collect()
    }
}

fn start(
    kind: ProviderKind,
    script: Script,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
) -> Run {
    start_with(kind, script, mode, approver, ToolProtocol::Auto)
}

/// An agent with the built-in tools and `preview_put`, in `mode`, over a workspace holding
/// [`FILE`]; an Ollama server lists the model, an OpenAI-compatible one lists none.
fn start_with(
    kind: ProviderKind,
    script: Script,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    protocol: ToolProtocol,
) -> Run {
    let mut registry = lathe_tools::builtin();
    registry.register(PreviewPut);
    let harness = Harness::new().kind(kind);
    let harness = match kind {
        ProviderKind::Ollama => harness.script(script),
        ProviderKind::OpenAi => harness.bare_script(script),
    };
    let mut harness = harness
        .api_key("sk-test")
        .file(FILE, BEFORE)
        .tools(registry)
        .approval(mode)
        .config(|c| c.tool_protocol = protocol);
    if let Some(approver) = approver {
        harness = harness.approver(approver);
    }
    harness.start()
}

/// A model turn that calls `name` with `arguments`, in the server's wire format (with its id
/// on both).
fn call(kind: ProviderKind, id: &str, name: &str, arguments: Value) -> Response {
    match kind {
        ProviderKind::Ollama => reply().tool_call_with_id(id, name, arguments).done(),
        ProviderKind::OpenAi => crate::common::call(kind, id, name, arguments),
    }
}

fn preview(kind: ProviderKind, id: &str) -> Response {
    call(
        kind,
        id,
        "preview_put",
        json!({"path": FILE, "content": AFTER}),
    )
}

fn resolve(kind: ProviderKind, id: &str, action: &str) -> Response {
    call(kind, id, "resolve", json!({"action": action}))
}

fn forced() -> Value {
    json!({"type": "function", "function": {"name": "resolve"}})
}

async fn run(run: &mut Run, task: &str) {
    let outcome = run.agent.run(task, &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
}

#[tokio::test]
async fn openai_forces_resolve_on_the_turn_after_the_preview_and_the_change_waits_for_it() {
    let kind = ProviderKind::OpenAi;
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(resolve(kind, "c2", "apply"))
        .chat(text(kind, "Wrote notes.txt in capitals."));
    let mut r = start(kind, script, ApprovalMode::Auto, None);
    run(&mut r, "write notes.txt in capitals").await;

    assert_eq!(r.file(), AFTER);
    // Hidden while nothing is pending, offered while something is, hidden again after.
    let offered = r.offered();
    assert!(!offered[0].iter().any(|t| t == "resolve"), "{offered:?}");
    assert!(offered[1].iter().any(|t| t == "resolve"), "{offered:?}");
    assert!(!offered[2].iter().any(|t| t == "resolve"), "{offered:?}");
    assert_eq!(r.choices(), [Value::Null, forced(), Value::Null]);
    // The preview wrote nothing; the resolve call made the change.
    let previews = r.finished("preview_put");
    assert_eq!(previews.len(), 1);
    assert_eq!(previews[0].0, ToolStatus::Ok);
    assert!(previews[0].1.is_empty(), "{previews:?}");
    let resolves = r.finished("resolve");
    assert_eq!(resolves.len(), 1);
    assert_eq!(resolves[0].0, ToolStatus::Ok);
    assert_eq!(resolves[0].1[0].path, FILE);
    let report = r.report();
    assert_eq!(report.files_changed[0].path, FILE);
    assert!(report.pending.is_empty(), "{report:?}");
    // The reminder is in the request after the preview, at its end, and nowhere else.
    let reminders = r.reminders();
    assert_eq!(reminders[0].0, 0);
    assert_eq!(reminders[1].0, 1);
    assert!(
        reminders[1]
            .1
            .contains("now pending as \"write notes.txt\"")
            && reminders[1]
                .1
                .contains(&format!("{REMINDER}: \"write notes.txt\"")),
        "{reminders:?}"
    );
    assert_eq!(reminders[2].0, 0);
}

#[tokio::test]
async fn ollama_cannot_force_a_tool_so_the_request_reminds_the_model_and_never_stores_it() {
    let kind = ProviderKind::Ollama;
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(resolve(kind, "c2", "discard"))
        .chat(text(kind, "Dropped it."));
    let mut r = start(kind, script, ApprovalMode::Auto, None);
    run(&mut r, "show me what capitals would look like").await;

    assert_eq!(r.file(), BEFORE, "a discarded preview writes nothing");
    assert_eq!(r.choices(), [Value::Null, Value::Null, Value::Null]);
    assert!(r.offered()[1].iter().any(|t| t == "resolve"));
    let bodies = r.server.chat_bodies();
    let last = bodies[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "tool");
    assert_eq!(last["tool_name"], "preview_put");
    let content = last["content"].as_str().unwrap();
    assert!(
        content.ends_with(
            "[Lathe] Pending and not applied yet: \"write notes.txt\" (previewed by \
             preview_put). Resolve it before anything else: call `resolve` with action \
             \"apply\" to make the change, or \"discard\" to drop it."
        ),
        "{content}"
    );
    assert_eq!(r.reminders()[2].0, 0, "nothing pending after the discard");
    assert_eq!(r.finished("resolve")[0].0, ToolStatus::Ok);
    assert!(r.finished("resolve")[0].1.is_empty());
    // The history and the store hold the result as the tool gave it.
    let history = stored_history(&r.store, &r.session).unwrap();
    assert!(
        history.iter().all(|m| !m.content().contains(REMINDER)),
        "{history:?}"
    );
    assert!(
        r.agent
            .executor()
            .history()
            .iter()
            .all(|m| !m.content().contains(REMINDER))
    );
}

#[tokio::test]
async fn a_model_that_ignores_the_pending_action_is_forced_once_then_reminded_and_told_at_the_end()
{
    let kind = ProviderKind::OpenAi;
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(call(kind, "c2", "read_file", json!({"path": FILE})))
        .chat(call(kind, "c3", "list_files", json!({})))
        .chat(text(kind, "Here is the preview."));
    let mut r = start(kind, script, ApprovalMode::Auto, None);
    run(&mut r, "preview capitals in notes.txt").await;

    assert_eq!(r.file(), BEFORE);
    // The other calls ran as usual.
    assert_eq!(r.finished("read_file")[0].0, ToolStatus::Ok);
    assert_eq!(r.finished("list_files")[0].0, ToolStatus::Ok);
    // Forced once, then only reminded, once per request, without piling up.
    assert_eq!(
        r.choices(),
        [Value::Null, forced(), Value::Null, Value::Null]
    );
    let counts: Vec<usize> = r.reminders().iter().map(|(n, _)| *n).collect();
    assert_eq!(counts, [0, 1, 1, 1]);
    assert!(r.reminders()[3].1.contains(REMINDER));
    // The run says what it left undone.
    let report = r.report();
    assert_eq!(report.pending.len(), 1, "{report:?}");
    assert_eq!(report.pending[0].label, "write notes.txt");
    assert_eq!(report.pending[0].source, "preview_put");
    assert_eq!(report.pending[0].files, [FILE]);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["pending"][0]["label"], "write notes.txt");
    let notices = r.notices();
    assert!(
        notices.iter().any(|n| n.starts_with(
            "not applied, still pending: \"write notes.txt\" (previewed by preview_put)"
        )),
        "{notices:?}"
    );
}

#[tokio::test]
async fn a_server_that_refuses_tool_choice_is_asked_again_without_it_and_never_again() {
    let kind = ProviderKind::OpenAi;
    // llama.cpp's shape for an error it throws while reading the request.
    let refusal = Response::json(
        500,
        &json!({"error": {"code": 500, "message": "Invalid tool_choice: {\"type\":\"function\"}",
            "type": "server_error"}}),
    );
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(refusal)
        .chat(resolve(kind, "c2", "discard"))
        .chat(preview(kind, "c3"))
        .chat(resolve(kind, "c4", "apply"))
        .chat(text(kind, "Done."));
    let mut r = start(kind, script, ApprovalMode::Auto, None);
    run(&mut r, "write notes.txt in capitals").await;

    assert_eq!(r.file(), AFTER);
    // Forced, refused, sent again without it; the second preview is not forced at all.
    assert_eq!(
        r.choices(),
        [
            Value::Null,
            forced(),
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null
        ]
    );
    let counts: Vec<usize> = r.reminders().iter().map(|(n, _)| *n).collect();
    assert_eq!(counts, [0, 1, 1, 0, 1, 0]);
    let bodies = r.server.chat_bodies();
    let mut retried = bodies[2].clone();
    retried["tool_choice"] = forced();
    assert_eq!(retried, bodies[1], "the same request, without the choice");
    let told: Vec<String> = r
        .notices()
        .into_iter()
        .filter(|n| n.contains("does not take a forced tool choice"))
        .collect();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(told[0].contains("Invalid tool_choice"), "{told:?}");
}

#[tokio::test]
async fn ask_asks_for_the_resolve_with_the_actions_diff_and_not_for_the_preview() {
    let kind = ProviderKind::Ollama;
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(resolve(kind, "c2", "apply"))
        .chat(text(kind, "Done."));
    let approver: Arc<dyn Approver> = Arc::new(FixedAnswer(ApprovalDecision::AllowOnce));
    let mut r = start(kind, script, ApprovalMode::Ask, Some(approver));
    run(&mut r, "write notes.txt in capitals").await;

    assert_eq!(r.file(), AFTER);
    let approvals = r.approvals();
    assert_eq!(approvals.len(), 1, "{approvals:?}");
    assert_eq!(approvals[0].0, "resolve");
    let diff = approvals[0].1.as_deref().unwrap_or_default();
    assert!(
        diff.contains("-hello\n+HELLO\n") && diff.contains(&format!("+++ b/{FILE}")),
        "{diff}"
    );
}

#[tokio::test]
async fn ask_with_the_resolve_denied_leaves_the_file_and_the_action_pending() {
    let kind = ProviderKind::Ollama;
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(resolve(kind, "c2", "apply"))
        .chat(text(kind, "You said no; the preview is still pending."));
    let approver: Arc<dyn Approver> = Arc::new(FixedAnswer(ApprovalDecision::Deny {
        message: Some("not now".into()),
    }));
    let mut r = start(kind, script, ApprovalMode::Ask, Some(approver));
    run(&mut r, "write notes.txt in capitals").await;

    assert_eq!(r.file(), BEFORE);
    assert_eq!(r.finished("resolve")[0].0, ToolStatus::Denied);
    // Still pending, so still reminded; the report names it.
    assert_eq!(r.reminders()[2].0, 1);
    assert_eq!(r.report().pending.len(), 1);
}

#[tokio::test]
async fn read_only_allows_the_preview_and_refuses_the_apply() {
    let kind = ProviderKind::OpenAi;
    let script = Script::new()
        .chat(preview(kind, "c1"))
        .chat(resolve(kind, "c2", "apply"))
        .chat(text(kind, "Read-only: left it as a preview."));
    let mut r = start(kind, script, ApprovalMode::ReadOnly, None);
    run(&mut r, "write notes.txt in capitals").await;

    assert_eq!(r.file(), BEFORE);
    assert_eq!(r.finished("preview_put")[0].0, ToolStatus::Ok);
    assert_eq!(r.finished("resolve")[0].0, ToolStatus::Denied);
    assert!(r.approvals().is_empty(), "read-only asks nobody");
    // Forced once: the next turn is free to explain, and is only reminded.
    assert_eq!(r.choices(), [Value::Null, forced(), Value::Null]);
    assert_eq!(r.reminders()[2].0, 1);
    let report = r.report();
    assert_eq!(report.denied[0].tool, "resolve");
    assert_eq!(report.pending[0].label, "write notes.txt");
}

#[tokio::test]
async fn auto_and_full_apply_without_asking() {
    for mode in [ApprovalMode::Auto, ApprovalMode::Full] {
        let kind = ProviderKind::Ollama;
        let script = Script::new()
            .chat(preview(kind, "c1"))
            .chat(resolve(kind, "c2", "apply"))
            .chat(text(kind, "Done."));
        let approver: Arc<dyn Approver> = Arc::new(FixedAnswer(ApprovalDecision::Deny {
            message: Some("nobody should ask".into()),
        }));
        let mut r = start(kind, script, mode, Some(approver));
        run(&mut r, "write notes.txt in capitals").await;
        assert_eq!(r.file(), AFTER, "{mode}");
        assert!(r.approvals().is_empty(), "{mode}: {:?}", r.approvals());
        assert!(r.report().pending.is_empty(), "{mode}");
    }
}

#[tokio::test]
async fn the_text_protocol_lists_resolve_while_pending_and_reminds_in_the_result() {
    let kind = ProviderKind::Ollama;
    let written = |name: &str, arguments: Value| {
        let block = json!({"name": name, "arguments": arguments});
        ollama::turn(MODEL)
            .text(&format!("<tool_call>\n{block}\n</tool_call>"))
            .done()
    };
    let script = Script::new()
        .chat(written("resolve", json!({"action": "apply"})))
        .chat(written(
            "preview_put",
            json!({"path": FILE, "content": AFTER}),
        ))
        .chat(written("resolve", json!({"action": "apply"})))
        .chat(text(kind, "Done."));
    let mut r = start_with(kind, script, ApprovalMode::Auto, None, ToolProtocol::Text);
    run(&mut r, "write notes.txt in capitals").await;

    assert_eq!(r.file(), AFTER);
    // A call to the hidden tool still parses, and its result says there is nothing to do.
    let resolves = r.finished("resolve");
    assert_eq!(resolves[0].0, ToolStatus::Error);
    assert_eq!(resolves[1].0, ToolStatus::Ok);
    let bodies = r.server.chat_bodies();
    let second = bodies[1]["messages"].as_array().unwrap();
    assert!(
        second.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains(NOTHING_PENDING)
    );
    let system = |i: usize| {
        bodies[i]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(!system(1).contains("## resolve"));
    assert!(system(2).contains("## resolve"), "listed while pending");
    assert!(!system(3).contains("## resolve"));
    assert!(
        bodies
            .iter()
            .all(|b| b.get("tools").is_none() && b.get("tool_choice").is_none())
    );
    let (count, last) = &r.reminders()[2];
    assert_eq!(*count, 1);
    assert!(
        last.starts_with("<tool_result name=\"preview_put\">") && last.contains(REMINDER),
        "{last}"
    );
}

#[tokio::test]
async fn the_refusal_of_tool_choice_is_told_once_even_when_a_retry_comes_between() {
    let server = ScriptedServer::start(
        Script::new()
            .chat(openai::error(
                400,
                "tool_choice of type object is not supported",
            ))
            .chat(openai::error(503, "Loading model"))
            .chat(text(ProviderKind::OpenAi, "first"))
            .chat(text(ProviderKind::OpenAi, "second")),
    )
    .unwrap();
    let provider = crate::common::provider(ProviderKind::OpenAi, &server.url());
    let mut request = ChatRequest::new(MODEL, vec![Message::user("go")], crate::common::tools());
    request.tool_choice = Some("read_file".into());
    let (turn, events) = crate::common::turn(provider.as_ref(), &request).await;
    assert_eq!(turn.content, "first");
    let told = |events: &[Event]| {
        crate::common::notices(events)
            .into_iter()
            .filter(|n| n.contains("does not take a forced tool choice"))
            .count()
    };
    assert_eq!(told(&events), 1, "{events:?}");
    let (turn, events) = crate::common::turn(provider.as_ref(), &request).await;
    assert_eq!(turn.content, "second");
    assert_eq!(told(&events), 0, "said once");
    let choices: Vec<bool> = server
        .chat_bodies()
        .iter()
        .map(|b| b.get("tool_choice").is_some())
        .collect();
    assert_eq!(choices, [true, false, false, false]);
}
