//! Families whose calls sit between their own special tokens, as the servers' parsers read
//! them (llama.cpp `common/chat*.cpp`, vLLM's tool parsers, SGLang's detectors, Ollama's
//! `model/parsers`): DeepSeek V3/R1/V3.1 and V3.2's DSML (with Ollama's ASCII bars), Kimi K2,
//! MiniMax-M2, Step3, FunctionGemma and Gemma 4, Functionary v3.2 and gpt-oss harmony. Also
//! the markers that quote a tool's result, whose content never runs.
//!
//! A section is held until its closing token (or the end of the text, where it counts as cut
//! off), then read whole.

use super::gemma::gemma_call;
use super::harmony::{functionary, harmony};
use super::{Ctx, Resolved, partial_prefix, skip_ws};
use crate::parser::json::parse_at;
use crate::parser::shape::CallParts;
use crate::parser::{Family, Repair};
use serde_json::{Map, Value};

/// How the inside of a section is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Reader {
    /// `<｜tool▁call▁begin｜>` items (V3/R1: `function<｜tool▁sep｜>NAME` + fenced JSON;
    /// V3.1: `NAME<｜tool▁sep｜>{json}`).
    DeepSeekCalls,
    /// One DeepSeek item without the outer `<｜tool▁calls▁begin｜>`.
    DeepSeekCall,
    /// `<{prefix}invoke name="...">` with `<{prefix}parameter name="...">` children
    /// (MiniMax-M2, Step3, DSML). Anything else between invokes is layout.
    Invoke(&'static str),
    /// Kimi K2: `<|tool_call_begin|>functions.NAME:N<|tool_call_argument_begin|>{json}`.
    KimiCalls,
    /// One Kimi item without the section.
    KimiCall,
    /// `call:NAME{key:<quote>value<quote>, ...}` with the given quote token.
    Gemma(&'static str),
    /// Functionary v3.2: `>>>NAME\n{json}`; `>>>all\n` starts text.
    Functionary,
    /// gpt-oss harmony: a header up to `<|message|>`, then the message.
    Harmony,
    /// A harmony token that ends a message: dropped.
    Drop,
    /// A tool's result quoted by the model: text, never calls.
    Quoted,
}

/// A family's opening token, what closes it and how to read it.
pub(crate) struct Section {
    pub open: &'static str,
    pub closes: &'static [&'static str],
    pub family: Family,
    pub reader: Reader,
}

/// How the text of a call ended: at its family's closing token, or with the text itself
/// (where an unfinished value was cut off by the token limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum End {
    Closed,
    Cut,
}

impl End {
    fn of(closed: bool) -> End {
        if closed { End::Closed } else { End::Cut }
    }
}

const DS_CALLS_BEGIN: &str = "<｜tool▁calls▁begin｜>";
const DS_CALLS_END: &str = "<｜tool▁calls▁end｜>";
const DS_CALL_BEGIN: &str = "<｜tool▁call▁begin｜>";
const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
const DS_SEP: &str = "<｜tool▁sep｜>";
const KIMI_CALL_BEGIN: &str = "<|tool_call_begin|>";
const KIMI_CALL_END: &str = "<|tool_call_end|>";
const KIMI_ARGS: &str = "<|tool_call_argument_begin|>";

/// Every section family, tried in order (a longer token before its prefixes).
pub(crate) const SECTIONS: &[Section] = &[
    Section {
        open: DS_CALLS_BEGIN,
        closes: &[DS_CALLS_END],
        family: Family::DeepSeek,
        reader: Reader::DeepSeekCalls,
    },
    Section {
        open: DS_CALL_BEGIN,
        closes: &[DS_CALL_END],
        family: Family::DeepSeek,
        reader: Reader::DeepSeekCall,
    },
    Section {
        open: "<｜DSML｜function_calls>",
        closes: &["</｜DSML｜function_calls>"],
        family: Family::Invoke,
        reader: Reader::Invoke("｜DSML｜"),
    },
    Section {
        open: "<｜DSML｜tool_calls>",
        closes: &["</｜DSML｜tool_calls>"],
        family: Family::Invoke,
        reader: Reader::Invoke("｜DSML｜"),
    },
    Section {
        open: "<|DSML|function_calls>",
        closes: &["</|DSML|function_calls>"],
        family: Family::Invoke,
        reader: Reader::Invoke("|DSML|"),
    },
    Section {
        open: "<|DSML|tool_calls>",
        closes: &["</|DSML|tool_calls>"],
        family: Family::Invoke,
        reader: Reader::Invoke("|DSML|"),
    },
    Section {
        open: "<minimax:tool_call>",
        closes: &["</minimax:tool_call>"],
        family: Family::Invoke,
        reader: Reader::Invoke(""),
    },
    Section {
        open: "<｜tool_calls_begin｜>",
        closes: &["<｜tool_calls_end｜>"],
        family: Family::Invoke,
        reader: Reader::Invoke("steptml:"),
    },
    Section {
        open: "<|tool_calls_section_begin|>",
        closes: &["<|tool_calls_section_end|>"],
        family: Family::Kimi,
        reader: Reader::KimiCalls,
    },
    Section {
        open: "<|tool_call_section_begin|>",
        closes: &["<|tool_call_section_end|>"],
        family: Family::Kimi,
        reader: Reader::KimiCalls,
    },
    Section {
        open: KIMI_CALL_BEGIN,
        closes: &[KIMI_CALL_END],
        family: Family::Kimi,
        reader: Reader::KimiCall,
    },
    Section {
        open: "<start_function_call>",
        closes: &["<end_function_call>"],
        family: Family::Gemma,
        reader: Reader::Gemma("<escape>"),
    },
    Section {
        open: "<|tool_call>",
        closes: &["<tool_call|>"],
        family: Family::Gemma,
        reader: Reader::Gemma("<|\"|>"),
    },
    Section {
        open: ">>>",
        closes: &[],
        family: Family::Functionary,
        reader: Reader::Functionary,
    },
    Section {
        open: "<|start|>",
        closes: &[],
        family: Family::Harmony,
        reader: Reader::Harmony,
    },
    Section {
        open: "<|channel|>",
        closes: &[],
        family: Family::Harmony,
        reader: Reader::Harmony,
    },
    Section {
        open: "<|call|>",
        closes: &[],
        family: Family::Harmony,
        reader: Reader::Drop,
    },
    Section {
        open: "<|end|>",
        closes: &[],
        family: Family::Harmony,
        reader: Reader::Drop,
    },
    Section {
        open: "<|return|>",
        closes: &[],
        family: Family::Harmony,
        reader: Reader::Drop,
    },
    // Quoted results: DeepSeek, Hermes/Qwen, the text protocol's own, Granite/Phi, Gemma 4.
    Section {
        open: "<｜tool▁outputs▁begin｜>",
        closes: &["<｜tool▁outputs▁end｜>"],
        family: Family::DeepSeek,
        reader: Reader::Quoted,
    },
    Section {
        open: "<｜tool▁output▁begin｜>",
        closes: &["<｜tool▁output▁end｜>"],
        family: Family::DeepSeek,
        reader: Reader::Quoted,
    },
    Section {
        open: "<tool_response>",
        closes: &["</tool_response>"],
        family: Family::ToolCallTag,
        reader: Reader::Quoted,
    },
    Section {
        open: "<tool_result",
        closes: &["</tool_result>"],
        family: Family::ToolCallTag,
        reader: Reader::Quoted,
    },
    Section {
        open: "<|tool_result|>",
        closes: &["<|/tool_result|>", "<|tool_result_end|>"],
        family: Family::ToolCallTag,
        reader: Reader::Quoted,
    },
    Section {
        open: "<|tool_response>",
        closes: &["<tool_response|>"],
        family: Family::Gemma,
        reader: Reader::Quoted,
    },
];

/// What the text at `i` is to the sections: one of them (by index), possibly one still
/// arriving, or none.
pub(crate) enum SectionStart {
    Yes(usize),
    Partial,
    No,
}

/// Whether a section starts at `i`.
pub(crate) fn section_at(buf: &str, i: usize) -> SectionStart {
    let rest = &buf[i..];
    let mut partial = false;
    for (index, s) in SECTIONS.iter().enumerate() {
        if rest.starts_with(s.open) {
            return SectionStart::Yes(index);
        }
        partial |= partial_prefix(buf, i, s.open);
    }
    if partial {
        SectionStart::Partial
    } else {
        SectionStart::No
    }
}

/// Reads the section `SECTIONS[index]` at `pos`.
pub(crate) fn resolve_section(
    buf: &str,
    pos: usize,
    index: usize,
    ctx: &Ctx<'_>,
    eof: bool,
) -> Resolved {
    let section = &SECTIONS[index];
    let body = pos + section.open.len();
    match section.reader {
        Reader::Functionary => return functionary(buf, body, ctx, eof),
        Reader::Harmony => return harmony(buf, pos, ctx, eof),
        Reader::Drop => {
            return Resolved::Calls {
                end: body,
                calls: Vec::new(),
            };
        }
        _ => {}
    }
    let close = section
        .closes
        .iter()
        .filter_map(|c| buf[body..].find(c).map(|k| (body + k, c.len())))
        .min();
    let (body_end, end) = match close {
        Some((k, len)) => (k, k + len),
        None if !eof => return Resolved::NeedMore,
        // An unclosed quote at the end: only its opening is text, what follows is read.
        None if matches!(section.reader, Reader::Quoted) => return Resolved::Reject,
        None => (buf.len(), buf.len()),
    };
    let closed = close.is_some();
    let ending = End::of(closed);
    let inner = &buf[body..body_end];
    let read = match section.reader {
        Reader::Quoted => return Resolved::Text { end },
        Reader::DeepSeekCalls => items(inner, DS_CALL_BEGIN, DS_CALL_END, ending, deepseek_call),
        Reader::DeepSeekCall => deepseek_call(inner, ending).map(|c| vec![c]),
        Reader::KimiCalls => items(inner, KIMI_CALL_BEGIN, KIMI_CALL_END, ending, kimi_call),
        Reader::KimiCall => kimi_call(inner, ending).map(|c| vec![c]),
        Reader::Invoke(prefix) => invokes(inner, prefix, ending),
        Reader::Gemma(quote) => gemma_call(inner, quote, ending).map(|c| vec![c]),
        Reader::Functionary | Reader::Harmony | Reader::Drop => unreachable!("read above"),
    };
    match read {
        Ok(calls) if !calls.is_empty() => {
            let extra: &[Repair] = if closed {
                &[]
            } else {
                &[Repair::MissingCloseTag]
            };
            Resolved::Calls {
                end,
                calls: calls
                    .into_iter()
                    .map(|p| ctx.call(p, section.family, extra))
                    .collect(),
            }
        }
        Ok(_) => Resolved::Malformed {
            end,
            reason: format!("nothing but layout after {}", section.open),
        },
        Err(reason) => Resolved::Malformed { end, reason },
    }
}

type ItemReader = fn(&str, End) -> Result<CallParts, String>;

/// Items that each start with `begin` and end with `end` (the last one may be cut off when
/// the section was).
fn items(
    inner: &str,
    begin: &str,
    end: &str,
    section: End,
    read: ItemReader,
) -> Result<Vec<CallParts>, String> {
    let mut calls = Vec::new();
    let pieces: Vec<&str> = inner.split(begin).collect();
    if !pieces[0].trim().is_empty() {
        return Err(format!("text before the first {begin}"));
    }
    for piece in &pieces[1..] {
        let (item, ending) = match piece.find(end) {
            Some(k) => (&piece[..k], End::Closed),
            None => (*piece, section),
        };
        calls.push(read(item, ending)?);
    }
    Ok(calls)
}

/// JSON arguments at `i` of `text`: an object, with a cut off end marked.
pub(super) fn json_arguments(
    text: &str,
    i: usize,
    end: End,
) -> Result<(Value, Vec<Repair>), String> {
    let whole = end == End::Closed;
    let i = skip_ws(text.as_bytes(), i);
    if i >= text.len() {
        return if whole {
            Ok((Value::Object(Map::new()), Vec::new()))
        } else {
            Err("the call was cut off before its arguments".into())
        };
    }
    let parsed = parse_at(text, i).ok_or("the arguments are not valid JSON")?;
    let mut repairs = parsed.repairs;
    if let Some(cut) = parsed.cut_off {
        // Ended by its closing token, the JSON is unbalanced; ended by the text, cut off.
        repairs.push(if whole && !cut.in_string {
            Repair::Unbalanced
        } else {
            Repair::Truncated {
                in_string: cut.in_string,
            }
        });
    }
    match parsed.value {
        Value::Object(_) => Ok((parsed.value, repairs)),
        Value::Null => Ok((Value::Object(Map::new()), repairs)),
        _ => Err("the arguments are not a JSON object".into()),
    }
}

pub(super) fn parts(
    written: &str,
    arguments: Value,
    id: Option<String>,
    repairs: Vec<Repair>,
) -> CallParts {
    CallParts {
        written: written.trim().to_string(),
        arguments,
        id,
        repairs,
    }
}

/// `function<｜tool▁sep｜>NAME\n```json\n{...}\n```` or `NAME<｜tool▁sep｜>{...}`.
fn deepseek_call(item: &str, end: End) -> Result<CallParts, String> {
    let sep = item
        .find(DS_SEP)
        .ok_or_else(|| format!("the call has no {DS_SEP}"))?;
    let left = item[..sep].trim();
    let right = &item[sep + DS_SEP.len()..];
    let (name, args_at) = if left == "function" || left.is_empty() {
        let name_end = right
            .find(|c: char| c == '\n' || c == '`' || c == '{' || c.is_whitespace())
            .unwrap_or(right.len());
        let mut k = skip_ws(right.as_bytes(), name_end);
        if right[k..].starts_with("```") {
            k = right[k..].find('\n').map_or(right.len(), |n| k + n + 1);
        }
        (&right[..name_end], sep + DS_SEP.len() + k)
    } else {
        (left, sep + DS_SEP.len())
    };
    if name.trim().is_empty() {
        return Err("the call has no tool name".into());
    }
    let (arguments, repairs) = json_arguments(item, args_at, end)?;
    Ok(parts(name, arguments, None, repairs))
}

/// `functions.NAME:N<|tool_call_argument_begin|>{...}`; the id is `functions.NAME:N`.
fn kimi_call(item: &str, end: End) -> Result<CallParts, String> {
    let args = item
        .find(KIMI_ARGS)
        .ok_or_else(|| format!("the call has no {KIMI_ARGS}"))?;
    let id = item[..args].trim();
    let name = id.strip_prefix("functions.").unwrap_or(id);
    let name = match name.rsplit_once(':') {
        Some((n, index)) if index.chars().all(|c| c.is_ascii_digit()) => n,
        _ => name,
    };
    if name.is_empty() {
        return Err("the call has no tool name".into());
    }
    let (arguments, repairs) = json_arguments(item, args + KIMI_ARGS.len(), end)?;
    Ok(parts(name, arguments, Some(id.to_string()), repairs))
}

/// The value of attribute `key` in a tag's attribute text (`name="x" string="true"`).
fn attribute<'a>(attrs: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(k) = attrs[from..].find(key) {
        let at = from + k;
        from = at + key.len();
        let before_ok = at == 0 || attrs.as_bytes()[at - 1].is_ascii_whitespace();
        let rest = attrs[at + key.len()..].trim_start();
        let Some(rest) = rest.strip_prefix('=').filter(|_| before_ok) else {
            continue;
        };
        let rest = rest.trim_start();
        return match rest.chars().next()? {
            q @ ('"' | '\'') => rest[1..].find(q).map(|e| &rest[1..1 + e]),
            _ => Some(rest.split(|c: char| c.is_whitespace() || c == '/').next()?),
        };
    }
    None
}

/// A parameter's text: `string="true"` keeps it, `string="false"` reads it as JSON; without
/// the attribute, objects and arrays are JSON and anything else stays a string for the
/// registry to coerce by its schema.
fn invoke_value(raw: &str, string: Option<&str>) -> Value {
    let trimmed = raw.trim();
    let json = match string {
        Some("true") => false,
        Some("false") => true,
        _ => trimmed.starts_with('{') || trimmed.starts_with('['),
    };
    if json && let Ok(v) = serde_json::from_str::<Value>(trimmed) {
        return v;
    }
    let text = raw.strip_prefix('\n').unwrap_or(raw);
    Value::String(text.strip_suffix('\n').unwrap_or(text).to_string())
}

/// `<{p}invoke name="NAME"><{p}parameter name="K">V</{p}parameter>...</{p}invoke>`, repeated.
fn invokes(inner: &str, prefix: &str, end: End) -> Result<Vec<CallParts>, String> {
    let closed = end == End::Closed;
    let open = format!("<{prefix}invoke");
    let close = format!("</{prefix}invoke>");
    let param_open = format!("<{prefix}parameter");
    let param_close = format!("</{prefix}parameter>");
    let mut calls = Vec::new();
    let mut i = 0;
    while let Some(k) = inner[i..].find(&open) {
        let start = i + k + open.len();
        let Some(gt) = inner[start..].find('>') else {
            if closed {
                return Err("an invoke tag does not end".into());
            }
            break;
        };
        let name = attribute(&inner[start..start + gt], "name")
            .ok_or("an invoke has no name")?
            .to_string();
        let mut j = start + gt + 1;
        let mut arguments = Map::new();
        let mut repairs = Vec::new();
        loop {
            j = skip_ws(inner.as_bytes(), j);
            let rest = &inner[j..];
            if rest.starts_with(&close) {
                j += close.len();
                break;
            }
            if rest.starts_with(&param_open) {
                let attrs_at = j + param_open.len();
                let Some(gt) = inner[attrs_at..].find('>') else {
                    repairs.push(Repair::Truncated { in_string: false });
                    j = inner.len();
                    break;
                };
                let attrs = &inner[attrs_at..attrs_at + gt];
                let key = attribute(attrs, "name").ok_or("a parameter has no name")?;
                let value_at = attrs_at + gt + 1;
                match inner[value_at..].find(&param_close) {
                    Some(e) => {
                        let raw = &inner[value_at..value_at + e];
                        arguments.insert(
                            key.to_string(),
                            invoke_value(raw, attribute(attrs, "string")),
                        );
                        j = value_at + e + param_close.len();
                    }
                    None => {
                        let raw = &inner[value_at..];
                        arguments.insert(key.to_string(), Value::String(raw.to_string()));
                        repairs.push(Repair::Truncated { in_string: true });
                        j = inner.len();
                        break;
                    }
                }
                continue;
            }
            if j >= inner.len() && !closed {
                repairs.push(Repair::Truncated { in_string: false });
            } else {
                repairs.push(Repair::MissingCloseTag);
            }
            break;
        }
        calls.push(parts(&name, Value::Object(arguments), None, repairs));
        i = j;
    }
    Ok(calls)
}
