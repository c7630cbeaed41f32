//! How the loop steers a model towards a pending action (a change a tool previewed, waiting for
//! `resolve`; see [`lathe_runtime::PendingAction`]).
//!
//! While something is pending, `resolve` is among the offered tools (it is hidden otherwise),
//! and each request says that the action must be resolved first:
//!
//! - **Forced choice.** The first request after an action became the newest pending one names
//!   `resolve` as the tool the model must call ([`ChatRequest::tool_choice`]): OpenAI-compatible
//!   servers get a named `tool_choice`. Only that one request: a model whose `resolve` was denied
//!   (or that was asked to keep the preview) is free on the next turn to discard it, explain, or
//!   finish, so a refusal cannot loop. Ollama and the text protocol cannot force a tool; a server
//!   that refuses `tool_choice` is asked again without it (the provider says so once).
//! - **Reminder.** Every request while something is pending, forced or not, ends with a
//!   reminder naming the action and how to resolve it ([`reminder`]). Forcing is not enough on
//!   its own: llama.cpp's server accepts a named `tool_choice` and ignores it. The reminder is
//!   appended to the request's last message (the newest tool result, or the user's message), in
//!   the request only: the history and the store never hold it, so it is not stored twice and
//!   does not pile up turn after turn, and no chat template sees a system message in the middle
//!   of a conversation (several refuse one).
//!
//! A model that ignores both and calls other tools has them run as usual; the action stays
//! pending and the reminder comes again. A run that ends with something still pending says so:
//! [`RunReport::pending`](crate::events::RunReport::pending) and a notice. Nothing of it was
//! written; in `lathe chat` it stays pending for the next message, and `lathe exec` ends with it
//! not applied.
//!
//! [`ChatRequest::tool_choice`]: crate::provider::ChatRequest::tool_choice

use lathe_runtime::{PendingSummary, Tool};
use lathe_tools::resolve::ResolveTool;

use super::Executor;
use crate::events::PendingLeft;
use crate::message::Message;

impl Executor {
    /// While an action is pending: the tool the request forces (`resolve`, on the first request
    /// since the action became the newest) and the reminder it ends with. See the module's
    /// docs.
    pub(super) fn steer_to_pending(&mut self) -> (Option<String>, Option<String>) {
        let resolve = <ResolveTool as Tool>::NAME;
        let session = self.runner.session();
        if !self.runner.registry().is_offered(resolve, session) {
            return (None, None);
        }
        let waiting = session.pending_summaries();
        let Some(newest) = waiting.last().map(|a| a.id) else {
            return (None, None);
        };
        let reminder = reminder(&waiting, resolve);
        let choice = (self.forced_for != Some(newest)).then(|| {
            self.forced_for = Some(newest);
            resolve.to_owned()
        });
        (choice, reminder)
    }
}

/// What the model reads at the end of a request while actions are pending (`waiting`, oldest
/// first; the last is the one `resolve` takes).
pub(crate) fn reminder(waiting: &[PendingSummary], resolve: &str) -> Option<String> {
    let newest = waiting.last()?;
    let mut text = format!(
        "[Lathe] Pending and not applied yet: \"{}\" (previewed by {}). Resolve it before \
         anything else: call `{resolve}` with action \"apply\" to make the change, or \
         \"discard\" to drop it.",
        newest.label, newest.source
    );
    if waiting.len() > 1 {
        text.push_str(&format!(
            " {} actions are pending; `{resolve}` takes the newest first.",
            waiting.len()
        ));
    }
    Some(text)
}

/// `messages` with `text` appended to the last one when it is a tool result or the user's (as
/// a request is built), else with `text` as a user message of its own.
pub(crate) fn remind(messages: &mut Vec<Message>, text: &str) {
    match messages.last_mut() {
        Some(Message::Tool(result)) => append(&mut result.content, text),
        Some(Message::User { content, .. }) => append(content, text),
        _ => messages.push(Message::user(text)),
    }
}

fn append(content: &mut String, text: &str) {
    if !content.is_empty() {
        content.push_str("\n\n");
    }
    content.push_str(text);
}

/// The actions a run leaves pending, for its report.
pub(crate) fn left(waiting: &[PendingSummary]) -> Vec<PendingLeft> {
    waiting
        .iter()
        .map(|action| PendingLeft {
            label: action.label.clone(),
            source: action.source.clone(),
            files: action.changes.iter().map(|c| c.path.clone()).collect(),
        })
        .collect()
}

/// The notice at the end of a run that leaves actions pending.
pub(crate) fn left_notice(left: &[PendingLeft]) -> Option<String> {
    if left.is_empty() {
        return None;
    }
    let names: Vec<String> = left
        .iter()
        .map(|a| format!("\"{}\" (previewed by {})", a.label, a.source))
        .collect();
    Some(format!(
        "not applied, still pending: {}. Nothing of it was written; ask for it to be applied \
         or discarded",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use lathe_runtime::FileChange;

    fn summary(id: u64, label: &str) -> PendingSummary {
        PendingSummary {
            id,
            label: label.into(),
            source: "preview_put".into(),
            details: None,
            changes: vec![FileChange::counted("a.txt", 1, 1)],
        }
    }

    #[test]
    fn the_reminder_names_the_newest_action_and_how_to_resolve_it() {
        assert_eq!(reminder(&[], "resolve"), None);
        let one = reminder(&[summary(1, "edit a.txt")], "resolve").unwrap();
        assert!(
            one.contains("\"edit a.txt\" (previewed by preview_put)"),
            "{one}"
        );
        assert!(
            one.contains("call `resolve` with action \"apply\""),
            "{one}"
        );
        assert!(!one.contains("newest first"), "{one}");
        let two = reminder(&[summary(1, "old"), summary(2, "new")], "resolve").unwrap();
        assert!(two.contains("\"new\""), "{two}");
        assert!(two.contains("2 actions are pending"), "{two}");
    }

    #[test]
    fn the_reminder_joins_the_last_result_or_message() {
        let call = ToolCall::new("preview_put", serde_json::json!({}));
        let mut messages = vec![
            Message::user("go"),
            Message::tool_result(&call, "previewed"),
        ];
        remind(&mut messages, "R");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].content(), "previewed\n\nR");
        let mut messages = vec![Message::user("go")];
        remind(&mut messages, "R");
        assert_eq!(messages, vec![Message::user("go\n\nR")]);
        let mut messages = vec![Message::system("S")];
        remind(&mut messages, "R");
        assert_eq!(messages[1], Message::user("R"));
    }

    #[test]
    fn what_is_left_is_reported_with_its_files() {
        let left = left(&[summary(1, "edit a.txt")]);
        assert_eq!(left[0].files, ["a.txt"]);
        let notice = left_notice(&left).unwrap();
        assert!(
            notice.starts_with("not applied, still pending: \"edit a.txt\""),
            "{notice}"
        );
        assert_eq!(left_notice(&[]), None);
    }
}
