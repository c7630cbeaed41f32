//! The tool runner: one turn's calls as a batch.
//!
//! Calls that only read run concurrently; calls that change things run one at a time, in the
//! order the model gave them (a run of reads between two changes runs together, so a read after
//! a write sees the write). Every call passes the [`Gate`]; where it asks, the [`Approver`]
//! answers, one request at a time. Each call reports started, output as it arrives, and finished
//! events, and every call gets a result the model reads, whether it ran, failed, was refused or
//! was denied: a denial is never a failed turn.

pub mod summary;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use lathe_tools::{
    PreparedCall, Registry, Session, ToolContext, ToolKind, ToolOutput, ToolProgress,
};

use crate::approval::{
    ApprovalDecision, ApprovalRequest, Approver, Gate, Verdict, denial_text, preview_edit,
};
use crate::events::{Event, OutputStream, ToolStatus};
use crate::parser::{ParsedCall, refuse_truncated_write, unknown_tool_message};
use crate::sink::EventSink;

/// Most bytes of a call's live output turned into events (each event is stored).
pub const LIVE_OUTPUT_CAP: usize = 256 * 1024;
const LIVE_OUTPUT_STOPPED: &str =
    "\n[live output stops here; the call's result and its saved output have the rest]\n";

/// What the model reads for a call that never started because the user stopped the turn.
pub const STOPPED_BEFORE_RUNNING: &str =
    "the user stopped this turn before this call ran; it did not run";

/// One call as the executor hands it over.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCall {
    /// The call as the model made it (native, or recovered from its text).
    pub call: ParsedCall,
    /// Its id in events: the model's, or one the executor gave it.
    pub call_id: String,
    /// When set, the call is refused before it runs and the model reads this (the repeat guard
    /// uses it).
    pub refusal: Option<String>,
}

/// How one call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    /// Its id in events.
    pub call_id: String,
    /// The tool as registered, or the name as written when it is unknown.
    pub name: String,
    /// What the tool does to the world, when the tool is known.
    pub kind: Option<ToolKind>,
    /// How it ended.
    pub status: ToolStatus,
    /// The result; `text` is what the model reads.
    pub output: ToolOutput,
    /// The one line shown for it.
    pub summary: String,
    /// The file it changed, relative to the workspace root, for an edit that succeeded.
    pub changed_path: Option<String>,
}

enum Stage {
    Ready(PreparedCall),
    Done(ToolStatus, ToolOutput),
}

impl Stage {
    fn concurrent(&self) -> bool {
        match self {
            Stage::Ready(call) => call.kind.is_read_only(),
            Stage::Done(..) => true,
        }
    }
}

/// Runs batches of calls for one session.
pub struct ToolRunner {
    registry: Arc<Registry>,
    session: Arc<Session>,
    gate: Arc<Gate>,
    approver: Arc<dyn Approver>,
}

impl std::fmt::Debug for ToolRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunner")
            .field("registry", &self.registry)
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

impl ToolRunner {
    /// A runner over `registry` for `session`, deciding with `gate` and asking `approver`.
    pub fn new(
        registry: Arc<Registry>,
        session: Arc<Session>,
        gate: Arc<Gate>,
        approver: Arc<dyn Approver>,
    ) -> Self {
        ToolRunner {
            registry,
            session,
            gate,
            approver,
        }
    }

    /// The tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The tool session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The gate (to switch modes).
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    /// Runs `calls` and returns one result per call, in the calls' order. When `cancel` fires,
    /// running calls are stopped and calls not yet started do not run; they still get results.
    ///
    /// Within a run of reads, every call is announced first, then each is checked (and asked
    /// about, one at a time) in order and started as soon as it is allowed; each reports
    /// finished as it completes.
    pub async fn run_batch(
        &self,
        calls: &[PlannedCall],
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Vec<CallResult> {
        let mut stages: Vec<Option<Stage>> = calls.iter().map(|p| Some(self.stage(p))).collect();
        let mut results: Vec<Option<CallResult>> = vec![None; calls.len()];
        let mut index = 0;
        while index < calls.len() {
            let concurrent = stages[index].as_ref().is_some_and(Stage::concurrent);
            let end = if concurrent {
                (index..calls.len())
                    .find(|&i| !stages[i].as_ref().is_some_and(Stage::concurrent))
                    .unwrap_or(calls.len())
            } else {
                index + 1
            };
            let slots: Vec<Slot> = (index..end)
                .map(|i| announce(&calls[i], stages[i].as_ref(), sink))
                .collect();
            let mut running = FuturesUnordered::new();
            for i in index..end {
                let slot = &slots[i - index];
                let decided = match stages[i].take() {
                    Some(Stage::Ready(call)) => {
                        match self.decide(&calls[i], &call, sink, cancel).await {
                            Ok(()) => Ok(call),
                            Err(done) => Err(done),
                        }
                    }
                    Some(Stage::Done(status, output)) => Err((status, output)),
                    None => Err((
                        ToolStatus::Refused,
                        ToolOutput::error("internal error: the call was scheduled twice"),
                    )),
                };
                match decided {
                    Ok(call) => {
                        let handle = self.spawn(call, &calls[i].call_id, sink, cancel);
                        running.push(async move { (i, handle.await) });
                    }
                    Err((status, output)) => results[i] = Some(finish(sink, slot, status, output)),
                }
            }
            while let Some((i, joined)) = running.next().await {
                let output = joined.unwrap_or_else(|err| {
                    ToolOutput::error(format!(
                        "internal error: the call's task failed ({err}); try another way"
                    ))
                });
                let status = if cancel.is_cancelled() {
                    ToolStatus::Cancelled
                } else if output.is_error {
                    ToolStatus::Error
                } else {
                    ToolStatus::Ok
                };
                results[i] = Some(finish(sink, &slots[i - index], status, output));
            }
            index = end;
        }
        let results: Vec<CallResult> = results.into_iter().flatten().collect();
        let mut changed: Vec<String> = Vec::new();
        for path in results.iter().filter_map(|r| r.changed_path.clone()) {
            if !changed.contains(&path) {
                changed.push(path);
            }
        }
        if !changed.is_empty() {
            sink.emit(Event::FilesChanged { paths: changed });
        }
        results
    }

    fn stage(&self, planned: &PlannedCall) -> Stage {
        let refusal = planned
            .refusal
            .clone()
            .or_else(|| refuse_truncated_write(&planned.call))
            .or_else(|| unknown_tool_message(&planned.call));
        if let Some(refusal) = refusal {
            return Stage::Done(ToolStatus::Refused, ToolOutput::error(refusal));
        }
        match self
            .registry
            .prepare(&planned.call.name, planned.call.arguments.clone())
        {
            Ok(prepared) => Stage::Ready(prepared),
            Err(output) => Stage::Done(ToolStatus::Refused, output),
        }
    }

    /// Starts an allowed call on its own task, its output reported as events.
    fn spawn(
        &self,
        call: PreparedCall,
        call_id: &str,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> tokio::task::JoinHandle<ToolOutput> {
        let mut ctx = ToolContext::new(Arc::clone(&self.session));
        ctx.cancel = cancel.child_token();
        ctx.call_id = Some(call_id.to_owned());
        let progress_sink = sink.clone();
        let id = call_id.to_owned();
        let shown = AtomicUsize::new(0);
        ctx.progress = Some(Arc::new(move |progress: ToolProgress| match progress {
            ToolProgress::Output { text } => {
                // Every event is stored: past the cap, the live view stops (once, saying so)
                // and the result and the command's artifact keep the rest.
                let before = shown.fetch_add(text.len(), Ordering::Relaxed);
                let text = if before + text.len() <= LIVE_OUTPUT_CAP {
                    text
                } else if before <= LIVE_OUTPUT_CAP {
                    LIVE_OUTPUT_STOPPED.to_owned()
                } else {
                    return;
                };
                progress_sink.emit(Event::ToolOutputDelta {
                    call_id: id.clone(),
                    stream: OutputStream::Stdout,
                    text,
                });
            }
            // Progress lines ("searched 10,000 files") are for a live view only; the result
            // says what matters.
            ToolProgress::Status { message } => tracing::debug!(call = %id, "{message}"),
        }));
        let registry = Arc::clone(&self.registry);
        tokio::spawn(async move { registry.run_prepared(&call, ctx).await })
    }

    /// Checks a call against the gate, asking the approver where it says so. `Err` is how the
    /// call ends without running.
    async fn decide(
        &self,
        planned: &PlannedCall,
        call: &PreparedCall,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Result<(), (ToolStatus, ToolOutput)> {
        let stopped = || {
            (
                ToolStatus::Cancelled,
                ToolOutput::error(STOPPED_BEFORE_RUNNING),
            )
        };
        if cancel.is_cancelled() {
            return Err(stopped());
        }
        let Some(definition) = self.registry.definition(call.name) else {
            return Err((
                ToolStatus::Refused,
                ToolOutput::error(format!("unknown tool `{}`", call.name)),
            ));
        };
        let (reasons, rules) = match self.gate.check(call, definition, &self.session) {
            Verdict::Allow => return Ok(()),
            Verdict::Deny { reason } => {
                return Err((
                    ToolStatus::Denied,
                    ToolOutput::error(denial_text(Some(&reason))),
                ));
            }
            Verdict::Ask { reasons, rules } => (reasons, rules),
        };
        let scope = if rules.is_empty() {
            "this call only".to_owned()
        } else {
            rules.join(", ")
        };
        let request = self.request(planned, call, reasons, scope);
        sink.emit(Event::ApprovalRequested {
            call_id: request.call_id.clone(),
            tool: request.tool.clone(),
            description: request.description.clone(),
            diff: request.diff.clone(),
        });
        let decision = tokio::select! {
            decision = self.approver.approve(&request) => decision,
            () = cancel.cancelled() => return Err(stopped()),
        };
        sink.emit(Event::ApprovalResolved {
            call_id: planned.call_id.clone(),
            decision: decision.clone(),
        });
        match decision {
            ApprovalDecision::AllowOnce => Ok(()),
            ApprovalDecision::AllowSession => {
                self.gate.allow_for_session(&rules);
                Ok(())
            }
            ApprovalDecision::Deny { message } => Err((
                ToolStatus::Denied,
                ToolOutput::error(denial_text(message.as_deref())),
            )),
        }
    }

    fn request(
        &self,
        planned: &PlannedCall,
        call: &PreparedCall,
        reasons: Vec<String>,
        scope: String,
    ) -> ApprovalRequest {
        let preview = match call.kind {
            ToolKind::Edit => preview_edit(call.name, &call.arguments, self.session.workspace()),
            _ => None,
        };
        let description = match call.arguments.get("command").and_then(|c| c.as_str()) {
            Some(command) if call.kind == ToolKind::Execute => {
                format!("{} {}", call.name, command.trim())
            }
            _ => match &preview {
                Some(p) => format!(
                    "{} (+{} -{})",
                    summary::started(call.name, &call.arguments),
                    p.added,
                    p.removed
                ),
                None => summary::started(call.name, &call.arguments),
            },
        };
        ApprovalRequest {
            call_id: planned.call_id.clone(),
            tool: call.name.to_owned(),
            arguments: call.arguments.clone(),
            description,
            reasons,
            diff: preview.map(|p| p.diff),
            scope,
        }
    }
}

/// A call that was announced: what its finished event needs.
struct Slot {
    call_id: String,
    name: String,
    arguments: serde_json::Value,
    kind: Option<ToolKind>,
    began: Instant,
}

/// Emits a call's started event.
fn announce(planned: &PlannedCall, stage: Option<&Stage>, sink: &EventSink) -> Slot {
    let (name, arguments, kind) = match stage {
        Some(Stage::Ready(call)) => (
            call.name.to_owned(),
            call.arguments.clone(),
            Some(call.kind),
        ),
        _ => (
            planned.call.name.clone(),
            planned.call.arguments.clone(),
            None,
        ),
    };
    sink.emit(Event::ToolCallStarted {
        call_id: planned.call_id.clone(),
        name: name.clone(),
        arguments: arguments.clone(),
        summary: summary::started(&name, &arguments),
    });
    Slot {
        call_id: planned.call_id.clone(),
        name,
        arguments,
        kind,
        began: Instant::now(),
    }
}

/// Emits a call's finished event and returns its result.
fn finish(sink: &EventSink, slot: &Slot, status: ToolStatus, output: ToolOutput) -> CallResult {
    let elapsed = slot.began.elapsed();
    let summary = summary::finished(&slot.name, &slot.arguments, status, &output, elapsed);
    let stats = summary::stats(&output.metadata).filter(|_| status == ToolStatus::Ok);
    let changed_path = (status == ToolStatus::Ok && slot.kind == Some(ToolKind::Edit))
        .then(|| {
            output
                .metadata
                .get("path")
                .or_else(|| slot.arguments.get("path"))
                .and_then(|p| p.as_str())
                .map(str::to_owned)
        })
        .flatten();
    sink.emit(Event::ToolCallFinished {
        call_id: slot.call_id.clone(),
        name: slot.name.clone(),
        status,
        summary: summary.clone(),
        stats,
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    });
    let changes = lathe_tools::watch::changes_in(&output.metadata);
    if !changes.is_empty() {
        sink.emit(Event::WorkspaceChanged {
            call_id: slot.call_id.clone(),
            message: lathe_tools::watch::summary(&changes),
            changes,
        });
    }
    CallResult {
        call_id: slot.call_id.clone(),
        name: slot.name.clone(),
        kind: slot.kind,
        status,
        output,
        summary,
        changed_path,
    }
}
