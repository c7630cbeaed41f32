//! Pending actions and `resolve`, through the real call pipeline: previews that push actions
//! (a plan over real files, an embedder's own action), the LIFO order, apply and discard, the
//! stamps a preview was made against, all-or-nothing applies, and approval in each mode.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use lathe_policy::ApprovalMode::{Ask, Auto, Full, ReadOnly};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::dispatch_support::{Fixture, Probe, Recording};
use lathe_runtime::tool::ResultExt;
use lathe_runtime::{
    Access, ApprovalDecision, CallStatus, Effect, FileChange, FixedAnswer, NOTHING_PENDING,
    NonInteractive, PENDING_UNAVAILABLE, PendingAction, Plan, PlannedWrite, Registry, Session,
    Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult, current_stamp,
};

async fn soon<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("the call did not end")
}

/// Previews writing `content` to each of `paths` (one plan over all of them).
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PreviewWritesInput {
    /// Files to write.
    pub paths: Vec<String>,
    /// What each gets.
    pub content: String,
    /// The action's label.
    pub label: String,
}

#[derive(Debug, Clone, Copy)]
struct PreviewWrites;

impl Tool for PreviewWrites {
    const NAME: &'static str = "preview_writes";
    type Input = PreviewWritesInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        let mut effects: Vec<Effect> = input
            .paths
            .iter()
            .map(|p| Effect::Read { path: p.clone() })
            .collect();
        effects.push(Effect::OwnState { changes: true });
        effects
    }

    async fn run(&self, input: PreviewWritesInput, ctx: ToolContext) -> ToolResult {
        let plan = plan_writes(&ctx.session, &input.paths, &input.content)?;
        let preview: String = plan.changes().map(|c| c.diff.clone()).collect();
        let notice = ctx
            .session
            .push_pending(PendingAction::from_plan(&input.label, Self::NAME, plan))
            .map_err(ToolError::new)?;
        Ok(ToolOutput::ok(format!("{preview}\n{notice}")))
    }
}

fn plan_writes(session: &Session, paths: &[String], content: &str) -> Result<Plan, ToolError> {
    let workspace = session.workspace();
    let mut writes = Vec::new();
    for path in paths {
        let target = workspace
            .resolve(path, Access::Write)
            .or_model(|e| e.to_string())?;
        let before = current_stamp(workspace, &target).or_model(|e| e.to_string())?;
        let shown = target.shown().to_owned();
        writes.push(PlannedWrite {
            target,
            before,
            content: content.as_bytes().to_vec(),
            new_mode: 0o644,
            change: FileChange {
                path: shown.clone(),
                created: before.is_none(),
                deleted: false,
                added: 1,
                removed: u64::from(before.is_some()),
                diff: format!("--- a/{shown}\n+++ b/{shown}\n@@ -1 +1 @@\n+{content}"),
            },
            remove: false,
        });
    }
    Ok(Plan::new(writes, ToolOutput::ok("")))
}

/// Pushes an embedder's own action that counts its applies and rejects.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PreviewCustomInput {
    /// The action's label.
    pub label: String,
    /// Give it a reject callback.
    pub with_reject: bool,
}

#[derive(Clone)]
struct PreviewCustom {
    applied: Arc<AtomicUsize>,
    reasons: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Tool for PreviewCustom {
    const NAME: &'static str = "preview_custom";
    type Input = PreviewCustomInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    fn effects(&self, _input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![Effect::OwnState { changes: true }]
    }

    async fn run(&self, input: PreviewCustomInput, ctx: ToolContext) -> ToolResult {
        let applied = Arc::clone(&self.applied);
        let reasons = Arc::clone(&self.reasons);
        let label = input.label.clone();
        let mut action = PendingAction::custom(
            &input.label,
            Self::NAME,
            vec![Effect::Write {
                path: "renamed.txt".into(),
            }],
            move |reason, _ctx| async move {
                applied.fetch_add(1, Ordering::SeqCst);
                reasons.lock().unwrap().push(reason.clone());
                ToolOutput::ok(format!("applied {label} because {reason}"))
            },
        )
        .with_details("two files");
        if input.with_reject {
            let reasons = Arc::clone(&self.reasons);
            action = action.with_reject(move |reason| {
                reasons.lock().unwrap().push(format!("rejected: {reason}"));
                ToolOutput::ok(format!("Discarded the custom action. Reason: {reason}"))
            });
        }
        let notice = ctx.session.push_pending(action).map_err(ToolError::new)?;
        Ok(ToolOutput::ok(format!("previewed\n{notice}")))
    }
}

struct Setup {
    f: Fixture,
    applied: Arc<AtomicUsize>,
    reasons: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Setup {
    fn new() -> Setup {
        Setup {
            f: Fixture::new(),
            applied: Arc::default(),
            reasons: Arc::default(),
        }
    }

    fn registry(&self) -> Registry {
        let mut registry = lathe_tools::builtin();
        registry.register(PreviewWrites);
        registry.register(PreviewCustom {
            applied: Arc::clone(&self.applied),
            reasons: Arc::clone(&self.reasons),
        });
        registry
    }

    async fn call(
        &self,
        mode: lathe_policy::ApprovalMode,
        approver: &dyn lathe_runtime::Approver,
        name: &str,
        args: serde_json::Value,
    ) -> lathe_runtime::Outcome {
        let dispatcher = self.f.dispatcher_with(mode, self.registry());
        soon(dispatcher.call(name, args, approver, self.f.ctx())).await
    }

    async fn full(&self, name: &str, args: serde_json::Value) -> lathe_runtime::Outcome {
        self.call(Full, &NonInteractive, name, args).await
    }

    async fn preview(&self, paths: &[&str], content: &str, label: &str) -> lathe_runtime::Outcome {
        self.full(
            "preview_writes",
            json!({"paths": paths, "content": content, "label": label}),
        )
        .await
    }
}

#[tokio::test]
async fn nothing_pending_resolve_fails_with_the_exact_message_and_is_not_offered() {
    let s = Setup::new();
    let registry = s.registry();
    assert!(!registry.is_offered("resolve", &s.f.session));
    assert!(!registry.offered(&s.f.session).any(|d| d.name == "resolve"));
    // Still callable by name: the model reads why nothing happened.
    for action in ["apply", "discard"] {
        let outcome = s.full("resolve", json!({"action": action})).await;
        assert_eq!(outcome.status, CallStatus::Error);
        assert_eq!(outcome.output.text, NOTHING_PENDING);
    }
}

#[tokio::test]
async fn a_preview_changes_nothing_and_apply_writes_exactly_the_preview() {
    let s = Setup::new();
    let outcome = s
        .preview(&["notes.txt", "new/one.txt"], "changed\n", "write two")
        .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert!(outcome.output.text.contains("Nothing has been changed yet"));
    assert!(outcome.output.text.contains("`resolve`"));
    assert_eq!(s.f.read("notes.txt"), "first\n");
    assert!(!s.f.path("new/one.txt").exists());
    assert!(s.f.session.has_pending());
    assert!(s.registry().is_offered("resolve", &s.f.session));
    let pending = s.f.session.pending_summaries();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].label, "write two");
    assert_eq!(pending[0].source, "preview_writes");
    assert_eq!(pending[0].changes.len(), 2);

    let outcome = s
        .full(
            "resolve",
            json!({"action": "apply", "reason": "looks right"}),
        )
        .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(outcome.output.text, "Applied: write two");
    assert_eq!(s.f.read("notes.txt"), "changed\n");
    assert_eq!(s.f.read("new/one.txt"), "changed\n");
    assert_eq!(outcome.output.metadata.changes, pending[0].changes);
    assert!(!s.f.session.has_pending());
    assert!(!s.registry().is_offered("resolve", &s.f.session));
}

#[tokio::test]
async fn discard_without_reject_says_discarded_and_changes_nothing() {
    let s = Setup::new();
    s.preview(&["notes.txt"], "changed\n", "rewrite notes")
        .await;
    let outcome = s.full("resolve", json!({"action": "discard"})).await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(outcome.output.text, "Discarded: rewrite notes");
    assert_eq!(s.f.read("notes.txt"), "first\n");
    assert!(!s.f.session.has_pending());
    let again = s.full("resolve", json!({"action": "apply"})).await;
    assert_eq!(again.output.text, NOTHING_PENDING);
}

#[tokio::test]
async fn a_custom_action_applies_with_the_reason_and_its_reject_replaces_the_default() {
    let s = Setup::new();
    s.full(
        "preview_custom",
        json!({"label": "rename batch", "with_reject": true}),
    )
    .await;
    let summary = &s.f.session.pending_summaries()[0];
    assert_eq!(summary.details.as_deref(), Some("two files"));
    let outcome = s
        .full(
            "resolve",
            json!({"action": "discard", "reason": "wrong files"}),
        )
        .await;
    assert_eq!(
        outcome.output.text,
        "Discarded the custom action. Reason: wrong files"
    );
    assert_eq!(s.applied.load(Ordering::SeqCst), 0);

    s.full(
        "preview_custom",
        json!({"label": "rename batch", "with_reject": false}),
    )
    .await;
    let outcome = s
        .full("resolve", json!({"action": "apply", "reason": "ok"}))
        .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(outcome.output.text, "applied rename batch because ok");
    assert_eq!(s.applied.load(Ordering::SeqCst), 1);
    assert_eq!(
        *s.reasons.lock().unwrap(),
        ["rejected: wrong files".to_owned(), "ok".to_owned()]
    );
}

#[tokio::test]
async fn two_producers_resolve_newest_first() {
    let s = Setup::new();
    s.preview(&["notes.txt"], "from writes\n", "first preview")
        .await;
    let outcome = s
        .full(
            "preview_custom",
            json!({"label": "second preview", "with_reject": false}),
        )
        .await;
    assert!(
        outcome.output.text.contains("2 actions are pending"),
        "{}",
        outcome.output.text
    );
    let labels: Vec<String> =
        s.f.session
            .pending_summaries()
            .into_iter()
            .map(|p| p.label)
            .collect();
    assert_eq!(labels, ["first preview", "second preview"]);

    // The newest (the custom one) first; the answer names what is still pending.
    let outcome = s.full("resolve", json!({"action": "apply"})).await;
    assert!(
        outcome.output.text.starts_with("applied second preview"),
        "{}",
        outcome.output.text
    );
    assert!(
        outcome.output.text.contains("1 more pending")
            && outcome.output.text.contains("\"first preview\""),
        "{}",
        outcome.output.text
    );
    assert_eq!(s.f.read("notes.txt"), "first\n");
    let outcome = s.full("resolve", json!({"action": "apply"})).await;
    assert_eq!(outcome.output.text, "Applied: first preview");
    assert_eq!(s.f.read("notes.txt"), "from writes\n");
    assert!(!s.f.session.has_pending());
}

#[tokio::test]
async fn apply_is_refused_after_a_previewed_file_changed_and_names_it() {
    let s = Setup::new();
    s.preview(
        &["notes.txt", "src/lib.rs", "fresh.txt"],
        "new\n",
        "three files",
    )
    .await;
    std::fs::write(s.f.path("notes.txt"), "edited by the user\n").unwrap();
    std::fs::write(s.f.path("fresh.txt"), "created meanwhile\n").unwrap();
    let outcome = s.full("resolve", json!({"action": "apply"})).await;
    assert_eq!(outcome.status, CallStatus::Error);
    let text = &outcome.output.text;
    assert!(
        text.contains("notes.txt") && text.contains("fresh.txt"),
        "{text}"
    );
    assert!(!text.contains("src/lib.rs"), "{text}");
    assert!(text.contains("nothing was written"), "{text}");
    assert!(text.contains("new preview"), "{text}");
    // Nothing written; the stale action is gone.
    assert_eq!(s.f.read("notes.txt"), "edited by the user\n");
    assert_eq!(s.f.read("src/lib.rs"), "pub fn a() {}\n// TODO: b\n");
    assert_eq!(s.f.read("fresh.txt"), "created meanwhile\n");
    assert!(!s.f.session.has_pending());
}

#[tokio::test]
async fn an_apply_that_fails_halfway_puts_every_file_back() {
    let s = Setup::new();
    std::fs::write(s.f.path("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(
        s.f.path("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    // The third file's directory is missing when previewed; a file takes its name before the
    // apply, so its write fails (ENOTDIR) after the first two were written.
    s.preview(
        &["notes.txt", "run.sh", "later/inside.txt", "created.txt"],
        "new\n",
        "four files",
    )
    .await;
    std::fs::write(s.f.path("later"), "a file, not a directory\n").unwrap();
    let outcome = s.full("resolve", json!({"action": "apply"})).await;
    assert_eq!(outcome.status, CallStatus::Error, "{}", outcome.output.text);
    let text = &outcome.output.text;
    assert!(text.contains("later/inside.txt"), "{text}");
    assert!(text.contains("put back"), "{text}");
    assert_eq!(s.f.read("notes.txt"), "first\n");
    assert_eq!(s.f.read("run.sh"), "#!/bin/sh\n");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(s.f.path("run.sh")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o755);
    assert!(!s.f.path("created.txt").exists());
    assert_eq!(s.f.read("later"), "a file, not a directory\n");
}

#[tokio::test]
async fn a_plan_removal_deletes_and_is_put_back_when_a_later_write_fails() {
    let s = Setup::new();
    let session = &s.f.session;
    let workspace = session.workspace();
    let notes = workspace.resolve("notes.txt", Access::Write).unwrap();
    let stamp = current_stamp(workspace, &notes).unwrap().unwrap();
    let change = FileChange {
        path: "notes.txt".into(),
        created: false,
        deleted: true,
        added: 0,
        removed: 1,
        diff: String::new(),
    };
    // Removal alone: the file is gone.
    let plan = Plan::new(
        vec![PlannedWrite::removal(notes.clone(), stamp, change.clone())],
        ToolOutput::ok("removed"),
    );
    let out = plan.apply(session);
    assert!(!out.is_error, "{}", out.text);
    assert!(!s.f.path("notes.txt").exists());

    // Removal then a failing write: the removed file comes back.
    std::fs::write(s.f.path("notes.txt"), "first\n").unwrap();
    std::fs::write(s.f.path("blocker"), "").unwrap();
    let stamp = current_stamp(workspace, &notes).unwrap().unwrap();
    let mut writes = vec![PlannedWrite::removal(notes, stamp, change)];
    writes.extend(
        plan_writes(session, &["blocker2/x.txt".to_owned()], "x")
            .unwrap()
            .writes,
    );
    std::fs::write(s.f.path("blocker2"), "").unwrap();
    let out = Plan::new(writes, ToolOutput::ok("")).apply(session);
    assert!(out.is_error, "{}", out.text);
    assert_eq!(s.f.read("notes.txt"), "first\n");
}

#[tokio::test]
async fn resolve_apply_is_judged_as_the_actions_writes_in_each_mode() {
    let s = Setup::new();
    s.preview(&["notes.txt"], "changed\n", "rewrite notes")
        .await;

    // read-only: the preview could run, its apply cannot; the action stays pending.
    let outcome = s
        .call(
            ReadOnly,
            &NonInteractive,
            "resolve",
            json!({"action": "apply"}),
        )
        .await;
    assert_eq!(
        outcome.status,
        CallStatus::Denied,
        "{}",
        outcome.output.text
    );
    assert_eq!(s.f.read("notes.txt"), "first\n");
    assert!(s.f.session.has_pending());

    // ask: asked, with the action's diff; a denial leaves it pending and the file alone.
    let approver = Recording::new(FixedAnswer(ApprovalDecision::Deny { message: None }));
    let outcome = s
        .call(Ask, &approver, "resolve", json!({"action": "apply"}))
        .await;
    assert_eq!(outcome.status, CallStatus::Denied);
    let requests = approver.requests();
    assert_eq!(requests.len(), 1);
    assert!(
        requests[0]
            .diff
            .as_deref()
            .unwrap_or("")
            .contains("+changed"),
        "{:?}",
        requests[0]
    );
    assert_eq!(requests[0].changes[0].path, "notes.txt");
    assert!(s.f.session.has_pending());

    // ask, allowed once: written; discard in ask needs no question.
    let approver = Recording::new(FixedAnswer(ApprovalDecision::AllowOnce));
    let outcome = s
        .call(Ask, &approver, "resolve", json!({"action": "apply"}))
        .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(approver.asked(), 1);
    assert_eq!(s.f.read("notes.txt"), "changed\n");

    s.preview(&["notes.txt"], "again\n", "again").await;
    let approver = Recording::new(NonInteractive);
    let outcome = s
        .call(Ask, &approver, "resolve", json!({"action": "discard"}))
        .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(approver.asked(), 0);

    // A preview of a sensitive file: its apply is judged as a write to it.
    // (Reading .env for the preview asks too, even in full.)
    let preview = s
        .call(
            Full,
            &FixedAnswer(ApprovalDecision::AllowOnce),
            "preview_writes",
            json!({"paths": [".env"], "content": "TOKEN=other\n", "label": "env"}),
        )
        .await;
    assert_eq!(preview.status, CallStatus::Ok, "{}", preview.output.text);
    let approver = Recording::new(FixedAnswer(ApprovalDecision::AllowOnce));
    let outcome = s
        .call(Auto, &approver, "resolve", json!({"action": "apply"}))
        .await;
    assert_eq!(
        approver.asked(),
        1,
        "a write to .env through resolve went through unasked in auto: {:?} {}",
        outcome.status,
        outcome.output.text
    );
    assert!(
        approver.requests()[0]
            .reasons
            .iter()
            .any(|r| r.contains(".env")),
        "{:?}",
        approver.requests()[0].reasons
    );
}

#[tokio::test]
async fn hooks_see_the_actions_changes_before_it_is_applied() {
    let s = Setup::new();
    s.preview(&["notes.txt", "b.txt"], "x\n", "two").await;
    let probe = Arc::new(Probe::default());
    let dispatcher =
        s.f.dispatcher_with(Full, s.registry())
            .with_hook(Arc::clone(&probe) as Arc<dyn lathe_runtime::Hook>);
    let outcome = soon(dispatcher.call(
        "resolve",
        json!({"action": "apply"}),
        &NonInteractive,
        s.f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert!(
        probe
            .seen()
            .contains(&"before_run resolve +2 -1".to_owned()),
        "{:?}",
        probe.seen()
    );
    let info = &probe.infos.lock().unwrap()[0];
    assert_eq!(
        info.effects,
        [
            Effect::Edit {
                path: "notes.txt".into()
            },
            Effect::Write {
                path: "b.txt".into()
            }
        ]
    );
}

#[tokio::test]
async fn a_runtime_without_a_store_refuses_the_push_with_the_exact_message() {
    let s = Setup::new();
    s.f.session.set_pending_store(false);
    let outcome = s
        .full(
            "preview_custom",
            json!({"label": "x", "with_reject": false}),
        )
        .await;
    assert_eq!(outcome.status, CallStatus::Error);
    assert_eq!(outcome.output.text, PENDING_UNAVAILABLE);
    assert!(!s.f.session.has_pending());
}
