//! The custom-tool example (`examples/batch_rename.rs`), built and run as a user would: its
//! preview renames nothing, `resolve` applies or discards it.

use std::path::PathBuf;
use std::process::Command;

/// The example's binary, built if this test run did not build it (a filtered `cargo test`).
fn example() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let binary = profile_dir.join("examples/batch_rename");
    if !binary.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "build",
                "-q",
                "-p",
                "lathe-tools",
                "--example",
                "batch_rename",
            ])
            .status()
            .unwrap();
        assert!(status.success(), "building the example failed");
    }
    binary
}

fn run(dir: &std::path::Path, decision: &str) -> String {
    let out = Command::new(example())
        .args([dir.to_str().unwrap(), "old", "new", decision])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn the_batch_rename_example_previews_then_applies_through_resolve() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["old_a.txt", "old_b.txt", "keep.txt"] {
        std::fs::write(dir.path().join(name), name).unwrap();
    }
    let out = run(dir.path(), "apply");
    assert!(
        out.contains("preview: old_a.txt -> new_a.txt\nold_b.txt -> new_b.txt\n"),
        "{out}"
    );
    assert!(out.contains("Nothing has been changed yet"), "{out}");
    assert!(out.contains("resolve offered: true"), "{out}");
    assert!(
        out.contains("resolve: Renamed 2 file(s) (from the example)."),
        "{out}"
    );
    assert_eq!(files(dir.path()), ["keep.txt", "new_a.txt", "new_b.txt"]);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("new_a.txt")).unwrap(),
        "old_a.txt"
    );
}

#[test]
fn the_batch_rename_example_discards_through_its_reject() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("old_a.txt"), "a").unwrap();
    let out = run(dir.path(), "discard");
    assert!(
        out.contains("resolve: Discarded the batch rename. Reason: from the example"),
        "{out}"
    );
    assert_eq!(files(dir.path()), ["old_a.txt"]);
}
