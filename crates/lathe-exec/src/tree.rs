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
//! during the kill die too. One case carries none of the three marks: a process that cleared its
//! environment, started its own session and lost its parent. It is still re-parented to us: the
//! `lineage` module attributes such orphans to a command (by session, process group and start
//! time), and a kill takes the command's orphans, their sessions and their groups as a fourth
//! mark. And when the last supervisor of the process ends, every orphan of ours from outside our
//! session is killed as well.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::io;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getsid};

use crate::guard;
use crate::lineage::{self, Filter};
use crate::procfs::{self, ProcStat, TagMatch};

/// Pause between scans while waiting for processes to die: short, since most die at once.
const KILL_POLL: Duration = Duration::from_millis(10);
/// Scans while freezing a tree before going on with what was found: each round stops the new
/// members, so a tree settles in two or three; the bound only stops a pathological fork loop.
const FREEZE_ROUNDS: usize = 50;
/// Scans in the SIGKILL phase before giving up on a process that will not die (one stuck in
/// uninterruptible sleep on a dead network file system, for instance): about 3 s.
const KILL_ROUNDS: usize = 300;
/// How often the background reaper looks for zombie orphans while a supervisor exists, in
/// rounds of [`lineage::ADOPT_INTERVAL`] (about 2 s).
const REAP_EVERY: u32 = 10;

/// Pids of our own commands' shells: tokio reaps them and must get their exit status, so the
/// orphan reaper leaves them alone. Held while spawning so no new child is seen unregistered.
static OWNED: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
/// Supervisors alive in this process; the background reaper only works while there are any.
/// A mutex, not an atomic: the last supervisor sweeps unattributed orphans while holding it, so
/// no new supervisor can start commands whose orphans the sweep would take.
static LIVE_SUPERVISORS: Mutex<usize> = Mutex::new(0);
static SUBREAPER: OnceLock<bool> = OnceLock::new();

/// Whether this process has any child at all (running or zombie), without reaping any.
/// With the subreaper in place every process our commands started descends from one of our
/// children, so "no child" proves there is nothing to kill and saves a scan of `/proc`.
fn has_children() -> bool {
    // SAFETY: `info` is plain data the kernel fills; WNOWAIT leaves every child's status for
    // its owner (tokio), WNOHANG makes the call return at once.
    let ret = unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        libc::waitid(
            libc::P_ALL,
            0,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT | libc::__WALL,
        )
    };
    !(ret == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::ECHILD))
}

/// Whether this process has a child other than its guards: `has_children` first (one system
/// call), then, since a guard is a child too, the `children` files of our threads. Where those
/// files do not exist, any child counts.
fn has_command_children() -> bool {
    if !has_children() {
        return false;
    }
    let guards = guard::pids();
    if guards.is_empty() {
        return true;
    }
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            return true;
        };
        if text
            .split_ascii_whitespace()
            .filter_map(|pid| pid.parse::<i32>().ok())
            .any(|pid| !guards.contains(&pid))
        {
            return true;
        }
    }
    false
}

pub(crate) fn owned() -> MutexGuard<'static, BTreeSet<i32>> {
    OWNED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes this process the child subreaper (once) and starts the background reaper. Returns
/// whether the subreaper is in place; without it, escaped processes are still found by their
/// environment tag, but only until they are re-parented to PID 1 and exit unreaped by us.
#[expect(
    clippy::disallowed_methods,
    reason = "a short wait at process start, before any async work"
)]
pub(crate) fn ensure_subreaper() -> bool {
    *SUBREAPER.get_or_init(|| {
        let set = nix::sys::prctl::set_child_subreaper(true).is_ok();
        if !set {
            tracing::warn!("cannot become a child subreaper; escaped processes rely on tags");
        }
        let spawned = std::thread::Builder::new()
            .name("lathe-exec-reaper".into())
            .spawn(|| {
                for round in 1u32.. {
                    std::thread::sleep(lineage::ADOPT_INTERVAL);
                    if *live_supervisors() == 0 {
                        continue;
                    }
                    lineage::adopt();
                    if round % REAP_EVERY == 0 {
                        reap_orphans();
                        lineage::prune(&procfs::scan());
                        guard::reap_released();
                    }
                }
            });
        if let Err(error) = spawned {
            tracing::warn!("cannot start the orphan reaper thread: {error}");
        }
        set
    })
}

fn live_supervisors() -> MutexGuard<'static, usize> {
    LIVE_SUPERVISORS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Counts a supervisor in.
pub(crate) fn supervisor_started() {
    *live_supervisors() += 1;
}

/// Counts a supervisor out.
pub(crate) fn supervisor_ended() {
    let mut live = live_supervisors();
    *live = live.saturating_sub(1);
}

/// Kills a supervisor's processes at its end (`target`). When it is the only supervisor left,
/// the same scan also takes the orphans re-parented to us that no tag attributes to a session
/// (a process that cleared its environment, started its own session and lost its parent): with
/// no other supervisor alive, they can only be ours. The registry stays locked meanwhile, so no
/// new supervisor can start commands whose orphans the sweep would take.
pub(crate) fn kill_at_end(mut target: TreeTarget, grace: Duration) -> usize {
    let live = live_supervisors();
    target.orphans = *live <= 1;
    let killed = kill_tree(&target, grace);
    drop(live);
    killed
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
    /// The commands' shells, leaders of their sessions and process groups. Only shells not yet
    /// reaped belong here: until then their pids cannot be reused.
    pub(crate) mains: Vec<i32>,
    /// The environment entry the commands' processes inherit.
    pub(crate) tag: Option<TagMatch>,
    /// Processes started before this (clock ticks after boot) cannot carry the tag.
    pub(crate) not_before: u64,
    /// Also every orphan re-parented to us from outside our session (see [`kill_at_end`]).
    pub(crate) orphans: bool,
    /// Also the orphans the `lineage` module attributed to this command or supervisor, and
    /// our descendants in their sessions and process groups.
    pub(crate) owner: Option<Filter>,
}

type ProcKey = (i32, u64);

fn key(p: &ProcStat) -> ProcKey {
    (p.pid, p.starttime)
}

/// The live processes of `target`, plus the live processes in `known` (found by an earlier
/// scan: their parent may have died since, breaking the chain), plus all their descendants.
/// Never this process itself nor PID 1.
pub(crate) fn members(target: &TreeTarget, known: &HashSet<ProcKey>) -> Vec<ProcStat> {
    let me = std::process::id() as i32;
    let my_session = getsid(None).map_or(0, Pid::as_raw);
    let procs = procfs::scan();
    let owned_pids: BTreeSet<i32> = if target.orphans {
        owned().clone()
    } else {
        BTreeSet::new()
    };
    let mut children: HashMap<i32, Vec<usize>> = HashMap::new();
    for (i, p) in procs.iter().enumerate() {
        children.entry(p.ppid).or_default().push(i);
    }
    let (adopted, groups) = match &target.owner {
        Some(filter) => lineage::adopted_for(filter),
        None => Default::default(),
    };
    // Sessions and groups are matched among our own descendants only: a session id of an
    // orphan long gone may name someone else's session by now.
    let ours = if groups.is_empty() {
        HashSet::new()
    } else {
        descendants(me, &procs, &children)
    };
    let mut selected: HashSet<i32> = HashSet::new();
    let mut queue: VecDeque<i32> = VecDeque::new();
    for p in &procs {
        if p.pid == me || p.pid == 1 || !p.is_alive() {
            continue;
        }
        let by_lineage = adopted.contains(&key(p))
            || (p.session != my_session
                && (groups.contains(&p.session) || groups.contains(&p.pgrp))
                && ours.contains(&p.pid));
        let by_leader = target
            .mains
            .iter()
            .any(|&m| p.pid == m || p.session == m || p.pgrp == m);
        let by_tag = || {
            target.tag.as_ref().is_some_and(|tag| {
                p.starttime >= target.not_before && procfs::environ_has(p.pid, tag)
            })
        };
        let orphan = target.orphans
            && p.ppid == me
            && p.session != my_session
            && !owned_pids.contains(&p.pid);
        if by_leader || by_lineage || known.contains(&key(p)) || orphan || by_tag() {
            selected.insert(p.pid);
            queue.push_back(p.pid);
        }
    }
    queue.extend(target.mains.iter().copied());
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

/// The pids of every descendant of `root` in `procs`.
fn descendants(root: i32, procs: &[ProcStat], children: &HashMap<i32, Vec<usize>>) -> HashSet<i32> {
    let mut found = HashSet::new();
    let mut queue = VecDeque::from([root]);
    while let Some(pid) = queue.pop_front() {
        for &i in children.get(&pid).into_iter().flatten() {
            if found.insert(procs[i].pid) {
                queue.push_back(procs[i].pid);
            }
        }
    }
    found
}

fn signal_all(procs: &[ProcStat], signal: Signal) {
    for p in procs {
        let _ = kill(Pid::from_raw(p.pid), signal);
    }
}

/// Kills every process of `target` and returns how many distinct processes were found.
///
/// First the tree is frozen: SIGSTOP to every member, rescanning until no new member appears,
/// so nothing can fork or exit (and break a parent chain) while it is being enumerated. Then
/// SIGTERM and SIGCONT, up to `grace` for the processes to exit, and SIGKILL until a scan finds
/// none. Processes found once stay tracked by pid and start time, so a member whose parent died
/// mid-kill is not lost. Blocking.
#[expect(
    clippy::disallowed_methods,
    reason = "the grace between signals of a whole-tree kill, on the supervisor's blocking path"
)]
pub(crate) fn kill_tree(target: &TreeTarget, grace: Duration) -> usize {
    if SUBREAPER.get() == Some(&true) && !has_command_children() {
        return 0;
    }
    // Orphans re-parented to us since the last look are attributed before the scan.
    lineage::adopt();
    let mut known: HashSet<ProcKey> = HashSet::new();
    let mut alive = Vec::new();
    for _ in 0..FREEZE_ROUNDS {
        alive = members(target, &known);
        let fresh: Vec<ProcStat> = alive
            .iter()
            .filter(|p| known.insert(key(p)))
            .copied()
            .collect();
        if fresh.is_empty() {
            break;
        }
        signal_all(&fresh, Signal::SIGSTOP);
    }
    if alive.is_empty() {
        return known.len();
    }
    if !grace.is_zero() {
        let started = Instant::now();
        let mut termed: HashSet<ProcKey> = HashSet::new();
        loop {
            let fresh: Vec<ProcStat> = alive
                .iter()
                .filter(|p| termed.insert(key(p)))
                .copied()
                .collect();
            signal_all(&fresh, Signal::SIGTERM);
            signal_all(&fresh, Signal::SIGCONT);
            if started.elapsed() >= grace {
                break;
            }
            std::thread::sleep(KILL_POLL);
            reap_orphans();
            alive = members(target, &known);
            known.extend(alive.iter().map(key));
            if alive.is_empty() {
                return known.len();
            }
        }
    }
    for _ in 0..KILL_ROUNDS {
        alive = members(target, &known);
        known.extend(alive.iter().map(key));
        if alive.is_empty() {
            return known.len();
        }
        signal_all(&alive, Signal::SIGKILL);
        std::thread::sleep(KILL_POLL);
        reap_orphans();
    }
    let left: Vec<i32> = members(target, &known).iter().map(|p| p.pid).collect();
    if !left.is_empty() {
        tracing::warn!("processes {left:?} survived SIGKILL (uninterruptible sleep?)");
    }
    known.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_are_seen_without_being_reaped() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.2")
            .spawn()
            .unwrap();
        assert!(has_children());
        // The status is still there for its owner.
        assert!(child.wait().unwrap().success());
    }
}
