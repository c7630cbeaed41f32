//! Strings in every quoting small models use: double, single, curly, triple; escapes kept
//! when JSON does not know them; an unescaped quote inside a value tolerated.

use super::Reader;
use crate::parser::Repair;

const LEFT_DOUBLE: &str = "\u{201c}";
const RIGHT_DOUBLE: &str = "\u{201d}";
const LEFT_SINGLE: &str = "\u{2018}";
const RIGHT_SINGLE: &str = "\u{2019}";

/// Whether a string is a key or a value: only values may hold an unescaped quote.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Role {
    Key,
    Value,
}

/// How a string is delimited.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Quote {
    Double,
    Single,
    CurlyDouble,
    CurlySingle,
    TripleDouble,
    TripleSingle,
}

impl Quote {
    fn close(self) -> &'static str {
        match self {
            Quote::Double => "\"",
            Quote::Single => "'",
            Quote::CurlyDouble => RIGHT_DOUBLE,
            Quote::CurlySingle => RIGHT_SINGLE,
            Quote::TripleDouble => "\"\"\"",
            Quote::TripleSingle => "'''",
        }
    }
}

impl Reader<'_> {
    pub(super) fn quote_at(&self) -> Option<Quote> {
        let rest = self.rest();
        if rest.starts_with("\"\"\"") {
            Some(Quote::TripleDouble)
        } else if rest.starts_with("'''") {
            Some(Quote::TripleSingle)
        } else if rest.starts_with('"') {
            Some(Quote::Double)
        } else if rest.starts_with('\'') {
            Some(Quote::Single)
        } else if rest.starts_with(LEFT_DOUBLE) || rest.starts_with(RIGHT_DOUBLE) {
            Some(Quote::CurlyDouble)
        } else if rest.starts_with(LEFT_SINGLE) {
            Some(Quote::CurlySingle)
        } else {
            None
        }
    }

    /// A string; returns the text and whether the input ended inside it.
    pub(super) fn string(&mut self, quote: Quote, role: Role) -> Result<(String, bool), ()> {
        let open_len = match quote {
            Quote::Double | Quote::Single => 1,
            Quote::TripleDouble | Quote::TripleSingle => 3,
            Quote::CurlyDouble => {
                self.repair(Repair::CurlyQuotes);
                if self.rest().starts_with(LEFT_DOUBLE) {
                    LEFT_DOUBLE.len()
                } else {
                    RIGHT_DOUBLE.len()
                }
            }
            Quote::CurlySingle => {
                self.repair(Repair::CurlyQuotes);
                LEFT_SINGLE.len()
            }
        };
        if matches!(quote, Quote::Single | Quote::TripleSingle) {
            self.repair(Repair::SingleQuotes);
        }
        self.i += open_len;
        let close = quote.close();
        let mut out = String::new();
        loop {
            // Copy the run up to the next byte that matters.
            let run_start = self.i;
            while let Some(c) = self.peek() {
                if c == b'\\' || c == close.as_bytes()[0] {
                    break;
                }
                self.i += 1;
            }
            out.push_str(&self.src[run_start..self.i]);
            match self.peek() {
                None => return Ok((out, true)),
                Some(b'\\') => {
                    if !self.escape(quote, &mut out) {
                        return Ok((out, true));
                    }
                }
                Some(_) => {
                    if !self.rest().starts_with(close) {
                        // Same first byte, different character (another curly quote).
                        let ch = self.rest().chars().next().ok_or(())?;
                        out.push(ch);
                        self.i += ch.len_utf8();
                        continue;
                    }
                    let after = self.i + close.len();
                    if quote == Quote::Double && role == Role::Value && !self.closes_here(after) {
                        // `"say "hi" now"`: a quote followed by more words is part of the text.
                        self.repair(Repair::UnescapedQuote);
                        out.push('"');
                        self.i = after;
                        continue;
                    }
                    self.i = after;
                    return Ok((out, false));
                }
            }
        }
    }

    /// Whether a double quote at `after - 1` can end a string: what follows (after spaces) is
    /// the end of the text or a structural character.
    fn closes_here(&self, after: usize) -> bool {
        let rest = &self.b[after.min(self.b.len())..];
        match rest
            .iter()
            .find(|c| !matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            None => true,
            Some(c) => matches!(
                c,
                b',' | b'}' | b']' | b':' | b')' | b'<' | b'=' | b'"' | b';'
            ),
        }
    }

    /// An escape inside a string; `false` when the input ends inside it.
    fn escape(&mut self, quote: Quote, out: &mut String) -> bool {
        let Some(&c) = self.b.get(self.i + 1) else {
            self.i = self.b.len();
            return false;
        };
        let simple = match c {
            b'n' => Some('\n'),
            b't' => Some('\t'),
            b'r' => Some('\r'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'/' => Some('/'),
            b'\\' => Some('\\'),
            b'"' => Some('"'),
            b'\'' => Some('\''),
            b'0' if matches!(
                quote,
                Quote::Single | Quote::TripleSingle | Quote::TripleDouble
            ) =>
            {
                Some('\0')
            }
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            self.i += 2;
            return true;
        }
        if c == b'u' {
            let Some(hex) = self.src.get(self.i + 2..self.i + 6) else {
                if self.b.len() < self.i + 6
                    && self.b[self.i + 2..].iter().all(u8::is_ascii_hexdigit)
                {
                    self.i = self.b.len();
                    return false;
                }
                self.keep_escape(out);
                return true;
            };
            let Ok(unit) = u16::from_str_radix(hex, 16) else {
                self.keep_escape(out);
                return true;
            };
            self.i += 6;
            if (0xD800..0xDC00).contains(&unit) {
                // A surrogate pair: the low half must follow as another \u escape.
                if let Some(low) = self.src.get(self.i..self.i + 6)
                    && let Some(low_hex) = low.strip_prefix("\\u")
                    && let Ok(low) = u16::from_str_radix(low_hex, 16)
                    && (0xDC00..0xE000).contains(&low)
                {
                    let code =
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00);
                    out.push(char::from_u32(code).unwrap_or('\u{fffd}'));
                    self.i += 6;
                    return true;
                }
                out.push('\u{fffd}');
                return true;
            }
            out.push(char::from_u32(u32::from(unit)).unwrap_or('\u{fffd}'));
            return true;
        }
        self.keep_escape(out);
        true
    }

    /// An escape JSON does not have (`\d`, `\$`): kept as written.
    fn keep_escape(&mut self, out: &mut String) {
        self.repair(Repair::InvalidEscape);
        out.push('\\');
        self.i += 1;
        if let Some(ch) = self.rest().chars().next() {
            out.push(ch);
            self.i += ch.len_utf8();
        }
    }
}
