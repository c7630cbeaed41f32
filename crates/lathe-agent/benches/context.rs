//! How Lathe keeps a long session inside small windows.
//!
//! Run with `bench/context.sh` (or `cargo bench -p lathe-agent --bench context`). A scripted
//! model server on loopback plays a 40-turn task: each turn a short thought and one `read_file`
//! of a real file of the workspace (600 to 9,000 characters, in a cycle), then a closing answer;
//! it answers every summary request with a fixed summary. The executor and the real built-in
//! tools run as in `lathe exec`. Reported, per window (4k, 8k, 32k) and tool profile:
//!
//! - the fixed part of every request (system prompt and tool definitions), estimated in tokens
//!   as Lathe estimates them (3.5 bytes a token);
//! - the largest request sent: its estimated prompt tokens plus the reply cap it carried, which
//!   must fit the window;
//! - the number of compactions;
//! - prefix reuse: for each request after the first that follows another turn's request with no
//!   compaction between, the bytes it shares from its start with the previous request (tools,
//!   then messages, as sent), as a share of the request; averaged. The share of the previous
//!   request that is reused is shown too (what a server's prompt cache keeps).
//!
//! The "full" profile is every built-in tool, as `lathe exec` offers them today; "core" is
//! read_file, write_file, edit_file, shell, grep and glob, to see compaction at 4k, where the
//! full profile's fixed part alone does not leave room for a conversation.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::approval::{ApprovalMode, Gate, NonInteractive};
use lathe_agent::events::{Event, RunStatus};
use lathe_agent::executor::{Executor, ExecutorConfig};
use lathe_agent::provider::{ProviderConfig, ProviderKind, connect};
use lathe_agent::runner::ToolRunner;
use lathe_agent::sink::EventSink;
use lathe_store::{NewSession, Store};
use lathe_testkit::{Script, ScriptedServer, ollama};
use lathe_tools::{Registry, Session, ToolConfig, Workspace};

const MODEL: &str = "bench-model";
const TURNS: usize = 40;
const WINDOWS: [u64; 3] = [4_096, 8_192, 32_768];
const SIZES: [usize; 4] = [1_500, 4_000, 9_000, 600];
const SUMMARY_MARK: &str = "You summarise a coding agent";
const CORE: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "shell",
    "grep",
    "glob",
];

fn tokens(text: &str) -> u64 {
    (text.len() as u64 * 2).div_ceil(7)
}

/// The estimated prompt tokens of a recorded request (4 a message for its framing) and its
/// reply cap.
fn request_tokens(body: &Value) -> (u64, u64) {
    let text = |v: &Value| v.as_str().map_or(0, tokens);
    let mut total: u64 = body["tools"]
        .as_array()
        .map_or(0, |t| t.iter().map(|t| tokens(&t.to_string())).sum());
    for message in body["messages"].as_array().into_iter().flatten() {
        total += 4 + text(&message["content"]) + text(&message["thinking"]);
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            total += 3
                + text(&call["function"]["name"])
                + tokens(&call["function"]["arguments"].to_string());
        }
    }
    (total, body["options"]["num_predict"].as_u64().unwrap_or(0))
}

/// The bytes of a request a server's prompt cache sees: tools, then messages.
fn prompt_bytes(body: &Value) -> Vec<u8> {
    let mut out = body["tools"].to_string().into_bytes();
    out.extend(body["messages"].to_string().into_bytes());
    out
}

struct Measured {
    fixed: u64,
    largest: (u64, u64),
    compactions: usize,
    requests: usize,
    reuse: f64,
    reuse_of_previous: f64,
    status: String,
}

async fn session(window: u64, core: bool) -> Measured {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    std::fs::create_dir_all(root.join("src")).expect("ws");
    let mut script = Script::new();
    for _ in 0..TURNS {
        script = script.chat_when(
            SUMMARY_MARK,
            ollama::turn(MODEL)
                .text(
                    "Task: read every source file and report what each defines.\nDone: read \
                     the files so far; each defines one module of the parser.\nFiles changed: \
                     none.\nOpen: the remaining files, then the report.\nPlan: read the rest \
                     in order.",
                )
                .done(),
        );
    }
    for i in 0..TURNS {
        let size = SIZES[i % SIZES.len()];
        let line = format!("fn item_{i}() {{ /* part of module {i} */ }}\n");
        let text = line.repeat(size / line.len() + 1);
        std::fs::write(root.join(format!("src/f{i}.rs")), &text[..size]).expect("file");
        script = script.chat(
            ollama::turn(MODEL)
                .text(&format!("Next, src/f{i}.rs: it should hold module {i}."))
                .tool_call("read_file", json!({"path": format!("src/f{i}.rs")}))
                .done(),
        );
    }
    script = script.chat(
        ollama::turn(MODEL)
            .text("Every file defines one module.")
            .done(),
    );
    let server = ScriptedServer::start(script.ollama_models(&[MODEL], &["completion", "tools"]))
        .expect("server");
    let provider =
        connect(ProviderKind::Ollama, ProviderConfig::new(server.url())).expect("provider");
    let tool_session = Session::new(
        Workspace::new(&root).expect("ws"),
        ToolConfig::default(),
        dir.path().join("state"),
    )
    .expect("session");
    let mut registry = Registry::builtin();
    if core {
        registry.retain(|d| CORE.contains(&d.name.as_str()));
    }
    let runner = Arc::new(ToolRunner::new(
        Arc::new(registry),
        tool_session,
        Arc::new(Gate::new(ApprovalMode::Auto, &root)),
        Arc::new(NonInteractive),
    ));
    let store = Store::open(dir.path().join("data/sessions.sqlite3")).expect("store");
    let id = store
        .create_session(NewSession {
            workspace: root.clone(),
            provider: "ollama".into(),
            model: MODEL.into(),
            approval: "auto".into(),
            ..NewSession::default()
        })
        .expect("session row");
    let sink = EventSink::new(store, id, Arc::new(|_: &Event| {}));
    let mut config = ExecutorConfig::new(MODEL);
    config.max_turns = TURNS as u32 + 5;
    config.context_window = Some(window);
    config.options.num_ctx = window as u32;
    let mut executor = Executor::new(provider, runner, sink, config);
    // The fixed part as the first request would carry it (also when none can be sent).
    let registry = executor.runner().registry();
    let offered: Vec<Value> = registry
        .offered(executor.runner().session())
        .map(lathe_tools::ToolDefinition::to_function)
        .collect();
    let fixed = request_tokens(&json!({
        "tools": offered,
        "messages": [{"role": "system", "content": executor.history()[0].content()}],
    }))
    .0;
    let outcome = executor
        .run(
            "read every file under src/ and say what each defines",
            &CancellationToken::new(),
        )
        .await;
    let status = match outcome.status {
        RunStatus::Finished => "finished".to_owned(),
        _ => format!(
            "{:?}: {}",
            outcome.status,
            outcome.message.unwrap_or_default()
        ),
    };
    let bodies = server.chat_bodies();
    let largest = bodies
        .iter()
        .map(request_tokens)
        .max_by_key(|(p, c)| p + c)
        .unwrap_or_default();
    let is_summary = |b: &Value| b.to_string().contains(SUMMARY_MARK);
    let compactions = bodies.iter().filter(|b| is_summary(b)).count();
    let mut shares = Vec::new();
    let mut shares_of_previous = Vec::new();
    for pair in bodies.windows(2) {
        if is_summary(&pair[0]) || is_summary(&pair[1]) {
            continue;
        }
        let (before, now) = (prompt_bytes(&pair[0]), prompt_bytes(&pair[1]));
        let common = before.iter().zip(&now).take_while(|(a, b)| a == b).count();
        shares.push(common as f64 / now.len() as f64);
        shares_of_previous.push(common as f64 / before.len() as f64);
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Measured {
        fixed,
        largest,
        compactions,
        requests: bodies.len(),
        reuse: mean(&shares),
        reuse_of_previous: mean(&shares_of_previous),
        status,
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("a scripted {TURNS}-turn session (read_file of 600-9,000 characters each turn)");
    println!(
        "{:<6} {:>7} {:>12} {:>22} {:>12} {:>9} {:>16} {:>9}  run",
        "tools",
        "window",
        "fixed part",
        "largest request",
        "compactions",
        "requests",
        "prefix reuse",
        "of prev"
    );
    for core in [false, true] {
        for window in WINDOWS {
            let m = runtime.block_on(session(window, core));
            let (prompt, cap) = m.largest;
            let fits = if prompt + cap <= window {
                "fits"
            } else {
                "DOES NOT FIT"
            };
            println!(
                "{:<6} {:>7} {:>12} {:>22} {:>12} {:>9} {:>15.1}% {:>8.1}%  {}",
                if core { "core" } else { "full" },
                window,
                format!("{} tok", m.fixed),
                format!("{prompt}+{cap} tok {fits}"),
                m.compactions,
                m.requests,
                m.reuse * 100.0,
                m.reuse_of_previous * 100.0,
                m.status,
            );
        }
    }
}
