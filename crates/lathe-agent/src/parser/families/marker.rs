//! Mistral's `[TOOL_CALLS]`, as a JSON array, as `NAME[ARGS]{...}` or (v11) `NAME{...}`.

use super::{Ctx, MARKER, Resolved, partial_prefix, skip_ws};
use crate::parser::json::{parse_at, partial_token};
use crate::parser::shape::{CallParts, Context, calls_in};
use crate::parser::{Family, Repair, add_repairs};
use serde_json::{Map, Value};

const ARGS_MARKER: &str = "[ARGS]";
const CALL_ID_MARKER: &str = "[CALL_ID]";

/// Mistral's `[TOOL_CALLS]` at `pos`: a JSON array (or object) of calls, or
/// `NAME[ARGS]{...}` (with an optional `[CALL_ID]id`), possibly repeated.
pub(crate) fn resolve_marker(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let b = buf.as_bytes();
    let i = skip_ws(b, pos + MARKER.len());
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
    if b[i] == b'[' || b[i] == b'{' {
        json_calls(buf, i, ctx, eof)
    } else {
        named_calls(buf, i, ctx, eof)
    }
}

/// The calls, which end at `end`, resolved.
fn done(calls: Vec<CallParts>, end: usize, ctx: &Ctx<'_>) -> Resolved {
    Resolved::Calls {
        end,
        calls: calls
            .into_iter()
            .map(|p| ctx.call(p, Family::ToolCallsMarker, &[]))
            .collect(),
    }
}

/// The JSON array (or object) of calls at `i`, after the marker.
fn json_calls(buf: &str, i: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
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
    done(calls, parsed.end, ctx)
}

/// What reading one `NAME[ARGS]{...}` came to.
enum Named {
    /// A call that ends at `end`; `cut` when its arguments were cut off (it is the last).
    Call {
        parts: CallParts,
        end: usize,
        cut: bool,
    },
    /// The buffer ends inside the call.
    Incomplete,
    /// No call starts here (at `at`): the calls before it are all there is.
    NotACall { at: usize },
    /// The outcome, whatever came before: more is needed, or the call is malformed.
    Resolved(Resolved),
}

/// The calls `NAME[ARGS]{...}` from `i` on, one after another.
fn named_calls(buf: &str, mut i: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let b = buf.as_bytes();
    let mut calls = Vec::new();
    let mut end = i;
    loop {
        match named_call(buf, i, eof) {
            Named::Call {
                parts,
                end: call_end,
                cut,
            } => {
                calls.push(parts);
                end = call_end;
                if cut {
                    return done(calls, end, ctx);
                }
            }
            Named::Incomplete => {
                return if eof {
                    finish_marker(calls, end, b.len(), ctx)
                } else {
                    Resolved::NeedMore
                };
            }
            Named::NotACall { at } => {
                if calls.is_empty() {
                    return Resolved::Malformed {
                        end: at,
                        reason: "[TOOL_CALLS] is not followed by a call".into(),
                    };
                }
                return done(calls, end, ctx);
            }
            Named::Resolved(resolved) => return resolved,
        }
        // Another `NAME[ARGS]` may follow directly.
        let next = skip_ws(b, end);
        if next >= b.len() {
            return if eof {
                done(calls, end, ctx)
            } else {
                Resolved::NeedMore
            };
        }
        let starts_name = b[next].is_ascii_alphabetic() || b[next] == b'_';
        if !starts_name {
            return done(calls, end, ctx);
        }
        i = next;
    }
}

/// The call `NAME[CALL_ID]id[ARGS]{...}` (or v11's `NAME{...}`) at `i`.
fn named_call(buf: &str, i: usize, eof: bool) -> Named {
    let b = buf.as_bytes();
    let name_end = i + buf[i..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .unwrap_or(buf.len() - i);
    if name_end == b.len() {
        return Named::Incomplete;
    }
    let mut k = name_end;
    let mut id = None;
    if buf[k..].starts_with(CALL_ID_MARKER) {
        let id_start = k + CALL_ID_MARKER.len();
        let Some(id_len) = buf[id_start..].find('[') else {
            return Named::Incomplete;
        };
        id = Some(buf[id_start..id_start + id_len].trim().to_string());
        k = id_start + id_len;
    }
    // Mistral v11 puts the JSON right after the name: `[TOOL_CALLS]NAME{...}`.
    let direct = name_end > i && b.get(k) == Some(&b'{');
    if name_end == i || !(direct || buf[k..].starts_with(ARGS_MARKER)) {
        if !eof && (partial_prefix(buf, k, ARGS_MARKER) || partial_prefix(buf, k, CALL_ID_MARKER)) {
            return Named::Resolved(Resolved::NeedMore);
        }
        return Named::NotACall { at: k.max(i) };
    }
    let args_at = if direct {
        k
    } else {
        skip_ws(b, k + ARGS_MARKER.len())
    };
    if args_at >= b.len() {
        return Named::Incomplete;
    }
    let Some(parsed) = parse_at(buf, args_at) else {
        if !eof && partial_token(buf, args_at) {
            return Named::Resolved(Resolved::NeedMore);
        }
        return Named::Resolved(Resolved::Malformed {
            end: args_at,
            reason: "the arguments after [ARGS] are not valid JSON".into(),
        });
    };
    if parsed.cut_off.is_some() && !eof {
        return Named::Resolved(Resolved::NeedMore);
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
            return Named::Resolved(Resolved::Malformed {
                end: parsed.end,
                reason: "the arguments are not a JSON object".into(),
            });
        }
    };
    Named::Call {
        parts: CallParts {
            written: buf[i..name_end].to_string(),
            arguments,
            id,
            repairs,
        },
        end: parsed.end,
        cut: parsed.cut_off.is_some(),
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
