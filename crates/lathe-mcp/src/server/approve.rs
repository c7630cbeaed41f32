//! Asking the client when the gate says "ask": the dispatcher's [`Approver`] for `lathe mcp`.
//!
//! MCP elicitation where the client declared it (a server-to-client `elicitation/create`
//! request on handshake-era connections; an `InputRequiredResult` that the client answers by
//! retrying the call on 2026-07-28 and later), otherwise an in-band refusal that says how to
//! allow the call. What is asked about (the description, the diff of the plan, the rules
//! "always" would remember) comes from the dispatcher's [`ApprovalRequest`].

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use lathe_policy::ApprovalMode;
use lathe_runtime::dispatch::{ApprovalDecision, ApprovalRequest, Approver};
use lathe_runtime::{Registry, Session};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult,
    ProtocolVersion,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use serde_json::{Value, json};

use super::gate::GateConfig;

/// The key of the approval request inside an `InputRequiredResult`.
const INPUT_KEY: &str = "approval";
/// Pending approvals kept per session; older ones are forgotten (the client never retried).
const MAX_PENDING: usize = 64;
/// The longest rendering of a call (its diff or arguments) shown in a prompt.
const MAX_SHOWN_DETAIL: usize = 4_000;

/// What would let an asking call run without asking, worked out by deciding the same call
/// under changed settings (so a refusal never suggests something that would not help).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Advice {
    /// The `[permissions]` allow rules of the question's scopes would allow it.
    pub rules: bool,
    /// This mode (`auto` or `full`) would allow it.
    pub mode: Option<ApprovalMode>,
}

/// Asks an MCP client about the calls of one `tools/call` request.
///
/// A client on the 2026-07-28 lifecycle is not asked while the call waits: it is handed an
/// `InputRequiredResult` and retries the call with the answer. The approver then denies the
/// call for now and keeps that result; the server returns it instead of the denial
/// ([`ElicitationApprover::take_input_required`]).
pub struct ElicitationApprover<'a> {
    /// The client's capabilities, as it declared them for this request.
    capabilities: Option<ClientCapabilities>,
    /// The request speaks the 2026-07-28 lifecycle (or later).
    modern: bool,
    peer: Peer<RoleServer>,
    request: &'a CallToolRequestParams,
    session: &'a Arc<Session>,
    /// For the advice of a refusal.
    registry: &'a Registry,
    gates: &'a GateConfig,
    /// How long a "remember" answer lasts here, as the prompt says it; `None` where nothing
    /// would hold it.
    remember: Option<&'static str>,
    input_required: Mutex<Option<Box<InputRequiredResult>>>,
    asked: AtomicBool,
}

impl<'a> ElicitationApprover<'a> {
    /// An approver for `request`, made in `context`, running in `session`. `remember` says how
    /// long an "always" answer lasts (`None`: it is not offered, as for stateless requests
    /// over HTTP, which any client of the server can send).
    pub fn new(
        context: &RequestContext<RoleServer>,
        request: &'a CallToolRequestParams,
        session: &'a Arc<Session>,
        registry: &'a Registry,
        gates: &'a GateConfig,
        remember: Option<&'static str>,
    ) -> Self {
        ElicitationApprover {
            capabilities: context.client_capabilities(),
            modern: context
                .protocol_version()
                .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str()),
            peer: context.peer.clone(),
            request,
            session,
            registry,
            gates,
            remember,
            input_required: Mutex::new(None),
            asked: AtomicBool::new(false),
        }
    }

    /// The `InputRequiredResult` to return instead of the call's result, when the client was
    /// asked to retry with an answer.
    pub fn take_input_required(&self) -> Option<Box<InputRequiredResult>> {
        self.input_required
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Whether the dispatcher asked this approver (the gate said "ask"): a denial after that
    /// is the person's or the client's, not the policy's.
    pub fn asked(&self) -> bool {
        self.asked.load(Ordering::Relaxed)
    }

    async fn ask(&self, request: &ApprovalRequest) -> ApprovalDecision {
        self.asked.store(true, Ordering::Relaxed);
        let question = Question::of(request, self.remember);
        if !supports_form_elicitation(self.capabilities.as_ref()) {
            return refuse(cannot_ask(&question, self.advice(request)));
        }
        let params = match elicitation(&question) {
            Ok(params) => params,
            Err(err) => return refuse(format!("cannot build the approval request: {err}")),
        };
        if self.modern {
            return self.ask_by_retry(request, &question, params);
        }
        match self.peer.create_elicitation(params).await {
            Ok(result) => judge(&result, &question),
            Err(err) => refuse(format!(
                "the call needs approval and asking the client failed ({err}). {}",
                how_to_allow(&question, self.advice(request))
            )),
        }
    }

    /// The 2026-07-28 way: answer the retry that carries the client's answer, or hand the
    /// client the question.
    fn ask_by_retry(
        &self,
        request: &ApprovalRequest,
        question: &Question<'_>,
        params: ElicitRequestParams,
    ) -> ApprovalDecision {
        let pending = PendingApprovals::of(self.session);
        if let Some(state) = self.request.request_state.as_deref()
            && pending.take(state, &request.tool, &request.arguments)
        {
            let answer = self
                .request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(INPUT_KEY))
                .cloned();
            return match answer {
                Some(answer) => match serde_json::from_value::<ElicitResult>(answer) {
                    Ok(result) => judge(&result, question),
                    Err(err) => refuse(format!(
                        "the client's answer to the approval request is malformed ({err}); the \
                         call was not run"
                    )),
                },
                None => refuse(
                    "the client retried without answering the approval request; the call was \
                     not run",
                ),
            };
        }
        let state = pending.insert(&request.tool, &request.arguments);
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        *self
            .input_required
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(Box::new(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )));
        // Never read by the model: the server returns the question instead.
        refuse("the client was asked to approve this call and to retry it; it did not run")
    }

    /// What would let the call run without asking, decided on the same call under changed
    /// settings.
    fn advice(&self, request: &ApprovalRequest) -> Advice {
        // The request carries the normalised arguments; binding them again is cheap.
        match self
            .registry
            .prepare(&request.tool, request.arguments.clone(), self.session)
        {
            Ok(call) => self.gates.advice(&call, self.session, &request.rules),
            Err(_) => Advice::default(),
        }
    }
}

impl Approver for ElicitationApprover<'_> {
    fn approve<'b>(&'b self, request: &'b ApprovalRequest) -> BoxFuture<'b, ApprovalDecision> {
        Box::pin(self.ask(request))
    }
}

/// The person said no (declined or dismissed the question): the model reads that the user
/// denied the call.
fn deny(message: impl Into<String>) -> ApprovalDecision {
    ApprovalDecision::Deny {
        message: Some(message.into()),
    }
}

/// Nobody answered (the client cannot ask, asking failed, the answer was unusable): the model
/// reads `message` as it is, never that the user denied the call.
fn refuse(message: impl Into<String>) -> ApprovalDecision {
    ApprovalDecision::Refused {
        message: message.into(),
    }
}

/// What is asked, and how a refusal explains itself.
struct Question<'a> {
    /// The tool.
    tool: &'a str,
    /// Why it needs approval.
    reason: String,
    /// The allow rules that would cover the call (empty: none would).
    scopes: &'a [String],
    /// How long a "remember" answer would last, as the prompt says it (`None`: nothing is
    /// remembered here, and remembering is not offered).
    remember: Option<&'a str>,
    /// What the call would do, for the person asked: the plan's diff, else the arguments.
    detail: String,
}

impl<'a> Question<'a> {
    fn of(request: &'a ApprovalRequest, remember: Option<&'a str>) -> Self {
        let mut detail = match &request.diff {
            Some(diff) => cut(format!("{}\n{diff}", request.description), "diff"),
            None => cut(
                serde_json::to_string_pretty(&request.arguments).unwrap_or_default(),
                "arguments",
            ),
        };
        if let Some(failure) = &request.would_fail {
            detail.push_str(&format!("\nIf allowed, it would fail: {failure}"));
        }
        Question {
            tool: &request.tool,
            reason: request.reasons.join("; "),
            scopes: &request.rules,
            remember,
            detail,
        }
    }
}

fn judge(result: &ElicitResult, question: &Question<'_>) -> ApprovalDecision {
    match result.action {
        // Only what was offered: an answer that says "remember" where the prompt did not offer
        // it (a hand-written client, a stateless request) approves this call alone.
        ElicitationAction::Accept
            if offers_remember(question)
                && result
                    .content
                    .as_ref()
                    .and_then(|content| content.get("remember"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false) =>
        {
            ApprovalDecision::AllowSession
        }
        ElicitationAction::Accept => ApprovalDecision::AllowOnce,
        ElicitationAction::Decline => deny(format!(
            "{}. Do not retry the same call; ask the user or choose another way",
            question.reason
        )),
        _ => deny(format!(
            "they dismissed the approval request for this call ({}); it was not run",
            question.reason
        )),
    }
}

/// Whether the client can answer a form elicitation. A bare `elicitation: {}` means form, as
/// the 2025-06-18 revision defined it.
pub fn supports_form_elicitation(capabilities: Option<&ClientCapabilities>) -> bool {
    capabilities
        .and_then(|caps| caps.elicitation.as_ref())
        .is_some_and(|elicitation| {
            elicitation.form.is_some() || (elicitation.form.is_none() && elicitation.url.is_none())
        })
}

fn offers_remember(question: &Question<'_>) -> bool {
    question.remember.is_some() && !question.scopes.is_empty()
}

fn elicitation(question: &Question<'_>) -> Result<ElicitRequestParams, serde_json::Error> {
    let properties = match question.remember {
        Some(lasting) if offers_remember(question) => json!({
            "remember": {
                "type": "boolean",
                "title": "Also allow similar calls from now on",
                "description": format!(
                    "Also allow {} without asking again {lasting}",
                    question.scopes.join(", ")
                ),
                "default": false,
            }
        }),
        _ => json!({}),
    };
    let schema: ElicitationSchema =
        serde_json::from_value(json!({"type": "object", "properties": properties}))?;
    Ok(ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: format!(
            "Lathe asks before running `{}` ({}).\n{}\nAccept to run it once; decline to refuse it.",
            question.tool, question.reason, question.detail,
        ),
        requested_schema: schema,
    })
}

fn cut(text: String, what: &str) -> String {
    if text.chars().count() <= MAX_SHOWN_DETAIL {
        return text;
    }
    let kept: String = text.chars().take(MAX_SHOWN_DETAIL).collect();
    format!("{kept}\n[... rest of the {what} cut]")
}

fn cannot_ask(question: &Question<'_>, advice: Advice) -> String {
    format!(
        "this call needs approval ({}), and this MCP client cannot be asked: it did not declare \
         the elicitation capability. The call was not run. {}",
        question.reason,
        how_to_allow(question, advice)
    )
}

fn how_to_allow(question: &Question<'_>, advice: Advice) -> String {
    let rules = question.scopes.join("`, `");
    let ways = match (advice.rules && !rules.is_empty(), advice.mode) {
        (true, Some(mode)) => format!(
            "the user can add `{rules}` to `allow` under `[permissions]` in .lathe/config.toml, \
             or restart `lathe mcp` with `--approval {mode}`"
        ),
        (true, None) => format!(
            "the user can add `{rules}` to `allow` under `[permissions]` in .lathe/config.toml"
        ),
        (false, Some(mode)) => {
            format!("the user can restart `lathe mcp` with `--approval {mode}`")
        }
        (false, None) => {
            return "It always needs the user's approval (no rule or mode allows it), and \
                    nobody can be asked over this connection, so it cannot run here: tell the \
                    user what you wanted to do and let them do it, or use an MCP client that \
                    supports elicitation."
                .to_owned();
        }
    };
    format!("To allow it, {ways}. Tell the user; do not retry the same call until they have.")
}

/// Approvals asked through `InputRequiredResult`, waiting for the client's retry. The state
/// handed to the client is an opaque handle; the call it was issued for is kept here, so an
/// answer only ever approves the very call (tool and arguments) that was shown.
#[derive(Default)]
pub struct PendingApprovals {
    entries: Mutex<Pending>,
}

#[derive(Default)]
struct Pending {
    issued: u64,
    by_handle: HashMap<String, Issued>,
}

/// The call an approval handle was issued for, and when (for forgetting the oldest).
struct Issued {
    order: u64,
    tool: String,
    arguments: Value,
}

impl PendingApprovals {
    /// The pending approvals of `session`.
    pub fn of(session: &Session) -> Arc<PendingApprovals> {
        session.extension(PendingApprovals::default)
    }

    fn insert(&self, tool: &str, arguments: &Value) -> String {
        let mut pending = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        pending.issued += 1;
        let order = pending.issued;
        let handle = format!("lathe-approval-{:016x}{order:016x}", fastrand::u64(..));
        if pending.by_handle.len() >= MAX_PENDING
            && let Some(oldest) = pending
                .by_handle
                .iter()
                .min_by_key(|(_, issued)| issued.order)
                .map(|(k, _)| k.clone())
        {
            pending.by_handle.remove(&oldest);
        }
        pending.by_handle.insert(
            handle.clone(),
            Issued {
                order,
                tool: tool.to_owned(),
                arguments: arguments.clone(),
            },
        );
        handle
    }

    /// Consumes the pending approval `handle` if it was issued for this call.
    fn take(&self, handle: &str, tool: &str, arguments: &Value) -> bool {
        let mut pending = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match pending.by_handle.get(handle) {
            Some(issued) if issued.tool == tool && issued.arguments == *arguments => {
                pending.by_handle.remove(handle);
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(command: &str) -> Value {
        json!({"command": command})
    }

    fn question<'a>(scopes: &'a [String], remember: Option<&'a str>) -> Question<'a> {
        Question {
            tool: "shell",
            reason: "`git push --force` publishes".into(),
            scopes,
            remember,
            detail: "{}".into(),
        }
    }

    #[test]
    fn a_pending_approval_only_answers_the_call_it_was_issued_for() {
        let pending = PendingApprovals::default();
        let handle = pending.insert("shell", &shell("rm -rf build"));
        assert!(!pending.take(&handle, "shell", &shell("rm -rf /")));
        assert!(!pending.take(&handle, "write_file", &shell("rm -rf build")));
        assert!(!pending.take("forged", "shell", &shell("rm -rf build")));
        assert!(pending.take(&handle, "shell", &shell("rm -rf build")));
        assert!(
            !pending.take(&handle, "shell", &shell("rm -rf build")),
            "single use"
        );
    }

    #[test]
    fn elicitation_capability_forms() {
        let caps = |value: Value| serde_json::from_value::<ClientCapabilities>(value).unwrap();
        assert!(!supports_form_elicitation(None));
        assert!(!supports_form_elicitation(Some(&caps(json!({})))));
        assert!(supports_form_elicitation(Some(&caps(
            json!({"elicitation": {}})
        ))));
        assert!(supports_form_elicitation(Some(&caps(
            json!({"elicitation": {"form": {}}})
        ))));
        assert!(!supports_form_elicitation(Some(&caps(
            json!({"elicitation": {"url": {}}})
        ))));
    }

    #[test]
    fn refusals_say_how_to_allow() {
        let scopes = vec!["shell(git push *)".to_owned()];
        let question = question(&scopes, Some("while this connection lasts"));
        let both = Advice {
            rules: true,
            mode: Some(ApprovalMode::Full),
        };
        let text = cannot_ask(&question, both);
        assert!(text.contains("[permissions]"), "{text}");
        assert!(text.contains("shell(git push *)"), "{text}");
        assert!(text.contains("--approval full"), "{text}");
        assert!(elicitation(&question).is_ok());

        let rules_only = Advice {
            rules: true,
            mode: None,
        };
        let text = cannot_ask(&question, rules_only);
        assert!(
            text.contains("shell(git push *)") && !text.contains("--approval"),
            "{text}"
        );

        let text = cannot_ask(&question, Advice::default());
        assert!(
            !text.contains("[permissions]") && !text.contains("--approval"),
            "nothing that would not help: {text}"
        );
        assert!(text.contains("cannot run here"), "{text}");
    }

    #[test]
    fn the_question_shows_the_plan_and_why_it_would_fail() {
        let request = ApprovalRequest {
            call_id: "1".into(),
            tool: "edit_file".into(),
            arguments: json!({"path": "a.txt"}),
            description: "edit_file a.txt (+1 -1)".into(),
            reasons: vec!["ask mode asks".into(), "a.txt: edits".into()],
            changes: vec![],
            diff: Some("--- a/a.txt\n+++ b/a.txt\n-one\n+two\n".into()),
            scope: "edit(a.txt)".into(),
            rules: vec!["edit(a.txt)".into()],
            would_fail: None,
        };
        let question = Question::of(&request, None);
        assert_eq!(question.reason, "ask mode asks; a.txt: edits");
        assert!(
            question
                .detail
                .starts_with("edit_file a.txt (+1 -1)\n--- a/a.txt"),
            "{}",
            question.detail
        );
        let failing = ApprovalRequest {
            diff: None,
            would_fail: Some("`one` is not in a.txt".into()),
            ..request
        };
        let question = Question::of(&failing, None);
        assert!(
            question.detail.contains("\"path\": \"a.txt\""),
            "{}",
            question.detail
        );
        assert!(
            question
                .detail
                .ends_with("If allowed, it would fail: `one` is not in a.txt"),
            "{}",
            question.detail
        );
    }

    #[test]
    fn remembering_is_offered_and_honoured_only_where_a_session_lasts() {
        let scopes = vec!["shell(git push *)".to_owned()];
        let accept = serde_json::from_value::<ElicitResult>(
            json!({"action": "accept", "content": {"remember": true}}),
        )
        .unwrap();
        let schema = |question: &Question<'_>| match elicitation(question).unwrap() {
            ElicitRequestParams::FormElicitationParams {
                requested_schema, ..
            } => serde_json::to_value(requested_schema).unwrap(),
            other => panic!("{other:?}"),
        };

        let lasting = question(&scopes, Some("while this connection lasts"));
        let offered = schema(&lasting);
        let description = offered["properties"]["remember"]["description"]
            .as_str()
            .unwrap();
        assert!(
            description.ends_with("while this connection lasts"),
            "{description}"
        );
        assert_eq!(judge(&accept, &lasting), ApprovalDecision::AllowSession);

        let stateless = question(&scopes, None);
        assert!(schema(&stateless)["properties"].get("remember").is_none());
        assert_eq!(judge(&accept, &stateless), ApprovalDecision::AllowOnce);

        // Nothing to remember (a critical command): not offered, not honoured.
        let unrememberable = question(&[], Some("while this connection lasts"));
        assert!(
            schema(&unrememberable)["properties"]
                .get("remember")
                .is_none()
        );
        assert_eq!(judge(&accept, &unrememberable), ApprovalDecision::AllowOnce);
    }

    #[test]
    fn declining_and_dismissing_deny_with_the_reason() {
        let answer = |action: &str| {
            serde_json::from_value::<ElicitResult>(json!({"action": action})).unwrap()
        };
        let question = question(&[], None);
        let ApprovalDecision::Deny {
            message: Some(declined),
        } = judge(&answer("decline"), &question)
        else {
            panic!("decline denies");
        };
        assert!(declined.starts_with("`git push --force` publishes. Do not retry"));
        let ApprovalDecision::Deny {
            message: Some(dismissed),
        } = judge(&answer("cancel"), &question)
        else {
            panic!("cancel denies");
        };
        assert!(dismissed.contains("dismissed"), "{dismissed}");
    }
}
