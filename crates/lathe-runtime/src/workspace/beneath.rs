//! Opening beneath a root descriptor: the one primitive every open of a workspace path goes
//! through, for the file tools and for what a directory walk finds.
//!
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` resolves the whole relative path in the
//! kernel against the root's descriptor and fails with `ELOOP` on any symlink, in any component,
//! and with `EXDEV` on an escape. Kernels without `openat2` (before 5.6, or a seccomp filter that
//! answers `ENOSYS`) get the same guarantee component by component: each directory is opened
//! with `openat(O_NOFOLLOW)` relative to the one before it.
//!
//! A walk (the `ignore` crate's, for `grep`, `glob` and `list_files`) lists directories by path
//! name, so a directory swapped for a symlink while it runs can make it list a tree outside the
//! workspace. [`Beneath`] is what the walk checks each entry against before it reads, reports or
//! descends into it: an entry that cannot be reached beneath its root without a symlink was not
//! listed from inside the workspace, and is skipped without being named.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{FileStat, Mode};

/// Set once `openat2` answered `ENOSYS`: later opens go component by component directly.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// Opens `rel` (relative, without `..`) beneath `dir`, refusing every symlink on the way,
/// including a last component that is one (unless `flags` has `O_PATH | O_NOFOLLOW`, which
/// opens the link itself).
pub(super) fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    mode: u32,
) -> nix::Result<OwnedFd> {
    let flags = flags | OFlag::O_CLOEXEC;
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let how = OpenHow::new()
            .flags(flags)
            .mode(Mode::from_bits_truncate(mode))
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        match nix::fcntl::openat2(dir, rel, how) {
            Err(Errno::ENOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
            other => return other,
        }
    }
    open_componentwise(dir, rel, flags, mode)
}

/// The fallback of [`open_beneath`]: one `openat(O_NOFOLLOW)` per component.
fn open_componentwise(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlag,
    mode: u32,
) -> nix::Result<OwnedFd> {
    let mut names = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            // What RESOLVE_BENEATH refuses: leaving the root, or starting elsewhere.
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(Errno::EXDEV);
            }
        }
    }
    let Some((last, parents)) = names.split_last() else {
        return nix::fcntl::openat(dir, ".", flags, Mode::from_bits_truncate(mode));
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let at = current.as_ref().map_or(dir, |fd| fd.as_fd());
        let next = nix::fcntl::openat(
            at,
            *name,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|err| match err {
            // A symlink opened with O_PATH | O_NOFOLLOW is not a directory: say what openat2
            // says for it (a regular file on the way stays ENOTDIR).
            Errno::ENOTDIR if is_symlink_at(at, name) => Errno::ELOOP,
            other => other,
        })?;
        current = Some(next);
    }
    let at = current.as_ref().map_or(dir, |fd| fd.as_fd());
    let path_only_link = flags.contains(OFlag::O_PATH) && flags.contains(OFlag::O_NOFOLLOW);
    let flags = if path_only_link {
        flags
    } else {
        flags | OFlag::O_NOFOLLOW
    };
    nix::fcntl::openat(at, *last, flags, Mode::from_bits_truncate(mode))
}

fn is_symlink_at(dir: BorrowedFd<'_>, name: &std::ffi::OsStr) -> bool {
    nix::sys::stat::fstatat(dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| stat.st_mode & libc::S_IFMT == libc::S_IFLNK)
}

/// True when an open beneath a root failed because the path is no longer what a walk listed: a
/// symlink appeared in it (`ELOOP`), it left the root (`EXDEV`), or it vanished or stopped being
/// a directory (`ENOENT`, `ENOTDIR`).
pub fn changed_under_walk(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error(),
        Some(libc::ELOOP | libc::EXDEV | libc::ENOENT | libc::ENOTDIR)
    )
}

/// The roots' descriptors, cheap to clone, for opening what a walk finds beneath them.
#[derive(Debug, Clone)]
pub struct Beneath {
    roots: Arc<[(PathBuf, Arc<OwnedFd>)]>,
}

impl Beneath {
    pub(super) fn new(roots: Vec<(PathBuf, Arc<OwnedFd>)>) -> Self {
        Beneath {
            roots: roots.into(),
        }
    }

    /// The root that holds `abs` (the deepest, when roots nest) and the path relative to it.
    fn split<'a>(&self, abs: &'a Path) -> io::Result<(BorrowedFd<'_>, &'a Path)> {
        self.roots
            .iter()
            .filter_map(|(root, fd)| abs.strip_prefix(root).ok().map(|rel| (root, fd, rel)))
            .max_by_key(|(root, _, _)| root.as_os_str().len())
            .map(|(_, fd, rel)| {
                let rel = if rel.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    rel
                };
                (fd.as_fd(), rel)
            })
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EXDEV))
    }

    /// Opens `abs` (absolute, normalised, inside one of the roots) beneath its root, refusing
    /// every symlink on the way. See [`changed_under_walk`] for the errors that mean "not what
    /// was listed".
    pub fn open(&self, abs: &Path, flags: OFlag) -> io::Result<File> {
        let (dir, rel) = self.split(abs)?;
        let fd = open_beneath(dir, rel, flags, 0)?;
        Ok(File::from(fd))
    }

    /// The status of `abs` itself (a symlink is described, not followed), reached beneath its
    /// root without following any symlink on the way.
    pub fn lstat(&self, abs: &Path) -> io::Result<FileStat> {
        let file = self.open(abs, OFlag::O_PATH | OFlag::O_NOFOLLOW)?;
        Ok(nix::sys::stat::fstat(file.as_fd())?)
    }

    /// The target of the symlink `abs`, read through a descriptor opened beneath its root.
    pub fn read_link(&self, abs: &Path) -> io::Result<PathBuf> {
        let file = self.open(abs, OFlag::O_PATH | OFlag::O_NOFOLLOW)?;
        let target = nix::fcntl::readlinkat(file.as_fd(), "")?;
        Ok(PathBuf::from(target))
    }

    /// True when `abs` is a directory reached beneath its root without a symlink: a walk may
    /// descend into it.
    pub fn is_real_dir(&self, abs: &Path) -> bool {
        self.open(abs, OFlag::O_PATH | OFlag::O_DIRECTORY).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(dir: &Path) -> Beneath {
        let fd = nix::fcntl::open(
            dir,
            OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        Beneath::new(vec![(dir.to_path_buf(), Arc::new(fd))])
    }

    #[test]
    fn symlinks_in_any_component_are_refused_both_ways() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(ws.join("real")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("real/f"), "in").unwrap();
        std::fs::write(outside.join("f"), "out").unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
        std::os::unix::fs::symlink("real/f", ws.join("flink")).unwrap();
        let beneath = root(&ws);
        let dir = beneath.roots[0].1.as_fd();
        for componentwise in [false, true] {
            let open = |rel: &str, flags: OFlag| {
                if componentwise {
                    open_componentwise(dir, Path::new(rel), flags | OFlag::O_CLOEXEC, 0)
                } else {
                    open_beneath(dir, Path::new(rel), flags, 0)
                }
            };
            assert!(open("real/f", OFlag::O_RDONLY).is_ok());
            assert_eq!(
                open("link/f", OFlag::O_RDONLY).unwrap_err(),
                Errno::ELOOP,
                "{componentwise}"
            );
            assert_eq!(open("flink", OFlag::O_RDONLY).unwrap_err(), Errno::ELOOP);
            assert_eq!(
                open("real/f/x", OFlag::O_RDONLY).unwrap_err(),
                Errno::ENOTDIR
            );
            assert!(open("flink", OFlag::O_PATH | OFlag::O_NOFOLLOW).is_ok());
            assert_eq!(
                open("../outside/f", OFlag::O_RDONLY).unwrap_err(),
                Errno::EXDEV
            );
        }
        assert!(beneath.is_real_dir(&ws.join("real")));
        assert!(!beneath.is_real_dir(&ws.join("link")));
        assert_eq!(
            beneath.read_link(&ws.join("flink")).unwrap(),
            Path::new("real/f")
        );
        let err = beneath
            .open(&ws.join("link/f"), OFlag::O_RDONLY)
            .unwrap_err();
        assert!(changed_under_walk(&err), "{err}");
        let err = beneath
            .open(&outside.join("f"), OFlag::O_RDONLY)
            .unwrap_err();
        assert!(changed_under_walk(&err), "{err}");
    }
}
