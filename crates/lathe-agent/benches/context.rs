//! How Lathe keeps a long session inside small windows.
//!
//! Run with `bench/context.sh` (or `cargo bench -p lathe-agent --bench context`). A scripted
//! model server on loopback plays a 40-turn task: each turn a short thought and one `read_file`
//! of a real file of the workspace (600 to 9,000 characters, in a cycle), then a closing answer;
//! it answers every summary request with a fixed summary. The executor and the real built-in
//! tools run as in `lathe exec`. Reported, per window (4k, 8k, 32k) and prompt profile:
//!
//! - the fixed part of every request (system prompt and tool definitions), estimated in tokens
//!   as Lathe estimates them (3.5 bytes a token);
//! - the largest request sent: its estimated prompt tokens plus the reply cap it carried, which
//!   must fit the window;
//! - the number of compactions;
//! - prefix reuse: for each request after the first that follows another turn's request with no
//!   compaction between, the bytes it shares from its start with the previous request (tools,
//!   then messages, as sent), as a share of the request; averaged. The share of the previous
//!   request that is reused is shown too (what a server's prompt cache keeps), and the ceiling:
//!   the share of each request that is not the messages added since the previous one (no
//!   history could reuse those), which bounds the first figure.
//!
//! Each run's agent is put together as `lathe exec` puts it: [`Agent::builder`] with the
//! built-in and web tools and sub-agents, its prompt profile chosen by the builder from the
//! window ([`lathe_runtime::Profile::for_window`]: compact at 16k and less). One more run forces
//! the full profile at 8k, to compare.
//!
//! With `LATHE_BENCH_TURNS=1`, each request's reuse is printed with what broke the prefix: new
//! content only (the previous request is a prefix of this one, message by message), a
//! shortening pass (an earlier message was shortened), or a change of the tools.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::events::{Event, RunStatus};
use lathe_agent::provider::{ChatOptions, RetryPolicy};
use lathe_agent::subagent::SubAgentConfig;
use lathe_runtime::Profile;
use lathe_testkit::{Script, ollama};

/// The agent test harness (the benches use a part of it).
#[allow(dead_code)]
#[path = "../tests/common/mod.rs"]
mod common;

const MODEL: &str = "bench-model";
const TURNS: usize = 40;
/// The runs: each window with the profile the builder picks, then the full profile forced.
const RUNS: [(u64, Option<Profile>); 4] = [
    (4_096, None),
    (8_192, None),
    (32_768, None),
    (8_192, Some(Profile::Full)),
];
const SIZES: [usize; 4] = [1_500, 4_000, 9_000, 600];
const SUMMARY_MARK: &str = "You summarise a coding agent";
const SHORTENED: &str = "[shortened to save context:";

/// The estimated prompt tokens of a recorded request and its reply cap (0 for none).
fn request_tokens(body: &Value) -> (u64, u64) {
    (
        common::prompt_tokens(body),
        common::reply_cap(body).unwrap_or(0),
    )
}

/// The bytes of a request a server's prompt cache sees: tools, then messages.
fn prompt_bytes(body: &Value) -> Vec<u8> {
    let mut out = body["tools"].to_string().into_bytes();
    out.extend(body["messages"].to_string().into_bytes());
    out
}

struct Measured {
    profile: &'static str,
    fixed: u64,
    largest: (u64, u64),
    compactions: usize,
    requests: usize,
    reuse: f64,
    reuse_of_previous: f64,
    ceiling: f64,
    status: String,
}

async fn session(window: u64, forced: Option<Profile>, per_turn: bool) -> Measured {
    // What `lathe exec` offers: the built-in tools, the web tools, sub-agents.
    let mut registry = lathe_tools::builtin();
    lathe_web::register(&mut registry);
    let mut harness = common::Harness::new()
        .model(MODEL)
        .retry(RetryPolicy::default())
        .tools(registry)
        .sub_agents(SubAgentConfig::default())
        .config(|c| {
            c.max_turns = TURNS as u32 + 5;
            c.options = ChatOptions {
                num_ctx: window as u32,
                ..ChatOptions::default()
            };
        })
        .ui(Arc::new(|_: &Event| {}));
    if let Some(profile) = forced {
        harness = harness.profile(profile);
    }
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
        harness = harness.file(&format!("src/f{i}.rs"), &text[..size]);
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
    let mut run = harness.script(script).start();
    let agent = &mut run.agent;
    let executor = agent.executor();
    let profile = executor.runner().registry().profile().as_str();
    if per_turn {
        println!("{profile} profile, {window}-token window:");
    }
    // The fixed part as the first request would carry it (also when none can be sent).
    let registry = executor.runner().registry();
    let offered: Vec<Value> = registry
        .offered(executor.runner().session())
        .map(lathe_runtime::ToolDefinition::to_function)
        .collect();
    let fixed = request_tokens(&json!({
        "tools": offered,
        "messages": [{"role": "system", "content": executor.history()[0].content()}],
    }))
    .0;
    let outcome = agent
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
    let bodies = run.server.chat_bodies();
    let largest = bodies
        .iter()
        .map(request_tokens)
        .max_by_key(|(p, c)| p + c)
        .unwrap_or_default();
    let is_summary = |b: &Value| b.to_string().contains(SUMMARY_MARK);
    let compactions = bodies.iter().filter(|b| is_summary(b)).count();
    let mut shares = Vec::new();
    let mut shares_of_previous = Vec::new();
    let mut ceilings = Vec::new();
    for pair in bodies.windows(2) {
        if is_summary(&pair[0]) || is_summary(&pair[1]) {
            continue;
        }
        let (before, now) = (prompt_bytes(&pair[0]), prompt_bytes(&pair[1]));
        let common = before.iter().zip(&now).take_while(|(a, b)| a == b).count();
        shares.push(common as f64 / now.len() as f64);
        shares_of_previous.push(common as f64 / before.len() as f64);
        ceilings.push(ceiling(&pair[0], &pair[1]));
        if per_turn {
            println!(
                "  request {:>2}: {:>5.1}% ({:>5.1}% of the previous), {}",
                shares.len() + 1,
                100.0 * common as f64 / now.len() as f64,
                100.0 * common as f64 / before.len() as f64,
                what_changed(&pair[0], &pair[1])
            );
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    Measured {
        profile,
        fixed,
        largest,
        compactions,
        requests: bodies.len(),
        reuse: mean(&shares),
        reuse_of_previous: mean(&shares_of_previous),
        ceiling: mean(&ceilings),
        status,
    }
}

/// The most of `now` that any history could share with `before`: all of it but the messages
/// added since (the new turn and its results), as a share of `now`.
fn ceiling(before: &Value, now: &Value) -> f64 {
    let count = |b: &Value| b["messages"].as_array().map_or(0, Vec::len);
    let added: usize = now["messages"].as_array().map_or(0, |m| {
        m[count(before).min(m.len())..]
            .iter()
            .map(|m| m.to_string().len() + 1)
            .sum()
    });
    let len = prompt_bytes(now).len();
    len.saturating_sub(added) as f64 / len as f64
}

/// What broke the prefix between two requests: new content only, a shortening pass, or a
/// change of the tools.
fn what_changed(before: &Value, now: &Value) -> String {
    if before["tools"] != now["tools"] {
        return "the tools changed".to_owned();
    }
    let empty = Vec::new();
    let old = before["messages"].as_array().unwrap_or(&empty);
    let new = now["messages"].as_array().unwrap_or(&empty);
    let Some(at) = old.iter().zip(new).position(|(a, b)| a != b) else {
        return format!("new content only (+{} messages)", new.len() - old.len());
    };
    let shortened = new[at..old.len().min(new.len())]
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with(SHORTENED))
        })
        .count();
    format!(
        "changed from message {at} of {}: {}",
        old.len(),
        if shortened > 0 {
            format!("a shortening pass ({shortened} results shortened)")
        } else {
            "an earlier message was rewritten".to_owned()
        }
    )
}

fn main() {
    let per_turn = std::env::var_os("LATHE_BENCH_TURNS").is_some_and(|v| v != "0");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    println!("a scripted {TURNS}-turn session (read_file of 600-9,000 characters each turn)");
    println!(
        "{:<14} {:>7} {:>12} {:>22} {:>12} {:>9} {:>16} {:>9} {:>9}  run",
        "profile",
        "window",
        "fixed part",
        "largest request",
        "compactions",
        "requests",
        "prefix reuse",
        "of prev",
        "ceiling"
    );
    for (window, forced) in RUNS {
        let m = runtime.block_on(session(window, forced, per_turn));
        let (prompt, cap) = m.largest;
        let fits = if prompt + cap <= window {
            "fits"
        } else {
            "DOES NOT FIT"
        };
        let profile = match forced {
            Some(_) => format!("{} (forced)", m.profile),
            None => m.profile.to_owned(),
        };
        println!(
            "{:<14} {:>7} {:>12} {:>22} {:>12} {:>9} {:>15.1}% {:>8.1}% {:>8.1}%  {}",
            profile,
            window,
            format!("{} tok", m.fixed),
            format!("{prompt}+{cap} tok {fits}"),
            m.compactions,
            m.requests,
            m.reuse * 100.0,
            m.reuse_of_previous * 100.0,
            m.ceiling * 100.0,
            m.status,
        );
    }
}
