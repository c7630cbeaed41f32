//! Checkpoints of the workspace, so that every change an agent makes can be seen and taken
//! back, shell commands' changes included.
//!
//! Before the first change of a turn, [`Checkpoints::before_change`] records the workspace as
//! it is; [`Checkpoints::after_turn`] records what the turn left. The records live in a shadow
//! git repository in Lathe's data directory (its own `GIT_DIR`, the workspace as work tree;
//! the user's `.git` is never read for history nor written), one ref and one index file per
//! session, so sessions never share state. Undo puts back only the paths a turn changed, and
//! only where the file is still what the turn left: a file somebody changed since is listed
//! and left alone unless the caller forces it. An undo is a step of its own, which redo takes
//! back.
//!
//! Without `git` on the machine, the checkpoints fall back to copies of the files the file
//! tools change, kept in the sessions database ([`Coverage::FileTools`]): changes made by shell
//! commands are then not covered.
//!
//! [`CheckpointRecorder`] is the agent loop's seam: a [`lathe_runtime::Hook`] that snapshots before
//! the first call of a turn whose effects are not read-only.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use lathe_checkpoint::{Checkpoints, Force, UndoTarget};
//! let (data, workspace) = (tempfile::tempdir()?, tempfile::tempdir()?);
//! let notes = workspace.path().join("notes.txt");
//! std::fs::write(&notes, "before\n")?;
//!
//! let checkpoints = Checkpoints::builder(data.path(), workspace.path(), "s1").build()?;
//! checkpoints.before_change(1)?;
//! std::fs::write(&notes, "changed by turn 1\n")?; // a tool, or any program
//! let stat = checkpoints.after_turn(1)?.expect("turn 1 changed a file");
//! assert_eq!((stat.files, stat.added, stat.removed), (1, 1, 1));
//!
//! let undone = checkpoints.undo(UndoTarget::Last, Force::No)?.expect("something to undo");
//! assert!(undone.conflicts.is_empty());
//! assert_eq!(std::fs::read_to_string(&notes)?, "before\n");
//! checkpoints.redo(Force::No)?.expect("the undo can be taken back");
//! assert_eq!(std::fs::read_to_string(&notes)?, "changed by turn 1\n");
//! # Ok(())
//! # }
//! ```

#![deny(missing_docs)]

mod engine;
mod fallback;
mod git;
mod index;
mod objects;
mod odb;
mod pack;
mod recorder;
mod refs;
pub mod report;
mod restore;
pub mod session;
mod shadow;
mod tree;
mod walk;

use std::path::PathBuf;

pub use engine::{Builder, Checkpoints, Coverage, DEFAULT_MAX_FILE_SIZE};
pub use recorder::CheckpointRecorder;

/// A fault of the checkpoint machinery (not of the user's request).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A git command failed.
    #[error("git failed ({command}): {message}")]
    Git {
        /// The command's arguments.
        command: String,
        /// What git said.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The sessions database failed.
    #[error(transparent)]
    Store(#[from] lathe_store::Error),
    /// Without git, checkpoints need the sessions database, and none was given.
    #[error(
        "git is not installed (not found on PATH) and no sessions database was given: no checkpoints can be kept"
    )]
    Unavailable,
}

impl Error {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// The crate's result.
pub type Result<T> = std::result::Result<T, Error>;

/// Something snapshots leave out, to say where undo is offered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Uncovered {
    /// A file over the size limit.
    TooLarge {
        /// The path, relative to the workspace.
        path: PathBuf,
        /// Its size in bytes.
        size: u64,
    },
    /// An ignored file or directory (`.gitignore`, `.ignore`, `.git/info/exclude`).
    Ignored(PathBuf),
    /// A git repository inside the workspace: its files are its own repository's business.
    NestedRepository(PathBuf),
}

/// One recorded step of a session: a turn, an undo or a redo, with the workspace's state before
/// and after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Its id (a commit of the shadow repository, or a number in the fallback).
    pub id: String,
    /// The turn it belongs to (for an undo or redo: the newest turn it concerns).
    pub turn: u32,
    /// What it was.
    pub kind: StepKind,
    /// The state before (a tree id).
    pub before: String,
    /// The state after (a tree id).
    pub after: String,
    /// The files the file tools said they changed in it (shell commands say nothing).
    pub claimed: Vec<PathBuf>,
    /// For an undo or redo: the files it left alone because they had changed since (a forced
    /// undo of the same turns can still take them back).
    pub left_alone: Vec<PathBuf>,
    /// When it was recorded, where known.
    pub at: Option<lathe_store::Timestamp>,
}

/// What a step was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepKind {
    /// A turn of the agent.
    Turn,
    /// An undo of the turn steps listed.
    Undo {
        /// The ids of the turn steps it undid.
        targets: Vec<String>,
    },
    /// A redo of an undo.
    Redo {
        /// The id of the undo step it took back.
        target: String,
    },
}

/// Which turns an undo takes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UndoTarget {
    /// The newest turn not undone yet.
    Last,
    /// Every turn from this one on that is not undone yet.
    Since(u32),
}

/// Whether files changed since the step are overwritten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Force {
    /// Files changed since are listed and left alone.
    No,
    /// Files changed since are overwritten too.
    Yes,
}

/// What an undo or a redo did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restored {
    /// The turns it concerned, oldest first.
    pub turns: Vec<u32>,
    /// The id of the step that records it (`None` when nothing was written).
    pub step: Option<String>,
    /// The files put back, relative to the workspace.
    pub restored: Vec<PathBuf>,
    /// Files somebody changed since the step: left alone (unless forced).
    pub conflicts: Vec<PathBuf>,
    /// Files another session's file tools changed the same way meanwhile (overlapping turns):
    /// theirs, left alone.
    pub others: Vec<PathBuf>,
    /// Files that could not be put back, with why.
    pub failed: Vec<(PathBuf, String)>,
}

/// Why there is nothing to undo or redo: the plain answer for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nothing {
    /// The session has recorded no change (or every one is undone already).
    ToUndo,
    /// No undo waits to be taken back.
    ToRedo,
    /// A turn ran after the undo: redoing it now would mix the two.
    RedoAfterTurn {
        /// The turn that came after.
        turn: u32,
    },
}

impl std::fmt::Display for Nothing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Nothing::ToUndo => f.write_str(
                "nothing to undo: this session changed no files that are not undone already",
            ),
            Nothing::ToRedo => {
                f.write_str("nothing to redo: no undo of this session waits to be taken back")
            }
            Nothing::RedoAfterTurn { turn } => write!(
                f,
                "nothing to redo: turn {turn} changed files after the last undo; undo that turn first"
            ),
        }
    }
}

/// One file a step changed, with its line counts (`None` for a binary file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    /// The path, relative to the workspace.
    pub path: PathBuf,
    /// Lines added (`None`: binary).
    pub added: Option<u64>,
    /// Lines removed (`None`: binary).
    pub removed: Option<u64>,
}

/// The size of what a step changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffStat {
    /// Files changed.
    pub files: usize,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}
