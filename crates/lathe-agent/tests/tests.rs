//! The integration tests of lathe-agent: the providers against the scripted model server, the
//! tool-call parser (families, fuzzing, end to end) and the executor and runner loops.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (lathe-testkit's
//! `layout` test checks that none is left out); run one with
//! `cargo test -p lathe-agent --test integration agent_executor::`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the blocking entry points from synchronous code"
)]

mod common;

mod agent_checkpoints;
mod agent_context;
mod agent_executor;
mod agent_images;
mod agent_patch;
mod agent_plan;
mod agent_repeats;
mod agent_runner;
mod agent_subagents;
mod agent_turns;
mod parser_families;
mod parser_families_wire;
mod parser_fuzz;
mod parser_model_families;
mod parser_patch;
mod pending;
mod provider_errors;
mod provider_ollama;
mod provider_openai;
mod provider_streaming;
mod text_calls_e2e;
mod window;
