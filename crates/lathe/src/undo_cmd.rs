//! `lathe undo`, `lathe redo` and `lathe diff`: a session's checkpoints, taken back, put back
//! again, and shown.

use crate::render::sanitize;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use lathe_checkpoint::{Checkpoints, Coverage, Force, Nothing, Restored, Uncovered, UndoTarget};
use lathe_store::{Session, SessionFilter, Store};

/// At most this many uncovered paths are named; the rest are counted.
const UNCOVERED_SHOWN: usize = 5;

/// `lathe undo`.
#[derive(Debug, Args)]
pub struct UndoArgs {
    /// The session (an id or a unique prefix; default: the newest session of this workspace).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Undo every turn from turn N on (default: the newest turn not undone yet).
    #[arg(long, value_name = "N")]
    pub turn: Option<u32>,
    /// Also overwrite files changed since the turn by someone else.
    #[arg(long)]
    pub force: bool,
}

/// `lathe redo`.
#[derive(Debug, Args)]
pub struct RedoArgs {
    /// The session (an id or a unique prefix; default: the newest session of this workspace).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Also overwrite files changed since the undo by someone else.
    #[arg(long)]
    pub force: bool,
}

/// `lathe diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The session (an id or a unique prefix; default: the newest session of this workspace).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Only what turn N changed (default: the whole session).
    #[arg(long, value_name = "N")]
    pub turn: Option<u32>,
    /// Files and line counts instead of the diff.
    #[arg(long)]
    pub stat: bool,
}

/// Runs `lathe undo`.
pub fn undo(common: &crate::cli::CommonArgs, args: UndoArgs) -> anyhow::Result<ExitCode> {
    let (session, checkpoints) = open(common, args.session.as_deref())?;
    let target = args.turn.map_or(UndoTarget::Last, UndoTarget::Since);
    let result = checkpoints.undo(target, force(args.force))?;
    report(&session, &checkpoints, "undid", result, FORCE_FLAG)
}

/// Runs `lathe redo`.
pub fn redo(common: &crate::cli::CommonArgs, args: RedoArgs) -> anyhow::Result<ExitCode> {
    let (session, checkpoints) = open(common, args.session.as_deref())?;
    let result = checkpoints.redo(force(args.force))?;
    report(&session, &checkpoints, "redid", result, FORCE_FLAG)
}

/// Runs `lathe diff`.
pub fn diff(common: &crate::cli::CommonArgs, args: DiffArgs) -> anyhow::Result<ExitCode> {
    let (session, checkpoints) = open(common, args.session.as_deref())?;
    match review(session.id.as_str(), &checkpoints, args.turn, args.stat)? {
        Review::Nothing(line) => {
            eprintln!("{line}");
            Ok(ExitCode::from(crate::EXIT_FAILURE))
        }
        Review::Net(line) => {
            println!("{line}");
            Ok(ExitCode::SUCCESS)
        }
        Review::Diff(text) => {
            use std::io::IsTerminal;
            let mut out = std::io::stdout().lock();
            // The files' text is the model's: on a terminal its escapes are made visible; piped,
            // the diff stays exact (for `git apply`).
            let text = if out.is_terminal() {
                sanitize(&text)
            } else {
                std::borrow::Cow::Borrowed(text.as_str())
            };
            out.write_all(text.as_bytes())?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

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
) -> anyhow::Result<Review> {
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

/// How `lathe undo` and `lathe redo` say the way past files changed since.
const FORCE_FLAG: &str = "run again with --force to overwrite them";

fn force(yes: bool) -> Force {
    if yes { Force::Yes } else { Force::No }
}

/// The session asked for (or the newest of the workspace) and its checkpoints.
fn open(
    common: &crate::cli::CommonArgs,
    session: Option<&str>,
) -> anyhow::Result<(Session, Checkpoints)> {
    let store = crate::sessions_cmd::open_store()?;
    let session = match session {
        Some(id) => store.session(id)?,
        None => newest_here(common, &store)?,
    };
    let checkpoints = Checkpoints::builder(
        lathe_config::state::data_dir(),
        &session.workspace,
        session.id.as_str(),
    )
    .store(store)
    .build()
    .with_context(|| format!("cannot open the checkpoints of session {}", short(&session)))?;
    if checkpoints.coverage() == Coverage::FileTools {
        eprintln!("lathe: {}", checkpoints.coverage().note());
    }
    Ok((session, checkpoints))
}

fn newest_here(common: &crate::cli::CommonArgs, store: &Store) -> anyhow::Result<Session> {
    let root = match &common.workspace {
        Some(dir) => dir.clone(),
        None => lathe_config::setup::default_workspace()?,
    };
    let root = root.canonicalize().unwrap_or(root);
    store
        .list_sessions(&SessionFilter {
            workspace: Some(root.clone()),
            limit: Some(1),
        })?
        .into_iter()
        .next()
        .with_context(|| {
            format!(
                "no session has run in {}: name one with --session ID (see `lathe sessions list`)",
                root.display()
            )
        })
}

fn short(session: &Session) -> String {
    short_id(session.id.as_str())
}

fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

fn report(
    session: &Session,
    checkpoints: &Checkpoints,
    verb: &str,
    result: Result<Restored, Nothing>,
    force_hint: &str,
) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let clean = write_restored(
        &mut out,
        session.id.as_str(),
        checkpoints,
        verb,
        result,
        force_hint,
    )?;
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(crate::EXIT_FAILURE)
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
    result: Result<Restored, Nothing>,
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
        writeln!(out, "  {}", shown(path))?;
    }
    if !restored.others.is_empty() {
        writeln!(out, "left alone, changed by another session:")?;
        for path in &restored.others {
            writeln!(out, "  {}", shown(path))?;
        }
    }
    if !restored.failed.is_empty() {
        writeln!(out, "could not put back:")?;
        for (path, why) in &restored.failed {
            writeln!(out, "  {}: {}", shown(path), sanitize(why))?;
        }
    }
    if !restored.conflicts.is_empty() {
        writeln!(
            out,
            "left alone, changed since by someone else ({force_hint}):"
        )?;
        for path in &restored.conflicts {
            writeln!(out, "  {}", shown(path))?;
        }
    }
    let uncovered = uncovered_line(checkpoints);
    if !uncovered.is_empty() {
        writeln!(out, "{uncovered}")?;
    }
    out.flush()?;
    Ok(restored.conflicts.is_empty() && restored.failed.is_empty())
}

/// What undo does not cover, in one line (empty when everything is covered).
fn uncovered_line(checkpoints: &Checkpoints) -> String {
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
            "files over {} MiB: {}",
            lathe_checkpoint::DEFAULT_MAX_FILE_SIZE / (1024 * 1024),
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
        format!("not covered by undo: {}", parts.join("; "))
    }
}

fn names(items: impl ExactSizeIterator<Item = String>) -> String {
    let total = items.len();
    let mut shown: Vec<String> = items.take(UNCOVERED_SHOWN).collect();
    if total > UNCOVERED_SHOWN {
        shown.push(format!("and {} more", total - UNCOVERED_SHOWN));
    }
    shown.join(", ")
}

fn coverage_hint(checkpoints: &Checkpoints) -> &'static str {
    match checkpoints.coverage() {
        Coverage::Workspace => "",
        Coverage::FileTools => " (without git only the file tools' changes are recorded)",
    }
}

/// A path as the terminal may show it: a file name the model chose cannot carry escapes there.
fn shown(path: &std::path::Path) -> String {
    sanitize(&path.display().to_string()).into_owned()
}

#[cfg(test)]
mod shown_tests {
    use super::shown;

    /// A file the model named with an OSC title sequence is listed with the escape made
    /// visible, never sent to the terminal.
    #[test]
    fn paths_are_shown_without_escapes() {
        let named = std::path::Path::new("a\u{1b}]0;owned\u{7}.txt");
        let line = shown(named);
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "{line:?}"
        );
        assert!(line.starts_with('a') && line.ends_with(".txt"), "{line:?}");
    }
}
