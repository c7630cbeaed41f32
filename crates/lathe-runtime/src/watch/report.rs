//! What a change is, as data (the metadata and the agent's event carry it), and how Lathe words
//! it for the model and for the user.

use serde::{Deserialize, Serialize};

use super::META_KEY;

/// What a watched path is to Lathe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Watched {
    /// Under `.lathe/`: the workspace's configuration.
    LatheConfig,
    /// A git hook (under the hooks directory, or `core.hooksPath`).
    GitHook,
    /// Git's configuration (`config`, `config.worktree`).
    GitConfig,
    /// Git's attributes (`info/attributes`), which select filters and diff drivers.
    GitAttributes,
    /// The `.git` file or directory itself (a `.git` file names the repository).
    GitDir,
}

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// It did not exist.
    Created,
    /// Its content, kind or mode changed.
    Changed,
    /// It is gone.
    Deleted,
}

impl ChangeKind {
    /// `created`, `changed` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Changed => "changed",
            ChangeKind::Deleted => "deleted",
        }
    }
}

/// One change, as the metadata (`workspace_changes`) and the agent's event carry it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// The path, relative to the workspace root when inside it.
    pub path: String,
    /// How it changed.
    pub change: ChangeKind,
    /// What the path is.
    pub what: Watched,
    /// For git configuration: the settings that run programs which were added or changed, and
    /// (with a leading `-`) removed: `core.hookspath=x`, `-alias.st=!sh`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
}

/// The changes a call's result carries in its metadata (none when it has none).
pub fn changes_in(metadata: &crate::Metadata) -> Vec<Change> {
    metadata
        .extra
        .get(META_KEY)
        .and_then(|value| Vec::<Change>::deserialize(value).ok())
        .unwrap_or_default()
}

/// One paragraph for the user: what changed, and what Lathe did about it.
pub fn summary(changes: &[Change]) -> String {
    let listed: Vec<String> = changes
        .iter()
        .map(|c| {
            let keys = if c.keys.is_empty() {
                String::new()
            } else {
                format!(" ({})", c.keys.join(", "))
            };
            format!("{} {}{keys}", c.path, c.change.as_str())
        })
        .collect();
    let mut message = format!("changed: {}.", listed.join("; "));
    if changes.iter().any(|c| c.what == Watched::LatheConfig) {
        message.push_str(
            " A changed .lathe/config.toml is untrusted: its settings that weaken safety apply \
             only after you review it and run `lathe trust`.",
        );
    }
    if changes.iter().any(|c| c.what != Watched::LatheConfig) {
        message.push_str(
            " Lathe does not run git hooks, but a later git command outside Lathe would: review \
             them (git config --list --show-origin, the hook files).",
        );
    }
    message
}

/// What Lathe says about the changes: which paths, how, and what it did about them.
pub fn describe(changes: &[Change]) -> String {
    let mut text = String::from(
        "[workspace safety: places whose code can run outside the sandbox changed since the last check:",
    );
    for change in changes {
        text.push_str(&format!("\n  {} {}", change.path, change.change.as_str()));
        if !change.keys.is_empty() {
            text.push_str(&format!(
                " (settings that run programs: {})",
                change.keys.join(", ")
            ));
        }
    }
    let lathe = changes.iter().any(|c| c.what == Watched::LatheConfig);
    let git = changes.iter().any(|c| c.what != Watched::LatheConfig);
    if lathe {
        text.push_str(
            "\n  .lathe/: Lathe reads its configuration only at start, and a changed \
             .lathe/config.toml is untrusted: its settings that weaken safety will not apply until \
             the user reviews it and runs `lathe trust`.",
        );
    }
    if git {
        let hook = changes
            .iter()
            .find(|c| c.what == Watched::GitHook && c.change != ChangeKind::Deleted)
            .map(|c| format!("cat {}; ", c.path))
            .unwrap_or_default();
        text.push_str(&format!(
            "\n  git: Lathe does not run git hooks or the programs git's configuration names, but \
             a later `git commit` (or other git command) outside Lathe would, unsandboxed. The \
             user has been told; review the change ({hook}git config --list --show-origin) and \
             undo it unless it was asked for."
        ));
    }
    text.push(']');
    text
}
