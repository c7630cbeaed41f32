//! Approvals: who says yes to a call that changes things.
//!
//! The [`Gate`] decides, for each prepared call, whether it runs, is refused, or needs somebody
//! to say yes; an [`Approver`] is that somebody: a terminal prompt in `lathe chat`, a refusal in
//! `lathe exec` without a terminal ([`NonInteractive`]), a fixed answer in tests.

mod diff;
mod gate;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

pub use crate::events::ApprovalDecision;
pub use diff::{EditPreview, preview_edit};
pub use gate::{Gate, Verdict, analysis_home};

/// How much runs without asking: `read-only`, `ask` (the default), `auto`, `full`. The same
/// modes `lathe policy check` and `lathe mcp` use.
pub use lathe_policy::ApprovalMode;

/// What an approver is asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The call's id (the model's, or one the runner gave it).
    pub call_id: String,
    /// The tool, as registered.
    pub tool: String,
    /// The normalised arguments.
    pub arguments: Value,
    /// What the call would do, in one line for humans: `shell rm -rf build`.
    pub description: String,
    /// Why it asks (`dangerous: removes files recursively`).
    pub reasons: Vec<String>,
    /// A unified diff, for edits whose result can be worked out beforehand.
    pub diff: Option<String>,
    /// What "always" would allow for the rest of the session, for humans:
    /// `shell(npm run test *)`, or `this call only` when it cannot be remembered.
    pub scope: String,
}

/// Somebody who answers approval requests. Requests come one at a time.
pub trait Approver: Send + Sync {
    /// Answers `request`.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision>;
}

/// The approver of a run nobody can answer (`lathe exec` without a terminal): every call that
/// would ask is denied, with a message that tells the model why and the user how to allow it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NonInteractive;

/// What the model reads when a call was denied because nobody could be asked.
pub const NON_INTERACTIVE_DENIAL: &str = "this call needs the user's approval, and this run has no \
terminal to ask on, so it was not run. Do not retry it; carry on without it if you can, or finish \
and say what the user should do (they can rerun with --approval auto, or allow it with a \
[permissions] rule in .lathe/config.toml)";

impl Approver for NonInteractive {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async {
            ApprovalDecision::Deny {
                message: Some(NON_INTERACTIVE_DENIAL.to_owned()),
            }
        })
    }
}

/// An approver that gives the same answer to everything (for tests and scripted runs).
#[derive(Debug, Clone)]
pub struct FixedAnswer(pub ApprovalDecision);

impl Approver for FixedAnswer {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let answer = self.0.clone();
        Box::pin(async move { answer })
    }
}

/// The result the model reads for a call the user denied.
pub fn denial_text(message: Option<&str>) -> String {
    match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(message) => format!("the user denied this: {message}"),
        None => "the user denied this: no reason given. Do not retry the same call; \
                 ask what they want instead, or try another way"
            .to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denial_text_names_the_reason() {
        assert_eq!(
            denial_text(Some("use the test database")),
            "the user denied this: use the test database"
        );
        assert!(denial_text(Some("  ")).starts_with("the user denied this: no reason given"));
        assert!(denial_text(None).starts_with("the user denied this:"));
    }

    #[tokio::test]
    async fn non_interactive_denies_with_a_message() {
        let request = ApprovalRequest {
            call_id: "c1".into(),
            tool: "shell".into(),
            arguments: serde_json::json!({"command": "make"}),
            description: "shell make".into(),
            reasons: vec![],
            diff: None,
            scope: "shell(make *)".into(),
        };
        let answer = NonInteractive.approve(&request).await;
        let ApprovalDecision::Deny {
            message: Some(message),
        } = answer
        else {
            panic!("expected a denial with a message, got {answer:?}");
        };
        assert!(message.contains("--approval auto"), "{message}");
    }
}
