//! Plans: what a call would change, worked out before it is authorized, and applied all or
//! nothing.

use crate::meta::FileChange;
use crate::session::{FileStamp, Session, StampBuilder};
use crate::workspace::ResolvedPath;

use super::ToolOutput;

/// What a call would change, worked out without changing anything ([`Tool::plan`](super::Tool::plan)).
///
/// The plan is computed once, before the call is authorized: the approval prompt shows its
/// diffs, and applying it writes exactly the content it holds, after checking that each file
/// is still what the plan was computed against. The diff shown, the diff stored with the
/// call's events and the change made are therefore the same. A plan kept as a pending action
/// ([`PendingAction::from_plan`](crate::PendingAction::from_plan)) keeps the same guarantee
/// until `resolve` applies it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The files to write (or remove), in order.
    pub writes: Vec<PlannedWrite>,
    /// The result once the plan is applied (without the changes: applying adds them).
    pub output: ToolOutput,
    /// The pending action this plan applies (set by `resolve`): the action leaves the session's
    /// stack when the plan is applied, or found stale. `None` for a call's own plan.
    pub from_pending: Option<u64>,
}

/// One file a plan writes (or removes).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedWrite {
    /// Where, after containment.
    pub target: ResolvedPath,
    /// The file's stamp when the plan was made; `None` when it did not exist.
    pub before: Option<FileStamp>,
    /// The complete new content (empty for a removal).
    pub content: Vec<u8>,
    /// Permission bits for a file the write creates (an existing file keeps its own).
    pub new_mode: u32,
    /// What the write changes, with its diff.
    pub change: FileChange,
    /// True: the file is removed (`content` is ignored).
    pub remove: bool,
}

impl PlannedWrite {
    /// A planned removal of the file at `target`, which had the stamp `before`.
    pub fn removal(target: ResolvedPath, before: FileStamp, change: FileChange) -> Self {
        PlannedWrite {
            target,
            before: Some(before),
            content: Vec::new(),
            new_mode: 0o644,
            change,
            remove: true,
        }
    }
}

/// A file as it was before a plan touched it, to put back when a later file of the plan fails.
struct Original {
    target: ResolvedPath,
    /// Content and permission bits; `None` when the file did not exist.
    before: Option<(Vec<u8>, u32)>,
}

impl Plan {
    /// A plan that writes nothing and returns `output`.
    pub fn nothing(output: ToolOutput) -> Self {
        Plan {
            writes: Vec::new(),
            output,
            from_pending: None,
        }
    }

    /// A plan that makes `writes` and then returns `output`.
    pub fn new(writes: Vec<PlannedWrite>, output: ToolOutput) -> Self {
        Plan {
            writes,
            output,
            from_pending: None,
        }
    }

    /// The changes the plan would make.
    pub fn changes(&self) -> impl Iterator<Item = &FileChange> {
        self.writes.iter().map(|w| &w.change)
    }

    /// The files a plan's own stamps say changed since it was made, as shown to the model; or
    /// why one of them cannot be read.
    pub fn stale_files(&self, session: &Session) -> Result<Vec<String>, ToolOutput> {
        let workspace = session.workspace();
        let mut stale = Vec::new();
        for write in &self.writes {
            match current_stamp(workspace, &write.target) {
                Ok(now) if now == write.before => {}
                Ok(_) => stale.push(write.change.path.clone()),
                Err(err) => {
                    return Err(ToolOutput::error(format!(
                        "cannot write {}: reading what it holds now failed: {err}",
                        write.change.path
                    ))
                    .with_path(write.change.path.clone()));
                }
            }
        }
        Ok(stale)
    }

    /// Applies the plan: checks that every file is still as planned, then writes (or removes)
    /// each one atomically, and returns the planned result with the changes recorded.
    ///
    /// All or nothing: a file that changed since the plan was made stops everything before
    /// anything is written, and a write that fails puts back every file the plan had already
    /// written or removed; the model reads why in both cases.
    pub fn apply(self, session: &Session) -> ToolOutput {
        let Some(id) = self.from_pending else {
            return self.apply_now(session);
        };
        // Applied or not, the action is done with: a stale preview can never apply.
        session.drop_pending(id);
        let mut output = self.apply_now(session);
        if output.is_error && !output.text.contains("pending action was dropped") {
            output
                .text
                .push_str(" The pending action was dropped; make a new preview to try again.");
        }
        output
    }

    fn apply_now(self, session: &Session) -> ToolOutput {
        let stale = match self.stale_files(session) {
            Ok(stale) => stale,
            Err(output) => return output,
        };
        if !stale.is_empty() {
            let (what, again) = if self.from_pending.is_some() {
                (
                    "since it was previewed",
                    "the pending action was dropped: read them again and make a new preview",
                )
            } else {
                (
                    "after this change was worked out (and shown for approval)",
                    "read it again and redo the change",
                )
            };
            let names = stale.join(", ");
            return ToolOutput::error(format!(
                "{names} changed on disk {what}, so nothing was written; {again}"
            ))
            .with_path(stale[0].clone());
        }
        let workspace = session.workspace();
        let mut output = self.output;
        let mut done: Vec<Original> = Vec::new();
        let mut changes = Vec::new();
        for write in &self.writes {
            let original = match original_of(workspace, &write.target) {
                Ok(original) => original,
                Err(err) => {
                    return failed_apply(
                        session,
                        &done,
                        &write.change.path,
                        &err,
                        self.writes.len(),
                    );
                }
            };
            let result = if write.remove {
                workspace.remove_file(&write.target)
            } else {
                workspace.write_atomic(&write.target, &write.content, write.new_mode)
            };
            if let Err(err) = result {
                return failed_apply(session, &done, &write.change.path, &err, self.writes.len());
            }
            done.push(Original {
                target: write.target.clone(),
                before: original,
            });
            changes.push(write.change.clone());
        }
        for write in self.writes {
            if write.remove {
                session.forget_file(write.target.abs());
            } else {
                session.record_file(write.target.abs(), &write.content);
            }
        }
        output.metadata.changes.extend(changes);
        if self.from_pending.is_some() {
            crate::pending::add_still_pending(&mut output, session);
        }
        output
    }
}

fn original_of(
    workspace: &crate::Workspace,
    target: &ResolvedPath,
) -> std::io::Result<Option<(Vec<u8>, u32)>> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
    let mut file = match workspace.open(target, flags, 0) {
        Ok(file) => file,
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let mode = file.metadata()?.permissions().mode() & 0o7777;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some((bytes, mode)))
}

/// The result of a plan whose write of `path` failed with `err`: the files written before it
/// are put back first, and the model reads whether that worked.
fn failed_apply(
    session: &Session,
    done: &[Original],
    path: &str,
    err: &std::io::Error,
    total: usize,
) -> ToolOutput {
    let reason = match err.raw_os_error() {
        Some(libc::ENOTDIR) => "a part of its directory path is a file, not a directory".to_owned(),
        _ => err.to_string(),
    };
    let workspace = session.workspace();
    let mut not_restored = Vec::new();
    for original in done.iter().rev() {
        let result = match &original.before {
            Some((bytes, mode)) => workspace.write_atomic(&original.target, bytes, *mode),
            None => workspace.remove_file(&original.target),
        };
        if result.is_err() {
            not_restored.push(original.target.shown().to_owned());
        }
    }
    let text = if done.is_empty() {
        format!("cannot write {path}: {reason}; nothing was changed")
    } else if not_restored.is_empty() {
        format!(
            "cannot write {path}: {reason}; the {} file(s) already written were put back as \
             they were, so nothing was changed (of {total})",
            done.len()
        )
    } else {
        format!(
            "cannot write {path}: {reason}; putting back the files already written failed \
             for {}: check them",
            not_restored.join(", ")
        )
    };
    ToolOutput::error(text).with_path(path.to_owned())
}

/// The stamp of the file at `target` now; `None` when it does not exist.
pub fn current_stamp(
    workspace: &crate::Workspace,
    target: &ResolvedPath,
) -> std::io::Result<Option<FileStamp>> {
    use std::io::Read;
    // O_NONBLOCK: if a FIFO took the file's place since the plan, opening it must not wait for
    // a writer; regular files ignore the flag.
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
    let mut file = match workspace.open(target, flags, 0) {
        Ok(file) => file,
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("it is no longer a regular file"));
    }
    let len = meta.len();
    let mut stamp = StampBuilder::new(len);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        stamp.update(&buf[..n]);
    }
    stamp
        .finish()
        .map(Some)
        .ok_or_else(|| std::io::Error::other("the file is changing on disk right now"))
}
