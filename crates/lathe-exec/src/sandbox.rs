//! The Landlock sandbox for commands Lathe runs, with a seccomp filter and no capabilities.
//!
//! # Threat model
//!
//! The model driving Lathe is not trusted to be careful: by mistake, or steered by text it read (a
//! prompt injection in a file or a web page), a command may try to delete or overwrite files
//! outside the workspace, send data over the network, or get out of the fence some other way.
//! `lathe-policy` analyses commands before they run; this sandbox is the fence for when that
//! analysis is wrong (obfuscated shell, a build script, a test suite that cleans up too much).
//! Under it a command and all its descendants:
//!
//! - may write (create, write, truncate, remove, rename, link, make fifos, sockets and symlinks)
//!   only beneath the policy's write paths (Landlock);
//! - may make no device node and use no device `ioctl` anywhere (Landlock handles `MakeChar`,
//!   `MakeBlock` and `IoctlDev` and grants them nowhere; the seccomp filter also refuses
//!   `mknod` of a device);
//! - may set no setuid or setgid bit (seccomp, on `chmod`, `mknod` and creating `open`s) and run
//!   with no capabilities at all, even as root (see `caps`): no `CAP_MKNOD`, no
//!   `CAP_DAC_OVERRIDE`, no `CAP_SYS_PTRACE`, no `CAP_KILL`;
//! - with the network off, may not bind or connect TCP sockets (Landlock ABI 4) nor create any
//!   other IP socket (UDP, raw, SCTP: seccomp), and from Landlock ABI 6 may neither signal
//!   processes outside the sandbox (Lathe, its guard) nor connect to abstract UNIX sockets
//!   created outside it;
//! - gets no daemon-control variables (`TMUX`, `DBUS_SESSION_BUS_ADDRESS`, `SSH_AUTH_SOCK`, ...,
//!   see [`crate::env::DAEMON_CONTROL_VARS`]) unless the policy keeps them by name.
//!
//! Reads are deliberately unrestricted (policy asks before reading secrets). Not covered:
//! pathname UNIX sockets before Landlock ABI 9 (`/var/run/docker.sock`, a tmux server's socket
//! in `/tmp`), metadata changes other than set-id bits (`chmod`, timestamps, extended
//! attributes) on files the user owns, resource exhaustion and kernel bugs. The restriction
//! cannot be lifted by the sandboxed process, and `PR_SET_NO_NEW_PRIVS` stops it gaining
//! privileges through set-user-ID programs such as `sudo`.
//!
//! # Why the restrict step runs after fork, without allocation
//!
//! Landlock restricts the calling thread and everything it later starts. Lathe itself must stay
//! unrestricted, so the restriction is applied in the forked child, between `fork` and `exec`
//! (a `pre_exec` hook). Lathe is a multi-threaded tokio program: at the moment of `fork` another
//! thread may hold the allocator's lock (or any lock), and that thread does not exist in the
//! child, so the lock is never released. Only async-signal-safe work is allowed there. So all the
//! work that allocates or opens files (checking the paths, opening them, creating the ruleset and
//! adding its rules, compiling the seccomp programs, reading the capability numbers) happens in
//! the parent in [`PreparedSandbox::prepare`], and the child makes only raw system calls on
//! prepared data: `prctl` and `capset` to drop the capabilities, `prctl(PR_SET_NO_NEW_PRIVS)`,
//! `landlock_restrict_self` on the prepared ruleset descriptor, and one `seccomp` call per
//! prepared filter. The `landlock` crate's `RulesetCreated::restrict_self` is not used in the
//! child: it consumes the ruleset (one per spawn would mean a `dup` and copies of crate state)
//! and its error path builds crate error values; the raw calls plainly allocate nothing, and
//! `std::io::Error::last_os_error` stores only the errno.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::sync::Arc;

mod caps;
mod paths;
mod seccomp;
mod support;

pub use paths::{path_is_writable, path_is_writable_resolved};
pub use support::{
    Enforcement, FilesystemEnforcement, NetworkEnforcement, SandboxSupport, SupportLevel, probe,
};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetError, Scope,
};

/// The newest Landlock ABI this code asks for. Older kernels get the subset they support (the
/// crate's best-effort mode); [`Enforcement`] says what that subset is.
const TARGET_ABI: ABI = ABI::V10;

/// Rights the ruleset handles but grants on no path, so they are denied everywhere: device nodes
/// (a node for a disk reaches files beneath no write path) and device `ioctl`s.
fn device_rights() -> BitFlags<AccessFs> {
    AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev
}

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
    /// The seccomp filter could not be built.
    #[error("{0}")]
    Seccomp(String),
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
    /// Daemon-control variables ([`crate::env::DAEMON_CONTROL_VARS`]) passed to sandboxed
    /// commands anyway, by exact name (Lathe passes `[shell] keep_env`). By default, none.
    pub keep_env: Vec<String>,
}

impl SandboxPolicy {
    /// The default policy: writes inside `workspace`, `session_tmp`, the system's temporary
    /// directories (`/tmp`, `/var/tmp`, `/dev/shm`: the ones command analysis also treats as
    /// fine places to write, so that what it allows the sandbox does not refuse) and
    /// `/dev/null`; no network. A directory that does not exist is left out when prepared.
    pub fn new(workspace: impl Into<PathBuf>, session_tmp: impl Into<PathBuf>) -> Self {
        SandboxPolicy {
            write_paths: vec![
                workspace.into(),
                session_tmp.into(),
                PathBuf::from("/tmp"),
                PathBuf::from("/var/tmp"),
                PathBuf::from("/dev/shm"),
                PathBuf::from("/dev/null"),
            ],
            network: false,
            keep_env: Vec::new(),
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

    /// Passes the daemon-control variables named in `names` (exact names) to sandboxed commands.
    pub fn keep_env(mut self, names: Vec<String>) -> Self {
        self.keep_env = names;
        self
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
    child: Arc<ChildSetup>,
    enforcement: Enforcement,
    skipped: Vec<SkippedPath>,
    keep_env: Vec<String>,
}

/// What the child does before `exec`, all prepared in the parent.
#[derive(Debug)]
struct ChildSetup {
    ruleset: OwnedFd,
    filters: seccomp::Filters,
    caps: caps::CapDrop,
}

impl ChildSetup {
    /// The after-fork step: async-signal-safe, allocation-free. Capabilities go first (the
    /// bounding set needs `CAP_SETPCAP`, which the drop removes), then no_new_privs (which both
    /// Landlock and seccomp require of an unprivileged caller), Landlock, and the seccomp filters
    /// last, so that nothing they refuse is needed by the steps before.
    fn apply(&self) -> io::Result<()> {
        self.caps.apply()?;
        no_new_privs()?;
        landlock_restrict_self(self.ruleset.as_raw_fd())?;
        self.filters.install()
    }
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
        let handled = AccessFs::from_write(TARGET_ABI);
        let write = handled & !device_rights();
        let mut ruleset = Ruleset::default()
            .handle_access(handled)
            .map_err(ruleset_error)?
            .scope(Scope::from_all(TARGET_ABI))
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
        let filters = seccomp::build(!policy.network, abi).map_err(SandboxError::Seccomp)?;
        let enforcement = Enforcement::new(abi, policy.network, !filters.is_empty());
        Ok(PreparedSandbox {
            child: Arc::new(ChildSetup {
                ruleset: fd,
                filters,
                caps: caps::CapDrop::plan(),
            }),
            enforcement,
            skipped,
            keep_env: policy.keep_env.clone(),
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

    /// Restricts the calling thread, and everything it later starts, with this sandbox: drops
    /// every capability, sets no_new_privs, applies the Landlock ruleset and the seccomp filters.
    ///
    /// Makes only raw system calls on prepared data and allocates nothing, so it may run in a
    /// forked child of a multi-threaded program. It does not touch the environment: a caller
    /// that `exec`s afterwards removes [`crate::env::DAEMON_CONTROL_VARS`] itself
    /// ([`install`](Self::install) does).
    ///
    /// # Safety
    ///
    /// The restriction is irreversible: call this only in a child between `fork` and `exec` (for
    /// example from a `pre_exec` hook) or in a thread meant to be sandboxed for ever. Calling it
    /// on a thread of Lathe itself would confine that thread.
    pub unsafe fn apply_in_child(&self) -> io::Result<()> {
        self.child.apply()
    }

    /// Makes `cmd` apply this sandbox in its child just before `exec`, and removes the
    /// daemon-control variables from its environment (those the policy keeps excepted). A spawn
    /// whose restriction fails returns that error instead of running the command unsandboxed.
    ///
    /// Call it after setting the command's environment: variables added later are not checked.
    pub fn install(&self, cmd: &mut tokio::process::Command) {
        for name in self.daemon_vars(cmd.as_std()) {
            cmd.env_remove(name);
        }
        let child = Arc::clone(&self.child);
        // SAFETY: the hook makes only async-signal-safe system calls and allocates nothing; the
        // Arc keeps the descriptor and the filters alive for as long as the command (and so the
        // hook) lives.
        unsafe {
            cmd.pre_exec(move || child.apply());
        }
    }

    /// Like [`install`](Self::install), for a `std::process::Command`.
    pub fn install_std(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        for name in self.daemon_vars(cmd) {
            cmd.env_remove(name);
        }
        let child = Arc::clone(&self.child);
        // SAFETY: as in `install`.
        unsafe {
            cmd.pre_exec(move || child.apply());
        }
    }

    /// The daemon-control variables `cmd` would pass on: those it sets, and those of this
    /// process it would inherit (removing a name it does not have is harmless).
    fn daemon_vars(&self, cmd: &std::process::Command) -> Vec<std::ffi::OsString> {
        let set = cmd
            .get_envs()
            .filter(|(_, value)| value.is_some())
            .map(|(name, _)| name.to_owned());
        let inherited = std::env::vars_os().map(|(name, _)| name);
        set.chain(inherited)
            .filter(|name| crate::env::is_daemon_control_name(name))
            .filter(|name| {
                !self
                    .keep_env
                    .iter()
                    .any(|kept| std::ffi::OsStr::new(kept) == name)
            })
            .collect()
    }
}

fn no_new_privs() -> io::Result<()> {
    // Variadic arguments are passed at their full register width: the kernel rejects
    // PR_SET_NO_NEW_PRIVS unless arguments 3 to 5 are zero.
    let zero: libc::c_ulong = 0;
    // SAFETY: plain system call with integer arguments; no memory is shared with the kernel.
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
    Ok(())
}

fn landlock_restrict_self(ruleset_fd: RawFd) -> io::Result<()> {
    // SAFETY: integer arguments only; flags 0 restricts the calling thread with the ruleset.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(paths: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            write_paths: paths.iter().map(PathBuf::from).collect(),
            network: false,
            keep_env: Vec::new(),
        }
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
            std::path::Path::new("/nonexistent-lathe-root")
        );
    }
}
