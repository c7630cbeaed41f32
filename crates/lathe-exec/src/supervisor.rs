//! The per-session supervisor: starts commands, waits for them, kills them, and reads their
//! output back.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::builder::SupervisorBuilder;
use crate::capture::Capture;
use crate::command::{self, CommandEntry, CommandId, KillReason, lock};
use crate::config::Config;
use crate::error::ExecError;
use crate::guard::Guard;
use crate::lineage::{self, Filter};
use crate::preview::Preview;
use crate::procfs::TagMatch;
use crate::reader::{self, Artifact, ReaderSink};
use crate::report::{ArtifactInfo, CommandReport, CommandSummary, Detached, KillOutcome};
use crate::spec::{CommandSpec, Launch};
use crate::tree::{self, TreeTarget};

/// A session's commands. Dropping it (or [`shutdown`](Self::shutdown)) kills every process
/// its commands started.
pub struct Supervisor {
    pub(crate) config: Config,
    pub(crate) shell: PathBuf,
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Every command's processes inherit `tag_name=<id>`: how they are found after escaping.
    pub(crate) tag_name: String,
    pub(crate) not_before: u64,
    pub(crate) commands: Mutex<BTreeMap<CommandId, Arc<CommandEntry>>>,
    pub(crate) next_id: AtomicU64,
    pub(crate) shut_down: AtomicBool,
    /// Whether [`run_piped`](Self::run_piped) started anything: those programs are not in
    /// `commands`, so the end of the session must look for their processes even with no
    /// command there.
    pub(crate) piped_started: AtomicBool,
    /// The guard that kills the commands if this process dies (see the `guard` module):
    /// `None` until the first command, then the guard, or `Some(None)` if it could not start.
    pub(crate) guard: Mutex<Option<Option<Guard>>>,
}

impl fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supervisor")
            .field("state_dir", &self.config.state_dir)
            .field("shell", &self.shell)
            .field("commands", &lock(&self.commands).len())
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    /// A builder keeping artifacts in `state_dir`.
    pub fn builder(state_dir: impl Into<PathBuf>) -> SupervisorBuilder {
        SupervisorBuilder::new(state_dir)
    }

    /// The directory holding the artifacts.
    pub fn state_dir(&self) -> &Path {
        &self.config.state_dir
    }

    /// The shell commands run in.
    pub fn shell(&self) -> &Path {
        &self.shell
    }

    /// Runs a command. A foreground command is waited for until it ends, its soft timeout
    /// expires (it keeps running; the report says how to follow it) or `cancel` fires (it is
    /// killed, and the report says "aborted by user"). A background command returns at once.
    pub async fn run(
        &self,
        spec: CommandSpec,
        cancel: &CancellationToken,
    ) -> Result<CommandReport, ExecError> {
        let entry = self.start(&spec)?;
        let soft_timeout = match spec.launch {
            Launch::Background => {
                entry.set_background();
                return Ok(self.report_of(&entry, Some(Detached::Background)));
            }
            Launch::Foreground { soft_timeout } => soft_timeout,
        };
        let expiry = async {
            match soft_timeout {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = entry.wait_done() => {}
            () = expiry => {
                if entry.is_running() {
                    entry.set_background();
                    let after = soft_timeout.unwrap_or_default();
                    return Ok(self.report_of(&entry, Some(Detached::SoftTimeout { after })));
                }
                entry.wait_done().await;
            }
            () = cancel.cancelled() => {
                entry.request_kill(KillReason::Cancelled);
                entry.wait_done().await;
            }
        }
        Ok(self.report_of(&entry, None))
    }

    fn start(&self, spec: &CommandSpec) -> Result<Arc<CommandEntry>, ExecError> {
        if spec.command.trim().is_empty() {
            return Err(ExecError::EmptyCommand);
        }
        match std::fs::metadata(&spec.cwd) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(ExecError::Cwd {
                    path: spec.cwd.clone(),
                    reason: "not a directory".to_owned(),
                });
            }
            Err(error) => {
                return Err(ExecError::Cwd {
                    path: spec.cwd.clone(),
                    reason: error.to_string(),
                });
            }
        }
        let mut commands = lock(&self.commands);
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(ExecError::ShutDown);
        }
        let running = commands.values().filter(|e| e.is_running()).count();
        if running >= self.config.max_running {
            return Err(ExecError::TooManyRunning {
                limit: self.config.max_running,
                running,
            });
        }
        let id = CommandId(self.next_id.fetch_add(1, Ordering::SeqCst));
        let artifact_path = self.config.state_dir.join(id.artifact_name());
        let budget = self.config.budget.bytes();
        // The tail keeps one byte more than the budget so the preview knows the byte before it.
        let capture = Arc::new(Mutex::new(Capture::new(budget, budget + 1)));
        let capture_error = |source| ExecError::Capture {
            command: spec.command.clone(),
            source,
        };
        self.ensure_guard();
        let (pipe_read, pipe_write) = reader::output_pipe().map_err(capture_error)?;
        let tag_value = id.to_string();
        let mut cmd = tokio::process::Command::new(&self.shell);
        cmd.arg("-c")
            .arg(&spec.command)
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(&self.tag_name, &tag_value)
            .stdin(Stdio::null())
            .stdout(Stdio::from(pipe_write.try_clone().map_err(capture_error)?))
            .stderr(Stdio::from(pipe_write))
            .kill_on_drop(false);
        // SAFETY: `setsid` is async-signal-safe and allocates nothing; turning its errno into
        // an io::Error does not allocate either.
        unsafe {
            cmd.pre_exec(|| {
                nix::unistd::setsid()
                    .map(drop)
                    .map_err(|errno| std::io::Error::from_raw_os_error(errno as i32))
            });
        }
        if let Some(sandbox) = &spec.sandbox {
            sandbox.install(&mut cmd);
        }
        let spawned = tree::spawn_owned(|| cmd.spawn(), tokio::process::Child::id);
        // The Command holds the pipe's write ends until dropped: drop it now, or the reader
        // would never see end of file.
        drop(cmd);
        let child = match spawned {
            Ok(child) => child,
            Err(source) => {
                return Err(ExecError::Spawn {
                    shell: self.shell.clone(),
                    command: spec.command.clone(),
                    source,
                });
            }
        };
        if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
            lineage::command_started(&self.tag_name, id, pid);
        }
        let tag = TagMatch::Entry(format!("{}={tag_value}", self.tag_name).into_bytes());
        let entry = Arc::new(CommandEntry::new(
            id,
            spec.command.clone(),
            artifact_path.clone(),
            Arc::clone(&capture),
            spec.sandbox.as_ref().map(|s| s.enforcement().to_string()),
            tag,
            self.config.hard_timeout_for(&spec.command),
            child.id().and_then(|p| i32::try_from(p).ok()),
        ));
        let sink = ReaderSink {
            id,
            capture,
            artifact: Artifact::Pending(artifact_path),
            artifact_cap: self.config.artifact_cap,
            artifact_written: 0,
            observer: spec.on_output.clone(),
        };
        let reader = match reader::start(pipe_read, sink) {
            Ok(reader) => reader,
            Err(source) => {
                let target = TreeTarget {
                    mains: entry.pid.into_iter().collect(),
                    tag: Some(entry.tag.clone()),
                    not_before: self.not_before,
                    orphans: false,
                    owner: Some(Filter::Command(self.tag_name.clone(), id)),
                };
                tree::kill_tree(&target, Duration::ZERO);
                return Err(capture_error(source));
            }
        };
        commands.insert(id, Arc::clone(&entry));
        drop(commands);
        tokio::spawn(command::monitor(
            Arc::clone(&entry),
            child,
            reader,
            self.config.kill_grace,
            self.not_before,
            self.tag_name.clone(),
        ));
        Ok(entry)
    }

    pub(crate) fn entry(&self, id: CommandId) -> Result<Arc<CommandEntry>, ExecError> {
        lock(&self.commands)
            .get(&id)
            .cloned()
            .ok_or_else(|| ExecError::UnknownCommand { id: id.to_string() })
    }

    fn report_of(&self, entry: &CommandEntry, detached: Option<Detached>) -> CommandReport {
        let status = entry.status();
        let wall_time = entry.runtime();
        let snapshot = lock(&entry.capture).snapshot();
        CommandReport {
            id: entry.id,
            command: entry.command.clone(),
            status,
            detached,
            wall_time,
            total_bytes: snapshot.total_bytes,
            total_lines: snapshot.total_lines,
            preview: Preview::build(&snapshot, self.config.budget.bytes()),
            artifact: ArtifactInfo {
                name: entry.id.artifact_name(),
                path: entry.artifact_path.clone(),
                kept_bytes: snapshot.kept_bytes,
                cap: self.config.artifact_cap,
                error: snapshot.artifact_error,
            },
            sandbox: entry.sandbox.clone(),
        }
    }

    /// The report of command `id` as it stands now (running or finished).
    pub fn report(&self, id: CommandId) -> Result<CommandReport, ExecError> {
        let entry = self.entry(id)?;
        let detached =
            (entry.is_running() && entry.is_background()).then_some(Detached::Background);
        Ok(self.report_of(&entry, detached))
    }

    /// Waits until command `id` has finished, then returns its report.
    pub async fn wait(&self, id: CommandId) -> Result<CommandReport, ExecError> {
        let entry = self.entry(id)?;
        entry.wait_done().await;
        Ok(self.report_of(&entry, None))
    }

    /// The session's commands, oldest first.
    pub fn list(&self) -> Vec<CommandSummary> {
        let entries: Vec<Arc<CommandEntry>> = lock(&self.commands).values().cloned().collect();
        entries
            .iter()
            .map(|entry| {
                let (output_bytes, output_lines) = {
                    let capture = lock(&entry.capture);
                    (capture.total_bytes(), capture.total_lines())
                };
                CommandSummary {
                    id: entry.id,
                    command: entry.command.clone(),
                    status: entry.status(),
                    runtime: entry.runtime(),
                    output_bytes,
                    output_lines,
                    background: entry.is_background(),
                }
            })
            .collect()
    }

    /// How many commands are running.
    pub fn running(&self) -> usize {
        lock(&self.commands)
            .values()
            .filter(|e| e.is_running())
            .count()
    }

    /// Kills command `id` and every process it started. A command that already finished is
    /// not an error: the outcome says so, and any processes it left running in the background
    /// are killed.
    pub async fn kill(&self, id: CommandId) -> Result<KillOutcome, ExecError> {
        let entry = self.entry(id)?;
        if entry.request_kill(KillReason::Requested) {
            entry.wait_done().await;
            return Ok(KillOutcome::Killed {
                id,
                status: entry.status(),
                runtime: entry.runtime(),
            });
        }
        let target = TreeTarget {
            mains: Vec::new(),
            tag: Some(entry.tag.clone()),
            not_before: self.not_before,
            orphans: false,
            owner: Some(Filter::Command(self.tag_name.clone(), id)),
        };
        let grace = self.config.kill_grace;
        let leftovers_killed = tokio::task::spawn_blocking(move || tree::kill_tree(&target, grace))
            .await
            .map_err(|e| ExecError::Internal(format!("killing leftovers of command {id}: {e}")))?;
        Ok(KillOutcome::AlreadyFinished {
            id,
            status: entry.status(),
            leftovers_killed,
        })
    }

    /// Ends the session: refuses new commands, kills every running command (SIGTERM, the grace
    /// period, SIGKILL) and every process finished commands left behind, and waits for them.
    pub async fn shutdown(&self) {
        let entries = self.close();
        for entry in &entries {
            entry.request_kill(KillReason::Shutdown);
        }
        for entry in &entries {
            entry.wait_done().await;
        }
        if !entries.is_empty() || self.piped_started.load(Ordering::SeqCst) {
            let target = self.session_target();
            let grace = self.config.kill_grace;
            let _ = tokio::task::spawn_blocking(move || tree::kill_at_end(target, grace)).await;
        }
        self.release_guard();
    }

    /// Like [`shutdown`](Self::shutdown), for callers that cannot await (a drop, a synchronous
    /// hook): blocks while the processes die, up to the grace period and a few seconds more.
    pub fn shutdown_blocking(&self) {
        let entries = self.close();
        for entry in &entries {
            entry.request_kill(KillReason::Shutdown);
        }
        if entries.is_empty() && !self.piped_started.load(Ordering::SeqCst) {
            self.release_guard();
            return;
        }
        // Shells not yet reaped anchor their trees (the monitors may be gone with the runtime).
        // A shell reaped between this check and the kill could in theory see its pid reused
        // by then; that takes the kernel cycling through every free pid in those microseconds.
        let mut target = self.session_target();
        target.mains = entries
            .iter()
            .filter(|e| e.is_running() && !e.reaped.load(Ordering::SeqCst))
            .filter_map(|e| e.pid)
            .collect();
        tree::kill_at_end(target, self.config.kill_grace);
        self.release_guard();
    }

    /// Refuses new commands from now on and returns the commands started so far. Under the
    /// commands lock, so a command being started either is in the list or is refused.
    fn close(&self) -> Vec<Arc<CommandEntry>> {
        let commands = lock(&self.commands);
        self.shut_down.store(true, Ordering::SeqCst);
        commands.values().cloned().collect()
    }

    /// Starts the guard with the first command (once; a failure is logged and not retried:
    /// commands still run, only without protection against this process being killed).
    pub(crate) fn ensure_guard(&self) {
        let mut guard = lock(&self.guard);
        if guard.is_none() {
            *guard = Some(
                Guard::start(&self.tag_name, self.not_before, self.config.guard_delay)
                    .inspect_err(|error| {
                        tracing::warn!(
                            "cannot start the guard that kills commands if lathe is killed: {error}"
                        );
                    })
                    .ok(),
            );
        }
    }

    /// Tells the guard its work is done, once every command is dead. The state stays
    /// `Some(None)`: commands are refused from now on, so no guard is needed again.
    fn release_guard(&self) {
        if let Some(guard) = lock(&self.guard).as_mut().and_then(Option::take) {
            guard.release();
        }
    }

    /// Every process started by any command of this supervisor.
    fn session_target(&self) -> TreeTarget {
        TreeTarget {
            mains: Vec::new(),
            tag: Some(TagMatch::Name(format!("{}=", self.tag_name).into_bytes())),
            not_before: self.not_before,
            orphans: false,
            owner: Some(Filter::Supervisor(self.tag_name.clone())),
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if !self.shut_down.load(Ordering::SeqCst) {
            self.shutdown_blocking();
        }
        self.release_guard();
        lineage::supervisor_ended(&self.tag_name);
        tree::supervisor_ended();
    }
}
