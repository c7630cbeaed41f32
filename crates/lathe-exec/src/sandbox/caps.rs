//! Dropping every capability in the sandboxed child.
//!
//! A command Lathe runs as root would otherwise keep the full set: `CAP_MKNOD` (device nodes that
//! reach a disk beneath the write paths), `CAP_DAC_OVERRIDE` (files no ordinary user could read),
//! `CAP_SYS_PTRACE` (other processes' memory and environment), `CAP_KILL`, `CAP_SETFCAP` (file
//! capabilities, a setuid bit by another name) and the rest. [`CapDrop::plan`] reads what it
//! needs in the parent; [`CapDrop::apply`] runs in the child between `fork` and `exec` and makes
//! only `prctl` and `capset` calls on prepared integers.
//!
//! In order, the child: locks the securebits so that an `exec` as uid 0 grants nothing
//! (`SECBIT_NOROOT`, no ambient raise, no keep-caps, the setuid fix-up kept on; best effort),
//! empties the bounding set (`PR_CAPBSET_DROP` for every capability up to
//! `/proc/sys/kernel/cap_last_cap`), clears the ambient set and sets the effective, permitted and
//! inheritable sets to nothing with `capset`. The first two need `CAP_SETPCAP`: a process without
//! it (any ordinary user) skips them, and `PR_SET_NO_NEW_PRIVS`, set right after, keeps `exec`
//! from granting anything back (the kernel then limits the new permitted set to the old one,
//! which is empty).

use std::io;

/// `CAP_SETPCAP`: needed to change the bounding set and the securebits.
const CAP_SETPCAP: u32 = 8;
/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets in two 32-bit words.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

// The securebits (linux/securebits.h).
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
/// The bits the child sets (on top of those already set).
const SECUREBITS: libc::c_ulong = SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_NO_SETUID_FIXUP_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

/// The highest capability number tried when `cap_last_cap` cannot be read; the drop loop also
/// stops at the first number the kernel does not know (`EINVAL`).
const FALLBACK_LAST_CAP: u32 = 63;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// What the child does to its capabilities, decided in the parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CapDrop {
    /// The highest capability number this kernel knows.
    last_cap: u32,
    /// Whether this process holds `CAP_SETPCAP` (so the child can empty the bounding set).
    can_drop_bounding: bool,
    /// The securebits the child sets.
    securebits: libc::c_ulong,
}

impl CapDrop {
    /// Reads, in the parent, what the child's drop needs: the last capability number, whether
    /// this process may change its bounding set, and its current securebits.
    pub(crate) fn plan() -> Self {
        let last_cap = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
            .unwrap_or(FALLBACK_LAST_CAP)
            .min(FALLBACK_LAST_CAP);
        // SAFETY: PR_GET_SECUREBITS takes no pointers and returns the bits or -1.
        let current = unsafe { libc::prctl(libc::PR_GET_SECUREBITS) };
        let current = libc::c_ulong::try_from(current).unwrap_or(0);
        CapDrop {
            last_cap,
            can_drop_bounding: has_effective(CAP_SETPCAP),
            securebits: current | SECUREBITS,
        }
    }

    /// Drops every capability of the calling thread, for good.
    ///
    /// Async-signal-safe and allocation-free (plain `prctl` and `capset` system calls on data
    /// prepared by [`plan`](Self::plan)); an error carries only the errno.
    pub(crate) fn apply(&self) -> io::Result<()> {
        let zero: libc::c_ulong = 0;
        if self.can_drop_bounding {
            // Best effort: a bit another program locked the other way cannot be changed, and the
            // empty sets below (with no_new_privs) already keep exec from granting anything.
            // SAFETY: integer arguments only.
            unsafe {
                libc::prctl(libc::PR_SET_SECUREBITS, self.securebits, zero, zero, zero);
            }
            for cap in 0..=self.last_cap {
                // SAFETY: integer arguments only.
                let ret = unsafe {
                    libc::prctl(
                        libc::PR_CAPBSET_DROP,
                        libc::c_ulong::from(cap),
                        zero,
                        zero,
                        zero,
                    )
                };
                if ret != 0 {
                    let error = io::Error::last_os_error();
                    if error.raw_os_error() == Some(libc::EINVAL) {
                        break; // past the last capability this kernel knows
                    }
                    return Err(error);
                }
            }
        }
        // SAFETY: integer arguments only. EINVAL means a kernel without ambient capabilities
        // (before 4.3): there is nothing to clear.
        let ret = unsafe {
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                zero,
                zero,
                zero,
            )
        };
        if ret != 0 {
            let error = io::Error::last_os_error();
            if error.raw_os_error() != Some(libc::EINVAL) {
                return Err(error);
            }
        }
        let header = CapHeader {
            version: CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [CapData::default(); 2];
        // SAFETY: the header and the two data words live on this stack frame for the call;
        // the kernel only reads them.
        let ret =
            unsafe { libc::syscall(libc::SYS_capset, &header as *const CapHeader, data.as_ptr()) };
        if ret != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// Whether the calling thread has capability `cap` in its effective set.
fn has_effective(cap: u32) -> bool {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: the kernel writes the header's version (on a mismatch) and two data words, both
    // owned by this frame.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut CapHeader,
            data.as_mut_ptr(),
        )
    };
    if ret != 0 {
        return false;
    }
    let word = usize::try_from(cap / 32).unwrap_or(usize::MAX);
    data.get(word)
        .is_some_and(|d| d.effective & (1 << (cap % 32)) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_reads_the_last_capability_and_asks_for_noroot() {
        let plan = CapDrop::plan();
        // Every kernel Lathe runs on knows at least CAP_SETFCAP (31).
        assert!(plan.last_cap >= 31 && plan.last_cap <= FALLBACK_LAST_CAP);
        assert_eq!(plan.securebits & SECUREBITS, SECUREBITS);
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Root here holds CAP_SETPCAP unless a container took it away; either answer must
            // agree with /proc.
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let eff = status
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
                .unwrap();
            assert_eq!(plan.can_drop_bounding, eff & (1 << CAP_SETPCAP) != 0);
        }
    }
}
