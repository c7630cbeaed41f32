//! `lathe`: the binary. Thin: parses flags, loads configuration, and hands off to the crates.

mod chat;
mod cli;
mod exec_cmd;
mod mcp_form;
mod memory_cmd;
mod policy_cmd;
mod render;
mod sessions_cmd;
mod tool_cmd;
mod undo_cmd;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

pub use lathe_config::{EXIT_FAILURE, EXIT_USAGE};

/// The hidden subcommand that converts one document in a child process with limits (see
/// `lathe_documents::worker`): document parsers can crash or hang on hostile files.
const DOCUMENT_WORKER: &str = "__document-worker";

fn main() -> ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|arg| arg == DOCUMENT_WORKER)
    {
        return lathe_documents::worker::serve();
    }
    match std::env::current_exe() {
        Ok(me) => lathe_documents::set_default_worker(me, vec![DOCUMENT_WORKER.into()]),
        Err(err) => tracing::warn!("documents are converted in process: {err}"),
    }
    let cli = Cli::parse();
    init_logging(cli.verbose);
    // Before any thread or command: /proc/<pid>/environ of lathe holds the keys commands lack.
    if let Err(error) = lathe_exec::harden_process() {
        tracing::warn!("cannot make lathe unreadable to its commands (PR_SET_DUMPABLE): {error}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("lathe: cannot start the async runtime: {err}");
            return ExitCode::from(EXIT_FAILURE);
        }
    };
    let result = runtime.block_on(run(cli));
    // Background work (killed commands' reapers) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    if let Some(code) = lathe_config::signals::exit_code() {
        return ExitCode::from(code);
    }
    match result {
        Ok(code) => code,
        Err(err) => {
            // The chain can quote a model server's reply.
            eprintln!("lathe: {}", render::sanitize(&format!("{err:#}")));
            ExitCode::from(EXIT_USAGE)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let common = cli.common;
    match cli.command {
        Command::Tools(args) => tool_cmd::list(&common, args),
        Command::Tool(args) => tool_cmd::run(&common, args).await,
        Command::Exec(args) => exec_cmd::run(&common, args).await,
        Command::Chat(args) => chat::run(&common, args).await,
        Command::Sessions(args) => sessions_cmd::run(&common, args),
        Command::Undo(args) => undo_cmd::undo(&common, args),
        Command::Redo(args) => undo_cmd::redo(&common, args),
        Command::Diff(args) => undo_cmd::diff(&common, args),
        Command::Mcp(args) => lathe_mcp::server::run(&common, args).await,
        Command::Policy(args) => policy_cmd::run(&common, args),
        Command::Trust(args) => lathe_config::trust::run(&common, args),
        Command::Memory(args) => memory_cmd::run(&common, args),
    }
}

/// Logs go to stderr (never stdout: stdout carries results and, for `lathe mcp`, the protocol).
fn init_logging(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("LATHE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
