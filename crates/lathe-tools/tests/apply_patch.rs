//! apply_patch through the registry and the dispatcher, on real temporary workspaces: each
//! header kind, the tolerant matches, hunks that are not there (nothing written), refusals,
//! approvals, and previews that wait for `resolve`.

use lathe_policy::ApprovalMode::{Ask, ReadOnly};
use lathe_runtime::{ApprovalDecision, CallStatus, Effect, FixedAnswer};
use serde_json::{Value, json};

use crate::dispatch_support::{Fixture, Recording, exists};
use crate::file_support::Ws;

fn patch(body: &str) -> Value {
    json!({ "patch": format!("*** Begin Patch\n{body}\n*** End Patch\n") })
}

#[test]
fn every_header_kind_in_one_call() {
    let ws = Ws::new();
    ws.write(
        "src/app.py",
        "import os\n\ndef greet():\n    print(\"Hi\")\n    return 1\n",
    );
    ws.write("obsolete.txt", "old\nstuff\n");
    ws.write("old/name.txt", "keep me\nchange me\n");
    let out = ws.ok(
        "apply_patch",
        patch(
            "*** Add File: docs/new.md\n+# New\n+\n+text\n\
             *** Update File: src/app.py\n@@ def greet():\n-    print(\"Hi\")\n+    print(\"Hello\")\n     return 1\n\
             *** Delete File: obsolete.txt\n\
             *** Update File: old/name.txt\n*** Move to: renamed/dir/name.txt\n@@\n keep me\n-change me\n+changed",
        ),
    );
    assert_eq!(ws.text("docs/new.md"), "# New\n\ntext\n");
    assert_eq!(
        ws.text("src/app.py"),
        "import os\n\ndef greet():\n    print(\"Hello\")\n    return 1\n"
    );
    assert!(!ws.path("obsolete.txt").exists());
    assert!(!ws.path("old/name.txt").exists());
    assert_eq!(ws.text("renamed/dir/name.txt"), "keep me\nchanged\n");
    let text = &out.text;
    assert!(
        text.starts_with("Applied the patch: 4 files changed.\n"),
        "{text}"
    );
    for line in [
        "\nA docs/new.md (+3)\n",
        "\nM src/app.py (+1 -1, matched: exact)\n",
        "\nD obsolete.txt (-2)\n",
        "\nR old/name.txt -> renamed/dir/name.txt (+1 -1, matched: exact)\n",
    ] {
        assert!(text.contains(line), "{line:?} in {text}");
    }
    assert!(text.contains("+    print(\"Hello\")"), "{text}");
    // Every file is a recorded change: checkpoints and people see them all.
    let changes: Vec<(String, bool, bool)> = out
        .metadata
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.created, c.deleted))
        .collect();
    assert_eq!(
        changes,
        [
            ("docs/new.md".to_owned(), true, false),
            ("src/app.py".to_owned(), false, false),
            ("obsolete.txt".to_owned(), false, true),
            ("old/name.txt".to_owned(), false, true),
            ("renamed/dir/name.txt".to_owned(), true, false),
        ]
    );
}

#[test]
fn tolerant_matches_are_named_and_context_lines_are_kept_as_the_file_has_them() {
    let ws = Ws::new();
    ws.write("a.rs", "fn a() {  \n    let x = 1;\t\n}\n");
    ws.write("b.py", "def f():\n        return 1\n");
    let out = ws.ok(
        "apply_patch",
        patch(
            "*** Update File: a.rs\n@@\n fn a() {\n-    let x = 1;\n+    let x = 2;\n\
             *** Update File: b.py\n@@\n def f():\n-    return 1\n+        return 2",
        ),
    );
    // The context line keeps its trailing spaces: only the '-' line was replaced.
    assert_eq!(ws.text("a.rs"), "fn a() {  \n    let x = 2;\n}\n");
    assert_eq!(ws.text("b.py"), "def f():\n        return 2\n");
    assert!(
        out.text
            .contains("\nM a.rs (+1 -1, matched: trailing whitespace ignored)\n"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("\nM b.py (+1 -1, matched: surrounding whitespace ignored)\n"),
        "{}",
        out.text
    );
    assert_eq!(
        out.metadata.to_json()["strategies"],
        json!(["trailing_whitespace", "surrounding_whitespace"])
    );
}

#[test]
fn a_hunk_that_is_not_there_fails_the_whole_call_and_writes_nothing() {
    let ws = Ws::new();
    let main = "fn main() {\n    let total = 1;\n    println!(\"{total}\");\n}\n";
    ws.write("src/main.rs", main);
    ws.write("src/lib.rs", "pub fn a() {}\n");
    let out = ws.err(
        "apply_patch",
        patch(
            "*** Add File: src/new.rs\n+pub fn new() {}\n\
             *** Update File: src/lib.rs\n@@\n-pub fn a() {}\n+pub fn a() -> u8 { 1 }\n\
             *** Update File: src/main.rs\n@@\n fn main() {\n-    let totl = 2;\n+    let total = 2;",
        ),
    );
    // Nothing of it happened: not the new file, not the good hunk of the other file.
    assert!(!ws.path("src/new.rs").exists());
    assert_eq!(ws.text("src/lib.rs"), "pub fn a() {}\n");
    assert_eq!(ws.text("src/main.rs"), main);
    let text = &out.text;
    assert!(
        text.starts_with("src/main.rs: hunk 1 of 1 (patch line 9): its context and '-' lines were not found in src/main.rs"),
        "{text}"
    );
    assert!(
        text.contains("It looked for:\n  fn main() {\n      let totl = 2;\n"),
        "{text}"
    );
    assert!(
        text.contains("The nearest lines in src/main.rs are:\n     1\tfn main() {\n     2\t    let total = 1;\n"),
        "{text}"
    );
    assert!(text.contains("Nothing was written"), "{text}");
    assert!(out.metadata.changes.is_empty());
}

#[test]
fn files_that_exist_or_not_as_the_header_needs_are_clear_refusals() {
    let ws = Ws::new();
    ws.write("here.txt", "x\n");
    ws.write("config.toml", "a = 1\n");
    let out = ws.err("apply_patch", patch("*** Add File: here.txt\n+y"));
    assert!(
        out.text.contains(
            "cannot add here.txt: it already exists. To change it, use `*** Update File: here.txt`"
        ),
        "{}",
        out.text
    );
    let out = ws.err(
        "apply_patch",
        patch("*** Update File: config.tml\n@@\n-a = 1\n+a = 2"),
    );
    assert!(
        out.text
            .contains("cannot update config.tml: it does not exist. Did you mean `config.toml`?"),
        "{}",
        out.text
    );
    let out = ws.err("apply_patch", patch("*** Delete File: gone.txt"));
    assert!(
        out.text
            .contains("cannot delete gone.txt: it does not exist"),
        "{}",
        out.text
    );
    let out = ws.err(
        "apply_patch",
        patch("*** Update File: here.txt\n*** Move to: config.toml"),
    );
    assert!(
        out.text
            .contains("cannot move here.txt to config.toml: config.toml already exists"),
        "{}",
        out.text
    );
    // Deleted earlier in the same patch: gone for the operations after it.
    let out = ws.err(
        "apply_patch",
        patch("*** Delete File: here.txt\n*** Update File: here.txt\n@@\n-x\n+y"),
    );
    assert!(
        out.text
            .contains("an earlier operation of this patch deleted or moved it"),
        "{}",
        out.text
    );
    assert_eq!(ws.text("here.txt"), "x\n");
    assert_eq!(ws.text("config.toml"), "a = 1\n");
}

#[test]
fn a_malformed_patch_names_the_line_and_what_was_expected() {
    let ws = Ws::new();
    ws.write("a.txt", "x\n");
    let out = ws.err(
        "apply_patch",
        json!({"patch": "*** Begin Patch\n*** Update File: a.txt\n@@\n-x\n+y\nz\n*** End Patch"}),
    );
    assert!(
        out.text.starts_with(
            "the patch could not be read: line 6 of the patch: expected `@@` to start the next hunk of a.txt"
        ),
        "{}",
        out.text
    );
    assert_eq!(ws.text("a.txt"), "x\n");
}

#[test]
fn one_file_twice_and_a_patch_that_changes_nothing() {
    let ws = Ws::new();
    let out = ws.ok(
        "apply_patch",
        patch("*** Add File: n.txt\n+one\n*** Update File: n.txt\n@@\n one\n+two"),
    );
    assert_eq!(ws.text("n.txt"), "one\ntwo\n");
    assert!(
        out.text.starts_with("Applied the patch: 1 file changed.\n"),
        "{}",
        out.text
    );
    let out = ws.ok(
        "apply_patch",
        patch("*** Update File: n.txt\n@@\n-one\n+one"),
    );
    assert!(
        out.text.starts_with("The patch changes nothing"),
        "{}",
        out.text
    );
    assert!(out.metadata.changes.is_empty());
}

#[test]
fn line_endings_bom_and_permissions_are_kept_and_a_moved_file_keeps_its_mode() {
    let ws = Ws::new();
    ws.write("win.txt", b"\xEF\xBB\xBFa\r\nb\r\n");
    ws.write("run.sh", "#!/bin/sh\necho hi\n");
    ws.chmod("run.sh", 0o755);
    ws.ok(
        "apply_patch",
        patch(
            "*** Update File: win.txt\n@@\n a\n-b\n+c\n+d\n\
             *** Update File: run.sh\n*** Move to: bin/run.sh\n@@\n-echo hi\n+echo bye",
        ),
    );
    assert_eq!(ws.read("win.txt"), b"\xEF\xBB\xBFa\r\nc\r\nd\r\n");
    assert_eq!(ws.text("bin/run.sh"), "#!/bin/sh\necho bye\n");
    assert_eq!(ws.mode("bin/run.sh"), 0o755);
}

#[test]
fn paths_go_through_workspace_containment() {
    let ws = Ws::new();
    let outside = ws.outside().join("x.txt");
    let out = ws.err(
        "apply_patch",
        patch(&format!("*** Add File: {}\n+no", outside.display())),
    );
    assert!(out.text.contains("line 2 of the patch:"), "{}", out.text);
    assert!(!outside.exists());
    // An absolute path inside the workspace is fine.
    let inside = ws.path("abs.txt");
    ws.ok(
        "apply_patch",
        patch(&format!("*** Add File: {}\n+yes", inside.display())),
    );
    assert_eq!(ws.text("abs.txt"), "yes\n");
}

#[test]
fn a_file_changed_after_the_plan_stops_every_write() {
    let ws = Ws::new();
    ws.write("a.txt", "a\n");
    ws.write("b.txt", "b\n");
    let plan = ws.planned(
        "apply_patch",
        patch("*** Update File: a.txt\n@@\n-a\n+A\n*** Update File: b.txt\n@@\n-b\n+B"),
    );
    assert_eq!(plan.writes.len(), 2);
    ws.write("b.txt", "someone else\n");
    let out = plan.apply(&ws.session);
    assert!(out.is_error, "{}", out.text);
    assert_eq!(ws.text("a.txt"), "a\n");
    assert_eq!(ws.text("b.txt"), "someone else\n");
}

// Approvals: the call's effects are the files it writes, deletes and moves.

fn soon<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(30), future)
                .await
                .expect("the call did not end")
        })
}

#[test]
fn effects_name_each_file_and_ask_shows_every_diff() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Ask);
    let arguments = patch(
        "*** Update File: notes.txt\n@@\n-first\n+second\n\
         *** Add File: added.txt\n+new\n\
         *** Update File: src/lib.rs\n*** Move to: src/moved.rs\n@@\n-pub fn a() {}\n+pub fn b() {}",
    );
    let call = dispatcher
        .prepare("apply_patch", arguments.clone(), &f.session)
        .unwrap();
    assert_eq!(
        call.effects,
        [
            Effect::Edit {
                path: "notes.txt".into()
            },
            Effect::Write {
                path: "added.txt".into()
            },
            Effect::Write {
                path: "src/lib.rs".into()
            },
            Effect::Write {
                path: "src/moved.rs".into()
            },
        ]
    );
    let approver = Recording::new(FixedAnswer(ApprovalDecision::AllowOnce));
    let outcome = soon(dispatcher.call("apply_patch", arguments, &approver, f.ctx()));
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    let requests = approver.requests();
    assert_eq!(requests.len(), 1);
    let shown: Vec<&str> = requests[0]
        .changes
        .iter()
        .map(|c| c.path.as_str())
        .collect();
    assert_eq!(
        shown,
        ["notes.txt", "added.txt", "src/lib.rs", "src/moved.rs"]
    );
    assert!(requests[0].changes[0].diff.contains("+second"));
    assert_eq!(f.read("notes.txt"), "second\n");
    assert!(exists(&f.root, "src/moved.rs") && !exists(&f.root, "src/lib.rs"));
}

#[test]
fn read_only_refuses_a_patch_but_a_preview_only_reads_and_waits_for_resolve() {
    let f = Fixture::new();
    let approver = Recording::new(FixedAnswer(ApprovalDecision::AllowOnce));
    let arguments =
        patch("*** Update File: notes.txt\n@@\n-first\n+second\n*** Delete File: src/lib.rs");
    let refused =
        soon(
            f.dispatcher(ReadOnly)
                .call("apply_patch", arguments.clone(), &approver, f.ctx()),
        );
    assert_eq!(
        refused.status,
        CallStatus::Denied,
        "{}",
        refused.output.text
    );
    assert_eq!(f.read("notes.txt"), "first\n");

    let mut preview = arguments.clone();
    preview["preview"] = json!(true);
    let call = f
        .dispatcher(ReadOnly)
        .prepare("apply_patch", preview.clone(), &f.session)
        .unwrap();
    assert_eq!(
        call.effects,
        [
            Effect::Read {
                path: "notes.txt".into()
            },
            Effect::Read {
                path: "src/lib.rs".into()
            },
            Effect::OwnState { changes: true },
        ]
    );
    // Even read-only lets a preview through, unasked: it writes nothing.
    let outcome = soon(
        f.dispatcher(ReadOnly)
            .call("apply_patch", preview, &approver, f.ctx()),
    );
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(approver.asked(), 0);
    let text = &outcome.output.text;
    assert!(
        text.starts_with(
            "Preview of the patch (nothing written yet): 2 files changed.\n\
             M notes.txt (+1 -1, matched: exact)\nD src/lib.rs (-2)"
        ),
        "{text}"
    );
    assert!(text.contains("resolve"), "{text}");
    assert!(outcome.output.metadata.changes.is_empty(), "{text}");
    assert_eq!(f.read("notes.txt"), "first\n");
    assert!(exists(&f.root, "src/lib.rs"));
    assert!(f.session.has_pending());

    // resolve applies it, asked about as the writes it makes.
    let applied =
        soon(
            f.dispatcher(Ask)
                .call("resolve", json!({"action": "apply"}), &approver, f.ctx()),
        );
    assert_eq!(applied.status, CallStatus::Ok, "{}", applied.output.text);
    assert_eq!(approver.asked(), 1);
    assert!(
        applied
            .output
            .text
            .starts_with("Applied the patch: 2 files changed."),
        "{}",
        applied.output.text
    );
    assert_eq!(f.read("notes.txt"), "second\n");
    assert!(!exists(&f.root, "src/lib.rs"));
    assert!(!f.session.has_pending());
}

#[test]
fn a_preview_without_a_pending_store_says_so_and_writes_nothing() {
    let ws = Ws::new();
    ws.write("a.txt", "a\n");
    ws.session.set_pending_store(false);
    let mut arguments = patch("*** Update File: a.txt\n@@\n-a\n+b");
    arguments["preview"] = json!(true);
    let out = ws.err("apply_patch", arguments);
    assert_eq!(out.text, lathe_runtime::PENDING_UNAVAILABLE);
    assert_eq!(ws.text("a.txt"), "a\n");
}

#[test]
fn the_argument_names_other_agents_use_reach_the_patch() {
    let ws = Ws::new();
    ws.write("a.txt", "a\n");
    for (key, line) in [("patchText", "b"), ("input", "c")] {
        let text = format!(
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-{}\n+{line}\n*** End Patch",
            ws.text("a.txt").trim()
        );
        ws.ok("apply_patch", json!({ key: text }));
        assert_eq!(ws.text("a.txt"), format!("{line}\n"));
    }
}
