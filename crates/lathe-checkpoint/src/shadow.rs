//! The shadow repository: one per workspace in Lathe's data directory, one index file and one
//! ref namespace per session. A snapshot is the tree of the work tree as git sees it (honouring
//! `.gitignore`, the user's `.git/info/exclude` and the root `.ignore`), without files over the
//! size limit; a step is a pair of commits (the state before, the state after) on the session's
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
        search_path: std::ffi::OsString,
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
        })
    }

    /// Records the work tree into the session's index and returns its tree: the cost of
    /// `git ls-files --modified --others` (about `git status`) when nothing changed.
    pub(crate) fn snapshot(&self) -> Result<Snapshot> {
        self.write_excludes()?;
        self.seed_index();
        let listing = self.git.run([
            "ls-files",
            "-z",
            "-t",
            "--modified",
            "--deleted",
            "--others",
            "--exclude-standard",
        ])?;
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
        let tree = trimmed(self.git.run(["write-tree"])?);
        uncovered.sort();
        uncovered.dedup();
        Ok(Snapshot { tree, uncovered })
    }

    /// What snapshots leave out: ignored paths (directories collapsed) and files over the size
    /// limit. Walks the ignored part of the tree: for messages, not for every snapshot.
    pub(crate) fn uncovered(&self) -> Result<Vec<Uncovered>> {
        let mut found = self.snapshot()?.uncovered;
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

    /// The shadow's own exclude file: always `.git`, Lathe's own directories, and the root
    /// `.ignore` (whose patterns mean at the root what they mean in `info/exclude`).
    fn write_excludes(&self) -> Result<()> {
        let mut text = String::from(ALWAYS_EXCLUDED);
        for dir in &self.excluded {
            text.push('/');
            text.push_str(&dir.to_string_lossy());
            text.push_str("/\n");
        }
        if let Ok(ignore) = std::fs::read_to_string(self.git.work_tree.join(".ignore")) {
            text.push_str(&ignore);
            text.push('\n');
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

    /// Adds a commit of `tree` with `message` on top of the session's ref.
    pub(crate) fn commit(&self, tree: &str, message: &str) -> Result<String> {
        let parent = self.head()?;
        let mut args = vec!["commit-tree".to_owned(), tree.to_owned()];
        if let Some(parent) = &parent {
            args.push("-p".into());
            args.push(parent.clone());
        }
        args.push("-m".into());
        args.push(message.to_owned());
        let commit = trimmed(self.git.run(&args)?);
        let mut update = vec!["update-ref", self.reference.as_str(), commit.as_str()];
        if let Some(parent) = &parent {
            update.push(parent.as_str());
        }
        self.git.run(&update)?;
        Ok(commit)
    }

    /// The session's steps, oldest first, and the before-snapshot of a turn that has not ended.
    pub(crate) fn steps(&self) -> Result<(Vec<Step>, Option<OpenTurn>)> {
        if self.head()?.is_none() {
            return Ok((Vec::new(), None));
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
                steps.extend(self.steps_of(reference)?.0);
            }
        }
        Ok(steps)
    }

    fn steps_of(&self, reference: &str) -> Result<(Vec<Step>, Option<OpenTurn>)> {
        let log = self.git.run([
            "log",
            "--first-parent",
            "-z",
            "--format=%H%x01%T%x01%B",
            reference,
        ])?;
        let mut commits: Vec<(String, String, Meta)> = split_nul(&log)
            .filter_map(|entry| {
                let text = String::from_utf8_lossy(entry);
                let mut parts = text.splitn(3, '\x01');
                let commit = parts.next()?.trim().to_owned();
                let tree = parts.next()?.to_owned();
                Some((commit, tree, Meta::parse(parts.next()?)))
            })
            .collect();
        commits.reverse();
        let mut steps = Vec::new();
        let mut open = None;
        let mut before: Option<(String, String, u32)> = None;
        for (commit, tree, meta) in commits {
            match meta.kind {
                None => continue,
                Some(MetaKind::Before) => before = Some((commit, tree, meta.turn)),
                Some(kind) => {
                    let Some((_, before_tree, _)) = before.take() else {
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
                    });
                }
            }
        }
        if let Some((commit, tree, turn)) = before {
            open = Some(OpenTurn {
                turn,
                commit,
                tree,
                claimed: Vec::new(),
            });
        }
        Ok((steps, open))
    }

    /// Records the state before `turn` changes anything.
    pub(crate) fn begin(&self, turn: u32, tree: &str) -> Result<String> {
        self.commit(tree, &Meta::message(MetaKind::Before, turn, &[], &[], &[]))
    }

    /// Records the state after a step.
    pub(crate) fn end(
        &self,
        kind: &StepKind,
        turn: u32,
        tree: &str,
        claimed: &[PathBuf],
        left_alone: &[PathBuf],
    ) -> Result<String> {
        let (kind, targets) = match kind {
            StepKind::Turn => (MetaKind::Turn, Vec::new()),
            StepKind::Undo { targets } => (MetaKind::Undo, targets.clone()),
            StepKind::Redo { target } => (MetaKind::Redo, vec![target.clone()]),
        };
        self.commit(
            tree,
            &Meta::message(kind, turn, &targets, claimed, left_alone),
        )
    }

    /// Takes back an open turn's before-commit when the turn changed nothing.
    pub(crate) fn drop_open(&self, open: &OpenTurn) -> Result<()> {
        let parent = self
            .git
            .run(["rev-parse", "--verify", "-q", &format!("{}^", open.commit)])
            .ok()
            .map(trimmed);
        match parent {
            Some(parent) => self.git.run([
                "update-ref",
                self.reference.as_str(),
                parent.as_str(),
                open.commit.as_str(),
            ])?,
            None => self.git.run([
                "update-ref",
                "-d",
                self.reference.as_str(),
                open.commit.as_str(),
            ])?,
        };
        Ok(())
    }
}

/// A turn whose before-state was recorded and whose end was not (it is running, or its process
/// died).
#[derive(Debug, Clone)]
pub(crate) struct OpenTurn {
    pub(crate) turn: u32,
    pub(crate) commit: String,
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
