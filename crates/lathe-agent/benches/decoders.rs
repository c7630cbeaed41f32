//! Throughput of the wire decoders and the tool-call parser, in MB/s (10^6 bytes per second).
//!
//! Run with `cargo bench -p lathe-agent --bench decoders` (release profile). Each figure is the
//! best of several rounds, so a busy machine mostly shows up as noise in the slower rounds.

use lathe_agent::parser::{Scanner, Scope, ToolNames};
use lathe_agent::provider::ndjson::NdjsonDecoder;
use lathe_agent::provider::sse::SseDecoder;
use lathe_agent::provider::{Chunk, ProviderKind, decode_body};
use serde_json::json;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Bytes per network read, about one TCP segment.
const NETWORK_CHUNK: usize = 1460;
/// Bytes per streamed text delta, about one token.
const TOKEN: usize = 4;
const ROUNDS: usize = 7;

fn measure(name: &str, bytes: usize, mut f: impl FnMut() -> usize) {
    black_box(f());
    let mut best = Duration::MAX;
    let mut check = 0;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        check = black_box(f());
        best = best.min(start.elapsed());
    }
    let mbps = bytes as f64 / best.as_secs_f64() / 1e6;
    println!(
        "{name:<58} {:>9.2} MB  {:>9.1} MB/s  ({check} items)",
        bytes as f64 / 1e6,
        mbps
    );
}

/// Pieces of at most `size` bytes, cut at character boundaries.
fn pieces(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + size).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

fn tokens(count: usize) -> Vec<String> {
    let words = [
        "The ", "file ", "src/", "main", ".rs ", "has ", "a ", "bug ", "in ", "parse", "_args",
        "(); ", "é", "\n",
    ];
    (0..count)
        .map(|i| words[i % words.len()].to_string())
        .collect()
}

fn ollama_body(count: usize) -> String {
    let mut body = String::new();
    for t in tokens(count) {
        let line = json!({"model": "qwen3:8b", "created_at": "2025-01-01T00:00:00.000000Z",
            "message": {"role": "assistant", "content": t}, "done": false});
        body.push_str(&line.to_string());
        body.push('\n');
    }
    body.push_str(
        &json!({"model": "qwen3:8b", "message": {"role": "assistant", "content": ""}, "done": true,
        "done_reason": "stop", "eval_count": count})
        .to_string(),
    );
    body.push('\n');
    body
}

fn openai_body(count: usize) -> String {
    let mut body = String::new();
    for t in tokens(count) {
        let chunk = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n");
    body
}

fn prose(bytes: usize) -> String {
    let sentence = "The parser reads the model's answer as it streams, and most of it is plain prose like this. ";
    sentence.repeat(bytes / sentence.len() + 1)
}

fn mixed(bytes: usize) -> String {
    let block = "I looked at the code. The function below parses arguments:\n\n```rust\nfn parse(args: &[String]) -> Result<Config, Error> {\n    let mut config = Config::default();\n    for arg in args { if arg == \"-v\" { config.verbose = true; } }\n    Ok(config)\n}\n```\n\nA config file looks like {\"verbose\": true, \"name\": \"demo\"}. Next I will read the tests.\n\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"tests/cli.rs\"}}\n</tool_call>\n";
    block.repeat(bytes / block.len() + 1)
}

fn calls(count: usize) -> String {
    (0..count)
        .map(|i| format!("<tool_call>{{\"name\": \"grep\", \"arguments\": {{\"pattern\": \"fn item_{i}\", \"path\": \"src\"}}}}</tool_call>\n"))
        .collect()
}

fn big_write(bytes: usize) -> String {
    let line = "    let value = compute(input, &mut state); // keep going {}\n";
    let content = line.repeat(bytes / line.len() + 1);
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": "write_file", "arguments": {"path": "big.rs", "content": content}})
    )
}

fn scan(names: &Arc<ToolNames>, parts: &[&str]) -> usize {
    let mut scanner = Scanner::new(Arc::clone(names), Scope::Text);
    let mut n = 0;
    for p in parts {
        n += scanner.push(p).len();
    }
    n + scanner.finish().len()
}

fn main() {
    println!("lathe-agent decoders and parser (best of {ROUNDS} rounds)\n");

    let ollama = ollama_body(60_000);
    let ollama_parts: Vec<&[u8]> = ollama.as_bytes().chunks(NETWORK_CHUNK).collect();
    measure(
        "ndjson: split lines (ollama stream, 1460-byte reads)",
        ollama.len(),
        || {
            let mut d = NdjsonDecoder::new();
            let mut n = 0;
            for p in &ollama_parts {
                d.feed(p, |_| n += 1);
            }
            d.finish(|_| n += 1);
            n
        },
    );
    measure(
        "ollama: lines -> chunks (split + JSON)",
        ollama.len(),
        || {
            decode_body(ProviderKind::Ollama, &ollama_parts)
                .iter()
                .filter(|c| matches!(c, Ok(Chunk::Text(_))))
                .count()
        },
    );

    let openai = openai_body(60_000);
    let openai_parts: Vec<&[u8]> = openai.as_bytes().chunks(NETWORK_CHUNK).collect();
    measure(
        "sse: events (openai stream, 1460-byte reads)",
        openai.len(),
        || {
            let mut d = SseDecoder::new();
            let mut n = 0;
            for p in &openai_parts {
                d.feed(p, |_| n += 1);
            }
            d.finish(|_| n += 1);
            n
        },
    );
    let crlf = openai.replace('\n', "\r\n");
    let crlf_parts: Vec<&[u8]> = crlf.as_bytes().chunks(NETWORK_CHUNK).collect();
    measure("sse: events, \\r\\n line ends", crlf.len(), || {
        let mut d = SseDecoder::new();
        let mut n = 0;
        for p in &crlf_parts {
            d.feed(p, |_| n += 1);
        }
        d.finish(|_| n += 1);
        n
    });
    measure(
        "openai: events -> chunks (SSE + JSON)",
        openai.len(),
        || {
            decode_body(ProviderKind::OpenAi, &openai_parts)
                .iter()
                .filter(|c| matches!(c, Ok(Chunk::Text(_))))
                .count()
        },
    );

    println!();
    let names = Arc::new(ToolNames::new([
        "read_file",
        "write_file",
        "edit_file",
        "grep",
        "glob",
        "shell",
        "list_files",
    ]));
    let inputs = [
        ("prose", prose(4_000_000)),
        (
            "mixed prose, code fences, JSON sample, calls",
            mixed(4_000_000),
        ),
        ("tool calls only", calls(40_000)),
        ("one 1 MB write_file call", big_write(1_000_000)),
    ];
    for (label, text) in &inputs {
        measure(&format!("parser: {label}, whole"), text.len(), || {
            scan(&names, &[text.as_str()])
        });
        let streamed = pieces(text, TOKEN);
        measure(
            &format!("parser: {label}, {TOKEN}-byte deltas"),
            text.len(),
            || scan(&names, &streamed),
        );
    }
}
