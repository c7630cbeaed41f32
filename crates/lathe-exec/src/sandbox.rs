//! The Landlock sandbox for commands Lathe runs.
//!
//! # Threat model
//!
//! The model driving Lathe is not trusted to be careful: by mistake, or steered by text it read (a
//! prompt injection in a file or a web page), a command may try to delete or overwrite files
//! outside the workspace or send data over the network. `lathe-policy` analyses commands before
//! they run; this sandbox is the fence for when that analysis is wrong (obfuscated shell, a build
//! script, a test suite that cleans up too much). Under it a command and all its descendants may
//! write (create, write, truncate, remove, rename, link, make special files, device `ioctl`) only
//! beneath the policy's write paths, and, with the network off, may not bind or connect TCP sockets
//! (UDP too from Landlock ABI 10). Reads are deliberately unrestricted (policy asks before reading
//! secrets). Not covered: signals to other processes, abstract UNIX sockets, resource exhaustion
//! and kernel bugs. The restriction cannot be lifted by the sandboxed process, and
//! `PR_SET_NO_NEW_PRIVS` stops it gaining privileges through set-user-ID programs such as `sudo`.
//!
//! # Why the restrict step runs after fork, without allocation
//!
//! Landlock restricts the calling thread and everything it later starts. Lathe itself must stay
//! unrestricted, so the restriction is applied in the forked child, between `fork` and `exec`
//! (a `pre_exec` hook). Lathe is a multi-threaded tokio program: at the moment of `fork` another
//! thread may hold the allocator's lock (or any lock), and that thread does not exist in the
//! child, so the lock is never released. Only async-signal-safe work is allowed there. So all the
//! work that allocates or opens files (checking the paths, opening them, creating the ruleset and
//! adding its rules) happens in the parent in [`PreparedSandbox::prepare`], and the child makes
//! exactly two raw system calls on the prepared ruleset descriptor: `prctl(PR_SET_NO_NEW_PRIVS)`
//! and `landlock_restrict_self`. The `landlock` crate's `RulesetCreated::restrict_self` is not
//! used in the child: it consumes the ruleset (one per spawn would mean a `dup` and copies of
//! crate state) and its error path builds crate error values; the raw calls plainly allocate
//! nothing, and `std::io::Error::last_os_error` stores only the errno.

use std::ffi::c_void;
use std::fmt;
use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use landlock::{
    ABI, Access, AccessFs, AccessNet, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError,
};

/// The newest Landlock ABI this code asks for. Older kernels get the subset they support (the
/// crate's best-effort mode); [`Enforcement`] says what that subset is.
const TARGET_ABI: ABI = ABI::V10;
/// `truncate(2)` on a path is confined from this ABI on (Linux 6.2).
const MIN_ABI_TRUNCATE: u32 = 3;
/// TCP `bind`/`connect` can be restricted from this ABI on (Linux 6.7).
const MIN_ABI_NETWORK: u32 = 4;
/// UDP `bind`/`connect`/`sendto` can be restricted from this ABI on.
const MIN_ABI_UDP: u32 = 10;
/// `landlock_create_ruleset` flag asking for the ABI version instead of a ruleset.
const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;

/// Errors from preparing a sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Landlock cannot be used on this system; the message says why.
    #[error("{}", .0.message().unwrap_or_else(|| "landlock is unavailable".to_owned()))]
    Unavailable(SandboxSupport),
    /// A write path is relative; the sandbox needs absolute paths.
    #[error("sandbox write path '{}' is not absolute", .path.display())]
    RelativePath {
        /// The offending path.
        path: PathBuf,
    },
    /// The kernel or the `landlock` crate refused the ruleset.
    #[error("cannot create the landlock ruleset: {source}")]
    Ruleset {
        /// The underlying error.
        #[source]
        source: RulesetError,
    },
    /// The kernel refused the rule for one write path.
    #[error("cannot add the landlock rule for '{}': {source}", .path.display())]
    AddRule {
        /// The write path whose rule failed.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: RulesetError,
    },
}

/// What a sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Absolute paths beneath which writes are allowed (directories or single files).
    pub write_paths: Vec<PathBuf>,
    /// Whether TCP/UDP networking is allowed. By default, it is not.
    pub network: bool,
}

impl SandboxPolicy {
    /// The default policy: writes inside `workspace`, `session_tmp`, `/tmp` and `/dev/null`; no
    /// network.
    pub fn new(workspace: impl Into<PathBuf>, session_tmp: impl Into<PathBuf>) -> Self {
        SandboxPolicy {
            write_paths: vec![
                workspace.into(),
                session_tmp.into(),
                PathBuf::from("/tmp"),
                PathBuf::from("/dev/null"),
            ],
            network: false,
        }
    }

    /// Adds a configured extra write path.
    pub fn with_write_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.write_paths.push(path.into());
        self
    }

    /// Allows the network.
    pub fn allow_network(mut self) -> Self {
        self.network = true;
        self
    }
}

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

/// What a [`PreparedSandbox`] actually enforces on this kernel.
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

/// A write path left out of the ruleset because it could not be opened (writes there are denied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedPath {
    /// The configured path.
    pub path: PathBuf,
    /// Why it could not be opened.
    pub reason: String,
}

/// A Landlock ruleset built in the parent, ready to be applied in a forked child.
///
/// Cheap to clone (the ruleset descriptor is shared); one prepared sandbox can be installed on any
/// number of commands. The descriptor is close-on-exec, so commands never inherit it.
#[derive(Debug, Clone)]
pub struct PreparedSandbox {
    ruleset: Arc<OwnedFd>,
    enforcement: Enforcement,
    skipped: Vec<SkippedPath>,
}

impl PreparedSandbox {
    /// Builds the ruleset for `policy`: probes Landlock, opens every write path and adds its rule.
    ///
    /// Write paths that do not exist or cannot be opened are left out (writes there are denied)
    /// and listed by [`skipped_paths`](Self::skipped_paths). Fails with
    /// [`SandboxError::Unavailable`] when Landlock is missing, so nobody believes a command is
    /// sandboxed when it is not.
    pub fn prepare(policy: &SandboxPolicy) -> Result<Self, SandboxError> {
        let support = probe();
        let Some(abi) = support.abi() else {
            return Err(SandboxError::Unavailable(support));
        };
        if let Some(path) = policy.write_paths.iter().find(|p| !p.is_absolute()) {
            return Err(SandboxError::RelativePath { path: path.clone() });
        }
        let ruleset_error = |source| SandboxError::Ruleset { source };
        let write = AccessFs::from_write(TARGET_ABI);
        let mut ruleset = Ruleset::default()
            .handle_access(write)
            .map_err(ruleset_error)?;
        if !policy.network {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(TARGET_ABI))
                .map_err(ruleset_error)?;
        }
        let mut created = ruleset.create().map_err(ruleset_error)?;
        let mut skipped = Vec::new();
        for path in &policy.write_paths {
            let fd = match PathFd::new(path) {
                Ok(fd) => fd,
                Err(error) => {
                    skipped.push(SkippedPath {
                        path: path.clone(),
                        reason: error.to_string(),
                    });
                    continue;
                }
            };
            // Rights such as "make a directory" are invalid on a file rule: keep only the rights
            // that apply to what the descriptor actually is (stat on the fd, not the path, so a
            // swap of the path in between cannot change the answer).
            let access = if is_directory(&fd) {
                write
            } else {
                write & AccessFs::from_file(TARGET_ABI)
            };
            created = created
                .add_rule(PathBeneath::new(fd, access))
                .map_err(|source| SandboxError::AddRule {
                    path: path.clone(),
                    source,
                })?;
        }
        let Some(fd) = Option::<OwnedFd>::from(created) else {
            return Err(SandboxError::Unavailable(support));
        };
        Ok(PreparedSandbox {
            ruleset: Arc::new(fd),
            enforcement: Enforcement::for_abi(abi, policy.network),
            skipped,
        })
    }

    /// What this sandbox enforces on this kernel.
    pub fn enforcement(&self) -> Enforcement {
        self.enforcement
    }

    /// Write paths left out because they could not be opened.
    pub fn skipped_paths(&self) -> &[SkippedPath] {
        &self.skipped
    }

    /// Restricts the calling thread, and everything it later starts, with this sandbox.
    ///
    /// Makes only two system calls and allocates nothing, so it may run in a forked child of a
    /// multi-threaded program.
    ///
    /// # Safety
    ///
    /// The restriction is irreversible: call this only in a child between `fork` and `exec` (for
    /// example from a `pre_exec` hook) or in a thread meant to be sandboxed for ever. Calling it
    /// on a thread of Lathe itself would confine that thread.
    pub unsafe fn apply_in_child(&self) -> io::Result<()> {
        restrict_self(self.ruleset.as_raw_fd())
    }

    /// Makes `cmd` apply this sandbox in its child just before `exec`. A spawn whose restriction
    /// fails returns that error instead of running the command unsandboxed.
    pub fn install(&self, cmd: &mut tokio::process::Command) {
        let ruleset = Arc::clone(&self.ruleset);
        // SAFETY: the hook makes two async-signal-safe system calls and allocates nothing; the
        // Arc keeps the descriptor open for as long as the command (and so the hook) lives.
        unsafe {
            cmd.pre_exec(move || restrict_self(ruleset.as_raw_fd()));
        }
    }

    /// Like [`install`](Self::install), for a `std::process::Command`.
    pub fn install_std(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let ruleset = Arc::clone(&self.ruleset);
        // SAFETY: as in `install`.
        unsafe {
            cmd.pre_exec(move || restrict_self(ruleset.as_raw_fd()));
        }
    }
}

/// The after-fork step: async-signal-safe, allocation-free.
fn restrict_self(ruleset_fd: RawFd) -> io::Result<()> {
    // Variadic arguments are passed at their full register width: the kernel rejects
    // PR_SET_NO_NEW_PRIVS unless arguments 3 to 5 are zero.
    let zero: libc::c_ulong = 0;
    // SAFETY: plain system calls with integer arguments; no memory is shared with the kernel.
    if unsafe {
        libc::prctl(
            libc::PR_SET_NO_NEW_PRIVS,
            1 as libc::c_ulong,
            zero,
            zero,
            zero,
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above; flags 0 restricts the calling thread with the ruleset.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_restrict_self,
            libc::c_long::from(ruleset_fd),
            0 as libc::c_long,
        )
    };
    if ret != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn is_directory(fd: &impl AsFd) -> bool {
    // SAFETY: `stat` is plain data, written by fstat on success; the fd is borrowed and valid.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_fd().as_raw_fd(), &mut stat) == 0
            && (stat.st_mode & libc::S_IFMT) == libc::S_IFDIR
    }
}

/// Whether `path` lies beneath one of the policy's write paths, compared lexically (`.` and `..`
/// resolved without looking at the disk). A relative `path` is never writable.
///
/// This does not follow symlinks: a file tool must pass a path it has already resolved, or use
/// [`path_is_writable_resolved`], which checks what Landlock checks.
pub fn path_is_writable(policy: &SandboxPolicy, path: &Path) -> bool {
    let Some(target) = normalize(path) else {
        return false;
    };
    policy
        .write_paths
        .iter()
        .filter_map(|root| normalize(root))
        .any(|root| target.starts_with(root))
}

/// Whether a write to `path` would be allowed by the sandbox, following symlinks as the kernel
/// would: the longest existing prefix of `path` and each write path are resolved on disk.
///
/// Conservative where the answer cannot be known: a dangling symlink, a symlink loop or an
/// unreadable directory on the way make the path not writable, and a write path that does not
/// exist allows nothing (Landlock leaves it out too).
pub fn path_is_writable_resolved(policy: &SandboxPolicy, path: &Path) -> bool {
    let Some(target) = resolve_for_write(path) else {
        return false;
    };
    policy
        .write_paths
        .iter()
        .filter(|root| root.is_absolute())
        .filter_map(|root| fs::canonicalize(root).ok())
        .any(|root| target.starts_with(root))
}

/// Lexical normalisation of an absolute path; `None` for a relative one.
fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// Resolves the longest existing prefix of `path` on disk and appends the rest lexically.
fn resolve_for_write(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        match fs::canonicalize(&prefix) {
            Ok(real) => {
                let mut full = real;
                full.extend(&components[split..]);
                return normalize(&full);
            }
            // The prefix itself exists (a dangling symlink): where a write lands is unknowable
            // without following it, so refuse.
            Err(error)
                if error.kind() == io::ErrorKind::NotFound
                    && fs::symlink_metadata(&prefix).is_err() => {}
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(paths: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            write_paths: paths.iter().map(PathBuf::from).collect(),
            network: false,
        }
    }

    #[test]
    fn lexical_check_respects_component_boundaries_and_dot_dot() {
        let p = policy(&["/ws", "/tmp", "/dev/null"]);
        for (path, writable) in [
            ("/ws", true),
            ("/ws/a/b.txt", true),
            ("/ws/./a", true),
            ("/ws/a/../b", true),
            ("/ws/../etc/passwd", false),
            ("/ws/a/../../etc", false),
            ("/wsx/file", false),
            ("/tmpfile", false),
            ("/tmp/x", true),
            ("/dev/null", true),
            ("/dev/nullx", false),
            ("/dev/sda", false),
            ("/", false),
            ("/../ws/x", true),
            ("ws/x", false),
            ("", false),
        ] {
            assert_eq!(path_is_writable(&p, Path::new(path)), writable, "{path}");
        }
        assert!(!path_is_writable(
            &policy(&["relative"]),
            Path::new("/relative/x")
        ));
    }

    #[test]
    fn resolved_check_follows_symlinks_like_the_kernel() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let ws_path = ws.path().to_path_buf();
        let p = SandboxPolicy {
            write_paths: vec![ws_path.clone()],
            network: false,
        };
        std::os::unix::fs::symlink(out.path(), ws_path.join("out")).unwrap();
        std::os::unix::fs::symlink(out.path().join("new"), ws_path.join("dangling")).unwrap();
        std::os::unix::fs::symlink(ws_path.join("loop"), ws_path.join("loop")).unwrap();
        fs::create_dir(ws_path.join("dir")).unwrap();
        for (rel, writable) in [
            ("file", true),
            ("dir/new/deeper/file", true),
            ("missing/../file", true),
            ("out", false),
            ("out/file", false),
            ("dangling", false),
            ("loop", false),
            ("dir/../../x", false),
        ] {
            let path = ws_path.join(rel);
            assert_eq!(path_is_writable_resolved(&p, &path), writable, "{rel}");
        }
        let missing_root = policy(&["/nonexistent-lathe-root"]);
        assert!(!path_is_writable_resolved(
            &missing_root,
            Path::new("/nonexistent-lathe-root/x")
        ));
    }

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

    #[test]
    fn prepare_rejects_relative_paths_and_reports_missing_ones() {
        if !probe().is_available() {
            eprintln!("skipping: {}", probe().message().unwrap_or_default());
            return;
        }
        let err = PreparedSandbox::prepare(&policy(&["/tmp", "rel/dir"])).unwrap_err();
        assert!(
            err.to_string().contains("'rel/dir' is not absolute"),
            "{err}"
        );
        let prepared =
            PreparedSandbox::prepare(&policy(&["/tmp", "/nonexistent-lathe-root"])).unwrap();
        assert_eq!(prepared.skipped_paths().len(), 1);
        assert_eq!(
            prepared.skipped_paths()[0].path,
            Path::new("/nonexistent-lathe-root")
        );
    }
}
