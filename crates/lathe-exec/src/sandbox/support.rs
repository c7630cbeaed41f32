//! Whether Landlock is available here, and what a sandbox enforces on this kernel.

use std::ffi::c_void;
use std::fmt;
use std::io;

/// `truncate(2)` on a path is confined from this ABI on (Linux 6.2).
const MIN_ABI_TRUNCATE: u32 = 3;
/// TCP `bind`/`connect` can be restricted from this ABI on (Linux 6.7).
const MIN_ABI_NETWORK: u32 = 4;
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

    /// How complete the sandbox is.
    pub fn level(&self) -> SupportLevel {
        match self.abi() {
            None => SupportLevel::Unavailable,
            Some(abi) if abi >= MIN_ABI_NETWORK => SupportLevel::Full,
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
        if abi >= MIN_ABI_NETWORK {
            None
        } else if abi >= MIN_ABI_TRUNCATE {
            Some(format!(
                "landlock ABI {abi} is too old to restrict the network (needs ABI {MIN_ABI_NETWORK}, Linux 6.7): commands are confined for writes but may use the network"
            ))
        } else {
            Some(format!(
                "landlock ABI {abi} is too old to confine truncate(2) (needs ABI {MIN_ABI_TRUNCATE}, Linux 6.2) or to restrict the network (needs ABI {MIN_ABI_NETWORK}, Linux 6.7): commands are confined for other writes but may use the network"
            ))
        }
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
    /// TCP `bind` and `connect` are denied; UDP and UNIX sockets are not restricted.
    TcpBlocked,
    /// TCP and UDP `bind`, `connect` and `sendto` are denied.
    TcpAndUdpBlocked,
    /// The policy turns the network off but the kernel cannot restrict it (ABI below 4).
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
}

impl Enforcement {
    /// What a kernel with Landlock ABI `abi` enforces for a policy allowing the network or not.
    pub fn for_abi(abi: u32, policy_network: bool) -> Self {
        let filesystem = if abi >= MIN_ABI_TRUNCATE {
            FilesystemEnforcement::Full
        } else {
            FilesystemEnforcement::WithoutTruncate
        };
        let network = match abi {
            _ if policy_network => NetworkEnforcement::Allowed,
            a if a >= MIN_ABI_UDP => NetworkEnforcement::TcpAndUdpBlocked,
            a if a >= MIN_ABI_NETWORK => NetworkEnforcement::TcpBlocked,
            _ => NetworkEnforcement::NotEnforced,
        };
        Enforcement {
            abi,
            filesystem,
            network,
        }
    }

    /// Whether the policy is enforced completely (`false` for the degraded cases above).
    pub fn is_complete(&self) -> bool {
        self.filesystem == FilesystemEnforcement::Full
            && self.network != NetworkEnforcement::NotEnforced
    }
}

impl fmt::Display for Enforcement {
    /// A short summary for a command result's header, e.g.
    /// `sandboxed (landlock abi 7): writes confined, network off (tcp)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let writes = match self.filesystem {
            FilesystemEnforcement::Full => "writes confined",
            FilesystemEnforcement::WithoutTruncate => "writes confined except truncate(2)",
        };
        let network = match self.network {
            NetworkEnforcement::Allowed => "network on",
            NetworkEnforcement::TcpBlocked => "network off (tcp)",
            NetworkEnforcement::TcpAndUdpBlocked => "network off (tcp, udp)",
            NetworkEnforcement::NotEnforced => "network not restricted (kernel too old)",
        };
        write!(
            f,
            "sandboxed (landlock abi {}): {writes}, {network}",
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
        let v3 = SandboxSupport::Available { abi: 3 };
        assert_eq!(v3.level(), SupportLevel::Partial);
        assert!(v3.message().unwrap().contains("network"));
        assert!(
            SandboxSupport::Available { abi: 1 }
                .message()
                .unwrap()
                .contains("truncate")
        );
        assert_eq!(
            SandboxSupport::Available { abi: 7 }.level(),
            SupportLevel::Full
        );
        assert_eq!(SandboxSupport::Available { abi: 7 }.message(), None);
    }

    #[test]
    fn enforcement_by_abi() {
        let e = Enforcement::for_abi(7, false);
        assert_eq!(e.network, NetworkEnforcement::TcpBlocked);
        assert!(e.is_complete());
        assert_eq!(
            e.to_string(),
            "sandboxed (landlock abi 7): writes confined, network off (tcp)"
        );
        assert_eq!(
            Enforcement::for_abi(7, true).network,
            NetworkEnforcement::Allowed
        );
        assert_eq!(
            Enforcement::for_abi(10, false).network,
            NetworkEnforcement::TcpAndUdpBlocked
        );
        let old = Enforcement::for_abi(2, false);
        assert_eq!(old.network, NetworkEnforcement::NotEnforced);
        assert_eq!(old.filesystem, FilesystemEnforcement::WithoutTruncate);
        assert!(!old.is_complete());
        assert!(Enforcement::for_abi(3, true).is_complete());
    }
}
