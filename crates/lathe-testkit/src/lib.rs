//! Test support for Lathe: a scripted model server.
//!
//! [`ScriptedServer`] is a real HTTP/1.1 server on `127.0.0.1` that replays scripted replies
//! byte for byte — Ollama NDJSON and OpenAI SSE streams cut at any byte (inside a UTF-8
//! character too), mid-stream errors, dropped connections, resets, error statuses — and records
//! every request, so a test can assert exactly what a client sent.
//!
//! ```
//! use lathe_testkit::{ScriptedServer, Script, ollama};
//! use serde_json::json;
//!
//! let server = ScriptedServer::start(
//!     Script::new()
//!         .ollama_models(&["qwen3:8b"], &["completion", "tools"])
//!         .chat(ollama::turn("qwen3:8b").tool_call("read_file", json!({"path": "a.rs"})).done())
//!         .chat(ollama::turn("qwen3:8b").text("Héllo").done().rechunk(3)),
//! )
//! .unwrap();
//! // point a client at server.url(), then inspect server.chat_bodies()
//! # assert!(server.chat_bodies().is_empty());
//! ```
//!
//! The same scripts run out of process: `scripted-model-server SCRIPT.json` prints its port
//! and serves until stdin closes; `GET /__scripted/requests` returns what it recorded.
//!
//! Each crate's integration tests are one binary (`tests/tests.rs`); [`alone!`] runs a test that
//! is about the whole process (its memory, its orphans, a `prctl` on itself) alone in a child
//! process of that binary.
#![deny(missing_docs)]

pub mod alone;
mod http;
pub mod ollama;
pub mod openai;
mod scratch;
pub mod script;
mod server;

pub use http::RecordedRequest;
pub use scratch::{outside_scratch_dir, processes_with};
pub use script::{Framing, Part, PathMatch, Repeat, Reply, Response, Route, Script};
pub use server::{REQUESTS_PATH, ScriptedServer};
