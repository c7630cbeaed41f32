//! `/pending`, `/apply` and `/discard`: the changes a tool previewed, listed, made or dropped
//! by the user, and the line after a turn that left some.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use lathe_agent::Agent;
use lathe_runtime::{ApprovalDecision, CallStatus, FixedAnswer, Session, Tool, ToolContext};
use lathe_tools::resolve::ResolveTool;

use crate::render::{Style, sanitize};

/// `/pending`: each pending action, oldest first, with its source, files and details.
pub fn pending_list(session: &Session, style: &Style) -> String {
    let waiting = session.pending_summaries();
    if waiting.is_empty() {
        return "nothing pending: no tool has a previewed change waiting for /apply or /discard\n"
            .to_owned();
    }
    let mut said = format!(
        "{}\n",
        style.dim(&format!(
            "{} pending, newest last (/apply and /discard take the newest):",
            plural(waiting.len(), "change")
        ))
    );
    for (n, action) in waiting.iter().enumerate() {
        said.push_str(&format!(
            "{}. {} {}\n",
            n + 1,
            style.bold(&format!("\"{}\"", sanitize(&action.label))),
            style.dim(&format!("from {}", sanitize(&action.source)))
        ));
        for change in &action.changes {
            let what = if change.created {
                " (new)"
            } else if change.deleted {
                " (removed)"
            } else {
                ""
            };
            said.push_str(&format!(
                "   {}{what} +{} -{}\n",
                sanitize(&change.path),
                change.added,
                change.removed
            ));
        }
        if let Some(details) = &action.details {
            for line in sanitize(details).lines() {
                said.push_str(&format!("   {}\n", style.dim(line)));
            }
        }
    }
    said
}

/// The line after a model turn that left changes pending; `None` when nothing waits.
pub fn pending_hint(session: &Session) -> Option<String> {
    let waiting = session.pending_summaries();
    let newest = waiting.last()?;
    let label = sanitize(&newest.label);
    let what = match waiting.len() {
        1 => format!("1 change pending: \"{label}\""),
        n => format!("{n} changes pending, newest \"{label}\""),
    };
    Some(format!("{what} · /pending · /apply · /discard"))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// How many pending actions the user resolved in this process (their calls' ids).
static RESOLVED_BY_USER: AtomicU64 = AtomicU64::new(1);

/// `/apply` and `/discard`: the model's `resolve`, called by the user through the same
/// dispatcher (the gate, the checkpoint hook, the plan's stamps). Typing `/apply` is the
/// user's approval of that one call, as a command they run themselves is; a mode that refuses
/// the change (`read-only`) refuses it here too. The model hears of it with the next message.
#[expect(clippy::disallowed_methods, reason = "the chat waits for /apply")]
pub(super) async fn resolve(
    agent: &Agent,
    apply: bool,
    reason: Option<String>,
    style: &Style,
    notes: &mut Vec<String>,
) -> String {
    let (verb, done) = if apply {
        ("apply", "applied")
    } else {
        ("discard", "discarded")
    };
    let runner = agent.executor().runner();
    let session = runner.session();
    let Some(newest) = session.pending_summaries().pop() else {
        return format!(
            "nothing pending: there is nothing to {verb} (a tool that previews a change, such as apply_patch with preview, leaves one)\n"
        );
    };
    let mut arguments = json!({ "action": verb });
    if let Some(reason) = &reason {
        arguments["reason"] = json!(reason);
    }
    let mut ctx = ToolContext::new(Arc::clone(session));
    ctx.call_id = Some(format!(
        "user-{verb}-{}",
        RESOLVED_BY_USER.fetch_add(1, Ordering::Relaxed)
    ));
    let outcome = runner
        .dispatcher()
        .call(
            ResolveTool::NAME,
            arguments,
            &FixedAnswer(ApprovalDecision::AllowOnce),
            ctx,
        )
        .await;
    let label = sanitize(&newest.label).into_owned();
    let text = sanitize(outcome.output.text.trim_end()).into_owned();
    let mut said = match outcome.status {
        CallStatus::Ok => format!("{}\n", style.green(&text)),
        CallStatus::Denied => format!(
            "{}\n{}\n",
            style.red(&format!("not {done}: {text}")),
            style.dim(&format!(
                "the approval mode is {}; /approval ask lets /apply make the change, /discard drops it",
                agent.gate().mode()
            ))
        ),
        _ => format!("{}\n", style.red(&format!("cannot {verb} \"{label}\": {text}"))),
    };
    // The change is a checkpoint step of its own, for /undo.
    if let Some(hook) = agent.executor().checkpoints() {
        match hook.end_turn() {
            Ok(Some(stat)) => said.push_str(&format!(
                "{}\n",
                style.dim(&format!(
                    "{} changed (+{} -{}) · /undo takes it back",
                    plural(stat.files, "file"),
                    stat.added,
                    stat.removed
                ))
            )),
            Ok(None) => {}
            Err(err) => said.push_str(&format!(
                "{}\n",
                style.yellow(&format!(
                    "could not record the change ({err}): /undo will not cover it"
                ))
            )),
        }
    }
    if matches!(outcome.status, CallStatus::Ok | CallStatus::Error) {
        let why = reason.map(|r| format!(" (\"{r}\")")).unwrap_or_default();
        notes.push(format!(
            "The user ran /{verb}{why} on the pending change \"{}\" (from {}) themselves: {}",
            newest.label,
            newest.source,
            outcome.output.text.trim_end()
        ));
    }
    if let Some(next) = pending_hint(session) {
        said.push_str(&format!("{}\n", style.dim(&next)));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_agent::approval::ApprovalMode;

    /// An agent (never asked: nothing listens at its server) whose session has a real
    /// pending action: write_file's own plan for `a.txt`, kept as a preview.
    fn agent_with_pending(mode: ApprovalMode) -> (tempfile::TempDir, Agent) {
        use lathe_agent::provider::{ProviderConfig, ProviderKind, RetryPolicy, connect};
        use lathe_runtime::{PendingAction, ToolConfig, Workspace};
        use lathe_tools::write_file::WriteFileTool;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        let tools = Session::new(
            Workspace::new(&root).unwrap(),
            ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        let input = serde_json::from_value(json!({"path": "a.txt", "content": "hi\n"})).unwrap();
        let plan = WriteFileTool.plan(&input, &tools).unwrap().unwrap();
        let action = PendingAction::from_plan("create a.txt", "write_file", plan)
            .with_details("one greeting");
        tools.push_pending(action).unwrap();
        let provider = connect(
            ProviderKind::Ollama,
            ProviderConfig::new("http://127.0.0.1:9").retry(RetryPolicy::none()),
        )
        .unwrap();
        let agent = Agent::builder(provider, "m", tools)
            .approval(mode)
            .build()
            .unwrap();
        (dir, agent)
    }

    #[test]
    fn pending_changes_are_listed_with_their_files_and_said_after_a_turn() {
        let (_dir, agent) = agent_with_pending(ApprovalMode::Ask);
        let session = agent.executor().runner().session();
        let listed = pending_list(session, &Style::plain());
        assert!(listed.contains("1 change pending, newest last"), "{listed}");
        assert!(
            listed.contains("1. \"create a.txt\" from write_file"),
            "{listed}"
        );
        assert!(listed.contains("a.txt (new) +1 -0"), "{listed}");
        assert!(listed.contains("one greeting"), "{listed}");
        assert_eq!(
            pending_hint(session).unwrap(),
            "1 change pending: \"create a.txt\" · /pending · /apply · /discard"
        );
    }

    #[tokio::test]
    async fn apply_in_ask_mode_is_the_users_approval_and_writes_the_file() {
        let (dir, agent) = agent_with_pending(ApprovalMode::Ask);
        let mut notes = Vec::new();
        let said = resolve(
            &agent,
            true,
            Some("looks right".into()),
            &Style::plain(),
            &mut notes,
        )
        .await;
        assert_eq!(
            std::fs::read_to_string(dir.path().join("ws/a.txt")).unwrap(),
            "hi\n",
            "{said}"
        );
        let session = agent.executor().runner().session();
        assert!(!session.has_pending(), "{said}");
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].starts_with(
                "The user ran /apply (\"looks right\") on the pending change \"create a.txt\""
            ),
            "{notes:?}"
        );
        assert!(pending_list(session, &Style::plain()).starts_with("nothing pending"));
        let again = resolve(&agent, true, None, &Style::plain(), &mut notes).await;
        assert!(
            again.starts_with("nothing pending: there is nothing to apply"),
            "{again}"
        );
        assert_eq!(notes.len(), 1, "nothing done, nothing to tell the model");
    }

    #[tokio::test]
    async fn read_only_refuses_apply_and_the_change_stays_pending() {
        let (dir, agent) = agent_with_pending(ApprovalMode::ReadOnly);
        let mut notes = Vec::new();
        let said = resolve(&agent, true, None, &Style::plain(), &mut notes).await;
        assert!(said.starts_with("not applied: "), "{said}");
        assert!(said.contains("/approval ask"), "{said}");
        assert!(!dir.path().join("ws/a.txt").exists());
        assert!(agent.executor().runner().session().has_pending());
        assert!(notes.is_empty());
        // Discarding writes nothing, so read-only allows it.
        let said = resolve(&agent, false, None, &Style::plain(), &mut notes).await;
        assert!(said.contains("Discarded: create a.txt"), "{said}");
        assert!(!dir.path().join("ws/a.txt").exists());
        assert!(!agent.executor().runner().session().has_pending());
        assert_eq!(notes.len(), 1, "{notes:?}");
    }
}
