//! Watching the places where a tool call can plant code that later runs outside the sandbox:
//! the workspace's `.lathe/` (its configuration), and git's hooks, configuration and attributes
//! (a `git commit` the user runs later runs `.git/hooks/pre-commit`, `core.hooksPath`,
//! `core.fsmonitor`, aliases and filters, all unsandboxed).
//!
//! The registry takes a fingerprint before the first call that may change something and
//! compares after every call: a stat (size, times, inode, mode) of a few dozen entries, and a
//! SHA-256 of a file only when its stat changed. A change is reported in the call's result text
//! and in its metadata (`workspace_changes`), from which the agent emits an event.

mod git;
mod report;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::session::{Session, lock};
use crate::tool::{ToolKind, ToolOutput};

use git::{expand_home, find_git, program_keys};
pub use report::{Change, ChangeKind, Watched, changes_in, describe, summary};

/// The most entries looked at under one watched directory; past it the rest is not seen and the
/// result says so. The files that matter most (`.lathe/config.toml`, the hooks git runs by name)
/// are looked at first and outside this count, so that filling a directory cannot hide them.
const MAX_ENTRIES: usize = 256;
/// The hooks git runs, by name (githooks(5)).
const GIT_HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
    "post-index-change",
];
/// How deep the walk goes inside a watched directory.
const MAX_DEPTH: usize = 6;
/// Files larger than this are compared by their stat alone.
const MAX_HASHED_BYTES: u64 = 4 << 20;

/// The metadata key of the changes.
pub const META_KEY: &str = "workspace_changes";

/// One entry as seen.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    what: Watched,
    file_type: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
    mode: u32,
    /// Of a regular file not larger than [`MAX_HASHED_BYTES`].
    hash: Option<[u8; 32]>,
}

impl Seen {
    fn same_stat(&self, other: &Seen) -> bool {
        (
            self.file_type,
            self.size,
            self.mtime,
            self.ctime,
            self.ino,
            self.mode,
        ) == (
            other.file_type,
            other.size,
            other.mtime,
            other.ctime,
            other.ino,
            other.mode,
        )
    }

    /// Same content and kind (a `touch` or an identical rewrite is no change).
    fn same(&self, other: &Seen) -> bool {
        if self.same_stat(other) {
            return true;
        }
        self.file_type == other.file_type
            && self.mode == other.mode
            && self.hash.is_some()
            && self.hash == other.hash
    }
}

/// The watched entries at one moment, by path.
#[derive(Debug, Default)]
struct Fingerprint {
    entries: BTreeMap<PathBuf, Seen>,
    /// Git settings that run programs, by configuration file.
    git_keys: BTreeMap<PathBuf, Vec<String>>,
    /// Watched directories with more than [`MAX_ENTRIES`] entries.
    cut: Vec<PathBuf>,
}

/// The session's last fingerprint.
#[derive(Default)]
struct WatchState {
    last: Mutex<Option<Fingerprint>>,
}

/// Before a call: the first call that may change something (an edit or a command) takes the
/// first fingerprint. Read-only calls cost nothing until then.
pub fn before_call(session: &Session, kind: ToolKind) {
    if kind == ToolKind::Read && session.existing_extension::<WatchState>().is_none() {
        return;
    }
    let state = session.extension(WatchState::default);
    let mut last = lock(&state.last);
    if last.is_none() {
        *last = Some(fingerprint(session.workspace().root(), None));
    }
}

/// After a call: compares with the last fingerprint and, when something changed, says so in
/// `output` (text and metadata). Also catches what a background command did since the last
/// call.
pub fn after_call(session: &Session, output: &mut ToolOutput) {
    let Some(state) = session.existing_extension::<WatchState>() else {
        return;
    };
    let mut last = lock(&state.last);
    let Some(before) = last.take() else {
        return;
    };
    let now = fingerprint(session.workspace().root(), Some(&before));
    let changes = compare(session.workspace().root(), &before, &now);
    let newly_cut: Vec<String> = now
        .cut
        .iter()
        .filter(|dir| !before.cut.contains(dir))
        .map(|dir| dir.display().to_string())
        .collect();
    *last = Some(now);
    drop(last);
    if changes.is_empty() && newly_cut.is_empty() {
        return;
    }
    if !output.text.is_empty() && !output.text.ends_with('\n') {
        output.text.push('\n');
    }
    if !newly_cut.is_empty() {
        output.text.push_str(&format!(
            "[workspace safety: {} now hold more than {MAX_ENTRIES} entries; Lathe watches the \
             hooks git runs and .lathe/config.toml there, not every other entry]\n",
            newly_cut.join(", ")
        ));
    }
    if changes.is_empty() {
        return;
    }
    output.text.push_str(&describe(&changes));
    output.metadata.extra.insert(
        META_KEY.into(),
        serde_json::to_value(&changes).unwrap_or(Value::Null),
    );
}

fn compare(root: &Path, before: &Fingerprint, now: &Fingerprint) -> Vec<Change> {
    let mut changes = Vec::new();
    let shown = |path: &Path| match path.strip_prefix(root) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    };
    for (path, seen) in &now.entries {
        let change = match before.entries.get(path) {
            None => ChangeKind::Created,
            Some(old) if !old.same(seen) => ChangeKind::Changed,
            Some(_) => continue,
        };
        // A directory holds nothing that runs: what is put in it is reported.
        if seen.file_type == libc::S_IFDIR {
            continue;
        }
        let keys = key_changes(before.git_keys.get(path), now.git_keys.get(path));
        // Most changes of git's configuration (a remote, a branch, user.name) run nothing.
        if seen.what == Watched::GitConfig && keys.is_empty() {
            continue;
        }
        changes.push(Change {
            path: shown(path),
            change,
            what: seen.what,
            keys,
        });
    }
    for (path, seen) in &before.entries {
        if !now.entries.contains_key(path) {
            let keys = key_changes(before.git_keys.get(path), None);
            // Past the cap, an entry may only be unseen.
            let unseen = |cut: &[PathBuf]| cut.iter().any(|dir| path.starts_with(dir));
            if unseen(&before.cut)
                || unseen(&now.cut)
                || seen.file_type == libc::S_IFDIR
                || (seen.what == Watched::GitConfig && keys.is_empty())
            {
                continue;
            }
            changes.push(Change {
                path: shown(path),
                change: ChangeKind::Deleted,
                what: seen.what,
                keys,
            });
        }
    }
    changes
}

fn key_changes(before: Option<&Vec<String>>, now: Option<&Vec<String>>) -> Vec<String> {
    let empty = Vec::new();
    let (before, now) = (before.unwrap_or(&empty), now.unwrap_or(&empty));
    let mut keys: Vec<String> = now
        .iter()
        .filter(|k| !before.contains(k))
        .cloned()
        .collect();
    keys.extend(
        before
            .iter()
            .filter(|k| !now.contains(k))
            .map(|k| format!("-{k}")),
    );
    keys
}

/// Takes a fingerprint of the watched places of the workspace at `root`, reusing the hashes of
/// `previous` for entries whose stat did not change.
fn fingerprint(root: &Path, previous: Option<&Fingerprint>) -> Fingerprint {
    let mut walk = Walk {
        out: Fingerprint::default(),
        previous,
        left: 0,
    };
    walk.watch_dir(&root.join(".lathe"), Watched::LatheConfig);
    if let Some(git) = find_git(root) {
        walk.entry(&git.dot_git, Watched::GitDir);
        let config = git.common.join("config");
        walk.entry(&config, Watched::GitConfig);
        let mut hooks_path = None;
        for file in [config.clone(), git.dir.join("config.worktree")] {
            if file != config {
                walk.entry(&file, Watched::GitConfig);
            }
            let unchanged = previous.and_then(|p| {
                let (old, new) = (p.entries.get(&file)?, walk.out.entries.get(&file)?);
                old.same_stat(new).then(|| p.git_keys.get(&file).cloned())?
            });
            let keys = match unchanged {
                Some(keys) => Some(keys),
                None => std::fs::read_to_string(&file)
                    .ok()
                    .map(|text| program_keys(&text)),
            };
            if let Some(keys) = keys {
                if let Some(value) = keys
                    .iter()
                    .filter_map(|k| k.strip_prefix("core.hookspath="))
                    .next_back()
                {
                    hooks_path = Some(value.to_owned());
                }
                walk.out.git_keys.insert(file, keys);
            }
        }
        walk.entry(&git.common.join("info/attributes"), Watched::GitAttributes);
        walk.watch_dir(&git.common.join("hooks"), Watched::GitHook);
        if let Some(value) = hooks_path {
            let dir = expand_home(&value);
            let dir = if dir.is_absolute() {
                dir
            } else {
                git.work_tree.join(dir)
            };
            walk.watch_dir(&dir, Watched::GitHook);
        }
    }
    walk.out
}

struct Walk<'a> {
    out: Fingerprint,
    previous: Option<&'a Fingerprint>,
    /// Entries the current directory's walk may still record.
    left: usize,
}

impl Walk<'_> {
    /// Records a watched directory: first the files that matter most, then the rest up to
    /// [`MAX_ENTRIES`].
    fn watch_dir(&mut self, dir: &Path, what: Watched) {
        let first: &[&str] = match what {
            Watched::GitHook => GIT_HOOKS,
            Watched::LatheConfig => &["config.toml"],
            _ => &[],
        };
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            for name in first {
                self.entry(&dir.join(name), what);
            }
        }
        self.left = MAX_ENTRIES;
        self.tree(dir, what, 0);
        if self.left == 0 {
            self.out.cut.push(dir.to_path_buf());
        }
    }

    /// Records `path` (without following a final symlink); `None` when it does not exist or
    /// was recorded already.
    fn entry(&mut self, path: &Path, what: Watched) -> Option<u32> {
        if self.out.entries.contains_key(path) {
            return None;
        }
        let meta = std::fs::symlink_metadata(path).ok()?;
        let file_type = meta.mode() & libc::S_IFMT;
        let mut seen = Seen {
            what,
            file_type,
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
            hash: None,
        };
        let old = self.previous.and_then(|p| p.entries.get(path));
        seen.hash = match old {
            Some(old) if old.same_stat(&seen) => old.hash,
            _ if file_type == libc::S_IFREG && seen.size <= MAX_HASHED_BYTES => hash_file(path),
            _ if file_type == libc::S_IFLNK => std::fs::read_link(path)
                .ok()
                .map(|target| Sha256::digest(target.as_os_str().as_encoded_bytes()).into()),
            _ => None,
        };
        self.out.entries.insert(path.to_path_buf(), seen);
        Some(file_type)
    }

    /// Records `dir` and what is beneath it (symlinks are recorded, not followed).
    fn tree(&mut self, dir: &Path, what: Watched, depth: usize) {
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        let is_dir = match self.out.entries.get(dir) {
            Some(seen) => seen.file_type == libc::S_IFDIR,
            None => self.entry(dir, what) == Some(libc::S_IFDIR),
        };
        if !is_dir || depth >= MAX_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut names: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        names.sort();
        for path in names {
            if self.left == 0 {
                return;
            }
            // Git runs a hook by its exact name only: `pre-commit.sample` is inert.
            if what == Watched::GitHook && path.extension().is_some_and(|e| e == "sample") {
                continue;
            }
            self.tree(&path, what, depth + 1);
        }
    }
}

fn hash_file(path: &Path) -> Option<[u8; 32]> {
    use std::io::Read;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let mut hasher = Sha256::new();
    let mut buf = [0u8; 16 * 1024];
    let mut reader = file.take(MAX_HASHED_BYTES);
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(_) => return None,
        }
    }
    Some(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(changes: &[Change]) -> Vec<(String, &'static str)> {
        changes
            .iter()
            .map(|c| (c.path.clone(), c.change.as_str()))
            .collect()
    }

    #[test]
    fn hooks_config_and_lathe_files_are_seen_created_changed_and_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(root.join(".git/hooks/pre-push"), "#!/bin/sh\n").unwrap();
        let before = fingerprint(root, None);

        std::fs::write(root.join(".git/hooks/pre-commit"), "#!/bin/sh\nevil\n").unwrap();
        std::fs::remove_file(root.join(".git/hooks/pre-push")).unwrap();
        // Inert: git never runs a sample.
        std::fs::write(root.join(".git/hooks/pre-rebase.sample"), "x").unwrap();
        std::fs::write(
            root.join(".git/config"),
            "[core]\n\tbare = false\n\thooksPath = .githooks\n[alias]\n\tst = !sh -c x\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".lathe")).unwrap();
        std::fs::write(
            root.join(".lathe/config.toml"),
            "[shell]\nsandbox = false\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".githooks")).unwrap();
        std::fs::write(root.join(".githooks/pre-commit"), "x").unwrap();
        let now = fingerprint(root, Some(&before));
        let changes = compare(root, &before, &now);
        assert_eq!(
            paths(&changes),
            [
                (".git/config".to_owned(), "changed"),
                (".git/hooks/pre-commit".to_owned(), "created"),
                (".githooks/pre-commit".to_owned(), "created"),
                (".lathe/config.toml".to_owned(), "created"),
                (".git/hooks/pre-push".to_owned(), "deleted"),
            ]
        );
        assert_eq!(
            changes[0].keys,
            ["core.hookspath=.githooks", "alias.st=!sh -c x"]
        );
        let text = describe(&changes);
        assert!(text.contains("cat .git/hooks/pre-commit;"), "{text}");
        assert!(text.contains("`lathe trust`"), "{text}");

        // A configuration change that runs nothing (a remote, user.name) is not reported.
        let mut config = std::fs::read_to_string(root.join(".git/config")).unwrap();
        config
            .push_str("[user]\n\tname = me\n[remote \"origin\"]\n\turl = https://example.com/r\n");
        std::fs::write(root.join(".git/config"), &config).unwrap();
        let quiet = fingerprint(root, Some(&now));
        assert!(compare(root, &now, &quiet).is_empty());
        // ...but an ext:: transport is.
        config.push_str("[remote \"evil\"]\n\turl = ext::sh -c touch% /tmp/x\n");
        std::fs::write(root.join(".git/config"), &config).unwrap();
        let loud = fingerprint(root, Some(&quiet));
        assert_eq!(
            compare(root, &quiet, &loud)[0].keys,
            ["remote.evil.url=ext::sh -c touch% /tmp/x"]
        );
        let now = loud;
        // A new repository is no news: its config runs nothing and its hooks are samples.
        let fresh = tempfile::tempdir().unwrap();
        let empty = fingerprint(fresh.path(), None);
        std::fs::create_dir_all(fresh.path().join(".git/hooks")).unwrap();
        std::fs::write(fresh.path().join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        std::fs::write(fresh.path().join(".git/hooks/pre-commit.sample"), "x").unwrap();
        let made = fingerprint(fresh.path(), Some(&empty));
        assert!(compare(fresh.path(), &empty, &made).is_empty());

        // Nothing changed: nothing reported, and a rewrite with the same bytes is no change.
        let again = fingerprint(root, Some(&now));
        assert!(compare(root, &now, &again).is_empty());
        std::fs::write(
            root.join(".lathe/config.toml"),
            "[shell]\nsandbox = false\n",
        )
        .unwrap();
        let rewritten = fingerprint(root, Some(&again));
        assert!(compare(root, &again, &rewritten).is_empty());
    }

    #[test]
    fn filling_a_directory_does_not_hide_a_planted_hook_or_config() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(root.join(".lathe")).unwrap();
        let before = fingerprint(root, None);
        for i in 0..MAX_ENTRIES + 10 {
            std::fs::write(root.join(format!(".lathe/a{i:04}")), "x").unwrap();
            std::fs::write(root.join(format!(".git/hooks/a{i:04}")), "x").unwrap();
        }
        std::fs::write(root.join(".lathe/config.toml"), "x").unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "x").unwrap();
        let now = fingerprint(root, Some(&before));
        assert_eq!(now.cut.len(), 2, "{:?}", now.cut);
        let changes = compare(root, &before, &now);
        let shown: Vec<_> = changes.iter().map(|c| c.path.as_str()).collect();
        assert!(shown.contains(&".lathe/config.toml"), "{shown:?}");
        assert!(shown.contains(&".git/hooks/pre-commit"), "{shown:?}");
        // Past the cap, what is unseen is not reported as deleted.
        let again = fingerprint(root, Some(&now));
        assert!(compare(root, &now, &again).is_empty());
    }

    #[test]
    fn a_worktree_git_file_leads_to_the_common_hooks() {
        let dir = tempfile::tempdir().unwrap();
        let main = dir.path().join("main");
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(main.join(".git/hooks")).unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        std::fs::create_dir_all(wt.join("sub")).unwrap();
        let root = wt.join("sub");
        let before = fingerprint(&root, None);
        std::fs::write(main.join(".git/hooks/post-checkout"), "x").unwrap();
        std::fs::write(
            main.join(".git/worktrees/wt/config.worktree"),
            "[core]\nfsmonitor = x\n",
        )
        .unwrap();
        let changes = compare(&root, &before, &fingerprint(&root, Some(&before)));
        let shown = paths(&changes);
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert!(
            shown[0].0.ends_with("main/.git/hooks/post-checkout"),
            "{shown:?}"
        );
        assert!(
            shown[1].0.ends_with("worktrees/wt/config.worktree"),
            "{shown:?}"
        );
        assert_eq!(changes[1].keys, ["core.fsmonitor=x"]);
    }
}
