//! The guard: a small process that kills a supervisor's commands if this process dies without
//! ending them (SIGKILL, a crash, an abort), when none of our own cleanup can run.
//!
//! # Why a separate process, and why forked without exec
//!
//! `PR_SET_PDEATHSIG` on a command reaches only its shell, not what the shell started, and it
//! fires when the *thread* that forked dies, which in an async runtime is not this process's
//! end. A cgroup would do, but needs a delegated cgroup subtree we usually do not have. So each
//! supervisor starts, before its first command, one guard process holding the read end of a
//! pipe whose write end only this process holds (close-on-exec: commands never inherit it). The
//! kernel closes that end however we end.
//!
//! The guard is a plain `fork` of this process that never execs: the child closes every
//! descriptor but the pipe, and from then on makes only raw system calls (`read`, `open`,
//! `getdents64`, `kill`, `nanosleep`) on buffers allocated before the fork, so nothing in it can
//! take a lock another thread held at the fork. An earlier guard ran a small `sh` script: its
//! exec and start competed with the command for the two cores, so a one-shot `lathe tool` call
//! started it only after 20 ms, and a SIGKILL in those 20 ms left the command running. A fork
//! that goes straight to sleep in `read` is cheap enough to start before the first command.
//!
//! Through the pipe the guard learns the sessions to watch (as 16-byte records, see
//! [`Guard::watch`]): every command's own session, and the sessions of orphans re-parented to
//! us that the `lineage` module attributed to a command. It then reads either `done` (the
//! supervisor ended normally, after killing everything itself: the guard just exits) or end of
//! file (we died). Then it kills, with SIGKILL, every process that carries the supervisor's tag
//! in its environment, or is in one of the watched sessions or process groups, or descends from
//! such a process, and repeats until a scan finds none, so that processes forked meanwhile die
//! too. A watched session is taken with the starttime of its leader: if a process with the
//! leader's pid exists with another start time, the number was reused and the session is not
//! ours any more.
//!
//! The guard is in our session but its own process group, so the terminal's Ctrl-C and hang-up
//! (sent to the foreground group) do not end it, and the orphan sweep and reaper of the `tree`
//! module (which take only processes outside our session) leave it alone. It is named
//! `lathe-guard` (its `comm`, as `ps -o comm` and `top` show it) and is not dumpable, so a
//! command cannot read its memory or environment. What still escapes it: a process that cleared
//! its environment, started a session of its own and lost its parent, if this process was
//! killed before it saw the orphan (see the `lineage` module: at the latest 200 ms later).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use crate::command::lock;

/// A record says: watch this session (and process group) id, led by a process started then.
const KIND_WATCH: u32 = 1;
/// A record says: the supervisor ended normally; exit.
const KIND_DONE: u32 = 2;
const RECORD: usize = 16;

/// Processes one scan of the guard can hold; past it a scan looks at the first ones only (and
/// later rounds at what is left once those are dead).
const MAX_PROCS: usize = 1 << 17;
/// Sessions the guard remembers; past it the oldest are forgotten.
const MAX_SESSIONS: usize = 1 << 14;
/// The most of one environment the guard reads (Linux allows a few MiB; ours are far smaller).
const ENVIRON_BUF: usize = 2 << 20;
/// Kill rounds before the guard gives up (processes stuck in uninterruptible sleep).
const KILL_ROUNDS: usize = 400;

/// One record of the pipe protocol, little-endian: kind (u32), id (i32), start (u64).
fn record(kind: u32, id: i32, start: u64) -> [u8; RECORD] {
    let mut out = [0u8; RECORD];
    out[..4].copy_from_slice(&kind.to_le_bytes());
    out[4..8].copy_from_slice(&id.to_le_bytes());
    out[8..].copy_from_slice(&start.to_le_bytes());
    out
}

#[derive(Debug, Default)]
struct LinkState {
    /// The pipe's write end (non-blocking) once the guard runs.
    writer: Option<OwnedFd>,
    pid: Option<i32>,
    /// Records sent before a delayed guard started.
    pending: Vec<[u8; RECORD]>,
    released: bool,
}

/// Guards alive in this process: every one hears of every watched session, since all of this
/// process's supervisors die together when it is killed.
static LINKS: Mutex<Vec<Weak<Mutex<LinkState>>>> = Mutex::new(Vec::new());
/// Released guards not yet reaped.
static RELEASED: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// A guard being started or running. [`release`](Self::release) it once the supervisor has
/// killed its commands; dropping it releases it too.
#[derive(Debug)]
pub(crate) struct Guard {
    link: Arc<Mutex<LinkState>>,
    /// Wakes a delayed start early (the session ended before the guard was needed).
    cancel: Option<std::sync::mpsc::Sender<()>>,
}

/// A zeroed buffer in a mapping of its own: it costs nothing until written (the guard writes
/// it, the parent never does and unmaps its copy right after the fork), and it leaves the
/// allocator's thresholds alone (glibc raises its mmap threshold to the size of any freed
/// mapped chunk, which would move later large buffers of Lathe's onto the heap).
struct Mapped<T: Copy> {
    ptr: std::ptr::NonNull<T>,
    len: usize,
}

impl<T: Copy> Mapped<T> {
    /// `len` zeroed values; only for types whose all-zero bytes are a valid value.
    fn zeroed(len: usize) -> std::io::Result<Self> {
        let bytes = len * std::mem::size_of::<T>();
        // SAFETY: an anonymous private mapping; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = std::ptr::NonNull::new(ptr.cast::<T>())
            .ok_or_else(|| std::io::Error::other("mmap returned a null pointer"))?;
        Ok(Mapped { ptr, len })
    }
}

impl<T: Copy> std::ops::Deref for Mapped<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the mapping holds `len` zero-initialised values and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> std::ops::DerefMut for Mapped<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for Mapped<T> {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `zeroed`.
        unsafe {
            libc::munmap(
                self.ptr.as_ptr().cast(),
                self.len * std::mem::size_of::<T>(),
            );
        }
    }
}

// SAFETY: `Mapped` owns its mapping like a `Box<[T]>` does its allocation.
unsafe impl<T: Copy + Send> Send for Mapped<T> {}

/// What the guard needs, prepared before the fork (the child allocates nothing).
struct Prepared {
    tag: Vec<u8>,
    not_before: u64,
    pids: Mapped<i32>,
    ppids: Mapped<i32>,
    marks: Mapped<u8>,
    sids: Mapped<i32>,
    sid_starts: Mapped<u64>,
    valid: Mapped<i32>,
    environ: Mapped<u8>,
    dents: Mapped<u8>,
    /// Where this process's command line and environment strings are, from `/proc/self/stat`.
    areas: Option<Areas>,
}

/// The addresses of this process's argument and environment strings.
#[derive(Debug, Clone, Copy)]
struct Areas {
    args: (usize, usize),
    env: (usize, usize),
}

/// Reads the areas once (fields 48-51 of `/proc/self/stat`; zeros when hidden).
fn areas() -> Option<Areas> {
    static AREAS: std::sync::OnceLock<Option<Areas>> = std::sync::OnceLock::new();
    *AREAS.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let rest = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<usize> = rest
            .split_ascii_whitespace()
            .skip(45)
            .take(4)
            .map(|f| f.parse().ok())
            .collect::<Option<Vec<usize>>>()?;
        let [a0, a1, e0, e1] = fields[..] else {
            return None;
        };
        (a0 != 0 && a1 > a0 && e1 >= e0).then_some(Areas {
            args: (a0, a1),
            env: (e0, e1),
        })
    })
}

impl Prepared {
    fn new(tag_name: &str, not_before: u64) -> std::io::Result<Self> {
        Ok(Prepared {
            tag: format!("{tag_name}=").into_bytes(),
            not_before,
            pids: Mapped::zeroed(MAX_PROCS)?,
            ppids: Mapped::zeroed(MAX_PROCS)?,
            marks: Mapped::zeroed(MAX_PROCS)?,
            sids: Mapped::zeroed(MAX_SESSIONS)?,
            sid_starts: Mapped::zeroed(MAX_SESSIONS)?,
            valid: Mapped::zeroed(MAX_SESSIONS)?,
            environ: Mapped::zeroed(ENVIRON_BUF)?,
            dents: Mapped::zeroed(64 << 10)?,
            areas: areas(),
        })
    }
}

impl Guard {
    /// Starts the guard for commands tagged `tag_name` and started after `not_before` (clock
    /// ticks after boot). Without a `delay` the guard is forked before this returns, so no
    /// command runs unguarded; with one, a thread forks it after `delay` unless released
    /// before (records sent meanwhile are kept for it).
    pub(crate) fn start(
        tag_name: &str,
        not_before: u64,
        delay: Option<Duration>,
    ) -> std::io::Result<Guard> {
        let link = Arc::new(Mutex::new(LinkState::default()));
        {
            let mut links = lock(&LINKS);
            links.retain(|l| l.strong_count() > 0);
            links.push(Arc::downgrade(&link));
        }
        match delay {
            None => {
                let (writer, pid) = fork_guard(&mut Prepared::new(tag_name, not_before)?)?;
                {
                    let mut state = lock(&link);
                    state.writer = Some(writer);
                    state.pid = Some(pid);
                }
                Ok(Guard { link, cancel: None })
            }
            Some(delay) => {
                let (cancel, cancelled) = std::sync::mpsc::channel::<()>();
                let mut prepared = Prepared::new(tag_name, not_before)?;
                let weak = Arc::downgrade(&link);
                std::thread::Builder::new()
                    .name("lathe-guard".to_owned())
                    .spawn(move || {
                        if !matches!(
                            cancelled.recv_timeout(delay),
                            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                        ) {
                            return;
                        }
                        let Some(link) = weak.upgrade() else { return };
                        let mut state = lock(&link);
                        if state.released {
                            return;
                        }
                        match fork_guard(&mut prepared) {
                            Ok((writer, pid)) => {
                                for record in std::mem::take(&mut state.pending) {
                                    send(&writer, &record);
                                }
                                state.writer = Some(writer);
                                state.pid = Some(pid);
                            }
                            Err(error) => tracing::warn!(
                                "cannot start the guard that kills commands if lathe is killed: \
                                 {error}"
                            ),
                        }
                    })?;
                Ok(Guard {
                    link,
                    cancel: Some(cancel),
                })
            }
        }
    }

    /// Tells the guard that everything is dead already; it exits at once and is reaped later
    /// (nothing waits for it).
    pub(crate) fn release(self) {
        drop(self);
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(cancel) = self.cancel.take() {
            let _ = cancel.send(());
        }
        let mut state = lock(&self.link);
        state.released = true;
        if let Some(writer) = state.writer.take() {
            send(&writer, &record(KIND_DONE, 0, 0));
        }
        if let Some(pid) = state.pid.take() {
            lock(&RELEASED).push(pid);
        }
        drop(state);
        reap_released();
    }
}

/// Tells every guard of this process to watch session (and process group) `id`, whose leader
/// started at `start` (clock ticks after boot; 0 if unknown).
pub(crate) fn watch(id: i32, start: u64) {
    if id <= 1 {
        return;
    }
    let record = record(KIND_WATCH, id, start);
    let links: Vec<Arc<Mutex<LinkState>>> = lock(&LINKS).iter().filter_map(Weak::upgrade).collect();
    for link in links {
        let mut state = lock(&link);
        if state.released {
            continue;
        }
        match &state.writer {
            Some(writer) => send(writer, &record),
            None => state.pending.push(record),
        }
    }
}

/// The pids of this process's guards, running or released and not yet reaped.
pub(crate) fn pids() -> Vec<i32> {
    let mut pids: Vec<i32> = lock(&LINKS)
        .iter()
        .filter_map(Weak::upgrade)
        .filter_map(|link| lock(&link).pid)
        .collect();
    pids.extend(lock(&RELEASED).iter().copied());
    pids
}

/// Reaps released guards that have exited.
pub(crate) fn reap_released() {
    lock(&RELEASED).retain(|&pid| {
        // SAFETY: waitpid on a child of ours, without blocking.
        let ret = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
        ret == 0
    });
}

/// Writes one record without blocking (a guard that stopped reading must not stall us).
fn send(writer: &OwnedFd, record: &[u8; RECORD]) {
    // SAFETY: writing a valid buffer to a descriptor we own.
    let written = unsafe { libc::write(writer.as_raw_fd(), record.as_ptr().cast(), RECORD) };
    if written != RECORD as isize {
        tracing::warn!(
            "cannot tell the guard about a session: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// Forks the guard; returns the pipe's write end and the guard's pid.
fn fork_guard(prepared: &mut Prepared) -> std::io::Result<(OwnedFd, i32)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here only.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(write_end.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(
            write_end.as_raw_fd(),
            libc::F_SETFL,
            flags | libc::O_NONBLOCK,
        );
    }
    let read_fd = read_end.as_raw_fd();
    // SAFETY: the child runs `guard_main` only, which makes raw system calls on memory
    // prepared before the fork, never allocates, locks or unwinds, and ends in `_exit`.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: see above; this is the child.
        unsafe { guard_main(read_fd, prepared) }
    }
    // SAFETY: plain setpgid on our own child (it does the same itself; whichever runs first).
    unsafe {
        libc::setpgid(pid, pid);
    }
    drop(read_end);
    Ok((write_end, pid))
}

/// The guard's life. Only async-signal-safe calls: this runs in the child of a fork of a
/// multi-threaded process.
///
/// # Safety
/// Must be called only in the child of a fork, with `read_fd` the pipe's read end.
unsafe fn guard_main(read_fd: i32, p: &mut Prepared) -> ! {
    // SAFETY: raw system calls on valid arguments; see the function's contract.
    unsafe {
        libc::setpgid(0, 0);
        libc::prctl(libc::PR_SET_NAME, c"lathe-guard".as_ptr());
        libc::prctl(libc::PR_SET_DUMPABLE, 0);
        // The command line reads `lathe guard` (not Lathe's, which may hold a command and
        // its markers), and the environment strings (Lathe's, with its keys) are wiped: this
        // is the child's own copy of that memory, and nothing in it reads them any more.
        if let Some(areas) = p.areas {
            let (start, end) = areas.env;
            std::ptr::write_bytes(start as *mut u8, 0, end - start);
            let (start, end) = areas.args;
            std::ptr::write_bytes(start as *mut u8, 0, end - start);
            let name = b"lathe guard";
            std::ptr::copy_nonoverlapping(
                name.as_ptr(),
                start as *mut u8,
                name.len().min(end - start - 1),
            );
        }
        let mut mask: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut mask);
        libc::sigprocmask(libc::SIG_SETMASK, &mask, std::ptr::null_mut());
        for signal in 1..32 {
            if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
        // Only the pipe (as descriptor 3) and /dev/null on 0-2 stay open: the guard must not
        // keep Lathe's stdout, sockets or other pipes open after Lathe is gone.
        let high = libc::fcntl(read_fd, libc::F_DUPFD, 100);
        let pipe = if high >= 0 { high } else { read_fd };
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        let pipe = if libc::dup2(pipe, 3) == 3 { 3 } else { pipe };
        let first_closed = if pipe == 3 { 4 } else { 3 };
        if libc::syscall(libc::SYS_close_range, first_closed, u32::MAX, 0) != 0 {
            for fd in first_closed..4096 {
                if fd != pipe {
                    libc::close(fd);
                }
            }
        }
        libc::chdir(c"/".as_ptr());
        let sessions = listen(pipe, &mut p.sids, &mut p.sid_starts);
        kill_all(p, sessions);
        libc::_exit(0)
    }
}

/// Reads records until `done` (exits) or end of file (returns the number of sessions heard).
fn listen(pipe: i32, sids: &mut [i32], starts: &mut [u64]) -> usize {
    let mut buf = [0u8; 4096];
    let mut have = 0usize;
    let mut heard = 0usize;
    loop {
        let room = &mut buf[have..];
        // SAFETY: reading into the unused part of a stack buffer.
        let n = unsafe { libc::read(pipe, room.as_mut_ptr().cast(), room.len()) };
        if n < 0 {
            // SAFETY: reading errno of this (only) thread.
            if unsafe { *libc::__errno_location() } == libc::EINTR {
                continue;
            }
            return heard;
        }
        if n == 0 {
            return heard;
        }
        have += n as usize;
        let mut at = 0;
        while have - at >= RECORD {
            let rec = &buf[at..at + RECORD];
            let kind = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
            let id = i32::from_le_bytes([rec[4], rec[5], rec[6], rec[7]]);
            let mut start = [0u8; 8];
            start.copy_from_slice(&rec[8..16]);
            match kind {
                // SAFETY: `_exit` is async-signal-safe.
                KIND_DONE => unsafe { libc::_exit(0) },
                KIND_WATCH => {
                    let slot = heard % MAX_SESSIONS;
                    if let (Some(sid), Some(s)) = (sids.get_mut(slot), starts.get_mut(slot)) {
                        *sid = id;
                        *s = u64::from_le_bytes(start);
                    }
                    heard += 1;
                }
                _ => {}
            }
            at += RECORD;
        }
        buf.copy_within(at..have, 0);
        have -= at;
    }
}

/// Kills, round after round until none is found, every process with the tag, in a watched
/// session or process group, or descending from one of those.
fn kill_all(p: &mut Prepared, heard: usize) {
    let Prepared {
        tag,
        not_before,
        pids,
        ppids,
        marks,
        sids,
        sid_starts,
        valid,
        environ,
        dents,
        areas: _,
    } = p;
    // SAFETY: getpid cannot fail.
    let me = unsafe { libc::getpid() };
    let sessions = heard.min(MAX_SESSIONS).min(sids.len());
    let mut stat_buf = [0u8; 1024];
    for _ in 0..KILL_ROUNDS {
        // Sessions whose leader's pid now names another process are not ours any more.
        let mut n_valid = 0usize;
        for (&sid, &start) in sids.iter().zip(sid_starts.iter()).take(sessions) {
            let reused =
                start != 0 && read_stat(sid, &mut stat_buf).is_some_and(|s| s.starttime != start);
            if !reused && let Some(slot) = valid.get_mut(n_valid) {
                *slot = sid;
                n_valid += 1;
            }
        }
        let valid = &mut valid[..n_valid];
        valid.sort_unstable();
        let mut n = 0usize;
        let mut sorted = true;
        scan_proc(dents, &mut stat_buf, |stat| {
            if n >= pids.len() || stat.pid == me || stat.pid <= 1 || !stat.alive {
                return;
            }
            let by_session = valid.binary_search(&stat.session).is_ok()
                || valid.binary_search(&stat.pgrp).is_ok();
            let marked = by_session
                || (stat.starttime >= *not_before && environ_has(stat.pid, tag, environ));
            if n > 0 && pids[n - 1] >= stat.pid {
                sorted = false;
            }
            pids[n] = stat.pid;
            ppids[n] = stat.ppid;
            marks[n] = u8::from(marked);
            n += 1;
        });
        let (pids, ppids, marks) = (&pids[..n], &ppids[..n], &mut marks[..n]);
        // Descendants of marked processes are marked too (a few passes: trees are shallow).
        for _ in 0..64 {
            let mut changed = false;
            for i in 0..n {
                if marks[i] != 0 {
                    continue;
                }
                let parent = ppids[i];
                let index = if sorted {
                    pids.binary_search(&parent).ok()
                } else {
                    pids.iter().position(|&q| q == parent)
                };
                if index.is_some_and(|j| marks[j] != 0) {
                    marks[i] = 1;
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut found = false;
        for (&pid, &mark) in pids.iter().zip(marks.iter()) {
            if mark != 0 {
                // SAFETY: kill(2) is async-signal-safe.
                unsafe { libc::kill(pid, libc::SIGKILL) };
                found = true;
            }
        }
        if !found {
            return;
        }
        let pause = libc::timespec {
            tv_sec: 0,
            tv_nsec: 2_000_000,
        };
        // SAFETY: nanosleep with a valid duration.
        unsafe { libc::nanosleep(&pause, std::ptr::null_mut()) };
    }
}

struct Stat {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    session: i32,
    starttime: u64,
    alive: bool,
}

/// Calls `each` with the stat line of every process in `/proc`.
fn scan_proc(dents: &mut [u8], stat_buf: &mut [u8; 1024], mut each: impl FnMut(&Stat)) {
    // SAFETY: opening a constant NUL-terminated path.
    let dir = unsafe { libc::open(c"/proc".as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY) };
    if dir < 0 {
        return;
    }
    loop {
        // SAFETY: getdents64 into a buffer of that many bytes.
        let n =
            unsafe { libc::syscall(libc::SYS_getdents64, dir, dents.as_mut_ptr(), dents.len()) };
        if n <= 0 {
            break;
        }
        let buf = &dents[..(n as usize).min(dents.len())];
        let mut at = 0usize;
        // linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
        while at + 19 < buf.len() {
            let reclen = usize::from(u16::from_ne_bytes([buf[at + 16], buf[at + 17]]));
            if reclen < 19 || at + reclen > buf.len() {
                break;
            }
            let name = &buf[at + 19..at + reclen];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            at += reclen;
            let Some(pid) = parse_int(name).and_then(|v| i32::try_from(v).ok()) else {
                continue;
            };
            if let Some(stat) = read_stat(pid, stat_buf) {
                each(&stat);
            }
        }
    }
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(dir) };
}

/// `/proc/<pid>/<file>` as a NUL-terminated path in `out`.
fn proc_path<'a>(pid: i32, file: &[u8], out: &'a mut [u8; 64]) -> &'a [u8] {
    let mut digits = [0u8; 12];
    let mut d = 0;
    let mut v = pid.unsigned_abs();
    loop {
        digits[d] = b'0' + (v % 10) as u8;
        d += 1;
        v /= 10;
        if v == 0 || d == digits.len() {
            break;
        }
    }
    let mut at = 0;
    for &b in b"/proc/" {
        out[at] = b;
        at += 1;
    }
    for i in (0..d).rev() {
        out[at] = digits[i];
        at += 1;
    }
    out[at] = b'/';
    at += 1;
    for &b in file.iter().take(out.len() - at - 1) {
        out[at] = b;
        at += 1;
    }
    out[at] = 0;
    &out[..=at]
}

/// Reads a whole small file into `buf`; returns the bytes read.
fn read_file(path: &[u8], buf: &mut [u8]) -> Option<usize> {
    // SAFETY: `path` is NUL-terminated; reads go into `buf`.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_RDONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return None;
        }
        let mut have = 0usize;
        while have < buf.len() {
            let n = libc::read(fd, buf[have..].as_mut_ptr().cast(), buf.len() - have);
            if n <= 0 {
                break;
            }
            have += n as usize;
        }
        libc::close(fd);
        Some(have)
    }
}

fn read_stat(pid: i32, buf: &mut [u8; 1024]) -> Option<Stat> {
    let mut path = [0u8; 64];
    let path = proc_path(pid, b"stat", &mut path);
    let len = read_file(path, buf)?;
    let content = &buf[..len];
    let close = content.iter().rposition(|&b| b == b')')?;
    let mut fields = content[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty());
    // Field 3 of proc(5) is the state; starttime is field 22.
    let state = *fields.next()?.first()?;
    let ppid = parse_int(fields.next()?)? as i32;
    let pgrp = parse_int(fields.next()?)? as i32;
    let session = parse_int(fields.next()?)? as i32;
    let starttime = parse_int(fields.nth(15)?)?;
    Some(Stat {
        pid,
        ppid,
        pgrp,
        session,
        starttime,
        alive: !matches!(state, b'Z' | b'X' | b'x'),
    })
}

fn parse_int(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v = 0u64;
    for &b in digits {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Some(v)
}

/// Whether `pid`'s environment has an entry starting with `tag`.
fn environ_has(pid: i32, tag: &[u8], buf: &mut [u8]) -> bool {
    let mut path = [0u8; 64];
    let path = proc_path(pid, b"environ", &mut path);
    let Some(len) = read_file(path, buf) else {
        return false;
    };
    buf[..len.min(buf.len())]
        .split(|&b| b == 0)
        .any(|entry| entry.starts_with(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_numbers() {
        let mut out = [0u8; 64];
        assert_eq!(proc_path(4242, b"stat", &mut out), b"/proc/4242/stat\0");
        assert_eq!(proc_path(7, b"environ", &mut out), b"/proc/7/environ\0");
        assert_eq!(parse_int(b"123"), Some(123));
        assert_eq!(parse_int(b"12a"), None);
        assert_eq!(parse_int(b""), None);
        let me = std::process::id() as i32;
        let stat = read_stat(me, &mut [0u8; 1024]).unwrap();
        let reference = crate::procfs::read_stat(me).unwrap();
        assert_eq!(
            (stat.ppid, stat.pgrp, stat.session, stat.starttime),
            (
                reference.ppid,
                reference.pgrp,
                reference.session,
                reference.starttime
            )
        );
        assert!(stat.alive);
    }
}
