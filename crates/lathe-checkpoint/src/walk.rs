//! The walk of the work tree a snapshot covers, in-process, with ripgrep's walker and the
//! rules the snapshot promises: `.gitignore` and `.ignore` at every level (`.ignore` winning,
//! as in ripgrep), the user's `.git/info/exclude`, not the global gitignore and nothing above
//! the workspace; hidden files included; `.git` never; Lathe's own data directory and a file
//! tool's write under way (`lathe_runtime::TEMP_FILE_PATTERN`) never; symbolic links recorded as
//! links, not followed; a directory holding `.git` (a nested repository) not entered.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};

use crate::Uncovered;
use crate::git::{bytes_of, path_of};
use crate::index::Stat;

/// What a walk found.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    /// The files (regular files and symbolic links) a snapshot holds, sorted by path bytes.
    pub(crate) files: Vec<(Vec<u8>, Stat)>,
    /// Too large files and nested repositories.
    pub(crate) uncovered: Vec<Uncovered>,
    /// Every path the walk yielded (directories too), for [`ignored`]; empty unless asked for.
    pub(crate) seen: Vec<Vec<u8>>,
}

/// The rules of one workspace's walks.
#[derive(Debug, Clone)]
pub(crate) struct Rules {
    pub(crate) root: PathBuf,
    /// Directories inside the workspace that are Lathe's own, relative.
    pub(crate) excluded: Vec<PathBuf>,
    pub(crate) max_file_size: u64,
}

/// Per thread: what it found, handed over when the thread's visitor is dropped.
#[derive(Default)]
struct Found {
    files: Vec<(Vec<u8>, Stat)>,
    uncovered: Vec<Uncovered>,
    seen: Vec<Vec<u8>>,
}

impl Rules {
    /// Walks the work tree; `keep_seen` also lists every path yielded. On several threads for a
    /// large tree (`parallel`): on a small one, starting threads and their idle waits cost more
    /// than they save, so it runs on one. Either way through `ignore`'s parallel walker, which
    /// finds each directory's ignore files in the listing it read (the sequential one probes
    /// for `.gitignore`, `.ignore`, `.git` and `.git/info/exclude` in every directory: four
    /// failing system calls a directory).
    pub(crate) fn walk(&self, keep_seen: bool, parallel: bool) -> Walked {
        let nested = Arc::new(Mutex::new(Vec::new()));
        let mut builder = WalkBuilder::new(&self.root);
        builder
            .standard_filters(false)
            .hidden(false)
            .parents(false)
            .ignore(true)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(self.entry_filter(Some(nested.clone())));
        let out: Mutex<Vec<Found>> = Mutex::new(Vec::new());
        if !parallel {
            builder.threads(1);
        }
        builder.build_parallel().run(|| {
            let mut guard = Guard {
                found: Some(Found::default()),
                out: &out,
            };
            Box::new(move |entry| {
                // An unreadable entry is not covered, as git would skip it too.
                if let Ok(entry) = entry {
                    let found = guard.found.as_mut().expect("until dropped");
                    self.visit(found, &entry, keep_seen);
                }
                WalkState::Continue
            })
        });
        let mut walked = Walked::default();
        for found in out.into_inner().unwrap_or_else(|e| e.into_inner()) {
            walked.files.extend(found.files);
            walked.uncovered.extend(found.uncovered);
            walked.seen.extend(found.seen);
        }
        walked
            .uncovered
            .extend(nested.lock().unwrap_or_else(|e| e.into_inner()).drain(..));
        walked.files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        walked.uncovered.sort();
        walked.seen.sort_unstable();
        walked
    }

    /// One entry the walk yielded.
    fn visit(&self, found: &mut Found, entry: &DirEntry, keep_seen: bool) {
        let Some(relative) = relative(&self.root, entry.path()) else {
            return;
        };
        if entry.file_type().is_some_and(|t| t.is_dir()) {
            if keep_seen {
                found.seen.push(relative);
            }
            return;
        }
        let Ok(meta) = entry.metadata() else {
            return;
        };
        if keep_seen {
            found.seen.push(relative.clone());
        }
        let Some(stat) = Stat::of(&meta) else {
            return;
        };
        if meta.is_file() && meta.len() > self.max_file_size {
            found.uncovered.push(Uncovered::TooLarge {
                path: path_of(&relative),
                size: meta.len(),
            });
            return;
        }
        found.files.push((relative, stat));
    }

    /// What the rules leave out of the work tree as ignored, directories collapsed (an ignored
    /// directory is listed, not its files): the paths a walk without ignore files yields and
    /// [`Rules::walk`] does not. Nested repositories, `.git`, Lathe's own directories and
    /// writes under way are not listed (they are never snapshotted, whatever the rules say).
    pub(crate) fn ignored(&self) -> Vec<Uncovered> {
        let seen = self.walk(true, false).seen;
        let ignored = Arc::new(Mutex::new(Vec::new()));
        let sink = ignored.clone();
        let root = self.root.clone();
        let fixed = self.entry_filter(None);
        let mut builder = WalkBuilder::new(&self.root);
        builder
            .standard_filters(false)
            .follow_links(false)
            .filter_entry(move |entry| {
                if !fixed(entry) {
                    return false;
                }
                let Some(relative) = relative(&root, entry.path()) else {
                    return true;
                };
                if seen.binary_search(&relative).is_ok() {
                    return true;
                }
                sink.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(Uncovered::Ignored(path_of(&relative)));
                false
            });
        // Sequential: this walk is for messages, not for every snapshot.
        for _ in builder.build() {}
        let mut ignored = std::mem::take(&mut *ignored.lock().unwrap_or_else(|e| e.into_inner()));
        ignored.sort();
        ignored
    }

    /// Skips `.git`, Lathe's own directories, writes under way and nested repositories (noted
    /// in `nested`, when given).
    fn entry_filter(
        &self,
        nested: Option<Arc<Mutex<Vec<Uncovered>>>>,
    ) -> impl Fn(&DirEntry) -> bool + Send + Sync + 'static {
        let root = self.root.clone();
        let excluded = self.excluded.clone();
        // Compiled only when a name looks like one: its regex costs a small tree's walk a
        // tenth of a millisecond.
        let temp = std::sync::OnceLock::new();
        move |entry| {
            if entry.depth() == 0 {
                return true;
            }
            let name = entry.file_name();
            if name == ".git" {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if !is_dir {
                // The pattern's fixed parts first: a glob match for every file costs a walk of
                // a large tree milliseconds.
                let bytes = name.as_encoded_bytes();
                let candidate = bytes.starts_with(b".")
                    && bytes.ends_with(b".tmp")
                    && bytes.windows(7).any(|w| w == b".lathe-");
                return !(candidate
                    && temp
                        .get_or_init(temp_files)
                        .matched(Path::new(name), false)
                        .is_ignore());
            }
            let relative = Path::new(OsStr::from_bytes(
                below(&root, entry.path()).unwrap_or(bytes_of(entry.path())),
            ));
            if excluded.iter().any(|d| d == relative) {
                return false;
            }
            if std::fs::symlink_metadata(entry.path().join(".git")).is_ok() {
                if let Some(nested) = &nested {
                    nested
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(Uncovered::NestedRepository(relative.to_path_buf()));
                }
                return false;
            }
            true
        }
    }
}

/// The matcher of a file tool's temporary files.
fn temp_files() -> Gitignore {
    let mut builder = GitignoreBuilder::new("/");
    let _ = builder.add_line(None, lathe_runtime::TEMP_FILE_PATTERN);
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// `path`'s bytes relative to `root`; `None` for the root itself.
fn relative(root: &Path, path: &Path) -> Option<Vec<u8>> {
    below(root, path)
        .filter(|bytes| !bytes.is_empty())
        .map(<[u8]>::to_vec)
}

/// The bytes of `path` after `root` and its separator: the walk yields `root` joined with the
/// names below it, so a comparison of bytes does what `Path::strip_prefix`'s comparison of
/// components does, at a fraction of its cost on every entry.
fn below<'a>(root: &Path, path: &'a Path) -> Option<&'a [u8]> {
    let rest = bytes_of(path).strip_prefix(bytes_of(root))?;
    if rest.is_empty() || bytes_of(root).ends_with(b"/") {
        return Some(rest);
    }
    rest.strip_prefix(b"/")
}

struct Guard<'a> {
    found: Option<Found>,
    out: &'a Mutex<Vec<Found>>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Some(found) = self.found.take() {
            self.out
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(found);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_is_strip_prefix_by_components() {
        let cases = [
            ("/a/b", "/a/b/c/d", Some("c/d")),
            ("/a/b", "/a/b", Some("")),
            ("/a/b", "/a/bc", None),
            ("/a/b", "/a", None),
            ("/", "/x/y", Some("x/y")),
        ];
        for (root, path, want) in cases {
            let got = below(Path::new(root), Path::new(path));
            assert_eq!(got, want.map(str::as_bytes), "{path} below {root}");
            let by_components = Path::new(path).strip_prefix(root).ok();
            assert_eq!(got, by_components.map(bytes_of), "{path} below {root}");
        }
    }

    #[test]
    fn the_quick_check_of_temporary_files_knows_the_pattern() {
        // The walk tests `.`, `.lathe-` and `.tmp` before the glob: a new pattern needs a new
        // quick check.
        assert_eq!(lathe_runtime::TEMP_FILE_PATTERN, ".*.lathe-*.tmp");
    }
}
