//! `[agent] git_branch = true` / `--branch`: before the first change of a session, when the
//! workspace is a git repository on a branch with a clean tree, create `lathe/<session id>`
//! and switch to it, so the session's work lands on a branch of its own. Otherwise one line
//! says why not. This uses the user's own repository on purpose (the git binary, as the user
//! would), unlike the checkpoints' shadow repository.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use lathe_agent::events::Event;
use lathe_agent::sink::EventSink;
use lathe_runtime::{CallInfo, FileChange, Hook, Session};

/// The hook that makes the branch before the first call that may change the workspace.
pub struct BranchGuard {
    root: PathBuf,
    branch: String,
    sink: EventSink,
    done: AtomicBool,
}

impl BranchGuard {
    /// A hook for session `id` in the workspace at `root`, saying what it did through `sink`.
    pub fn new(root: &Path, id: &str, sink: EventSink) -> Self {
        BranchGuard {
            root: root.to_owned(),
            branch: format!("lathe/{id}"),
            sink,
            done: AtomicBool::new(false),
        }
    }
}

impl Hook for BranchGuard {
    fn before_run(
        &self,
        call: &CallInfo,
        _changes: &[FileChange],
        _session: &Session,
    ) -> Result<(), String> {
        if self.done.load(Ordering::SeqCst) || !call.judgement.may_change_workspace {
            return Ok(());
        }
        if self.done.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let message = match switch(&self.root, &self.branch) {
            Ok(()) => format!(
                "switched to a new branch {} for this session's changes (git_branch)",
                self.branch
            ),
            Err(why) => format!("not on a branch of its own ({}): {why}", self.branch),
        };
        self.sink.emit(Event::Notice { message });
        Ok(())
    }
}

/// `git` in `root`, with nothing of a caller's git environment.
fn git(root: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(std::process::Stdio::null())
        .output()
}

/// Creates `branch` at HEAD and switches to it, or says why it did not.
pub fn switch(root: &Path, branch: &str) -> Result<(), String> {
    let inside = git(root, &["rev-parse", "--is-inside-work-tree"])
        .map_err(|err| format!("git could not be run ({err}); is it installed?"))?;
    if !inside.status.success() || String::from_utf8_lossy(&inside.stdout).trim() != "true" {
        return Err("the workspace is not a git repository".to_owned());
    }
    let head = git(root, &["symbolic-ref", "-q", "HEAD"]).map_err(|e| e.to_string())?;
    if !head.status.success() {
        return Err(
            "HEAD is detached (no branch is checked out); check out a branch to get one per session"
                .to_owned(),
        );
    }
    let status = git(root, &["status", "--porcelain", "--untracked-files=normal"])
        .map_err(|e| e.to_string())?;
    if !status.status.success() {
        return Err(format!(
            "git status failed: {}",
            String::from_utf8_lossy(&status.stderr).trim()
        ));
    }
    if !status.stdout.is_empty() {
        return Err(
            "the working tree has uncommitted changes; commit or stash them first to get a branch per session"
                .to_owned(),
        );
    }
    let made = git(root, &["checkout", "-q", "-b", branch]).map_err(|e| e.to_string())?;
    if !made.status.success() {
        return Err(format!(
            "git could not create it: {}",
            String::from_utf8_lossy(&made.stderr).trim()
        ));
    }
    Ok(())
}
