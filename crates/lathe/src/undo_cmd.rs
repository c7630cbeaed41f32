//! `lathe undo`, `lathe redo` and `lathe diff`: a session's checkpoints, taken back, put back
//! again, and shown.
#![expect(
    clippy::disallowed_methods,
    reason = "undo, redo and diff are synchronous commands"
)]

use crate::render::sanitize;
use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use lathe_checkpoint::report::short_id;
pub use lathe_checkpoint::report::{Review, review};
use lathe_checkpoint::{Checkpoints, Coverage, Force, Nothing, Restored, UndoTarget};
use lathe_store::Session;

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
        None => lathe_config::sessions::newest_in(
            &store,
            &lathe_config::sessions::workspace_root(common)?,
        )?,
    };
    let checkpoints = Checkpoints::of_stored(lathe_config::state::data_dir(), store, &session)
        .with_context(|| format!("cannot open the checkpoints of session {}", short(&session)))?;
    if checkpoints.coverage() == Coverage::FileTools {
        eprintln!("lathe: {}", checkpoints.coverage().note());
    }
    Ok((session, checkpoints))
}

fn short(session: &Session) -> String {
    short_id(session.id.as_str())
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

/// Writes what an undo or redo did as `lathe undo` says it (lathe-checkpoint's report, its file
/// names made safe for a terminal); true when it put back everything it meant to.
pub fn write_restored(
    out: &mut dyn Write,
    id: &str,
    checkpoints: &Checkpoints,
    verb: &str,
    result: Result<Restored, Nothing>,
    force_hint: &str,
) -> std::io::Result<bool> {
    let mut text = Vec::new();
    let clean = lathe_checkpoint::report::write_restored(
        &mut text,
        id,
        checkpoints,
        verb,
        result,
        force_hint,
    )?;
    out.write_all(sanitize(&String::from_utf8_lossy(&text)).as_bytes())?;
    out.flush()?;
    Ok(clean)
}

#[cfg(test)]
mod shown_tests {
    use super::*;

    /// A file the model named with an OSC title sequence is listed with the escape made
    /// visible, never sent to the terminal.
    #[test]
    fn paths_are_shown_without_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let checkpoints =
            Checkpoints::builder(dir.path().join("data"), dir.path().join("ws"), "s1")
                .build()
                .unwrap();
        let named = std::path::PathBuf::from("a\u{1b}]0;owned\u{7}.txt");
        let restored = Restored {
            turns: vec![1],
            step: None,
            restored: vec![named],
            conflicts: Vec::new(),
            others: Vec::new(),
            failed: Vec::new(),
        };
        let mut out = Vec::new();
        write_restored(
            &mut out,
            "s1",
            &checkpoints,
            "undid",
            Ok(restored),
            FORCE_FLAG,
        )
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        let line = out.lines().nth(1).unwrap().trim();
        assert!(
            !line.contains('\u{1b}') && !line.contains('\u{7}'),
            "{line:?}"
        );
        assert!(line.starts_with('a') && line.ends_with(".txt"), "{line:?}");
    }
}
