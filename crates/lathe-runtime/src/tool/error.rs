//! Mistakes the model can fix, as a tool returns them: [`ToolError`], so that `?` works in a
//! tool's code.
//!
//! A tool's failure is not a fault of the runtime: it is a result the model reads, saying what
//! went wrong and what to do next (`cannot read src/x.rs: no such file; list the directory to
//! find it`). [`ToolError`] is that result on the `Err` side, so a tool writes
//! `fs::read(&path).or_model(|err| format!("cannot read {path}: {err}"))?` instead of a `match`
//! that returns an error result. The registry turns an `Err` back into the [`ToolOutput`]
//! everything above it handles ([`ToolOutput::is_error`] set), so nothing above the tool
//! contract tells the two apart.

use std::fmt;

use serde_json::Value;

use super::ToolOutput;

/// What [`Tool::run`](crate::Tool::run) returns: the result, or a mistake the model can fix.
pub type ToolResult = Result<ToolOutput, ToolError>;

/// A mistake the model can fix: the error result of a call ([`ToolOutput::is_error`] set), its
/// text saying what went wrong and what to do next.
///
/// It holds a whole [`ToolOutput`], so a failure can carry what the call found out (the path it
/// worked on, a failed command's metadata): build one with [`ToolError::new`] and its setters,
/// or from an output with `From` (which marks it an error). Boxed: a `Result<T, ToolError>`
/// stays as small as `T` allows, whatever a result holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError(Box<ToolOutput>);

impl ToolError {
    /// A mistake the model should read and fix: say what to do next in `text`.
    pub fn new(text: impl Into<String>) -> Self {
        ToolError(Box::new(ToolOutput::error(text)))
    }

    /// The text the model reads.
    pub fn text(&self) -> &str {
        &self.0.text
    }

    /// The error result, as the model and the front ends receive it.
    pub fn output(&self) -> &ToolOutput {
        &self.0
    }

    /// Names the file or directory the call worked on ([`ToolOutput::with_path`]).
    pub fn with_path(self, path: impl Into<String>) -> Self {
        ToolError(Box::new(self.0.with_path(path)))
    }

    /// Adds one of the tool's own metadata entries ([`ToolOutput::with_meta`]).
    pub fn with_meta(self, key: &str, value: impl Into<Value>) -> Self {
        ToolError(Box::new(self.0.with_meta(key, value)))
    }
}

impl ToolOutput {
    /// The output as a [`ToolResult`]: `Err` when it is an error result
    /// ([`ToolOutput::is_error`]), `Ok` otherwise. For an output whose failure was worked out
    /// elsewhere (an applied plan, a command's exit, another MCP server's answer).
    pub fn into_result(self) -> ToolResult {
        if self.is_error {
            Err(ToolError(Box::new(self)))
        } else {
            Ok(self)
        }
    }
}

impl From<ToolOutput> for ToolError {
    /// The output as an error result: [`ToolOutput::is_error`] is set, whatever it was.
    fn from(mut output: ToolOutput) -> Self {
        output.is_error = true;
        ToolError(Box::new(output))
    }
}

impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        *error.0
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl std::error::Error for ToolError {}

/// Turns the error of a fallible call into a [`ToolError`] in one step, worded for the model:
/// `file.read_to_string(&mut text).or_model(|err| format!("cannot read {path}: {err}"))?`.
pub trait ResultExt<T, E> {
    /// The value, or a [`ToolError`] whose text `message` makes from the error. The message is
    /// only built when there is an error.
    fn or_model<M: Into<String>>(self, message: impl FnOnce(E) -> M) -> Result<T, ToolError>;
}

impl<T, E> ResultExt<T, E> for Result<T, E> {
    fn or_model<M: Into<String>>(self, message: impl FnOnce(E) -> M) -> Result<T, ToolError> {
        self.map_err(|err| ToolError::new(message(err)))
    }
}

/// Turns a missing value into a [`ToolError`] in one step, worded for the model:
/// `session.command(id).or_model(|| format!("no command {id}; list_commands shows them"))?`.
pub trait OptionExt<T> {
    /// The value, or a [`ToolError`] whose text `message` makes. The message is only built when
    /// the value is missing.
    fn or_model<M: Into<String>>(self, message: impl FnOnce() -> M) -> Result<T, ToolError>;
}

impl<T> OptionExt<T> for Option<T> {
    fn or_model<M: Into<String>>(self, message: impl FnOnce() -> M) -> Result<T, ToolError> {
        self.ok_or_else(|| ToolError::new(message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_an_error_result_with_its_metadata() {
        let error = ToolError::new("cannot read a.txt: gone").with_path("a.txt");
        assert_eq!(error.to_string(), "cannot read a.txt: gone");
        let output = ToolOutput::from(error);
        assert!(output.is_error);
        assert_eq!(output.text, "cannot read a.txt: gone");
        assert_eq!(output.metadata.path.as_deref(), Some("a.txt"));
    }

    #[test]
    fn an_output_made_an_error_is_marked_so() {
        let error = ToolError::from(ToolOutput::ok("exit 1").with_meta("exit_code", 1));
        assert!(error.output().is_error);
        assert_eq!(error.output().metadata.extra["exit_code"], 1);
    }

    #[test]
    fn results_and_options_turn_into_errors_in_one_step() {
        let failed: Result<u8, &str> = Err("gone");
        let error = failed
            .or_model(|err| format!("cannot read: {err}"))
            .unwrap_err();
        assert_eq!(error.text(), "cannot read: gone");
        assert_eq!(Ok::<u8, &str>(1).or_model(|_| "unused").unwrap(), 1);
        let missing: Option<u8> = None;
        assert_eq!(
            missing.or_model(|| "no such command").unwrap_err().text(),
            "no such command"
        );
    }
}
