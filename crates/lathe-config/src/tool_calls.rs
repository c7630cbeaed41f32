//! The calls of `lathe tool`, the tool runtime with no model: who approves them, the JSON line
//! a `--batch` call is, the answer given for each, and the longest input taken (read with
//! [`crate::lines::read_bounded_line`]). The binary reads and writes them; what they say is
//! here.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use lathe_policy::ApprovalMode;
use lathe_runtime::dispatch::{
    ApprovalDecision, ApprovalRequest, Approver, CallStatus, FixedAnswer, Outcome,
};
use lathe_runtime::{Metadata, ToolOutput};

/// The longest input accepted: one `--batch` line, or the arguments of a one-shot call read
/// from stdin. Whole files travel in `write_file` arguments, so this is generous (the same as
/// one MCP message); longer input is discarded as it is read and answered with an error that
/// names the limit, so memory stays bounded whatever arrives.
pub const MAX_INPUT_BYTES: usize = 64 * 1024 * 1024;

/// What is said of input over [`MAX_INPUT_BYTES`]: `what` is `size` bytes long.
pub fn too_long(what: &str, size: usize) -> String {
    format!("{what} is {size} bytes long, over the limit of {MAX_INPUT_BYTES} bytes (64 MiB)")
}

/// Who approves a call the gate asks about.
///
/// Without `--approval`, the person who ran `lathe tool` did: a call typed by hand (or written
/// into a `--batch` file) is its own approval, as a command typed into a shell is. The gate
/// still judges it in `full` mode, so a deny rule of `[permissions]` refuses it as it would
/// the agent's; what would ask (a critical command, a sensitive path, `sandbox: false`, an
/// `ask` rule) runs.
///
/// With `--approval MODE`, the calls come from somewhere else (a program relaying a model's
/// calls): the gate decides in that mode, and what would ask is refused, because nobody is
/// there to answer.
pub fn approver(mode: Option<ApprovalMode>) -> Box<dyn Approver> {
    match mode {
        None => Box::new(FixedAnswer(ApprovalDecision::AllowOnce)),
        Some(mode) => Box::new(Unattended(mode)),
    }
}

/// Refuses every request: `lathe tool --approval MODE` has nobody to ask.
struct Unattended(ApprovalMode);

impl Approver for Unattended {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let message = format!(
            "this call needs the user's approval ({}), and `lathe tool --approval {}` asks \
             nobody, so it was not run. Do not retry it; carry on without it if you can, or say \
             what the user should allow (an allow rule under [permissions] in \
             .lathe/config.toml, or another --approval mode)",
            request.reasons.join("; "),
            self.0
        );
        Box::pin(async move {
            ApprovalDecision::Deny {
                message: Some(message),
            }
        })
    }
}

/// One result as `--json` and `--batch` print it.
#[derive(Debug, Serialize)]
pub struct Answer<'a> {
    /// What the model would read.
    text: &'a str,
    is_error: bool,
    /// How the call ended: `ok`, `error`, `denied`, `refused` or `cancelled`.
    status: CallStatus,
    metadata: &'a Metadata,
}

impl<'a> Answer<'a> {
    /// The answer of a call that ran (or was refused by the gate).
    pub fn of(outcome: &'a Outcome) -> Self {
        Answer {
            text: &outcome.output.text,
            is_error: outcome.output.is_error,
            status: outcome.status,
            metadata: &outcome.output.metadata,
        }
    }

    /// A line that was not a call: refused before anything ran.
    pub fn unread(output: &'a ToolOutput) -> Self {
        Answer {
            text: &output.text,
            is_error: true,
            status: CallStatus::Refused,
            metadata: &output.metadata,
        }
    }
}

/// One line of `lathe tool --batch`: `{"name": "tool", "arguments": {...}}` (`tool`, and
/// `args` or `input`, are taken too).
#[derive(Debug, Deserialize)]
pub struct BatchLine {
    /// The tool.
    #[serde(alias = "tool")]
    pub name: String,
    /// Its arguments.
    #[serde(default, alias = "args", alias = "input")]
    pub arguments: Value,
}

impl BatchLine {
    /// The call on `line`; `None` for a blank line, `Err` for one that is not a call (what is
    /// wrong with it).
    pub fn parse(line: &[u8]) -> Option<Result<BatchLine, String>> {
        match std::str::from_utf8(line) {
            Ok(text) if text.trim().is_empty() => None,
            Ok(text) => Some(serde_json::from_str(text).map_err(|err| err.to_string())),
            Err(err) => Some(Err(format!("the line is not valid UTF-8: {err}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_lines_take_the_aliases_and_say_what_is_wrong() {
        let call = BatchLine::parse(br#"{"tool": "read_file", "args": {"path": "a"}}"#)
            .unwrap()
            .unwrap();
        assert_eq!(call.name, "read_file");
        assert_eq!(call.arguments["path"], "a");
        assert!(BatchLine::parse(b"  \n").is_none());
        let err = BatchLine::parse(b"\xff").unwrap().unwrap_err();
        assert!(err.starts_with("the line is not valid UTF-8"), "{err}");
        assert!(BatchLine::parse(b"[1]").unwrap().is_err());
    }
}
