//! The per-session supervisor: starts commands, waits for them, kills them, and reads their
//! output back.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::capture::Capture;
use crate::command::{self, CommandEntry, CommandId, KillReason, OutputObserver, lock};
use crate::config::{Config, PreviewBudget};
use crate::error::ExecError;
use crate::output::{
    self, DEFAULT_READ_LIMIT, DEFAULT_SEARCH_LIMIT, MAX_READ_LIMIT, OutputPage, SearchResult,
};
use crate::preview::Preview;
use crate::procfs::{self, TagMatch};
use crate::reader::{self, ReaderSink};
use crate::report::{ArtifactInfo, CommandReport, CommandSummary, Detached, KillOutcome};
use crate::sandbox::PreparedSandbox;
use crate::tree::{self, TreeTarget};

/// How the caller waits for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launch {
    /// Wait until it ends, is cancelled, or `soft_timeout` expires (then it keeps running in the
    /// background and the call returns the output so far).
    Foreground {
        /// The caller's patience; `None` waits for the end.
        soft_timeout: Option<Duration>,
    },
    /// Return at once with the command's id.
    Background,
}

/// What to run and how.
#[derive(Clone)]
pub struct CommandSpec {
    /// The shell command line (`bash -c COMMAND`).
    pub command: String,
    /// The working directory (absolute; the caller checks it is allowed).
    pub cwd: PathBuf,
    /// How the caller waits.
    pub launch: Launch,
    /// The Landlock sandbox to run it in, if any; the result header says "sandboxed" when set.
    pub sandbox: Option<PreparedSandbox>,
    /// Called with each chunk of output as it arrives.
    pub on_output: Option<OutputObserver>,
}

impl fmt::Debug for CommandSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandSpec")
            .field("command", &self.command)
            .field("cwd", &self.cwd)
            .field("launch", &self.launch)
            .field("sandbox", &self.sandbox.is_some())
            .field("on_output", &self.on_output.is_some())
            .finish()
    }
}

impl CommandSpec {
    /// A foreground command without a timeout, unsandboxed.
    pub fn new(command: impl Into<String>, cwd: impl Into<PathBuf>) -> Self {
        CommandSpec {
            command: command.into(),
            cwd: cwd.into(),
            launch: Launch::Foreground { soft_timeout: None },
            sandbox: None,
            on_output: None,
        }
    }

    /// Waits at most `timeout`, then leaves the command running in the background.
    pub fn soft_timeout(mut self, timeout: Duration) -> Self {
        self.launch = Launch::Foreground {
            soft_timeout: Some(timeout),
        };
        self
    }

    /// Starts the command in the background.
    pub fn background(mut self) -> Self {
        self.launch = Launch::Background;
        self
    }

    /// Runs the command in `sandbox`.
    pub fn sandbox(mut self, sandbox: PreparedSandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// Calls `observer` with each chunk of output.
    pub fn on_output(mut self, observer: OutputObserver) -> Self {
        self.on_output = Some(observer);
        self
    }
}

/// Builds a [`Supervisor`].
#[derive(Debug, Clone)]
pub struct SupervisorBuilder {
    config: Config,
}

impl SupervisorBuilder {
    /// A supervisor keeping its artifacts (`cmd-<id>`) in `state_dir`, created if missing.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        SupervisorBuilder {
            config: Config::new(state_dir.into()),
        }
    }

    /// How much output the result shows. By default, medium (about 10 KB).
    pub fn preview_budget(mut self, budget: PreviewBudget) -> Self {
        self.config.budget = budget;
        self
    }

    /// The most bytes kept per artifact; past it bytes are counted, not kept. By default, 1 GiB.
    pub fn artifact_cap(mut self, bytes: u64) -> Self {
        self.config.artifact_cap = bytes;
        self
    }

    /// The hard limit after which a command is killed. By default, none.
    pub fn command_timeout(mut self, limit: Option<Duration>) -> Self {
        self.config.command_timeout = limit;
        self
    }

    /// Command prefixes (whole words) exempt from the hard limit. By default, none.
    pub fn timeout_exempt(mut self, prefixes: Vec<String>) -> Self {
        self.config.timeout_exempt = prefixes;
        self
    }

    /// The most commands running at once. By default, 16.
    pub fn max_running(mut self, limit: usize) -> Self {
        self.config.max_running = limit.max(1);
        self
    }

    /// Secret-looking variables to pass to commands anyway (exact names). By default, none.
    pub fn keep_env(mut self, names: Vec<String>) -> Self {
        self.config.keep_env = names;
        self
    }

    /// Time between SIGTERM and SIGKILL. By default, 2 s.
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.config.kill_grace = grace;
        self
    }

    /// The environment commands start from (secrets are still removed and the agent settings
    /// still applied). By default, this process's environment when the supervisor is built.
    pub fn base_env(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.config.base_env = Some(vars);
        self
    }

    /// The shell run as `SHELL -c COMMAND`. By default, `bash` from `PATH`, or `sh` where bash
    /// is missing.
    pub fn shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.config.shell = Some(shell.into());
        self
    }

    /// Creates the state directory and the supervisor. Makes this process a child subreaper
    /// (see the `tree` module) so no descendant of a command can escape.
    pub fn build(self) -> Result<Supervisor, ExecError> {
        let config = self.config;
        let state_error = |source| ExecError::StateDir {
            path: config.state_dir.clone(),
            source,
        };
        std::fs::create_dir_all(&config.state_dir).map_err(state_error)?;
        // Ids continue after artifacts already there (a resumed session), never overwriting.
        let last_id = std::fs::read_dir(&config.state_dir)
            .map_err(state_error)?
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("cmd-")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        tree::ensure_subreaper();
        tree::supervisor_started();
        let shell = config.shell.clone().unwrap_or_else(|| {
            find_shell(&std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        });
        let base_env = match &config.base_env {
            Some(vars) => vars.clone(),
            None => std::env::vars_os().collect(),
        };
        let env = crate::env::prepare_env(base_env, &config.keep_env);
        Ok(Supervisor {
            shell,
            env,
            tag_name: format!("LATHE_CMD_{:016x}", nonce()),
            not_before: procfs::self_starttime(),
            commands: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(last_id + 1),
            shut_down: AtomicBool::new(false),
            config,
        })
    }
}

/// A session's commands. Dropping it (or [`shutdown`](Self::shutdown)) kills every process
/// its commands started.
pub struct Supervisor {
    config: Config,
    shell: PathBuf,
    env: Vec<(OsString, OsString)>,
    /// Every command's processes inherit `tag_name=<id>`: how they are found after escaping.
    tag_name: String,
    not_before: u64,
    commands: Mutex<BTreeMap<CommandId, Arc<CommandEntry>>>,
    next_id: AtomicU64,
    shut_down: AtomicBool,
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

/// `bash` from `path`, else `sh`, else `/bin/sh`.
fn find_shell(path: &std::ffi::OsStr) -> PathBuf {
    let find = |name: &str| {
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|candidate| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    };
    find("bash")
        .or_else(|| find("sh"))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
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
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(ExecError::ShutDown);
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
        let running = commands.values().filter(|e| e.is_running()).count();
        if running >= self.config.max_running {
            return Err(ExecError::TooManyRunning { running });
        }
        let id = CommandId(self.next_id.fetch_add(1, Ordering::SeqCst));
        let artifact_path = self.config.state_dir.join(id.artifact_name());
        let budget = self.config.budget.bytes();
        // The tail keeps one byte more than the budget so the preview knows the byte before it.
        let capture = Arc::new(Mutex::new(Capture::new(budget, budget + 1)));
        let artifact = match File::create(&artifact_path) {
            Ok(file) => Some(file),
            Err(error) => {
                lock(&capture).set_artifact_error(error.to_string());
                None
            }
        };
        let capture_error = |source| ExecError::Capture {
            command: spec.command.clone(),
            source,
        };
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
                let _ = std::fs::remove_file(&artifact_path);
                return Err(ExecError::Spawn {
                    shell: self.shell.clone(),
                    command: spec.command.clone(),
                    source,
                });
            }
        };
        let tag = TagMatch::Entry(format!("{}={tag_value}", self.tag_name).into_bytes());
        let entry = Arc::new(CommandEntry::new(
            id,
            spec.command.clone(),
            artifact_path,
            Arc::clone(&capture),
            spec.sandbox.as_ref().map(|s| s.enforcement().to_string()),
            tag,
            self.config.hard_timeout_for(&spec.command),
            child.id().and_then(|p| i32::try_from(p).ok()),
        ));
        let sink = ReaderSink {
            id,
            capture,
            artifact,
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
        ));
        Ok(entry)
    }

    fn entry(&self, id: CommandId) -> Result<Arc<CommandEntry>, ExecError> {
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

    /// Reads `limit` bytes (by default 40 KiB, at most 4 MiB) of command `id`'s output from
    /// `offset`, with the number of the line the range starts in.
    pub async fn read_output(
        &self,
        id: CommandId,
        offset: u64,
        limit: Option<usize>,
    ) -> Result<OutputPage, ExecError> {
        let entry = self.entry(id)?;
        let limit = limit.unwrap_or(DEFAULT_READ_LIMIT).clamp(1, MAX_READ_LIMIT);
        let status = entry.status();
        let (available, base, total_bytes, complete) = {
            let capture = lock(&entry.capture);
            let available = capture.kept_bytes();
            (
                available,
                capture.line_index_base(offset.min(available)),
                capture.total_bytes(),
                capture.is_closed(),
            )
        };
        let mut page = OutputPage {
            id,
            offset: offset.min(available),
            bytes: Vec::new(),
            first_line: 1,
            available,
            total_bytes,
            status,
            complete,
        };
        if available == 0 || offset >= available {
            page.offset = offset;
            return Ok(page);
        }
        let path = entry.artifact_path.clone();
        let read = tokio::task::spawn_blocking(move || {
            let file = File::open(&path)?;
            output::read_page(&file, offset, limit, available, base)
        })
        .await
        .map_err(|e| ExecError::Internal(format!("reading command {id}: {e}")))?;
        let (bytes, first_line) = read.map_err(|source| ExecError::Artifact {
            id,
            path: entry.artifact_path.clone(),
            source,
        })?;
        page.bytes = bytes;
        page.first_line = first_line;
        Ok(page)
    }

    /// Searches command `id`'s output from byte `offset` for lines matching `pattern`
    /// (case-insensitive regex; an invalid one is searched as literal text). Returns the first
    /// `limit` (by default 100) numbered lines and the total count.
    pub async fn search_output(
        &self,
        id: CommandId,
        pattern: &str,
        offset: u64,
        limit: Option<usize>,
    ) -> Result<SearchResult, ExecError> {
        let entry = self.entry(id)?;
        let limit = limit.unwrap_or(DEFAULT_SEARCH_LIMIT).max(1);
        let (regex, literal_because) = output::compile_pattern(pattern);
        let status = entry.status();
        let (available, base) = {
            let capture = lock(&entry.capture);
            let available = capture.kept_bytes();
            (available, capture.line_index_base(offset.min(available)))
        };
        let start = offset.min(available);
        let mut result = SearchResult {
            id,
            pattern: pattern.to_owned(),
            literal_because,
            start,
            end: available,
            matches: Vec::new(),
            total_matches: 0,
            next_offset: None,
            status,
        };
        if start >= available {
            return Ok(result);
        }
        let path = entry.artifact_path.clone();
        let scan = tokio::task::spawn_blocking(move || {
            let file = File::open(&path)?;
            let newlines = base.1 + output::count_newlines_in(&file, base.0.min(start), start)?;
            output::search_range(&file, start, available, newlines + 1, &regex, limit)
        })
        .await
        .map_err(|e| ExecError::Internal(format!("searching command {id}: {e}")))?
        .map_err(|source| ExecError::Artifact {
            id,
            path: entry.artifact_path.clone(),
            source,
        })?;
        result.matches = scan.matches;
        result.total_matches = scan.total;
        result.next_offset = scan.next_offset;
        Ok(result)
    }

    /// Ends the session: refuses new commands, kills every running command (SIGTERM, the grace
    /// period, SIGKILL) and every process finished commands left behind, and waits for them.
    pub async fn shutdown(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        let entries: Vec<Arc<CommandEntry>> = lock(&self.commands).values().cloned().collect();
        for entry in &entries {
            entry.request_kill(KillReason::Shutdown);
        }
        for entry in &entries {
            entry.wait_done().await;
        }
        let target = self.session_target();
        let grace = self.config.kill_grace;
        let _ = tokio::task::spawn_blocking(move || {
            tree::kill_tree(&target, grace);
            tree::sweep_orphans_if_last(grace);
        })
        .await;
    }

    /// Like [`shutdown`](Self::shutdown), for callers that cannot await (a drop, a synchronous
    /// hook): blocks while the processes die, up to the grace period and a few seconds more.
    pub fn shutdown_blocking(&self) {
        self.shut_down.store(true, Ordering::SeqCst);
        let entries: Vec<Arc<CommandEntry>> = lock(&self.commands).values().cloned().collect();
        for entry in &entries {
            entry.request_kill(KillReason::Shutdown);
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
        tree::kill_tree(&target, self.config.kill_grace);
        tree::sweep_orphans_if_last(self.config.kill_grace);
    }

    /// Every process started by any command of this supervisor.
    fn session_target(&self) -> TreeTarget {
        TreeTarget {
            mains: Vec::new(),
            tag: Some(TagMatch::Name(format!("{}=", self.tag_name).into_bytes())),
            not_before: self.not_before,
            orphans: false,
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if !self.shut_down.load(Ordering::SeqCst) {
            self.shutdown_blocking();
        }
        tree::supervisor_ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn shell_is_bash_else_sh() {
        let dir = tempfile::tempdir().unwrap();
        let with_bash = dir.path().join("a");
        let only_sh = dir.path().join("b");
        for (folder, names) in [(&with_bash, &["bash", "sh"][..]), (&only_sh, &["sh"][..])] {
            std::fs::create_dir(folder).unwrap();
            for name in names {
                let file = folder.join(name);
                std::fs::write(&file, "").unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        // A non-executable bash is skipped.
        std::fs::write(only_sh.join("bash"), "").unwrap();
        let path = std::env::join_paths([&only_sh, &with_bash]).unwrap();
        assert_eq!(find_shell(&path), with_bash.join("bash"));
        assert_eq!(find_shell(only_sh.as_os_str()), only_sh.join("sh"));
        assert_eq!(
            find_shell(std::ffi::OsStr::new("/nonexistent")),
            PathBuf::from("/bin/sh")
        );
    }
}
