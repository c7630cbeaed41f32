//! The tool runner: one turn's calls as a batch, on the shared call pipeline.
//!
//! Each call goes through the [`Dispatcher`] (prepare, authorize, run: the same steps `lathe
//! mcp` and `lathe tool` take), and the runner adds what only an agent needs: events, and
//! batching. Calls that only read (as their tools say, for their input) run concurrently; calls
//! that change things run one at a time, in the order the model gave them (a run of reads
//! between two changes runs together, so a read after a write sees the write). Where the gate
//! asks, the [`Approver`] answers, one request at a time. Each call reports started, output as
//! it arrives, and finished events, and every call gets a result the model reads, whether it
//! ran, failed, was refused or was denied: a denial is never a failed turn.

pub mod summary;
pub(crate) mod tally;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use lathe_runtime::dispatch::{Authorized, Judgement, Outcome};
use lathe_runtime::{
    Dispatcher, Effect, FileChange, Host, PreparedCall, Registry, Session, ToolContext, ToolKind,
    ToolOutput, ToolProgress,
};

use crate::approval::{ApprovalDecision, ApprovalRequest, Approver, Gate};
use crate::events::{Event, OutputStream, ToolStatus};
use crate::parser::{ParsedCall, refuse_truncated_write};
use crate::sink::EventSink;

pub use lathe_runtime::dispatch::STOPPED_BEFORE_RUNNING;

/// Most bytes of a call's live output turned into events (each event is stored).
pub const LIVE_OUTPUT_CAP: usize = 256 * 1024;
const LIVE_OUTPUT_STOPPED: &str =
    "\n[live output stops here; the call's result and its saved output have the rest]\n";

/// One call as the executor hands it over.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchCall {
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
    /// The files it changed, each with its diff.
    pub changes: Vec<FileChange>,
    /// It would change the project's memory ([`Effect::Memory`], or a write of the memory
    /// file), which asks in every mode.
    pub changes_memory: bool,
    /// It is a call that changes files, whatever its status: a write, an edit, a command the
    /// gate did not find read-only ([`Judgement::changes_files`]).
    pub changes_files: bool,
    /// The command line it runs, when it runs one (as the gate read it from the call).
    pub command: Option<String>,
}

enum Stage {
    Ready(PreparedCall),
    Done(Outcome),
}

impl Stage {
    fn concurrent(&self) -> bool {
        match self {
            Stage::Ready(call) => call.only_reads(),
            Stage::Done(..) => true,
        }
    }
}

/// Runs batches of calls for one session.
pub struct ToolRunner {
    host: Host,
    session: Arc<Session>,
    approver: Arc<dyn Approver>,
}

impl std::fmt::Debug for ToolRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRunner")
            .field("host", &self.host)
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
        ToolRunner::with_dispatcher(Arc::new(Dispatcher::new(registry, gate)), session, approver)
    }

    /// A runner on a dispatcher of the caller's (with its hooks), for `session`.
    pub fn with_dispatcher(
        dispatcher: Arc<Dispatcher>,
        session: Arc<Session>,
        approver: Arc<dyn Approver>,
    ) -> Self {
        ToolRunner::with_host(Host::from_dispatcher(dispatcher), session, approver)
    }

    /// A runner on the session's host (its dispatcher, hooks and turn recorder), for `session`.
    pub fn with_host(host: Host, session: Arc<Session>, approver: Arc<dyn Approver>) -> Self {
        ToolRunner {
            host,
            session,
            approver,
        }
    }

    /// The host: the dispatcher the calls go through, and the recorder of the turns.
    pub fn host(&self) -> &Host {
        &self.host
    }

    /// The same runner (gate, hooks, session, approver) over `registry`.
    pub fn with_registry(&self, registry: Arc<Registry>) -> ToolRunner {
        ToolRunner {
            host: self.host.with_registry(registry),
            session: Arc::clone(&self.session),
            approver: Arc::clone(&self.approver),
        }
    }

    /// The tools.
    pub fn registry(&self) -> &Registry {
        self.host.registry()
    }

    /// The tool session.
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// The gate (to switch modes).
    pub fn gate(&self) -> &Arc<Gate> {
        self.host.gate()
    }

    /// The pipeline the calls go through.
    pub fn dispatcher(&self) -> &Arc<Dispatcher> {
        self.host.dispatcher()
    }

    /// Runs `calls` and returns one result per call, in the calls' order. When `cancel` fires,
    /// running calls are stopped and calls not yet started do not run; they still get results.
    ///
    /// Within a run of reads, every call is announced first, then each is checked (and asked
    /// about, one at a time) in order and started as soon as it is allowed; each reports
    /// finished as it completes.
    pub async fn run_batch(
        &self,
        calls: &[BatchCall],
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
            let mut slots: Vec<Slot> = (index..end)
                .map(|i| announce(&calls[i], stages[i].as_ref(), sink))
                .collect();
            let mut running = FuturesUnordered::new();
            for i in index..end {
                let decided = match stages[i].take() {
                    Some(Stage::Ready(mut call)) => {
                        // Judged now, after the calls before it ran, and read by the report.
                        self.host.dispatcher().judge(&mut call, &self.session);
                        if let Some(judgement) = call.judgement() {
                            slots[i - index].judged(judgement);
                        }
                        let approver = Eventing {
                            inner: self.approver.as_ref(),
                            sink,
                        };
                        self.host
                            .dispatcher()
                            .authorize(call, &calls[i].call_id, &approver, &self.session, cancel)
                            .await
                    }
                    Some(Stage::Done(outcome)) => Err(outcome),
                    None => Err(Outcome::ended(
                        ToolStatus::Refused,
                        "internal error: the call was scheduled twice",
                    )),
                };
                match decided {
                    Ok(authorized) => {
                        let handle = self.spawn(authorized, &calls[i].call_id, sink, cancel);
                        running.push(async move { (i, handle.await) });
                    }
                    Err(outcome) => results[i] = Some(finish(sink, &slots[i - index], outcome)),
                }
            }
            while let Some((i, joined)) = running.next().await {
                let outcome = joined.unwrap_or_else(|err| {
                    Outcome::ended(
                        ToolStatus::Error,
                        format!("internal error: the call's task failed ({err}); try another way"),
                    )
                });
                results[i] = Some(finish(sink, &slots[i - index], outcome));
            }
            index = end;
        }
        let results: Vec<CallResult> = results.into_iter().flatten().collect();
        let mut changed: Vec<String> = Vec::new();
        for change in results.iter().flat_map(|r| &r.changes) {
            if !changed.contains(&change.path) {
                changed.push(change.path.clone());
            }
        }
        if !changed.is_empty() {
            sink.emit(Event::FilesChanged { paths: changed });
        }
        results
    }

    fn stage(&self, planned: &BatchCall) -> Stage {
        if let Some(refusal) = planned.refusal.clone() {
            return Stage::Done(Outcome::ended(ToolStatus::Refused, refusal));
        }
        match self.host.dispatcher().prepare(
            &planned.call.name,
            planned.call.arguments.clone(),
            &self.session,
        ) {
            // A call cut off by the output limit runs only when it changes nothing.
            Ok(prepared) => match refuse_truncated_write(&planned.call, !prepared.only_reads()) {
                Some(refusal) => Stage::Done(Outcome::ended(ToolStatus::Refused, refusal)),
                None => Stage::Ready(prepared),
            },
            // Arguments cut off mid-way rarely fit the tool: say why they do not.
            Err(outcome) if self.registry().resolve_name(&planned.call.name).is_ok() => {
                match refuse_truncated_write(&planned.call, true) {
                    Some(refusal) => Stage::Done(Outcome::ended(ToolStatus::Refused, refusal)),
                    None => Stage::Done(outcome),
                }
            }
            Err(outcome) => Stage::Done(outcome),
        }
    }

    /// Starts an allowed call on its own task, its output reported as events.
    fn spawn(
        &self,
        call: Authorized,
        call_id: &str,
        sink: &EventSink,
        cancel: &CancellationToken,
    ) -> tokio::task::JoinHandle<Outcome> {
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
        let dispatcher = Arc::clone(self.host.dispatcher());
        tokio::spawn(async move { dispatcher.run(call, ctx).await })
    }
}

/// The runner's approver: the session's, with the request and the answer reported as events.
struct Eventing<'a> {
    inner: &'a dyn Approver,
    sink: &'a EventSink,
}

impl Approver for Eventing<'_> {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            self.sink.emit(Event::ApprovalRequested {
                call_id: request.call_id.clone(),
                tool: request.tool.clone(),
                description: request.description.clone(),
                diff: request.diff.clone(),
            });
            let decision = self.inner.approve(request).await;
            self.sink.emit(Event::ApprovalResolved {
                call_id: request.call_id.clone(),
                decision: decision.clone(),
            });
            decision
        })
    }
}

/// A call that was announced: what its finished event needs.
struct Slot {
    call_id: String,
    name: String,
    title: String,
    kind: Option<ToolKind>,
    runs_command: bool,
    changes_memory: bool,
    changes_files: bool,
    command: Option<String>,
    began: Instant,
}

impl Slot {
    /// Takes what the gate worked out about the call.
    fn judged(&mut self, judgement: &Judgement) {
        self.changes_memory = judgement.changes_memory;
        self.changes_files = judgement.changes_files;
        self.command = judgement.commands.first().cloned();
    }
}

/// Emits a call's started event.
fn announce(planned: &BatchCall, stage: Option<&Stage>, sink: &EventSink) -> Slot {
    let (name, arguments, title, kind, runs_command, changes_memory) = match stage {
        Some(Stage::Ready(call)) => (
            call.name.clone(),
            call.arguments.clone(),
            call.title.clone(),
            Some(call.kind),
            call.effects
                .iter()
                .any(|e| matches!(e, Effect::Command { .. })),
            call.effects
                .iter()
                .any(|e| matches!(e, Effect::Memory { .. })),
        ),
        _ => (
            planned.call.name.clone(),
            planned.call.arguments.clone(),
            summary::unprepared(&planned.call.name, &planned.call.arguments),
            None,
            false,
            false,
        ),
    };
    sink.emit(Event::ToolCallStarted {
        call_id: planned.call_id.clone(),
        name: name.clone(),
        arguments,
        summary: title.clone(),
    });
    Slot {
        call_id: planned.call_id.clone(),
        name,
        title,
        kind,
        runs_command,
        changes_memory,
        changes_files: false,
        command: None,
        began: Instant::now(),
    }
}

/// Emits a call's finished event and returns its result.
fn finish(sink: &EventSink, slot: &Slot, outcome: Outcome) -> CallResult {
    let Outcome { status, output } = outcome;
    let elapsed = slot.began.elapsed();
    let summary = summary::finished(&slot.title, slot.runs_command, status, &output, elapsed);
    // What the call changed is reported whatever its status: a plan over several files that
    // failed half-way still wrote the first ones.
    let changes = output.metadata.changes.clone();
    let stats = summary::stats(&output.metadata);
    sink.emit(Event::ToolCallFinished {
        call_id: slot.call_id.clone(),
        name: slot.name.clone(),
        status,
        summary: summary.clone(),
        stats,
        changes: changes.clone(),
        command: slot
            .runs_command
            .then(|| output.metadata.command.as_ref().map(|c| c.status.clone()))
            .flatten(),
        duration_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
    });
    let watched = lathe_runtime::watch::changes_in(&output.metadata);
    if !watched.is_empty() {
        sink.emit(Event::WorkspaceChanged {
            call_id: slot.call_id.clone(),
            message: lathe_runtime::watch::summary(&watched),
            changes: watched,
        });
    }
    CallResult {
        call_id: slot.call_id.clone(),
        name: slot.name.clone(),
        kind: slot.kind,
        status,
        output,
        summary,
        changes,
        changes_memory: slot.changes_memory,
        changes_files: slot.changes_files,
        command: slot.command.clone(),
    }
}
