//! The tool runner with small tools of the test's own: concurrency of reads, order of changes,
//! approvals, denials, refusals, cancellation and the events of each call.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::Barrier;
use tokio_util::sync::CancellationToken;

use lathe_agent::approval::{
    ApprovalDecision, ApprovalMode, ApprovalRequest, Approver, FixedAnswer, NonInteractive,
};
use lathe_agent::events::{Event, ToolStatus};
use lathe_agent::message::ToolCall;
use lathe_agent::parser::{ToolNames, resolve_native};
use lathe_agent::runner::{BatchCall, ToolRunner};
use lathe_agent::sink::EventSink;
use lathe_runtime::tool::ResultExt;
use lathe_runtime::{
    Effect, FileChange, Registry, Session, Tool, ToolContext, ToolError, ToolKind, ToolOutput,
    ToolProgress, ToolResult,
};

use crate::common::{Harness, Run};

/// Waits until `parties` calls of it are running at once.
#[derive(Deserialize, JsonSchema)]
struct MeetInput {
    /// A label.
    label: String,
}

struct Meet(Arc<Barrier>);

impl Tool for Meet {
    const NAME: &'static str = "meet";
    type Input = MeetInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::OwnState { changes: false }]
    }
    async fn run(&self, input: MeetInput, _ctx: ToolContext) -> ToolResult {
        // Sequential execution would wait here forever; the deadline turns that into a failure.
        tokio::time::timeout(Duration::from_secs(30), self.0.wait())
            .await
            .or_model(|_| "nobody came")?;
        Ok(ToolOutput::ok(format!("met {}", input.label)))
    }
}

/// Appends a line to a file in the workspace.
#[derive(Deserialize, JsonSchema)]
struct AppendInput {
    /// The file.
    path: String,
    /// The line.
    line: String,
}

struct Append;

impl Tool for Append {
    const NAME: &'static str = "append";
    type Input = AppendInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::Edit {
            path: input.path.clone(),
        }]
    }
    async fn run(&self, input: AppendInput, ctx: ToolContext) -> ToolResult {
        let path = ctx.session.workspace().root().join(&input.path);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&input.line);
        text.push('\n');
        std::fs::write(&path, text).unwrap();
        Ok(ToolOutput::ok("appended").with_change(FileChange::counted(input.path, 1, 0)))
    }
}

/// Prints, then waits until cancelled.
#[derive(Deserialize, JsonSchema)]
struct ForeverInput {}

struct Forever;

impl Tool for Forever {
    const NAME: &'static str = "forever";
    type Input = ForeverInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::Command {
            command: "forever".into(),
            cwd: None,
            outside_sandbox: false,
        }]
    }
    async fn run(&self, _input: ForeverInput, ctx: ToolContext) -> ToolResult {
        ctx.report(ToolProgress::Output {
            text: "started\n".into(),
        });
        ctx.cancel.cancelled().await;
        Err(ToolError::new("killed: the call was cancelled"))
    }
}

/// Prints a lot.
#[derive(Deserialize, JsonSchema)]
struct ChattyInput {}

struct Chatty;

impl Tool for Chatty {
    const NAME: &'static str = "chatty";
    type Input = ChattyInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::OwnState { changes: false }]
    }
    async fn run(&self, _input: ChattyInput, ctx: ToolContext) -> ToolResult {
        for _ in 0..400 {
            ctx.report(ToolProgress::Output {
                text: "x".repeat(1023) + "\n",
            });
        }
        ctx.report(ToolProgress::Status {
            message: "done printing".into(),
        });
        Ok(ToolOutput::ok("printed"))
    }
}

struct Fixture {
    _run: Run,
    root: std::path::PathBuf,
    runner: Arc<ToolRunner>,
    events: Arc<Mutex<Vec<Event>>>,
    sink: EventSink,
}

/// The runner of an agent with `meet` (for `meet` parties), `append`, `forever` and `chatty`,
/// in `mode`, asking `approver`; its events go to a sink that stores nothing.
fn fixture(mode: ApprovalMode, approver: Arc<dyn Approver>, meet: usize) -> Fixture {
    let mut registry = Registry::new();
    registry.register(Meet(Arc::new(Barrier::new(meet))));
    registry.register(Append);
    registry.register(Forever);
    registry.register(Chatty);
    let run = Harness::new()
        .tools(registry)
        .approval(mode)
        .approver(approver)
        .detached()
        .start();
    Fixture {
        root: run.root.canonicalize().unwrap(),
        runner: Arc::clone(run.runner()),
        events: Arc::clone(&run.events),
        sink: run.agent.sink().clone(),
        _run: run,
    }
}

fn planned(i: usize, name: &str, arguments: serde_json::Value) -> BatchCall {
    let names = ToolNames::new(["meet", "append", "forever", "chatty"]);
    BatchCall {
        call: resolve_native(ToolCall::new(name, arguments), &names),
        call_id: format!("c{i}"),
        refusal: None,
    }
}

#[tokio::test]
async fn reads_run_concurrently_and_changes_in_order() {
    let f = fixture(ApprovalMode::Full, Arc::new(NonInteractive), 3);
    let calls = vec![
        planned(0, "meet", json!({"label": "a"})),
        planned(1, "meet", json!({"label": "b"})),
        planned(2, "meet", json!({"label": "c"})),
        planned(3, "append", json!({"path": "log.txt", "line": "one"})),
        planned(4, "append", json!({"path": "log.txt", "line": "two"})),
    ];
    let results = f
        .runner
        .run_batch(&calls, &f.sink, &CancellationToken::new())
        .await;
    let texts: Vec<&str> = results.iter().map(|r| r.output.text.as_str()).collect();
    assert_eq!(texts, ["met a", "met b", "met c", "appended", "appended"]);
    assert_eq!(
        std::fs::read_to_string(f.root.join("log.txt")).unwrap(),
        "one\ntwo\n"
    );
    // Events are shown on the sink's writer thread.
    f.sink.flush().await;
    let events = f.events.lock().unwrap();
    let finished: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallFinished {
                call_id,
                status,
                stats,
                ..
            } => Some((call_id.clone(), *status, *stats)),
            _ => None,
        })
        .collect();
    assert_eq!(finished.len(), 5);
    assert!(
        finished
            .iter()
            .all(|(_, status, _)| *status == ToolStatus::Ok)
    );
    assert_eq!(finished[4].2.unwrap().added, 1);
    assert!(matches!(events.last(), Some(Event::FilesChanged { paths }) if paths == &["log.txt"]));
}

#[tokio::test]
async fn ask_mode_asks_and_a_denial_is_a_result() {
    let f = fixture(
        ApprovalMode::Ask,
        Arc::new(FixedAnswer(ApprovalDecision::Deny {
            message: Some("not that file".into()),
        })),
        1,
    );
    let calls = vec![
        planned(0, "append", json!({"path": "x.txt", "line": "no"})),
        planned(1, "meet", json!({"label": "r"})),
    ];
    let results = f
        .runner
        .run_batch(&calls, &f.sink, &CancellationToken::new())
        .await;
    assert_eq!(results[0].status, ToolStatus::Denied);
    assert_eq!(
        results[0].output.text,
        "the user denied this: not that file"
    );
    assert!(results[0].output.is_error);
    assert_eq!(results[1].status, ToolStatus::Ok, "reads do not ask");
    assert!(!f.root.join("x.txt").exists());
    // Events are shown on the sink's writer thread.
    f.sink.flush().await;
    let events = f.events.lock().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ApprovalRequested { tool, .. } if tool == "append"))
    );
    assert!(events.iter().any(|e| matches!(
        e,
        Event::ApprovalResolved {
            decision: ApprovalDecision::Deny { .. },
            ..
        }
    )));
}

/// Counts the requests it answers, allowing each for the session.
struct Counting(Mutex<Vec<ApprovalRequest>>);

impl Approver for Counting {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        self.0.lock().unwrap().push(request.clone());
        Box::pin(async { ApprovalDecision::AllowSession })
    }
}

#[tokio::test]
async fn allow_for_the_session_is_asked_once() {
    let approver = Arc::new(Counting(Mutex::new(Vec::new())));
    let f = fixture(ApprovalMode::Ask, approver.clone(), 1);
    std::fs::write(f.root.join("a.txt"), "zero\n").unwrap();
    let calls = vec![
        planned(0, "append", json!({"path": "a.txt", "line": "one"})),
        planned(1, "append", json!({"path": "a.txt", "line": "two"})),
    ];
    let results = f
        .runner
        .run_batch(&calls, &f.sink, &CancellationToken::new())
        .await;
    assert!(results.iter().all(|r| r.status == ToolStatus::Ok));
    let requests = approver.0.lock().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tool, "append");
}

#[tokio::test]
async fn exec_without_a_terminal_denies_with_a_message() {
    let f = fixture(ApprovalMode::Ask, Arc::new(NonInteractive), 1);
    let results = f
        .runner
        .run_batch(
            &[planned(0, "forever", json!({}))],
            &f.sink,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(results[0].status, ToolStatus::Denied);
    // Nobody was asked, so the model is not told that a user denied it.
    assert_eq!(results[0].output.text, NonInteractive::MESSAGE);
    // The runner does not know the binary's flags; `lathe exec` says how to allow (its tests).
    assert!(
        results[0].output.text.contains("nobody can be asked"),
        "{}",
        results[0].output.text
    );
}

#[tokio::test]
async fn read_only_mode_refuses_changes_without_asking() {
    let approver = Arc::new(Counting(Mutex::new(Vec::new())));
    let f = fixture(ApprovalMode::ReadOnly, approver.clone(), 1);
    let results = f
        .runner
        .run_batch(
            &[planned(0, "append", json!({"path": "a", "line": "x"}))],
            &f.sink,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(results[0].status, ToolStatus::Denied);
    assert!(
        results[0].output.text.contains("read-only"),
        "{}",
        results[0].output.text
    );
    assert!(approver.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn unknown_tools_and_refusals_are_results() {
    let f = fixture(ApprovalMode::Full, Arc::new(NonInteractive), 1);
    let mut repeated = planned(1, "meet", json!({"label": "x"}));
    repeated.refusal = Some("you made this same call three times in a row".into());
    let results = f
        .runner
        .run_batch(
            &[planned(0, "meat", json!({})), repeated],
            &f.sink,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(results[0].status, ToolStatus::Refused);
    assert!(
        results[0].output.text.contains("Did you mean `meet`?"),
        "{}",
        results[0].output.text
    );
    assert_eq!(results[1].status, ToolStatus::Refused);
    assert_eq!(
        results[1].output.text,
        "you made this same call three times in a row"
    );
}

#[tokio::test]
async fn cancelling_stops_the_running_call_and_skips_the_rest() {
    let f = fixture(ApprovalMode::Full, Arc::new(NonInteractive), 1);
    let cancel = CancellationToken::new();
    let calls = vec![
        planned(0, "forever", json!({})),
        planned(1, "append", json!({"path": "a", "line": "x"})),
    ];
    let stopper = cancel.clone();
    let events = Arc::clone(&f.events);
    tokio::spawn(async move {
        // Cancel once the command has printed (no wall-clock assumption).
        loop {
            let started = events
                .lock()
                .unwrap()
                .iter()
                .any(|e| matches!(e, Event::ToolOutputDelta { .. }));
            if started {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stopper.cancel();
    });
    let results = tokio::time::timeout(
        Duration::from_secs(30),
        f.runner.run_batch(&calls, &f.sink, &cancel),
    )
    .await
    .expect("the batch ends once cancelled");
    assert_eq!(results[0].status, ToolStatus::Cancelled);
    assert_eq!(results[1].status, ToolStatus::Cancelled);
    assert!(!f.root.join("a").exists());
}

#[tokio::test]
async fn a_write_cut_off_by_the_token_limit_is_refused_not_written() {
    use lathe_agent::parser::Repair;
    let f = fixture(ApprovalMode::Full, Arc::new(NonInteractive), 1);
    let mut cut = planned(
        0,
        "append",
        json!({"path": "a.txt", "line": "half", "content": "fn main() {"}),
    );
    cut.call.repairs.push(Repair::Truncated { in_string: true });
    let results = f
        .runner
        .run_batch(&[cut], &f.sink, &CancellationToken::new())
        .await;
    assert_eq!(results[0].status, ToolStatus::Refused);
    assert!(
        results[0].output.text.contains("cut off"),
        "{}",
        results[0].output.text
    );
    assert!(!f.root.join("a.txt").exists());
}

#[tokio::test]
async fn live_output_events_are_capped_per_call() {
    let f = fixture(ApprovalMode::Full, Arc::new(NonInteractive), 1);
    let results = f
        .runner
        .run_batch(
            &[planned(0, "chatty", json!({}))],
            &f.sink,
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(results[0].status, ToolStatus::Ok);
    // Events are shown on the sink's writer thread.
    f.sink.flush().await;
    let events = f.events.lock().unwrap();
    let deltas: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::ToolOutputDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let bytes: usize = deltas.iter().map(|t| t.len()).sum();
    assert!(
        bytes <= lathe_agent::runner::LIVE_OUTPUT_CAP + 200,
        "{bytes}"
    );
    assert_eq!(
        deltas
            .iter()
            .filter(|t| t.contains("live output stops here"))
            .count(),
        1
    );
    assert!(
        !events.iter().any(|e| matches!(e, Event::Notice { .. })),
        "status lines are not events"
    );
}
