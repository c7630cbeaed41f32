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
        // Mistral v11 puts the JSON right after the name: `[TOOL_CALLS]NAME{...}`.
        let direct = name_end > i && b.get(k) == Some(&b'{');
        if name_end == i || !(direct || buf[k..].starts_with(ARGS_MARKER)) {
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
        let args_at = if direct {
            k
        } else {
            skip_ws(b, k + ARGS_MARKER.len())
        };
        if args_at >= b.len() {
            return if eof {
                finish_marker(calls, end, b.len(), ctx)
            } else {
                Resolved::NeedMore
            };
        }
        let Some(parsed) = parse_at(buf, args_at) else {
            if !eof && partial_token(buf, args_at) {
                return Resolved::NeedMore;
            }
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
