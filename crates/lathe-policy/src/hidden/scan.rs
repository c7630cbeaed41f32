//! The lexical side of the hidden-code checks: the expansions bash finds again in text, the
//! identifiers of arithmetic, and which command substitutions print only numbers.

use crate::walk::Scope;

/// Expansions found in text that bash expands again, and the text around them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Scan<'t> {
    /// `$(...)`, `` `...` ``, `${...}`, `$[...]`, each whole.
    pub(crate) spans: Vec<&'t str>,
    /// `$name`.
    pub(crate) names: Vec<&'t str>,
    /// The rest, with every expansion replaced by a blank.
    pub(crate) rest: String,
}

/// The byte after the span that opens at `start` with `open` and closes with `close`, skipping
/// quotes and backslash escapes; `None` when it never closes.
pub(crate) fn span_end(bytes: &[u8], start: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = start;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let c = bytes[i];
        match quote {
            Some(q) => {
                if c == b'\\' && q == b'"' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'\\' => i += 1,
                b'\'' | b'"' => quote = Some(c),
                _ if c == open => depth += 1,
                _ if c == close => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

pub(crate) fn is_name_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

pub(crate) fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// Whether `s` is a plain variable name.
pub(crate) fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty() && is_name_start(b[0]) && b.iter().all(|&c| is_name_char(c))
}

pub(crate) fn scan(text: &str) -> Scan<'_> {
    let bytes = text.as_bytes();
    let mut out = Scan::default();
    let mut i = 0;
    let mut plain = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let next = bytes.get(i + 1).copied();
        let end = match (c, next) {
            (b'`', _) => Some(
                bytes[i + 1..]
                    .iter()
                    .position(|&b| b == b'`')
                    .map_or(bytes.len(), |p| i + 2 + p),
            ),
            (b'$', Some(b'(')) => Some(span_end(bytes, i + 1, b'(', b')').unwrap_or(bytes.len())),
            (b'$', Some(b'{')) => Some(span_end(bytes, i + 1, b'{', b'}').unwrap_or(bytes.len())),
            (b'$', Some(b'[')) => Some(span_end(bytes, i + 1, b'[', b']').unwrap_or(bytes.len())),
            // positional parameters: a function's arguments, or `bash -c`'s
            (b'$', Some(n)) if n.is_ascii_digit() || n == b'@' || n == b'*' => {
                out.rest.push_str(&text[plain..i]);
                out.rest.push(' ');
                out.names.push(&text[i + 1..i + 2]);
                i += 2;
                plain = i;
                continue;
            }
            (b'$', Some(n)) if is_name_start(n) => {
                let len = bytes[i + 1..]
                    .iter()
                    .take_while(|&&b| is_name_char(b))
                    .count();
                out.rest.push_str(&text[plain..i]);
                out.rest.push(' ');
                out.names.push(&text[i + 1..i + 1 + len]);
                i += 1 + len;
                plain = i;
                continue;
            }
            _ => None,
        };
        match end {
            Some(e) => {
                out.rest.push_str(&text[plain..i]);
                out.rest.push(' ');
                out.spans.push(&text[i..e]);
                i = e;
                plain = i;
            }
            None => i += 1,
        }
    }
    out.rest.push_str(&text[plain..]);
    out
}

/// The identifiers of an arithmetic expression: what bash looks up as variables. Numbers
/// (`0x1f`, `2#101`, `10`) are skipped.
pub(crate) fn identifiers(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_digit() {
            i += bytes[i..]
                .iter()
                .take_while(|&&b| is_name_char(b) || b == b'#' || b == b'@')
                .count();
        } else if is_name_start(c) {
            let len = bytes[i..].iter().take_while(|&&b| is_name_char(b)).count();
            out.push(&text[i..i + len]);
            i += len;
        } else {
            i += 1;
        }
    }
    out
}

/// Whether a command substitution's text (`seq 1 10`, `wc -l < f`, `ls | wc -l`, `nproc`)
/// prints only numbers: its output is then harmless where bash evaluates it as arithmetic.
/// Earlier pipeline stages are analysed as usual; only the last one prints.
pub(crate) fn prints_numbers(script: &str) -> bool {
    let Some(last) = last_stage(script) else {
        return false;
    };
    let words: Vec<&str> = last.split_whitespace().collect();
    let number = |w: &&str| w.parse::<f64>().is_ok();
    let plain = |w: &&str| {
        !w.is_empty()
            && w.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_./-+=:,".contains(&b))
    };
    let file = |w: &&str| {
        let name = w.trim_matches('"');
        let name = name
            .strip_prefix("${")
            .and_then(|n| n.strip_suffix('}'))
            .or_else(|| name.strip_prefix('$'))
            .unwrap_or(name);
        w.len() - name.len() <= 5 && plain(&name)
    };
    match words.as_slice() {
        ["seq", rest @ ..] => rest.iter().all(|w| number(w) || *w == "-w"),
        ["nproc"] | ["id", "-u" | "-g" | "-ur" | "-gr"] => true,
        ["tput", "cols" | "lines" | "colors"] | ["getconf", _] => true,
        ["date", format] => {
            format.len() > 1
                && format.starts_with('+')
                && format[1..].bytes().all(|b| b"%sYmdHMSjuNyGVW".contains(&b))
        }
        ["git", "rev-list", "--count", rest @ ..] => rest.iter().all(plain),
        // counts of standard input only: with a file operand wc prints its name too
        ["wc", flag, rest @ ..] if matches!(*flag, "-l" | "-c" | "-w" | "-m") => {
            matches!(rest, [] | ["<", _]) && rest.get(1).is_none_or(file)
        }
        _ => false,
    }
}

/// The last stage of a pipeline written without separators, lists, escapes or backticks;
/// `None` for anything else. Pipes inside quotes and `$(...)` do not split.
pub(crate) fn last_stage(script: &str) -> Option<&str> {
    let bytes = script.as_bytes();
    let mut quote: Option<u8> = None;
    let mut depth = 0usize;
    let mut start = 0;
    for (i, &c) in bytes.iter().enumerate() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) if c == b'\\' || c == b'`' => return None,
            Some(_) => {}
            None => match c {
                b'\'' | b'"' => quote = Some(c),
                b'\\' | b'`' | b';' | b'&' | b'\n' | b'>' => return None,
                b'(' => depth += 1,
                b')' => depth = depth.checked_sub(1)?,
                b'|' if depth == 0 => {
                    if bytes.get(i + 1) == Some(&b'|')
                        || bytes.get(i.wrapping_sub(1)) == Some(&b'|')
                    {
                        return None;
                    }
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    (quote.is_none() && depth == 0).then(|| &script[start..])
}

/// [`prints_numbers`] for a whole `$(...)`.
pub(crate) fn substitution_prints_numbers(text: &str) -> bool {
    text.strip_prefix("$(")
        .and_then(|t| t.strip_suffix(')'))
        .is_some_and(prints_numbers)
}

/// Whether a word is `"${!a[@]}"` (or `${!a[*]}`) of an indexed array: its indices, numbers.
pub(crate) fn array_indices(text: &str, scope: &Scope) -> bool {
    let inner = text.trim_matches('"');
    inner
        .strip_prefix("${!")
        .and_then(|t| t.strip_suffix("[@]}").or_else(|| t.strip_suffix("[*]}")))
        .is_some_and(|name| is_name(name) && !scope.assoc.contains(name))
}

/// The subscript of `name[sub]`, if the text has one.
pub(crate) fn subscript_of(text: &str) -> Option<&str> {
    let open = text.find('[')?;
    let inner = &text[open + 1..];
    Some(inner.rfind(']').map_or(inner, |close| &inner[..close]))
}
