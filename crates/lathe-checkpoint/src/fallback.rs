//! Checkpoints without git: a copy of each file the file tools change, before and after the
//! turn, in the sessions database. Shell commands' changes are not seen, so not covered.
//!
//! An undo writes one `undo` mark per turn it undid, all named `#N` for the N-th undo; a redo
//! writes `redo` marks with the same name.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use lathe_store::{Checkpoint, CheckpointKind, FileSnapshot, SessionId, Store};

use crate::{DiffStat, Error, Force, Nothing, Restored, Result, Step, StepKind, UndoTarget};

#[derive(Debug)]
pub(crate) struct Files {
    store: Store,
    session: SessionId,
    root: PathBuf,
    /// Paths copied in each turn by this process.
    seen: Mutex<BTreeMap<u32, Vec<PathBuf>>>,
}

/// A turn's files: the oldest copy before, the newest after, and whether it is undone now.
#[derive(Debug, Default)]
struct Turn {
    before: BTreeMap<PathBuf, FileSnapshot>,
    after: BTreeMap<PathBuf, FileSnapshot>,
    first_id: i64,
    undone_by: Option<String>,
    /// The undo that undid it left files alone (changed since): a forced undo may finish it.
    partly: bool,
}

impl Files {
    pub(crate) fn new(store: Store, session: SessionId, root: PathBuf) -> Files {
        Files {
            store,
            session,
            root,
            seen: Mutex::new(BTreeMap::new()),
        }
    }

    fn relative(&self, path: &Path) -> PathBuf {
        path.strip_prefix(&self.root).unwrap_or(path).to_path_buf()
    }

    fn read(&self, path: &Path) -> Result<FileSnapshot> {
        let full = self.root.join(path);
        match std::fs::read(&full) {
            Ok(bytes) => {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&full)
                    .map_err(|e| Error::io(&full, e))?
                    .permissions()
                    .mode();
                Ok(FileSnapshot::Contents(encode(mode & 0o7777, &bytes)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileSnapshot::Absent),
            Err(e) => Err(Error::io(&full, e)),
        }
    }

    pub(crate) fn before(&self, turn: u32, path: &Path) -> Result<()> {
        let path = self.relative(path);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let paths = seen.entry(turn).or_default();
        if paths.contains(&path) {
            return Ok(());
        }
        let snapshot = self.read(&path)?;
        self.store.save_file_state(
            &self.session,
            turn,
            CheckpointKind::Before,
            &path,
            &snapshot,
        )?;
        paths.push(path);
        Ok(())
    }

    pub(crate) fn after(&self, turn: u32) -> Result<Option<DiffStat>> {
        let paths = self
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&turn)
            .unwrap_or_default();
        let turns = self.turns()?;
        let mut stat = DiffStat::default();
        for path in paths {
            let now = self.read(&path)?;
            let before = turns
                .get(&turn)
                .and_then(|t| t.before.get(&path))
                .cloned()
                .unwrap_or(FileSnapshot::Absent);
            if !same(&before, &now) {
                stat.files += 1;
                let (added, removed) = lines_changed(&before, &now);
                stat.added += added;
                stat.removed += removed;
            }
            self.store
                .save_file_state(&self.session, turn, CheckpointKind::After, &path, &now)?;
        }
        Ok((stat.files > 0).then_some(stat))
    }

    fn rows(&self) -> Result<Vec<Checkpoint>> {
        Ok(self.store.checkpoints(&self.session)?)
    }

    fn turns(&self) -> Result<BTreeMap<u32, Turn>> {
        let mut turns: BTreeMap<u32, Turn> = BTreeMap::new();
        for row in self.rows()? {
            let turn = turns.entry(row.turn).or_default();
            if turn.first_id == 0 {
                turn.first_id = row.id;
            }
            match row.kind {
                CheckpointKind::Before => {
                    turn.before.entry(row.path).or_insert(row.snapshot);
                }
                CheckpointKind::After => {
                    turn.after.insert(row.path, row.snapshot);
                }
                CheckpointKind::Undo => {
                    turn.undone_by = Some(row.path.to_string_lossy().into_owned());
                    // The mark's content lists the files the undo left alone.
                    turn.partly =
                        matches!(&row.snapshot, FileSnapshot::Contents(left) if !left.is_empty());
                }
                CheckpointKind::Redo => {
                    turn.undone_by = None;
                    turn.partly = false;
                }
            }
        }
        Ok(turns)
    }

    pub(crate) fn steps(&self) -> Result<Vec<Step>> {
        let mut steps = Vec::new();
        let mut marks: HashSet<(CheckpointKind, String)> = HashSet::new();
        for row in self.rows()? {
            let label = row.path.to_string_lossy().into_owned();
            match row.kind {
                CheckpointKind::Before
                    if !steps
                        .iter()
                        .any(|s: &Step| s.kind == StepKind::Turn && s.turn == row.turn) =>
                {
                    steps.push(Step {
                        id: format!("turn-{}", row.turn),
                        turn: row.turn,
                        kind: StepKind::Turn,
                        before: String::new(),
                        after: String::new(),
                        claimed: Vec::new(),
                        left_alone: Vec::new(),
                        at: Some(row.created_at),
                    });
                }
                CheckpointKind::Undo | CheckpointKind::Redo
                    if marks.insert((row.kind, label.clone())) =>
                {
                    let kind = if row.kind == CheckpointKind::Undo {
                        StepKind::Undo {
                            targets: vec![format!("turn-{}", row.turn)],
                        }
                    } else {
                        StepKind::Redo {
                            target: label.clone(),
                        }
                    };
                    steps.push(Step {
                        id: label,
                        turn: row.turn,
                        kind,
                        before: String::new(),
                        after: String::new(),
                        claimed: Vec::new(),
                        left_alone: Vec::new(),
                        at: Some(row.created_at),
                    });
                }
                _ => {}
            }
        }
        Ok(steps)
    }

    pub(crate) fn undo(
        &self,
        target: UndoTarget,
        force: Force,
    ) -> Result<std::result::Result<Restored, Nothing>> {
        let turns = self.turns()?;
        let chosen = Self::chosen(&turns, target, force);
        if chosen.is_empty() {
            return Ok(Err(Nothing::ToUndo));
        }
        // Per path: back to the oldest turn's copy before, expected as the newest left it.
        let changes = spans(chosen.iter().map(|n| &turns[n]), Direction::Back);
        let label = format!("#{}", self.next_mark()?);
        let mut report = self.put_back(changes, force)?;
        let left = left_alone(&report.conflicts);
        for n in &chosen {
            self.store.save_file_state(
                &self.session,
                *n,
                CheckpointKind::Undo,
                Path::new(&label),
                &left,
            )?;
        }
        report.turns = chosen;
        report.step = Some(label);
        Ok(Ok(report))
    }

    /// The turns an undo of `target` takes back (not undone yet, with changes recorded; forced,
    /// also those whose undo left files alone).
    fn chosen(turns: &BTreeMap<u32, Turn>, target: UndoTarget, force: Force) -> Vec<u32> {
        let chosen: Vec<u32> = turns
            .iter()
            .filter(|(n, t)| {
                (t.undone_by.is_none() || (force == Force::Yes && t.partly))
                    && !t.after.is_empty()
                    && match target {
                        UndoTarget::Last => true,
                        UndoTarget::Since(since) => **n >= since,
                    }
            })
            .map(|(n, _)| *n)
            .collect();
        match target {
            UndoTarget::Last => chosen.last().copied().into_iter().collect(),
            UndoTarget::Since(_) => chosen,
        }
    }

    pub(crate) fn undo_paths(&self, target: UndoTarget, force: Force) -> Result<Vec<PathBuf>> {
        let turns = self.turns()?;
        let mut paths: Vec<PathBuf> = Self::chosen(&turns, target, force)
            .iter()
            .flat_map(|n| turns[n].before.keys().cloned())
            .collect();
        paths.sort();
        paths.dedup();
        Ok(paths)
    }

    /// The files of a turn step (an undo or redo step: of the turns it concerned, the other
    /// way round).
    pub(crate) fn files(&self, step: &Step) -> Result<Vec<crate::FileStat>> {
        let turns = self.turns()?;
        let (numbers, back): (Vec<u32>, bool) = match &step.kind {
            StepKind::Turn => (vec![step.turn], false),
            StepKind::Undo { targets } => (
                targets
                    .iter()
                    .filter_map(|t| t.strip_prefix("turn-")?.parse().ok())
                    .collect(),
                true,
            ),
            StepKind::Redo { .. } => (vec![step.turn], false),
        };
        let mut files = Vec::new();
        for n in numbers {
            let Some(turn) = turns.get(&n) else { continue };
            for (path, before) in &turn.before {
                let after = turn
                    .after
                    .get(path)
                    .cloned()
                    .unwrap_or(FileSnapshot::Absent);
                if same(before, &after) {
                    continue;
                }
                let (added, removed) = lines_changed(before, &after);
                let (added, removed) = if back {
                    (removed, added)
                } else {
                    (added, removed)
                };
                files.push(crate::FileStat {
                    path: path.clone(),
                    added: Some(added),
                    removed: Some(removed),
                });
            }
        }
        Ok(files)
    }

    pub(crate) fn redo(&self, force: Force) -> Result<std::result::Result<Restored, Nothing>> {
        let turns = self.turns()?;
        let Some(label) = turns
            .values()
            .filter_map(|t| t.undone_by.as_ref())
            .max_by_key(|l| l.trim_start_matches('#').parse::<u64>().unwrap_or(0))
            .cloned()
        else {
            return Ok(Err(Nothing::ToRedo));
        };
        let chosen: Vec<u32> = turns
            .iter()
            .filter(|(_, t)| t.undone_by.as_deref() == Some(label.as_str()))
            .map(|(n, _)| *n)
            .collect();
        let newest = chosen.iter().max().copied().unwrap_or(0);
        if let Some((n, _)) = turns
            .iter()
            .find(|(n, t)| **n > newest && t.undone_by.is_none())
        {
            return Ok(Err(Nothing::RedoAfterTurn { turn: *n }));
        }
        let changes = spans(chosen.iter().rev().map(|n| &turns[n]), Direction::Forward);
        let mut report = self.put_back(changes, force)?;
        for n in &chosen {
            self.store.save_file_state(
                &self.session,
                *n,
                CheckpointKind::Redo,
                Path::new(&label),
                &FileSnapshot::Absent,
            )?;
        }
        report.turns = chosen;
        report.step = Some(label);
        Ok(Ok(report))
    }

    fn next_mark(&self) -> Result<u64> {
        Ok(self
            .rows()?
            .iter()
            .filter(|r| r.kind == CheckpointKind::Undo)
            .filter_map(|r| {
                r.path
                    .to_string_lossy()
                    .trim_start_matches('#')
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0)
            + 1)
    }

    /// Each path to its target `.0` where it holds the expected `.1` now (or forced).
    fn put_back(
        &self,
        changes: BTreeMap<PathBuf, (FileSnapshot, FileSnapshot)>,
        force: Force,
    ) -> Result<Restored> {
        let mut report = Restored::default();
        for (path, (target, expected)) in changes {
            let now = self.read(&path)?;
            if same(&now, &target) {
                continue;
            }
            if !same(&now, &expected) && force == Force::No {
                report.conflicts.push(path);
                continue;
            }
            let written = crate::restore::stays_inside(&self.root, &path)
                .and_then(|()| write(&self.root.join(&path), &target));
            match written {
                Ok(()) => report.restored.push(path),
                Err(err) => report.failed.push((path, err.to_string())),
            }
        }
        Ok(report)
    }

    pub(crate) fn diff(&self, turn: Option<u32>, patch: bool) -> Result<Option<String>> {
        let turns = self.turns()?;
        let mut text = String::new();
        for (n, t) in &turns {
            if turn.is_some_and(|want| want != *n) {
                continue;
            }
            for (path, before) in &t.before {
                let after = t.after.get(path).cloned().unwrap_or(FileSnapshot::Absent);
                let (added, removed) = lines_changed(before, &after);
                if patch {
                    let old = String::from_utf8_lossy(contents(before)).into_owned();
                    let new = String::from_utf8_lossy(contents(&after)).into_owned();
                    let shown = path.to_string_lossy();
                    text.push_str(
                        &similar::TextDiff::from_lines(&old, &new)
                            .unified_diff()
                            .header(&format!("a/{shown}"), &format!("b/{shown}"))
                            .to_string(),
                    );
                } else {
                    text.push_str(&format!(" {} | +{added} -{removed}\n", path.display()));
                }
            }
        }
        Ok((!text.is_empty()).then_some(text))
    }
}

/// A stored copy starts with the file's permission bits: `\0lathe-mode 755\n`, then the bytes.
/// (Copies saved before modes were kept have no such line; their mode is left as it is.)
const MODE_MARK: &[u8] = b"\0lathe-mode ";

fn encode(mode: u32, bytes: &[u8]) -> Vec<u8> {
    let mut out = MODE_MARK.to_vec();
    out.extend_from_slice(format!("{mode:o}\n").as_bytes());
    out.extend_from_slice(bytes);
    out
}

/// A stored copy's mode (when it was kept) and bytes.
fn decode(stored: &[u8]) -> (Option<u32>, &[u8]) {
    let Some(rest) = stored.strip_prefix(MODE_MARK) else {
        return (None, stored);
    };
    let Some(end) = rest.iter().position(|b| *b == b'\n') else {
        return (None, stored);
    };
    let mode = std::str::from_utf8(&rest[..end])
        .ok()
        .and_then(|m| u32::from_str_radix(m, 8).ok());
    match mode {
        Some(mode) => (Some(mode), &rest[end + 1..]),
        None => (None, stored),
    }
}

/// Whether two copies hold the same file: the same bytes, and the same mode where both know it.
fn same(a: &FileSnapshot, b: &FileSnapshot) -> bool {
    match (a, b) {
        (FileSnapshot::Absent, FileSnapshot::Absent) => true,
        (FileSnapshot::Contents(a), FileSnapshot::Contents(b)) => {
            let ((mode_a, a), (mode_b, b)) = (decode(a), decode(b));
            a == b && (mode_a.is_none() || mode_b.is_none() || mode_a == mode_b)
        }
        _ => false,
    }
}

/// The mark of an undo: the files it left alone, NUL-separated (`Absent`: none).
fn left_alone(conflicts: &[PathBuf]) -> FileSnapshot {
    if conflicts.is_empty() {
        return FileSnapshot::Absent;
    }
    let mut list = Vec::new();
    for path in conflicts {
        list.extend_from_slice(path.as_os_str().as_encoded_bytes());
        list.push(0);
    }
    FileSnapshot::Contents(list)
}

fn contents(snapshot: &FileSnapshot) -> &[u8] {
    match snapshot {
        FileSnapshot::Absent => &[],
        FileSnapshot::Contents(stored) => decode(stored).1,
    }
}

fn lines_changed(before: &FileSnapshot, after: &FileSnapshot) -> (u64, u64) {
    let (old, new) = (
        String::from_utf8_lossy(contents(before)),
        String::from_utf8_lossy(contents(after)),
    );
    let diff = similar::TextDiff::from_lines(old.as_ref(), new.as_ref());
    let mut counts = (0, 0);
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => counts.0 += 1,
            similar::ChangeTag::Delete => counts.1 += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    counts
}

/// Writes a file's copy back (atomically, with the mode it had; a copy without one keeps the
/// file's permissions), or removes it.
fn write(path: &Path, snapshot: &FileSnapshot) -> std::io::Result<()> {
    match snapshot {
        FileSnapshot::Absent => match std::fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
        FileSnapshot::Contents(stored) => {
            use std::os::unix::fs::PermissionsExt;
            let (mode, bytes) = decode(stored);
            let parent = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(parent)?;
            let mut file = tempfile::NamedTempFile::new_in(parent)?;
            std::io::Write::write_all(&mut file, bytes)?;
            match mode {
                Some(mode) => file
                    .as_file()
                    .set_permissions(std::fs::Permissions::from_mode(mode))?,
                None => {
                    if let Ok(meta) = std::fs::metadata(path) {
                        file.as_file().set_permissions(meta.permissions())?;
                    }
                }
            }
            file.persist(path).map_err(|e| e.error)?;
            Ok(())
        }
    }
}

/// Which way a restore goes over the turns it covers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Undo: each file back to its copy before the first turn (walked oldest first).
    Back,
    /// Redo: each file forward to what the last turn left (walked newest first).
    Forward,
}

/// Per path, over `turns` in the order given: the state to put back and the state the file is
/// expected to have now (as the turn at the other end left it).
fn spans<'a>(
    turns: impl Iterator<Item = &'a Turn>,
    direction: Direction,
) -> BTreeMap<PathBuf, (FileSnapshot, FileSnapshot)> {
    let mut changes: BTreeMap<PathBuf, (FileSnapshot, FileSnapshot)> = BTreeMap::new();
    for turn in turns {
        for (path, before) in &turn.before {
            let after = turn
                .after
                .get(path)
                .cloned()
                .unwrap_or(FileSnapshot::Absent);
            let (target, expected) = match direction {
                Direction::Back => (before.clone(), after),
                Direction::Forward => (after, before.clone()),
            };
            changes
                .entry(path.clone())
                .and_modify(|c| c.1 = expected.clone())
                .or_insert((target, expected));
        }
    }
    changes
}
