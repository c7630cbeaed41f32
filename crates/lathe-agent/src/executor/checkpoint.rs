//! The executor's side of checkpoints: each model turn's calls run between
//! [`Host::begin_turn`] and [`Host::end_turn`], numbered across the whole session, and a turn
//! that changed files is announced as [`Event::CheckpointCreated`].

use std::sync::Arc;

use lathe_checkpoint::{CheckpointRecorder, StepKind};
use lathe_runtime::Host;

use crate::events::{ChangedFile, Checkpoint, Event};
use crate::sink::EventSink;

/// Ends `turn` on the session's `host` and says what it recorded: the checkpoint (its step and
/// files read from `hook`'s checkpoints), or `None` when the turn changed nothing. A failure to
/// record is a notice, never a failed run: the calls ran, only undo will not cover them.
pub(super) async fn end_turn(
    host: &Host,
    hook: Option<Arc<CheckpointRecorder>>,
    turn: u32,
    sink: &EventSink,
) -> Option<Checkpoint> {
    let host = host.clone();
    // The end snapshot and the reads of what it recorded touch the disk: not on an async worker.
    let ended = tokio::task::spawn_blocking(move || record(&host, hook.as_deref(), turn))
        .await
        .unwrap_or_else(|err| Err(format!("recording the turn stopped: {err}")));
    match ended {
        Ok(checkpoint) => checkpoint,
        Err(err) => {
            sink.emit(Event::Notice {
                message: format!(
                    "could not record what turn {turn} changed ({err}): undo will not cover it"
                ),
            });
            None
        }
    }
}

/// Ends the turn on `host`, and reads the step and files it recorded from `hook`'s checkpoints.
#[expect(
    clippy::disallowed_methods,
    reason = "runs on a blocking thread (spawn_blocking in end_turn)"
)]
fn record(
    host: &Host,
    hook: Option<&CheckpointRecorder>,
    turn: u32,
) -> Result<Option<Checkpoint>, String> {
    let (Some(stat), Some(hook)) = (host.end_turn()?, hook) else {
        return Ok(None);
    };
    let checkpoints = hook.checkpoints();
    let read = || -> lathe_checkpoint::Result<(String, Vec<ChangedFile>)> {
        let step = checkpoints
            .steps()?
            .into_iter()
            .rev()
            .find(|s| s.turn == turn && s.kind == StepKind::Turn)
            .map(|s| s.id)
            .unwrap_or_default();
        let files = checkpoints
            .diff(Some(turn))?
            .map(|diff| files_of(&diff))
            .unwrap_or_default();
        Ok((step, files))
    };
    let (step, files) = read().map_err(|err| err.to_string())?;
    Ok(Some(Checkpoint {
        step,
        turn,
        files,
        added: stat.added,
        removed: stat.removed,
    }))
}

/// The files of a unified git diff, with their lines added and removed, in the diff's order.
pub(super) fn files_of(diff: &str) -> Vec<ChangedFile> {
    let mut files: Vec<ChangedFile> = Vec::new();
    let mut in_hunk = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            in_hunk = false;
            files.push(ChangedFile {
                path: path_of(rest),
                added: 0,
                removed: 0,
                created: false,
                deleted: false,
                sub_agents: Vec::new(),
            });
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            in_hunk = true;
        } else if !in_hunk {
            if line.starts_with("new file mode") {
                file.created = true;
            } else if line.starts_with("deleted file mode") {
                file.deleted = true;
            } else if let Some(to) = line.strip_prefix("rename to ") {
                file.path = to.to_owned();
            }
        } else if line.starts_with('+') {
            file.added += 1;
        } else if line.starts_with('-') {
            file.removed += 1;
        }
    }
    files
}

/// The path of a `diff --git a/X b/X` header (X as git prints it, quoted when it must be).
fn path_of(header: &str) -> String {
    // Both halves name the same path unless the file was renamed ("rename to" says then).
    let half = header.len().saturating_sub(1) / 2;
    let b = header.get(half + 1..).unwrap_or(header);
    let b = b.trim_matches('"');
    b.strip_prefix("b/").unwrap_or(b).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_is_counted_per_file() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n+more\n same\n--- not a header\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\nindex 3..0\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/new file.txt b/new file.txt\nnew file mode 100755\n--- /dev/null\n+++ b/new file.txt\n@@ -0,0 +1 @@\n+hi\n";
        let files = files_of(diff);
        let got: Vec<(&str, u64, u64, bool, bool)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.added, f.removed, f.created, f.deleted))
            .collect();
        assert_eq!(
            got,
            [
                ("src/a.rs", 2, 2, false, false),
                ("gone.txt", 0, 1, false, true),
                ("new file.txt", 1, 0, true, false),
            ]
        );
    }
}
