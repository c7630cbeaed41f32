//! The matcher built from the model's pattern, and the explanation of a pattern that does not
//! compile: where it failed, and what to send instead.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use regex_syntax::ast;

/// How the pattern is to be read.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PatternFlags {
    /// Letters match either case.
    pub case_insensitive: bool,
    /// The pattern is literal text.
    pub fixed_strings: bool,
    /// Matches may span lines, and `.` matches a line break.
    pub multiline: bool,
}

/// Builds the matcher as ripgrep would (`^`/`$` at line boundaries, CRLF-aware `$`), or returns
/// the model-facing explanation of what is wrong with `pattern`.
pub(super) fn build(pattern: &str, flags: PatternFlags) -> Result<RegexMatcher, String> {
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(flags.case_insensitive)
        .fixed_strings(flags.fixed_strings)
        .multi_line(true)
        .crlf(true);
    if flags.multiline {
        builder.dot_matches_new_line(true).line_terminator(None);
    } else {
        // A matcher that knows the line terminator lets the searcher skip to candidate lines.
        builder.line_terminator(Some(b'\n'));
    }
    builder
        .build(pattern)
        .map_err(|err| explain(pattern, flags, &err))
}

fn explain(pattern: &str, flags: PatternFlags, err: &grep_regex::Error) -> String {
    if let grep_regex::ErrorKind::NotAllowed(_) = err.kind() {
        return format!(
            "the pattern {pattern:?} contains a line break (\\n), but without multiline grep matches \
             one line at a time; pass multiline: true to match across lines"
        );
    }
    let parsed = regex_syntax::ParserBuilder::new()
        .case_insensitive(flags.case_insensitive)
        .multi_line(true)
        .dot_matches_new_line(flags.multiline)
        .crlf(true)
        .utf8(false)
        .build()
        .parse(pattern);
    let syntax = match parsed {
        Err(syntax) => syntax,
        Ok(_) => {
            // It parses, so the failure is in compiling it (most often the size limit).
            return format!(
                "the pattern {pattern:?} cannot be used: {err}; simplify it (fewer alternatives or \
                 smaller repetition counts such as {{1000}}), or split the search"
            );
        }
    };
    let (kind, at) = match &syntax {
        regex_syntax::Error::Parse(e) => (Some(e.kind()), e.span().start.offset),
        _ => (None, 0),
    };
    let literal = format!(
        "to search for the text literally, pass fixed_strings: true, or escape it: `{}`",
        regex::escape(pattern)
    );
    match kind {
        Some(ast::ErrorKind::UnsupportedLookAround) => format!(
            "look-around (lookahead `(?=...)`, `(?!...)`; lookbehind `(?<=...)`, `(?<!...)`) is \
             not supported: grep uses ripgrep's regex engine, which has no look-around.\n{syntax}\n\
             Rewrite the pattern without it: match the surrounding text as part of the pattern \
             (`foo(?=bar)` -> `foobar`, `(?<=id: )\\d+` -> `id: \\d+`); for a negative look-around, \
             search for the wider pattern and leave out the unwanted results yourself, or narrow \
             the files with glob or type; {literal}"
        ),
        Some(kind) if is_backreference(kind, pattern, at) => format!(
            "backreferences (`\\1`, `\\2`, `\\k<name>`) are not supported: grep uses ripgrep's \
             regex engine, which cannot match a repeat of captured text.\n{syntax}\n\
             Rewrite the pattern without it: spell the repeated text out (`(ab)\\1` -> `abab`, \
             `(['\"]).*\\1` -> `'.*'|\".*\"`), or search for the wider pattern and check the \
             results; {literal}"
        ),
        _ => format!(
            "the pattern is not a valid regex.\n{syntax}\n{}",
            capitalized(&literal)
        ),
    }
}

/// `\1` (which the parser names), and the named forms it only sees as an unknown escape or
/// flag: `\k<name>`, `\k{name}`, `\g1`, `\g{name}`, `(?P=name)`.
fn is_backreference(kind: &ast::ErrorKind, pattern: &str, at: usize) -> bool {
    let rest = pattern.get(at..).unwrap_or("");
    let before = pattern.get(..at).unwrap_or("");
    match kind {
        ast::ErrorKind::UnsupportedBackreference => true,
        ast::ErrorKind::EscapeUnrecognized => {
            ["\\k<", "\\k{", "\\k'", "\\g{"]
                .iter()
                .any(|p| rest.starts_with(p))
                || (rest.starts_with("\\g") && rest[2..].starts_with(|c: char| c.is_ascii_digit()))
        }
        ast::ErrorKind::FlagUnrecognized => before.ends_with("(?") && rest.starts_with("P="),
        _ => false,
    }
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(pattern: &str) -> String {
        build(pattern, PatternFlags::default()).unwrap_err()
    }

    #[test]
    fn syntax_errors_point_at_the_failure_and_offer_the_literal_form() {
        let message = error("foo(bar");
        assert!(message.contains("not a valid regex"), "{message}");
        assert!(message.contains("unclosed group"), "{message}");
        assert!(message.contains('^'), "{message}");
        assert!(message.contains("fixed_strings: true"), "{message}");
        assert!(message.contains(r"`foo\(bar`"), "{message}");
    }

    #[test]
    fn look_around_and_backreferences_are_named() {
        for pattern in ["foo(?=bar)", "foo(?!bar)", "(?<=x)y", "(?<!x)y"] {
            let message = error(pattern);
            assert!(message.starts_with("look-around"), "{pattern}: {message}");
            assert!(message.contains("Rewrite"), "{message}");
        }
        for pattern in [
            r"(a)\1",
            r"(?<x>a)\k<x>",
            r"(a)\g1",
            r"(?P<x>a)(?P=x)",
            r"(a)\k{x}",
        ] {
            let message = error(pattern);
            assert!(
                message.starts_with("backreferences"),
                "{pattern}: {message}"
            );
        }
        assert!(error(r"\q").starts_with("the pattern is not a valid regex"));
    }

    #[test]
    fn newline_needs_multiline() {
        let message = error("a\nb");
        assert!(message.contains("multiline: true"), "{message}");
        let flags = PatternFlags {
            multiline: true,
            ..PatternFlags::default()
        };
        assert!(build("a\nb", flags).is_ok());
    }

    #[test]
    fn fixed_strings_accept_anything() {
        let flags = PatternFlags {
            fixed_strings: true,
            ..PatternFlags::default()
        };
        assert!(build("foo(?=bar)\\1[", flags).is_ok());
    }
}
