//! GLM-4.5/4.6/4.7 inside `<tool_call>`: the tool's name, then `<arg_key>K</arg_key>`
//! `<arg_value>V</arg_value>` pairs (on lines of their own in 4.5/4.6, run together in 4.7).
//! Values are kept as written; objects and arrays are read as JSON.

use super::{Ctx, Resolved, partial_prefix, skip_ws};
use crate::parser::shape::CallParts;
use crate::parser::{Family, Repair};
use serde_json::{Map, Value};

const KEY_OPEN: &str = "<arg_key>";
const KEY_CLOSE: &str = "</arg_key>";
const VALUE_OPEN: &str = "<arg_value>";
const VALUE_CLOSE: &str = "</arg_value>";
const CLOSE: &str = "</tool_call>";

/// The GLM form at `content` (just after `<tool_call>`), or `None` when the block is another
/// form (JSON, `<function=...>`, Python).
pub(crate) fn resolve_glm(buf: &str, content: usize, ctx: &Ctx<'_>, eof: bool) -> Option<Resolved> {
    let b = buf.as_bytes();
    let start = skip_ws(b, content);
    let first = *b.get(start)?;
    if !(first.is_ascii_alphabetic() || first == b'_') {
        return None;
    }
    let name_end = start
        + buf[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
            .unwrap_or(buf.len() - start);
    if name_end - start > 100 {
        return None;
    }
    let after = skip_ws(b, name_end);
    if after >= b.len() {
        return (!eof).then_some(Resolved::NeedMore);
    }
    let rest = &buf[after..];
    let glm = rest.starts_with(KEY_OPEN) || rest.starts_with(CLOSE);
    if !glm {
        let may_be = partial_prefix(buf, after, KEY_OPEN) || partial_prefix(buf, after, CLOSE);
        return (may_be && !eof).then_some(Resolved::NeedMore);
    }
    let (body_end, end, closed) = match buf[after..].find(CLOSE) {
        Some(k) => (after + k, after + k + CLOSE.len(), true),
        None if !eof => return Some(Resolved::NeedMore),
        None => (buf.len(), buf.len(), false),
    };
    let mut arguments = Map::new();
    let mut repairs = Vec::new();
    let mut i = after;
    while i < body_end {
        i = skip_ws(b, i);
        if i >= body_end {
            break;
        }
        let Some(key_at) = buf[i..body_end]
            .strip_prefix(KEY_OPEN)
            .map(|_| i + KEY_OPEN.len())
        else {
            return Some(Resolved::Malformed {
                end,
                reason: "text where an <arg_key> was expected".into(),
            });
        };
        let Some(key_len) = buf[key_at..body_end].find(KEY_CLOSE) else {
            repairs.push(Repair::Truncated { in_string: false });
            break;
        };
        let key = buf[key_at..key_at + key_len].trim().to_string();
        let v = skip_ws(b, key_at + key_len + KEY_CLOSE.len());
        if !buf[v..body_end].starts_with(VALUE_OPEN) {
            if v >= body_end && !closed {
                repairs.push(Repair::Truncated { in_string: false });
                break;
            }
            return Some(Resolved::Malformed {
                end,
                reason: format!("the argument {key} has no <arg_value>"),
            });
        }
        let value_at = v + VALUE_OPEN.len();
        match buf[value_at..body_end].find(VALUE_CLOSE) {
            Some(len) => {
                arguments.insert(key, value(&buf[value_at..value_at + len]));
                i = value_at + len + VALUE_CLOSE.len();
            }
            None => {
                arguments.insert(key, Value::String(buf[value_at..body_end].to_string()));
                repairs.push(if closed {
                    Repair::Unbalanced
                } else {
                    Repair::Truncated { in_string: true }
                });
                break;
            }
        }
    }
    let extra: &[Repair] = if closed {
        &[]
    } else {
        &[Repair::MissingCloseTag]
    };
    let parts = CallParts {
        written: buf[start..name_end].to_string(),
        arguments: Value::Object(arguments),
        id: None,
        repairs,
    };
    Some(Resolved::Calls {
        end,
        calls: vec![ctx.call(parts, Family::Glm, extra)],
    })
}

fn value(raw: &str) -> Value {
    let trimmed = raw.trim();
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(v) = serde_json::from_str::<Value>(trimmed)
    {
        return v;
    }
    Value::String(raw.to_string())
}
