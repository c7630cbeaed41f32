//! Finding and killing every process a command started, and reaping the orphans left to us.
//!
//! # Why a child subreaper and a `/proc` scan
//!
//! Killing the command's process group misses descendants that left it (`setsid`, `nohup` with
//! a new group, a daemon's double fork): they are re-parented to PID 1 and out of reach. The
//! alternatives were a cgroup (needs a delegated, writable cgroup v2 subtree, which unprivileged
//! processes and most containers do not have) and a PID namespace (needs user namespaces, often
//! disabled, and changes the pids the command sees). Instead this process declares itself a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`, unprivileged, Linux 3.4+): orphans of our commands
//! are re-parented to us rather than to PID 1, so nothing escapes the machine's view of our
//! tree, and we reap them. A command's processes are found by a scan of `/proc`, by three
//! independent marks so that losing one is not enough to escape:
//! - the parent chain from the command's shell (and from every member found);
//! - the command's session and process group, which the shell leads (trusted only while the
//!   shell is not yet reaped, so its pid cannot have been reused);
//! - an environment variable naming the command, which every descendant inherits unless it
//!   deliberately clears its environment.
//!
//! The kill repeats "scan, signal what is found" until a scan finds nothing, so processes forked
//! during the kill die too.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getsid};

use crate::procfs::{self, ProcStat, TagMatch};

/// Pause between scans while waiting for processes to die: short, since most die at once.
const KILL_POLL: Duration = Duration::from_millis(10);
/// Scans in the SIGKILL phase before giving up on a process that will not die (one stuck in
/// uninterruptible sleep on a dead network file system, for instance): about 3 s.
const KILL_ROUNDS: usize = 300;
/// How often the background reaper looks for zombie orphans while a supervisor exists.
const REAP_INTERVAL: Duration = Duration::from_secs(2);

/// Pids of our own commands' shells: tokio reaps them and must get their exit status, so the
/// orphan reaper leaves them alone. Held while spawning so no new child is seen unregistered.
static OWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// Supervisors alive in this process; the background reaper only works while there are any.
static LIVE_SUPERVISORS: AtomicUsize = AtomicUsize::new(0);
static SUBREAPER: OnceLock<bool> = OnceLock::new();

fn owned() -> MutexGuard<'static, BTreeSet<i32>> {
    OWNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes this process the child subreaper (once) and starts the background reaper. Returns
/// whether the subreaper is in place; without it, escaped processes are still found by their
/// environment tag, but only until they are re-parented to PID 1 and exit unreaped by us.
pub(crate) fn ensure_subreaper() -> bool {
    *SUBREAPER.get_or_init(|| {
        let set = nix::sys::prctl::set_child_subreaper(true).is_ok();
        if !set {
            tracing::warn!("cannot become a child subreaper; escaped processes rely on tags");
        }
        let spawned = std::thread::Builder::new()
            .name("lathe-exec-reaper".into())
            .spawn(|| {
                loop {
                    std::thread::sleep(REAP_INTERVAL);
                    if LIVE_SUPERVISORS.load(Ordering::Relaxed) > 0 {
                        reap_orphans();
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::warn!("cannot start the orphan reaper thread: {error}");
        }
        set
    })
}

/// Counts a supervisor in (`true`) or out (`false`) for the background reaper.
pub(crate) fn supervisor_alive(alive: bool) {
    if alive {
        LIVE_SUPERVISORS.fetch_add(1, Ordering::Relaxed);
    } else {
        LIVE_SUPERVISORS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Spawns with `spawn` while holding the registry of owned pids, and registers the new pid, so
/// the orphan reaper can never take the exit status tokio is waiting for.
pub(crate) fn spawn_owned<T>(
    spawn: impl FnOnce() -> io::Result<T>,
    pid_of: impl Fn(&T) -> Option<u32>,
) -> io::Result<T> {
    let mut owned = owned();
    let child = spawn()?;
    if let Some(pid) = pid_of(&child) {
        owned.insert(pid as i32);
    }
    Ok(child)
}

/// Forgets an owned pid once tokio has reaped it.
pub(crate) fn release_owned(pid: i32) {
    owned().remove(&pid);
}

/// Reaps zombies re-parented to us: children of this process that are outside its session (our
/// commands' descendants; anything else this program spawns stays in our session) and are not a
/// shell whose status tokio is waiting for. Only pids seen as zombies are waited for, one by one,
/// never `waitpid(-1)`, which would steal tokio's children.
pub(crate) fn reap_orphans() {
    let me = std::process::id() as i32;
    let Ok(my_session) = getsid(None) else {
        return;
    };
    let zombies: Vec<ProcStat> = procfs::scan()
        .into_iter()
        .filter(|p| p.ppid == me && p.state == b'Z' && p.session != my_session.as_raw())
        .collect();
    if zombies.is_empty() {
        return;
    }
    let owned = owned();
    for zombie in zombies {
        if !owned.contains(&zombie.pid) {
            let _ = waitpid(Pid::from_raw(zombie.pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

/// Which processes belong to one command (or to all commands of a supervisor).
#[derive(Debug, Clone)]
pub(crate) struct TreeTarget {
    /// The command's shell, leader of its session and process group; only while not reaped.
    pub(crate) main: Option<i32>,
    /// The environment entry the command's processes inherit.
    pub(crate) tag: TagMatch,
    /// Processes started before this (clock ticks after boot) cannot carry the tag.
    pub(crate) not_before: u64,
}

/// The live processes of `target`, never this process itself nor PID 1.
pub(crate) fn members(target: &TreeTarget) -> Vec<ProcStat> {
    let me = std::process::id() as i32;
    let procs = procfs::scan();
    let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
    let mut selected: HashSet<i32> = HashSet::new();
    let mut queue: VecDeque<i32> = VecDeque::new();
    for (i, p) in procs.iter().enumerate() {
        children.entry(p.ppid).or_default().push(i);
        if p.pid == me || p.pid == 1 || !p.is_alive() {
            continue;
        }
        let by_leader = target
            .main
            .is_some_and(|m| p.pid == m || p.session == m || p.pgrp == m);
        if by_leader
            || (p.starttime >= target.not_before && procfs::environ_has(p.pid, &target.tag))
        {
            selected.insert(p.pid);
            queue.push_back(p.pid);
        }
    }
    if let Some(main) = target.main {
        queue.push_back(main);
    }
    while let Some(pid) = queue.pop_front() {
        for &i in children.get(&pid).into_iter().flatten() {
            let child = &procs[i];
            if child.pid != me && child.is_alive() && selected.insert(child.pid) {
                queue.push_back(child.pid);
            }
        }
    }
    procs
        .into_iter()
        .filter(|p| selected.contains(&p.pid))
        .collect()
}

/// Kills every process of `target`: SIGTERM (and SIGCONT, so stopped ones can act on it), up to
/// `grace` for them to exit, then SIGKILL until a scan finds none. Blocking; returns how many
/// distinct processes were signalled.
pub(crate) fn kill_tree(target: &TreeTarget, grace: Duration) -> usize {
    let mut signalled: HashSet<(i32, u64)> = HashSet::new();
    let started = Instant::now();
    if !grace.is_zero() {
        if let Some(main) = target.main {
            let _ = killpg(Pid::from_raw(main), Signal::SIGTERM);
            let _ = killpg(Pid::from_raw(main), Signal::SIGCONT);
        }
        loop {
            let alive = members(target);
            if alive.is_empty() {
                return signalled.len();
            }
            for p in &alive {
                if signalled.insert((p.pid, p.starttime)) {
                    let _ = kill(Pid::from_raw(p.pid), Signal::SIGTERM);
                    let _ = kill(Pid::from_raw(p.pid), Signal::SIGCONT);
                }
            }
            if started.elapsed() >= grace {
                break;
            }
            reap_orphans();
            std::thread::sleep(KILL_POLL);
        }
    }
    for _ in 0..KILL_ROUNDS {
        let alive = members(target);
        if alive.is_empty() {
            return signalled.len();
        }
        if let Some(main) = target.main {
            let _ = killpg(Pid::from_raw(main), Signal::SIGKILL);
        }
        for p in &alive {
            signalled.insert((p.pid, p.starttime));
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
        }
        reap_orphans();
        std::thread::sleep(KILL_POLL);
    }
    let left: Vec<i32> = members(target).iter().map(|p| p.pid).collect();
    if !left.is_empty() {
        tracing::warn!("processes {left:?} survived SIGKILL (uninterruptible sleep?)");
    }
    signalled.len()
}
