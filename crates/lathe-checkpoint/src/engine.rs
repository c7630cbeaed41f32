//! The checkpoints of one session: recording turns, undo, redo and review, over the shadow
//! repository (or, without git, the file-copy fallback).

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lathe_store::{SessionId, Store};

use crate::fallback::Files;
use crate::restore::{self, Change, Entry};
use crate::shadow::{NewStep, OpenTurn, Shadow};
use crate::{
    DiffStat, Error, FileStat, Force, Nothing, Restored, Result, Step, StepKind, Uncovered,
    UndoTarget,
};

/// Files larger than this are not snapshotted (10 MiB): build outputs and data sets would make
/// every snapshot slow and the shadow repository huge.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 10 * 1024 * 1024;

/// What the checkpoints cover.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coverage {
    /// The whole workspace tree (ignored and large files aside): file tools and shell commands.
    Workspace,
    /// Only the files the file tools change (git is missing): shell commands are not covered.
    FileTools,
}

impl Coverage {
    /// The plain sentence for the user.
    pub fn note(self) -> &'static str {
        match self {
            Coverage::Workspace => {
                "checkpoints cover the workspace's files, except ignored files and files over the size limit"
            }
            Coverage::FileTools => {
                "git is not installed (not found on PATH): checkpoints cover only the files changed by the file tools; changes made by shell commands are not covered and cannot be undone. Install git for full checkpoints"
            }
        }
    }
}

/// Sets up [`Checkpoints`].
#[derive(Debug, Clone)]
pub struct Builder {
    data_dir: PathBuf,
    workspace: PathBuf,
    session: String,
    max_file_size: u64,
    search_path: Option<OsString>,
    store: Option<Store>,
    gc: crate::shadow::Gc,
}

impl Builder {
    /// Files larger than `bytes` are left out of snapshots (and reported). By default, this is
    /// [`DEFAULT_MAX_FILE_SIZE`].
    pub fn max_file_size(mut self, bytes: u64) -> Self {
        self.max_file_size = bytes;
        self
    }

    /// Where `git` is looked for (a `PATH` value). By default, this is the process's `PATH`.
    pub fn search_path(mut self, path: impl Into<OsString>) -> Self {
        self.search_path = Some(path.into());
        self
    }

    /// The sessions database, for the fallback without git. By default, there is none, and
    /// without git [`Builder::build`] fails with [`Error::Unavailable`].
    pub fn store(mut self, store: Store) -> Self {
        self.store = Some(store);
        self
    }

    /// Runs `git gc --auto` on the shadow repository after every `steps` recorded steps, packing
    /// once more than `loose_objects` objects are loose. By default, every 50 steps at git's own
    /// threshold (6700).
    pub fn gc(mut self, steps: u32, loose_objects: u32) -> Self {
        self.gc = crate::shadow::Gc {
            every: steps.max(1),
            loose: loose_objects,
        };
        self
    }

    /// Opens (creating if needed) the session's checkpoints.
    pub fn build(self) -> Result<Checkpoints> {
        let path = self
            .search_path
            .clone()
            .or_else(|| std::env::var_os("PATH"))
            .unwrap_or_default();
        let backend = if let Some(program) = crate::git::find(&path) {
            Backend::Git(Shadow::open(
                &self.data_dir,
                &self.workspace,
                &self.session,
                self.max_file_size,
                program,
                path,
                self.gc,
            )?)
        } else {
            let store = self.store.ok_or(Error::Unavailable)?;
            let root = self
                .workspace
                .canonicalize()
                .map_err(|e| Error::io(&self.workspace, e))?;
            Backend::Files(Files::new(
                store,
                SessionId::from(self.session.as_str()),
                root,
            ))
        };
        Ok(Checkpoints {
            backend,
            open: Mutex::new(None),
        })
    }
}

#[derive(Debug)]
enum Backend {
    Git(Shadow),
    Files(Files),
}

/// One session's checkpoints of one workspace.
#[derive(Debug)]
pub struct Checkpoints {
    backend: Backend,
    /// The turn whose before-state this process recorded and has not ended.
    open: Mutex<Option<OpenTurn>>,
}

impl Checkpoints {
    /// The checkpoints of a stored session (in its workspace, kept under `data_dir`), with
    /// their steps in `store`: what `lathe undo` and `lathe sessions show` open.
    pub fn of_stored(
        data_dir: impl Into<PathBuf>,
        store: lathe_store::Store,
        session: &lathe_store::Session,
    ) -> Result<Checkpoints> {
        Checkpoints::builder(data_dir, &session.workspace, session.id.as_str())
            .store(store)
            .build()
    }

    /// Checkpoints of `session` in `workspace`, kept under `data_dir`.
    pub fn builder(
        data_dir: impl Into<PathBuf>,
        workspace: impl Into<PathBuf>,
        session: impl Into<String>,
    ) -> Builder {
        Builder {
            data_dir: data_dir.into(),
            workspace: workspace.into(),
            session: session.into(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            search_path: None,
            store: None,
            gc: crate::shadow::Gc::default(),
        }
    }

    /// What these checkpoints cover.
    pub fn coverage(&self) -> Coverage {
        match self.backend {
            Backend::Git(_) => Coverage::Workspace,
            Backend::Files(_) => Coverage::FileTools,
        }
    }

    /// Records the workspace before `turn` changes it. Once per turn: later calls of the same
    /// turn do nothing. A turn of this session left open (its process died) is ended first.
    /// Without git this does nothing: [`Checkpoints::before_file_change`] keeps the copies.
    pub fn before_change(&self, turn: u32) -> Result<()> {
        let Backend::Git(shadow) = &self.backend else {
            return Ok(());
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.is_none() {
            *open = shadow.open_turn();
        }
        if open.as_ref().is_some_and(|o| o.turn == turn) {
            return Ok(());
        }
        let snapshot = shadow.snapshot()?;
        if let Some(stale) = open.take() {
            close(shadow, &stale, &snapshot.tree)?;
        }
        let begun = OpenTurn {
            turn,
            tree: snapshot.tree,
            claimed: Vec::new(),
        };
        shadow.set_open(&begun)?;
        *open = Some(begun);
        Ok(())
    }

    /// Says that a file tool is about to change `path` (relative to the workspace, or absolute
    /// inside it) in `turn`. Without git, this keeps the file's copy (the fallback's record);
    /// with git, the snapshot covers the file, and the claim tells overlapping sessions' undos
    /// whose change it was.
    pub fn before_file_change(&self, turn: u32, path: &Path) -> Result<()> {
        match &self.backend {
            Backend::Git(shadow) => {
                let relative = path
                    .strip_prefix(&shadow.git.work_tree)
                    .unwrap_or(path)
                    .to_path_buf();
                let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(open) = open.as_mut().filter(|o| o.turn == turn)
                    && !open.claimed.contains(&relative)
                {
                    open.claimed.push(relative);
                }
                Ok(())
            }
            Backend::Files(files) => files.before(turn, path),
        }
    }

    /// Records what `turn` left, and returns the size of its change; `None` when it changed
    /// nothing (then no step is kept).
    pub fn after_turn(&self, turn: u32) -> Result<Option<DiffStat>> {
        match &self.backend {
            Backend::Files(files) => files.after(turn),
            Backend::Git(shadow) => {
                let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
                let Some(pending) = open
                    .take()
                    .or_else(|| shadow.open_turn())
                    .filter(|o| o.turn == turn)
                else {
                    return Ok(None);
                };
                let snapshot = shadow.snapshot()?;
                shadow.clear_open();
                if snapshot.tree == pending.tree {
                    return Ok(None);
                }
                shadow.record(&NewStep {
                    kind: &StepKind::Turn,
                    turn,
                    before: &pending.tree,
                    after: &snapshot.tree,
                    claimed: &pending.claimed,
                    left_alone: &[],
                })?;
                Ok(Some(stat(shadow, &pending.tree, &snapshot.tree)?))
            }
        }
    }

    /// The session's steps, oldest first.
    pub fn steps(&self) -> Result<Vec<Step>> {
        match &self.backend {
            Backend::Git(shadow) => shadow.steps(),
            Backend::Files(files) => files.steps(),
        }
    }

    /// What snapshots leave out: ignored paths (now), files over the size limit and nested
    /// repositories (as the newest snapshot found them); empty in the fallback, which covers
    /// only the file tools' changes.
    pub fn uncovered(&self) -> Result<Vec<Uncovered>> {
        match &self.backend {
            Backend::Git(shadow) => shadow.uncovered(),
            Backend::Files(_) => Ok(Vec::new()),
        }
    }

    /// Undoes `target`'s turns: each file they changed is put back as it was before, where it
    /// is still as they left it (or everywhere, with [`Force::Yes`]). The undo is recorded as a
    /// step of its own, for [`Checkpoints::redo`].
    pub fn undo(
        &self,
        target: UndoTarget,
        force: Force,
    ) -> Result<std::result::Result<Restored, Nothing>> {
        let shadow = match &self.backend {
            Backend::Files(files) => return files.undo(target, force),
            Backend::Git(shadow) => shadow,
        };
        self.close_stale(shadow)?;
        let steps = shadow.steps()?;
        let chosen = choose(&steps, target, force);
        if chosen.is_empty() {
            return Ok(Err(Nothing::ToUndo));
        }
        let mut changes: BTreeMap<PathBuf, Change> = BTreeMap::new();
        for step in &chosen {
            for (path, old, new) in restore::changed(&shadow.git, &step.before, &step.after)? {
                changes
                    .entry(path.clone())
                    .and_modify(|c| c.expected = new.clone())
                    .or_insert(Change {
                        path,
                        expected: new,
                        target: old,
                    });
            }
        }
        let others = theirs(shadow, &chosen, &changes)?;
        let kind = StepKind::Undo {
            targets: chosen.iter().map(|s| s.id.clone()).collect(),
        };
        let turns = chosen.iter().map(|s| s.turn).collect();
        let changes = changes
            .into_values()
            .filter(|c| !others.contains(&c.path))
            .collect();
        let base = &steps.last().expect("a step was chosen").after;
        let mut restored = put_back(shadow, base, changes, force, kind, turns)?;
        if let Ok(report) = &mut restored {
            report.others = others;
        }
        Ok(restored)
    }

    /// The files [`Checkpoints::undo`] with the same arguments would put back (before checking
    /// which of them changed since), relative to the workspace: what an approval judges.
    /// Empty when there is nothing to undo.
    pub fn undo_paths(&self, target: UndoTarget, force: Force) -> Result<Vec<PathBuf>> {
        let shadow = match &self.backend {
            Backend::Files(files) => return files.undo_paths(target, force),
            Backend::Git(shadow) => shadow,
        };
        let steps = shadow.steps()?;
        // A turn left open (its process died) is ended by the undo first: then it is the
        // newest turn, and its files are among those put back.
        let open = shadow.open_turn();
        let mut paths = match &open {
            Some(open) => self.open_paths(shadow, &open.tree)?,
            None => Vec::new(),
        };
        let chosen = match (target, &open) {
            (UndoTarget::Last, Some(_)) => Vec::new(),
            _ => choose(&steps, target, force),
        };
        for step in chosen {
            for (path, _, _) in restore::changed(&shadow.git, &step.before, &step.after)? {
                paths.push(path);
            }
        }
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The files a step changed, with their line counts. In the fallback without git, an undo
    /// or redo step shows the files of the turns it concerned.
    pub fn files(&self, step: &Step) -> Result<Vec<FileStat>> {
        let shadow = match &self.backend {
            Backend::Files(files) => return files.files(step),
            Backend::Git(shadow) => shadow,
        };
        numstat(shadow, &step.before, &step.after)
    }

    /// The paths changed since the open turn began (the workspace as it is now).
    fn open_paths(&self, shadow: &Shadow, before: &str) -> Result<Vec<PathBuf>> {
        let now = shadow.snapshot()?;
        Ok(restore::changed(&shadow.git, before, &now.tree)?
            .into_iter()
            .map(|(path, _, _)| path)
            .collect())
    }

    /// Takes back the newest undo that is not taken back yet, unless a turn ran since.
    pub fn redo(&self, force: Force) -> Result<std::result::Result<Restored, Nothing>> {
        let shadow = match &self.backend {
            Backend::Files(files) => return files.redo(force),
            Backend::Git(shadow) => shadow,
        };
        self.close_stale(shadow)?;
        let steps = shadow.steps()?;
        let state = History::of(&steps);
        if let Some(turn) = state.turn_after_undo {
            return Ok(Err(Nothing::RedoAfterTurn { turn }));
        }
        let Some(undo) = state
            .redoable
            .last()
            .and_then(|id| steps.iter().find(|s| &s.id == id))
        else {
            return Ok(Err(Nothing::ToRedo));
        };
        let changes = restore::changed(&shadow.git, &undo.before, &undo.after)?
            .into_iter()
            .map(|(path, old, new)| Change {
                path,
                expected: new,
                target: old,
            })
            .collect();
        let turns = match &undo.kind {
            StepKind::Undo { targets } => steps
                .iter()
                .filter(|s| targets.contains(&s.id))
                .map(|s| s.turn)
                .collect(),
            _ => vec![undo.turn],
        };
        let kind = StepKind::Redo {
            target: undo.id.clone(),
        };
        let base = &steps.last().expect("an undo was found").after;
        put_back(shadow, base, changes, force, kind, turns)
    }

    /// A unified diff of what a turn changed (`Some(n)`: the turn steps of turn `n`; `None`:
    /// the whole session, from before its first step to after its last).
    pub fn diff(&self, turn: Option<u32>) -> Result<Option<String>> {
        self.review(
            turn,
            &["-p", "--no-color", "--no-ext-diff", "--no-textconv"],
        )
    }

    /// `git diff --stat` of the same span as [`Checkpoints::diff`].
    pub fn diff_stat(&self, turn: Option<u32>) -> Result<Option<String>> {
        self.review(turn, &["--stat=100", "--summary", "--no-color"])
    }

    fn review(&self, turn: Option<u32>, args: &[&str]) -> Result<Option<String>> {
        let shadow = match &self.backend {
            Backend::Files(files) => return files.diff(turn, args.contains(&"-p")),
            Backend::Git(shadow) => shadow,
        };
        let steps = shadow.steps()?;
        let span: Vec<&Step> = steps
            .iter()
            .filter(|s| turn.is_none_or(|n| s.turn == n && s.kind == StepKind::Turn))
            .collect();
        let (Some(first), Some(last)) = (span.first(), span.last()) else {
            return Ok(None);
        };
        let mut command = vec!["diff-tree", "-r", "--no-renames"];
        command.extend_from_slice(args);
        command.push(&first.before);
        command.push(&last.after);
        let out = shadow.git.run(&command)?;
        Ok(Some(String::from_utf8_lossy(&out).into_owned()))
    }

    /// A turn this process (or a dead one) began and never ended is ended now, with the
    /// workspace as it is: the undo then covers it.
    fn close_stale(&self, shadow: &Shadow) -> Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(stale) = open.take().or_else(|| shadow.open_turn()) {
            let snapshot = shadow.snapshot()?;
            close(shadow, &stale, &snapshot.tree)?;
        }
        Ok(())
    }
}

/// The turn steps an undo of `target` takes back: those not undone yet (and, forced, those
/// whose undo left files alone), the newest only or every one from turn N on.
fn choose(steps: &[Step], target: UndoTarget, force: Force) -> Vec<&Step> {
    let state = History::of(steps);
    let chosen: Vec<&Step> = steps
        .iter()
        .filter(|s| {
            s.kind == StepKind::Turn
                && (!state.undone.contains(&s.id)
                    || (force == Force::Yes && state.partly.contains(&s.id)))
        })
        .filter(|s| match target {
            UndoTarget::Last => true,
            UndoTarget::Since(n) => s.turn >= n,
        })
        .collect();
    match target {
        UndoTarget::Last => chosen.last().copied().into_iter().collect(),
        UndoTarget::Since(_) => chosen,
    }
}

/// The paths among `changes` that another session's file tools changed to the same state
/// while these steps ran, and these steps' own file tools did not claim: that session's.
fn theirs(
    shadow: &Shadow,
    chosen: &[&Step],
    changes: &BTreeMap<PathBuf, Change>,
) -> Result<Vec<PathBuf>> {
    let ours: HashSet<&PathBuf> = chosen.iter().flat_map(|s| &s.claimed).collect();
    let mut theirs = Vec::new();
    let candidates: Vec<&PathBuf> = changes.keys().filter(|p| !ours.contains(p)).collect();
    if candidates.is_empty() {
        return Ok(theirs);
    }
    for step in shadow.others_steps()? {
        if step.kind != StepKind::Turn || !step.claimed.iter().any(|p| candidates.contains(&p)) {
            continue;
        }
        for (path, _, new) in restore::changed(&shadow.git, &step.before, &step.after)? {
            if step.claimed.contains(&path)
                && candidates.contains(&&path)
                && changes.get(&path).is_some_and(|c| c.expected == new)
                && !theirs.contains(&path)
            {
                theirs.push(path);
            }
        }
    }
    Ok(theirs)
}

/// Ends an open turn with `tree` (recording it only when something changed).
fn close(shadow: &Shadow, open: &OpenTurn, tree: &str) -> Result<()> {
    shadow.clear_open();
    if open.tree != tree {
        shadow.record(&NewStep {
            kind: &StepKind::Turn,
            turn: open.turn,
            before: &open.tree,
            after: tree,
            claimed: &open.claimed,
            left_alone: &[],
        })?;
    }
    Ok(())
}

/// The undo state a session's steps add up to.
struct History {
    /// Turn steps currently undone.
    undone: HashSet<String>,
    /// Turn steps whose undo left files alone (changed since): a forced undo may finish them.
    partly: HashSet<String>,
    /// Undo steps not taken back, oldest first (cleared by a turn).
    redoable: Vec<String>,
    /// A turn that ran after the newest undo.
    turn_after_undo: Option<u32>,
}

impl History {
    fn of(steps: &[Step]) -> History {
        let mut history = History {
            undone: HashSet::new(),
            partly: HashSet::new(),
            redoable: Vec::new(),
            turn_after_undo: None,
        };
        for step in steps {
            match &step.kind {
                StepKind::Turn => {
                    if !history.redoable.is_empty() {
                        history.turn_after_undo = Some(step.turn);
                    }
                    history.redoable.clear();
                }
                StepKind::Undo { targets } => {
                    history.undone.extend(targets.iter().cloned());
                    for t in targets {
                        if step.left_alone.is_empty() {
                            history.partly.remove(t);
                        } else {
                            history.partly.insert(t.clone());
                        }
                    }
                    history.redoable.push(step.id.clone());
                    history.turn_after_undo = None;
                }
                StepKind::Redo { target } => {
                    if let Some(undo) = steps.iter().find(|s| &s.id == target)
                        && let StepKind::Undo { targets } = &undo.kind
                    {
                        for t in targets {
                            history.undone.remove(t);
                            history.partly.remove(t);
                        }
                    }
                    history.redoable.retain(|id| id != target);
                }
            }
        }
        history
    }
}

/// Puts `changes` back where the files are as expected (or all, forced), recorded as a step
/// whose states are `base` (the session's newest) with the changed paths as they were on disk
/// before and after.
fn put_back(
    shadow: &Shadow,
    base: &str,
    changes: Vec<Change>,
    force: Force,
    kind: StepKind,
    turns: Vec<u32>,
) -> Result<std::result::Result<Restored, Nothing>> {
    let paths: Vec<&Path> = changes.iter().map(|c| c.path.as_path()).collect();
    let now = restore::current(&shadow.git, &paths)?;
    let mut report = Restored {
        turns,
        ..Restored::default()
    };
    let (mut removals, mut writes, mut deferred) = (Vec::new(), Vec::new(), Vec::new());
    for change in changes {
        let state = now.get(&change.path).cloned().unwrap_or(Entry::Other);
        if restore::same(&state, &change.target) {
            continue;
        }
        if !restore::same(&state, &change.expected) && force == Force::No {
            if state == Entry::Other && change.expected == Entry::Absent {
                // A directory where the turn removed a file, and made the directory: its files
                // are among those taken away first; if it is gone then, the file comes back.
                deferred.push(change);
            } else {
                report.conflicts.push(change.path);
            }
            continue;
        }
        match change.target {
            Entry::Absent | Entry::Other => removals.push(change),
            Entry::Present { .. } => writes.push(change),
        }
    }
    if removals.is_empty() && writes.is_empty() && deferred.is_empty() {
        return Ok(Ok(report));
    }
    let todo_paths: Vec<&Path> = [&removals, &writes, &deferred]
        .into_iter()
        .flatten()
        .map(|c| c.path.as_path())
        .collect();
    let overlay = shadow.overlay(base, &todo_paths)?;
    let before = overlay.tree()?;
    // Removals first: a file that was a directory's place comes back once the directory's
    // files are gone, and a directory that was a file's place is made once the file is.
    let mut removed = Vec::new();
    for change in removals {
        match restore::apply(&shadow.git, &change) {
            Ok(()) => {
                removed.push(change.path.clone());
                report.restored.push(change.path);
            }
            Err(err) => report.failed.push((change.path, err.to_string())),
        }
    }
    restore::prune_empty_parents(&shadow.git.work_tree, &removed);
    for change in deferred {
        match std::fs::symlink_metadata(shadow.git.work_tree.join(&change.path)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => writes.push(change),
            _ => report.conflicts.push(change.path),
        }
    }
    for change in writes {
        match restore::apply(&shadow.git, &change) {
            Ok(()) => report.restored.push(change.path),
            Err(err) => report.failed.push((change.path, err.to_string())),
        }
    }
    report.restored.sort();
    report.conflicts.sort();
    let after = overlay.tree()?;
    if after != before {
        report.step = Some(shadow.record(&NewStep {
            kind: &kind,
            turn: report.turns.iter().copied().max().unwrap_or(0),
            before: &before,
            after: &after,
            claimed: &[],
            left_alone: &report.conflicts,
        })?);
    }
    Ok(Ok(report))
}

/// Files and lines changed between two trees.
fn stat(shadow: &Shadow, from: &str, to: &str) -> Result<DiffStat> {
    let files = numstat(shadow, from, to)?;
    Ok(DiffStat {
        files: files.len(),
        // Binary files count no lines.
        added: files.iter().filter_map(|f| f.added).sum(),
        removed: files.iter().filter_map(|f| f.removed).sum(),
    })
}

/// Each file changed between two trees, with its line counts (`None` for a binary file), its
/// path exactly as git has it (any bytes).
fn numstat(shadow: &Shadow, from: &str, to: &str) -> Result<Vec<FileStat>> {
    let out = shadow.git.run([
        "diff-tree",
        "-r",
        "--no-renames",
        "--numstat",
        "-z",
        from,
        to,
    ])?;
    let mut files = Vec::new();
    // `ADDED\tREMOVED\tPATH`, NUL-terminated; a binary file counts `-`.
    for record in crate::git::split_nul(&out) {
        let mut fields = record.splitn(3, |b| *b == b'\t');
        let (Some(added), Some(removed), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let count = |field: &[u8]| std::str::from_utf8(field).ok()?.parse().ok();
        files.push(FileStat {
            path: crate::git::path_of(path),
            added: count(added),
            removed: count(removed),
        });
    }
    Ok(files)
}
