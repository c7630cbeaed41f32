//! Workspace containment: every path a tool touches is resolved against one root and refused
//! when it leaves it.
//!
//! Resolution follows symlinks the way the kernel will (so a link inside the workspace that
//! points outside is caught), and opening uses `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//! on the resolved, symlink-free path relative to a directory descriptor of the root: a symlink
//! swapped in between the check and the use makes the open fail instead of escaping.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;

mod beneath;

use beneath::open_beneath;
pub use beneath::{Beneath, changed_under_walk};

/// How a path will be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reading: the workspace and the extra read-only roots are allowed.
    Read,
    /// Writing: only the workspace is allowed.
    Write,
}

/// Why a path was refused. The `Display` text is written for the model.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path was empty.
    #[error("the path is empty: give a path relative to the workspace root")]
    Empty,
    /// The path holds a NUL character, which no file name can.
    #[error("the path {0:?} contains a NUL character (\\0), which no file name can hold")]
    Nul(String),
    /// The path resolves outside every allowed root.
    #[error(
        "'{input}' is outside the workspace ({root}){via}; only paths inside the workspace can be {verb}"
    )]
    Outside {
        /// The path as given.
        input: String,
        /// The workspace root.
        root: String,
        /// " (through a symlink to ...)" or empty.
        via: String,
        /// "read" or "written".
        verb: &'static str,
    },
    /// The path goes through /proc or another magic-link filesystem.
    #[error("'{0}' goes through /proc; paths through /proc are not allowed")]
    Proc(String),
    /// Too many symlinks, or a symlink loop.
    #[error("'{0}' has a symlink loop or too many symlinks")]
    SymlinkLoop(String),
}

/// A path that passed containment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    abs: PathBuf,
    shown: String,
    root_index: usize,
}

impl ResolvedPath {
    /// The absolute, symlink-free path.
    pub fn abs(&self) -> &Path {
        &self.abs
    }

    /// The path as shown to the model: relative to the workspace root when inside it.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

#[derive(Debug)]
struct Root {
    path: PathBuf,
    dir: Arc<OwnedFd>,
}

/// The workspace root and the extra roots that may be read.
#[derive(Debug)]
pub struct Workspace {
    roots: Vec<Root>,
}

fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    nix::fcntl::open(
        path,
        OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)
}

impl Workspace {
    /// A workspace rooted at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let path = root.as_ref().canonicalize()?;
        let dir = Arc::new(open_dir(&path)?);
        Ok(Workspace {
            roots: vec![Root { path, dir }],
        })
    }

    /// Adds a directory the tools may read but never write. Missing directories are skipped.
    pub fn add_read_root(&mut self, root: impl AsRef<Path>) -> io::Result<()> {
        let path = match root.as_ref().canonicalize() {
            Ok(path) => path,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        };
        if self.roots.iter().any(|r| r.path == path) {
            return Ok(());
        }
        let dir = Arc::new(open_dir(&path)?);
        self.roots.push(Root { path, dir });
        Ok(())
    }

    /// The workspace root (canonical).
    pub fn root(&self) -> &Path {
        &self.roots[0].path
    }

    /// How `abs` is shown to the model: relative to the root when inside it (`.` for the root),
    /// absolute otherwise.
    pub fn shown(&self, abs: &Path) -> String {
        match abs.strip_prefix(self.root()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_owned(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => abs.to_string_lossy().into_owned(),
        }
    }

    /// Resolves `input` (relative to the root, or absolute) for `access`, or says why not.
    pub fn resolve(&self, input: &str, access: Access) -> Result<ResolvedPath, PathError> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(PathError::Empty);
        }
        if trimmed.contains('\0') {
            return Err(PathError::Nul(trimmed.to_owned()));
        }
        let expanded = expand_home(trimmed);
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            self.root().join(expanded)
        };
        if is_magic(&joined) {
            return Err(PathError::Proc(trimmed.to_owned()));
        }
        let (abs, via_link) = resolve_following_links(&joined)
            .map_err(|_| PathError::SymlinkLoop(trimmed.to_owned()))?;
        if is_magic(&abs) {
            return Err(PathError::Proc(trimmed.to_owned()));
        }
        let allowed = match access {
            Access::Read => self.roots.len(),
            Access::Write => 1,
        };
        let root_index = self.roots[..allowed]
            .iter()
            .position(|root| abs.starts_with(&root.path));
        match root_index {
            Some(root_index) => Ok(ResolvedPath {
                shown: self.shown(&abs),
                abs,
                root_index,
            }),
            None => Err(PathError::Outside {
                input: trimmed.to_owned(),
                root: self.root().display().to_string(),
                via: match via_link {
                    Some((link, target)) if target == abs => format!(
                        " (through the symlink {}, which points to {})",
                        self.shown(&link),
                        target.display()
                    ),
                    Some((link, target)) => format!(
                        " (through the symlink {}, which points to {}; the path resolves to {})",
                        self.shown(&link),
                        target.display(),
                        abs.display()
                    ),
                    None => String::new(),
                },
                verb: match access {
                    Access::Read => "read",
                    Access::Write => "written",
                },
            }),
        }
    }

    /// `input` as the approval policy judges it: as given, and as it resolves through symlinks
    /// in every existing component (a missing tail kept as written, so `cfg/new.toml` with
    /// `cfg -> .lathe` is `.lathe/new.toml`). The gates build file actions only from this.
    pub fn target(&self, input: &str) -> lathe_policy::FileTarget {
        let trimmed = input.trim();
        let expanded = expand_home(trimmed);
        let joined = if expanded.is_absolute() {
            expanded
        } else {
            self.root().join(expanded)
        };
        if trimmed.is_empty() || trimmed.contains('\0') {
            return lathe_policy::FileTarget::unresolved(trimmed);
        }
        match resolve_following_links(&joined) {
            Ok((abs, _)) => lathe_policy::FileTarget::resolved(trimmed, abs),
            // A symlink loop: the tools refuse the path; it is judged as written.
            Err(()) => lathe_policy::FileTarget::unresolved(trimmed),
        }
    }

    fn relative<'a>(&self, path: &'a ResolvedPath) -> (&Root, &'a Path) {
        let root = &self.roots[path.root_index];
        let rel = path.abs.strip_prefix(&root.path).unwrap_or(Path::new(""));
        (root, rel)
    }

    /// Opens a resolved path with `flags`, refusing any symlink met on the way (one appearing
    /// after resolution is a race and must not be followed).
    pub fn open(&self, path: &ResolvedPath, flags: OFlag, mode: u32) -> io::Result<File> {
        let (root, rel) = self.relative(path);
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        let fd =
            open_beneath(root.dir.as_fd(), rel, flags | OFlag::O_CLOEXEC, mode).map_err(|err| {
                match err {
                    Errno::ELOOP | Errno::EXDEV => io::Error::other(format!(
                        "'{}' changed while it was being opened (a symlink appeared); try again",
                        path.shown
                    )),
                    other => io::Error::from(other),
                }
            })?;
        Ok(File::from(fd))
    }

    /// The roots' descriptors, for opening what a directory walk finds beneath them (see
    /// [`Beneath`]).
    pub fn beneath(&self) -> Beneath {
        Beneath::new(
            self.roots
                .iter()
                .map(|root| (root.path.clone(), Arc::clone(&root.dir)))
                .collect(),
        )
    }

    /// Opens a resolved path for reading.
    pub fn open_read(&self, path: &ResolvedPath) -> io::Result<File> {
        self.open(path, OFlag::O_RDONLY, 0)
    }

    /// Opens (creating each missing directory, as `mkdir -p` does) the directory that will hold
    /// `path`. Every step refuses symlinks, so the directories created stay inside the root.
    fn open_parent_creating(&self, path: &ResolvedPath) -> io::Result<OwnedFd> {
        self.open_parent(path, true)
    }

    /// Opens the directory that holds `path`, creating missing directories when `create`.
    fn open_parent(&self, path: &ResolvedPath, create: bool) -> io::Result<OwnedFd> {
        let (root, rel) = self.relative(path);
        let parent = rel.parent().unwrap_or(Path::new(""));
        let mut dir: OwnedFd = root.dir.as_fd().try_clone_to_owned()?;
        for component in parent.components() {
            let Component::Normal(name) = component else {
                continue;
            };
            let flags = OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
            let next = match open_beneath(dir.as_fd(), Path::new(name), flags, 0) {
                Ok(fd) => fd,
                Err(Errno::ENOENT) if create => {
                    match nix::sys::stat::mkdirat(
                        dir.as_fd(),
                        name,
                        Mode::from_bits_truncate(0o777),
                    ) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(err) => return Err(err.into()),
                    }
                    open_beneath(dir.as_fd(), Path::new(name), flags, 0)?
                }
                Err(err) => return Err(err.into()),
            };
            dir = next;
        }
        Ok(dir)
    }

    /// Removes the file (or symbolic link) at `path`; never a directory, never through a
    /// symbolic link on the way. A file that is already gone is not an error.
    pub fn remove_file(&self, path: &ResolvedPath) -> io::Result<()> {
        if path.root_index != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("'{}' is in a read-only root", path.shown),
            ));
        }
        let name = path
            .abs
            .file_name()
            .filter(|_| !self.relative(path).1.as_os_str().is_empty())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
        let dir = match self.open_parent(path, false) {
            Ok(dir) => dir,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err),
        };
        match nix::unistd::unlinkat(dir.as_fd(), name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
            Ok(()) => {
                let _ = nix::unistd::fsync(dir.as_fd());
                Ok(())
            }
            Err(Errno::ENOENT) => Ok(()),
            Err(Errno::EISDIR) => Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                format!("'{}' is a directory", path.shown),
            )),
            Err(err) => Err(err.into()),
        }
    }

    /// Replaces (or creates) the file at `path` with `bytes` atomically: a temporary file in the
    /// same directory, written and synced, then renamed over the target. An existing file keeps
    /// its permissions; a new one gets `new_mode` (before the umask). Parent directories are
    /// created. Readers see the old content or the new, never a mix.
    pub fn write_atomic(&self, path: &ResolvedPath, bytes: &[u8], new_mode: u32) -> io::Result<()> {
        if path.root_index != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("'{}' is in a read-only root", path.shown),
            ));
        }
        if self.relative(path).1.as_os_str().is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::IsADirectory,
                "the workspace root is a directory, not a file",
            ));
        }
        let dir = self.open_parent_creating(path)?;
        let name = path
            .abs
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
        let existing = match nix::sys::stat::fstatat(
            dir.as_fd(),
            name,
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFDIR => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("'{}' is a directory", path.shown),
                ));
            }
            Ok(stat) => Some(stat),
            Err(Errno::ENOENT) => None,
            Err(err) => return Err(err.into()),
        };
        if let Some(stat) = &existing {
            // Replacing by rename needs only the directory's permission: check the file's own,
            // so that a file this user may not write (mode 0444, someone else's) stays as it is.
            let writable = nix::unistd::faccessat(
                dir.as_fd(),
                name,
                nix::unistd::AccessFlags::W_OK,
                nix::fcntl::AtFlags::AT_EACCESS,
            );
            if let Err(Errno::EACCES | Errno::EPERM | Errno::EROFS) = writable {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!(
                        "'{}' is not writable by this user (mode {:o}); change its permissions \
                         first if it should be changed",
                        path.shown,
                        stat.st_mode & 0o7777
                    ),
                ));
            }
        }
        let existing_mode = existing.as_ref().map(|stat| stat.st_mode & 0o7777);
        let (tmp_name, fd) = create_temp(dir.as_fd(), name, existing_mode.unwrap_or(new_mode))?;
        let result = (|| {
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            if let Some(stat) = &existing {
                // The file keeps its owner where this process may give it (root may; others
                // own what they create, and a refusal is not an error).
                let _ = nix::unistd::fchown(
                    file.as_fd(),
                    Some(nix::unistd::Uid::from_raw(stat.st_uid)),
                    Some(nix::unistd::Gid::from_raw(stat.st_gid)),
                );
            }
            if let Some(mode) = existing_mode {
                // The umask applied at creation; an existing file's mode is restored exactly
                // (after the owner: changing it clears set-id bits).
                nix::sys::stat::fchmod(file.as_fd(), Mode::from_bits_truncate(mode))?;
            }
            file.sync_all()?;
            nix::fcntl::renameat(dir.as_fd(), tmp_name.as_os_str(), dir.as_fd(), name)?;
            Ok(())
        })();
        if result.is_err() {
            let _ = nix::unistd::unlinkat(
                dir.as_fd(),
                tmp_name.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
        } else {
            // Make the rename itself durable.
            let _ = nix::unistd::fsync(dir.as_fd());
        }
        result
    }
}

/// The names of the temporary files an atomic write creates beside its target (`.NAME.lathe-
/// PID-N.tmp`, renamed over the target when complete), as a gitignore pattern: whoever lists the
/// workspace while a write is under way (a checkpoint's snapshot) leaves them out.
pub const TEMP_FILE_PATTERN: &str = ".*.lathe-*.tmp";

fn create_temp(
    dir: std::os::fd::BorrowedFd<'_>,
    name: &OsStr,
    mode: u32,
) -> io::Result<(PathBuf, OwnedFd)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut tmp = std::ffi::OsString::from(".");
        tmp.push(name);
        tmp.push(format!(".lathe-{}-{n}.tmp", std::process::id()));
        let flags =
            OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_WRONLY | OFlag::O_CLOEXEC | OFlag::O_NOFOLLOW;
        match nix::fcntl::openat(dir, tmp.as_os_str(), flags, Mode::from_bits_truncate(mode)) {
            Ok(fd) => return Ok((PathBuf::from(tmp), fd)),
            Err(Errno::EEXIST) => continue,
            Err(err) => return Err(err.into()),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "could not create a temporary file",
    ))
}

fn expand_home(input: &str) -> PathBuf {
    if (input == "~" || input.starts_with("~/"))
        && let Some(home) = std::env::var_os("HOME")
    {
        return Path::new(&home).join(input.trim_start_matches('~').trim_start_matches('/'));
    }
    PathBuf::from(input)
}

/// Paths through /proc (or /dev/fd, which points into it) reach other roots via magic links.
fn is_magic(path: &Path) -> bool {
    path.starts_with("/proc") || path.starts_with("/dev/fd") || path.starts_with("/dev/stdin")
}

/// A resolver for the command analysis: maps an absolute path to where it leads through
/// symlinks (every existing component followed, a missing tail kept), so that the policy judges
/// `cat notenv` with `notenv -> .env` as reading `.env`.
pub fn link_resolver() -> lathe_policy::PathResolver {
    lathe_policy::PathResolver::new(|abs| {
        let path = Path::new(abs);
        if !path.is_absolute() {
            return None;
        }
        resolve_following_links(path)
            .ok()
            .map(|(resolved, _)| resolved.to_string_lossy().into_owned())
    })
}

/// The most symlinks one resolution follows (the kernel's limit is 40).
const MAX_LINKS: usize = 40;

/// Resolves `path` component by component as the kernel would, following symlinks in existing
/// components and treating the missing tail lexically. Returns the resolved path and, when a
/// symlink was followed, the first one met and its target as written in the link.
fn resolve_following_links(path: &Path) -> Result<(PathBuf, Option<(PathBuf, PathBuf)>), ()> {
    let mut pending: Vec<std::ffi::OsString> = Vec::new();
    push_components(&mut pending, path);
    let mut current = PathBuf::from("/");
    let mut missing = false;
    let mut links = 0usize;
    let mut via = None;
    while let Some(part) = pending.pop() {
        if part == ".." {
            current.pop();
            missing = std::fs::symlink_metadata(&current).is_err();
            continue;
        }
        if part == "." || part.is_empty() {
            continue;
        }
        current.push(&part);
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                links += 1;
                if links > MAX_LINKS {
                    return Err(());
                }
                let target = std::fs::read_link(&current).map_err(|_| ())?;
                via.get_or_insert_with(|| (current.clone(), target.clone()));
                current.pop();
                if target.is_absolute() {
                    current = PathBuf::from("/");
                }
                push_components(&mut pending, &target);
            }
            Ok(_) => {}
            Err(_) => missing = true,
        }
    }
    Ok((current, via))
}

/// Pushes the components of `path` onto a stack so that the first component is popped first.
fn push_components(stack: &mut Vec<std::ffi::OsString>, path: &Path) {
    let parts: Vec<std::ffi::OsString> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            Component::ParentDir => Some("..".into()),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}
