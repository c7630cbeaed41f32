//! What checkpoints say to people and clients, as plain text: an undo's or redo's result, a
//! session's diff for review, and what the checkpoints do not cover. `lathe undo`, chat's
//! `/undo` and `/diff`, and the session tools (`checkpoint_list`, `checkpoint_restore`) all say
//! it this way. The text names files as they are; a terminal front end makes their escapes
//! visible before printing it.

use std::io::Write;
use std::path::PathBuf;

use crate::{Checkpoints, Coverage, Nothing, Restored, Result, Uncovered};

/// At most this many uncovered paths are named; the rest are counted.
pub const UNCOVERED_SHOWN: usize = 5;

/// What `lathe diff` and chat's `/diff` show.
pub enum Review {
    /// Nothing was recorded: why, in one line.
    Nothing(String),
    /// Changes were recorded and add up to nothing now: one line saying so.
    Net(String),
    /// The diff (or its stat).
    Diff(String),
}

/// The diff of turn `turn` (or the whole session) of session `id`.
pub fn review(
    id: &str,
    checkpoints: &Checkpoints,
    turn: Option<u32>,
    stat: bool,
) -> Result<Review> {
    let text = if stat {
        checkpoints.diff_stat(turn)?
    } else {
        checkpoints.diff(turn)?
    };
    let what = turn.map_or_else(|| "this session".to_owned(), |n| format!("turn {n}"));
    let short = short_id(id);
    Ok(match text {
        None => Review::Nothing(format!(
            "no changes recorded for {what} of session {short}{}",
            coverage_hint(checkpoints)
        )),
        // Steps were recorded, and their net change is nothing: undone, or changed back.
        Some(text) if text.is_empty() => Review::Net(format!(
            "the changes of {what} (session {short}) add up to nothing now: they were undone or changed back"
        )),
        Some(text) => Review::Diff(text),
    })
}

/// Writes what an undo or redo did (`verb`: "undid", "redid") as `lathe undo` says it; true
/// when it put back everything it meant to (no conflicts, no failures, something to do).
/// `force_hint` says how to overwrite files changed since.
pub fn write_restored(
    out: &mut dyn Write,
    id: &str,
    checkpoints: &Checkpoints,
    verb: &str,
    result: std::result::Result<Restored, Nothing>,
    force_hint: &str,
) -> std::io::Result<bool> {
    let restored = match result {
        Ok(restored) => restored,
        Err(nothing) => {
            writeln!(
                out,
                "{nothing} (session {}){}",
                short_id(id),
                coverage_hint(checkpoints)
            )?;
            return Ok(false);
        }
    };
    let turns = match restored.turns.as_slice() {
        [one] => format!("turn {one}"),
        many => format!(
            "turns {}",
            many.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    writeln!(
        out,
        "{verb} {turns} of session {}: {} file{} put back",
        short_id(id),
        restored.restored.len(),
        if restored.restored.len() == 1 {
            ""
        } else {
            "s"
        }
    )?;
    for path in &restored.restored {
        writeln!(out, "  {}", path.display())?;
    }
    if !restored.others.is_empty() {
        writeln!(out, "left alone, changed by another session:")?;
        for path in &restored.others {
            writeln!(out, "  {}", path.display())?;
        }
    }
    if !restored.failed.is_empty() {
        writeln!(out, "could not put back:")?;
        for (path, why) in &restored.failed {
            writeln!(out, "  {}: {why}", path.display())?;
        }
    }
    if !restored.conflicts.is_empty() {
        writeln!(
            out,
            "left alone, changed since by someone else ({force_hint}):"
        )?;
        for path in &restored.conflicts {
            writeln!(out, "  {}", path.display())?;
        }
    }
    let uncovered = uncovered_line(
        checkpoints,
        "undo",
        &format!(
            "files over {} MiB",
            crate::DEFAULT_MAX_FILE_SIZE / (1024 * 1024)
        ),
    );
    if !uncovered.is_empty() {
        writeln!(out, "{uncovered}")?;
    }
    out.flush()?;
    Ok(restored.conflicts.is_empty() && restored.failed.is_empty())
}

/// What the checkpoints do not cover, in one line (empty when everything is covered): "not
/// covered by `covered_by`: ...", files over the size limit named after `over_limit`.
pub fn uncovered_line(checkpoints: &Checkpoints, covered_by: &str, over_limit: &str) -> String {
    let Ok(uncovered) = checkpoints.uncovered() else {
        return String::new();
    };
    let mut ignored: Vec<PathBuf> = Vec::new();
    let mut large: Vec<(PathBuf, u64)> = Vec::new();
    let mut nested: Vec<PathBuf> = Vec::new();
    for item in uncovered {
        match item {
            Uncovered::Ignored(path) => ignored.push(path),
            Uncovered::TooLarge { path, size } => large.push((path, size)),
            Uncovered::NestedRepository(path) => nested.push(path),
        }
    }
    let mut parts = Vec::new();
    if !large.is_empty() {
        parts.push(format!(
            "{over_limit}: {}",
            names(large.iter().map(|(p, size)| format!(
                "{} ({} MiB)",
                p.display(),
                size / (1024 * 1024)
            )))
        ));
    }
    if !ignored.is_empty() {
        parts.push(format!(
            "ignored: {}",
            names(ignored.iter().map(|p| p.display().to_string()))
        ));
    }
    if !nested.is_empty() {
        parts.push(format!(
            "nested repositories: {}",
            names(nested.iter().map(|p| p.display().to_string()))
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("not covered by {covered_by}: {}", parts.join("; "))
    }
}

/// Up to [`UNCOVERED_SHOWN`] of `items`, and how many more.
fn names(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.take(UNCOVERED_SHOWN).collect();
    if total > UNCOVERED_SHOWN {
        shown.push(format!("and {} more", total - UNCOVERED_SHOWN));
    }
    shown.join(", ")
}

/// Why nothing may have been recorded, after a sentence: empty with git.
pub fn coverage_hint(checkpoints: &Checkpoints) -> &'static str {
    match checkpoints.coverage() {
        Coverage::Workspace => "",
        Coverage::FileTools => " (without git only the file tools' changes are recorded)",
    }
}

/// The first characters of a session id, as the reports name it.
pub fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

/// The steps of `checkpoints` with their files, as `lathe sessions show --json` lists them;
/// `null` when they cannot be read.
pub fn steps_json(checkpoints: &Checkpoints) -> serde_json::Value {
    let Ok(steps) = checkpoints.steps() else {
        return serde_json::Value::Null;
    };
    steps
        .iter()
        .enumerate()
        .map(|(n, step)| {
            let files = checkpoints.files(step).unwrap_or_default();
            serde_json::json!({
                "step": n + 1,
                "id": step.id,
                "turn": step.turn,
                "kind": match step.kind {
                    crate::StepKind::Turn => "turn",
                    crate::StepKind::Undo { .. } => "undo",
                    crate::StepKind::Redo { .. } => "redo",
                },
                "at": step.at.map(|t| t.to_string()),
                "files": files.iter().map(|f| serde_json::json!({
                    "path": f.path.display().to_string(),
                    "added": f.added,
                    "removed": f.removed,
                })).collect::<Vec<_>>(),
            })
        })
        .collect()
}
