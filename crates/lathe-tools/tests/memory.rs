//! `update_memory` through the real pipeline: the real gate in each mode, a real workspace and
//! memory file. Every change asks with its diff, whatever the mode and the rules; read-only and
//! deny rules refuse; nobody to ask means the model reads how the user can change the memory.

use std::sync::Arc;

use futures::future::BoxFuture;
use lathe_policy::{ApprovalMode, PermissionsConfig};
use serde_json::{Value, json};

use lathe_runtime::memory::{self, MAX_MEMORY_BYTES, MemoryConfig, NOBODY_TO_ASK};
use lathe_runtime::{
    ApprovalDecision, ApprovalRequest, Approver, CallStatus, Dispatcher, FixedAnswer, Gate,
    Outcome, Refuse,
};

use crate::dispatch_support::{Fixture, Recording};

const MEMORY: &str = ".lathe/memory.md";

fn yes() -> Recording<FixedAnswer> {
    Recording::new(FixedAnswer(ApprovalDecision::AllowOnce))
}

fn gate(
    f: &Fixture,
    mode: ApprovalMode,
    permissions: &PermissionsConfig,
    skip: bool,
) -> Dispatcher {
    Dispatcher::new(
        Arc::new(lathe_tools::builtin()),
        Arc::new(Gate::with_permissions(permissions, mode, &f.root, skip).unwrap()),
    )
}

async fn call(d: &Dispatcher, f: &Fixture, approver: &dyn Approver, args: Value) -> Outcome {
    d.call("update_memory", args, approver, f.ctx()).await
}

fn add(entry: &str) -> Value {
    json!({"action": "add", "entry": entry})
}

#[tokio::test]
async fn every_change_asks_with_its_diff_in_ask_auto_and_full() {
    for mode in [ApprovalMode::Ask, ApprovalMode::Auto, ApprovalMode::Full] {
        let f = Fixture::new();
        let d = gate(&f, mode, &PermissionsConfig::default(), false);
        let approver = yes();
        let out = call(&d, &f, &approver, add("Run `make check` before pushing.")).await;
        assert_eq!(out.status, CallStatus::Ok, "{mode}: {}", out.output.text);
        assert_eq!(f.read(MEMORY), "- Run `make check` before pushing.\n");
        let requests = approver.requests();
        assert_eq!(requests.len(), 1, "{mode}: asked once");
        let request = &requests[0];
        let diff = request.diff.as_deref().unwrap_or_default();
        assert!(
            diff.contains("+- Run `make check` before pushing."),
            "{mode}: {diff}"
        );
        assert!(
            request.rules.is_empty(),
            "{mode}: never remembered: {:?}",
            request.rules
        );
        assert_eq!(request.scope, "this call only");
        assert!(
            request
                .reasons
                .iter()
                .any(|r| r.contains("memory changes always ask")),
            "{mode}: {:?}",
            request.reasons
        );
        assert!(
            out.output.text.contains("from the next session on"),
            "{}",
            out.output.text
        );
        // "Always" remembers nothing: the next change asks again.
        let always = Recording::new(FixedAnswer(ApprovalDecision::AllowSession));
        call(&d, &f, &always, add("Tabs, not spaces.")).await;
        call(&d, &f, &always, add("The API lives in api/.")).await;
        assert_eq!(always.asked(), 2, "{mode}");
        assert_eq!(
            f.read(MEMORY),
            "- Run `make check` before pushing.\n- Tabs, not spaces.\n- The API lives in api/.\n"
        );
    }
}

#[tokio::test]
async fn no_rule_and_no_skipping_lets_a_change_run_unasked_but_read_only_and_deny_refuse() {
    let f = Fixture::new();
    let allow = PermissionsConfig {
        allow: vec![
            "tool(update_memory)".into(),
            "edit(.lathe/**)".into(),
            "edit(.lathe/memory.md)".into(),
        ],
        ..PermissionsConfig::default()
    };
    for skip in [false, true] {
        let d = gate(&f, ApprovalMode::Full, &allow, skip);
        let approver = yes();
        let out = call(&d, &f, &approver, add(&format!("skip {skip}"))).await;
        assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
        assert_eq!(approver.asked(), 1, "skip {skip}: still asked");
    }
    let before = f.read(MEMORY);
    let d = gate(&f, ApprovalMode::ReadOnly, &allow, false);
    let approver = yes();
    let out = call(&d, &f, &approver, add("never")).await;
    assert_eq!(out.status, CallStatus::Denied);
    assert!(
        out.output
            .text
            .contains("read-only mode never changes the project's memory"),
        "{}",
        out.output.text
    );
    assert!(
        out.output.text.contains("lathe memory edit"),
        "{}",
        out.output.text
    );
    let deny = PermissionsConfig {
        deny: vec!["tool(update_memory)".into()],
        ..PermissionsConfig::default()
    };
    let out = call(
        &gate(&f, ApprovalMode::Full, &deny, true),
        &f,
        &approver,
        add("never"),
    )
    .await;
    assert_eq!(out.status, CallStatus::Denied);
    assert!(
        out.output
            .text
            .contains("denied by the rule `tool(update_memory)`"),
        "{}",
        out.output.text
    );
    assert_eq!(approver.asked(), 0);
    assert_eq!(f.read(MEMORY), before, "nothing was written");
}

#[tokio::test]
async fn a_write_of_the_memory_file_by_another_tool_asks_as_update_memory_does() {
    let f = Fixture::new();
    // Configured outside `.lathe/`, where no sensitive path would make writing it ask.
    assert!(memory::configure(
        &f.session,
        MemoryConfig {
            path: Some("notes/memory.md".into())
        }
    ));
    let allow = PermissionsConfig {
        allow: vec!["edit(notes/**)".into()],
        ..PermissionsConfig::default()
    };
    let d = gate(&f, ApprovalMode::Full, &allow, false);
    let approver = yes();
    let write = json!({"path": "notes/memory.md", "content": "- planted\n"});
    let out = d.call("write_file", write, &approver, f.ctx()).await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    assert_eq!(
        approver.asked(),
        1,
        "writing the memory file asks in full mode"
    );
    // The same tool on another file of the same directory does not.
    let other = json!({"path": "notes/todo.md", "content": "x\n"});
    d.call("write_file", other, &approver, f.ctx()).await;
    assert_eq!(approver.asked(), 1);
    // update_memory writes the configured file.
    let out = call(&d, &f, &approver, add("found here")).await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    assert_eq!(f.read("notes/memory.md"), "- planted\n- found here\n");
    assert!(!f.path(MEMORY).exists());
}

#[tokio::test]
async fn nobody_to_ask_tells_the_model_how_the_user_changes_memory() {
    let f = Fixture::new();
    let d = gate(&f, ApprovalMode::Full, &PermissionsConfig::default(), false);
    let refuse = Refuse("rerun with --approval auto".into());
    let out = call(&d, &f, &refuse, add("x")).await;
    assert_eq!(out.status, CallStatus::Denied);
    assert_eq!(out.output.text, NOBODY_TO_ASK);
    let out = d
        .call(
            "write_file",
            json!({"path": MEMORY, "content": "x"}),
            &refuse,
            f.ctx(),
        )
        .await;
    assert_eq!(out.output.text, NOBODY_TO_ASK);
    assert!(!f.path(MEMORY).exists());
    // Another call that asks keeps the front end's advice.
    let out = d
        .call("read_file", json!({"path": ".env"}), &refuse, f.ctx())
        .await;
    assert_eq!(out.output.text, "rerun with --approval auto");
}

#[tokio::test]
async fn replace_and_remove_find_the_entry_or_list_the_entries() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".lathe")).unwrap();
    std::fs::write(
        f.path(MEMORY),
        "# Notes kept by hand\n\n- Use tabs.\n- Run make check\n  before pushing.\n- Tests use the real server.\n",
    )
    .unwrap();
    let d = gate(&f, ApprovalMode::Auto, &PermissionsConfig::default(), false);
    let approver = yes();
    let out = call(
        &d,
        &f,
        &approver,
        json!({"action": "replace", "old": "2", "entry": "Run `make ci`."}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let out = call(
        &d,
        &f,
        &approver,
        json!({"action": "remove", "entry": "tabs"}),
    )
    .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    assert_eq!(
        f.read(MEMORY),
        "# Notes kept by hand\n\n- Run `make ci`.\n- Tests use the real server.\n"
    );
    let before = f.read(MEMORY);
    let mistakes = [
        (json!({"action": "remove", "old": "e"}), "is in 2 entries"),
        (
            json!({"action": "remove", "old": "nowhere"}),
            "1. Run `make ci`.\n2. Tests use the real server.",
        ),
        (
            json!({"action": "replace", "old": "9", "entry": "x"}),
            "there is no entry 9",
        ),
        (
            json!({"action": "replace", "entry": "x"}),
            "say which entry to replace in `old`",
        ),
        (json!({"action": "add"}), "give the text in `entry`"),
        (
            json!({"action": "add", "entry": "- Tests use the  real server."}),
            "already holds this as entry 2",
        ),
    ];
    for (args, expected) in mistakes {
        let out = call(&d, &f, &approver, args.clone()).await;
        assert_eq!(out.status, CallStatus::Error, "{args}");
        assert!(
            out.output.text.contains(expected),
            "{args}: {}",
            out.output.text
        );
    }
    assert_eq!(f.read(MEMORY), before);
}

#[tokio::test]
async fn the_file_stays_under_its_cap_and_a_change_meanwhile_is_never_overwritten() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".lathe")).unwrap();
    let full: String = (0..MAX_MEMORY_BYTES / 100)
        .map(|i| format!("- entry {i:03} {}\n", "x".repeat(85)))
        .collect();
    std::fs::write(f.path(MEMORY), &full).unwrap();
    let d = gate(&f, ApprovalMode::Auto, &PermissionsConfig::default(), false);
    let approver = yes();
    let out = call(&d, &f, &approver, add(&"y".repeat(400))).await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(
        out.output
            .text
            .contains(&format!("more than its cap of {MAX_MEMORY_BYTES}")),
        "{}",
        out.output.text
    );
    assert!(out.output.text.contains("remove or shorten entries first"));
    // Shrinking is always possible.
    let out = call(&d, &f, &approver, json!({"action": "remove", "old": "1"})).await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);

    // The user edits the file while the approval question is open: the approved diff no longer
    // fits it, so nothing is written.
    struct EditsMeanwhile(std::path::PathBuf);
    impl Approver for EditsMeanwhile {
        fn approve<'a>(&'a self, _: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
            std::fs::write(&self.0, "- written by hand meanwhile\n").unwrap();
            Box::pin(async { ApprovalDecision::AllowOnce })
        }
    }
    let out = call(&d, &f, &EditsMeanwhile(f.path(MEMORY)), add("late")).await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(
        out.output.text.contains("changed on disk"),
        "{}",
        out.output.text
    );
    assert_eq!(f.read(MEMORY), "- written by hand meanwhile\n");
}

#[tokio::test]
async fn a_memory_file_that_leads_out_of_the_workspace_is_refused() {
    let f = Fixture::new();
    let outside = f.root.parent().unwrap().join("outside.md");
    std::fs::write(&outside, "- elsewhere\n").unwrap();
    std::fs::create_dir_all(f.path(".lathe")).unwrap();
    std::os::unix::fs::symlink(&outside, f.path(MEMORY)).unwrap();
    let d = gate(&f, ApprovalMode::Auto, &PermissionsConfig::default(), false);
    let approver = yes();
    let out = call(&d, &f, &approver, add("x")).await;
    assert_eq!(out.status, CallStatus::Error, "{}", out.output.text);
    assert!(
        out.output
            .text
            .contains("the memory file .lathe/memory.md cannot be used"),
        "{}",
        out.output.text
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "- elsewhere\n");
}
