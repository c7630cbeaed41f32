//! Wrapper tags (`<tool_call>`, `<|python_tag|>`, ...) and the calls inside them.

use super::function::{Block, Pending, function_block_at};
use super::{Ctx, FUNCTION_OPEN, Resolved, TagSpec, partial_prefix, skip_ws};
use crate::parser::json::{CutOff, parse_at};
use crate::parser::names::ToolNames;
use crate::parser::python::{calls_at, partial_call, to_parts};
use crate::parser::shape::{CallParts, Context, calls_in};
use crate::parser::{Family, Repair, add_repairs};

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
                    // are an unreadable call. The next call may still be arriving.
                    items.failed = items.calls.is_empty();
                    items.growing |= partial_call(buf, i);
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
    if spec.open == "<tool_call>"
        && let Some(resolved) = super::glm::resolve_glm(buf, content, ctx, eof)
    {
        return resolved;
    }
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
