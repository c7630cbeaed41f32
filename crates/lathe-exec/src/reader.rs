//! The pipe a command writes to, and the thread that drains it into the artifact and the
//! in-memory capture.

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::capture::Capture;
use crate::command::{CommandId, OutputDelta, OutputObserver};

/// Bytes read per system call: large enough that a command printing gigabytes costs few
/// calls, small enough that sixteen running commands stay far below the memory budget.
const READ_CHUNK: usize = 256 * 1024;
/// Pipe buffer asked of the kernel (the unprivileged maximum by default): a fast writer blocks
/// less often waiting for us. Refusal is harmless; the default 64 KiB works, only slower.
const PIPE_CAPACITY: i32 = 1 << 20;

/// One pipe for stdout and stderr together, so the two arrive interleaved exactly as written.
/// Both ends are close-on-exec; the write end is duplicated onto the child's descriptors 1 and
/// 2 at spawn. The read end is non-blocking: the reader polls it.
pub(crate) fn output_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = nix::unistd::pipe2(OFlag::O_CLOEXEC)?;
    let _ = fcntl(&read, FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY));
    let flags = OFlag::from_bits_truncate(fcntl(&read, FcntlArg::F_GETFL)?);
    fcntl(&read, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok((read, write))
}

/// Where the reader puts what it reads.
pub(crate) struct ReaderSink {
    pub(crate) id: CommandId,
    pub(crate) capture: Arc<Mutex<Capture>>,
    /// The artifact file, created when the first byte arrives (a command that prints nothing
    /// leaves no file, and the shell's start does not wait for the disk).
    pub(crate) artifact: Artifact,
    pub(crate) artifact_cap: u64,
    /// Bytes written to the artifact so far (the reader is its only writer).
    pub(crate) artifact_written: u64,
    pub(crate) observer: Option<OutputObserver>,
}

/// The state of a command's artifact file.
pub(crate) enum Artifact {
    /// Not created yet; this is where it goes.
    Pending(PathBuf),
    /// Being written.
    Open(File),
    /// Not written any more (it failed; the capture holds the reason).
    Failed,
}

/// The supervisor's side of a reader thread.
pub(crate) struct ReaderHandle {
    wake: OwnedFd,
    /// A copy of the wake pipe's read end: with a reader always open, the exit notice can never
    /// fail with EPIPE (and raise SIGPIPE) after the reader thread ended at end of file.
    _wake_reader: OwnedFd,
    drained: Option<tokio::sync::oneshot::Receiver<()>>,
}

impl ReaderHandle {
    /// Tells the reader the command's shell has exited: from now on, an empty pipe means the
    /// output is drained (a background grandchild may keep the pipe open for ever).
    pub(crate) fn notify_exit(&self) {
        let _ = nix::unistd::write(&self.wake, &[1]);
    }

    /// Waits until the reader has read everything written before the exit notice, or EOF, at
    /// most `bound`. Returns whether it did.
    pub(crate) async fn wait_drained(&mut self, bound: Duration) -> bool {
        let Some(drained) = self.drained.as_mut() else {
            return true;
        };
        let done = matches!(tokio::time::timeout(bound, drained).await, Ok(Ok(())));
        if done {
            self.drained = None;
        }
        done
    }
}

/// Starts the thread draining `pipe` into `sink`.
pub(crate) fn start(pipe: OwnedFd, sink: ReaderSink) -> io::Result<ReaderHandle> {
    let (wake_read, wake_write) = nix::unistd::pipe2(OFlag::O_CLOEXEC | OFlag::O_NONBLOCK)?;
    let (drained_tx, drained_rx) = tokio::sync::oneshot::channel();
    let wake_reader = wake_read.try_clone()?;
    std::thread::Builder::new()
        .name(format!("lathe-cmd-{}", sink.id))
        .spawn(move || run(pipe, wake_read, sink, drained_tx))?;
    Ok(ReaderHandle {
        wake: wake_write,
        _wake_reader: wake_reader,
        drained: Some(drained_rx),
    })
}

fn run(
    pipe: OwnedFd,
    wake: OwnedFd,
    mut sink: ReaderSink,
    drained: tokio::sync::oneshot::Sender<()>,
) {
    let mut buf = vec![0u8; READ_CHUNK];
    let mut exited = false;
    let mut drained = Some(drained);
    loop {
        match nix::unistd::read(&pipe, &mut buf) {
            Ok(0) => break,
            Ok(n) => sink.consume(&buf[..n]),
            Err(Errno::EINTR) => {}
            Err(Errno::EAGAIN) => {
                if exited && let Some(tx) = drained.take() {
                    let _ = tx.send(());
                }
                let mut fds = vec![PollFd::new(pipe.as_fd(), PollFlags::POLLIN)];
                if !exited {
                    fds.push(PollFd::new(wake.as_fd(), PollFlags::POLLIN));
                }
                match poll(&mut fds, PollTimeout::NONE) {
                    Ok(_) | Err(Errno::EINTR) => {}
                    Err(error) => {
                        tracing::warn!("polling the output of command {}: {error}", sink.id);
                        break;
                    }
                }
                if !exited
                    && fds
                        .get(1)
                        .and_then(PollFd::revents)
                        .is_some_and(|r| !r.is_empty())
                {
                    exited = true;
                }
            }
            Err(error) => {
                tracing::warn!("reading the output of command {}: {error}", sink.id);
                break;
            }
        }
    }
    crate::command::lock(&sink.capture).close();
    if let Some(tx) = drained.take() {
        let _ = tx.send(());
    }
}

impl ReaderSink {
    fn consume(&mut self, chunk: &[u8]) {
        let mut kept = 0;
        let mut failure = None;
        if let Artifact::Pending(path) = &self.artifact {
            self.artifact = match File::create(path) {
                Ok(file) => Artifact::Open(file),
                Err(error) => {
                    failure = Some(error.to_string());
                    Artifact::Failed
                }
            };
        }
        if let Artifact::Open(file) = &mut self.artifact {
            let room = self.artifact_cap.saturating_sub(self.artifact_written);
            let wanted = usize::try_from(room).unwrap_or(usize::MAX).min(chunk.len());
            while kept < wanted {
                match file.write(&chunk[kept..wanted]) {
                    Ok(0) => {
                        failure = Some("the disk accepted no more bytes".to_owned());
                        break;
                    }
                    Ok(n) => kept += n,
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        failure = Some(error.to_string());
                        break;
                    }
                }
            }
            self.artifact_written += kept as u64;
        }
        let total_bytes = {
            let mut capture = crate::command::lock(&self.capture);
            capture.push(chunk, kept);
            if let Some(error) = failure {
                capture.set_artifact_error(error);
                self.artifact = Artifact::Failed;
            }
            capture.total_bytes()
        };
        if let Some(observer) = &self.observer {
            observer(OutputDelta {
                id: self.id,
                bytes: chunk,
                total_bytes,
            });
        }
    }
}
