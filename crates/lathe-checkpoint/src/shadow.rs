//! The shadow repository: one per workspace in Lathe's data directory, one index file and one
//! ref namespace per session. A snapshot is the tree of the work tree as the walk of
//! `crate::walk` finds it (`.gitignore` and `.ignore` at every level and the user's
//! `.git/info/exclude`, as ripgrep reads them; not the global gitignore), without files over
//! the size limit; the session's index is its stat cache, read and written in-process, and the
//! changed files' blobs and their directories' trees are written in-process too
//! (`crate::objects`, `crate::tree`): a snapshot starts no git process. A step is a pair of
//! commits (the state before, the state after) on the session's ref
//! `refs/lathe/<session>/head`, made by `git commit-tree` and `git update-ref` once a turn that
//! changed something ends; undo, redo and review run git too.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::git::{Git, bytes_of, path_of, split_nul};
use crate::index::{self, Entry, Read, Stat};
use crate::objects::{self, Kind, Objects, Oid};
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
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        if to_hash.len() < PARALLEL_HASH || threads < 2 {
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
        match self
            .git
            .run(["rev-parse", "--verify", "-q", self.reference.as_str()])
        {
            Ok(out) => Ok(Some(trimmed(out))),
            Err(_) => Ok(None),
        }
    }

    /// The session's steps, oldest first.
    pub(crate) fn steps(&self) -> Result<Vec<Step>> {
        if self.head()?.is_none() {
            return Ok(Vec::new());
        }
        self.steps_of(&self.reference)
    }

    /// The turn steps of every other session of this workspace.
    pub(crate) fn others_steps(&self) -> Result<Vec<Step>> {
        let refs = self
            .git
            .run(["for-each-ref", "--format=%(refname)", "refs/lathe/"])?;
        let mut steps = Vec::new();
        for reference in String::from_utf8_lossy(&refs).lines() {
            if reference != self.reference && reference.ends_with("/head") {
                steps.extend(self.steps_of(reference)?);
            }
        }
        Ok(steps)
    }

    fn steps_of(&self, reference: &str) -> Result<Vec<Step>> {
        let log = self.git.run([
            "log",
            "--first-parent",
            "-z",
            "--format=%H%x01%T%x01%ct%x01%B",
            reference,
        ])?;
        let mut commits: Vec<(String, String, Option<i64>, Meta)> = split_nul(&log)
            .filter_map(|entry| {
                let text = String::from_utf8_lossy(entry);
                let mut parts = text.splitn(4, '\x01');
                let commit = parts.next()?.trim().to_owned();
                let tree = parts.next()?.to_owned();
                let seconds = parts.next()?.trim().parse::<i64>().ok();
                Some((commit, tree, seconds, Meta::parse(parts.next()?)))
            })
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
        let mut update = vec!["update-ref", self.reference.as_str(), after.as_str()];
        if let Some(parent) = &parent {
            update.push(parent.as_str());
        }
        self.git.run(&update)?;
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
        if steps < self.gc.every {
            let _ = std::fs::write(&counter, format!("{steps}\n"));
            return;
        }
        let _ = std::fs::write(&counter, "0\n");
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
        let mut args = vec!["commit-tree", tree];
        if let Some(parent) = parent {
            args.extend(["-p", parent]);
        }
        args.extend(["-m", message]);
        Ok(trimmed(self.git.run(&args)?))
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
pub(crate) struct Overlay {
    git: Git,
    paths: Vec<u8>,
}

impl Shadow {
    /// An overlay of `paths` on tree `base`, in an index file of its own.
    pub(crate) fn overlay(&self, base: &str, paths: &[&Path]) -> Result<Overlay> {
        let mut git = self.git.clone();
        git.index = self.state_file("overlay");
        let _ = std::fs::remove_file(&git.index);
        git.run(["read-tree", base])?;
        let mut list = Vec::new();
        for path in paths {
            push(&mut list, bytes_of(path));
        }
        Ok(Overlay { git, paths: list })
    }
}

impl Overlay {
    /// The base with the paths as they are on disk now. A path that is a directory now holds
    /// no file: its entry is taken out (git would refuse to add a directory).
    pub(crate) fn tree(&self) -> Result<String> {
        let (mut files, mut dirs) = (Vec::new(), Vec::new());
        for path in split_nul(&self.paths) {
            let full = self.git.work_tree.join(path_of(path));
            match std::fs::symlink_metadata(full) {
                Ok(meta) if meta.is_dir() => push(&mut dirs, path),
                _ => push(&mut files, path),
            }
        }
        if !dirs.is_empty() {
            self.git.run_with_input(
                ["update-index", "-z", "--force-remove", "--stdin"],
                Some(&dirs),
            )?;
        }
        if !files.is_empty() {
            self.git.run_with_input(
                [
                    "update-index",
                    "-z",
                    "--add",
                    "--remove",
                    "--replace",
                    "--stdin",
                ],
                Some(&files),
            )?;
        }
        Ok(trimmed(self.git.run(["write-tree"])?))
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.git.index);
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
}
