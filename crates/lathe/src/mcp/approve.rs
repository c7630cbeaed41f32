//! Asking the client when the gate says "ask": MCP elicitation where the client declared it
//! (a server-to-client `elicitation/create` request on handshake-era connections; an
//! `InputRequiredResult` that the client answers by retrying the call on 2026-07-28 and later),
//! otherwise an in-band refusal that says how to allow the call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use lathe_tools::{PreparedCall, Session};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationSchema, InputRequest, InputRequests, InputRequiredResult,
    ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_policy::ApprovalMode;

/// The key of the approval request inside an `InputRequiredResult`.
const INPUT_KEY: &str = "approval";
/// Pending approvals kept per session; older ones are forgotten (the client never retried).
const MAX_PENDING: usize = 64;
/// The longest rendering of a call (its diff or arguments) shown in a prompt.
const MAX_SHOWN_DETAIL: usize = 4_000;

/// The outcome of asking.
#[derive(Debug)]
pub enum Approval {
    /// Run the call; `remember` when the person allowed its scope for the rest of the session.
    Approved {
        /// Allow the same scope without asking again in this session.
        remember: bool,
    },
    /// Do not run it; the text is what the model reads.
    Refused(String),
    /// Return this to the client, which asks its user and retries the call.
    NeedsInput(Box<InputRequiredResult>),
}

/// What would let an asking call run without asking, worked out by deciding the same call
/// under changed settings (so a refusal never suggests something that would not help).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advice {
    /// The `[permissions]` allow rules of the question's scopes would allow it.
    pub rules: bool,
    /// This mode (`auto` or `full`) would allow it.
    pub mode: Option<ApprovalMode>,
}

/// What is asked, and how a refusal explains itself.
pub struct Question<'a> {
    /// The call.
    pub call: &'a PreparedCall,
    /// Why it needs approval.
    pub reason: &'a str,
    /// The allow rules that would cover the call (empty: none would).
    pub scopes: &'a [String],
    /// How long a "remember" answer would last, as the prompt says it (`None`: nothing is
    /// remembered here, and remembering is not offered: there is no per-client session, as
    /// with stateless requests over HTTP, which any client of the server can send).
    pub remember: Option<&'a str>,
    /// What would let the call run without asking.
    pub advice: Advice,
    /// What the call would do, for the person asked: a diff for edits, else the arguments.
    pub detail: &'a str,
}

/// What `call` would do, shown when asking: the diff of an edit when it can be worked out
/// beforehand, else the arguments.
pub async fn describe(call: &PreparedCall, session: &Arc<Session>) -> String {
    if call.kind == lathe_tools::ToolKind::Edit {
        let name = call.name;
        let arguments = call.arguments.clone();
        let session = Arc::clone(session);
        // Reads the file: off the async threads.
        let preview = tokio::task::spawn_blocking(move || {
            lathe_agent::approval::preview_edit(name, &arguments, session.workspace())
        })
        .await
        .ok()
        .flatten();
        if let Some(preview) = preview {
            return cut(
                format!(
                    "{} (+{} -{})\n{}",
                    preview.path, preview.added, preview.removed, preview.diff
                ),
                "diff",
            );
        }
    }
    shown_arguments(&call.arguments)
}

/// Asks the client about `question`, or refuses when it cannot be asked.
pub async fn ask(
    context: &RequestContext<RoleServer>,
    request: &CallToolRequestParams,
    session: &Session,
    question: Question<'_>,
    cancel: &CancellationToken,
) -> Approval {
    let capabilities = context.client_capabilities();
    if !supports_form_elicitation(capabilities.as_ref()) {
        return Approval::Refused(cannot_ask(&question));
    }
    let params = match elicitation(&question) {
        Ok(params) => params,
        Err(err) => return Approval::Refused(format!("cannot build the approval request: {err}")),
    };
    if is_modern(context) {
        let pending = PendingApprovals::of(session);
        if let Some(state) = request.request_state.as_deref()
            && pending.take(state, question.call)
        {
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(INPUT_KEY))
                .cloned();
            return match answer {
                Some(answer) => match serde_json::from_value::<ElicitResult>(answer) {
                    Ok(result) => judge(&result, &question),
                    Err(err) => Approval::Refused(format!(
                        "the client's answer to the approval request is malformed ({err}); the call was not run"
                    )),
                },
                None => Approval::Refused(
                    "the client retried without answering the approval request; the call was not run"
                        .into(),
                ),
            };
        }
        let state = pending.insert(question.call);
        let mut requests = InputRequests::new();
        requests.insert(
            INPUT_KEY.to_owned(),
            InputRequest::Elicitation(ElicitRequest::new(params)),
        );
        return Approval::NeedsInput(Box::new(InputRequiredResult::new(
            Some(requests),
            Some(state),
        )));
    }
    let answer = tokio::select! {
        answer = context.peer.create_elicitation(params) => answer,
        () = cancel.cancelled() => {
            return Approval::Refused("the call was cancelled while waiting for approval".into());
        }
    };
    match answer {
        Ok(result) => judge(&result, &question),
        Err(err) => Approval::Refused(format!(
            "the call needs approval and asking the client failed ({err}). {}",
            how_to_allow(&question)
        )),
    }
}

fn judge(result: &ElicitResult, question: &Question<'_>) -> Approval {
    match result.action {
        ElicitationAction::Accept => Approval::Approved {
            // Only what was offered: an answer that says "remember" where the prompt did not
            // offer it (a hand-written client, a stateless request) approves this call alone.
            remember: offers_remember(question)
                && result
                    .content
                    .as_ref()
                    .and_then(|content| content.get("remember"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
        },
        ElicitationAction::Decline => Approval::Refused(format!(
            "the user denied this: {}. Do not retry the same call; ask the user or choose another way",
            question.reason
        )),
        _ => Approval::Refused(format!(
            "the user dismissed the approval request for this call ({}); it was not run",
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

fn is_modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
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
            question.call.name, question.reason, question.detail,
        ),
        requested_schema: schema,
    })
}

fn shown_arguments(arguments: &Value) -> String {
    cut(
        serde_json::to_string_pretty(arguments).unwrap_or_default(),
        "arguments",
    )
}

fn cut(text: String, what: &str) -> String {
    if text.chars().count() <= MAX_SHOWN_DETAIL {
        return text;
    }
    let kept: String = text.chars().take(MAX_SHOWN_DETAIL).collect();
    format!("{kept}\n[... rest of the {what} cut]")
}

fn cannot_ask(question: &Question<'_>) -> String {
    format!(
        "this call needs approval ({}), and this MCP client cannot be asked: it did not declare \
         the elicitation capability. The call was not run. {}",
        question.reason,
        how_to_allow(question)
    )
}

fn how_to_allow(question: &Question<'_>) -> String {
    let rules = question.scopes.join("`, `");
    let advice = question.advice;
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
    name: &'static str,
    arguments: Value,
}

impl PendingApprovals {
    /// The pending approvals of `session`.
    pub fn of(session: &Session) -> Arc<PendingApprovals> {
        session.extension(PendingApprovals::default)
    }

    fn insert(&self, call: &PreparedCall) -> String {
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
                name: call.name,
                arguments: call.arguments.clone(),
            },
        );
        handle
    }

    /// Consumes the pending approval `handle` if it was issued for `call`.
    fn take(&self, handle: &str, call: &PreparedCall) -> bool {
        let mut pending = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        match pending.by_handle.get(handle) {
            Some(issued) if issued.name == call.name && issued.arguments == call.arguments => {
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
    use lathe_tools::ToolKind;

    fn call(command: &str) -> PreparedCall {
        PreparedCall {
            name: "shell",
            arguments: json!({"command": command}),
            kind: ToolKind::Execute,
        }
    }

    #[test]
    fn a_pending_approval_only_answers_the_call_it_was_issued_for() {
        let pending = PendingApprovals::default();
        let handle = pending.insert(&call("rm -rf build"));
        assert!(!pending.take(&handle, &call("rm -rf /")));
        assert!(!pending.take("forged", &call("rm -rf build")));
        assert!(pending.take(&handle, &call("rm -rf build")));
        assert!(!pending.take(&handle, &call("rm -rf build")), "single use");
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
        let call = call("git push --force");
        let scopes = vec!["shell(git push *)".to_owned()];
        let mut question = Question {
            call: &call,
            reason: "`git push --force` publishes",
            scopes: &scopes,
            remember: Some("while this connection lasts"),
            advice: Advice {
                rules: true,
                mode: Some(ApprovalMode::Full),
            },
            detail: "{}",
        };
        let text = cannot_ask(&question);
        assert!(text.contains("[permissions]"), "{text}");
        assert!(text.contains("shell(git push *)"), "{text}");
        assert!(text.contains("--approval full"), "{text}");
        assert!(elicitation(&question).is_ok());

        question.advice = Advice {
            rules: true,
            mode: None,
        };
        let text = cannot_ask(&question);
        assert!(
            text.contains("shell(git push *)") && !text.contains("--approval"),
            "{text}"
        );

        question.advice = Advice {
            rules: false,
            mode: None,
        };
        let text = cannot_ask(&question);
        assert!(
            !text.contains("[permissions]") && !text.contains("--approval"),
            "nothing that would not help: {text}"
        );
        assert!(text.contains("cannot run here"), "{text}");
    }

    #[test]
    fn remembering_is_offered_and_honoured_only_where_a_session_lasts() {
        let call = call("git push");
        let scopes = vec!["shell(git push *)".to_owned()];
        let advice = Advice {
            rules: true,
            mode: None,
        };
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

        let lasting = Question {
            call: &call,
            reason: "publishes",
            scopes: &scopes,
            remember: Some("while this connection lasts"),
            advice,
            detail: "{}",
        };
        let offered = schema(&lasting);
        let description = offered["properties"]["remember"]["description"]
            .as_str()
            .unwrap();
        assert!(
            description.ends_with("while this connection lasts"),
            "{description}"
        );
        assert!(matches!(
            judge(&accept, &lasting),
            Approval::Approved { remember: true }
        ));

        let stateless = Question {
            remember: None,
            ..lasting
        };
        assert!(schema(&stateless)["properties"].get("remember").is_none());
        assert!(matches!(
            judge(&accept, &stateless),
            Approval::Approved { remember: false }
        ));
    }
}
