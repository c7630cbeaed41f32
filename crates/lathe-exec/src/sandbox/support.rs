//! Whether Landlock is available here, and what a sandbox enforces on this kernel.

use std::ffi::c_void;
use std::fmt;
use std::io;

/// `truncate(2)` on a path is confined from this ABI on (Linux 6.2).
const MIN_ABI_TRUNCATE: u32 = 3;
/// TCP `bind`/`connect` can be restricted from this ABI on (Linux 6.7).
const MIN_ABI_NETWORK: u32 = 4;
/// Signals and abstract UNIX sockets can be scoped to the sandbox from this ABI on (Linux 6.12).
const MIN_ABI_SCOPE: u32 = 6;
/// UDP `bind`/`connect`/`sendto` can be restricted from this ABI on.
const MIN_ABI_UDP: u32 = 10;
/// `landlock_create_ruleset` flag asking for the ABI version instead of a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;

/// Whether Landlock can be used here, as found by [`probe`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxSupport {
    /// Landlock works; `abi` is the kernel's Landlock ABI version (1 or more).
    Available {
        /// The kernel's Landlock ABI version.
        abi: u32,
    },
    /// The kernel has Landlock but it is not enabled at boot (`EOPNOTSUPP`).
    NotEnabled,
    /// The kernel has no Landlock (`ENOSYS`: older than 5.13 or built without it).
    NotImplemented,
    /// The system call was refused with another error, usually a container's seccomp filter.
    Denied {
        /// The errno returned.
        errno: i32,
    },
}

/// How complete the sandbox can be on this system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SupportLevel {
    /// Writes and the network can both be confined.
    Full,
    /// Landlock works but some restrictions cannot be enforced; see [`SandboxSupport::message`].
    Partial,
    /// No sandbox at all.
    Unavailable,
}

impl SandboxSupport {
    /// The kernel's Landlock ABI version, if Landlock is available.
    pub fn abi(&self) -> Option<u32> {
        match *self {
            SandboxSupport::Available { abi } => Some(abi),
            _ => None,
        }
    }

    /// Whether commands can be sandboxed at all.
    pub fn is_available(&self) -> bool {
        self.abi().is_some()
    }

    /// How complete the sandbox is: [`SupportLevel::Full`] when a sandbox that turns the
    /// network off is enforced completely here (see [`Enforcement::is_complete`]).
    pub fn level(&self) -> SupportLevel {
        match self.abi() {
            None => SupportLevel::Unavailable,
            Some(abi)
                if Enforcement::new(abi, false, super::seccomp::available()).is_complete() =>
            {
                SupportLevel::Full
            }
            Some(_) => SupportLevel::Partial,
        }
    }

    /// A message for the person when the sandbox is missing or too old; `None` when complete.
    pub fn message(&self) -> Option<String> {
        let abi = match *self {
            SandboxSupport::NotImplemented => {
                return Some("landlock is not available: this kernel is older than Linux 5.13 or built without CONFIG_SECURITY_LANDLOCK, so commands cannot be sandboxed".to_owned());
            }
            SandboxSupport::NotEnabled => {
                return Some("landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter), so commands cannot be sandboxed".to_owned());
            }
            SandboxSupport::Denied { errno } => {
                return Some(format!(
                    "the landlock system call was refused ({}), probably by a container's seccomp filter, so commands cannot be sandboxed",
                    io::Error::from_raw_os_error(errno)
                ));
            }
            SandboxSupport::Available { abi } => abi,
        };
        Enforcement::new(abi, false, super::seccomp::available()).gaps()
    }
}

/// Asks the kernel whether Landlock is available and which ABI it speaks. Never fails.
pub fn probe() -> SandboxSupport {
    // SAFETY: with a null attribute, size 0 and the VERSION flag the call reads no memory and
    // only returns the ABI version (or an error).
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<c_void>(),
            0 as libc::size_t,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if ret >= 1 {
        return SandboxSupport::Available {
            abi: u32::try_from(ret).unwrap_or(u32::MAX),
        };
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => SandboxSupport::NotEnabled,
        Some(libc::ENOSYS) | None => SandboxSupport::NotImplemented,
        Some(errno) => SandboxSupport::Denied { errno },
    }
}

/// How completely writes are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilesystemEnforcement {
    /// Every write operation Landlock knows is confined to the write paths.
    Full,
    /// Writes are confined except `truncate(2)` on a path (Landlock ABI 1 and 2).
    WithoutTruncate,
}

/// How the network is restricted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkEnforcement {
    /// The policy allows the network: nothing is restricted.
    Allowed,
    /// TCP `bind` and `connect` are denied; UDP, other sockets and TCP fast open (a `sendto`
    /// with `MSG_FASTOPEN` connects without `connect(2)`, and Landlock does not see it) are not
    /// restricted (Landlock ABI 4 to 9 without seccomp).
    TcpBlocked,
    /// TCP, UDP and every other IP socket are denied: Landlock for TCP (and UDP from ABI 10), the
    /// seccomp filter for every non-TCP socket (and, before ABI 4, for every IP socket).
    TcpAndUdpBlocked,
    /// The policy turns the network off but this kernel cannot restrict it (Landlock ABI below
    /// 4 and no seccomp).
    NotEnforced,
}

/// What a [`PreparedSandbox`](super::PreparedSandbox) actually enforces on this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enforcement {
    /// The kernel's Landlock ABI version.
    pub abi: u32,
    /// How writes are confined.
    pub filesystem: FilesystemEnforcement,
    /// How the network is restricted.
    pub network: NetworkEnforcement,
    /// Whether signals to processes outside the sandbox (Lathe, its guard, the user's other
    /// programs) and connections to abstract UNIX sockets created outside it are denied
    /// (Landlock ABI 6 and later).
    pub scoped: bool,
    /// Whether the seccomp filter is installed: no device nodes, no setuid or setgid bits, no
    /// io_uring, no `openat2`, and (network off) no sockets but TCP, UNIX and netlink.
    pub seccomp: bool,
}

impl Enforcement {
    /// What a kernel with Landlock ABI `abi` enforces for a policy allowing the network or
    /// not, with the seccomp filter installed or not.
    pub fn new(abi: u32, policy_network: bool, seccomp: bool) -> Self {
        let filesystem = if abi >= MIN_ABI_TRUNCATE {
            FilesystemEnforcement::Full
        } else {
            FilesystemEnforcement::WithoutTruncate
        };
        let network = match abi {
            _ if policy_network => NetworkEnforcement::Allowed,
            a if a >= MIN_ABI_UDP || seccomp => NetworkEnforcement::TcpAndUdpBlocked,
            a if a >= MIN_ABI_NETWORK => NetworkEnforcement::TcpBlocked,
            _ => NetworkEnforcement::NotEnforced,
        };
        Enforcement {
            abi,
            filesystem,
            network,
            scoped: abi >= MIN_ABI_SCOPE,
            seccomp,
        }
    }

    /// Whether the policy is enforced completely: writes (truncate included), the network as
    /// asked (TCP and UDP when off), signal and abstract-socket scoping, and the seccomp filter.
    pub fn is_complete(&self) -> bool {
        self.gaps().is_none()
    }

    /// What this sandbox does not enforce here and why, for the person; `None` when complete.
    pub fn gaps(&self) -> Option<String> {
        let abi = self.abi;
        let mut gaps = Vec::new();
        if self.filesystem == FilesystemEnforcement::WithoutTruncate {
            gaps.push(format!(
                "truncate(2) is not confined (needs landlock ABI {MIN_ABI_TRUNCATE}, Linux 6.2)"
            ));
        }
        match self.network {
            NetworkEnforcement::NotEnforced => gaps.push(format!(
                "the network is not restricted (needs landlock ABI {MIN_ABI_NETWORK}, Linux 6.7, or seccomp)"
            )),
            NetworkEnforcement::TcpBlocked => gaps.push(format!(
                "only TCP connect and bind are blocked, UDP and TCP fast open are not (needs seccomp; landlock ABI {MIN_ABI_UDP} covers UDP)"
            )),
            NetworkEnforcement::Allowed | NetworkEnforcement::TcpAndUdpBlocked => {}
        }
        if !self.scoped {
            gaps.push(format!(
                "commands may signal processes outside the sandbox (Lathe's guard included) and reach abstract unix sockets (scoping needs landlock ABI {MIN_ABI_SCOPE}, Linux 6.12)"
            ));
        }
        if !self.seccomp {
            gaps.push(
                "no seccomp filter on this system: setuid/setgid bits and io_uring are not blocked"
                    .to_owned(),
            );
        }
        (!gaps.is_empty()).then(|| {
            format!(
                "the sandbox is partial on this system (landlock ABI {abi}): {}",
                gaps.join("; ")
            )
        })
    }
}

impl fmt::Display for Enforcement {
    /// A short summary for a command result's header, e.g. `sandboxed (landlock abi 7,
    /// seccomp): writes confined, network off (tcp, udp), signals scoped, no capabilities`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let writes = match self.filesystem {
            FilesystemEnforcement::Full => "writes confined",
            FilesystemEnforcement::WithoutTruncate => "writes confined except truncate(2)",
        };
        let network = match self.network {
            NetworkEnforcement::Allowed => "network on",
            NetworkEnforcement::TcpBlocked => "network off (tcp only)",
            NetworkEnforcement::TcpAndUdpBlocked => "network off (tcp, udp)",
            NetworkEnforcement::NotEnforced => "network not restricted (kernel too old)",
        };
        let seccomp = if self.seccomp {
            "seccomp"
        } else {
            "no seccomp"
        };
        let scope = if self.scoped {
            "signals scoped"
        } else {
            "signals not scoped"
        };
        write!(
            f,
            "sandboxed (landlock abi {}, {seccomp}): {writes}, {network}, {scope}, no capabilities",
            self.abi
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_levels_and_messages() {
        assert_eq!(
            SandboxSupport::NotImplemented.level(),
            SupportLevel::Unavailable
        );
        assert!(
            SandboxSupport::NotEnabled
                .message()
                .unwrap()
                .contains("lsm=")
        );
        let denied = SandboxSupport::Denied { errno: libc::EPERM };
        assert!(!denied.is_available());
        assert!(denied.message().unwrap().contains("seccomp"));
        let v5 = SandboxSupport::Available { abi: 5 };
        assert_eq!(v5.level(), SupportLevel::Partial);
        assert!(
            v5.message().unwrap().contains("signal"),
            "{:?}",
            v5.message()
        );
        assert!(
            SandboxSupport::Available { abi: 1 }
                .message()
                .unwrap()
                .contains("truncate")
        );
        let v7 = SandboxSupport::Available { abi: 7 };
        if super::super::seccomp::available() {
            assert_eq!(v7.level(), SupportLevel::Full);
            assert_eq!(v7.message(), None);
        } else {
            assert!(v7.message().unwrap().contains("seccomp"));
        }
    }

    #[test]
    fn enforcement_by_abi_and_seccomp() {
        let e = Enforcement::new(7, false, true);
        assert_eq!(e.network, NetworkEnforcement::TcpAndUdpBlocked);
        assert!(e.scoped && e.is_complete());
        assert_eq!(
            e.to_string(),
            "sandboxed (landlock abi 7, seccomp): writes confined, network off (tcp, udp), signals scoped, no capabilities"
        );
        let no_seccomp = Enforcement::new(7, false, false);
        assert_eq!(no_seccomp.network, NetworkEnforcement::TcpBlocked);
        let gaps = no_seccomp.gaps().unwrap();
        assert!(gaps.contains("UDP") && gaps.contains("seccomp"), "{gaps}");
        assert!(
            no_seccomp
                .to_string()
                .contains("no seccomp): writes confined, network off (tcp only)")
        );
        assert_eq!(
            Enforcement::new(7, true, true).network,
            NetworkEnforcement::Allowed
        );
        assert!(Enforcement::new(7, true, true).is_complete());
        assert_eq!(
            Enforcement::new(10, false, false).network,
            NetworkEnforcement::TcpAndUdpBlocked
        );
        // Before ABI 4 seccomp alone turns the IP network off.
        assert_eq!(
            Enforcement::new(2, false, true).network,
            NetworkEnforcement::TcpAndUdpBlocked
        );
        let old = Enforcement::new(2, false, false);
        assert_eq!(old.network, NetworkEnforcement::NotEnforced);
        assert_eq!(old.filesystem, FilesystemEnforcement::WithoutTruncate);
        assert!(!old.scoped && !old.is_complete());
        let v5 = Enforcement::new(5, true, true);
        assert!(!v5.scoped);
        assert!(v5.to_string().contains("signals not scoped"));
        assert!(v5.gaps().unwrap().contains("ABI 6"));
    }
}
