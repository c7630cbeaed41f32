//! Reading one candidate block of each family, given the text from where it starts.
//!
//! Each reader answers [`Resolved::NeedMore`] while the block may still grow (only before the
//! end of the text), so the streaming scanner and a one-shot read agree.

use super::json::{CutOff, parse_at};
use super::names::ToolNames;
use super::python::{calls_at, ident_chain_end, to_parts};
use super::shape::{CallParts, Context, calls_in};
use super::{CallSource, Family, ParsedCall, Repair, add_repairs, resolve_name};
use serde_json::{Map, Value};

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
];

pub(crate) const FUNCTION_OPEN: &str = "<function=";
const FUNCTION_CLOSE: &str = "</function>";
const PARAMETER_OPEN: &str = "<parameter=";
const PARAMETER_CLOSE: &str = "</parameter>";
pub(crate) const MARKER: &str = "[TOOL_CALLS]";
const ARGS_MARKER: &str = "[ARGS]";
const CALL_ID_MARKER: &str = "[CALL_ID]";

/// What the readers need: the real tool names and where the text came from.
pub(crate) struct Ctx<'a> {
    pub names: &'a ToolNames,
    pub thinking: bool,
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

/// Calls read one after another inside a wrapper.
struct Items {
    calls: Vec<CallParts>,
    end: usize,
    /// The text ended inside the last item.
    cut: Option<CutOff>,
    /// An item could not be read.
    failed: bool,
    /// The last item is complete but may still take more (a `<function=...>` block waiting
    /// for its next parameter or its closing tag).
    growing: bool,
}

/// Reads calls from `start`: JSON objects or arrays, `<function=...>` blocks and Python
/// calls, separated by whitespace, `,` or `;`. Stops at other text.
fn items_at(buf: &str, start: usize, names: &ToolNames) -> Items {
    let b = buf.as_bytes();
    let mut items = Items {
        calls: Vec::new(),
        end: start,
        cut: None,
        failed: false,
        growing: false,
    };
    let mut i = start;
    loop {
        while b
            .get(i)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b',' || *c == b';')
        {
            i += 1;
        }
        let Some(&c) = b.get(i) else { return items };
        if c == b'{' || c == b'[' {
            if let Some(parsed) = parse_at(buf, i)
                && let Some(mut parts) = calls_in(&parsed.value, names, Context::Explicit)
            {
                for p in &mut parts {
                    add_repairs(&mut p.repairs, &parsed.repairs);
                }
                if let (Some(cut), Some(last)) = (parsed.cut_off, parts.last_mut()) {
                    last.repairs.push(Repair::Truncated {
                        in_string: cut.in_string,
                    });
                }
                items.calls.extend(parts);
                items.end = parsed.end;
                i = parsed.end;
                if parsed.cut_off.is_some() {
                    items.cut = parsed.cut_off;
                    return items;
                }
                continue;
            }
            if c == b'{' {
                items.failed = true;
                return items;
            }
        }
        if buf[i..].starts_with(FUNCTION_OPEN) {
            match function_block_at(buf, i) {
                Block::Done {
                    parts,
                    end,
                    pending,
                } => {
                    items.calls.push(parts);
                    items.end = end;
                    items.growing = pending == Pending::CloseTag;
                    i = end;
                    if let Pending::Value { in_string } = pending {
                        items.cut = Some(CutOff { in_string });
                        return items;
                    }
                    continue;
                }
                Block::Incomplete => {
                    items.cut = Some(CutOff { in_string: false });
                    return items;
                }
                Block::Invalid => {
                    items.failed = true;
                    return items;
                }
            }
        }
        if c == b'[' || c.is_ascii_alphabetic() || c == b'_' {
            match calls_at(buf, i) {
                Some(py) => {
                    for call in py.calls {
                        match to_parts(call, names) {
                            Some(p) => items.calls.push(p),
                            None => {
                                items.failed = true;
                                return items;
                            }
                        }
                    }
                    items.end = py.end;
                    i = py.end;
                    if py.cut_off {
                        let in_string = items.calls.last().is_some_and(|p| {
                            p.repairs.contains(&Repair::Truncated { in_string: true })
                        });
                        items.cut = Some(CutOff { in_string });
                        return items;
                    }
                    continue;
                }
                None => {
                    // Words after a call are prose that follows it; words instead of a call
                    // are an unreadable call.
                    items.failed = items.calls.is_empty();
                    return items;
                }
            }
        }
        return items;
    }
}

/// A wrapper tag at `pos`: the calls inside, then the closing tag (optional).
pub(crate) fn resolve_tag(
    buf: &str,
    pos: usize,
    spec: &TagSpec,
    ctx: &Ctx<'_>,
    eof: bool,
) -> Resolved {
    let b = buf.as_bytes();
    let content = pos + spec.open.len();
    let items = items_at(buf, content, ctx.names);
    let finish = |calls: Vec<CallParts>, end: usize, extra: &[Repair]| Resolved::Calls {
        end,
        calls: calls
            .into_iter()
            .map(|p| ctx.call(p, spec.family, extra))
            .collect(),
    };
    if !items.calls.is_empty() && !items.failed && items.cut.is_none() {
        let j = skip_ws(b, items.end);
        if let Some(close) = spec.closes.iter().find(|c| buf[j..].starts_with(**c)) {
            return finish(items.calls, j + close.len(), &[]);
        }
        // After a separator, another call may be on its way.
        let mut next = j;
        while b
            .get(next)
            .is_some_and(|c| c.is_ascii_whitespace() || *c == b',' || *c == b';')
        {
            next += 1;
        }
        let may_grow = items.growing
            || next == b.len()
            || spec.closes.iter().any(|c| partial_prefix(buf, j, c))
            || partial_prefix(buf, j, FUNCTION_OPEN);
        if !eof && may_grow {
            return Resolved::NeedMore;
        }
        let missing: &[Repair] = if spec.family == Family::PythonTag {
            &[]
        } else {
            &[Repair::MissingCloseTag]
        };
        return finish(items.calls, items.end, missing);
    }
    if items.cut.is_some() && !items.failed && !eof {
        // The JSON may still close; a closing tag inside one of its strings is content.
        return Resolved::NeedMore;
    }
    // Unreadable or cut off: read only up to the closing tag, if there is one.
    let close_at = spec
        .closes
        .iter()
        .filter_map(|c| buf[content..].find(c).map(|k| (content + k, c.len())))
        .min();
    match close_at {
        Some((k, close_len)) => {
            let bounded = items_at(&buf[..k], content, ctx.names);
            if !bounded.calls.is_empty() && !bounded.failed {
                let extra: &[Repair] = if bounded.cut.is_some() {
                    &[Repair::Unbalanced]
                } else {
                    &[]
                };
                let calls = bounded
                    .calls
                    .into_iter()
                    .map(|mut p| {
                        // Cut off by the closing tag is unbalanced, not truncated.
                        p.repairs.retain(|r| !matches!(r, Repair::Truncated { .. }));
                        p
                    })
                    .collect();
                return finish(calls, k + close_len, extra);
            }
            Resolved::Malformed {
                end: k + close_len,
                reason: unreadable(&bounded),
            }
        }
        None if !eof => Resolved::NeedMore,
        None if !items.calls.is_empty() && !items.failed => {
            finish(items.calls, b.len(), &[Repair::MissingCloseTag])
        }
        None => Resolved::Malformed {
            end: b.len(),
            reason: unreadable(&items),
        },
    }
}

fn unreadable(items: &Items) -> String {
    if items.failed {
        "the call is not valid JSON or has no tool name".to_string()
    } else {
        "the block holds no call".to_string()
    }
}

/// What is still open at the end of a `<function=...>` block.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pending {
    Nothing,
    /// Everything read; only `</function>` missing.
    CloseTag,
    /// The text ended inside an argument value.
    Value {
        in_string: bool,
    },
}

enum Block {
    Done {
        parts: CallParts,
        end: usize,
        pending: Pending,
    },
    /// The text ended before the name was complete.
    Incomplete,
    Invalid,
}

/// Longest tool or parameter name read between `=` and `>`.
const MAX_TAG_NAME: usize = 200;

/// `<function=NAME>` followed by a JSON object or `<parameter=K>V</parameter>` pairs.
fn function_block_at(buf: &str, i: usize) -> Block {
    let b = buf.as_bytes();
    let name_start = i + FUNCTION_OPEN.len();
    let Some((name, gt)) = tag_value(buf, name_start) else {
        return if tag_value_may_follow(buf, name_start) {
            Block::Incomplete
        } else {
            Block::Invalid
        };
    };
    let mut parts = CallParts {
        written: name,
        arguments: Value::Object(Map::new()),
        id: None,
        repairs: Vec::new(),
    };
    let body = skip_ws(b, gt + 1);
    if b.get(body) == Some(&b'{') {
        let Some(parsed) = parse_at(buf, body) else {
            return Block::Invalid;
        };
        if !parsed.value.is_object() {
            return Block::Invalid;
        }
        parts.arguments = parsed.value;
        parts.repairs = parsed.repairs;
        if let Some(cut) = parsed.cut_off {
            parts.repairs.push(Repair::Truncated {
                in_string: cut.in_string,
            });
            return Block::Done {
                parts,
                end: parsed.end,
                pending: Pending::Value {
                    in_string: cut.in_string,
                },
            };
        }
        let after = skip_ws(b, parsed.end);
        return if buf[after..].starts_with(FUNCTION_CLOSE) {
            Block::Done {
                parts,
                end: after + FUNCTION_CLOSE.len(),
                pending: Pending::Nothing,
            }
        } else if after == b.len() || partial_prefix(buf, after, FUNCTION_CLOSE) {
            Block::Done {
                parts,
                end: parsed.end,
                pending: Pending::CloseTag,
            }
        } else {
            parts.repairs.push(Repair::MissingCloseTag);
            Block::Done {
                parts,
                end: parsed.end,
                pending: Pending::Nothing,
            }
        };
    }
    let mut arguments = Map::new();
    let mut j = body;
    loop {
        j = skip_ws(b, j);
        let rest = &buf[j..];
        if rest.starts_with(FUNCTION_CLOSE) {
            parts.arguments = Value::Object(arguments);
            return Block::Done {
                parts,
                end: j + FUNCTION_CLOSE.len(),
                pending: Pending::Nothing,
            };
        }
        if rest.starts_with(PARAMETER_OPEN) {
            let Some((key, key_gt)) = tag_value(buf, j + PARAMETER_OPEN.len()) else {
                if !tag_value_may_follow(buf, j + PARAMETER_OPEN.len()) {
                    return Block::Invalid;
                }
                parts.arguments = Value::Object(arguments);
                let pending = Pending::Value { in_string: false };
                return Block::Done {
                    parts,
                    end: b.len(),
                    pending,
                };
            };
            let value_start = key_gt + 1;
            let ends = [PARAMETER_CLOSE, PARAMETER_OPEN, FUNCTION_CLOSE];
            let next = ends
                .iter()
                .filter_map(|e| buf[value_start..].find(e).map(|k| (value_start + k, *e)))
                .min();
            match next {
                Some((k, PARAMETER_CLOSE)) => {
                    arguments.insert(key, parameter_value(&buf[value_start..k]));
                    j = k + PARAMETER_CLOSE.len();
                }
                Some((k, _)) => {
                    arguments.insert(key, parameter_value(&buf[value_start..k]));
                    parts.repairs.push(Repair::Unbalanced);
                    j = k;
                }
                None => {
                    arguments.insert(key, parameter_value(&buf[value_start..]));
                    parts.repairs.push(Repair::Truncated { in_string: true });
                    parts.arguments = Value::Object(arguments);
                    return Block::Done {
                        parts,
                        end: b.len(),
                        pending: Pending::Value { in_string: true },
                    };
                }
            }
            continue;
        }
        parts.arguments = Value::Object(arguments);
        if j == b.len()
            || partial_prefix(buf, j, FUNCTION_CLOSE)
            || partial_prefix(buf, j, PARAMETER_OPEN)
        {
            return Block::Done {
                parts,
                end: j,
                pending: Pending::CloseTag,
            };
        }
        if j == body {
            return Block::Invalid;
        }
        parts.repairs.push(Repair::MissingCloseTag);
        return Block::Done {
            parts,
            end: j,
            pending: Pending::Nothing,
        };
    }
}

/// `NAME>` at `start`: the name (trimmed) and the offset of `>`.
fn tag_value(buf: &str, start: usize) -> Option<(String, usize)> {
    let rest = buf.get(start..)?;
    let gt = rest.find('>')?;
    let raw = &rest[..gt];
    let name = raw.trim();
    if gt > MAX_TAG_NAME || name.is_empty() || raw.contains('\n') || raw.contains('<') {
        return None;
    }
    Some((
        name.trim_matches(|c| c == '"' || c == '\'').to_string(),
        start + gt,
    ))
}

/// Whether a `NAME>` that does not read yet may still arrive: no `>`, newline or `<` so far,
/// and not too long.
fn tag_value_may_follow(buf: &str, start: usize) -> bool {
    let rest = buf.get(start..).unwrap_or("");
    rest.len() <= MAX_TAG_NAME && !rest.contains(['>', '\n', '<'])
}

/// A parameter's text: one newline on each side is layout; JSON objects and arrays are read
/// as JSON; anything else stays a string for the registry to coerce by its schema.
fn parameter_value(raw: &str) -> Value {
    let text = raw
        .strip_prefix("\r\n")
        .or_else(|| raw.strip_prefix('\n'))
        .unwrap_or(raw);
    let text = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text);
    let trimmed = text.trim();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
    {
        return value;
    }
    Value::String(text.to_string())
}

/// A `<function=NAME>...</function>` block at `pos`.
pub(crate) fn resolve_function_tag(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    match function_block_at(buf, pos) {
        Block::Invalid => Resolved::Reject,
        Block::Incomplete if !eof => Resolved::NeedMore,
        Block::Incomplete => Resolved::Malformed {
            end: buf.len(),
            reason: "the call was cut off before its name ended".into(),
        },
        Block::Done {
            pending: Pending::Value { .. } | Pending::CloseTag,
            ..
        } if !eof => Resolved::NeedMore,
        Block::Done {
            parts,
            end,
            pending,
        } => {
            let extra: &[Repair] = if pending == Pending::CloseTag {
                &[Repair::MissingCloseTag]
            } else {
                &[]
            };
            Resolved::Calls {
                end,
                calls: vec![ctx.call(parts, Family::FunctionTag, extra)],
            }
        }
    }
}

/// Mistral's `[TOOL_CALLS]` at `pos`: a JSON array (or object) of calls, or
/// `NAME[ARGS]{...}` (with an optional `[CALL_ID]id`), possibly repeated.
pub(crate) fn resolve_marker(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let b = buf.as_bytes();
    let mut i = skip_ws(b, pos + MARKER.len());
    if i >= b.len() {
        return if eof {
            Resolved::Malformed {
                end: b.len(),
                reason: "nothing followed [TOOL_CALLS]".into(),
            }
        } else {
            Resolved::NeedMore
        };
    }
    let done = |calls: Vec<CallParts>, end: usize| Resolved::Calls {
        end,
        calls: calls
            .into_iter()
            .map(|p| ctx.call(p, Family::ToolCallsMarker, &[]))
            .collect(),
    };
    if b[i] == b'[' || b[i] == b'{' {
        let Some(parsed) = parse_at(buf, i) else {
            return Resolved::Malformed {
                end: i,
                reason: "the calls after [TOOL_CALLS] are not valid JSON".into(),
            };
        };
        if parsed.cut_off.is_some() && !eof {
            return Resolved::NeedMore;
        }
        let Some(mut calls) = calls_in(&parsed.value, ctx.names, Context::Explicit) else {
            return Resolved::Malformed {
                end: parsed.end,
                reason: "the JSON after [TOOL_CALLS] holds no call".into(),
            };
        };
        if let (Some(cut), Some(last)) = (parsed.cut_off, calls.last_mut()) {
            last.repairs.push(Repair::Truncated {
                in_string: cut.in_string,
            });
        }
        for c in &mut calls {
            add_repairs(&mut c.repairs, &parsed.repairs);
        }
        return done(calls, parsed.end);
    }
    let mut calls = Vec::new();
    let mut end = i;
    loop {
        let name_end = i + buf[i..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .unwrap_or(buf.len() - i);
        if name_end == b.len() {
            return if eof {
                finish_marker(calls, end, b.len(), ctx)
            } else {
                Resolved::NeedMore
            };
        }
        let mut k = name_end;
        let mut id = None;
        if buf[k..].starts_with(CALL_ID_MARKER) {
            let id_start = k + CALL_ID_MARKER.len();
            let Some(id_len) = buf[id_start..].find('[') else {
                return if eof {
                    finish_marker(calls, end, b.len(), ctx)
                } else {
                    Resolved::NeedMore
                };
            };
            id = Some(buf[id_start..id_start + id_len].trim().to_string());
            k = id_start + id_len;
        }
        if name_end == i || !buf[k..].starts_with(ARGS_MARKER) {
            if !eof
                && (partial_prefix(buf, k, ARGS_MARKER) || partial_prefix(buf, k, CALL_ID_MARKER))
            {
                return Resolved::NeedMore;
            }
            if calls.is_empty() {
                return Resolved::Malformed {
                    end: k.max(i),
                    reason: "[TOOL_CALLS] is not followed by a call".into(),
                };
            }
            return done(calls, end);
        }
        let args_at = skip_ws(b, k + ARGS_MARKER.len());
        if args_at >= b.len() {
            return if eof {
                finish_marker(calls, end, b.len(), ctx)
            } else {
                Resolved::NeedMore
            };
        }
        let Some(parsed) = parse_at(buf, args_at) else {
            return Resolved::Malformed {
                end: args_at,
                reason: "the arguments after [ARGS] are not valid JSON".into(),
            };
        };
        if parsed.cut_off.is_some() && !eof {
            return Resolved::NeedMore;
        }
        let mut repairs = parsed.repairs;
        if let Some(cut) = parsed.cut_off {
            repairs.push(Repair::Truncated {
                in_string: cut.in_string,
            });
        }
        let arguments = match parsed.value {
            Value::Object(_) => parsed.value,
            Value::Null => Value::Object(Map::new()),
            _ => {
                return Resolved::Malformed {
                    end: parsed.end,
                    reason: "the arguments are not a JSON object".into(),
                };
            }
        };
        calls.push(CallParts {
            written: buf[i..name_end].to_string(),
            arguments,
            id,
            repairs,
        });
        end = parsed.end;
        if parsed.cut_off.is_some() {
            return done(calls, end);
        }
        // Another `NAME[ARGS]` may follow directly.
        let next = skip_ws(b, end);
        if next >= b.len() {
            return if eof {
                done(calls, end)
            } else {
                Resolved::NeedMore
            };
        }
        let starts_name = b[next].is_ascii_alphabetic() || b[next] == b'_';
        if !starts_name {
            return done(calls, end);
        }
        i = next;
    }
}

fn finish_marker(calls: Vec<CallParts>, end: usize, len: usize, ctx: &Ctx<'_>) -> Resolved {
    if calls.is_empty() {
        return Resolved::Malformed {
            end: len,
            reason: "the call after [TOOL_CALLS] was cut off".into(),
        };
    }
    Resolved::Calls {
        end,
        calls: calls
            .into_iter()
            .map(|p| ctx.call(p, Family::ToolCallsMarker, &[]))
            .collect(),
    }
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

/// Python-style calls at `pos`, which must stand on a line of their own and name real tools.
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
    if j >= b.len() && !eof && !py.cut_off {
        return Resolved::NeedMore;
    }
    if (j < b.len() && b[j] != b'\n') || py.calls.is_empty() {
        return Resolved::Reject;
    }
    let mut calls = Vec::with_capacity(py.calls.len());
    for call in py.calls {
        if ctx.names.known(&call.name).is_none() {
            return Resolved::Reject;
        }
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
