//! Functionary v3.2 (`>>>NAME` then JSON) and gpt-oss harmony (a header up to `<|message|>`,
//! then the message): families whose calls have no closing token of their own.

use super::sections::{End, json_arguments, parts};
use super::{Ctx, Resolved, skip_ws};
use crate::parser::Family;
use crate::parser::json::parse_at;

const HARMONY_MESSAGE: &str = "<|message|>";
/// Tokens that end a harmony message.
const HARMONY_ENDS: &[&str] = &["<|call|>", "<|end|>", "<|return|>"];
/// The longest harmony header read before deciding it is not one.
const MAX_HEADER: usize = 300;

/// Functionary v3.2 at `pos`: `>>>NAME\n{json}`, or `>>>all\n` (the text that follows is the
/// answer; the marker is dropped).
pub(super) fn functionary(buf: &str, body: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    let Some(nl) = buf[body..].find('\n').map(|k| body + k) else {
        let long = buf.len() - body > 100;
        return if eof || long {
            Resolved::Reject
        } else {
            Resolved::NeedMore
        };
    };
    let name = buf[body..nl].trim_end_matches('\r');
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Resolved::Reject;
    }
    if name == "all" {
        return Resolved::Calls {
            end: nl + 1,
            calls: Vec::new(),
        };
    }
    let j = skip_ws(buf.as_bytes(), nl + 1);
    if j >= buf.len() {
        return if eof {
            Resolved::Reject
        } else {
            Resolved::NeedMore
        };
    }
    if buf.as_bytes()[j] != b'{' {
        return Resolved::Reject;
    }
    let Some(parsed) = parse_at(buf, j) else {
        return Resolved::Malformed {
            end: j,
            reason: format!("the arguments after >>>{name} are not valid JSON"),
        };
    };
    if parsed.cut_off.is_some() && !eof {
        return Resolved::NeedMore;
    }
    // Nothing closes the JSON but itself: where it ends early, the text was cut off.
    let (arguments, repairs) = match json_arguments(buf, j, End::Cut) {
        Ok(a) => a,
        Err(reason) => {
            return Resolved::Malformed {
                end: parsed.end,
                reason,
            };
        }
    };
    Resolved::Calls {
        end: parsed.end,
        calls: vec![ctx.call(
            parts(name, arguments, None, repairs),
            Family::Functionary,
            &[],
        )],
    }
}

/// A harmony header at `pos` (`<|start|>assistant`, `<|channel|>commentary to=functions.NAME
/// <|constrain|>json`) up to `<|message|>`. With a recipient, the message is the call's JSON
/// (up to `<|call|>`, `<|end|>` or the end); without one, the header is dropped and the
/// message is text. A message to the assistant from a tool is a quoted result: text.
pub(super) fn harmony(buf: &str, pos: usize, ctx: &Ctx<'_>, eof: bool) -> Resolved {
    // The header must end within MAX_HEADER bytes; until that many have arrived it may.
    let limit = pos + MAX_HEADER + HARMONY_MESSAGE.len();
    let mut window_end = buf.len().min(limit);
    while !buf.is_char_boundary(window_end) {
        window_end -= 1;
    }
    let Some(m) = buf[pos..window_end]
        .find(HARMONY_MESSAGE)
        .filter(|&m| m <= MAX_HEADER)
    else {
        return if eof || buf.len() >= limit {
            Resolved::Reject
        } else {
            Resolved::NeedMore
        };
    };
    if !is_header(&buf[pos..pos + m]) {
        return Resolved::Reject;
    }
    let header = &buf[pos..pos + m];
    let message = pos + m + HARMONY_MESSAGE.len();
    let recipient = header.find("to=").map(|k| {
        let r = &header[k + 3..];
        &r[..r
            .find(|c: char| c.is_whitespace() || c == '<')
            .unwrap_or(r.len())]
    });
    let ends = |from: usize| {
        HARMONY_ENDS
            .iter()
            .chain(["<|start|>"].iter())
            .filter_map(|e| buf[from..].find(e).map(|k| (from + k, *e)))
            .min()
    };
    let Some(recipient) = recipient.filter(|r| !r.is_empty()) else {
        return Resolved::Calls {
            end: message,
            calls: Vec::new(),
        };
    };
    if recipient == "assistant" {
        // A tool's answer, quoted: text through its end.
        return match ends(message) {
            Some((k, e)) => Resolved::Text { end: k + e.len() },
            None if !eof => Resolved::NeedMore,
            None => Resolved::Reject,
        };
    }
    let (body_end, end, ending) = match ends(message) {
        Some((k, "<|start|>")) => (k, k, End::Closed),
        Some((k, e)) => (k, k + e.len(), End::Closed),
        None if !eof => return Resolved::NeedMore,
        None => (buf.len(), buf.len(), End::Cut),
    };
    let body = &buf[..body_end];
    let name = recipient.strip_prefix("functions.").unwrap_or(recipient);
    match json_arguments(body, message, ending) {
        Ok((arguments, repairs)) => Resolved::Calls {
            end,
            calls: vec![ctx.call(parts(name, arguments, None, repairs), Family::Harmony, &[])],
        },
        Err(reason) => Resolved::Malformed { end, reason },
    }
}

/// Whether `text` reads as a harmony header: a role, `<|channel|>NAME`, `to=RECIPIENT`,
/// `<|constrain|>json`, and nothing else that is markup or a line break.
fn is_header(text: &str) -> bool {
    let mut rest = text.to_string();
    for token in ["<|start|>", "<|channel|>", "<|constrain|>"] {
        rest = rest.replace(token, " ");
    }
    !rest.contains(['<', '>', '\n', '{', '}', '[', ']', '"'])
}
