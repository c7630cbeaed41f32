//! The integration tests of the lathe binary: the real `lathe` run as users and MCP clients run
//! it (exec, chat in a pseudo-terminal, tool, policy, sandbox, trust and mcp), against the
//! scripted model server.
//!
//! One binary for the crate (Cargo.toml: `autotests = false`), since each test binary links the
//! whole dependency graph. Each file in `tests/` is a module declared here (lathe-testkit's
//! `layout` test checks that none is left out); run one with
//! `cargo test -p lathe --test integration chat_pty::`.
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the blocking entry points from synchronous code"
)]

mod agent_harness;
mod mcp_support;
mod pty;

mod chat_checkpoints;
mod chat_compact;
mod chat_input;
mod chat_pty;
mod chat_sub_agents;
mod documents;
mod exec_checkpoints;
mod exec_context;
mod exec_errors;
mod exec_images;
mod exec_interrupt;
mod exec_limits;
mod exec_parallel;
mod exec_plan;
mod exec_policy;
mod exec_providers;
mod exec_report;
mod exec_sandbox;
mod exec_spinner_pty;
mod exec_stream;
mod exec_subagents;
mod exec_task;
mod exec_terminal;
mod frontends;
mod hooks;
mod mcp_checkpoints;
mod mcp_client;
mod mcp_conformance;
mod mcp_http;
mod mcp_images;
mod mcp_protocol;
mod mcp_python;
mod mcp_sessions;
mod mcp_sub_agents;
mod memory;
mod pending;
mod policy_cmd;
mod project_commands;
mod readme_transcript;
mod sandbox_cli;
mod tool_cli;
mod tools_list;
mod trust;
mod undo_cli;
mod web_cli;
mod window_meter;
mod window_settings;
