//! A patch written in the reply: models trained with Codex or OpenCode write their edits as a
//! bare `*** Begin Patch` ... `*** End Patch` block, unprompted. When the tools include
//! `apply_patch`, such a block is one `apply_patch` call with the block as its `patch`.
//!
//! Recognised where a block starts a line of the answer (not of thinking, where it is a draft):
//! bare, alone in a code fence, or in a heredoc (`apply_patch <<'EOF'` or `<<EOF`, then the
//! block, then `EOF`). Like Codex, a block is a call whatever the prose around it says; the
//! tool reads it and explains any mistake in it. Quoted inside a fence that holds other text,
//! or mentioned inline (`` `*** Begin Patch` ``), it stays text.
//!
//! A block with no `*** End Patch` before the end of the reply may have been cut off by the
//! token limit: it is marked truncated, so it does not run. Closed by a fence or by its
//! heredoc delimiter instead, it is complete and runs (the tool notes the missing line).

use lathe_runtime::Tool;
use lathe_tools::apply_patch::{self, ApplyPatchTool, BEGIN, END, heredoc_start};

use super::families::{Ctx, Resolved};
use super::names::ToolNames;
use super::shape::CallParts;
use super::{Family, Repair};

/// How far a first line is read before deciding it starts no patch.
const LOOKAHEAD: usize = 256;

/// Whether the tools include `apply_patch`, so that patch blocks are calls.
pub(crate) fn enabled(names: &ToolNames) -> bool {
    names.names().iter().any(|n| n == ApplyPatchTool::NAME)
}

/// The line starting at `k` and whether it is complete (ended by `\n`, or by the end of the
/// text).
fn line_at(buf: &str, k: usize, eof: bool) -> (&str, bool) {
    match buf[k..].find('\n') {
        Some(n) => (buf[k..k + n].trim_end_matches('\r'), true),
        None => (&buf[k..], eof),
    }
}

/// Whether a patch block starts at `k` (a line start, after its indentation): `Some(true)`,
/// `Some(false)`, or `None` while the text so far cannot tell.
pub(crate) fn starts_at(buf: &str, k: usize, eof: bool) -> Option<bool> {
    let (line, complete) = line_at(buf, k, eof);
    if !complete {
        let t = line.trim_end();
        let may_become = line.len() <= LOOKAHEAD
            && (BEGIN.starts_with(t)
                || ["apply_patch", "applypatch", "<<"]
                    .iter()
                    .any(|p| p.starts_with(t) || t.starts_with(p)));
        return if may_become { None } else { Some(false) };
    }
    if line.trim() == BEGIN {
        return Some(true);
    }
    if line.len() > LOOKAHEAD || heredoc_start(line).is_none() {
        return Some(false);
    }
    // A heredoc line: a patch only when the block follows it.
    let mut next = k + line.len();
    loop {
        let Some(n) = buf[next..].find('\n') else {
            return if eof { Some(false) } else { None };
        };
        next += n + 1;
        let (line, complete) = line_at(buf, next, eof);
        if !complete {
            return if BEGIN.starts_with(line.trim()) && !eof {
                None
            } else {
                Some(line.trim() == BEGIN)
            };
        }
        if !line.trim().is_empty() {
            return Some(line.trim() == BEGIN);
        }
    }
}

/// Reads the patch block starting at `pos` (where [`starts_at`] said one starts).
pub(crate) fn resolve_patch(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let (first, _) = line_at(buf, pos, eof);
    let delimiter = heredoc_start(first);
    let body = match delimiter {
        Some(_) => match buf[pos..].find('\n') {
            Some(n) => pos + n + 1,
            None => return Resolved::Reject,
        },
        None => pos,
    };
    // Line by line to `*** End Patch` (or the heredoc's delimiter).
    let mut at = body;
    let (block_end, mut end, repairs) = loop {
        let newline = buf[at..].find('\n').map(|n| at + n);
        if newline.is_none() && !eof {
            return Resolved::NeedMore;
        }
        let line_end = newline.unwrap_or(buf.len());
        let line = buf[at..line_end].trim();
        if line == END {
            break (line_end, line_end, Vec::new());
        }
        if delimiter.as_deref() == Some(buf[at..line_end].trim_end()) {
            // The heredoc closed without `*** End Patch`: complete all the same.
            break (at, line_end, vec![Repair::MissingCloseTag]);
        }
        let Some(newline) = newline else {
            // The reply ended inside the block.
            let repair = if ctx.in_fence {
                Repair::MissingCloseTag
            } else {
                Repair::Truncated { in_string: false }
            };
            break (buf.len(), buf.len(), vec![repair]);
        };
        at = newline + 1;
    };
    // After `*** End Patch`, the heredoc's delimiter (on the next non-blank line) belongs to
    // the call.
    if let Some(word) = &delimiter
        && repairs.is_empty()
    {
        let mut next = end;
        while let Some(n) = buf[next..].find('\n') {
            let start = next + n + 1;
            let newline = buf[start..].find('\n').map(|n| start + n);
            if newline.is_none() && !eof {
                return Resolved::NeedMore;
            }
            let line_end = newline.unwrap_or(buf.len());
            let line = buf[start..line_end].trim_end();
            if line == word {
                end = line_end;
                break;
            }
            if !line.trim().is_empty() || newline.is_none() {
                break;
            }
            next = line_end;
        }
    }
    let block = buf[body..block_end]
        .trim_end_matches(['\n', '\r'])
        .to_owned()
        + "\n";
    let parts = CallParts {
        written: ApplyPatchTool::NAME.to_owned(),
        arguments: apply_patch::call_arguments(&block),
        id: None,
        repairs,
    };
    Resolved::Calls {
        end,
        calls: vec![ctx.call(parts, Family::Patch, &[])],
    }
}
