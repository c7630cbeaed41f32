//! The shadow repository: one per workspace in Lathe's data directory, one index file and one
//! ref namespace per session. A snapshot is the tree of the work tree as the walk of
//! `crate::walk` finds it (`.gitignore` and `.ignore` at every level and the user's
//! `.git/info/exclude`, as ripgrep reads them; not the global gitignore), without files over
//! the size limit; the session's index is its stat cache, read and written in-process, and the
//! changed files' blobs and their directories' trees are written in-process too
//! (`crate::objects`, `crate::tree`): a snapshot starts no git process. A step is a pair of
//! commits (the state before, the state after) on the session's ref
//! `refs/lathe/<session>/head`, written and the ref moved in-process (`crate::odb`,
//! `crate::refs`) once a turn that changed something ends; the steps are read back, trees
//! compared and overlaid, and files' bytes read in-process too (`crate::pack` for what `git gc`
//! packed). Review (`git diff`), line counts and packing run git.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::git::{Git, bytes_of, path_of, split_nul};
use crate::index::{self, Entry, Read, Stat};
use crate::objects::{self, Kind, Objects, Oid};
use crate::odb::Odb;
use crate::refs;
use crate::tree::{self, CacheTree};
use crate::walk::{Rules, Walked};
use crate::{Error, Result, Step, StepKind, Uncovered};

/// A workspace's shadow repository, as one session uses it.
#[derive(Debug, Clone)]
pub(crate) struct Shadow {
    pub(crate) git: Git,
    reference: String,
    /// What a snapshot covers.
    rules: Rules,
    /// `git gc --auto` after this many steps, and its threshold of loose objects.
    gc: Gc,
}

/// When the shadow repository is packed: `git gc --auto` after `every` recorded steps (of all
/// the workspace's sessions), which packs once more than `loose` objects are loose.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Gc {
    pub(crate) every: u32,
    pub(crate) loose: u32,
}

impl Default for Gc {
    fn default() -> Self {
        // git's own threshold; a check every 50 steps costs one process in 50 turns.
        Gc {
            every: 50,
            loose: 6700,
        }
    }
}

/// An index of more entries than this is walked in parallel.
const PARALLEL_WALK: usize = 4000;
/// More changed files than this are hashed on several threads.
const PARALLEL_HASH: usize = 64;

/// The modes of a symbolic link and of a submodule's commit (a gitlink).
const MODE_LINK: u32 = 0o120000;
const MODE_GITLINK: u32 = 0o160000;

/// The index entries a snapshot changes, as `update-index -z --stdin` input.
#[derive(Debug, Default)]
struct Changes {
    /// Added, updated or (deleted files) removed.
    update: Vec<u8>,
    /// Taken out although the path exists.
    force: Vec<u8>,
}

/// What one snapshot saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    pub(crate) tree: String,
    pub(crate) uncovered: Vec<Uncovered>,
}

impl Shadow {
    pub(crate) fn open(
        data_dir: &Path,
        workspace: &Path,
        session: &str,
        max_file_size: u64,
        program: PathBuf,
        search_path: std::ffi::OsString,
        gc: Gc,
    ) -> Result<Shadow> {
        let workspace = workspace
            .canonicalize()
            .map_err(|e| Error::io(workspace, e))?;
        let data_dir = std::fs::create_dir_all(data_dir)
            .and_then(|()| data_dir.canonicalize())
            .map_err(|e| Error::io(data_dir, e))?;
        let dir = data_dir.join("checkpoints").join(repo_name(&workspace));
        let git = Git {
            git_dir: dir.join("git"),
            work_tree: workspace.clone(),
            index: dir.join(format!("index-{}", ref_safe(session))),
            program,
            search_path,
        };
        git.init()?;
        write_if_changed(&dir.join("workspace"), bytes_of(&workspace));
        let excluded = [&data_dir]
            .into_iter()
            .filter_map(|d| d.strip_prefix(&workspace).ok())
            .filter(|d| !d.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .collect();
        Ok(Shadow {
            git,
            reference: format!("refs/lathe/{}/head", ref_safe(session)),
            rules: Rules {
                root: workspace,
                excluded,
                max_file_size,
            },
            gc,
        })
    }

    /// Records the work tree into the session's index and returns its tree. The work tree is
    /// walked in-process and compared with the index's stat data; the files that changed are
    /// hashed and stored as blobs, the trees of their directories written (the others' ids
    /// come from the index's cache of them), and the index written back, all in-process: no
    /// git process runs, changed or not. An index this crate cannot write back as it found it
    /// (one holding a submodule's commit, a version or extension it does not read) is left to
    /// `git update-index` and `git write-tree`.
    pub(crate) fn snapshot(&self) -> Result<Snapshot> {
        self.write_attributes()?;
        self.seed_index();
        let read = index::read(&self.git.index);
        let large = match &read {
            Read::Parsed(index) => index.entries.len() > PARALLEL_WALK,
            Read::Missing | Read::Unsupported(_) => true,
        };
        let walked = self.rules.walk(false, large);
        let tree = match read {
            Read::Parsed(index) if index.entries.iter().any(|e| e.stat.mode == MODE_GITLINK) => {
                tracing::debug!(
                    "the session's index {} holds a submodule's commit: written by git",
                    self.git.index.display()
                );
                self.record_by_git(&walked, &index)?
            }
            Read::Parsed(index) => self.record_in_process(&walked, Some(index))?,
            Read::Missing => self.record_in_process(&walked, None)?,
            Read::Unsupported(why) => {
                tracing::debug!(
                    "the session's index {} is read by git ({why})",
                    self.git.index.display()
                );
                match self.changes_by_git(&walked)? {
                    Some(changes) => self.write_by_git(changes, true)?,
                    // Unreadable to git too: started afresh.
                    None => self.record_in_process(&walked, None)?,
                }
            }
        };
        let uncovered = walked.uncovered;
        self.save_left_out(&uncovered);
        Ok(Snapshot { tree, uncovered })
    }

    /// The snapshot in-process: the index's entries brought up to date with the walk, the
    /// changed files hashed (and stored), the tree written, the index written back when any of
    /// it changed.
    fn record_in_process(&self, walked: &Walked, index: Option<index::Index>) -> Result<String> {
        let (old, mut cache, written) = match index {
            Some(index) => (
                index.entries,
                index.tree.unwrap_or_else(CacheTree::unknown),
                Some(index.mtime.0),
            ),
            None => (Vec::new(), CacheTree::unknown(), None),
        };
        // Modified in the second the index was written, or later: the stat data may match
        // while the bytes differ (git's racy entries). Hashed again, and the index written, so
        // that it is dated after them.
        let racy = |stat: &Stat| written.is_some_and(|w| i64::from(stat.mtime.0) >= w);
        let mut entries: Vec<Entry> = Vec::with_capacity(walked.files.len());
        // Entries to hash: their place in `entries`, and the blob and mode they had.
        let mut to_hash: Vec<(usize, Option<(Oid, u32)>)> = Vec::new();
        let mut dirty = false;
        let mut old = old.into_iter().peekable();
        let mut files = walked.files.iter().peekable();
        loop {
            let order = match (files.peek(), old.peek()) {
                (None, None) => break,
                (Some((path, _)), Some(entry)) => path.cmp(&entry.path),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
            };
            match order {
                std::cmp::Ordering::Equal => {
                    let ((path, stat), entry) =
                        (files.next().expect("peeked"), old.next().expect("peeked"));
                    if *stat == entry.stat && !racy(stat) {
                        entries.push(entry);
                        continue;
                    }
                    dirty = true;
                    to_hash.push((entries.len(), Some((entry.oid, entry.stat.mode))));
                    entries.push(Entry {
                        path: path.clone(),
                        stat: *stat,
                        oid: entry.oid,
                    });
                }
                std::cmp::Ordering::Less => {
                    let (path, stat) = files.next().expect("peeked");
                    dirty = true;
                    to_hash.push((entries.len(), None));
                    entries.push(Entry {
                        path: path.clone(),
                        stat: *stat,
                        oid: [0; 20],
                    });
                }
                std::cmp::Ordering::Greater => {
                    let entry = old.next().expect("peeked");
                    cache.invalidate(&entry.path);
                    dirty = true;
                }
            }
        }
        let objects = Objects::new(&self.git.git_dir);
        let hashed = self.hash_all(&objects, &entries, &to_hash)?;
        let mut vanished = false;
        for ((at, before), oid) in to_hash.into_iter().zip(hashed) {
            let entry = &mut entries[at];
            match oid {
                Some(oid) => {
                    entry.oid = oid;
                    if before != Some((oid, entry.stat.mode)) {
                        cache.invalidate(&entry.path);
                    }
                }
                None => {
                    // Gone since the walk (or no longer a file): not in this snapshot.
                    cache.invalidate(&entry.path);
                    entry.path.clear();
                    vanished = true;
                }
            }
        }
        if vanished {
            entries.retain(|e| !e.path.is_empty());
        }
        let tree = match cache.valid_root() {
            Some(tree) => tree,
            None => {
                cache = tree::build(&entries, cache, &objects)?;
                dirty = true;
                cache.valid_root().expect("just built")
            }
        };
        if dirty {
            index::write(&self.git.index, &entries, Some(&cache))?;
        }
        Ok(objects::hex(&tree))
    }

    /// Hashes and stores the files of `entries` at the places `to_hash` names: their blob ids,
    /// `None` for a file gone since the walk. On two threads or more when there are many.
    fn hash_all(
        &self,
        objects: &Objects,
        entries: &[Entry],
        to_hash: &[(usize, Option<(Oid, u32)>)],
    ) -> Result<Vec<Option<Oid>>> {
        let one = |at: usize| self.hash_file(objects, &entries[at]);
        // The CPU count only for many files: asking reads the cgroup's files, a cost a
        // one-file snapshot notices.
        let threads = if to_hash.len() < PARALLEL_HASH {
            1
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
        };
        if threads < 2 {
            return to_hash.iter().map(|(at, _)| one(*at)).collect();
        }
        let chunk = to_hash.len().div_ceil(threads);
        let parts: Vec<Result<Vec<Option<Oid>>>> = std::thread::scope(|scope| {
            let handles: Vec<_> = to_hash
                .chunks(chunk)
                .map(|part| scope.spawn(move || part.iter().map(|(at, _)| one(*at)).collect()))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        let mut out = Vec::with_capacity(to_hash.len());
        for part in parts {
            out.extend(part?);
        }
        Ok(out)
    }

    /// One file's blob: its bytes (a symbolic link's target), stored.
    fn hash_file(&self, objects: &Objects, entry: &Entry) -> Result<Option<Oid>> {
        use std::io::ErrorKind;
        let full = self.git.work_tree.join(path_of(&entry.path));
        let bytes = if entry.stat.mode == MODE_LINK {
            std::fs::read_link(&full).map(|target| bytes_of(&target).to_vec())
        } else {
            std::fs::read(&full)
        };
        match bytes {
            Ok(bytes) => objects.write(Kind::Blob, &bytes).map(Some),
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::NotFound
                        | ErrorKind::IsADirectory
                        | ErrorKind::NotADirectory
                        | ErrorKind::InvalidInput
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(Error::io(&full, e)),
        }
    }

    /// The snapshot through git: the changed paths to `git update-index`, then `git
    /// write-tree` (skipped when nothing changed and the index is as it last left it).
    fn record_by_git(&self, walked: &Walked, index: &index::Index) -> Result<String> {
        let changes = self.changes(walked, index);
        self.write_by_git(changes, false)
    }

    fn write_by_git(&self, changes: Changes, rewrite: bool) -> Result<String> {
        if !changes.force.is_empty() {
            // First: a file whose path is a directory now frees its place before the
            // directory's files are added.
            self.git.run_with_input(
                ["update-index", "-z", "--force-remove", "--stdin"],
                Some(&changes.force),
            )?;
        }
        if !changes.update.is_empty() || rewrite {
            let mut args = vec!["update-index"];
            if rewrite {
                // Written again as this reader knows it (no split index, version 4).
                args.extend(["--no-split-index", "--index-version", "4"]);
            }
            args.extend(["-z", "--add", "--remove", "--replace", "--stdin"]);
            self.git.run_with_input(&args, Some(&changes.update))?;
        }
        let changed = !changes.force.is_empty() || !changes.update.is_empty() || rewrite;
        // Nothing changed and the index is as the last write-tree left it: the same tree.
        let cache = self.state_file("tree");
        let stamp = || {
            let meta = std::fs::metadata(&self.git.index).ok()?;
            let mtime = meta
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .ok()?;
            Some(format!("{} {}", meta.len(), mtime.as_nanos()))
        };
        let cached = std::fs::read_to_string(&cache).ok().and_then(|text| {
            let (tree, seen) = text.trim().split_once(' ')?;
            (!changed && Some(seen) == stamp().as_deref()).then(|| tree.to_owned())
        });
        Ok(match cached {
            Some(tree) => tree,
            None => {
                let tree = trimmed(self.git.run(["write-tree"])?);
                if let Some(seen) = stamp() {
                    let _ = std::fs::write(&cache, format!("{tree} {seen}\n"));
                }
                tree
            }
        })
    }

    /// The paths whose index entries must change: files the index does not hold or holds with
    /// other stat data (or racy ones), and entries the walk did not see.
    fn changes(&self, walked: &Walked, index: &index::Index) -> Changes {
        let entries = index.entries.as_slice();
        let mut changes = Changes::default();
        let files = &walked.files;
        let (mut i, mut j) = (0, 0);
        loop {
            match (files.get(i), entries.get(j)) {
                (None, None) => break,
                (Some((path, stat)), Some(entry)) if *path == entry.path => {
                    let racy = index.is_racy(stat.mtime.0);
                    if *stat != entry.stat || racy {
                        push(&mut changes.update, path);
                    }
                    if !racy && stat.differs_below_seconds(&entry.stat) {
                        // Changed, and git would not see it (whole seconds): taken out first,
                        // so that update-index hashes it anew.
                        push(&mut changes.force, path);
                    }
                    i += 1;
                    j += 1;
                }
                (Some((path, _)), Some(entry)) if *path < entry.path => {
                    push(&mut changes.update, path);
                    i += 1;
                }
                (Some((path, _)), None) => {
                    push(&mut changes.update, path);
                    i += 1;
                }
                (_, Some(entry)) => {
                    self.gone(&mut changes, &entry.path);
                    j += 1;
                }
            }
        }
        changes
    }

    /// The index is one git must read (a split index, an unknown version): every file the walk
    /// saw goes to `update-index`, whose own stat cache spares the unchanged ones, and the
    /// entries it did not see, as git lists them, leave. An index git cannot read either is
    /// removed (`None`): the snapshot starts afresh.
    fn changes_by_git(&self, walked: &Walked) -> Result<Option<Changes>> {
        let listed = match self.git.run(["ls-files", "-z", "--cached"]) {
            Ok(listed) => listed,
            Err(err) => {
                tracing::warn!(
                    "the session's index {} is unreadable, started afresh: {err}",
                    self.git.index.display()
                );
                let _ = std::fs::remove_file(&self.git.index);
                return Ok(None);
            }
        };
        let mut changes = Changes::default();
        for (path, _) in &walked.files {
            push(&mut changes.update, path);
        }
        let mut listed: Vec<&[u8]> = split_nul(&listed).collect();
        listed.sort_unstable();
        listed.dedup();
        for path in listed {
            if walked
                .files
                .binary_search_by(|(p, _)| p.as_slice().cmp(path))
                .is_err()
            {
                self.gone(&mut changes, path);
            }
        }
        Ok(Some(changes))
    }

    /// An index entry the walk did not see: deleted (`--remove` takes it out), or there but
    /// not covered now (ignored, too large, in a nested repository, a directory): forced out.
    fn gone(&self, changes: &mut Changes, path: &[u8]) {
        match std::fs::symlink_metadata(self.git.work_tree.join(path_of(path))) {
            Ok(_) => push(&mut changes.force, path),
            Err(_) => push(&mut changes.update, path),
        }
    }

    /// What snapshots leave out: ignored paths (directories collapsed) and files over the size
    /// limit. Walks the ignored part of the tree: for messages, not for every snapshot.
    pub(crate) fn uncovered(&self) -> Result<Vec<Uncovered>> {
        let mut found = match self.saved_left_out() {
            Some(found) => found,
            None => self.snapshot()?.uncovered,
        };
        found.extend(self.rules.ignored());
        found.sort();
        found.dedup();
        Ok(found)
    }

    /// Keeps what the snapshot left out (large files, nested repositories) for
    /// [`Shadow::uncovered`], which then needs no snapshot of its own.
    fn save_left_out(&self, uncovered: &[Uncovered]) {
        let mut text = String::new();
        for item in uncovered {
            match item {
                Uncovered::TooLarge { path, size } => {
                    text.push_str(&format!("large {size} {}\n", path.display()))
                }
                Uncovered::NestedRepository(path) => {
                    text.push_str(&format!("nested {}\n", path.display()))
                }
                Uncovered::Ignored(_) => {}
            }
        }
        write_if_changed(&self.state_file("left-out"), text.as_bytes());
    }

    fn saved_left_out(&self) -> Option<Vec<Uncovered>> {
        let text = std::fs::read_to_string(self.state_file("left-out")).ok()?;
        let mut found = Vec::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("large ") {
                let (size, path) = rest.split_once(' ')?;
                found.push(Uncovered::TooLarge {
                    path: PathBuf::from(path),
                    size: size.parse().ok()?,
                });
            } else if let Some(path) = line.strip_prefix("nested ") {
                found.push(Uncovered::NestedRepository(PathBuf::from(path)));
            }
        }
        Some(found)
    }

    /// The shadow's `info/attributes`, once: the workspace's `.gitattributes` must not convert
    /// line endings or run filters, or a restored file would differ from the one snapshotted.
    fn write_attributes(&self) -> Result<()> {
        let info = self.git.git_dir.join("info");
        let path = info.join("attributes");
        if path.exists() {
            return Ok(());
        }
        std::fs::create_dir_all(&info).map_err(|e| Error::io(&info, e))?;
        // Sessions share this file: replaced whole, never seen half-written.
        let mut file = tempfile::NamedTempFile::new_in(&info).map_err(|e| Error::io(&info, e))?;
        std::io::Write::write_all(
            &mut file,
            b"* -text -eol -filter -ident -working-tree-encoding\n",
        )
        .map_err(|e| Error::io(&path, e))?;
        file.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        Ok(())
    }

    /// A session's first snapshot starts from the newest other session's index, so that git's
    /// stat cache spares it hashing the whole tree again.
    fn seed_index(&self) {
        if self.git.index.exists() {
            return;
        }
        let Some(dir) = self.git.index.parent() else {
            return;
        };
        let newest = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                // Not a lock file: git writes the next index there, and it may be half written.
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("index-") && !name.ends_with(".lock")
            })
            .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
            .max();
        if let Some((modified, path)) = newest {
            // With its modification time: the entries that were racy in it stay racy.
            let aside = self.state_file("seed");
            let copied = std::fs::copy(path, &aside).and_then(|_| {
                std::fs::File::options()
                    .write(true)
                    .open(&aside)?
                    .set_modified(modified)?;
                std::fs::rename(&aside, &self.git.index)
            });
            if copied.is_err() {
                let _ = std::fs::remove_file(&aside);
            }
        }
    }

    /// The session's newest commit.
    pub(crate) fn head(&self) -> Result<Option<String>> {
        refs::read(&self.git.git_dir, &self.reference)
    }

    /// The session's steps, oldest first.
    pub(crate) fn steps(&self) -> Result<Vec<Step>> {
        match self.head()? {
            None => Ok(Vec::new()),
            Some(head) => self.steps_of(&head),
        }
    }

    /// The turn steps of every other session of this workspace.
    pub(crate) fn others_steps(&self) -> Result<Vec<Step>> {
        let mut steps = Vec::new();
        for reference in refs::list(&self.git.git_dir, "refs/lathe/")? {
            if reference != self.reference
                && reference.ends_with("/head")
                && let Some(head) = refs::read(&self.git.git_dir, &reference)?
            {
                steps.extend(self.steps_of(&head)?);
            }
        }
        Ok(steps)
    }

    /// The steps recorded from commit `head` down.
    fn steps_of(&self, head: &str) -> Result<Vec<Step>> {
        let mut commits: Vec<(String, String, Option<i64>, Meta)> = Odb::new(&self.git)
            .log(head)?
            .into_iter()
            .map(|c| (c.id, c.tree, c.time, Meta::parse(&c.message)))
            .collect();
        commits.reverse();
        let mut steps = Vec::new();
        let mut before: Option<String> = None;
        for (commit, tree, seconds, meta) in commits {
            match meta.kind {
                None => continue,
                Some(MetaKind::Before) => before = Some(tree),
                Some(kind) => {
                    let Some(before_tree) = before.take() else {
                        continue;
                    };
                    let kind = match kind {
                        MetaKind::Turn => StepKind::Turn,
                        MetaKind::Undo => StepKind::Undo {
                            targets: meta.targets,
                        },
                        MetaKind::Redo => StepKind::Redo {
                            target: meta.targets.into_iter().next().unwrap_or_default(),
                        },
                        MetaKind::Before => unreachable!("matched above"),
                    };
                    steps.push(Step {
                        id: commit,
                        turn: meta.turn,
                        kind,
                        before: before_tree,
                        after: tree,
                        claimed: meta.claimed,
                        left_alone: meta.left_alone,
                        at: seconds.map(|s| lathe_store::Timestamp::from_millis(s * 1000)),
                    });
                }
            }
        }
        Ok(steps)
    }

    /// Records a step: a commit of the state before (on the session's newest), and one of the
    /// state after on top of it; the session's ref moves once, to the second.
    pub(crate) fn record(&self, step: &NewStep<'_>) -> Result<String> {
        let parent = self.head()?;
        let before_message = Meta::message(MetaKind::Before, step.turn, &[], &[], &[]);
        let before = self.commit_tree(step.before, parent.as_deref(), &before_message)?;
        let (kind, targets) = match step.kind {
            StepKind::Turn => (MetaKind::Turn, Vec::new()),
            StepKind::Undo { targets } => (MetaKind::Undo, targets.clone()),
            StepKind::Redo { target } => (MetaKind::Redo, vec![target.clone()]),
        };
        let message = Meta::message(kind, step.turn, &targets, step.claimed, step.left_alone);
        let after = self.commit_tree(step.after, Some(&before), &message)?;
        refs::update(
            &self.git.git_dir,
            &self.reference,
            &after,
            parent.as_deref(),
        )?;
        self.collect_garbage();
        Ok(after)
    }

    /// Every few steps, `git gc --auto`: it packs the loose objects snapshots leave (one per
    /// changed file and directory) once there are many, and detaches itself to do it, so the
    /// turn does not wait. Unreachable objects are never pruned: a session's index and its open
    /// turn hold objects no ref reaches; they go into a cruft pack instead.
    fn collect_garbage(&self) {
        let counter = self.git.git_dir.with_file_name("steps-since-gc");
        let steps = std::fs::read_to_string(&counter)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
            .unwrap_or(0)
            + 1;
        // Made anew, not truncated: ext4 flushes a file truncated and rewritten when it is
        // closed (`auto_da_alloc`), milliseconds on a busy disk for a counter.
        let count = |n: u32| {
            let _ = std::fs::remove_file(&counter);
            let _ = std::fs::write(&counter, format!("{n}\n"));
        };
        if steps < self.gc.every {
            count(steps);
            return;
        }
        count(0);
        let threshold = format!("gc.auto={}", self.gc.loose);
        if let Err(err) = self.git.run([
            "-c",
            threshold.as_str(),
            "-c",
            "gc.pruneExpire=never",
            "-c",
            "gc.cruftPacks=true",
            "gc",
            "--auto",
            "--quiet",
        ]) {
            tracing::debug!("git gc --auto of the shadow repository: {err}");
        }
    }

    fn commit_tree(&self, tree: &str, parent: Option<&str>, message: &str) -> Result<String> {
        Odb::new(&self.git).commit(tree, parent, message)
    }

    /// The turn this session began and did not end (it is running, or its process died).
    pub(crate) fn open_turn(&self) -> Option<OpenTurn> {
        let text = std::fs::read_to_string(self.state_file("open")).ok()?;
        let (turn, tree) = text.trim().split_once(' ')?;
        Some(OpenTurn {
            turn: turn.parse().ok()?,
            tree: tree.to_owned(),
            claimed: Vec::new(),
        })
    }

    /// Notes the state before a turn: a small file, not a commit, since most turns that begin
    /// a change are recorded only when they end.
    pub(crate) fn set_open(&self, open: &OpenTurn) -> Result<()> {
        let path = self.state_file("open");
        std::fs::write(&path, format!("{} {}\n", open.turn, open.tree))
            .map_err(|e| Error::io(&path, e))
    }

    /// Forgets the open turn.
    pub(crate) fn clear_open(&self) {
        let _ = std::fs::remove_file(self.state_file("open"));
    }

    /// A file of this session's next to its index: `open-<session>`, `tree-<session>`.
    fn state_file(&self, what: &str) -> PathBuf {
        let name = self
            .git
            .index
            .file_name()
            .map(|n| {
                n.to_string_lossy()
                    .replacen("index-", &format!("{what}-"), 1)
            })
            .unwrap_or_default();
        self.git.index.with_file_name(name)
    }
}

/// A tree built from another with a few paths taken from the work tree: the states around an
/// undo, which changes only those paths, without a walk of the whole tree.
pub(crate) struct Overlay<'a> {
    shadow: &'a Shadow,
    base: String,
    paths: Vec<PathBuf>,
}

impl Shadow {
    /// An overlay of `paths` on tree `base`.
    pub(crate) fn overlay(&self, base: &str, paths: &[&Path]) -> Result<Overlay<'_>> {
        Ok(Overlay {
            shadow: self,
            base: base.to_owned(),
            paths: paths.iter().map(|p| p.to_path_buf()).collect(),
        })
    }
}

impl Overlay<'_> {
    /// The base with the paths as they are on disk now (their blobs stored): a file or a
    /// symbolic link by its mode and bytes; a path that is a directory now, or is missing, or
    /// lies beyond a symbolic link, holds no file.
    pub(crate) fn tree(&self) -> Result<String> {
        let odb = Odb::new(&self.shadow.git);
        let root = &self.shadow.git.work_tree;
        let mut changes = Vec::with_capacity(self.paths.len());
        for path in &self.paths {
            let state = match crate::restore::stays_inside(root, path) {
                Err(_) => None,
                Ok(()) => match crate::restore::on_disk(&root.join(path))? {
                    crate::restore::Disk::Blob { mode, bytes } => {
                        Some((mode, odb.write_blob(&bytes)?))
                    }
                    crate::restore::Disk::Missing | crate::restore::Disk::Other => None,
                },
            };
            changes.push((bytes_of(path).to_vec(), state));
        }
        odb.edit(&self.base, &changes)
    }
}

/// A step to record.
pub(crate) struct NewStep<'a> {
    pub(crate) kind: &'a StepKind,
    pub(crate) turn: u32,
    pub(crate) before: &'a str,
    pub(crate) after: &'a str,
    pub(crate) claimed: &'a [PathBuf],
    pub(crate) left_alone: &'a [PathBuf],
}

/// A turn whose before-state was recorded and whose end was not (it is running, or its process
/// died).
#[derive(Debug, Clone)]
pub(crate) struct OpenTurn {
    pub(crate) turn: u32,
    pub(crate) tree: String,
    /// Paths the file tools said they change.
    pub(crate) claimed: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MetaKind {
    Before,
    Turn,
    Undo,
    Redo,
}

#[derive(Debug, Default)]
struct Meta {
    kind: Option<MetaKind>,
    turn: u32,
    targets: Vec<String>,
    claimed: Vec<PathBuf>,
    left_alone: Vec<PathBuf>,
}

impl Meta {
    fn message(
        kind: MetaKind,
        turn: u32,
        targets: &[String],
        claimed: &[PathBuf],
        left_alone: &[PathBuf],
    ) -> String {
        let kind = match kind {
            MetaKind::Before => "before",
            MetaKind::Turn => "turn",
            MetaKind::Undo => "undo",
            MetaKind::Redo => "redo",
        };
        let mut message = format!("lathe checkpoint\n\nkind: {kind}\nturn: {turn}\n");
        if !targets.is_empty() {
            message.push_str(&format!("targets: {}\n", targets.join(" ")));
        }
        for path in claimed {
            message.push_str(&format!("claim: {}\n", path.display()));
        }
        for path in left_alone {
            message.push_str(&format!("left: {}\n", path.display()));
        }
        message
    }

    fn parse(text: &str) -> Meta {
        let mut meta = Meta::default();
        for line in text.lines() {
            let Some((key, value)) = line.split_once(": ") else {
                continue;
            };
            match key {
                "kind" => {
                    meta.kind = match value.trim() {
                        "before" => Some(MetaKind::Before),
                        "turn" => Some(MetaKind::Turn),
                        "undo" => Some(MetaKind::Undo),
                        "redo" => Some(MetaKind::Redo),
                        _ => None,
                    }
                }
                "turn" => meta.turn = value.trim().parse().unwrap_or(0),
                "targets" => meta.targets = value.split_whitespace().map(str::to_owned).collect(),
                "claim" => meta.claimed.push(PathBuf::from(value)),
                "left" => meta.left_alone.push(PathBuf::from(value)),
                _ => {}
            }
        }
        meta
    }
}

/// Replaces a small state file's bytes unless they are the same already: truncating a file
/// and writing it again can wait on the file system's journal (ext4 flushes a file replaced
/// that way), milliseconds a snapshot of an unchanged tree must not pay.
fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return;
    }
    let _ = std::fs::write(path, bytes);
}

fn push(list: &mut Vec<u8>, path: &[u8]) {
    list.extend_from_slice(path);
    list.push(0);
}

pub(crate) fn trimmed(out: Vec<u8>) -> String {
    String::from_utf8_lossy(&out).trim().to_owned()
}

/// A directory name for a workspace: readable, and unique by the hash of its path.
fn repo_name(workspace: &Path) -> String {
    let hash = Sha256::digest(bytes_of(workspace));
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    let base = workspace
        .file_name()
        .map(|n| ref_safe(&n.to_string_lossy()))
        .unwrap_or_default();
    format!("{base}-{hex}")
}

/// A session id as a ref and file name component: letters, digits, `-` and `_` kept, anything
/// else as `_XX` hex.
pub(crate) fn ref_safe(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("_{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::odb;

    fn open(data: &Path, ws: &Path) -> Shadow {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let program = crate::git::find(&path).expect("git on PATH");
        Shadow::open(data, ws, "s", 1 << 20, program, path, Gc::default()).unwrap()
    }

    /// Every valid node of `cache` (the directory `dir`) has the id and entry count git gives
    /// that directory of `tree`.
    fn check(shadow: &Shadow, tree: &str, dir: &str, cache: &CacheTree, valid: &mut usize) {
        if cache.entries >= 0 {
            *valid += 1;
            let spec = format!("{tree}:{dir}");
            let id = trimmed(shadow.git.run(["rev-parse", spec.as_str()]).unwrap());
            assert_eq!(objects::hex(&cache.oid.unwrap()), id, "{dir:?}");
            let listed = shadow
                .git
                .run(["ls-tree", "-r", "--name-only", spec.as_str()])
                .unwrap();
            let count = listed.iter().filter(|b| **b == b'\n').count();
            assert_eq!(cache.entries as usize, count, "{dir:?}");
        }
        for (name, child) in &cache.children {
            let name = String::from_utf8_lossy(name);
            let path = if dir.is_empty() {
                name.into_owned()
            } else {
                format!("{dir}/{name}")
            };
            check(shadow, tree, &path, child, valid);
        }
    }

    #[test]
    fn the_index_keeps_the_ids_git_gives_every_directory() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        for (path, text) in [
            ("a.txt", "a"),
            ("src/lib.rs", "l"),
            ("src/deep/er/x.rs", "x"),
            ("src/deep/y.rs", "y"),
            ("src-b/z", "z"),
            ("docs/d.md", "d"),
        ] {
            let full = ws.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, text).unwrap();
        }
        let shadow = open(&dir.path().join("data"), &ws);
        let first = shadow.snapshot().unwrap().tree;
        std::fs::write(ws.join("src/deep/er/x.rs"), "changed").unwrap();
        std::fs::remove_dir_all(ws.join("docs")).unwrap();
        std::fs::write(ws.join("src/deep/new.rs"), "n").unwrap();
        let second = shadow.snapshot().unwrap().tree;
        assert_ne!(first, second);
        let Read::Parsed(index) = index::read(&shadow.git.index) else {
            panic!("the index is read in-process");
        };
        let cache = index.tree.expect("a TREE extension");
        let mut valid = 0;
        check(&shadow, &second, "", &cache, &mut valid);
        // The root, src, src/deep, src/deep/er and src-b: docs is gone.
        assert_eq!(valid, 5);
        assert_eq!(index.entries.len(), 6);
    }

    fn write(ws: &Path, path: &str, text: &str) {
        let full = ws.join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }

    /// What `git diff-tree -r --raw` says changed between two trees: path, old and new mode
    /// and blob (`0` modes for a side without the path).
    fn gits_diff(shadow: &Shadow, from: &str, to: &str) -> Vec<(Vec<u8>, String)> {
        let out = shadow
            .git
            .run(["diff-tree", "-r", "-z", "--no-renames", "--raw", from, to])
            .unwrap();
        let mut fields = split_nul(&out);
        let mut changes = Vec::new();
        while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
            let meta = String::from_utf8_lossy(meta);
            let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            changes.push((
                path.to_vec(),
                format!("{} {} {} {}", parts[0], parts[1], parts[2], parts[3]),
            ));
        }
        changes.sort();
        changes
    }

    /// An overlay of the changed paths on the old tree is the tree a whole snapshot of the new
    /// state records (itself checked against git elsewhere), whatever turned into what; and
    /// the in-process diff of the two trees is git's `diff-tree -r`.
    #[test]
    fn overlays_and_diffs_are_the_trees_and_changes_git_has() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        for path in [
            "a.txt",
            "d/one",
            "d/two",
            "keep/k",
            "f",
            "x/inside",
            "x/deep/er",
        ] {
            write(&ws, path, path);
        }
        std::os::unix::fs::symlink("a.txt", ws.join("link")).unwrap();
        let shadow = open(&dir.path().join("data"), &ws);
        let base = shadow.snapshot().unwrap().tree;

        write(&ws, "a.txt", "changed");
        std::fs::set_permissions(ws.join("keep/k"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::remove_dir_all(ws.join("d")).unwrap();
        std::fs::remove_file(ws.join("f")).unwrap();
        write(&ws, "f/inner", "a file's place, a directory now");
        std::fs::remove_dir_all(ws.join("x")).unwrap();
        write(&ws, "x", "a directory's place, a file now");
        write(&ws, "n/e/w.txt", "new");
        std::fs::remove_file(ws.join("link")).unwrap();
        std::os::unix::fs::symlink("keep/k", ws.join("link")).unwrap();
        let paths = [
            "a.txt",
            "keep/k",
            "d/one",
            "d/two",
            "f",
            "f/inner",
            "x",
            "x/inside",
            "x/deep/er",
            "n/e/w.txt",
            "link",
            "never/there",
        ];
        let paths: Vec<&Path> = paths.iter().map(Path::new).collect();
        let overlaid = shadow.overlay(&base, &paths).unwrap().tree().unwrap();
        let snapshot = shadow.snapshot().unwrap().tree;
        assert_eq!(overlaid, snapshot);
        // Nothing changed on disk: the same tree again; no path at all: the base.
        assert_eq!(
            shadow.overlay(&base, &paths).unwrap().tree().unwrap(),
            snapshot
        );
        assert_eq!(shadow.overlay(&base, &[]).unwrap().tree().unwrap(), base);

        let ours = |from: &str, to: &str| {
            let mut changes: Vec<(Vec<u8>, String)> = Odb::new(&shadow.git)
                .diff(from, to)
                .unwrap()
                .into_iter()
                .map(|(path, old, new)| {
                    let side = |s: odb::State| match s {
                        None => (0, "0".repeat(40)),
                        Some((mode, oid)) => (mode, objects::hex(&oid)),
                    };
                    let ((om, ob), (nm, nb)) = (side(old), side(new));
                    (path, format!("{om:06o} {nm:06o} {ob} {nb}"))
                })
                .collect();
            changes.sort();
            changes
        };
        let forward = ours(&base, &snapshot);
        assert_eq!(forward.len(), 11, "{forward:?}");
        assert_eq!(forward, gits_diff(&shadow, &base, &snapshot));
        assert_eq!(ours(&snapshot, &base), gits_diff(&shadow, &snapshot, &base));
        assert!(ours(&base, &base).is_empty());
    }

    /// Commits written in-process are byte for byte `git commit-tree`'s, and the steps read back
    /// are the ones recorded.
    #[test]
    fn commits_are_the_ones_git_commit_tree_writes() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        write(&ws, "a", "a");
        let shadow = open(&dir.path().join("data"), &ws);
        let tree = shadow.snapshot().unwrap().tree;
        let message = "lathe checkpoint\n\nkind: turn\nturn: 3\n";
        let seconds = 1_700_000_000;
        let mut command = shadow
            .git
            .command(["commit-tree", tree.as_str(), "-m", message]);
        let date = format!("{seconds} +0000");
        command
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
        let out = command.output().unwrap();
        assert!(out.status.success());
        let gits = trimmed(out.stdout);
        let ours = objects::id(
            Kind::Commit,
            &odb::commit_bytes(&tree, None, message, seconds),
        );
        assert_eq!(objects::hex(&ours), gits);
        let bytes = odb::commit_bytes(&tree, Some(&gits), "no newline", seconds);
        let mut command = shadow.git.command([
            "commit-tree",
            tree.as_str(),
            "-p",
            gits.as_str(),
            "-m",
            "no newline",
        ]);
        command
            .env("GIT_AUTHOR_DATE", &date)
            .env("GIT_COMMITTER_DATE", &date);
        let child = trimmed(command.output().unwrap().stdout);
        assert_eq!(objects::hex(&objects::id(Kind::Commit, &bytes)), child);

        // Recorded steps come back through the in-process log.
        write(&ws, "a", "b");
        let after = shadow.snapshot().unwrap().tree;
        let id = shadow
            .record(&NewStep {
                kind: &StepKind::Turn,
                turn: 4,
                before: &tree,
                after: &after,
                claimed: &[PathBuf::from("a")],
                left_alone: &[],
            })
            .unwrap();
        let steps = shadow.steps().unwrap();
        assert_eq!(steps.len(), 1);
        assert_eq!(
            (
                steps[0].id.as_str(),
                steps[0].turn,
                steps[0].before.as_str()
            ),
            (id.as_str(), 4, tree.as_str())
        );
        assert_eq!(steps[0].after, after);
        assert_eq!(steps[0].claimed, [PathBuf::from("a")]);
        assert!(steps[0].at.is_some());
        let log = trimmed(
            shadow
                .git
                .run(["log", "--format=%H %T", "refs/lathe/s/head"])
                .unwrap(),
        );
        assert!(log.starts_with(&format!("{id} {after}")), "{log}");
    }

    /// Every object of the shadow repository reads back as git has it after `git repack` made
    /// deltas of them, against offsets in the pack and against ids.
    #[test]
    fn packed_objects_and_their_deltas_read_as_git_has_them() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let shadow = open(&dir.path().join("data"), &ws);
        let mut text: String = (0..400)
            .map(|i| format!("line {i} of a long file\n"))
            .collect();
        let mut before: Option<String> = None;
        for turn in 0..12 {
            text.insert_str(text.len() / 2, &format!("inserted in turn {turn}\n"));
            write(&ws, "big.txt", &text);
            write(&ws, &format!("dir{}/small", turn % 3), &format!("{turn}"));
            let tree = shadow.snapshot().unwrap().tree;
            if let Some(before) = &before {
                shadow
                    .record(&NewStep {
                        kind: &StepKind::Turn,
                        turn,
                        before,
                        after: &tree,
                        claimed: &[],
                        left_alone: &[],
                    })
                    .unwrap();
            }
            before = Some(tree);
        }
        for offsets in ["true", "false"] {
            let setting = format!("repack.useDeltaBaseOffset={offsets}");
            shadow
                .git
                .run(["-c", setting.as_str(), "repack", "-a", "-d", "-f", "-q"])
                .unwrap();
            shadow.git.run(["prune-packed"]).unwrap();
            let listed = shadow
                .git
                .run([
                    "cat-file",
                    "--batch-all-objects",
                    "--batch-check=%(objectname) %(objecttype) %(deltabase)",
                ])
                .unwrap();
            let listed = String::from_utf8(listed).unwrap();
            let deltas = listed
                .lines()
                .filter(|l| !l.ends_with(&"0".repeat(40)))
                .count();
            assert!(deltas > 5, "git made deltas: {listed}");
            let objects = Objects::new(&shadow.git.git_dir);
            for line in listed.lines() {
                let mut parts = line.split(' ');
                let (id, kind) = (parts.next().unwrap(), parts.next().unwrap());
                let oid = odb::oid_of(id).unwrap();
                assert!(!objects.has_loose(&oid));
                let (found, bytes) = objects.read(&oid).expect("read in-process");
                assert_eq!(found.name(), kind);
                assert_eq!(
                    bytes,
                    shadow.git.run(["cat-file", kind, id]).unwrap(),
                    "{id}"
                );
            }
            assert!(
                objects
                    .read(&objects::id(Kind::Blob, b"not there"))
                    .is_none()
            );
            // The steps read back from the packs.
            assert_eq!(shadow.steps().unwrap().len(), 11);
        }
    }

    /// Refs moved in-process are what git reads, packed ones are found, a ref that moved since
    /// is not overwritten, and a held lock is waited for, then reported.
    #[test]
    fn refs_move_as_git_moves_them() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        write(&ws, "a", "a");
        let shadow = open(&dir.path().join("data"), &ws);
        let tree = shadow.snapshot().unwrap().tree;
        let odb = Odb::new(&shadow.git);
        let one = odb.commit(&tree, None, "one").unwrap();
        let two = odb.commit(&tree, Some(&one), "two").unwrap();
        let git_dir = &shadow.git.git_dir;
        let name = "refs/lathe/s/head";
        refs::update(git_dir, name, &one, None).unwrap();
        let rev = |r: &str| trimmed(shadow.git.run(["rev-parse", r]).unwrap());
        assert_eq!(rev(name), one);
        assert!(refs::update(git_dir, name, &two, Some(&two)).is_err());
        assert_eq!(rev(name), one, "a ref that moved is left alone");
        refs::update(git_dir, name, &two, Some(&one)).unwrap();
        assert_eq!(rev(name), two);
        shadow
            .git
            .run(["update-ref", "refs/lathe/other/head", one.as_str()])
            .unwrap();
        shadow.git.run(["pack-refs", "--all"]).unwrap();
        assert!(!git_dir.join(name).exists(), "packed");
        assert_eq!(refs::read(git_dir, name).unwrap(), Some(two.clone()));
        assert_eq!(
            refs::list(git_dir, "refs/lathe/").unwrap(),
            ["refs/lathe/other/head", "refs/lathe/s/head"]
        );
        // A loose ref wins over its packed line.
        refs::update(git_dir, name, &one, Some(&two)).unwrap();
        assert_eq!(rev(name), one);
        assert_eq!(refs::read(git_dir, name).unwrap(), Some(one.clone()));
        assert_eq!(refs::read(git_dir, "refs/lathe/none/head").unwrap(), None);
        std::fs::write(git_dir.join(format!("{name}.lock")), "").unwrap();
        let err = refs::update(git_dir, name, &two, Some(&one)).unwrap_err();
        assert!(err.to_string().contains("locked"), "{err}");
        assert_eq!(rev(name), one);
    }
}
