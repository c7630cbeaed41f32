//! The streaming scanner: text in, text and calls out, as soon as each is certain.
//!
//! Text streams through until something that may start a call (a wrapper tag, `{"`, a code
//! fence, a real tool's name followed by `(` at the start of a line). From there the text is
//! held until the block is complete and read; calls leave the text, anything else is released
//! as it was. Holding is bounded by the block, and re-reading a held block is throttled, so
//! the work stays near-linear in the text.

mod detect;

use super::families::{
    Ctx, Resolved, SECTIONS, TAGS, fence_may_hold_calls, is_closing_fence, resolve_function_tag,
    resolve_json, resolve_marker, resolve_python, resolve_section, resolve_tag, skip_ws,
};
use super::names::ToolNames;
use super::patch::resolve_patch;
use super::{Family, Malformed, ParsedCall};
use detect::Found;
use std::sync::Arc;

/// Which text is scanned, and for what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The answer: every family.
    Text,
    /// Thinking: only explicit wrappers (`<tool_call>`, `<function=...>`, `[TOOL_CALLS]`,
    /// `<|python_tag|>`); JSON and code in thinking are drafts.
    Thinking,
}

/// A piece of scanned text.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// Text to show.
    Text(String),
    /// A call, taken out of the text.
    Call(ParsedCall),
    /// A block meant as a call that could not be read (its text is shown).
    Malformed(Malformed),
}

/// Held blocks below this size are re-read on every push; above it, only after growing by an
/// eighth, which keeps a long streamed call (a big `write_file`) from being re-read per token.
const ALWAYS_RETRY_BELOW: usize = 4096;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Tag(usize),
    /// A family's own tokens (`SECTIONS`).
    Section(usize),
    FunctionTag,
    Marker,
    Json,
    Python,
    /// A `*** Begin Patch` block (maybe in a heredoc).
    Patch,
    /// A code fence of `len` `ch`s whose content starts `content` bytes after the block start.
    Fence {
        ch: u8,
        len: usize,
        content: usize,
    },
}

#[derive(Debug, Clone, Copy)]
enum State {
    Text,
    Held {
        kind: Kind,
        tried: usize,
    },
    /// Inside a code block that holds no calls: lines stream through until the closing fence.
    Code {
        ch: u8,
        len: usize,
        mid_line: bool,
    },
}

/// Finds tool calls in streamed text.
pub struct Scanner {
    names: Arc<ToolNames>,
    scope: Scope,
    /// Whether fences are candidates (not inside a fence already).
    fences: bool,
    buf: String,
    /// Everything before `pos` has been handed out.
    pos: usize,
    /// Whether offset 0 of `buf` is the start of a line.
    line_start_at_zero: bool,
    state: State,
}

impl Scanner {
    /// A scanner resolving names against `names`.
    pub fn new(names: Arc<ToolNames>, scope: Scope) -> Self {
        Scanner {
            names,
            scope,
            fences: true,
            buf: String::new(),
            pos: 0,
            line_start_at_zero: true,
            state: State::Text,
        }
    }

    /// Adds text; returns what is certain so far.
    pub fn push(&mut self, text: &str) -> Vec<Segment> {
        let mut out = Vec::new();
        if text.is_empty() {
            return out;
        }
        self.buf.push_str(text);
        self.run(false, &mut out);
        self.compact();
        out
    }

    /// Ends the text; returns the rest.
    pub fn finish(&mut self) -> Vec<Segment> {
        let mut out = Vec::new();
        self.run(true, &mut out);
        if self.pos < self.buf.len() {
            let rest = self.buf[self.pos..].to_string();
            emit_text(&mut out, &rest);
        }
        self.buf.clear();
        self.pos = 0;
        self.line_start_at_zero = true;
        self.state = State::Text;
        out
    }

    fn compact(&mut self) {
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.line_start_at_zero = self.buf[..self.pos].ends_with('\n');
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }

    /// `i`, moved forward to a character boundary within the buffer.
    fn boundary(&self, i: usize) -> usize {
        let mut i = i.min(self.buf.len());
        while !self.buf.is_char_boundary(i) {
            i += 1;
        }
        i
    }

    fn text(&mut self, end: usize, out: &mut Vec<Segment>) {
        let end = self.boundary(end);
        if end > self.pos {
            emit_text(out, &self.buf[self.pos..end]);
            self.pos = end;
        }
    }

    fn run(&mut self, eof: bool, out: &mut Vec<Segment>) {
        loop {
            match self.state {
                State::Text => match self.find(eof) {
                    Found::Candidate(start, kind) => {
                        self.text(start, out);
                        self.state = State::Held { kind, tried: 0 };
                    }
                    Found::Wait(start) => {
                        self.text(start, out);
                        return;
                    }
                    Found::Nothing => {
                        self.text(self.buf.len(), out);
                        return;
                    }
                },
                State::Held { kind, tried } => {
                    let held = self.buf.len() - self.pos;
                    let retry =
                        tried == 0 || held < ALWAYS_RETRY_BELOW || held >= tried + tried / 8;
                    if !eof && (held <= tried || !retry) {
                        return;
                    }
                    self.state = State::Held { kind, tried: held };
                    let resolved = self.resolve(kind, eof);
                    self.apply(resolved, kind, eof, out);
                    if matches!(self.state, State::Held { .. }) {
                        return;
                    }
                }
                State::Code { ch, len, mid_line } => {
                    if !self.code(ch, len, mid_line, eof, out) {
                        return;
                    }
                }
            }
        }
    }

    fn apply(&mut self, resolved: Resolved, kind: Kind, eof: bool, out: &mut Vec<Segment>) {
        let end_of = |end: usize, len: usize| end.clamp(self.pos, len);
        match resolved {
            Resolved::NeedMore if !eof => {}
            // A reader must decide at the end of the text; if one does not, the block is text.
            Resolved::NeedMore => {
                self.text(self.buf.len(), out);
                self.state = State::Text;
            }
            Resolved::Calls { end, calls } => {
                out.extend(calls.into_iter().map(Segment::Call));
                self.pos = end_of(end, self.buf.len()).max(self.pos + 1);
                self.state = State::Text;
            }
            Resolved::Text { end } => {
                let end = end_of(end, self.buf.len()).max(self.pos + 1);
                self.text(end, out);
                self.state = State::Text;
            }
            Resolved::Malformed { end, reason } => {
                let end = self.boundary(end_of(end, self.buf.len()).max(self.pos + 1));
                let text = self.buf[self.pos..end].to_string();
                out.push(Segment::Malformed(Malformed {
                    family: family_of(kind),
                    text,
                    reason,
                }));
                self.pos = end;
                self.state = State::Text;
            }
            Resolved::Reject => {
                let ch = self.buf[self.pos..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
                self.text(self.pos + ch, out);
                self.state = State::Text;
            }
            Resolved::EnterCode { end } => {
                self.text(end_of(end, self.buf.len()), out);
                if let Kind::Fence { ch, len, .. } = kind {
                    self.state = State::Code {
                        ch,
                        len,
                        mid_line: false,
                    };
                } else {
                    self.state = State::Text;
                }
            }
        }
        // Offsets past the end or inside a character would be a reader's bug; never panic.
        self.pos = self.boundary(self.pos);
    }

    /// Streams code lines until the closing fence. Returns whether the fence closed.
    fn code(
        &mut self,
        ch: u8,
        len: usize,
        mid_line: bool,
        eof: bool,
        out: &mut Vec<Segment>,
    ) -> bool {
        let mut mid_line = mid_line;
        loop {
            match self.buf[self.pos..].find('\n') {
                Some(k) => {
                    let nl = self.pos + k;
                    if !mid_line && is_closing_fence(&self.buf[self.pos..nl], ch, len) {
                        self.text(nl, out);
                        self.state = State::Text;
                        return true;
                    }
                    self.text(nl + 1, out);
                    mid_line = false;
                }
                None => {
                    let line = &self.buf[self.pos..];
                    if eof {
                        self.text(self.buf.len(), out);
                        self.state = State::Text;
                        return true;
                    }
                    // Hold a partial line only while it may still be the closing fence.
                    let may_close = !mid_line && {
                        let b = line.as_bytes();
                        let indent = b.iter().take_while(|c| **c == b' ').count();
                        indent <= 3
                            && b[indent..]
                                .iter()
                                .all(|c| *c == ch || matches!(c, b' ' | b'\t' | b'\r'))
                    };
                    if !may_close && !line.is_empty() {
                        self.text(self.buf.len(), out);
                        mid_line = true;
                    }
                    self.state = State::Code { ch, len, mid_line };
                    return false;
                }
            }
        }
    }

    fn ctx(&self) -> Ctx<'_> {
        Ctx {
            names: &self.names,
            thinking: self.scope == Scope::Thinking,
            in_fence: !self.fences,
        }
    }

    fn resolve(&self, kind: Kind, eof: bool) -> Resolved {
        let ctx = self.ctx();
        match kind {
            Kind::Tag(i) => resolve_tag(&self.buf, self.pos, &TAGS[i], &ctx, eof),
            Kind::Section(i) => resolve_section(&self.buf, self.pos, i, &ctx, eof),
            Kind::FunctionTag => resolve_function_tag(&self.buf, self.pos, &ctx, eof),
            Kind::Marker => resolve_marker(&self.buf, self.pos, &ctx, eof),
            Kind::Json => resolve_json(&self.buf, self.pos, &ctx, eof),
            Kind::Python => resolve_python(&self.buf, self.pos, &ctx, eof),
            Kind::Patch => resolve_patch(&self.buf, self.pos, &ctx, eof),
            Kind::Fence { ch, len, content } => {
                self.resolve_fence(ch, len, self.pos + content, eof)
            }
        }
    }

    /// A fence is calls only when everything in it is calls; otherwise it is code.
    fn resolve_fence(&self, ch: u8, len: usize, content: usize, eof: bool) -> Resolved {
        let b = self.buf.as_bytes();
        let first = skip_ws(b, content);
        if first >= b.len() {
            return if eof {
                Resolved::Text { end: b.len() }
            } else {
                Resolved::NeedMore
            };
        }
        let may_close_now = b[first] == ch;
        if !may_close_now {
            match fence_may_hold_calls(&self.buf, first, &self.names) {
                None if !eof => return Resolved::NeedMore,
                None | Some(false) => return Resolved::EnterCode { end: content },
                Some(true) => {}
            }
        }
        // Find the closing line.
        let mut line = content;
        let (close_start, close_end) = loop {
            match self.buf[line..].find('\n') {
                Some(k) => {
                    if is_closing_fence(&self.buf[line..line + k], ch, len) {
                        break (line, line + k);
                    }
                    line += k + 1;
                }
                None if eof => {
                    if is_closing_fence(&self.buf[line..], ch, len) {
                        break (line, b.len());
                    }
                    break (b.len(), b.len());
                }
                None => return Resolved::NeedMore,
            }
        };
        let mut inner = Scanner {
            fences: false,
            ..Scanner::new(Arc::clone(&self.names), self.scope)
        };
        let mut segments = inner.push(&self.buf[content..close_start]);
        segments.extend(inner.finish());
        let all_calls = segments.iter().any(|s| matches!(s, Segment::Call(_)))
            && segments.iter().all(|s| match s {
                Segment::Call(_) => true,
                Segment::Text(t) => t.trim().is_empty(),
                Segment::Malformed(_) => false,
            });
        if !all_calls {
            return Resolved::Text { end: close_end };
        }
        let calls = segments
            .into_iter()
            .filter_map(|s| match s {
                Segment::Call(mut c) => {
                    c.source = relabel(c.source);
                    Some(c)
                }
                _ => None,
            })
            .collect();
        Resolved::Calls {
            end: close_end,
            calls,
        }
    }
}

fn emit_text(out: &mut Vec<Segment>, text: &str) {
    if text.is_empty() {
        return;
    }
    if let Some(Segment::Text(last)) = out.last_mut() {
        last.push_str(text);
    } else {
        out.push(Segment::Text(text.to_string()));
    }
}

fn family_of(kind: Kind) -> Family {
    match kind {
        Kind::Tag(i) => TAGS[i].family,
        Kind::Section(i) => SECTIONS[i].family,
        Kind::FunctionTag => Family::FunctionTag,
        Kind::Marker => Family::ToolCallsMarker,
        Kind::Json => Family::BareJson,
        Kind::Python => Family::PythonCall,
        Kind::Patch => Family::Patch,
        Kind::Fence { .. } => Family::Fenced,
    }
}

/// Bare JSON and Python calls inside a fence count as fenced; wrappers keep their family.
fn relabel(source: super::CallSource) -> super::CallSource {
    use super::CallSource::{Text, Thinking};
    let fenced = |f: Family| {
        if matches!(f, Family::BareJson | Family::PythonCall) {
            Family::Fenced
        } else {
            f
        }
    };
    match source {
        Text(f) => Text(fenced(f)),
        Thinking(f) => Thinking(fenced(f)),
        other => other,
    }
}
