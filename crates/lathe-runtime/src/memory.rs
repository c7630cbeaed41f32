//! The project's memory: the Markdown file (`.lathe/memory.md` by default, `[memory] path` in the
//! configuration) that every new session's system prompt holds after `AGENTS.md`. Where a
//! session keeps it, how it is read and parsed into entries; the `update_memory` tool changes it,
//! the gate asks for every change, the prompt and `lathe memory` read it.

mod entries;

use std::io::{self, Read};

use serde::{Deserialize, Serialize};

pub use entries::{Entry, MAX_ENTRY_CHARS, MemoryText, clean_entry};

use crate::session::Session;
use crate::workspace::{Access, ResolvedPath, Workspace};

/// Where the memory is kept when the configuration does not say: relative to the workspace.
pub const DEFAULT_MEMORY_PATH: &str = ".lathe/memory.md";

/// The largest memory file the tool writes, in bytes; the system prompt holds at most this
/// much of it (a file edited by hand past it is cut there, with a note).
pub const MAX_MEMORY_BYTES: usize = 8 * 1024;

/// What the model reads when a memory change needed the user and nobody could be asked.
pub const NOBODY_TO_ASK: &str = "memory changes always need the user's approval, and nobody \
could be asked in this run, so the memory was not changed. Do not retry it; finish, and say what \
you would have remembered: the user can approve memory changes in `lathe chat`, or write them \
with `lathe memory edit`";

/// The `[memory]` section of the configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryConfig {
    /// The memory file, relative to the workspace root. By default, `.lathe/memory.md`.
    pub path: Option<String>,
}

impl MemoryConfig {
    /// The memory file, relative to the workspace root.
    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(DEFAULT_MEMORY_PATH)
    }

    /// Checks the path: relative to the workspace and inside it, naming a file.
    pub fn check(&self) -> Result<(), String> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let p = std::path::Path::new(path.trim());
        let bad = if path.trim().is_empty() {
            Some("is empty")
        } else if p.is_absolute() || path.starts_with('~') {
            Some("is not relative to the workspace")
        } else if p
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
        {
            Some("leads out of the workspace")
        } else if path.ends_with('/') || p.file_name().is_none() {
            Some("names a directory")
        } else {
            None
        };
        match bad {
            Some(why) => Err(format!(
                "[memory] path '{path}' {why}: give a file inside the workspace, such as \
                 {DEFAULT_MEMORY_PATH}"
            )),
            None => Ok(()),
        }
    }
}

/// The session's memory configuration.
struct Settings(MemoryConfig);

/// Sets where `session` keeps its memory. Returns `false` (and changes nothing) when it was
/// already set.
pub fn configure(session: &Session, config: MemoryConfig) -> bool {
    let mut applied = false;
    session.extension(|| {
        applied = true;
        Settings(config)
    });
    applied
}

/// The memory file of `session`, relative to the workspace root.
pub fn memory_path(session: &Session) -> String {
    session
        .existing_extension::<Settings>()
        .map(|s| s.0.path().to_owned())
        .unwrap_or_else(|| DEFAULT_MEMORY_PATH.to_owned())
}

/// Resolves the memory file `path` inside the workspace: never in a read-only root, never
/// through a symbolic link that leads out.
pub fn resolve(workspace: &Workspace, path: &str) -> Result<ResolvedPath, String> {
    workspace
        .resolve(path, Access::Write)
        .map_err(|err| format!("the memory file {path} cannot be used: {err}"))
}

/// The memory file's bytes (at most `limit` of them) and its whole length; `None` when there
/// is no file. The file is opened inside the workspace only.
pub fn read(
    workspace: &Workspace,
    target: &ResolvedPath,
    limit: usize,
) -> io::Result<Option<(Vec<u8>, u64)>> {
    use nix::fcntl::OFlag;
    let file = match workspace.open(target, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
        Ok(file) => file,
        Err(err)
            if err.kind() == io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(limit as u64).read_to_end(&mut bytes)?;
    Ok(Some((bytes, meta.len())))
}

/// A workspace's memory file, for whoever edits it by hand (`lathe memory`).
pub struct MemoryFile {
    workspace: Workspace,
    target: ResolvedPath,
}

impl MemoryFile {
    /// The memory file `path` of `workspace` (see [`resolve`]).
    pub fn open(workspace: Workspace, path: &str) -> Result<MemoryFile, String> {
        let target = resolve(&workspace, path)?;
        Ok(MemoryFile { workspace, target })
    }

    /// Where it is.
    pub fn target(&self) -> &ResolvedPath {
        &self.target
    }

    /// The path as shown: relative to the workspace.
    pub fn shown(&self) -> &str {
        self.target.shown()
    }

    /// The file's text; `None` when there is no file.
    pub fn text(&self) -> Result<Option<String>, String> {
        let read = read(&self.workspace, &self.target, usize::MAX)
            .map_err(|err| format!("cannot read the memory file {}: {err}", self.shown()))?;
        read.map(|(bytes, _)| {
            String::from_utf8(bytes).map_err(|_| {
                format!(
                    "the memory file {} is not UTF-8 text; fix it with `lathe memory edit`",
                    self.shown()
                )
            })
        })
        .transpose()
    }

    /// Replaces the file's text, atomically.
    pub fn write(&self, text: &str) -> Result<(), String> {
        self.workspace
            .write_atomic(&self.target, text.as_bytes(), 0o644)
            .map_err(|err| format!("cannot write the memory file {}: {err}", self.shown()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_path_must_stay_inside_the_workspace() {
        let ok = |p: &str| {
            MemoryConfig {
                path: Some(p.into()),
            }
            .check()
        };
        assert_eq!(ok("notes/memory.md"), Ok(()));
        assert_eq!(MemoryConfig::default().check(), Ok(()));
        assert_eq!(MemoryConfig::default().path(), DEFAULT_MEMORY_PATH);
        for (path, why) in [
            ("/etc/memory.md", "not relative"),
            ("~/memory.md", "not relative"),
            ("../memory.md", "leads out"),
            ("notes/", "names a directory"),
            (" ", "is empty"),
        ] {
            let err = ok(path).unwrap_err();
            assert!(err.contains(why), "{path}: {err}");
        }
    }
}
