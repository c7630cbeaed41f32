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
use std::time::Instant;

use futures::future::join_all;
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
    /// One approval prompt at a time, even when reads run concurrently.
    asking: tokio::sync::Mutex<()>,
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
            asking: tokio::sync::Mutex::new(()),
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
    pub async fn run_batch(
        &self,
        calls: &[PlannedCall],
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> Vec<CallResult> {
        let stages: Vec<Stage> = calls.iter().map(|planned| self.stage(planned)).collect();
        let mut results: Vec<Option<CallResult>> = vec![None; calls.len()];
        let mut stages: Vec<Option<Stage>> = stages.into_iter().map(Some).collect();
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
            let group = (index..end).map(|i| {
                let stage = stages[i].take().expect("each stage runs once");
                self.run_one(&calls[i], stage, sink, cancel)
            });
            for (offset, result) in join_all(group).await.into_iter().enumerate() {
                results[index + offset] = Some(result);
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

    async fn run_one(
        &self,
        planned: &PlannedCall,
        stage: Stage,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> CallResult {
        let began = Instant::now();
        let (name, arguments, kind) = match &stage {
            Stage::Ready(call) => (
                call.name.to_owned(),
                call.arguments.clone(),
                Some(call.kind),
            ),
            Stage::Done(..) => (
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
        let (status, output) = match stage {
            Stage::Done(status, output) => (status, output),
            Stage::Ready(_) if cancel.is_cancelled() => (
                ToolStatus::Cancelled,
                ToolOutput::error(STOPPED_BEFORE_RUNNING),
            ),
            Stage::Ready(call) => self.approve_and_run(planned, call, sink, cancel).await,
        };
        let summary = summary::finished(&name, &arguments, status, &output, began.elapsed());
        let stats = summary::stats(&output.metadata).filter(|_| status == ToolStatus::Ok);
        let changed_path = (status == ToolStatus::Ok && kind == Some(ToolKind::Edit))
            .then(|| {
                output
                    .metadata
                    .get("path")
                    .or_else(|| arguments.get("path"))
                    .and_then(|p| p.as_str())
                    .map(str::to_owned)
            })
            .flatten();
        sink.emit(Event::ToolCallFinished {
            call_id: planned.call_id.clone(),
            name: name.clone(),
            status,
            summary: summary.clone(),
            stats,
            duration_ms: u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
        });
        CallResult {
            call_id: planned.call_id.clone(),
            name,
            kind,
            status,
            output,
            summary,
            changed_path,
        }
    }

    async fn approve_and_run(
        &self,
        planned: &PlannedCall,
        call: PreparedCall,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> (ToolStatus, ToolOutput) {
        let Some(definition) = self.registry.definition(call.name) else {
            return (
                ToolStatus::Refused,
                ToolOutput::error(format!("unknown tool `{}`", call.name)),
            );
        };
        match self.gate.check(&call, definition) {
            Verdict::Allow => {}
            Verdict::Deny { reason } => {
                return (
                    ToolStatus::Denied,
                    ToolOutput::error(denial_text(Some(&reason))),
                );
            }
            Verdict::Ask { reasons, scope } => {
                let _one_at_a_time = self.asking.lock().await;
                // An earlier prompt of this batch may have allowed it for the session.
                if let Verdict::Ask { .. } = self.gate.check(&call, definition) {
                    let request = self.request(planned, &call, reasons, scope.clone());
                    sink.emit(Event::ApprovalRequested {
                        call_id: request.call_id.clone(),
                        tool: request.tool.clone(),
                        description: request.description.clone(),
                        diff: request.diff.clone(),
                    });
                    let decision = tokio::select! {
                        decision = self.approver.approve(&request) => decision,
                        () = cancel.cancelled() => {
                            return (ToolStatus::Cancelled, ToolOutput::error(STOPPED_BEFORE_RUNNING));
                        }
                    };
                    sink.emit(Event::ApprovalResolved {
                        call_id: planned.call_id.clone(),
                        decision: decision.clone(),
                    });
                    match decision {
                        ApprovalDecision::AllowOnce => {}
                        ApprovalDecision::AllowSession => self.gate.allow_for_session(&scope),
                        ApprovalDecision::Deny { message } => {
                            return (
                                ToolStatus::Denied,
                                ToolOutput::error(denial_text(message.as_deref())),
                            );
                        }
                    }
                }
            }
        }
        if cancel.is_cancelled() {
            return (
                ToolStatus::Cancelled,
                ToolOutput::error(STOPPED_BEFORE_RUNNING),
            );
        }
        let mut ctx = ToolContext::new(Arc::clone(&self.session));
        ctx.cancel = cancel.child_token();
        ctx.call_id = Some(planned.call_id.clone());
        let progress_sink = sink.clone();
        let call_id = planned.call_id.clone();
        ctx.progress = Some(Arc::new(move |progress: ToolProgress| {
            let event = match progress {
                ToolProgress::Output { text } => Event::ToolOutputDelta {
                    call_id: call_id.clone(),
                    stream: OutputStream::Stdout,
                    text,
                },
                ToolProgress::Status { message } => Event::Notice { message },
            };
            progress_sink.emit(event);
        }));
        let output = self.registry.run_prepared(&call, ctx).await;
        let status = if cancel.is_cancelled() {
            ToolStatus::Cancelled
        } else if output.is_error {
            ToolStatus::Error
        } else {
            ToolStatus::Ok
        };
        (status, output)
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
