//! Putting files back as a tree holds them: only the paths a step changed, each checked first
//! against the state the step left, so that nobody else's later change is overwritten.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::git::{Git, bytes_of, path_of};
use crate::odb::Odb;
use crate::{Error, Result};

const MODE_FILE: u32 = 0o100644;
const MODE_EXEC: u32 = 0o100755;
const MODE_LINK: u32 = 0o120000;
const MODE_GITLINK: u32 = 0o160000;

/// A path's state in a tree or on disk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Not there.
    Absent,
    /// A file or symbolic link, by git mode and blob id.
    Present { mode: u32, blob: String },
    /// Something a tree cannot hold here (a directory where a file was, an unreadable file).
    Other,
}

/// One path to put back: what must be there now, and what to put.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) path: PathBuf,
    pub(crate) expected: Entry,
    pub(crate) target: Entry,
}

/// The paths changed from tree `from` to tree `to`, each with its state in both (submodules'
/// commits left out: they are their own repository's business).
pub(crate) fn changed(git: &Git, from: &str, to: &str) -> Result<Vec<(PathBuf, Entry, Entry)>> {
    let entry = |state: crate::odb::State| match state {
        None => Entry::Absent,
        Some((mode, oid)) => Entry::Present {
            mode,
            blob: crate::objects::hex(&oid),
        },
    };
    let gitlink = |state: &crate::odb::State| matches!(state, Some((MODE_GITLINK, _)));
    Ok(Odb::new(git)
        .diff(from, to)?
        .into_iter()
        .filter(|(_, old, new)| !gitlink(old) && !gitlink(new))
        .map(|(path, old, new)| (path_of(&path), entry(old), entry(new)))
        .collect())
}

/// What a path is on disk, as the index would take it.
pub(crate) enum Disk {
    /// Nothing there.
    Missing,
    /// A file (its git mode by the owner's exec bit) or a symbolic link (its target's bytes).
    Blob { mode: u32, bytes: Vec<u8> },
    /// Something a tree cannot hold (a directory, a socket, a path through a file, an entry
    /// that cannot be examined).
    Other,
}

/// Reads what `full` is now; `Err` only for a file that cannot be read.
pub(crate) fn on_disk(full: &Path) -> Result<Disk> {
    use std::os::unix::fs::PermissionsExt;
    let meta = match std::fs::symlink_metadata(full) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Disk::Missing),
        Err(_) => return Ok(Disk::Other),
        Ok(meta) => meta,
    };
    if meta.file_type().is_symlink() {
        return Ok(match std::fs::read_link(full) {
            Ok(target) => Disk::Blob {
                mode: MODE_LINK,
                bytes: bytes_of(&target).to_vec(),
            },
            Err(_) => Disk::Other,
        });
    }
    if !meta.is_file() {
        return Ok(Disk::Other);
    }
    // As git records it (and the snapshot's walk): the owner's exec bit decides.
    let mode = if meta.permissions().mode() & 0o100 != 0 {
        MODE_EXEC
    } else {
        MODE_FILE
    };
    let bytes = std::fs::read(full).map_err(|e| Error::io(full, e))?;
    Ok(Disk::Blob { mode, bytes })
}

/// The state of each path on disk now: blob ids computed in-process (as `git hash-object
/// --no-filters` would, nothing stored).
pub(crate) fn current(git: &Git, paths: &[&Path]) -> Result<BTreeMap<PathBuf, Entry>> {
    use crate::objects::{Kind, hex, id};
    let mut states = BTreeMap::new();
    for path in paths {
        let state = match on_disk(&git.work_tree.join(path))? {
            Disk::Missing => Entry::Absent,
            Disk::Other => Entry::Other,
            Disk::Blob { mode, bytes } => Entry::Present {
                mode,
                blob: hex(&id(Kind::Blob, &bytes)),
            },
        };
        states.insert(path.to_path_buf(), state);
    }
    Ok(states)
}

/// Whether a path's state on disk is the one expected, for git: same kind, same exec bit, same
/// bytes.
pub(crate) fn same(now: &Entry, expected: &Entry) -> bool {
    now == expected
}

/// Refuses a path that could lead a restore out of the workspace: anything but plain names
/// (`..`, an absolute path), or a directory on the way that is a symbolic link now (a `d/` the
/// turn wrote into, replaced since by `d -> ~/.ssh`). Only the last component may be a link:
/// that link itself is what is replaced or removed.
pub(crate) fn stays_inside(root: &Path, path: &Path) -> std::io::Result<()> {
    use std::path::Component;
    if path.as_os_str().is_empty()
        || path
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
    {
        return Err(std::io::Error::other("not a path inside the workspace"));
    }
    let mut dir = root.to_path_buf();
    let mut parts = path.components().peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            break;
        }
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(std::io::Error::other(format!(
                    "{} is a symbolic link now; nothing is written through it",
                    dir.strip_prefix(root).unwrap_or(&dir).display()
                )));
            }
            // Missing: created as a directory on the way; a file there fails below.
            _ => {}
        }
    }
    Ok(())
}

/// Writes `target` at `path` (or removes it), keeping the permission bits a file has now apart
/// from the exec bits the target says. Never through a link out of the workspace
/// ([`stays_inside`]).
pub(crate) fn apply(git: &Git, change: &Change) -> Result<()> {
    let full = git.work_tree.join(&change.path);
    let io = |e| Error::io(&full, e);
    stays_inside(&git.work_tree, &change.path).map_err(io)?;
    match &change.target {
        Entry::Absent | Entry::Other => match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => Err(Error::io(
                &full,
                std::io::Error::other("a directory is there now"),
            )),
            Ok(_) => std::fs::remove_file(&full).map_err(io),
            Err(_) => Ok(()),
        },
        Entry::Present { mode, blob } => {
            let bytes =
                Odb::new(git).read(&crate::odb::oid_of(blob)?, crate::objects::Kind::Blob)?;
            let parent = full.parent().unwrap_or(&git.work_tree);
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
            let existing = std::fs::symlink_metadata(&full).ok();
            if existing.as_ref().is_some_and(|m| m.is_dir()) {
                return Err(Error::io(
                    &full,
                    std::io::Error::other("a directory is there now"),
                ));
            }
            if *mode == MODE_LINK {
                if existing.is_some() {
                    std::fs::remove_file(&full).map_err(io)?;
                }
                return std::os::unix::fs::symlink(path_of(&bytes), &full).map_err(io);
            }
            use std::os::unix::fs::PermissionsExt;
            let mut perm = existing
                .as_ref()
                .filter(|m| m.is_file())
                .map_or(0o644, |m| m.permissions().mode() & 0o7777);
            if *mode == MODE_EXEC {
                perm |= (perm & 0o444) >> 2;
            } else {
                perm &= !0o111;
            }
            // Atomic: a reader sees the old file or the restored one, never half of it.
            let mut file = tempfile::NamedTempFile::new_in(parent).map_err(io)?;
            std::io::Write::write_all(&mut file, &bytes).map_err(io)?;
            file.as_file()
                .set_permissions(std::fs::Permissions::from_mode(perm))
                .map_err(io)?;
            // On disk before it takes the name: after a crash, the old file or the whole
            // restored one, never an empty or partial file under the file's name.
            file.as_file().sync_all().map_err(io)?;
            if existing
                .as_ref()
                .is_some_and(|m| m.file_type().is_symlink())
            {
                std::fs::remove_file(&full).map_err(io)?;
            }
            file.persist(&full).map_err(|e| Error::io(&full, e.error))?;
            Ok(())
        }
    }
}

/// Removes the directories left empty above removed files, up to the work tree.
pub(crate) fn prune_empty_parents(root: &Path, removed: &[PathBuf]) {
    for path in removed {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            // `remove_dir` refuses a directory that is not empty: exactly the check wanted; and
            // never a directory reached through a link.
            let inside = stays_inside(root, &d.join("x")).is_ok();
            if !inside || std::fs::remove_dir(root.join(d)).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}
