//! The escaping strategies: text double-escaped by the model (`\\n` where the file has a
//! newline), and the reverse, text the argument layer unescaped (`\n` in a C string arrived as a
//! real newline).

use super::matching::{Match, non_empty};

/// Unescapes `\n`, `\t`, `\r`, `\"`, `\'` and `\\`; `None` when there is nothing to unescape.
pub fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let replaced = match (c, chars.peek()) {
            ('\\', Some('n')) => Some('\n'),
            ('\\', Some('t')) => Some('\t'),
            ('\\', Some('r')) => Some('\r'),
            ('\\', Some('"')) => Some('"'),
            ('\\', Some('\'')) => Some('\''),
            ('\\', Some('\\')) => Some('\\'),
            _ => None,
        };
        match replaced {
            Some(r) => {
                chars.next();
                out.push(r);
                changed = true;
            }
            None => out.push(c),
        }
    }
    changed.then_some(out)
}

/// The reverse of the argument layer's double-escape repair: an `old_string` that arrived with
/// `\n` escapes (and no real newline) was turned into real newlines before it got here, while
/// the file holds the escapes (`printf("a\n")`). Each character the repair may have produced is
/// matched as either itself or its escape.
pub fn literal_escapes(text: &str, old: &str, new: &str) -> Option<Vec<Match>> {
    if !old.contains('\n') {
        return None;
    }
    let mut pattern = String::new();
    for c in old.chars() {
        match c {
            '\n' => pattern.push_str(r"\\n"),
            '\t' => pattern.push_str(r"(?:\t|\\t)"),
            '\r' => pattern.push_str(r"(?:\r|\\r)"),
            '"' => pattern.push_str(r#"(?:"|\\")"#),
            '\\' => pattern.push_str(r"(?:\\\\|\\)"),
            other => pattern.push_str(&regex::escape(other.encode_utf8(&mut [0u8; 4]))),
        }
    }
    let regex = regex::Regex::new(&pattern).ok()?;
    non_empty(
        regex
            .find_iter(text)
            .map(|m| Match {
                start: m.start(),
                end: m.end(),
                replacement: reescape(new, old, m.as_str()),
            })
            .collect(),
    )
}

/// For each character of `old`, whether `matched` (what the file holds) has it as an escape
/// sequence (`\"` for `"`); `old` is known to match `matched` this way.
fn escape_flags(old: &str, matched: &str) -> Vec<bool> {
    let bytes = matched.as_bytes();
    let mut at = 0;
    old.chars()
        .map(|c| {
            let escape: &[u8] = match c {
                '\n' => b"\\n",
                '\t' => b"\\t",
                '\r' => b"\\r",
                '"' => b"\\\"",
                '\\' => b"\\\\",
                _ => b"",
            };
            let escaped =
                !escape.is_empty() && bytes.get(at..).is_some_and(|rest| rest.starts_with(escape));
            at += if escaped { escape.len() } else { c.len_utf8() };
            escaped
        })
        .collect()
}

/// `new` written the way the file writes `old`: real newlines as `\n` escapes, and each tab,
/// quote or backslash escaped as the corresponding character of `old` was (characters in the
/// common prefix and suffix of `old` and `new` copy it; others follow the majority of their
/// kind). A `new` without a newline was never unescaped: kept as is.
fn reescape(new: &str, old: &str, matched: &str) -> String {
    if !new.contains('\n') {
        return new.to_owned();
    }
    let flags = escape_flags(old, matched);
    let old_chars: Vec<char> = old.chars().collect();
    let new_chars: Vec<char> = new.chars().collect();
    let prefix = old_chars
        .iter()
        .zip(&new_chars)
        .take_while(|(a, b)| a == b)
        .count();
    let room = old_chars.len().min(new_chars.len()) - prefix;
    let suffix = old_chars
        .iter()
        .rev()
        .zip(new_chars.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let majority = |kind: char| {
        let (escaped, plain) = old_chars
            .iter()
            .zip(&flags)
            .filter(|(c, _)| **c == kind)
            .fold(
                (0, 0),
                |(e, p), (_, &f)| if f { (e + 1, p) } else { (e, p + 1) },
            );
        escaped > plain
    };
    let mut out = String::with_capacity(new.len() + 8);
    for (k, &c) in new_chars.iter().enumerate() {
        let escaped = if c == '\n' {
            true
        } else if k < prefix {
            flags[k]
        } else if k >= new_chars.len() - suffix {
            flags[old_chars.len() - (new_chars.len() - k)]
        } else {
            majority(c)
        };
        match (c, escaped) {
            ('\n', _) => out.push_str(r"\n"),
            ('\t', true) => out.push_str(r"\t"),
            ('\r', true) => out.push_str(r"\r"),
            ('"', true) => out.push_str(r#"\""#),
            ('\\', true) => out.push_str(r"\\"),
            (other, _) => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_only_when_there_is_an_escape() {
        assert_eq!(unescape("plain"), None);
        assert_eq!(unescape(r"a\nb\\c").as_deref(), Some("a\nb\\c"));
        assert_eq!(unescape(r"C:\temp").as_deref(), Some("C:\temp"));
    }

    #[test]
    fn reescape_copies_the_escaping_of_the_unchanged_parts() {
        // old `s = "say \"x\"\n"` arrived unescaped as `s = "say "x"<LF>"`.
        let matched = r#"s = "say \"x\"\n""#;
        let old = "s = \"say \"x\"\n\"";
        assert_eq!(escape_flags(old, matched).iter().filter(|&&f| f).count(), 3);
        assert_eq!(
            reescape("s = \"say \"y\"\n\"", old, matched),
            r#"s = "say \"y\"\n""#
        );
        assert_eq!(
            reescape("no newline \"kept\"", old, matched),
            "no newline \"kept\""
        );
    }
}
