//! Every way out of the workspace, tried through the file tools themselves.

use std::os::unix::fs::symlink;

use serde_json::{Value, json};

use crate::file_support::Ws;

const SECRET: &str = "top secret\n";

/// A workspace with an outside directory holding `secret.txt`, and links into it.
fn setup() -> Ws {
    let ws = Ws::new();
    std::fs::write(ws.outside().join("secret.txt"), SECRET).unwrap();
    std::fs::create_dir_all(ws.outside().join("sub")).unwrap();
    ws.write("inside.txt", "inside\n");
    symlink(ws.outside().join("secret.txt"), ws.path("file_link")).unwrap();
    symlink(ws.outside(), ws.path("dir_link")).unwrap();
    // A link in the middle of a path: deep/mid -> outside, used as deep/mid/secret.txt.
    std::fs::create_dir_all(ws.path("deep")).unwrap();
    symlink(ws.outside(), ws.path("deep/mid")).unwrap();
    // A relative link that climbs out.
    symlink("../../../../../../../../../../..", ws.path("climb")).unwrap();
    ws
}

fn assert_refused(out: &lathe_runtime::ToolOutput, what: &str) {
    assert!(out.is_error, "{what} was allowed: {}", out.text);
    assert!(
        out.text.contains("outside the workspace") || out.text.contains("/proc"),
        "{what}: {}",
        out.text
    );
    assert!(
        !out.text.contains("top secret"),
        "{what} leaked: {}",
        out.text
    );
}

/// Paths that must never be read, for the given workspace.
fn escapes(ws: &Ws) -> Vec<String> {
    let outside = ws.outside();
    vec![
        "../secret.txt".to_owned(),
        format!(
            "../{}/secret.txt",
            outside.file_name().unwrap().to_string_lossy()
        ),
        "inside/../../secret.txt".to_owned(),
        outside.join("secret.txt").display().to_string(),
        "/etc/passwd".to_owned(),
        "file_link".to_owned(),
        "dir_link/secret.txt".to_owned(),
        "deep/mid/secret.txt".to_owned(),
        format!("climb{}", outside.join("secret.txt").display()),
        format!("/proc/self/root{}", outside.join("secret.txt").display()),
        format!("/proc/self/root{}", ws.path("inside.txt").display()),
        format!("/proc/self/cwd/../{}", "secret.txt"),
        "/dev/fd/0".to_owned(),
    ]
}

#[test]
fn read_file_cannot_leave_the_workspace() {
    let ws = setup();
    for path in escapes(&ws) {
        let out = ws.call("read_file", json!({"path": path}));
        assert_refused(&out, &format!("read_file {path}"));
    }
    // The control: the inside file reads fine, by relative and absolute path.
    ws.ok("read_file", json!({"path": "inside.txt"}));
    ws.ok("read_file", json!({"path": ws.path("inside.txt")}));
}

#[test]
fn list_files_cannot_leave_the_workspace() {
    let ws = setup();
    for path in [
        "..",
        "dir_link",
        "deep/mid",
        "dir_link/sub",
        "/",
        "/proc/self/root/tmp",
    ] {
        let out = ws.call("list_files", json!({"path": path}));
        assert_refused(&out, &format!("list_files {path}"));
    }
    let abs_outside = ws.outside().display().to_string();
    assert_refused(
        &ws.call("list_files", json!({"path": abs_outside})),
        "list_files outside",
    );
}

#[test]
fn write_file_cannot_leave_the_workspace() {
    let ws = setup();
    let mut targets = escapes(&ws);
    targets.extend([
        "dir_link/new.txt".to_owned(),
        "deep/mid/new.txt".to_owned(),
        "dir_link/sub/new.txt".to_owned(),
        "dir_link/made/by/write.txt".to_owned(),
        "../new.txt".to_owned(),
    ]);
    for path in &targets {
        let out = ws.call("write_file", json!({"path": path, "content": "pwned\n"}));
        assert_refused(&out, &format!("write_file {path}"));
    }
    assert_eq!(
        std::fs::read_to_string(ws.outside().join("secret.txt")).unwrap(),
        SECRET
    );
    assert_eq!(
        ws.names_in(&ws.outside()),
        vec!["secret.txt", "sub"],
        "nothing was created outside"
    );
    assert!(ws.names_in(&ws.outside().join("sub")).is_empty());
    // The symlinks themselves are untouched (not replaced by regular files).
    assert!(
        std::fs::symlink_metadata(ws.path("file_link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn edit_file_cannot_leave_the_workspace() {
    let ws = setup();
    for path in escapes(&ws) {
        let out = ws.call(
            "edit_file",
            json!({"path": path, "old_string": "top", "new_string": "pwned"}),
        );
        assert_refused(&out, &format!("edit_file {path}"));
    }
    for path in ["dir_link/created.txt", "deep/mid/created.txt"] {
        let out = ws.call(
            "edit_file",
            json!({"path": path, "old_string": "", "new_string": "pwned"}),
        );
        assert_refused(&out, &format!("edit_file creating {path}"));
    }
    assert_eq!(
        std::fs::read_to_string(ws.outside().join("secret.txt")).unwrap(),
        SECRET
    );
    assert_eq!(ws.names_in(&ws.outside()), vec!["secret.txt", "sub"]);
}

#[test]
fn links_that_stay_inside_are_followed() {
    let ws = setup();
    ws.write("real/target.txt", "real\n");
    symlink(ws.path("real/target.txt"), ws.path("inner_link")).unwrap();
    symlink("real", ws.path("inner_dir")).unwrap();
    let out = ws.ok("read_file", json!({"path": "inner_link"}));
    assert_eq!(out.metadata.to_json()["path"], "real/target.txt");
    ws.ok(
        "edit_file",
        json!({"path": "inner_dir/target.txt", "old_string": "real", "new_string": "edited"}),
    );
    assert_eq!(ws.text("real/target.txt"), "edited\n");
    // Writing through an inside link replaces the target and keeps the link.
    ws.ok(
        "write_file",
        json!({"path": "inner_link", "content": "written\n"}),
    );
    assert_eq!(ws.text("real/target.txt"), "written\n");
    assert!(
        std::fs::symlink_metadata(ws.path("inner_link"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[test]
fn refusals_name_the_path_and_the_root() {
    let ws = setup();
    let out = ws.call("read_file", json!({"path": "dir_link/secret.txt"}));
    assert!(
        out.text
            .contains("'dir_link/secret.txt' is outside the workspace"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains(&ws.root().display().to_string()),
        "{}",
        out.text
    );
    assert!(out.text.contains("symlink"), "{}", out.text);
    let value: Value = serde_json::to_value(&out).unwrap();
    assert_eq!(value["is_error"], true);
}
