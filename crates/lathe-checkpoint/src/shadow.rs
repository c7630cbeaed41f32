//! The shadow repository: one per workspace in Lathe's data directory, one index file and one
//! ref namespace per session. A snapshot is the tree of the work tree as git sees it (honouring
//! `.gitignore` and `.ignore` at every level and the user's `.git/info/exclude`, as ripgrep does;
//! not the global gitignore), without files over the size limit; a step is a pair of commits (the state before, the state after) on the session's
//! ref `refs/lathe/<session>/head`.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::git::{Git, bytes_of, path_of, split_nul};
use crate::{Error, Result, Step, StepKind, Uncovered};

/// Lines every snapshot excludes, whatever the workspace says.
const ALWAYS_EXCLUDED: &str = "# written by lathe: regenerated before every snapshot\n.git\n";

/// A workspace's shadow repository, as one session uses it.
#[derive(Debug, Clone)]
pub(crate) struct Shadow {
    pub(crate) git: Git,
    reference: String,
    /// Directories inside the workspace that are Lathe's own (its data directory), relative.
    excluded: Vec<PathBuf>,
    max_file_size: u64,
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
        let user_exclude = workspace.join(".git/info/exclude");
        let git = Git {
            git_dir: dir.join("git"),
            work_tree: workspace.clone(),
            index: dir.join(format!("index-{}", ref_safe(session))),
            user_exclude: user_exclude.is_file().then_some(user_exclude),
            program,
            search_path,
        };
        git.init()?;
        let _ = std::fs::write(dir.join("workspace"), bytes_of(&workspace));
        let excluded = [&data_dir]
            .into_iter()
            .filter_map(|d| d.strip_prefix(&workspace).ok())
            .filter(|d| !d.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .collect();
        Ok(Shadow {
            git,
            reference: format!("refs/lathe/{}/head", ref_safe(session)),
            excluded,
            max_file_size,
            gc,
        })
    }

    /// Records the work tree into the session's index and returns its tree: the cost of
    /// `git ls-files --modified --others` (about `git status`) when nothing changed.
    pub(crate) fn snapshot(&self) -> Result<Snapshot> {
        self.write_excludes()?;
        self.seed_index();
        let mut listing = self.listing()?;
        if self.nested_ignores_changed(&listing)? {
            // New patterns: files they ignore leave the index, and the tree is listed again.
            self.write_excludes()?;
            self.drop_ignored()?;
            listing = self.listing()?;
        }
        let mut update = Vec::new();
        let mut drop = Vec::new();
        let mut uncovered = Vec::new();
        for entry in split_nul(&listing) {
            let (tag, path) = match entry.split_first_chunk::<2>() {
                Some((tag, path)) => (tag[0], path),
                None => continue,
            };
            if path.ends_with(b"/") {
                // `--others` shows a nested repository as its directory.
                uncovered.push(Uncovered::NestedRepository(path_of(
                    &path[..path.len() - 1],
                )));
                continue;
            }
            let relative = path_of(path);
            match std::fs::symlink_metadata(self.git.work_tree.join(&relative)) {
                Ok(meta) if meta.is_file() && meta.len() > self.max_file_size => {
                    // In the index from an earlier snapshot when tagged `C`: taken out, so the
                    // snapshot holds no stale copy.
                    if tag != b'?' {
                        push(&mut drop, path);
                    }
                    uncovered.push(Uncovered::TooLarge {
                        path: relative,
                        size: meta.len(),
                    });
                }
                _ => push(&mut update, path),
            }
        }
        if !update.is_empty() {
            self.git.run_with_input(
                ["update-index", "-z", "--add", "--remove", "--stdin"],
                Some(&update),
            )?;
        }
        if !drop.is_empty() {
            self.git.run_with_input(
                ["update-index", "-z", "--force-remove", "--stdin"],
                Some(&drop),
            )?;
        }
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
            (update.is_empty() && drop.is_empty() && Some(seen) == stamp().as_deref())
                .then(|| tree.to_owned())
        });
        let tree = match cached {
            Some(tree) => tree,
            None => {
                let tree = trimmed(self.git.run(["write-tree"])?);
                if let Some(seen) = stamp() {
                    let _ = std::fs::write(&cache, format!("{tree} {seen}\n"));
                }
                tree
            }
        };
        uncovered.sort();
        uncovered.dedup();
        self.save_left_out(&uncovered);
        Ok(Snapshot { tree, uncovered })
    }

    /// What changed in the work tree since the session's index: `ls-files -t` tags and paths.
    fn listing(&self) -> Result<Vec<u8>> {
        self.git.run([
            "ls-files",
            "-z",
            "-t",
            "--modified",
            "--deleted",
            "--others",
            "--exclude-standard",
        ])
    }

    /// The workspace's `.ignore` files below its root (git reads only `.gitignore` at every
    /// level), as known to the shadow repository: found in the index once, then kept up to
    /// date from each snapshot's listing, which names every `.ignore` created, changed or
    /// deleted. True when they changed (then the exclude file must be written again).
    fn nested_ignores_changed(&self, listing: &[u8]) -> Result<bool> {
        let known_file = self.ignore_list_file();
        let existed = known_file.exists();
        let mut known: Vec<PathBuf> = match std::fs::read(&known_file) {
            Ok(bytes) => split_nul(&bytes).map(path_of).collect(),
            Err(_) => {
                let found = self.git.run(["ls-files", "-z", "--cached"])?;
                split_nul(&found)
                    .filter(|p| is_nested_ignore(p))
                    .map(path_of)
                    .collect()
            }
        };
        let seen: Vec<&[u8]> = split_nul(listing)
            .filter_map(|entry| entry.split_first_chunk::<2>().map(|(_, path)| path))
            .filter(|path| is_nested_ignore(path))
            .collect();
        if seen.is_empty() && existed {
            return Ok(false);
        }
        let changed = !seen.is_empty() || !known.is_empty();
        for path in seen {
            let path = path_of(path);
            let present = self.git.work_tree.join(&path).is_file();
            known.retain(|p| *p != path);
            if present {
                known.push(path);
            }
        }
        known.sort();
        let mut bytes = Vec::new();
        for path in &known {
            push(&mut bytes, bytes_of(path));
        }
        std::fs::write(&known_file, bytes).map_err(|e| Error::io(&known_file, e))?;
        Ok(changed)
    }

    /// Takes the files the exclude patterns ignore now out of the session's index.
    fn drop_ignored(&self) -> Result<()> {
        let ignored = self.git.run([
            "ls-files",
            "-z",
            "--cached",
            "--ignored",
            "--exclude-standard",
        ])?;
        if !ignored.is_empty() {
            self.git.run_with_input(
                ["update-index", "-z", "--force-remove", "--stdin"],
                Some(&ignored),
            )?;
        }
        Ok(())
    }

    /// The list of nested `.ignore` files, shared by the workspace's sessions.
    fn ignore_list_file(&self) -> PathBuf {
        self.git.git_dir.with_file_name("ignore-files")
    }

    /// What snapshots leave out: ignored paths (directories collapsed) and files over the size
    /// limit. Walks the ignored part of the tree: for messages, not for every snapshot.
    pub(crate) fn uncovered(&self) -> Result<Vec<Uncovered>> {
        let mut found = match self.saved_left_out() {
            Some(found) => found,
            None => self.snapshot()?.uncovered,
        };
        self.write_excludes()?;
        let ignored = self.git.run([
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
            "--directory",
        ])?;
        for path in split_nul(&ignored) {
            let path = path.strip_suffix(b"/").unwrap_or(path);
            found.push(Uncovered::Ignored(path_of(path)));
        }
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
        let _ = std::fs::write(self.state_file("left-out"), text);
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

    /// The shadow's own exclude file: always `.git`, Lathe's own directories, the root
    /// `.ignore` (whose patterns mean at the root what they mean in `info/exclude`) and the
    /// `.ignore` files below it, anchored at their directories.
    fn write_excludes(&self) -> Result<()> {
        let mut text = String::from(ALWAYS_EXCLUDED);
        // A file tool's write under way in another session: never part of a snapshot, so never
        // "restored" by an undo.
        text.push_str(lathe_tools::TEMP_FILE_PATTERN);
        text.push('\n');
        for dir in &self.excluded {
            text.push('/');
            text.push_str(&dir.to_string_lossy());
            text.push_str("/\n");
        }
        if let Ok(ignore) = std::fs::read_to_string(self.git.work_tree.join(".ignore")) {
            text.push_str(&ignore);
            text.push('\n');
        }
        // `.ignore` files below the root, their patterns anchored at their directories.
        if let Ok(list) = std::fs::read(self.ignore_list_file()) {
            for path in split_nul(&list).map(path_of) {
                let Ok(ignore) = std::fs::read_to_string(self.git.work_tree.join(&path)) else {
                    continue;
                };
                let dir = path.parent().unwrap_or(Path::new(""));
                for line in ignore.lines() {
                    if let Some(pattern) = anchored(&dir.to_string_lossy(), line) {
                        text.push_str(&pattern);
                        text.push('\n');
                    }
                }
            }
        }
        let info = self.git.git_dir.join("info");
        let path = info.join("exclude");
        if std::fs::read_to_string(&path).is_ok_and(|old| old == text) {
            return Ok(());
        }
        std::fs::create_dir_all(&info).map_err(|e| Error::io(&info, e))?;
        // Sessions share this file: replaced whole, never seen half-written.
        let mut file = tempfile::NamedTempFile::new_in(&info).map_err(|e| Error::io(&info, e))?;
        std::io::Write::write_all(&mut file, text.as_bytes()).map_err(|e| Error::io(&path, e))?;
        file.persist(&path).map_err(|e| Error::io(&path, e.error))?;
        let attributes = info.join("attributes");
        if !attributes.exists() {
            // Highest precedence: the workspace's .gitattributes must not convert line endings
            // or run filters, or a restored file would differ from the one snapshotted.
            std::fs::write(
                &attributes,
                "* -text -eol -filter -ident -working-tree-encoding\n",
            )
            .map_err(|e| Error::io(&attributes, e))?;
        }
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
        if let Some((_, path)) = newest {
            let _ = std::fs::copy(path, &self.git.index);
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
    /// The base with the paths as they are on disk now.
    pub(crate) fn tree(&self) -> Result<String> {
        self.git.run_with_input(
            ["update-index", "-z", "--add", "--remove", "--stdin"],
            Some(&self.paths),
        )?;
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

/// Whether a path from git is a `.ignore` below the root.
fn is_nested_ignore(path: &[u8]) -> bool {
    path.ends_with(b"/.ignore")
}

/// A line of the `.ignore` in `dir` (relative to the root) as a pattern of the root's exclude
/// file, meaning the same files: a pattern without an inner `/` matches at any depth below
/// `dir`, one with a `/` is relative to `dir`. `None` for blank lines and comments.
fn anchored(dir: &str, line: &str) -> Option<String> {
    let line = line.trim_end_matches(['\r', ' ']);
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (bang, pattern) = match line.strip_prefix('!') {
        Some(rest) => ("!", rest),
        None => ("", line),
    };
    let body = pattern.strip_suffix('/').unwrap_or(pattern);
    if body.is_empty() {
        return None;
    }
    let anchored = if body.contains('/') {
        format!("{bang}/{dir}/{}", pattern.trim_start_matches('/'))
    } else {
        format!("{bang}/{dir}/**/{pattern}")
    };
    Some(anchored)
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
    use super::anchored;

    #[test]
    fn nested_ignore_patterns_are_anchored_at_their_directory() {
        assert_eq!(anchored("sub", "*.log").as_deref(), Some("/sub/**/*.log"));
        assert_eq!(anchored("sub", "build/").as_deref(), Some("/sub/**/build/"));
        assert_eq!(anchored("sub", "/build/").as_deref(), Some("/sub/build/"));
        assert_eq!(anchored("a/b", "x/y").as_deref(), Some("/a/b/x/y"));
        assert_eq!(
            anchored("sub", "!keep.log").as_deref(),
            Some("!/sub/**/keep.log")
        );
        assert_eq!(anchored("sub", "# a comment"), None);
        assert_eq!(anchored("sub", "   "), None);
    }
}
