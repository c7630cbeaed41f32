//! `<function=NAME>` blocks: a JSON object, or `<parameter=K>V</parameter>` pairs.

use super::{Ctx, FUNCTION_OPEN, Resolved, partial_prefix, skip_ws};
use crate::parser::json::parse_at;
use crate::parser::shape::CallParts;
use crate::parser::{Family, Repair};
use serde_json::{Map, Value};

const FUNCTION_CLOSE: &str = "</function>";
const PARAMETER_OPEN: &str = "<parameter=";
const PARAMETER_CLOSE: &str = "</parameter>";

/// What is still open at the end of a `<function=...>` block.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Pending {
    Nothing,
    /// Everything read; only `</function>` missing.
    CloseTag,
    /// The text ended inside an argument value.
    Value {
        in_string: bool,
    },
}

pub(super) enum Block {
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
pub(super) fn function_block_at(buf: &str, i: usize) -> Block {
    let b = buf.as_bytes();
    let name_start = i + FUNCTION_OPEN.len();
    let Some((name, gt)) = tag_value(buf, name_start) else {
        return if tag_value_may_follow(buf, name_start) {
            Block::Incomplete
        } else {
            Block::Invalid
        };
    };
    let parts = CallParts {
        written: name,
        arguments: Value::Object(Map::new()),
        id: None,
        repairs: Vec::new(),
    };
    let body = skip_ws(b, gt + 1);
    if b.get(body) == Some(&b'{') {
        json_body(buf, body, parts)
    } else {
        parameter_body(buf, body, parts)
    }
}

/// The JSON object of arguments at `body` and the `</function>` after it.
fn json_body(buf: &str, body: usize, mut parts: CallParts) -> Block {
    let b = buf.as_bytes();
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
    if buf[after..].starts_with(FUNCTION_CLOSE) {
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
    }
}

/// `<parameter=K>V</parameter>` pairs from `body` on, to `</function>`.
fn parameter_body(buf: &str, body: usize, mut parts: CallParts) -> Block {
    let b = buf.as_bytes();
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
