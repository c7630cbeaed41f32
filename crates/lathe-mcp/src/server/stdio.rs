//! Serving one client over the process's stdin and stdout.

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use anyhow::Context;
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use super::handler::{LatheServer, Scope, Shared};
use super::wire::LineTransport;

/// Serves until the client closes stdin or a signal arrives, then ends the session (every
/// command it started is killed). Returns the number of the signal that ended it, if one did.
pub async fn serve(shared: Arc<Shared>) -> anyhow::Result<Option<i32>> {
    let (input, output) = take_stdio().context("cannot take over stdin and stdout")?;
    let session = shared.session()?;
    let closed = CancellationToken::new();
    let service_ct = CancellationToken::new();

    // The moment the connection ends, the session's commands die: a client waits only briefly
    // (the Python SDK: 2 s) before it kills the server, and the SDK would first spend up to 5 s
    // draining responses nobody reads.
    tokio::spawn({
        let closed = closed.clone();
        let session = Arc::clone(&session);
        async move {
            closed.cancelled().await;
            session.shutdown();
        }
    });
    let signalled = Arc::new(std::sync::atomic::AtomicI32::new(0));
    let signal = tokio::spawn(stop_on_signal(
        termination_signals(),
        closed.clone(),
        service_ct.clone(),
        Arc::clone(&signalled),
    ));

    let server = LatheServer::new(
        shared,
        Scope::Connection(Arc::clone(&session)),
        closed.clone(),
    );
    let transport = LineTransport::new(input, output, closed.clone());
    match server.serve_with_ct(transport, service_ct).await {
        Ok(running) => match running.waiting().await {
            Ok(reason) => tracing::info!(?reason, "connection ended"),
            Err(err) => tracing::error!("the server task failed: {err}"),
        },
        Err(err) => tracing::warn!("the connection ended before it started: {err}"),
    }
    closed.cancel();
    session.shutdown();
    lathe_config::state::remove_if_empty(session.state_dir());
    signal.abort();
    let number = signalled.load(std::sync::atomic::Ordering::SeqCst);
    Ok((number != 0).then_some(number))
}

/// SIGTERM, SIGINT and SIGHUP end the connection the orderly way: the session's commands are
/// killed before the process exits (they run in their own process groups, so a signal to ours
/// would not reach them).
async fn stop_on_signal(
    signals: lathe_config::signals::Listener,
    closed: CancellationToken,
    service: CancellationToken,
    signalled: Arc<std::sync::atomic::AtomicI32>,
) {
    let number = signals.recv().await;
    signalled.store(number, std::sync::atomic::Ordering::SeqCst);
    closed.cancel();
    service.cancel();
}

/// SIGTERM, SIGINT and SIGHUP, listened for from now on (before the first message is read).
fn termination_signals() -> lathe_config::signals::Listener {
    use tokio::signal::unix::SignalKind;
    lathe_config::signals::listen(&[
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ])
}

/// Moves the protocol off fds 0 and 1: private close-on-exec copies carry it, fd 0 becomes
/// `/dev/null` and fd 1 a copy of stderr. Commands the tools start can then neither read the
/// client's messages nor write into the protocol stream, whatever they inherit, and a stray
/// print anywhere in the process lands in the log instead of corrupting a response.
fn take_stdio() -> std::io::Result<(tokio::fs::File, tokio::fs::File)> {
    let input = dup_cloexec(libc::STDIN_FILENO)?;
    let output = dup_cloexec(libc::STDOUT_FILENO)?;
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    redirect(std::os::fd::AsRawFd::as_raw_fd(&null), libc::STDIN_FILENO)?;
    redirect(libc::STDERR_FILENO, libc::STDOUT_FILENO)?;
    Ok((
        tokio::fs::File::from_std(std::fs::File::from(input)),
        tokio::fs::File::from_std(std::fs::File::from(output)),
    ))
}

/// Sends everything written to stderr (the log) to `file`, appending.
pub fn log_to(file: &std::path::Path) -> anyhow::Result<()> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .with_context(|| format!("cannot open log file {}", file.display()))?;
    redirect(std::os::fd::AsRawFd::as_raw_fd(&log), libc::STDERR_FILENO)
        .with_context(|| format!("cannot log to {}", file.display()))
}

fn dup_cloexec(fd: RawFd) -> std::io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC only reads `fd`; the new descriptor is ours alone.
    let new = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 3) };
    if new < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `new` is a freshly created descriptor nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}

fn redirect(from: RawFd, to: RawFd) -> std::io::Result<()> {
    // SAFETY: dup2 replaces `to` (a standard stream this process owns) atomically; no Rust
    // object owns fds 0 and 1 as `OwnedFd`, and std's handles keep working on the new target.
    if unsafe { libc::dup2(from, to) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
