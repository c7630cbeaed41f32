//! One-shot programs fed on stdin that answer on stdout and stderr, kept apart: the caller's own
//! helpers (Lathe's hooks), not the model's commands. See [`Supervisor::run_piped`].

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::command::{CommandId, CommandStatus, DRAIN_BOUND, KillReason, exit_status, lock};
use crate::error::ExecError;
use crate::lineage::{self, Filter};
use crate::procfs::TagMatch;
use crate::supervisor::Supervisor;
use crate::tree::{self, TreeTarget};

/// How much of stdout and of stderr a [`PipedSpec`] keeps unless told otherwise: 1 MiB each.
pub const DEFAULT_PIPED_CAP: usize = 1 << 20;

/// A program to run with [`Supervisor::run_piped`].
#[derive(Clone)]
pub struct PipedSpec {
    /// The program: a path, or a name looked up on `PATH`.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory.
    pub cwd: PathBuf,
    /// Written to its stdin, which is then closed. A program that exits (or closes its stdin)
    /// without reading it all is not an error.
    pub stdin: Vec<u8>,
    /// Its environment: `None` (the default) passes this process's environment as it is, with
    /// none of the changes [`Supervisor::run`] makes for a model's commands; `Some` passes
    /// exactly these variables. Either way the supervisor adds the one variable that marks the
    /// program's processes as its own.
    pub env: Option<Vec<(OsString, OsString)>>,
    /// Past this the program and everything it started are killed. `None`: no limit.
    pub timeout: Option<Duration>,
    /// The most bytes kept of stdout, and of stderr. Past it that stream is no longer read and
    /// its pipe is closed, so a program that goes on writing gets `EPIPE` (or `SIGPIPE`), as
    /// when its output goes to `head -c`.
    pub output_cap: usize,
}

impl fmt::Debug for PipedSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipedSpec")
            .field("program", &self.program)
            .field("args", &self.args)
            .field("cwd", &self.cwd)
            .field("stdin_bytes", &self.stdin.len())
            .field("env", &self.env.as_ref().map(Vec::len))
            .field("timeout", &self.timeout)
            .field("output_cap", &self.output_cap)
            .finish()
    }
}

impl PipedSpec {
    /// `program` in `cwd`, without arguments, stdin or limit, in this process's environment.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        PipedSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            stdin: Vec::new(),
            env: None,
            timeout: None,
            output_cap: DEFAULT_PIPED_CAP,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets what is written to stdin.
    pub fn stdin(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.stdin = bytes.into();
        self
    }

    /// Runs it with exactly these environment variables (and the supervisor's mark).
    pub fn env(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.env = Some(vars);
        self
    }

    /// Kills it, with everything it started, past `limit`.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Keeps at most `bytes` of stdout and of stderr.
    pub fn output_cap(mut self, bytes: usize) -> Self {
        self.output_cap = bytes;
        self
    }

    fn shown(&self) -> String {
        std::iter::once(self.program.as_os_str())
            .chain(self.args.iter().map(OsString::as_os_str))
            .map(|part| part.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// What a [`Supervisor::run_piped`] program did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipedOutput {
    /// How it ended: [`Exited`](CommandStatus::Exited), [`Signaled`](CommandStatus::Signaled),
    /// [`TimedOut`](CommandStatus::TimedOut) (past [`PipedSpec::timeout`]) or
    /// [`Killed`](CommandStatus::Killed) (the supervisor was shut down meanwhile).
    pub status: CommandStatus,
    /// Its stdout, up to the cap.
    pub stdout: Vec<u8>,
    /// Its stderr, up to the cap.
    pub stderr: Vec<u8>,
    /// From its start to the death of everything it started.
    pub wall_time: Duration,
    /// The processes killed at its end: the whole tree past the timeout, else those it left
    /// running.
    pub killed: usize,
}

/// While a piped program runs: kills its tree if the caller drops the run before the end, and
/// always hands its pid back to the reaper and marks its end for the lineage module.
struct Running<'a> {
    supervisor: &'a Supervisor,
    id: CommandId,
    pid: Option<i32>,
    tag: TagMatch,
    /// The shell is not reaped yet: its pid still names its session and process group.
    unreaped: bool,
    /// The tree is still to be killed if the run is dropped.
    armed: bool,
}

impl Running<'_> {
    fn target(&self) -> TreeTarget {
        TreeTarget {
            mains: self.pid.filter(|_| self.unreaped).into_iter().collect(),
            tag: Some(self.tag.clone()),
            not_before: self.supervisor.not_before,
            orphans: false,
            owner: Some(Filter::Command(self.supervisor.tag_name.clone(), self.id)),
        }
    }

    /// Kills the tree (off the async workers) and returns how many processes it held.
    async fn kill(&mut self, grace: Duration) -> usize {
        self.armed = false;
        let target = self.target();
        tokio::task::spawn_blocking(move || tree::kill_tree(&target, grace))
            .await
            .unwrap_or_else(|error| {
                tracing::warn!("killing piped command {}: {error}", self.id);
                0
            })
    }

    /// The shell was reaped: its pid is free for the kernel to reuse.
    fn reaped(&mut self) {
        if !self.unreaped {
            return;
        }
        self.unreaped = false;
        if let Some(pid) = self.pid {
            tree::release_owned(pid);
        }
        // Its children are ours now: attribute them while it is clear whose they are.
        lineage::command_reaped(&self.supervisor.tag_name, self.id);
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.armed {
            // Dropped mid-run (the caller gave up on it): nothing waits for a grace period, and
            // the shell, not reaped, still anchors the tree. Blocks for the few scans it takes.
            tree::kill_tree(&self.target(), Duration::ZERO);
        }
        if self.unreaped {
            // Tokio reaps the dropped child; the reaper may take it first, which is harmless.
            self.unreaped = false;
            if let Some(pid) = self.pid {
                tree::release_owned(pid);
            }
            lineage::command_reaped(&self.supervisor.tag_name, self.id);
        }
    }
}

/// Reads `pipe` into `into` until end of file or `cap` bytes, then closes it.
async fn read_capped(pipe: Option<impl AsyncRead + Unpin>, into: &mut Vec<u8>, cap: usize) {
    if let Some(pipe) = pipe {
        let _ = pipe.take(cap as u64).read_to_end(into).await;
    }
}

impl Supervisor {
    /// Runs `spec.program` fed `spec.stdin`, and returns its stdout and stderr apart: for the
    /// caller's own helpers (hooks) that answer on stdout, not for the model's commands, which
    /// [`run`](Self::run) runs.
    ///
    /// The program gets what every command of this supervisor gets: its own session and
    /// process group, the mark in its environment and the guard, so nothing it starts outlives
    /// it. When the program ends, whatever it left running (a background job, a daemon that
    /// forked twice or left for a session of its own) is killed, and its output is read until
    /// those are gone: a child holding the pipes does not make the caller wait. Past
    /// `spec.timeout` the whole tree is killed. Killing takes the supervisor's
    /// [`kill_grace`](crate::SupervisorBuilder::kill_grace) between SIGTERM and SIGKILL.
    /// Dropping the returned future before it is ready kills the tree at once. A
    /// [`shutdown`](Self::shutdown) meanwhile kills it too.
    ///
    /// Unlike [`run`](Self::run), it writes no artifact (the supervisor's state directory is
    /// not touched), it does not count towards
    /// [`max_running`](crate::SupervisorBuilder::max_running) and it is not listed; it runs
    /// the program itself, not the supervisor's shell (pass `sh` and `-c` for a command
    /// line). It takes a number from the sequence [`CommandId`]s come from. The errors are
    /// [`ExecError::ShutDown`] and, when the program cannot be started (not found, or `cwd`
    /// missing), [`ExecError::Spawn`] with the system's error as its source.
    pub async fn run_piped(&self, spec: PipedSpec) -> Result<PipedOutput, ExecError> {
        let (child, running) = self.start_piped(&spec)?;
        self.finish_piped(spec, child, running).await
    }

    fn start_piped(
        &self,
        spec: &PipedSpec,
    ) -> Result<(tokio::process::Child, Running<'_>), ExecError> {
        // Under the commands lock, as `start`: a program being started is either refused or
        // started before `shutdown` looks for what to kill.
        let commands = lock(&self.commands);
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(ExecError::ShutDown);
        }
        self.piped_started.store(true, Ordering::SeqCst);
        let id = CommandId(self.next_id.fetch_add(1, Ordering::SeqCst));
        self.ensure_guard();
        let tag_value = id.to_string();
        let mut cmd = tokio::process::Command::new(&spec.program);
        cmd.args(&spec.args).current_dir(&spec.cwd);
        if let Some(vars) = &spec.env {
            cmd.env_clear().envs(vars.iter().map(|(k, v)| (k, v)));
        }
        cmd.env(&self.tag_name, &tag_value)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
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
        let child =
            tree::spawn_owned(|| cmd.spawn(), tokio::process::Child::id).map_err(|source| {
                ExecError::Spawn {
                    shell: spec.program.clone(),
                    command: spec.shown(),
                    source,
                }
            })?;
        let pid = child.id().and_then(|p| i32::try_from(p).ok());
        if let Some(pid) = pid {
            lineage::command_started(&self.tag_name, id, pid);
        }
        drop(commands);
        let running = Running {
            supervisor: self,
            id,
            pid,
            tag: TagMatch::Entry(format!("{}={tag_value}", self.tag_name).into_bytes()),
            unreaped: true,
            armed: true,
        };
        Ok((child, running))
    }

    async fn finish_piped(
        &self,
        spec: PipedSpec,
        mut child: tokio::process::Child,
        mut running: Running<'_>,
    ) -> Result<PipedOutput, ExecError> {
        let started = Instant::now();
        let input = child.stdin.take();
        let (out_pipe, err_pipe) = (child.stdout.take(), child.stderr.take());
        let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
        let grace = self.config.kill_grace;
        let (status, killed) = {
            let write = async {
                if let Some(mut input) = input {
                    // A program that does not read its stdin closes the pipe: not an error.
                    let _ = input.write_all(&spec.stdin).await;
                }
            };
            let io = async {
                tokio::join!(
                    write,
                    read_capped(out_pipe, &mut stdout, spec.output_cap),
                    read_capped(err_pipe, &mut stderr, spec.output_cap),
                )
            };
            tokio::pin!(io);
            let expiry = async {
                match spec.timeout {
                    Some(limit) => tokio::time::sleep(limit).await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(expiry);
            let mut io_done = false;
            let exited = loop {
                tokio::select! {
                    status = child.wait() => break Some(status),
                    () = &mut expiry => break None,
                    _ = &mut io, if !io_done => io_done = true,
                }
            };
            let (status, killed) = match exited {
                Some(status) => {
                    running.reaped();
                    let status = match status {
                        Ok(status) => exit_status(status),
                        Err(error) => {
                            tracing::warn!("waiting for piped command {}: {error}", running.id);
                            CommandStatus::Exited { code: -1 }
                        }
                    };
                    // What it left running goes now, and with it the last writers of its pipes.
                    (status, running.kill(grace).await)
                }
                None => {
                    let killed = running.kill(grace).await;
                    let _ = child.wait().await;
                    running.reaped();
                    let limit = spec.timeout.unwrap_or_default();
                    (CommandStatus::TimedOut { limit }, killed)
                }
            };
            // Only a process no mark found can still hold a pipe open: not waited for long.
            if !io_done && tokio::time::timeout(DRAIN_BOUND, &mut io).await.is_err() {
                tracing::debug!(
                    "piped command {}: output still open after its end",
                    running.id
                );
            }
            (status, killed)
        };
        let status = match status {
            CommandStatus::Signaled { .. } if self.shut_down.load(Ordering::SeqCst) => {
                CommandStatus::Killed {
                    reason: KillReason::Shutdown,
                }
            }
            status => status,
        };
        Ok(PipedOutput {
            status,
            stdout,
            stderr,
            wall_time: started.elapsed(),
            killed,
        })
    }
}
