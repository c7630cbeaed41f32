//! Which command an orphan re-parented to us came from, for processes that carry none of the
//! marks of the `tree` module: `env -i setsid CMD` (or `nohup`, or a double fork, after that)
//! clears the environment tag, leaves the command's session and process group, and, once its
//! parent exits, breaks the parent chain.
//!
//! As the child subreaper this process still becomes the orphan's parent. So at a few moments
//! (a command's shell reaped, every kill, and every [`ADOPT_INTERVAL`] while a supervisor
//! lives) the orphans among our children are *adopted*: each new one is attributed to a
//! command, in this order:
//! 1. its session or process group is a command's own (the command's shell leads both): that
//!    command;
//! 2. its session or process group is that of an orphan adopted earlier, or one such an
//!    orphan leads: the same owners;
//! 3. else every command that was running when it started (its start time, in clock ticks,
//!    lies between the command's start and the reaping of its shell), usually exactly one, if
//!    they are all of one supervisor;
//! 4. else, if it started after every command ended and only one supervisor lives, that
//!    supervisor's session as a whole: the session's end kills it, `Supervisor::kill` does not.
//!
//! An orphan none of this attributes (commands of several supervisors ran when it started) is
//! left to the end of the last supervisor, which kills every orphan of ours (see
//! `tree::kill_at_end`), and to the guards.
//!
//! The kill of a command (or of a whole session) then takes its adopted orphans, every process
//! in their sessions and process groups that descends from us, and their descendants. Every
//! session adopted (and every command's own) is also told to the guards (see the `guard`
//! module), which kill those sessions if this process is SIGKILLed.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use nix::unistd::getsid;

use crate::command::CommandId;
use crate::guard;
use crate::procfs::{self, ProcStat};
use crate::tree;

/// How often the orphan reaper thread adopts new orphans while a supervisor lives: the longest
/// an orphan that hid every mark can go unseen by the guard.
pub(crate) const ADOPT_INTERVAL: Duration = Duration::from_millis(200);

type ProcKey = (i32, u64);

/// Who an adopted orphan belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owner {
    Command(String, CommandId),
    Session(String),
}

/// Which adopted orphans a kill takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Filter {
    /// Those of one command of a supervisor (named by its tag name).
    Command(String, CommandId),
    /// Every one of a supervisor's.
    Supervisor(String),
}

impl Filter {
    fn takes(&self, owner: &Owner) -> bool {
        match (self, owner) {
            (Filter::Command(s, id), Owner::Command(t, other)) => s == t && id == other,
            (Filter::Supervisor(s), Owner::Command(t, _) | Owner::Session(t)) => s == t,
            (Filter::Command(..), Owner::Session(_)) => false,
        }
    }
}

#[derive(Debug)]
struct Span {
    supervisor: String,
    id: CommandId,
    main: i32,
    start: u64,
    /// When the shell was reaped (clock ticks after boot).
    end: Option<u64>,
}

#[derive(Debug)]
struct Adopted {
    session: i32,
    pgrp: i32,
    owners: Vec<Owner>,
}

#[derive(Debug, Default)]
struct Lineage {
    spans: Vec<Span>,
    adopted: HashMap<ProcKey, Adopted>,
    /// Our children that are not commands' processes (in our own session).
    ignored: HashSet<ProcKey>,
    supervisors: Vec<String>,
}

static LINEAGE: Mutex<Option<Lineage>> = Mutex::new(None);

fn lineage() -> MutexGuard<'static, Option<Lineage>> {
    LINEAGE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn with<T>(f: impl FnOnce(&mut Lineage) -> T) -> T {
    f(lineage().get_or_insert_with(Lineage::default))
}

/// Now, in the clock of `/proc/<pid>/stat`'s starttime: ticks since boot.
fn now_ticks() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills `ts`.
    unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    // SAFETY: sysconf has no preconditions.
    let hz = u64::try_from(unsafe { libc::sysconf(libc::_SC_CLK_TCK) })
        .ok()
        .filter(|&hz| hz > 0)
        .unwrap_or(100);
    let ns = u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000
        + u64::try_from(ts.tv_nsec).unwrap_or(0);
    ns / (1_000_000_000 / hz)
}

/// The start time of process `pid` if it exists, else 0 ("unknown" to the guard).
fn start_of(pid: i32) -> u64 {
    procfs::read_stat(pid).map_or(0, |s| s.starttime)
}

/// Records a command's shell (`main`, leader of the command's session and process group) and
/// tells the guards to watch its session.
pub(crate) fn command_started(supervisor: &str, id: CommandId, main: i32) {
    let start = start_of(main);
    guard::watch(main, start);
    with(|l| {
        if !l.supervisors.iter().any(|s| s == supervisor) {
            l.supervisors.push(supervisor.to_owned());
        }
        l.spans.push(Span {
            supervisor: supervisor.to_owned(),
            id,
            main,
            start,
            end: None,
        });
    });
}

/// Records that a command's shell was reaped, and adopts the orphans it left.
pub(crate) fn command_reaped(supervisor: &str, id: CommandId) {
    let end = now_ticks();
    with(|l| {
        if let Some(span) = l
            .spans
            .iter_mut()
            .find(|s| s.id == id && s.supervisor == supervisor)
        {
            span.end = Some(end);
        }
    });
    adopt();
}

/// Forgets a supervisor that ended (its processes are dead).
pub(crate) fn supervisor_ended(supervisor: &str) {
    with(|l| {
        l.spans.retain(|s| s.supervisor != supervisor);
        l.supervisors.retain(|s| s != supervisor);
        let gone = Filter::Supervisor(supervisor.to_owned());
        l.adopted.retain(|_, a| {
            let before = a.owners.len();
            a.owners.retain(|o| !gone.takes(o));
            before == 0 || !a.owners.is_empty()
        });
    });
}

/// Our direct children: the main thread's `children` file lists every orphan re-parented to us
/// (the kernel gives them to the first live thread, the main one), the fallback a `/proc`
/// scan where that file does not exist.
fn our_children() -> Vec<i32> {
    let me = std::process::id();
    match std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        Ok(text) => text
            .split_ascii_whitespace()
            .filter_map(|pid| pid.parse().ok())
            .collect(),
        Err(_) => {
            let me = me as i32;
            procfs::scan()
                .into_iter()
                .filter(|p| p.ppid == me)
                .map(|p| p.pid)
                .collect()
        }
    }
}

/// Attributes the orphans re-parented to us since the last call (see the module's doc), and
/// follows adopted ones into the sessions and groups they moved to since (an orphan adopted
/// between its `fork` and its `setsid` is seen in its parent's session first).
pub(crate) fn adopt() {
    let my_session = getsid(None).map_or(0, nix::unistd::Pid::as_raw);
    let owned = tree::owned();
    let children: Vec<ProcStat> = our_children()
        .into_iter()
        .filter(|pid| !owned.contains(pid))
        .filter_map(procfs::read_stat)
        .filter(|p| p.is_alive())
        .collect();
    drop(owned);
    if children.is_empty() {
        return;
    }
    let mut watched = Vec::new();
    with(|l| {
        for p in children {
            let key = (p.pid, p.starttime);
            if l.ignored.contains(&key) {
                continue;
            }
            if let Some(known) = l.adopted.get_mut(&key) {
                if known.session != p.session {
                    known.session = p.session;
                    watched.push((p.session, p.pid, p.starttime));
                }
                if known.pgrp != p.pgrp {
                    known.pgrp = p.pgrp;
                    watched.push((p.pgrp, p.pid, p.starttime));
                }
                continue;
            }
            if p.session == my_session {
                l.ignored.insert(key);
                continue;
            }
            let owners = attribute(l, &p);
            watched.push((p.session, p.pid, p.starttime));
            if p.pgrp != p.session {
                watched.push((p.pgrp, p.pid, p.starttime));
            }
            l.adopted.insert(
                key,
                Adopted {
                    session: p.session,
                    pgrp: p.pgrp,
                    owners,
                },
            );
        }
    });
    for (id, pid, start) in watched {
        let start = if id == pid { start } else { start_of(id) };
        guard::watch(id, start);
    }
}

fn attribute(l: &Lineage, p: &ProcStat) -> Vec<Owner> {
    // 1. A command's own session or group (the latest command by that pid started before it).
    if let Some(span) = l
        .spans
        .iter()
        .filter(|s| (s.main == p.session || s.main == p.pgrp) && s.start <= p.starttime)
        .max_by_key(|s| s.start)
    {
        return vec![Owner::Command(span.supervisor.clone(), span.id)];
    }
    // 2. The session or group of an orphan adopted before, or one it led (it may have called
    // `setsid` after we saw it: a session's id is its leader's pid).
    if let Some((_, earlier)) = l.adopted.iter().find(|((pid, start), a)| {
        let ids = [a.session, a.pgrp];
        ids.contains(&p.session)
            || ids.contains(&p.pgrp)
            || ((*pid == p.session || *pid == p.pgrp) && *start <= p.starttime)
    }) {
        return earlier.owners.clone();
    }
    // 3. The commands running when it started (a tick of slack on both sides), if they are
    // all of one supervisor: another supervisor's commands are not to be killed on a guess.
    let t = p.starttime;
    let running: Vec<&Span> = l
        .spans
        .iter()
        .filter(|s| s.start <= t + 1 && s.end.is_none_or(|end| t <= end + 1))
        .collect();
    if let Some(first) = running.first() {
        if running.iter().all(|s| s.supervisor == first.supervisor) {
            return running
                .iter()
                .map(|s| Owner::Command(s.supervisor.clone(), s.id))
                .collect();
        }
        return Vec::new();
    }
    // 4. The session of the only live supervisor. With several, nobody's: the end of the last
    // one sweeps it (see `tree::kill_at_end`), and the guards watch its session.
    match &l.supervisors[..] {
        [only] => vec![Owner::Session(only.clone())],
        _ => Vec::new(),
    }
}

/// The adopted orphans a kill takes: their keys, and the sessions and groups they lead or
/// belong to.
pub(crate) fn adopted_for(filter: &Filter) -> (HashSet<ProcKey>, HashSet<i32>) {
    let guard = lineage();
    let mut keys = HashSet::new();
    let mut groups = HashSet::new();
    if let Some(l) = guard.as_ref() {
        for (key, a) in &l.adopted {
            if a.owners.iter().any(|o| filter.takes(o)) {
                keys.insert(*key);
                groups.extend([a.session, a.pgrp, key.0]);
            }
        }
    }
    (keys, groups)
}

/// Forgets adopted orphans that are gone, unless a process of `procs` (a scan of `/proc`) is
/// still in their session or group (an orphan of theirs may yet be re-parented to us), and
/// ignored children that are gone.
pub(crate) fn prune(procs: &[ProcStat]) {
    let mut guard = lineage();
    let Some(l) = guard.as_mut() else { return };
    let live: HashSet<ProcKey> = procs
        .iter()
        .filter(|p| p.is_alive())
        .map(|p| (p.pid, p.starttime))
        .collect();
    let groups: HashSet<i32> = procs
        .iter()
        .filter(|p| p.is_alive())
        .flat_map(|p| [p.session, p.pgrp])
        .collect();
    l.adopted.retain(|key, a| {
        live.contains(key)
            || groups.contains(&a.session)
            || groups.contains(&a.pgrp)
            || groups.contains(&key.0)
    });
    l.ignored.retain(|key| live.contains(key));
}
