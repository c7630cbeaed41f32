//! FunctionGemma and Gemma 4: `call:NAME{key:<quote>value<quote>, ...}`, where the quote is
//! `<escape>` (FunctionGemma) or `<|"|>` (Gemma 4), keys are bare, and numbers and literals
//! are written as in JSON.

use super::sections::{End, parts};
use super::skip_ws;
use crate::parser::Repair;
use crate::parser::json::parse_at;
use crate::parser::shape::CallParts;
use serde_json::{Map, Value};

/// The text ended inside a Gemma value.
struct Cut {
    in_string: bool,
}

/// Reads Gemma's argument syntax: `{key:value,...}`, `[...]`, `<quote>text<quote>`, JSON
/// strings, and bare numbers and literals.
struct GemmaArgs<'a> {
    s: &'a str,
    i: usize,
    quote: &'a str,
}

impl GemmaArgs<'_> {
    fn ws(&mut self) {
        self.i = skip_ws(self.s.as_bytes(), self.i);
    }

    fn value(&mut self, depth: usize) -> Result<Value, Option<Cut>> {
        if depth > 32 {
            return Err(None);
        }
        self.ws();
        let rest = &self.s[self.i..];
        if rest.is_empty() {
            return Err(Some(Cut { in_string: false }));
        }
        if let Some(body) = rest.strip_prefix(self.quote) {
            return match body.find(self.quote) {
                Some(e) => {
                    self.i += self.quote.len() + e + self.quote.len();
                    Ok(Value::String(body[..e].to_string()))
                }
                None => Err(Some(Cut { in_string: true })),
            };
        }
        match rest.as_bytes()[0] {
            b'{' => {
                self.i += 1;
                let mut map = Map::new();
                loop {
                    self.ws();
                    let rest = &self.s[self.i..];
                    if rest.is_empty() {
                        return Err(Some(Cut { in_string: false }));
                    }
                    if rest.starts_with('}') {
                        self.i += 1;
                        return Ok(Value::Object(map));
                    }
                    let key = if rest.starts_with(self.quote) || rest.starts_with('"') {
                        match self.value(depth + 1)? {
                            Value::String(k) => k,
                            _ => return Err(None),
                        }
                    } else {
                        let e = rest.find(':').ok_or(Some(Cut { in_string: false }))?;
                        self.i += e;
                        rest[..e].trim().to_string()
                    };
                    self.ws();
                    if !self.s[self.i..].starts_with(':') {
                        return Err(None);
                    }
                    self.i += 1;
                    let value = self.value(depth + 1)?;
                    map.insert(key, value);
                    self.ws();
                    if self.s[self.i..].starts_with(',') {
                        self.i += 1;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.ws();
                    let rest = &self.s[self.i..];
                    if rest.is_empty() {
                        return Err(Some(Cut { in_string: false }));
                    }
                    if rest.starts_with(']') {
                        self.i += 1;
                        return Ok(Value::Array(items));
                    }
                    items.push(self.value(depth + 1)?);
                    self.ws();
                    if self.s[self.i..].starts_with(',') {
                        self.i += 1;
                    }
                }
            }
            b'"' => {
                let parsed = parse_at(self.s, self.i).ok_or(None)?;
                if parsed.cut_off.is_some() {
                    return Err(Some(Cut { in_string: true }));
                }
                self.i = parsed.end;
                Ok(parsed.value)
            }
            _ => {
                let e = rest.find([',', '}', ']']).unwrap_or(rest.len());
                if e == rest.len() {
                    return Err(Some(Cut { in_string: false }));
                }
                self.i += e;
                let token = rest[..e].trim();
                Ok(serde_json::from_str(token).unwrap_or_else(|_| Value::String(token.into())))
            }
        }
    }
}

/// `call:NAME{...}`.
pub(super) fn gemma_call(inner: &str, quote: &str, end: End) -> Result<CallParts, String> {
    let closed = end == End::Closed;
    let text = inner.trim_start();
    let text = text.strip_prefix("call:").unwrap_or(text);
    let brace = text.find('{');
    let name = &text[..brace.unwrap_or(text.len())];
    if name.trim().is_empty() || name.trim().contains(char::is_whitespace) {
        return Err("the call has no tool name".into());
    }
    let Some(brace) = brace else {
        return if closed {
            Ok(parts(name, Value::Object(Map::new()), None, Vec::new()))
        } else {
            Err("the call was cut off before its arguments".into())
        };
    };
    let mut reader = GemmaArgs {
        s: text,
        i: brace,
        quote,
    };
    match reader.value(0) {
        Ok(arguments @ Value::Object(_)) => Ok(parts(name, arguments, None, Vec::new())),
        Ok(_) | Err(None) => Err("the arguments cannot be read".into()),
        // Cut off: what was read is not kept, so say what was cut.
        Err(Some(cut)) if !closed => {
            let closed_text = close_gemma(&text[brace..], quote, cut.in_string);
            let mut again = GemmaArgs {
                s: &closed_text,
                i: 0,
                quote,
            };
            match again.value(0) {
                Ok(arguments @ Value::Object(_)) => Ok(parts(
                    name,
                    arguments,
                    None,
                    vec![Repair::Truncated {
                        in_string: cut.in_string,
                    }],
                )),
                _ => Err("the call was cut off".into()),
            }
        }
        Err(Some(_)) => Err("the arguments do not end before the closing token".into()),
    }
}

/// Closes Gemma arguments cut off at the end: the open quote, then the open brackets.
fn close_gemma(text: &str, quote: &str, in_string: bool) -> String {
    let mut out = text.to_string();
    if in_string {
        out.push_str(quote);
    }
    let mut stack = Vec::new();
    let mut i = 0;
    let mut in_quote = false;
    while i < out.len() {
        if out.as_bytes()[i..].starts_with(quote.as_bytes()) {
            in_quote = !in_quote;
            i += quote.len();
            continue;
        }
        let c = out.as_bytes()[i];
        if !in_quote {
            match c {
                b'{' => stack.push(b'}'),
                b'[' => stack.push(b']'),
                b'}' | b']' => {
                    stack.pop();
                }
                _ => {}
            }
        }
        i += 1;
    }
    // A key without its value: drop it.
    let trimmed = out.trim_end();
    if trimmed.ends_with(':') || trimmed.ends_with(',') {
        let cut = trimmed.rfind(['{', ',']).map_or(trimmed.len(), |k| {
            if trimmed.as_bytes()[k] == b'{' {
                k + 1
            } else {
                k
            }
        });
        out.truncate(cut);
    }
    while let Some(c) = stack.pop() {
        out.push(c as char);
    }
    out
}
