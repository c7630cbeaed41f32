//! The seccomp filter for what Landlock cannot say.
//!
//! Landlock decides on paths and ports; it cannot look at a mode argument or a socket type. The
//! filters here, compiled in the parent with `seccompiler` and installed in the child with one
//! raw `seccomp` call each, make these calls fail with `EPERM`:
//!
//! - `chmod`, `fchmod`, `fchmodat`, `fchmodat2` with `S_ISUID` or `S_ISGID` in the mode;
//! - `mknod`, `mknodat` of a character or block device, or with `S_ISUID`/`S_ISGID`;
//! - `open`, `openat`, `creat` creating a file (`O_CREAT` or `O_TMPFILE`) with those bits;
//! - `io_uring_setup`, `io_uring_enter`, `io_uring_register` (io_uring operations are not seen
//!   by seccomp, so they would get round every rule here);
//! - with the network off: `socket` of any family but `AF_UNIX`, `AF_NETLINK`, `AF_INET` and
//!   `AF_INET6`; of `AF_INET`/`AF_INET6` anything but a TCP stream (so UDP, ICMP, SCTP, MPTCP and
//!   raw sockets), and before Landlock ABI 4 (no TCP rules) every `AF_INET`/`AF_INET6` socket;
//!   and `sendto`/`sendmsg`/`sendmmsg` with `MSG_FASTOPEN` (a TCP connect made by a send).
//!
//! and make `openat2` fail with `ENOSYS` (its mode is inside a structure a filter cannot read;
//! libraries fall back to `openat` on `ENOSYS`). On x86_64 the x32 system-call numbers (same
//! audit architecture, other numbers) fail with `ENOSYS` too, and any call from another
//! architecture (a 32-bit `int 0x80`) kills the process: seccompiler checks the architecture
//! first. On an architecture this module has no table for, no filter is built and
//! [`Enforcement::seccomp`](super::Enforcement::seccomp) says so.

use std::collections::BTreeMap;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// Landlock restricts TCP `bind`/`connect` from this ABI on.
const MIN_ABI_TCP: u32 = 4;
/// `__O_TMPFILE` without `O_DIRECTORY` (the bit that makes `O_TMPFILE` use the mode).
const O_TMPFILE_BIT: u64 = (libc::O_TMPFILE & !libc::O_DIRECTORY) as u64;
const S_ISUID: u64 = libc::S_ISUID as u64;
const S_ISGID: u64 = libc::S_ISGID as u64;
const S_IFMT: u64 = libc::S_IFMT as u64;
/// Type bits of `socket`'s second argument (the rest are `SOCK_NONBLOCK`, `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;
/// `fchmodat2` (Linux 6.6): the same number on every architecture since the tables were
/// unified, and not yet in the `libc` crate for all of them.
const SYS_FCHMODAT2: i64 = 452;
/// `SECCOMP_GET_ACTION_AVAIL` for the availability probe.
const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;

/// Compiled filters, ready for the child.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filters {
    programs: Vec<BpfProgram>,
}

impl Filters {
    /// Whether there is anything to install.
    pub(crate) fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// Installs every filter on the calling thread. Needs `PR_SET_NO_NEW_PRIVS` set first.
    ///
    /// Async-signal-safe and allocation-free: one `seccomp` system call per prepared program.
    pub(crate) fn install(&self) -> io::Result<()> {
        for program in &self.programs {
            let fprog = SockFprog {
                len: u16::try_from(program.len()).unwrap_or(u16::MAX),
                filter: program.as_ptr(),
            };
            // SAFETY: `fprog` points at the prepared program, alive for the call; the kernel
            // copies it and keeps no pointer.
            let ret = unsafe {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER as libc::c_long,
                    0 as libc::c_long,
                    &fprog as *const SockFprog,
                )
            };
            if ret != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

#[repr(C)]
struct SockFprog {
    len: libc::c_ushort,
    filter: *const sock_filter,
}

/// The architecture the filters are built for, if this module knows it.
fn target_arch() -> Option<TargetArch> {
    if cfg!(target_arch = "x86_64") {
        Some(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Some(TargetArch::aarch64)
    } else {
        None
    }
}

/// Whether seccomp filters can be installed here: a known architecture and a kernel that
/// offers `SECCOMP_RET_ERRNO`.
pub(crate) fn available() -> bool {
    if target_arch().is_none() {
        return false;
    }
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: the kernel reads one u32 from `action`, which lives for the call.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL as libc::c_long,
            0 as libc::c_long,
            &action as *const u32,
        )
    };
    ret == 0
}

/// Builds the filters for a sandbox; `network_off` adds the socket rules. `landlock_abi` decides
/// whether TCP is left to Landlock. Empty when seccomp is unavailable here.
pub(crate) fn build(network_off: bool, landlock_abi: u32) -> Result<Filters, String> {
    let Some(arch) = target_arch().filter(|_| available()) else {
        return Ok(Filters::default());
    };
    let error = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let mut denied = file_mode_rules().map_err(error)?;
    for nr in [
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        denied.insert(nr, Vec::new());
    }
    if network_off {
        denied.extend(network_rules(landlock_abi >= MIN_ABI_TCP).map_err(error)?);
    }
    let eperm = SeccompFilter::new(
        denied,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(error)?;
    let nosys = SeccompFilter::new(
        BTreeMap::from([(libc::SYS_openat2, Vec::new())]),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::ENOSYS as u32),
        arch,
    )
    .map_err(error)?;
    let compile = |filter: SeccompFilter| {
        BpfProgram::try_from(filter).map_err(|e| format!("cannot compile the seccomp filter: {e}"))
    };
    let mut nosys = compile(nosys)?;
    if cfg!(target_arch = "x86_64") {
        let mut program = x32_prefix();
        program.append(&mut nosys);
        nosys = program;
    }
    Ok(Filters {
        programs: vec![compile(eperm)?, nosys],
    })
}

type Rules = BTreeMap<i64, Vec<SeccompRule>>;

fn cond(
    arg: u8,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

fn rule(conditions: Vec<SeccompCondition>) -> Result<SeccompRule, seccompiler::BackendError> {
    SeccompRule::new(conditions)
}

/// Rules on the mode argument `arg`: setuid or setgid bit set.
fn setid_rules(arg: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    [S_ISUID, S_ISGID]
        .into_iter()
        .map(|bit| rule(vec![cond(arg, SeccompCmpOp::MaskedEq(bit), bit)?]))
        .collect()
}

/// Rules for a creating open: `flags` has `O_CREAT` or `O_TMPFILE` and `mode` a set-id bit.
fn creating_open_rules(flags: u8, mode: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let mut rules = Vec::new();
    for create in [libc::O_CREAT as u64, O_TMPFILE_BIT] {
        for bit in [S_ISUID, S_ISGID] {
            rules.push(rule(vec![
                cond(flags, SeccompCmpOp::MaskedEq(create), create)?,
                cond(mode, SeccompCmpOp::MaskedEq(bit), bit)?,
            ])?);
        }
    }
    Ok(rules)
}

/// Rules for `mknod`'s mode argument `arg`: a device node, or set-id bits.
fn mknod_rules(arg: u8) -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
    let mut rules = setid_rules(arg)?;
    for kind in [libc::S_IFCHR as u64, libc::S_IFBLK as u64] {
        rules.push(rule(vec![cond(
            arg,
            SeccompCmpOp::MaskedEq(S_IFMT),
            kind,
        )?])?);
    }
    Ok(rules)
}

fn file_mode_rules() -> Result<Rules, seccompiler::BackendError> {
    let mut rules = Rules::new();
    rules.insert(libc::SYS_fchmod, setid_rules(1)?);
    rules.insert(libc::SYS_fchmodat, setid_rules(2)?);
    rules.insert(SYS_FCHMODAT2, setid_rules(2)?);
    rules.insert(libc::SYS_mknodat, mknod_rules(2)?);
    rules.insert(libc::SYS_openat, creating_open_rules(2, 3)?);
    #[cfg(target_arch = "x86_64")]
    {
        rules.insert(libc::SYS_chmod, setid_rules(1)?);
        rules.insert(libc::SYS_mknod, mknod_rules(1)?);
        rules.insert(libc::SYS_open, creating_open_rules(1, 2)?);
        rules.insert(libc::SYS_creat, setid_rules(1)?);
    }
    Ok(rules)
}

fn network_rules(landlock_tcp: bool) -> Result<Rules, seccompiler::BackendError> {
    use SeccompCmpOp::{Eq, MaskedEq, Ne};
    let (inet, inet6) = (libc::AF_INET as u64, libc::AF_INET6 as u64);
    let mut socket = vec![rule(vec![
        cond(0, Ne, libc::AF_UNIX as u64)?,
        cond(0, Ne, libc::AF_NETLINK as u64)?,
        cond(0, Ne, inet)?,
        cond(0, Ne, inet6)?,
    ])?];
    for family in [inet, inet6] {
        if !landlock_tcp {
            socket.push(rule(vec![cond(0, Eq, family)?])?);
            continue;
        }
        let stream = libc::SOCK_STREAM as u64;
        for kind in (0..=SOCK_TYPE_MASK).filter(|&k| k != stream) {
            socket.push(rule(vec![
                cond(0, Eq, family)?,
                cond(1, MaskedEq(SOCK_TYPE_MASK), kind)?,
            ])?);
        }
        socket.push(rule(vec![
            cond(0, Eq, family)?,
            cond(1, MaskedEq(SOCK_TYPE_MASK), stream)?,
            cond(2, Ne, 0)?,
            cond(2, Ne, libc::IPPROTO_TCP as u64)?,
        ])?);
    }
    let fastopen = libc::MSG_FASTOPEN as u64;
    let send_flags = |arg| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        Ok(vec![rule(vec![cond(arg, MaskedEq(fastopen), fastopen)?])?])
    };
    let mut rules = Rules::new();
    rules.insert(libc::SYS_socket, socket);
    rules.insert(libc::SYS_sendto, send_flags(3)?);
    rules.insert(libc::SYS_sendmsg, send_flags(2)?);
    rules.insert(libc::SYS_sendmmsg, send_flags(3)?);
    Ok(rules)
}

/// On x86_64: x32 system calls (number with bit 30 set, same audit architecture) get `ENOSYS`,
/// so the numbers the rules name cannot be reached by another numbering. Falls through to the
/// program that follows for everything else.
fn x32_prefix() -> BpfProgram {
    // BPF_LD | BPF_W | BPF_ABS (0x00 | 0x00 | 0x20).
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JEQ_K: u16 = 0x05 | 0x10;
    const BPF_JMP_JGE_K: u16 = 0x05 | 0x30;
    const BPF_RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const NR_OFFSET: u32 = 0;
    const ARCH_OFFSET: u32 = 4;
    let insn = |code, jt, jf, k| sock_filter { code, jt, jf, k };
    vec![
        insn(BPF_LD_W_ABS, 0, 0, ARCH_OFFSET),
        // Another architecture: on to the next program, whose own check kills it.
        insn(BPF_JMP_JEQ_K, 0, 3, AUDIT_ARCH_X86_64),
        insn(BPF_LD_W_ABS, 0, 0, NR_OFFSET),
        insn(BPF_JMP_JGE_K, 0, 1, X32_SYSCALL_BIT),
        insn(
            BPF_RET_K,
            0,
            0,
            libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_build_for_every_network_setting_and_abi() {
        if !available() {
            eprintln!("skipping: seccomp filters are unavailable here");
            assert!(build(true, 7).unwrap().is_empty());
            return;
        }
        for (network_off, abi) in [(true, 1), (true, 4), (true, 7), (false, 7)] {
            let filters = build(network_off, abi).unwrap();
            assert_eq!(filters.programs.len(), 2);
            for program in &filters.programs {
                assert!(program.len() < 4096, "{} instructions", program.len());
            }
        }
        // The socket rules make the network-off filter longer.
        assert!(
            build(true, 7).unwrap().programs[0].len() > build(false, 7).unwrap().programs[0].len()
        );
    }
}
