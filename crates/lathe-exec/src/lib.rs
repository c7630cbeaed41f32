//! Process supervision for Lathe.
//!
//! A [`Supervisor`] owns one session's commands. Each command runs as `bash -c COMMAND` (or
//! `sh -c` where bash is missing) in its own session and process group, with stdin from
//! `/dev/null` and an environment prepared for a non-interactive agent (see [`mod@env`]). Its
//! stdout and stderr share one pipe, so they arrive interleaved exactly as written; a reader
//! thread copies the raw bytes into an artifact file (`cmd-<id>` in the session's state
//! directory, capped) and keeps only a bounded head and tail in memory, so memory stays bounded
//! whatever the command prints. The result ([`CommandReport`]) carries the status (exit code,
//! signal or kill), wall time, bytes, lines and a preview: head and tail within a budget, the
//! exact omitted range between them, terminal escapes removed.
//!
//! Commands can run in the background, be moved there by a soft timeout, be killed by a hard
//! one, by cancellation, by [`Supervisor::kill`] or at the end of the session; killing takes
//! the whole tree, including descendants that escaped with `setsid`, `nohup` or a double fork
//! (see the `tree` module for how). Output is read back by byte range or regex, running or
//! finished, with line numbers ([`Supervisor::read_output`], [`Supervisor::search_output`]).
//!
//! A caller's own helpers that read input on stdin and answer on stdout (Lathe's hooks) run with
//! [`Supervisor::run_piped`] instead: the same session, process group, mark and guard, so
//! nothing they start outlives them, but their stdin, stdout and stderr are the caller's to feed
//! and read, apart, and they leave no artifact.
//!
//! The crate returns data and says nothing to a model: reports, pages, search results and
//! errors carry fields (ids, offsets, omitted ranges, artifact sizes, limits), and the caller
//! words them, naming its own tools. `Display` on statuses and errors says what happened in
//! neutral words (`exit code 3`, `killed on request`).
//!
//! ```
//! use lathe_exec::{CommandSpec, CommandStatus, Supervisor};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> Result<(), lathe_exec::ExecError> {
//! let state = tempfile::tempdir().expect("temp dir");
//! let supervisor = Supervisor::builder(state.path()).build()?;
//! let spec = CommandSpec::new("echo hello; echo oops >&2; exit 3", "/");
//! let report = supervisor.run(spec, &CancellationToken::new()).await?;
//! assert_eq!(report.status, CommandStatus::Exited { code: 3 });
//! assert_eq!(report.status.to_string(), "exit code 3");
//! assert_eq!(report.preview.head, "hello\noops\n");
//! let page = supervisor.read_output(report.id, 0, None).await?;
//! assert_eq!(page.bytes, b"hello\noops\n");
//! supervisor.shutdown().await;
//! # Ok(())
//! # }
//! ```
#![deny(missing_docs)]

mod builder;
mod capture;
mod command;
mod config;
pub mod env;
mod error;
mod guard;
mod harden;
mod lineage;
mod output;
mod piped;
mod preview;
mod procfs;
mod reader;
mod reading;
mod report;
pub mod sandbox;
mod search;
mod spec;
mod supervisor;
mod tree;

pub use builder::SupervisorBuilder;
pub use command::{CommandId, CommandStatus, DRAIN_BOUND, KillReason, OutputDelta, OutputObserver};
pub use config::{
    DEFAULT_ARTIFACT_CAP, DEFAULT_KILL_GRACE, DEFAULT_MAX_RUNNING, ParseBudgetError, PreviewBudget,
};
pub use error::ExecError;
pub use harden::{harden_process, is_dumpable};
pub use output::{
    DEFAULT_READ_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_READ_LIMIT, OutputPage, SearchMatch, SearchResult,
};
pub use piped::{DEFAULT_PIPED_CAP, PipedOutput, PipedSpec};
pub use preview::{Omission, Preview, clean};
pub use report::{
    ArtifactInfo, CommandReport, CommandSummary, Detached, KillOutcome, format_duration,
    format_size,
};
pub use search::compile_pattern;
pub use spec::{CommandSpec, Launch};
pub use supervisor::Supervisor;
