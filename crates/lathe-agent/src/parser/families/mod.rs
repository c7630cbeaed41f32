//! Reading one candidate block of each family, given the text from where it starts.
//!
//! Each reader answers [`Resolved::NeedMore`] while the block may still grow (only before the
//! end of the text), so the streaming scanner and a one-shot read agree.

mod function;
mod gemma;
mod glm;
mod harmony;
mod marker;
mod sections;
mod wrapper;

pub(crate) use function::resolve_function_tag;
pub(crate) use marker::resolve_marker;
pub(crate) use sections::{SECTIONS, SectionStart, resolve_section, section_at};
pub(crate) use wrapper::resolve_tag;

use super::json::parse_at;
use super::names::ToolNames;
use super::python::{calls_at, ident_chain_end, to_parts};
use super::shape::{CallParts, Context, calls_in};
use super::{CallSource, Family, ParsedCall, Repair, add_repairs, resolve_name};

/// What a candidate turned out to be.
#[derive(Debug)]
pub(crate) enum Resolved {
    /// The block may still grow.
    NeedMore,
    /// Calls, ending at `end`.
    Calls { end: usize, calls: Vec<ParsedCall> },
    /// Not calls: text up to `end`.
    Text { end: usize },
    /// Meant as a call, unreadable, up to `end`.
    Malformed { end: usize, reason: String },
    /// Not a candidate after all: the first character is text, scanning goes on after it.
    Reject,
    /// A code fence that holds no calls: its opening line (up to `end`) is text and the rest
    /// streams through until the closing fence.
    EnterCode { end: usize },
}

/// A wrapper tag and the tags that may close it.
pub(crate) struct TagSpec {
    pub open: &'static str,
    pub closes: &'static [&'static str],
    pub family: Family,
}

/// Wrapper tags, by family: Hermes/Qwen `<tool_call>`, Phi/Granite `<|tool_call|>`, LFM
/// `<|tool_call_start|>`, Llama `<|python_tag|>` (ended by `<|eom_id|>`), and variants seen
/// from fine-tunes.
pub(crate) const TAGS: &[TagSpec] = &[
    TagSpec {
        open: "<tool_call>",
        closes: &["</tool_call>"],
        family: Family::ToolCallTag,
    },
    TagSpec {
        open: "<tool_calls>",
        closes: &["</tool_calls>"],
        family: Family::ToolCallTag,
    },
    TagSpec {
        open: "<function_call>",
        closes: &["</function_call>"],
        family: Family::ToolCallTag,
    },
    TagSpec {
        open: "<|tool_call|>",
        closes: &["<|/tool_call|>", "<|tool_call_end|>"],
        family: Family::ToolCallTag,
    },
    TagSpec {
        open: "<|tool_call_start|>",
        closes: &["<|tool_call_end|>"],
        family: Family::ToolCallTag,
    },
    TagSpec {
        open: "<|python_tag|>",
        closes: &["<|eom_id|>", "<|eot_id|>"],
        family: Family::PythonTag,
    },
    // Llama 4.
    TagSpec {
        open: "<|python_start|>",
        closes: &["<|python_end|>"],
        family: Family::PythonTag,
    },
    // Seed-OSS (`<function=...>` inside).
    TagSpec {
        open: "<seed:tool_call>",
        closes: &["</seed:tool_call>"],
        family: Family::ToolCallTag,
    },
    // OLMo 3 (Python calls, one a line).
    TagSpec {
        open: "<function_calls>",
        closes: &["</function_calls>"],
        family: Family::ToolCallTag,
    },
    // Apertus (`[{"NAME": {args}}]`).
    TagSpec {
        open: "<|tools_prefix|>",
        closes: &["<|tools_suffix|>"],
        family: Family::ToolCallTag,
    },
];

pub(crate) const FUNCTION_OPEN: &str = "<function=";

/// The second bytes of every opener that starts with `<` or `>` (the sections, the wrapper
/// tags, `<function=`). A `<` or `>` followed by any other byte starts none of them, and that
/// is most of them in prose and code (`Vec<T>`, `a < b`, `->`, `</div>`): the scanner passes
/// them over without comparing each of the thirty-odd openers.
pub(crate) const OPENER_SECOND_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut i = 0;
    while i < TAGS.len() {
        let open = TAGS[i].open.as_bytes();
        assert!(open.len() > 1 && open[0] == b'<');
        table[open[1] as usize] = true;
        i += 1;
    }
    let mut i = 0;
    while i < sections::SECTIONS.len() {
        let open = sections::SECTIONS[i].open.as_bytes();
        assert!(open.len() > 1 && (open[0] == b'<' || open[0] == b'>'));
        table[open[1] as usize] = true;
        i += 1;
    }
    let open = FUNCTION_OPEN.as_bytes();
    table[open[1] as usize] = true;
    table
};
pub(crate) const MARKER: &str = "[TOOL_CALLS]";

/// What the readers need: the real tool names and where the text came from.
pub(crate) struct Ctx<'a> {
    pub names: &'a ToolNames,
    pub thinking: bool,
    /// The text is the inside of a code fence (its end is the closing fence, not the reply's).
    pub in_fence: bool,
}

impl Ctx<'_> {
    pub(crate) fn call(&self, parts: CallParts, family: Family, extra: &[Repair]) -> ParsedCall {
        let (name, resolution) = resolve_name(&parts.written, self.names);
        let mut repairs = parts.repairs;
        add_repairs(&mut repairs, extra);
        let source = if self.thinking {
            CallSource::Thinking(family)
        } else {
            CallSource::Text(family)
        };
        ParsedCall {
            id: parts.id,
            name,
            arguments: parts.arguments,
            source,
            resolution,
            repairs,
        }
    }
}

pub(crate) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

/// Whether the text from `i` is a proper prefix of `literal` (it may still become it).
pub(crate) fn partial_prefix(buf: &str, i: usize, literal: &str) -> bool {
    let rest = &buf.as_bytes()[i.min(buf.len())..];
    rest.len() < literal.len() && literal.as_bytes().starts_with(rest)
}

/// Bare JSON at `pos`: calls when every object in it is a call, else text.
pub(crate) fn resolve_json(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let Some(parsed) = parse_at(buf, pos) else {
        return Resolved::Reject;
    };
    if parsed.cut_off.is_some() && !eof {
        return Resolved::NeedMore;
    }
    match calls_in(&parsed.value, ctx.names, Context::Implicit) {
        Some(mut calls) => {
            if let (Some(cut), Some(last)) = (parsed.cut_off, calls.last_mut()) {
                last.repairs.push(Repair::Truncated {
                    in_string: cut.in_string,
                });
            }
            let calls = calls
                .into_iter()
                .map(|p| ctx.call(p, Family::BareJson, &parsed.repairs))
                .collect();
            Resolved::Calls {
                end: parsed.end,
                calls,
            }
        }
        None => Resolved::Text { end: parsed.end },
    }
}

/// Python-style calls at `pos`: on a line of their own (a list item's bullet before them is
/// fine), or as a bracketed list anywhere; the first names a real tool.
pub(crate) fn resolve_python(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let b = buf.as_bytes();
    let Some(py) = calls_at(buf, pos) else {
        return Resolved::Reject;
    };
    if py.cut_off && !eof {
        return Resolved::NeedMore;
    }
    // Only spaces may follow on the line.
    let mut j = py.end;
    while b
        .get(j)
        .is_some_and(|c| *c == b' ' || *c == b'\t' || *c == b'\r' || *c == b';')
    {
        j += 1;
    }
    // A bracketed list may stand inside a sentence (SGLang reads these too).
    let bracketed = b[pos] == b'[' && !py.cut_off;
    if j >= b.len() && !eof && !py.cut_off && !bracketed {
        return Resolved::NeedMore;
    }
    if (j < b.len() && b[j] != b'\n' && !bracketed) || py.calls.is_empty() {
        return Resolved::Reject;
    }
    // In a list, a call of an unknown tool is still a call (its answer names the closest);
    // the first names a real tool.
    if ctx.names.known(&py.calls[0].name).is_none() {
        return Resolved::Reject;
    }
    let mut calls = Vec::with_capacity(py.calls.len());
    for call in py.calls {
        let Some(parts) = to_parts(call, ctx.names) else {
            return Resolved::Reject;
        };
        calls.push(ctx.call(parts, Family::PythonCall, &[]));
    }
    Resolved::Calls { end: py.end, calls }
}

/// Whether `line` closes a fence of `len` or more `ch`s.
pub(crate) fn is_closing_fence(line: &str, ch: u8, len: usize) -> bool {
    let b = line.as_bytes();
    let indent = b.iter().take_while(|c| **c == b' ').count();
    if indent > 3 {
        return false;
    }
    let run = b[indent..].iter().take_while(|c| **c == ch).count();
    run >= len
        && b[indent + run..]
            .iter()
            .all(|c| matches!(c, b' ' | b'\t' | b'\r'))
}

/// Whether the text of a fence's content starting at `k` may be a call: `Some(true/false)`,
/// or `None` when more text is needed to tell.
pub(crate) fn fence_may_hold_calls(buf: &str, k: usize, names: &ToolNames) -> Option<bool> {
    let b = buf.as_bytes();
    if super::patch::enabled(names) {
        match super::patch::starts_at(buf, k, false) {
            Some(true) => return Some(true),
            None => return None,
            Some(false) => {}
        }
    }
    match b.get(k)? {
        b'{' | b'[' | b'<' => Some(true),
        c if c.is_ascii_alphabetic() || *c == b'_' => {
            let end = ident_chain_end(buf, k)?;
            let mut j = end;
            while b.get(j).is_some_and(|c| *c == b' ' || *c == b'\t') {
                j += 1;
            }
            if j >= b.len() {
                return None;
            }
            let name = buf[k..end].strip_suffix(".call").unwrap_or(&buf[k..end]);
            Some(b[j] == b'(' && names.known(name).is_some())
        }
        _ => Some(false),
    }
}
