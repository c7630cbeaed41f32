//! The slash commands on the session's checkpoints: `/diff`, `/undo`, `/redo` and `/rewind`,
//! said the way `lathe diff` and `lathe undo` say it.
#![expect(
    clippy::disallowed_methods,
    reason = "the chat waits for /undo, /redo and /rewind"
)]

use lathe_agent::Agent;
use lathe_checkpoint::{Checkpoints, Force, UndoTarget};
use lathe_store::SessionId;

use super::{Context, parse_turn};
use crate::render::Style;
use crate::undo_cmd::Review;

/// `/diff [N] [--stat]`: what the session (or its turn N) changed.
pub(super) fn diff(cx: &Context<'_>, turn: Option<&str>, stat: bool) -> String {
    match parse_turn(turn) {
        Ok(turn) => review(cx, turn, stat),
        Err(said) => said,
    }
}

/// `/undo [--force]`: takes back the newest turn's changes.
pub(super) fn undo(cx: &Context<'_>, force: bool) -> String {
    restore(cx, force, ("undo", "undid"), |c, f| {
        c.undo(UndoTarget::Last, f)
    })
}

/// `/redo [--force]`: takes back the last undo.
pub(super) fn redo(cx: &Context<'_>, force: bool) -> String {
    restore(cx, force, ("redo", "redid"), |c, f| c.redo(f))
}

/// `/rewind N`; without a turn, what it needs.
pub(super) fn rewind(cx: &mut Context<'_>, turn: Option<&str>) -> String {
    match parse_turn(turn) {
        Ok(Some(turn)) => rewind_to(cx.agent, cx.session, turn, cx.style),
        Ok(None) => format!(
            "{}\n",
            cx.style.red("/rewind needs a turn: /rewind N (the line after a turn that changed files names it)")
        ),
        Err(said) => said,
    }
}

const NO_CHECKPOINTS: &str = "this session keeps no checkpoints ([agent] checkpoints = false, or they could not be opened: see the note when the chat started)\n";

fn review(cx: &Context<'_>, turn: Option<u32>, stat: bool) -> String {
    let Some(checkpoints) = cx.agent.checkpoints() else {
        return NO_CHECKPOINTS.to_owned();
    };
    match crate::undo_cmd::review(cx.session.as_str(), checkpoints, turn, stat) {
        Ok(Review::Diff(text)) => {
            let mut text = crate::render::sanitize(&text).into_owned();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text
        }
        Ok(Review::Nothing(line) | Review::Net(line)) => format!("{line}\n"),
        Err(err) => format!(
            "{}\n",
            cx.style.red(&format!("cannot show the diff: {err:#}"))
        ),
    }
}

/// `/undo` and `/redo`, said the way `lathe undo` says it.
fn restore(
    cx: &Context<'_>,
    force: bool,
    (name, verb): (&str, &str),
    act: impl FnOnce(
        &Checkpoints,
        Force,
    ) -> lathe_checkpoint::Result<
        Result<lathe_checkpoint::Restored, lathe_checkpoint::Nothing>,
    >,
) -> String {
    let Some(checkpoints) = cx.agent.checkpoints() else {
        return NO_CHECKPOINTS.to_owned();
    };
    let force = if force { Force::Yes } else { Force::No };
    let hint = format!("/{name} --force overwrites them");
    let mut said = Vec::new();
    match act(checkpoints, force) {
        Ok(result) => {
            let _ = crate::undo_cmd::write_restored(
                &mut said,
                cx.session.as_str(),
                checkpoints,
                verb,
                result,
                &hint,
            );
        }
        Err(err) => {
            said = format!("{}\n", cx.style.red(&format!("cannot {name}: {err}"))).into_bytes()
        }
    }
    String::from_utf8_lossy(&said).into_owned()
}

/// `/rewind N`: the files back to before turn N (as `lathe undo --turn N` does, never
/// overwriting files changed since), then the conversation cut there.
fn rewind_to(agent: &mut Agent, session: &SessionId, turn: u32, style: &Style) -> String {
    if !agent.executor().can_rewind(turn) {
        let newest = agent.executor().session_turns();
        return format!(
            "{}\n",
            style.red(&format!(
                "turn {turn} is not in this conversation (it has turns up to {newest}, and /rewind reaches only turns this chat ran since it started)"
            ))
        );
    }
    let mut said = Vec::new();
    if let Some(checkpoints) = agent.checkpoints() {
        match checkpoints.undo(UndoTarget::Since(turn), Force::No) {
            Ok(Err(lathe_checkpoint::Nothing::ToUndo)) => {
                said.extend_from_slice(b"no file changes since that turn to take back\n");
            }
            Ok(result) => {
                let hint = format!(
                    "they stay as they are; lathe undo --session {session} --turn {turn} --force overwrites them"
                );
                let _ = crate::undo_cmd::write_restored(
                    &mut said,
                    session.as_str(),
                    checkpoints,
                    "undid",
                    result,
                    &hint,
                );
            }
            Err(err) => {
                said.extend_from_slice(
                    format!(
                        "{}\n",
                        style.red(&format!(
                            "cannot put the files back: {err}; the conversation is cut all the same"
                        ))
                    )
                    .as_bytes(),
                );
            }
        }
    } else {
        said.extend_from_slice(NO_CHECKPOINTS.as_bytes());
    }
    let cut = agent.rewind(turn).map_or(0, |cut| cut.len());
    said.extend_from_slice(
        format!(
            "{}\n",
            style.dim(&format!(
                "rewound the conversation to before turn {turn}: {cut} message{} dropped; your next message goes on from there",
                if cut == 1 { "" } else { "s" }
            ))
        )
        .as_bytes(),
    );
    String::from_utf8_lossy(&said).into_owned()
}
