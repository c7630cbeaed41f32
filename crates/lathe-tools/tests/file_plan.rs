//! The plan/apply split of the file tools, through the registry as the dispatcher uses it:
//! planning changes nothing, applying writes exactly the planned bytes (or nothing, when the
//! file changed in between), and the diff a plan shows is the diff of what is written.

use crate::file_support::Ws;
use lathe_runtime::FileStamp;
use lathe_runtime::MAX_CHANGE_DIFF_LINES;
use lathe_runtime::{FileChange, LineRange, Metadata};
use serde_json::json;

/// The unified diff of the contents `before` -> `after` of `path`, worked out here, from the
/// file's real contents, independently of the tool.
fn unified(path: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[test]
fn an_edit_plan_changes_nothing_until_it_is_applied() {
    let ws = Ws::new();
    let before = "fn a() {\n    1\n}\n";
    ws.write("src/a.rs", before);
    ws.chmod("src/a.rs", 0o640);
    let args = json!({"path": "src/a.rs", "old_string": "    1\n", "new_string": "    2\n"});
    let plan = ws.planned("edit_file", args.clone());
    assert_eq!(ws.text("src/a.rs"), before);
    assert_eq!(ws.names_in(&ws.path("src")), ["a.rs"]);
    let [write] = plan.writes.as_slice() else {
        panic!("one write expected: {plan:?}");
    };
    assert_eq!(write.target.shown(), "src/a.rs");
    assert_eq!(write.before, Some(FileStamp::of(before.as_bytes())));
    assert_eq!(write.content, b"fn a() {\n    2\n}\n");
    assert!(!write.change.created && !write.change.deleted);
    assert_eq!((write.change.added, write.change.removed), (1, 1));
    // Applying adds the changes to the output; the plan holds them in its writes.
    assert!(plan.output.metadata.changes.is_empty());
    // Planning read and recorded nothing: a second plan is the same plan.
    assert_eq!(ws.planned("edit_file", args.clone()), plan);

    let planned = write.content.clone();
    let change = write.change.clone();
    let out = plan.apply(&ws.session);
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(ws.read("src/a.rs"), planned);
    assert_eq!(ws.mode("src/a.rs"), 0o640);
    assert_eq!(out.metadata.changes, [change]);
    assert_eq!(ws.names_in(&ws.path("src")), ["a.rs"]);
    // The session recorded what was written: the next edit is not refused as stale.
    ws.ok(
        "edit_file",
        json!({"path": "src/a.rs", "old_string": "    2\n", "new_string": "    3\n"}),
    );
}

/// What a planned-then-applied call returns is what calling the tool returns.
#[test]
fn applying_a_plan_gives_the_result_a_direct_call_gives() {
    for (name, args) in [
        (
            "edit_file",
            json!({"path": "f.txt", "old_string": "b\n", "new_string": "B\nC\n"}),
        ),
        (
            "edit_file",
            json!({"path": "made.txt", "old_string": "", "new_string": "new\n"}),
        ),
        ("write_file", json!({"path": "f.txt", "content": "z\n"})),
        ("write_file", json!({"path": "d/n.txt", "content": "n\n"})),
    ] {
        let (planned, direct) = (Ws::new(), Ws::new());
        for ws in [&planned, &direct] {
            ws.write("f.txt", "a\nb\nc\n");
        }
        let out = planned.planned(name, args.clone()).apply(&planned.session);
        let expected = direct.ok(name, args.clone());
        assert_eq!(out, expected, "{name} {args}");
        let written = args["path"].as_str().unwrap();
        assert_eq!(planned.read(written), direct.read(written), "{name} {args}");
    }
}

#[test]
fn a_file_changed_between_plan_and_apply_is_refused_and_nothing_is_written() {
    let ws = Ws::new();
    ws.write("f.txt", "one\ntwo\n");
    let plan = ws.planned(
        "edit_file",
        json!({"path": "f.txt", "old_string": "two", "new_string": "2"}),
    );
    ws.write("f.txt", "one\ntwo\nthree\n");
    let out = plan.apply(&ws.session);
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text
            .starts_with("f.txt changed on disk after this change was worked out"),
        "{}",
        out.text
    );
    assert!(out.text.contains("nothing was written"), "{}", out.text);
    assert_eq!(out.metadata.path.as_deref(), Some("f.txt"));
    assert!(out.metadata.changes.is_empty());
    assert_eq!(ws.text("f.txt"), "one\ntwo\nthree\n");
    assert_eq!(ws.names_in(&ws.root()), ["f.txt"]);

    // A file that appeared where the plan was to create one.
    let plan = ws.planned(
        "write_file",
        json!({"path": "new.txt", "content": "mine\n"}),
    );
    ws.write("new.txt", "theirs\n");
    let out = plan.apply(&ws.session);
    assert!(out.is_error, "{}", out.text);
    assert_eq!(ws.text("new.txt"), "theirs\n");

    // A file removed since the plan is not brought back.
    let plan = ws.planned("write_file", json!({"path": "f.txt", "content": "x\n"}));
    std::fs::remove_file(ws.path("f.txt")).unwrap();
    let out = plan.apply(&ws.session);
    assert!(out.is_error, "{}", out.text);
    assert!(!ws.path("f.txt").exists());
    assert_eq!(ws.names_in(&ws.root()), ["new.txt"]);
}

/// The first cut asked for approval with a diff of the fragments the model sent, which after a
/// tolerant match is not what the tool wrote. The plan's diff is the diff of the file's real
/// contents before and after, and it is the one the result carries.
#[test]
fn after_a_tolerant_match_the_planned_diff_is_the_diff_of_the_real_contents() {
    let ws = Ws::new();
    let before = "impl A {\n    fn f(&self) {\n        go(1);\n    }\n}\n";
    ws.write("t.rs", before);
    // Indentation lost: the text as given is nowhere in the file.
    let plan = ws.planned(
        "edit_file",
        json!({"path": "t.rs", "old_string": "fn f(&self) {\n    go(1);\n}", "new_string": "fn f(&self) {\n    go(2);\n}"}),
    );
    let change = plan.writes[0].change.clone();
    let out = plan.apply(&ws.session);
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(
        out.metadata.to_json()["strategies"],
        json!(["trimmed_lines"])
    );
    let after = ws.text("t.rs");
    assert_eq!(
        after,
        "impl A {\n    fn f(&self) {\n        go(2);\n    }\n}\n"
    );
    let real = unified("t.rs", before, &after);
    assert_eq!(change.diff, real);
    assert_eq!(out.metadata.to_json()["diff"], real);
    assert_eq!((change.added, change.removed), (1, 1));
    // The model reads the same diff (short enough to be shown whole).
    assert!(out.text.ends_with(&real), "{}", out.text);
}

/// One diff, cut twice: 80 lines for the model, MAX_CHANGE_DIFF_LINES for the change.
#[test]
fn the_models_diff_is_cut_at_80_lines_and_the_recorded_one_is_not() {
    let ws = Ws::new();
    let before: String = (0..300).map(|i| format!("line {i}\n")).collect();
    ws.write("long.txt", &before);
    let plan = ws.planned(
        "edit_file",
        json!({"path": "long.txt", "old_string": "line ", "new_string": "LINE ", "replace_all": true}),
    );
    let change = plan.writes[0].change.clone();
    let out = plan.apply(&ws.session);
    assert!(!out.is_error, "{}", out.text);
    let real = unified("long.txt", &before, &ws.text("long.txt"));
    assert_eq!(change.diff, real);
    let total = real.lines().count();
    assert!(total > 80 && total < MAX_CHANGE_DIFF_LINES, "{total}");
    let head: String = real.split_inclusive('\n').take(80).collect();
    assert!(
        out.text.ends_with(&format!(
            "\n{head}... (diff cut: {} more lines; read the file to see the rest)\n",
            total - 80
        )),
        "{}",
        out.text
    );

    // Past MAX_CHANGE_DIFF_LINES the recorded diff is cut too, saying so.
    let many: String = (0..3000).map(|i| format!("{i}\n")).collect();
    let plan = ws.planned("write_file", json!({"path": "many.txt", "content": many}));
    let diff = &plan.writes[0].change.diff;
    assert_eq!(diff.lines().count(), MAX_CHANGE_DIFF_LINES + 1);
    assert!(
        diff.ends_with("... (diff cut: 1003 more lines; read the file to see the rest)\n"),
        "{}",
        &diff[diff.len() - 200..]
    );
    assert!(unified("many.txt", "", &many).starts_with(&diff[..diff.rfind("... (").unwrap()]));
}

#[test]
fn edits_that_cancel_out_plan_no_write() {
    let ws = Ws::new();
    ws.write("f.txt", "one\n");
    let plan = ws.planned(
        "edit_file",
        json!({"path": "f.txt", "edits": [
            {"old_string": "one", "new_string": "ONE"},
            {"old_string": "ONE", "new_string": "one"}
        ]}),
    );
    assert!(plan.writes.is_empty(), "{plan:?}");
    let modified = std::fs::metadata(ws.path("f.txt"))
        .unwrap()
        .modified()
        .unwrap();
    let out = plan.apply(&ws.session);
    assert_eq!(
        out.text,
        "f.txt is unchanged: the edits cancel each other out, so nothing was written."
    );
    assert!(!out.is_error);
    assert_eq!(out.metadata.path.as_deref(), Some("f.txt"));
    assert!(out.metadata.changes.is_empty());
    let after = std::fs::metadata(ws.path("f.txt"))
        .unwrap()
        .modified()
        .unwrap();
    assert_eq!(after, modified);
}

#[test]
fn write_file_plans_a_new_file_and_an_overwrite() {
    let ws = Ws::new();
    let plan = ws.planned(
        "write_file",
        json!({"path": "d/new.txt", "content": "a\nb\n"}),
    );
    assert!(!ws.path("d").exists());
    let write = &plan.writes[0];
    assert_eq!(write.before, None);
    assert_eq!(write.content, b"a\nb\n");
    assert_eq!(write.new_mode, 0o666);
    assert_eq!(
        write.change,
        FileChange {
            path: "d/new.txt".into(),
            created: true,
            deleted: false,
            added: 2,
            removed: 0,
            diff: unified("d/new.txt", "", "a\nb\n"),
        }
    );
    assert_eq!(plan.output.text, "Created d/new.txt (+2 -0).");
    let change = write.change.clone();
    let out = plan.apply(&ws.session);
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(ws.text("d/new.txt"), "a\nb\n");
    assert_eq!(out.metadata.changes, [change]);
    assert_eq!(out.metadata.to_json()["bytes"], 4);

    ws.write("old.txt", "x\ny\n");
    let plan = ws.planned(
        "write_file",
        json!({"path": "old.txt", "content": "x\nz\n"}),
    );
    let write = &plan.writes[0];
    assert_eq!(write.before, Some(FileStamp::of(b"x\ny\n")));
    assert!(!write.change.created);
    assert_eq!((write.change.added, write.change.removed), (1, 1));
    assert_eq!(write.change.diff, unified("old.txt", "x\ny\n", "x\nz\n"));
    assert_eq!(plan.output.text, "Overwrote old.txt (+1 -1).");
    assert_eq!(ws.text("old.txt"), "x\ny\n");
    assert!(!plan.apply(&ws.session).is_error);
    assert_eq!(ws.text("old.txt"), "x\nz\n");

    // Binary content is written as planned, counted, and not diffed.
    let plan = ws.planned(
        "write_file",
        json!({"path": "old.txt", "content": "\u{0}\u{1}\n"}),
    );
    assert_eq!(plan.writes[0].change.diff, "");
    assert_eq!(
        (plan.writes[0].change.added, plan.writes[0].change.removed),
        (1, 2)
    );
}

/// Past 32 MiB the file about to be overwritten is streamed: its stamp is still exact, its
/// lines all count as removed, and no diff is made; large new content is counted, not diffed.
#[test]
fn write_file_plans_over_a_big_file() {
    let ws = Ws::new();
    let lines = 2 * 1024 * 1024 + 1;
    let big = "0123456789abcdef\n".repeat(lines);
    assert!(big.len() > 32 << 20);
    ws.write("big.txt", &big);
    let plan = ws.planned(
        "write_file",
        json!({"path": "big.txt", "content": "small\n"}),
    );
    let write = &plan.writes[0];
    assert_eq!(write.before, Some(FileStamp::of(big.as_bytes())));
    assert_eq!(write.content, b"small\n");
    assert_eq!(
        (write.change.added, write.change.removed),
        (1, lines as u64)
    );
    assert_eq!(write.change.diff, "");
    assert_eq!(
        plan.output.text,
        format!("Overwrote big.txt (+1 -{lines}).")
    );
    assert_eq!(ws.read("big.txt").len(), big.len());
    let out = plan.apply(&ws.session);
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(ws.text("big.txt"), "small\n");

    let plan = ws.planned("write_file", json!({"path": "huge.txt", "content": big}));
    let write = &plan.writes[0];
    assert_eq!(write.before, None);
    assert_eq!(write.content.len(), big.len());
    assert_eq!(
        (write.change.added, write.change.removed),
        (lines as u64, 0)
    );
    assert_eq!(write.change.diff, "");
    assert!(!ws.path("huge.txt").exists());
}

#[test]
fn planning_errors_name_the_file_and_write_nothing() {
    let ws = Ws::new();
    ws.write("f.txt", "one\n");
    let out = match ws.plan(
        "edit_file",
        json!({"path": "f.txt", "old_string": "zzz", "new_string": "y"}),
    ) {
        Some(Err(out)) => out,
        other => panic!("a refusal expected: {other:?}"),
    };
    assert!(out.is_error);
    assert_eq!(out.metadata.path.as_deref(), Some("f.txt"));
    let out = match ws.plan("write_file", json!({"path": "f.txt/x", "content": "q"})) {
        Some(Err(out)) => out,
        other => panic!("a refusal expected: {other:?}"),
    };
    assert!(
        out.text
            .contains("a part of its directory path is a file, not a directory"),
        "{}",
        out.text
    );
    assert_eq!(ws.names_in(&ws.root()), ["f.txt"]);
    // Tools that do not change files make no plan.
    assert!(ws.plan("read_file", json!({"path": "f.txt"})).is_none());
}

/// What the typed metadata holds is what the JSON (MCP `structuredContent`) says, and back.
#[test]
fn typed_file_metadata_round_trips_through_json() {
    let ws = Ws::new();
    ws.write("a.txt", "1\n2\n3\n4\n5\n");
    let read = ws.ok(
        "read_file",
        json!({"path": "a.txt", "offset": 2, "limit": 2}),
    );
    assert_eq!(
        read.metadata.lines,
        Some(LineRange {
            first: 2,
            last: 3,
            total: Some(5)
        })
    );
    assert_eq!(
        read.metadata.to_json()["shown_lines"],
        json!({"first": 2, "last": 3, "total": 5})
    );
    assert_eq!(read.metadata.path.as_deref(), Some("a.txt"));
    assert_eq!(Metadata::from_json(read.metadata.to_json()), read.metadata);

    let edit = ws.ok(
        "edit_file",
        json!({"path": "a.txt", "old_string": "3\n", "new_string": "three\n"}),
    );
    let [change] = edit.metadata.changes.as_slice() else {
        panic!("one change expected: {:?}", edit.metadata);
    };
    assert_eq!(change.path, "a.txt");
    assert_eq!((change.added, change.removed), (1, 1));
    assert_eq!(
        change.diff,
        unified("a.txt", "1\n2\n3\n4\n5\n", "1\n2\nthree\n4\n5\n")
    );
    let json = edit.metadata.to_json();
    assert_eq!(json["changes"][0]["diff"], json["diff"]);
    assert_eq!(Metadata::from_json(json), edit.metadata);
    let back: Metadata =
        serde_json::from_str(&serde_json::to_string(&edit.metadata).unwrap()).unwrap();
    assert_eq!(back, edit.metadata);

    let write = ws.ok("write_file", json!({"path": "b.txt", "content": "b\n"}));
    assert_eq!(
        Metadata::from_json(write.metadata.to_json()),
        write.metadata
    );
}
