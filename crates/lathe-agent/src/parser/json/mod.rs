//! A lenient JSON reader for what small models write: trailing commas, single quotes, curly
//! quotes, Python literals, unquoted keys, unescaped quotes inside strings, raw newlines, and
//! text cut off at the end (closed automatically and reported).
//!
//! It never panics and always advances: every loop consumes input or returns, and nesting is
//! bounded by [`MAX_DEPTH`].

mod strings;

use strings::Role;

use super::Repair;
use serde_json::{Map, Number, Value};

/// Deeper nesting is refused: no tool call nests this deep, and recursion must stay bounded.
pub(crate) const MAX_DEPTH: usize = 64;

/// A value read from the text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lenient {
    pub value: Value,
    /// Byte offset just past the value.
    pub end: usize,
    /// The text ended before the value did.
    pub cut_off: Option<CutOff>,
    pub repairs: Vec<Repair>,
}

/// Where the text ended inside a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CutOff {
    /// Inside a string (the last string value is partial).
    pub in_string: bool,
}

/// Reads one value starting at `start` (after optional whitespace). `None` when the text
/// there is not a value or breaks the syntax beyond repair.
pub(crate) fn parse_at(src: &str, start: usize) -> Option<Lenient> {
    if !src.is_char_boundary(start) {
        return None;
    }
    let mut reader = Reader {
        src,
        b: src.as_bytes(),
        i: start,
        repairs: Vec::new(),
        depth: 0,
    };
    reader.ws();
    match reader.value() {
        Ok(Step::Done(value)) => Some(Lenient {
            value,
            end: reader.i,
            cut_off: None,
            repairs: reader.repairs,
        }),
        Ok(Step::Eof(Some(value), in_string)) => Some(Lenient {
            value,
            end: reader.i,
            cut_off: Some(CutOff { in_string }),
            repairs: reader.repairs,
        }),
        Ok(Step::Eof(None, _)) | Err(()) => None,
    }
}

/// Whether everything from `i` is one token that may still grow into a value (`Tr`, `12`,
/// `Non`): a reader that streams must wait instead of calling it invalid.
pub(crate) fn partial_token(src: &str, i: usize) -> bool {
    src.as_bytes()[i.min(src.len())..]
        .iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b'+'))
}

/// Reads `text` whole as one value (surrounding whitespace allowed).
pub(crate) fn parse_whole(text: &str) -> Option<Lenient> {
    let parsed = parse_at(text, 0)?;
    text[parsed.end..].trim().is_empty().then_some(parsed)
}

enum Step {
    Done(Value),
    /// The text ended: the partial value (if any part of it is usable) and whether the end was
    /// inside a string.
    Eof(Option<Value>, bool),
}

struct Reader<'a> {
    src: &'a str,
    b: &'a [u8],
    i: usize,
    repairs: Vec<Repair>,
    depth: usize,
}

impl Reader<'_> {
    fn repair(&mut self, repair: Repair) {
        if !self.repairs.contains(&repair) {
            self.repairs.push(repair);
        }
    }

    fn eof(&self) -> bool {
        self.i >= self.b.len()
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn rest(&self) -> &str {
        self.src.get(self.i..).unwrap_or("")
    }

    fn ws(&mut self) {
        while let Some(c) = self.peek() {
            if c == b' ' || c == b'\t' || c == b'\n' || c == b'\r' {
                self.i += 1;
            } else if self.rest().starts_with('\u{a0}') {
                self.i += '\u{a0}'.len_utf8();
            } else {
                break;
            }
        }
    }

    fn value(&mut self) -> Result<Step, ()> {
        if self.eof() {
            return Ok(Step::Eof(None, false));
        }
        if self.depth >= MAX_DEPTH {
            return Err(());
        }
        if let Some(quote) = self.quote_at() {
            return self.string(quote, Role::Value).map(|s| match s {
                (text, false) => Step::Done(Value::String(text)),
                (text, true) => Step::Eof(Some(Value::String(text)), true),
            });
        }
        match self.peek() {
            Some(b'{') => {
                self.depth += 1;
                let r = self.object();
                self.depth -= 1;
                r
            }
            Some(b'[') => {
                self.depth += 1;
                let r = self.array();
                self.depth -= 1;
                r
            }
            Some(b'-' | b'+' | b'.' | b'0'..=b'9') => self.number(),
            Some(c) if c.is_ascii_alphabetic() => self.literal(),
            _ => Err(()),
        }
    }

    fn object(&mut self) -> Result<Step, ()> {
        self.i += 1;
        let mut map = Map::new();
        loop {
            self.ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Object(map)), false)),
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Step::Done(Value::Object(map)));
                }
                _ => {}
            }
            let key = match self.key()? {
                Some((key, false)) => key,
                Some((_, true)) => return Ok(Step::Eof(Some(Value::Object(map)), true)),
                None => return Ok(Step::Eof(Some(Value::Object(map)), false)),
            };
            self.ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Object(map)), false)),
                Some(b':') => self.i += 1,
                Some(b'=') => {
                    self.repair(Repair::UnquotedKeys);
                    self.i += 1;
                }
                _ => return Err(()),
            }
            self.ws();
            match self.value()? {
                Step::Done(v) => {
                    map.insert(key, v);
                }
                Step::Eof(v, in_string) => {
                    if let Some(v) = v {
                        map.insert(key, v);
                    }
                    return Ok(Step::Eof(Some(Value::Object(map)), in_string));
                }
            }
            self.ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Object(map)), false)),
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b'}') {
                        self.repair(Repair::TrailingComma);
                    }
                }
                Some(b'}') => {}
                // A missing comma between members: `{"a": 1 "b": 2}`.
                _ if self.quote_at().is_some() => self.repair(Repair::MissingComma),
                _ => return Err(()),
            }
        }
    }

    /// A key: a string in any quoting, or a bare identifier. `Ok(None)` at the end of the text.
    fn key(&mut self) -> Result<Option<(String, bool)>, ()> {
        if let Some(quote) = self.quote_at() {
            return self.string(quote, Role::Key).map(Some);
        }
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'-' {
                self.i += 1;
            } else {
                break;
            }
        }
        if self.i == start {
            return Err(());
        }
        if self.eof() {
            return Ok(None);
        }
        self.repair(Repair::UnquotedKeys);
        Ok(Some((self.src[start..self.i].to_string(), false)))
    }

    fn array(&mut self) -> Result<Step, ()> {
        self.i += 1;
        let mut items = Vec::new();
        loop {
            self.ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Array(items)), false)),
                Some(b']') => {
                    self.i += 1;
                    return Ok(Step::Done(Value::Array(items)));
                }
                _ => {}
            }
            match self.value()? {
                Step::Done(v) => items.push(v),
                Step::Eof(v, in_string) => {
                    items.extend(v);
                    return Ok(Step::Eof(Some(Value::Array(items)), in_string));
                }
            }
            self.ws();
            match self.peek() {
                None => return Ok(Step::Eof(Some(Value::Array(items)), false)),
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                    if self.peek() == Some(b']') {
                        self.repair(Repair::TrailingComma);
                    }
                }
                Some(b']') => {}
                _ => return Err(()),
            }
        }
    }

    fn number(&mut self) -> Result<Step, ()> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_digit() || matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'_') {
                self.i += 1;
            } else {
                break;
            }
        }
        let text: String = self.src[start..self.i]
            .chars()
            .filter(|&c| c != '_')
            .collect();
        let text = text.strip_prefix('+').unwrap_or(&text);
        let value = if let Ok(n) = text.parse::<i64>() {
            Some(Value::Number(n.into()))
        } else if let Ok(n) = text.parse::<u64>() {
            Some(Value::Number(n.into()))
        } else {
            text.parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map(Value::Number)
        };
        if self.eof() {
            return Ok(Step::Eof(value, false));
        }
        value.map(Step::Done).ok_or(())
    }

    fn literal(&mut self) -> Result<Step, ()> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' {
                self.i += 1;
            } else {
                break;
            }
        }
        let word = &self.src[start..self.i];
        let value = match word {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            "null" => Value::Null,
            "True" | "False" | "None" => {
                self.repair(Repair::PythonLiterals);
                match word {
                    "True" => Value::Bool(true),
                    "False" => Value::Bool(false),
                    _ => Value::Null,
                }
            }
            _ => {
                let partial = ["true", "false", "null", "True", "False", "None"]
                    .iter()
                    .any(|w| w.starts_with(word));
                return if self.eof() && partial {
                    Ok(Step::Eof(None, false))
                } else {
                    Err(())
                };
            }
        };
        Ok(Step::Done(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn whole(text: &str) -> Value {
        parse_whole(text)
            .unwrap_or_else(|| panic!("no value in {text:?}"))
            .value
    }

    #[test]
    fn strict_json_reads_as_serde_does() {
        for text in [
            r#"{"a": [1, 2.5, -3e2, true, false, null], "b": {"c": "d\n\"\u00e9\ud83d\ude00"}}"#,
            "[]",
            "{}",
            r#""x""#,
            "12345678901234567890",
        ] {
            let want: Value = serde_json::from_str(text).unwrap();
            let got = parse_whole(text).unwrap();
            assert_eq!(got.value, want, "{text}");
            assert!(got.repairs.is_empty(), "{text}: {:?}", got.repairs);
            // A number at the very end may still be growing; everything else is complete.
            assert_eq!(got.cut_off.is_some(), want.is_number(), "{text}");
        }
    }

    #[test]
    fn repairs_small_model_json() {
        let cases = [
            (
                r#"{"a": 1, "b": [1, 2,],}"#,
                json!({"a": 1, "b": [1, 2]}),
                Repair::TrailingComma,
            ),
            (
                r#"{'path': 'it\'s "here"'}"#,
                json!({"path": "it's \"here\""}),
                Repair::SingleQuotes,
            ),
            (
                r#"{"a": True, "b": None, "c": False}"#,
                json!({"a": true, "b": null, "c": false}),
                Repair::PythonLiterals,
            ),
            (
                "{“name”: “read_file”}",
                json!({"name": "read_file"}),
                Repair::CurlyQuotes,
            ),
            (
                r#"{path: "a", depth: 2}"#,
                json!({"path": "a", "depth": 2}),
                Repair::UnquotedKeys,
            ),
            (
                r#"{"a": "x\d"}"#,
                json!({"a": "x\\d"}),
                Repair::InvalidEscape,
            ),
            (
                r#"{"a": 1 "b": 2}"#,
                json!({"a": 1, "b": 2}),
                Repair::MissingComma,
            ),
            (
                r#"{"say": "he said "hi" to me"}"#,
                json!({"say": "he said \"hi\" to me"}),
                Repair::UnescapedQuote,
            ),
        ];
        for (text, want, repair) in cases {
            let got = parse_whole(text).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(got.value, want, "{text}");
            assert!(got.repairs.contains(&repair), "{text}: {:?}", got.repairs);
        }
    }

    #[test]
    fn raw_newlines_in_strings_are_kept() {
        assert_eq!(whole("{\"content\": \"a\nb\"}"), json!({"content": "a\nb"}));
    }

    #[test]
    fn triple_quoted_strings() {
        assert_eq!(whole("\"\"\"a \"b\"\nc\"\"\""), json!("a \"b\"\nc"));
    }

    #[test]
    fn cut_off_text_is_closed_and_reported() {
        let got = parse_at(
            r#"{"name": "write_file", "arguments": {"path": "a", "content": "fn ma"#,
            0,
        )
        .unwrap();
        assert_eq!(
            got.value,
            json!({"name": "write_file", "arguments": {"path": "a", "content": "fn ma"}})
        );
        assert_eq!(got.cut_off, Some(CutOff { in_string: true }));

        let got = parse_at(r#"{"a": [1, 2"#, 0).unwrap();
        assert_eq!(got.value, json!({"a": [1, 2]}));
        assert_eq!(got.cut_off, Some(CutOff { in_string: false }));

        // A partial key or literal is dropped.
        assert_eq!(
            parse_at(r#"{"a": 1, "b"#, 0).unwrap().value,
            json!({"a": 1})
        );
        assert_eq!(
            parse_at(r#"{"a": 1, "b": tr"#, 0).unwrap().value,
            json!({"a": 1})
        );
        assert_eq!(
            parse_at(r#"{"a": "x\"#, 0).unwrap().value,
            json!({"a": "x"})
        );
        assert_eq!(
            parse_at(r#"{"a": "\u00"#, 0).unwrap().value,
            json!({"a": ""})
        );
    }

    #[test]
    fn not_json_is_none() {
        for text in [
            "hello",
            "{foo bar}",
            "{\"a\" 1}",
            "[1 2]",
            "{\"a\": nope}",
            ")",
        ] {
            assert!(parse_whole(text).is_none(), "{text}");
        }
    }

    #[test]
    fn end_is_just_past_the_value() {
        let text = r#"{"a": 1}{"b": 2} tail"#;
        let first = parse_at(text, 0).unwrap();
        assert_eq!(first.end, 8);
        let second = parse_at(text, first.end).unwrap();
        assert_eq!(second.value, json!({"b": 2}));
        assert_eq!(&text[second.end..], " tail");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let deep = "[".repeat(100_000);
        assert!(parse_at(&deep, 0).is_none());
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH - 1), "]".repeat(MAX_DEPTH - 1));
        assert!(parse_whole(&ok).is_some());
    }
}
