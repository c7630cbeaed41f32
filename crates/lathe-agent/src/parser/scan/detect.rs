//! Where a call may start: wrapper tags, `{"`, `[{`, `[TOOL_CALLS]`, code fences and a real
//! tool's name followed by `(` at the start of a line. Each check answers yes, no, or "wait":
//! the text so far could still become one.

use super::{Kind, Scanner, Scope};
use crate::parser::families::{
    FUNCTION_OPEN, MARKER, OPENER_SECOND_BYTES, SectionStart, TAGS, partial_prefix, section_at,
    skip_ws,
};
use crate::parser::python::ident_chain_end;

/// How far the scanner looks ahead (spaces, a name, a fence's info line) before deciding that
/// something is not a call. Without a bound, a long run of spaces streamed a byte at a time
/// would be re-scanned on every push.
const LOOKAHEAD: usize = 256;

pub(super) enum Found {
    Candidate(usize, Kind),
    /// Text from here may start a candidate; wait for more.
    Wait(usize),
    Nothing,
}

enum Detect {
    Yes(usize, Kind),
    Wait(usize),
    No,
}

impl Scanner {
    pub(super) fn find(&self, eof: bool) -> Found {
        let b = self.buf.as_bytes();
        let mut i = self.pos;
        while i < b.len() {
            let line_start = if i == 0 {
                self.line_start_at_zero
            } else {
                b[i - 1] == b'\n'
            };
            if line_start && self.scope == Scope::Text {
                match self.detect_line_start(i, eof) {
                    Detect::Yes(start, kind) => return Found::Candidate(start, kind),
                    Detect::Wait(start) => return Found::Wait(start),
                    Detect::No => {}
                }
            }
            if matches!(b[i], b'<' | b'[' | b'{' | b'>') {
                match self.detect_at(i, eof) {
                    Detect::Yes(start, kind) => return Found::Candidate(start, kind),
                    Detect::Wait(start) => return Found::Wait(start),
                    Detect::No => {}
                }
            }
            i += 1;
        }
        Found::Nothing
    }

    fn detect_line_start(&self, i: usize, eof: bool) -> Detect {
        let b = self.buf.as_bytes();
        let mut j = i;
        while b.get(j).is_some_and(|c| *c == b' ' || *c == b'\t') {
            j += 1;
        }
        if j - i > LOOKAHEAD {
            return Detect::No;
        }
        if j >= b.len() {
            return if eof { Detect::No } else { Detect::Wait(i) };
        }
        if crate::parser::patch::enabled(&self.names) {
            match crate::parser::patch::starts_at(&self.buf, j, eof) {
                Some(true) => return Detect::Yes(j, Kind::Patch),
                None => return Detect::Wait(i),
                Some(false) => {}
            }
        }
        let c = b[j];
        if self.fences && (c == b'`' || c == b'~') && j - i <= 3 {
            let run = b[j..].iter().take_while(|x| **x == c).count();
            if j + run >= b.len() {
                return if eof { Detect::No } else { Detect::Wait(i) };
            }
            if run >= 3 {
                let Some(nl) = self.buf[j + run..].find('\n').map(|k| j + run + k) else {
                    let long = b.len() - j > LOOKAHEAD;
                    return if eof || long {
                        Detect::No
                    } else {
                        Detect::Wait(i)
                    };
                };
                if nl - j > LOOKAHEAD {
                    return Detect::No;
                }
                let info = &self.buf[j + run..nl];
                if c == b'`' && info.contains('`') {
                    return Detect::No;
                }
                return Detect::Yes(
                    i,
                    Kind::Fence {
                        ch: c,
                        len: run,
                        content: nl + 1 - i,
                    },
                );
            }
            return Detect::No;
        }
        // A list item's bullet: `- `, `* `, `1. `.
        let bullet = b[j..].iter().take_while(|c| c.is_ascii_digit()).count();
        let marker = if bullet > 0 && bullet < 4 {
            j + bullet
        } else {
            j
        };
        if marker >= b.len() {
            return if eof { Detect::No } else { Detect::Wait(i) };
        }
        if matches!(b[marker], b'-' | b'*' | b'+' | b'.' | b')')
            && (bullet > 0) == matches!(b[marker], b'.' | b')')
        {
            match b.get(marker + 1) {
                None if !eof => return Detect::Wait(i),
                Some(b' ') => j = marker + 2,
                _ => {}
            }
            if j >= b.len() {
                return if eof { Detect::No } else { Detect::Wait(i) };
            }
        }
        let c = b[j];
        if c == b'[' || c.is_ascii_alphabetic() || c == b'_' {
            return match self.detect_python(j, eof) {
                // Wait from the line start: the next look must still see a line start.
                Detect::Wait(_) => Detect::Wait(i),
                other => other,
            };
        }
        Detect::No
    }

    /// A real tool's name followed by `(`, or `[` and one.
    fn detect_python(&self, j: usize, eof: bool) -> Detect {
        let b = self.buf.as_bytes();
        let mut k = j;
        if b[k] == b'[' {
            k += 1;
            while b.get(k).is_some_and(|c| *c == b' ' || *c == b'\t') {
                k += 1;
            }
            if k >= b.len() {
                return if eof { Detect::No } else { Detect::Wait(j) };
            }
        }
        if k - j > LOOKAHEAD {
            return Detect::No;
        }
        let Some(end) = ident_chain_end(&self.buf, k) else {
            return Detect::No;
        };
        if end - k > LOOKAHEAD {
            return Detect::No;
        }
        if end >= b.len() {
            return if eof { Detect::No } else { Detect::Wait(j) };
        }
        let mut m = end;
        while b.get(m).is_some_and(|c| *c == b' ' || *c == b'\t') && m - end < LOOKAHEAD {
            m += 1;
        }
        if m >= b.len() {
            return if eof { Detect::No } else { Detect::Wait(j) };
        }
        let name = &self.buf[k..end];
        let name = name.strip_suffix(".call").unwrap_or(name);
        if b[m] == b'(' && self.names.known(name).is_some() {
            Detect::Yes(j, Kind::Python)
        } else {
            Detect::No
        }
    }

    fn detect_at(&self, i: usize, eof: bool) -> Detect {
        let b = self.buf.as_bytes();
        let rest = &self.buf[i..];
        let mut wait = false;
        if matches!(b[i], b'<' | b'>') {
            if b.get(i + 1)
                .is_some_and(|next| !OPENER_SECOND_BYTES[*next as usize])
            {
                return Detect::No;
            }
            match section_at(&self.buf, i) {
                SectionStart::Yes(index) => return Detect::Yes(i, Kind::Section(index)),
                SectionStart::Partial => wait = true,
                SectionStart::No => {}
            }
        }
        match b[i] {
            b'<' => {
                for (index, spec) in TAGS.iter().enumerate() {
                    if rest.starts_with(spec.open) {
                        return Detect::Yes(i, Kind::Tag(index));
                    }
                    wait |= partial_prefix(&self.buf, i, spec.open);
                }
                if rest.starts_with(FUNCTION_OPEN) {
                    return Detect::Yes(i, Kind::FunctionTag);
                }
                wait |= partial_prefix(&self.buf, i, FUNCTION_OPEN);
            }
            b'[' => {
                if rest.starts_with(MARKER) {
                    return Detect::Yes(i, Kind::Marker);
                }
                wait |= partial_prefix(&self.buf, i, MARKER);
                // `[read_file(...)]` inside a sentence.
                if self.scope == Scope::Text {
                    match self.detect_python(i, eof) {
                        Detect::Yes(..) => return Detect::Yes(i, Kind::Python),
                        Detect::Wait(_) => wait = true,
                        Detect::No => {}
                    }
                }
                let k = skip_ws(b, i + 1);
                // `[` then `{`: maybe an array of calls.
                if self.scope == Scope::Text && k - i <= LOOKAHEAD {
                    if k >= b.len() {
                        wait = true;
                    } else if b[k] == b'{' {
                        match self.object_opens(k, eof) {
                            Detect::Yes(..) => return Detect::Yes(i, Kind::Json),
                            Detect::Wait(_) => wait = true,
                            Detect::No => {}
                        }
                    }
                }
            }
            b'{' if self.scope == Scope::Text => return self.object_opens(i, eof),
            _ => {}
        }
        if wait && !eof {
            Detect::Wait(i)
        } else {
            Detect::No
        }
    }

    /// `{` followed by a quote (any kind): the start of an object worth reading.
    fn object_opens(&self, i: usize, eof: bool) -> Detect {
        let b = self.buf.as_bytes();
        let k = skip_ws(b, i + 1);
        if k - i > LOOKAHEAD {
            return Detect::No;
        }
        if k >= b.len() {
            return if eof { Detect::No } else { Detect::Wait(i) };
        }
        let rest = &self.buf[k..];
        if rest.starts_with(['"', '\'', '\u{201c}', '\u{201d}', '\u{2018}']) {
            return Detect::Yes(i, Kind::Json);
        }
        let curly_prefix = ["\u{201c}", "\u{201d}", "\u{2018}"]
            .iter()
            .any(|q| partial_prefix(&self.buf, k, q));
        if curly_prefix && !eof {
            Detect::Wait(i)
        } else {
            Detect::No
        }
    }
}
