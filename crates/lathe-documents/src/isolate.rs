//! Running a parser where its failures cannot hurt: a child process with limits on input size,
//! time and memory, or, for embedders that configure no worker, a thread with panics contained
//! and a time limit on the wait.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::worker::{Reply, Request};
use crate::{Document, Error, Format, Selection, convert_in_process};

/// Inputs larger than this are refused before any parser sees them. By default, 64 MiB.
pub const DEFAULT_MAX_INPUT: u64 = 64 << 20;
/// A conversion that runs longer is stopped. By default, 30 s: a 200-page PDF takes about a
/// second here, so only a parser that is stuck comes near it.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(30);
/// The worker's address-space limit (`RLIMIT_AS`). By default, 1 GiB: the largest document
/// benchmarked peaks near a tenth of it.
pub const DEFAULT_MEMORY_LIMIT: u64 = 1 << 30;
/// How often the wait looks at the clock, the cancellation and the child.
const POLL: Duration = Duration::from_millis(10);
/// The most of a worker's answer read (the Markdown of a document within the input limit).
const MAX_REPLY: u64 = 512 << 20;
/// The most of a worker's stderr kept, for the crash message.
const MAX_STDERR: u64 = 16 << 10;

static DEFAULT_WORKER: OnceLock<Worker> = OnceLock::new();

/// A program that answers the worker protocol ([`crate::worker::serve`]) when run with `args`.
#[derive(Debug, Clone)]
struct Worker {
    program: PathBuf,
    args: Vec<OsString>,
}

/// Sets the worker every [`Converter::new`] uses, once per process (later calls are ignored):
/// the binary calls it at start with its own path and the hidden subcommand that runs
/// [`crate::worker::serve`] (`lathe` passes `current_exe()` and `__document-worker`).
pub fn set_default_worker(program: impl Into<PathBuf>, args: Vec<OsString>) {
    let _ = DEFAULT_WORKER.set(Worker {
        program: program.into(),
        args,
    });
}

/// Converts documents with limits. Build one with [`Converter::new`] and the setters.
#[derive(Debug, Clone)]
pub struct Converter {
    worker: Option<Worker>,
    max_input: u64,
    time_limit: Duration,
    memory_limit: u64,
}

impl Default for Converter {
    fn default() -> Self {
        Converter::new()
    }
}

impl Converter {
    /// A converter with the default limits, running the worker set by [`set_default_worker`],
    /// or in process when none was set.
    pub fn new() -> Self {
        Converter {
            worker: DEFAULT_WORKER.get().cloned(),
            max_input: DEFAULT_MAX_INPUT,
            time_limit: DEFAULT_TIME_LIMIT,
            memory_limit: DEFAULT_MEMORY_LIMIT,
        }
    }

    /// Runs conversions in `program args...`, which must answer the worker protocol.
    pub fn worker(mut self, program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
        self.worker = Some(Worker {
            program: program.into(),
            args,
        });
        self
    }

    /// Converts in this process: panics are contained and the wait is limited, but a parser
    /// that loops keeps its thread and one that exhausts memory takes the process down.
    pub fn in_process(mut self) -> Self {
        self.worker = None;
        self
    }

    /// The largest input read. By default, [`DEFAULT_MAX_INPUT`].
    pub fn max_input_bytes(mut self, bytes: u64) -> Self {
        self.max_input = bytes;
        self
    }

    /// How long a conversion may run. By default, [`DEFAULT_TIME_LIMIT`].
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// The worker's memory (address space) limit. By default, [`DEFAULT_MEMORY_LIMIT`]. Not
    /// enforced in process.
    pub fn memory_limit(mut self, bytes: u64) -> Self {
        self.memory_limit = bytes;
        self
    }

    /// Whether conversions run in a child process.
    pub fn isolated(&self) -> bool {
        self.worker.is_some()
    }

    /// Converts the selected units of `bytes`, named `name` (its extension is the fallback for
    /// formats without a signature). `cancelled` is polled while the parser runs.
    pub fn convert(
        &self,
        bytes: &[u8],
        name: &str,
        selection: &Selection,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Document, Error> {
        if bytes.len() as u64 > self.max_input {
            return Err(Error::TooLarge {
                bytes: bytes.len() as u64,
                limit: self.max_input,
            });
        }
        let format = Format::detect(name, bytes).ok_or(Error::UnknownFormat)?;
        match &self.worker {
            Some(worker) => self.in_child(worker, bytes, format, selection, cancelled),
            None => self.in_thread(bytes, format, selection, cancelled),
        }
    }

    fn in_child(
        &self,
        worker: &Worker,
        bytes: &[u8],
        format: Format,
        selection: &Selection,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Document, Error> {
        let mut command = Command::new(&worker.program);
        command
            .args(&worker.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        limit_child(&mut command, self.memory_limit, self.time_limit);
        let mut child = command.spawn().map_err(|e| {
            Error::Worker(format!("cannot start {}: {e}", worker.program.display()))
        })?;
        let request = Request {
            format,
            pages: selection.to_string(),
        };
        let mut header = serde_json::to_vec(&request).expect("a request serialises");
        header.push(b'\n');
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let input = bytes.to_vec();
        // A worker that dies early closes its stdin: the write fails and the exit tells why.
        let writer = std::thread::spawn(move || {
            let _ = stdin
                .write_all(&header)
                .and_then(|()| stdin.write_all(&input));
        });
        let stdout = drain(child.stdout.take().expect("stdout is piped"), MAX_REPLY);
        let stderr = drain(child.stderr.take().expect("stderr is piped"), MAX_STDERR);
        let status = wait(&mut child, self.time_limit, cancelled);
        let _ = writer.join();
        let stdout = stdout.join().unwrap_or_default();
        let stderr = stderr.join().unwrap_or_default();
        let status = match status {
            Waited::Exited(status) => status,
            Waited::TimedOut => {
                return Err(Error::TimedOut {
                    format: format.name().into(),
                    secs: self.time_limit.as_secs().max(1),
                });
            }
            Waited::Cancelled => return Err(Error::Cancelled),
            Waited::Failed(e) => return Err(Error::Worker(format!("waiting for it: {e}"))),
        };
        if let Ok(reply) = serde_json::from_slice::<Reply>(&stdout) {
            return match reply {
                Reply::Done(document) => Ok(document),
                Reply::Failed(error) => Err(error),
            };
        }
        Err(crash(format, status, &stderr, self))
    }

    fn in_thread(
        &self,
        bytes: &[u8],
        format: Format,
        selection: &Selection,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Document, Error> {
        let (send, receive) = std::sync::mpsc::channel();
        let input = bytes.to_vec();
        let selection = selection.clone();
        std::thread::Builder::new()
            .name("lathe-document".into())
            .spawn(move || {
                let result =
                    std::panic::catch_unwind(|| convert_in_process(&input, format, &selection));
                let _ = send.send(result);
            })
            .map_err(|e| Error::Worker(format!("cannot start a thread: {e}")))?;
        let deadline = Instant::now() + self.time_limit;
        loop {
            match receive.recv_timeout(POLL) {
                Ok(Ok(result)) => return result,
                Ok(Err(panic)) => {
                    return Err(Error::Crashed {
                        format: format.name().into(),
                        detail: format!("it panicked: {}", panic_message(&*panic)),
                    });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Error::Worker("the conversion thread vanished".into()));
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if cancelled() {
                return Err(Error::Cancelled);
            }
            if Instant::now() >= deadline {
                return Err(Error::TimedOut {
                    format: format.name().into(),
                    secs: self.time_limit.as_secs().max(1),
                });
            }
        }
    }
}

/// The panic's message, when it has one.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

/// Limits the worker before it runs a line of its own: memory (address space), CPU time (a
/// second past the time limit, in case the parent is gone) and no core dumps; it dies with
/// its parent.
fn limit_child(command: &mut Command, memory: u64, time: Duration) {
    use std::os::unix::process::CommandExt;
    let cpu = time.as_secs() + 1;
    // SAFETY: between fork and exec the closure calls only `setrlimit` and `prctl`, which are
    // async-signal-safe, and touches no memory but the stack values it was given.
    unsafe {
        command.pre_exec(move || {
            let set = |resource, value: u64| {
                let limit = libc::rlimit {
                    rlim_cur: value as libc::rlim_t,
                    rlim_max: value as libc::rlim_t,
                };
                if libc::setrlimit(resource, &limit) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            };
            set(libc::RLIMIT_AS, memory)?;
            set(libc::RLIMIT_CPU, cpu)?;
            set(libc::RLIMIT_CORE, 0)?;
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

fn drain(mut from: impl Read + Send + 'static, max: u64) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = from.by_ref().take(max).read_to_end(&mut out);
        // Past the cap, keep reading so the worker never blocks on a full pipe.
        let _ = std::io::copy(&mut from, &mut std::io::sink());
        out
    })
}

enum Waited {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    Failed(std::io::Error),
}

#[expect(
    clippy::disallowed_methods,
    reason = "polls a worker process from the conversion's blocking thread"
)]
fn wait(child: &mut Child, limit: Duration, cancelled: &dyn Fn() -> bool) -> Waited {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Waited::Exited(status),
            Ok(None) => {}
            Err(e) => return Waited::Failed(e),
        }
        let stop = if cancelled() {
            Some(Waited::Cancelled)
        } else if Instant::now() >= deadline {
            Some(Waited::TimedOut)
        } else {
            None
        };
        if let Some(outcome) = stop {
            let _ = child.kill();
            let _ = child.wait();
            return outcome;
        }
        std::thread::sleep(POLL);
    }
}

/// What a worker that gave no answer died of.
fn crash(format: Format, status: ExitStatus, stderr: &[u8], limits: &Converter) -> Error {
    use std::os::unix::process::ExitStatusExt;
    let stderr = String::from_utf8_lossy(stderr);
    // Rust aborts with this line when an allocation fails (the address-space limit).
    if stderr.contains("memory allocation of") || stderr.contains("out of memory") {
        return Error::OutOfMemory {
            format: format.name().into(),
            limit: limits.memory_limit,
        };
    }
    let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
    let how = match (status.signal(), status.code()) {
        (Some(libc::SIGXCPU), _) => {
            return Error::TimedOut {
                format: format.name().into(),
                secs: limits.time_limit.as_secs().max(1),
            };
        }
        (Some(signal), _) => format!("killed by signal {signal}"),
        (None, Some(code)) => format!("exit status {code}"),
        (None, None) => "ended without a status".to_owned(),
    };
    Error::Crashed {
        format: format.name().into(),
        detail: match last {
            Some(line) => format!("{how}: {}", line.trim()),
            None => how,
        },
    }
}
