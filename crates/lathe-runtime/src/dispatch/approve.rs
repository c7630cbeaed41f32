//! Approvers: who says yes to a call the gate asks about.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::FileChange;

/// What an approver is asked.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ApprovalRequest {
    /// The call's id (the model's, or one the caller gave it).
    pub call_id: String,
    /// The tool, as registered.
    pub tool: String,
    /// The normalised arguments.
    pub arguments: Value,
    /// What the call would do, in one line for humans: `shell rm -rf build`,
    /// `edit_file src/a.rs (+3 -1)`.
    pub description: String,
    /// Why it asks (`dangerous: removes files recursively`).
    pub reasons: Vec<String>,
    /// The changes the call would make, worked out beforehand ([`crate::Tool::plan`]).
    pub changes: Vec<FileChange>,
    /// The changes' unified diffs, one after the other, when there are any.
    pub diff: Option<String>,
    /// What "always" would allow for the rest of the session, for humans:
    /// `shell(npm run test *)`, or `this call only` when it cannot be remembered.
    pub scope: String,
    /// The permission rules "always" ([`ApprovalDecision::AllowSession`]) would remember;
    /// empty when the call cannot be remembered (a critical command, a command outside the
    /// sandbox). An approver that cannot remember anything offers "always" only when this is
    /// not empty.
    pub rules: Vec<String>,
    /// Why the call would fail if allowed (its plan could not be made: the text to replace is
    /// not in the file); the person can still allow it, and the model then reads why.
    pub would_fail: Option<String>,
}

/// The answer to an approval request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this call.
    AllowOnce,
    /// Run this call and the same kind for the rest of the session.
    AllowSession,
    /// The user said no; the model reads that they did, with `message` when there is one.
    Deny {
        /// What to tell the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Nobody could be asked (no terminal, a client without elicitation): the call is not run
    /// and the model reads `message` as it is, never that a user denied it.
    Refused {
        /// What to tell the model: why nobody was asked, and what the user can do.
        message: String,
    },
}

/// Somebody who answers approval requests: a terminal prompt, an MCP client's elicitation, a
/// refusal where nobody can be asked. Requests come one at a time.
pub trait Approver: Send + Sync {
    /// Answers `request`.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision>;
}

/// The approver of a run nobody can answer: every call that would ask is denied with
/// [`NonInteractive::MESSAGE`]. Front ends that know how the user could allow such calls say so
/// with [`Refuse`] instead.
#[derive(Debug, Clone, Copy, Default)]
pub struct NonInteractive;

impl NonInteractive {
    /// What the model reads for a call denied because nobody could be asked.
    pub const MESSAGE: &'static str = "this call needs the user's approval, and nobody can be \
asked in this run, so it was not run. Do not retry it; carry on without it if you can, or finish \
and say what the user should allow";
}

impl Approver for NonInteractive {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async {
            ApprovalDecision::Refused {
                message: NonInteractive::MESSAGE.to_owned(),
            }
        })
    }
}

/// Denies every request with a message of the front end's (which can name its own flags and
/// configuration: `rerun with --approval auto`).
#[derive(Debug, Clone)]
pub struct Refuse(pub String);

impl Approver for Refuse {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        let message = self.0.clone();
        Box::pin(async move { ApprovalDecision::Refused { message } })
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

/// The result the model reads for a call the policy refused (a deny rule, the read-only mode):
/// nobody was asked, so it does not say the user denied it. `reason` says how the user could
/// allow it.
pub fn policy_denial_text(reason: &str) -> String {
    format!("denied by Lathe's policy: {reason}")
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
        // The policy's refusals do not say the user denied them.
        assert_eq!(
            policy_denial_text("read-only mode allows only reading"),
            "denied by Lathe's policy: read-only mode allows only reading"
        );
    }

    #[tokio::test]
    async fn refusers_deny_with_their_message() {
        let request = ApprovalRequest {
            call_id: "c1".into(),
            tool: "shell".into(),
            arguments: serde_json::json!({"command": "make"}),
            description: "shell make".into(),
            reasons: vec![],
            changes: vec![],
            diff: None,
            scope: "shell(make *)".into(),
            rules: vec!["shell(make *)".into()],
            would_fail: None,
        };
        // Nobody was asked, so neither says a user denied the call.
        let deny = |message: &str| ApprovalDecision::Refused {
            message: message.to_owned(),
        };
        assert_eq!(
            NonInteractive.approve(&request).await,
            deny(NonInteractive::MESSAGE)
        );
        assert_eq!(
            Refuse("rerun with --approval auto".into())
                .approve(&request)
                .await,
            deny("rerun with --approval auto")
        );
    }
}
