//! Tool calls the model wrote in its text, recovered.
//!
//! Small local models write calls every way but the one asked for: in `<tool_call>` tags with
//! or without the closing tag, as fenced or bare JSON, in another model family's native syntax
//! (`[TOOL_CALLS]`, `<function=...>`, `<|python_tag|>`), as Python calls, as a bare
//! `*** Begin Patch` block (an `apply_patch` call, when that tool is there), with trailing commas,
//! single quotes, Python literals, curly quotes, or cut off by the token limit. The
//! [`Scanner`] finds them in streamed text, keeps them out of the text the user sees, and
//! resolves tool names against the real ones ([`ToolNames`]).
//!
//! What is not a call stays text: JSON that names no real tool, code samples, prose about
//! JSON. A block that is plainly meant as a call but cannot be read is reported as
//! [`Malformed`] so the model can be told.
//!
//! ```
//! use lathe_agent::parser::{ToolNames, parse_text};
//! let names = ToolNames::new(["read_file"]);
//! let parsed = parse_text("Let me look.\n<tool_call>{'name': 'read_file', 'arguments': {'path': 'a.rs'}}", &names);
//! assert_eq!(parsed.text, "Let me look.\n");
//! assert_eq!(parsed.calls[0].name, "read_file");
//! assert_eq!(parsed.calls[0].arguments["path"], "a.rs");
//! ```

mod families;
mod json;
mod names;
mod patch;
mod python;
mod scan;
mod shape;

pub use names::{NameMatch, ToolNames};
pub use scan::{Scanner, Scope, Segment};

use crate::message::ToolCall;
use serde_json::Value;

/// A syntax family a call was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// The provider's native tool calls.
    Native,
    /// A wrapper tag: `<tool_call>`, `<|tool_call|>`, `<function_call>`, ...
    ToolCallTag,
    /// `<function=NAME>{...}</function>` or with `<parameter=K>V</parameter>`.
    FunctionTag,
    /// Mistral's `[TOOL_CALLS]`.
    ToolCallsMarker,
    /// Llama's `<|python_tag|>`.
    PythonTag,
    /// A markdown code fence holding only calls.
    Fenced,
    /// A bare JSON object or array.
    BareJson,
    /// `read_file(path="a.rs")` on a line of its own, or `[read_file(path="a.rs")]` anywhere.
    PythonCall,
    /// A `*** Begin Patch` ... `*** End Patch` block: an `apply_patch` call.
    Patch,
    /// DeepSeek V3/R1/V3.1: `<｜tool▁calls▁begin｜>` ... `<｜tool▁sep｜>`.
    DeepSeek,
    /// `<invoke name=...>` with `<parameter name=...>`: MiniMax-M2, Step3, DeepSeek V3.2 DSML.
    Invoke,
    /// Kimi K2: `<|tool_calls_section_begin|>`.
    Kimi,
    /// GLM-4.5/4.6/4.7: `<tool_call>NAME` with `<arg_key>`/`<arg_value>` pairs.
    Glm,
    /// FunctionGemma and Gemma 4: `call:NAME{key:<escape>value<escape>}`.
    Gemma,
    /// Functionary v3.2: `>>>NAME` then JSON.
    Functionary,
    /// gpt-oss harmony: `to=functions.NAME ... <|message|>{json}`.
    Harmony,
}

/// Where a call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSource {
    /// Native tool calls from the provider.
    Native,
    /// Written in the answer text.
    Text(Family),
    /// Written in the thinking text.
    Thinking(Family),
}

/// A fix applied to read a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repair {
    /// The text ended inside the call (the token limit): closed automatically. `in_string`
    /// when the cut fell inside a string value, which is then incomplete.
    Truncated {
        /// The last string value is partial.
        in_string: bool,
    },
    /// Brackets did not balance before the closing tag; closed automatically.
    Unbalanced,
    /// A wrapper without its closing tag.
    MissingCloseTag,
    /// `[1, 2,]`.
    TrailingComma,
    /// `{"a": 1 "b": 2}`.
    MissingComma,
    /// `'single'` quotes.
    SingleQuotes,
    /// “Curly” quotes.
    CurlyQuotes,
    /// `True`, `False`, `None`.
    PythonLiterals,
    /// `{path: "a"}`.
    UnquotedKeys,
    /// An escape JSON does not have, kept as written.
    InvalidEscape,
    /// A quote inside a string that was not escaped.
    UnescapedQuote,
    /// Arguments given as a string holding JSON.
    ArgumentsAsString,
    /// Arguments next to the name instead of under an arguments key.
    TopLevelArguments,
}

/// How the written tool name matched a real one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Exactly.
    Exact,
    /// After normalising; the name as written.
    Normalised {
        /// As the model wrote it.
        written: String,
    },
    /// No such tool (the registry's answer names the closest).
    Unknown,
}

/// One call, native or recovered.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// The call id, when the model or server gave one.
    pub id: Option<String>,
    /// The real tool name, or the name as written when it is unknown.
    pub name: String,
    /// Arguments (an object), before the registry's lenient argument handling.
    pub arguments: Value,
    /// Where it came from.
    pub source: CallSource,
    /// How the name matched.
    pub resolution: Resolution,
    /// Fixes applied to read it.
    pub repairs: Vec<Repair>,
}

impl ParsedCall {
    /// The call for the history.
    pub fn to_tool_call(&self) -> ToolCall {
        ToolCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
        }
    }

    /// Whether the text ended inside the call.
    pub fn is_truncated(&self) -> bool {
        self.repairs
            .iter()
            .any(|r| matches!(r, Repair::Truncated { .. }))
    }

    /// Whether the name is not a real tool.
    pub fn is_unknown(&self) -> bool {
        matches!(self.resolution, Resolution::Unknown)
    }
}

/// A block that is plainly meant as a call but could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// The family it was written in.
    pub family: Family,
    /// The block as written.
    pub text: String,
    /// What is wrong, lowercase.
    pub reason: String,
}

/// Text with its calls taken out.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedText {
    /// The text the user sees.
    pub text: String,
    /// Calls, in order.
    pub calls: Vec<ParsedCall>,
    /// Blocks meant as calls that could not be read (their text stays in `text`).
    pub malformed: Vec<Malformed>,
}

/// Recovers the calls in a whole text (the non-streaming form of [`Scanner`]).
pub fn parse_text(text: &str, names: &ToolNames) -> ParsedText {
    let mut scanner = Scanner::new(std::sync::Arc::new(names.clone()), Scope::Text);
    let mut segments = scanner.push(text);
    segments.extend(scanner.finish());
    collect(segments)
}

/// Joins segments into text, calls and malformed blocks.
pub fn collect(segments: Vec<Segment>) -> ParsedText {
    let mut out = ParsedText::default();
    for segment in segments {
        match segment {
            Segment::Text(t) => out.text.push_str(&t),
            Segment::Call(c) => out.calls.push(c),
            Segment::Malformed(m) => {
                out.text.push_str(&m.text);
                out.malformed.push(m);
            }
        }
    }
    out
}

/// A native call checked like a recovered one: the name resolved against the real tools, and
/// arguments that arrived as a string (possibly cut off) read leniently.
pub fn resolve_native(call: ToolCall, names: &ToolNames) -> ParsedCall {
    // Read like written arguments; what cannot be read stays as it came, for the runner to
    // report.
    let mut repairs = Vec::new();
    let arguments =
        shape::arguments_object(call.arguments.clone(), &mut repairs).unwrap_or_else(|| {
            repairs.clear();
            call.arguments
        });
    let (name, resolution) = resolve_name(&call.name, names);
    ParsedCall {
        id: call.id,
        name,
        arguments,
        source: CallSource::Native,
        resolution,
        repairs,
    }
}

/// Adds the repairs in `from` that `into` does not have yet.
pub(crate) fn add_repairs(into: &mut Vec<Repair>, from: &[Repair]) {
    for r in from {
        if !into.contains(r) {
            into.push(*r);
        }
    }
}

pub(crate) fn resolve_name(written: &str, names: &ToolNames) -> (String, Resolution) {
    match names.resolve(written) {
        NameMatch::Exact(n) => (n, Resolution::Exact),
        NameMatch::Normalised(n) => (
            n,
            Resolution::Normalised {
                written: written.to_string(),
            },
        ),
        NameMatch::Unknown => (written.trim().to_string(), Resolution::Unknown),
    }
}

/// The answer for a call that was cut off and would change something (as its tool says for
/// its input: `changes`): it must not run. `None` for every other call.
pub fn refuse_truncated_write(call: &ParsedCall, changes: bool) -> Option<String> {
    (call.is_truncated() && changes).then(|| {
        format!(
            "your {} call was cut off before it ended (the reply hit the output limit), so it did not run. \
             Send the call again in full; for a long file, write a first part with write_file and add the rest \
             with edit_file in further calls.",
            call.name
        )
    })
}

/// The answer for a block meant as a call that could not be read.
pub fn malformed_call_message(malformed: &Malformed) -> String {
    format!(
        "a tool call in your reply could not be read ({}). Write each call as \
         <tool_call>{{\"name\": \"TOOL\", \"arguments\": {{...}}}}</tool_call> with valid JSON.",
        malformed.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value, repairs: Vec<Repair>) -> ParsedCall {
        ParsedCall {
            id: None,
            name: name.into(),
            arguments,
            source: CallSource::Text(Family::BareJson),
            resolution: Resolution::Exact,
            repairs,
        }
    }

    #[test]
    fn truncated_writes_are_refused_other_calls_are_not() {
        let cut = vec![Repair::Truncated { in_string: true }];
        let msg = refuse_truncated_write(
            &call(
                "write_file",
                json!({"path": "a", "content": "x"}),
                cut.clone(),
            ),
            true,
        );
        assert!(msg.unwrap().contains("cut off"));
        assert!(
            refuse_truncated_write(&call("read_file", json!({"path": "a"}), cut.clone()), false)
                .is_none()
        );
        assert!(
            refuse_truncated_write(
                &call("write_file", json!({}), vec![Repair::Unbalanced]),
                true
            )
            .is_none()
        );
        assert!(refuse_truncated_write(&call("write_file", json!({}), vec![]), true).is_none());
    }

    #[test]
    fn native_calls_are_resolved_and_repaired() {
        let names = ToolNames::new(["read_file", "write_file"]);
        let c = resolve_native(ToolCall::new("ReadFile", json!({"path": "a"})), &names);
        assert_eq!(c.name, "read_file");
        assert_eq!(
            c.resolution,
            Resolution::Normalised {
                written: "ReadFile".into()
            }
        );
        let c = resolve_native(
            ToolCall::new("write_file", json!("{\"path\": \"a\", \"content\": \"ab")),
            &names,
        );
        assert_eq!(c.arguments, json!({"path": "a", "content": "ab"}));
        assert!(c.is_truncated());
        assert!(refuse_truncated_write(&c, true).is_some());
        let c = resolve_native(ToolCall::new("nope", Value::Null), &names);
        assert!(c.is_unknown());
        assert_eq!(c.arguments, json!({}));
    }
}
