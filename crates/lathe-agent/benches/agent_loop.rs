//! The agent loop's own overhead per turn: everything the executor does except waiting for the
//! model and running the tools.
//!
//! Run with `bench/agent_loop.sh` (or `cargo bench -p lathe-agent --bench agent_loop`). A
//! scripted model server on loopback answers every turn at once with one tool call; the tools
//! return at once too. Every turn therefore costs: shortening check and token estimate, building
//! and encoding the request, decoding and processing the stream (parser scan, marker filter),
//! the gate (policy analysis of a shell command line) and the runner's events. The sink's writer
//! thread stores every event and message in SQLite on disk (WAL) and renders each event as JSON
//! alongside, competing for the same cores. A turn is timed on the loop's side, from one request
//! to the next (what the loop itself waits for); the time spent awaiting the provider (request
//! sent until the last chunk arrived) is measured and subtracted per turn, so a slow loopback
//! does not count as loop overhead. The whole run, until the last event is stored and shown,
//! is reported too, so a writer that falls behind shows.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use lathe_agent::events::{Event, RunStatus};
use lathe_agent::provider::{
    Capabilities, ChatRequest, ChunkStream, Provider, ProviderError, ProviderKind, RetryPolicy,
};
use lathe_runtime::{
    CommandMeta, CommandState, Effect, Registry, Session, Tool, ToolContext, ToolKind, ToolOutput,
    ToolResult,
};
use lathe_testkit::{Script, ollama};

/// The agent test harness (the benches use a part of it).
#[allow(dead_code)]
#[path = "../tests/common/mod.rs"]
mod common;

const MODEL: &str = "bench-model";
/// Turns per run; the history grows with them, as in a real session.
const TURNS: [usize; 2] = [20, 100];
const ROUNDS: usize = 3;
/// The target from the issue.
const TARGET: Duration = Duration::from_millis(5);

/// Looks at a file (returns at once).
#[derive(Deserialize, JsonSchema)]
struct PeekInput {
    /// The file.
    path: String,
}

struct Peek;

impl Tool for Peek {
    const NAME: &'static str = "read_file";
    type Input = PeekInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::Read {
            path: input.path.clone(),
        }]
    }
    async fn run(&self, input: PeekInput, _ctx: ToolContext) -> ToolResult {
        Ok(ToolOutput::ok(format!("1\tcontents of {}\n", input.path)).with_path(input.path))
    }
}

/// Runs a command (returns at once; the gate still analyses the command line).
#[derive(Deserialize, JsonSchema)]
struct RunInput {
    /// The command.
    command: String,
}

struct Run;

impl Tool for Run {
    const NAME: &'static str = "shell";
    type Input = RunInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Execute
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let _ = input;
        vec![Effect::Command {
            command: input.command.clone(),
            cwd: None,
            outside_sandbox: false,
        }]
    }
    async fn run(&self, input: RunInput, _ctx: ToolContext) -> ToolResult {
        Ok(
            ToolOutput::ok(format!("exit 0\n{}\n", input.command)).with_command(CommandMeta {
                id: 1,
                status: CommandState::Exited { exit_code: 0 },
            }),
        )
    }
}

/// Wraps a provider and adds up the time spent awaiting it: the request until the response
/// starts, and every wait for the next chunk. Each request also marks a turn boundary: (when
/// it was sent, the provider wait so far).
struct Timed {
    inner: Arc<dyn Provider>,
    waited_ns: Arc<AtomicU64>,
    marks: Arc<Mutex<Vec<(Instant, u64)>>>,
}

struct TimedStream {
    inner: ChunkStream,
    waited_ns: Arc<AtomicU64>,
    /// When the consumer began waiting for the next item (its first poll for it).
    since: Option<Instant>,
}

impl Stream for TimedStream {
    type Item = <ChunkStream as Stream>::Item;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Self::Item>> {
        // From the first poll for an item until it is ready, the consumer does nothing but
        // wait (it is parked while the poll is pending): that is waiting for the model. Its own
        // work between items is not counted.
        let since = *self.since.get_or_insert_with(Instant::now);
        let poll = self.inner.as_mut().poll_next(cx);
        if poll.is_ready() {
            self.since = None;
            self.waited_ns
                .fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        poll
    }
}

impl Provider for Timed {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }
    fn base_url(&self) -> &str {
        self.inner.base_url()
    }
    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>> {
        self.inner.capabilities(model)
    }
    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        self.inner.list_models()
    }
    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChunkStream, ProviderError>> {
        Box::pin(async move {
            let start = Instant::now();
            self.marks
                .lock()
                .expect("marks")
                .push((start, self.waited_ns.load(Ordering::Relaxed)));
            let stream = self.inner.chat(request).await;
            self.waited_ns
                .fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
            let stream = stream?;
            Ok(Box::pin(TimedStream {
                inner: stream,
                waited_ns: Arc::clone(&self.waited_ns),
                since: None,
            }) as ChunkStream)
        })
    }
}

/// One run: the loop overhead of each turn, and of the whole run per turn until everything
/// was stored and shown.
struct Measured {
    per_turn: Vec<Duration>,
    end_to_end: Duration,
}

/// Measures one run of `turns` turns.
async fn run(turns: usize) -> Measured {
    let mut script = Script::new();
    for i in 0..turns {
        let reply = if i % 2 == 0 {
            ollama::turn(MODEL)
                .thinking("Next.")
                .tool_call("read_file", json!({"path": format!("src/f{i}.rs")}))
        } else {
            ollama::turn(MODEL)
                .text("Running the tests.")
                .tool_call("shell", json!({"command": format!("cargo test -p crate{i} 2>&1 | tail -n 20 && git status --short")}))
        };
        script = script.chat(reply.done());
    }
    script = script.chat(ollama::turn(MODEL).text("Done.").done());
    let waited = Arc::new(AtomicU64::new(0));
    let marks: Arc<Mutex<Vec<(Instant, u64)>>> = Arc::new(Mutex::new(Vec::new()));
    let timed = (Arc::clone(&waited), Arc::clone(&marks));
    let mut registry = Registry::new();
    registry.register(Peek);
    registry.register(Run);
    let mut session = common::Harness::new()
        .model(MODEL)
        .script(script)
        .retry(RetryPolicy::default())
        .wrap_provider(move |inner| {
            Arc::new(Timed {
                inner,
                waited_ns: timed.0,
                marks: timed.1,
            })
        })
        .tools(registry)
        .config(|c| c.max_turns = turns as u32 + 1)
        .ui(Arc::new(move |event: &Event| {
            // What `--json` does with each event.
            let line = serde_json::to_string(event).unwrap_or_default();
            std::hint::black_box(line);
        }))
        .start();
    let started = Instant::now();
    let outcome = session
        .agent
        .run("do the long task", &CancellationToken::new())
        .await;
    // `run` returns once every event has been stored and shown.
    let whole = started
        .elapsed()
        .saturating_sub(Duration::from_nanos(waited.load(Ordering::Relaxed)));
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.turns as usize, turns + 1);
    let marks = marks.lock().expect("marks");
    let per_turn = marks
        .windows(2)
        .take(turns)
        .map(|pair| {
            let wall = pair[1].0 - pair[0].0;
            let waited = Duration::from_nanos(pair[1].1 - pair[0].1);
            wall.saturating_sub(waited)
        })
        .collect();
    Measured {
        per_turn,
        end_to_end: whole / (turns as u32 + 1),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("agent loop overhead per turn (model and tool time excluded), best of {ROUNDS} runs");
    let mut worst_median = Duration::ZERO;
    for turns in TURNS {
        let mut best: Option<Measured> = None;
        for _ in 0..ROUNDS {
            let mut measured = runtime.block_on(run(turns));
            measured.per_turn.sort();
            let median = percentile(&measured.per_turn, 0.5);
            if best
                .as_ref()
                .is_none_or(|b| median < percentile(&b.per_turn, 0.5))
            {
                best = Some(measured);
            }
        }
        let Measured {
            per_turn,
            end_to_end,
        } = best.expect("at least one round");
        let mean = per_turn.iter().sum::<Duration>() / per_turn.len() as u32;
        let median = percentile(&per_turn, 0.5);
        worst_median = worst_median.max(median);
        println!(
            "  {turns:>3} turns: median {}  mean {}  p90 {}  max {}  (whole run, until stored and shown: {} per turn)",
            ms(median),
            ms(mean),
            ms(percentile(&per_turn, 0.9)),
            ms(*per_turn.last().expect("turns")),
            ms(end_to_end),
        );
    }
    let verdict = if worst_median < TARGET {
        "under"
    } else {
        "OVER"
    };
    println!(
        "target: under {} per turn; median {verdict} target",
        ms(TARGET)
    );
}
