//! What `grep` and `glob` leave out: ignore files (nested, negated, with and without git),
//! hidden files, version-control directories, binary files and symbolic links.

use serde_json::json;

use crate::search_support::{Tree, entries};

async fn grep_files(tree: &Tree, extra: serde_json::Value) -> Vec<String> {
    let mut args = json!({"pattern": "needle", "output_mode": "files_with_matches"});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    let out = tree.grep(args).await;
    assert!(!out.is_error, "{}", out.text);
    if out.text.starts_with("No matches") {
        return Vec::new();
    }
    entries(&out.text)
}

async fn glob_files(tree: &Tree, extra: serde_json::Value) -> Vec<String> {
    let mut args = json!({"pattern": "**/*.txt", "sort": "path"});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    let out = tree.glob(args).await;
    assert!(!out.is_error, "{}", out.text);
    if out.text.starts_with("No files match") {
        return Vec::new();
    }
    entries(&out.text)
}

fn ignore_tree() -> Tree {
    let tree = Tree::new();
    tree.write(
        ".gitignore",
        "*.log.txt\n!keep.log.txt\nbuild/\n/rooted.txt\n",
    );
    tree.write("a.txt", "needle\n");
    tree.write("x.log.txt", "needle\n");
    tree.write("keep.log.txt", "needle\n");
    tree.write("build/out.txt", "needle\n");
    tree.write("rooted.txt", "needle\n");
    tree.write("sub/rooted.txt", "needle\n");
    tree.write("sub/.gitignore", "secret*.txt\n!secret-ok.txt\n");
    tree.write("sub/secret.txt", "needle\n");
    tree.write("sub/secret-ok.txt", "needle\n");
    tree.write("sub/deeper/.gitignore", "!secret.txt\n");
    tree.write("sub/deeper/secret.txt", "needle\n");
    tree.write("sub/deeper/secret2.txt", "needle\n");
    tree.write(".ignore", "from-ignore.txt\n");
    tree.write("from-ignore.txt", "needle\n");
    tree.write("sub/.rgignore", "from-rg.txt\n");
    tree.write("sub/from-rg.txt", "needle\n");
    tree
}

const NOT_IGNORED: &[&str] = &[
    "a.txt",
    "keep.log.txt",
    "sub/deeper/secret.txt",
    "sub/rooted.txt",
    "sub/secret-ok.txt",
];

#[tokio::test]
async fn nested_ignore_files_with_negations_without_git() {
    let tree = ignore_tree();
    assert_eq!(grep_files(&tree, json!({})).await, NOT_IGNORED);
    assert_eq!(glob_files(&tree, json!({})).await, NOT_IGNORED);
}

#[tokio::test]
async fn nested_ignore_files_inside_a_git_repository() {
    let tree = ignore_tree();
    tree.mkdir(".git");
    tree.write(".git/info/exclude", "a.txt\n");
    let expected: Vec<&str> = NOT_IGNORED
        .iter()
        .copied()
        .filter(|p| *p != "a.txt")
        .collect();
    assert_eq!(grep_files(&tree, json!({})).await, expected);
    assert_eq!(glob_files(&tree, json!({})).await, expected);
}

#[tokio::test]
async fn gitignore_above_a_nested_repository_root_does_not_apply() {
    let tree = Tree::new();
    tree.write(".gitignore", "*.txt\n");
    tree.mkdir("inner/.git");
    tree.write("inner/f.txt", "needle\n");
    tree.write("outer.txt", "needle\n");
    // Searching the inner repository: the outer .gitignore lies above its root.
    assert_eq!(
        grep_files(&tree, json!({"path": "inner"})).await,
        ["inner/f.txt"]
    );
    assert_eq!(
        glob_files(&tree, json!({"path": "inner"})).await,
        ["inner/f.txt"]
    );
}

#[tokio::test]
async fn an_ignored_directory_given_as_path_is_searched() {
    let tree = ignore_tree();
    assert_eq!(
        grep_files(&tree, json!({"path": "build"})).await,
        ["build/out.txt"]
    );
    assert_eq!(
        glob_files(&tree, json!({"path": "build"})).await,
        ["build/out.txt"]
    );
}

#[tokio::test]
async fn hidden_files_only_when_asked_and_never_vcs_directories() {
    let tree = Tree::new();
    tree.write("shown.txt", "needle\n");
    tree.write(".hidden.txt", "needle\n");
    tree.write(".config/settings.txt", "needle\n");
    tree.write("dir/.inner.txt", "needle\n");
    tree.write(".git/HEAD.txt", "needle\n");
    tree.write("sub/.hg/store.txt", "needle\n");
    assert_eq!(grep_files(&tree, json!({})).await, ["shown.txt"]);
    assert_eq!(glob_files(&tree, json!({})).await, ["shown.txt"]);
    let all = [
        ".config/settings.txt",
        ".hidden.txt",
        "dir/.inner.txt",
        "shown.txt",
    ];
    assert_eq!(grep_files(&tree, json!({"hidden": true})).await, all);
    assert_eq!(glob_files(&tree, json!({"hidden": true})).await, all);
    // A glob that names a hidden path asks for it.
    assert_eq!(
        glob_files(&tree, json!({"pattern": ".config/*.txt"})).await,
        [".config/settings.txt"]
    );
    assert_eq!(
        grep_files(&tree, json!({"glob": ".config/**"})).await,
        [".config/settings.txt"]
    );
    // A hidden directory given as path is searched.
    assert_eq!(
        grep_files(&tree, json!({"path": ".config"})).await,
        [".config/settings.txt"]
    );
}

#[tokio::test]
async fn binary_files_are_skipped_and_counted() {
    let tree = Tree::new();
    tree.write("text.txt", "needle\n");
    tree.write("blob.bin", b"needle\x00\x01\x02needle\n");
    tree.write("img.png", b"\x89PNG\r\n\x1a\n\x00\x00needle");
    // NUL far after a first match (beyond the first read buffer).
    let mut late = b"needle\n".to_vec();
    late.extend(std::iter::repeat_n(b'x', 300_000));
    late.extend(b"\x00tail needle\n");
    tree.write("late.dat", late);
    let out = tree.grep(json!({"pattern": "needle"})).await;
    assert_eq!(
        out.text,
        "text.txt:1: needle\n\nskipped 3 binary files (not searched): blob.bin, img.png, late.dat\n"
    );
    assert_eq!(out.metadata.to_json()["binary_skipped"], 3);
    let out = tree
        .grep(json!({"pattern": "needle", "output_mode": "count"}))
        .await;
    assert!(
        out.text.starts_with("text.txt:1\n\nskipped 3 binary files"),
        "{}",
        out.text
    );
    let out = tree
        .grep(json!({"pattern": "needle", "path": "blob.bin"}))
        .await;
    assert!(!out.is_error);
    assert!(
        out.text
            .contains("'blob.bin' is a binary file; grep does not search binary files"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn symlinks_are_not_followed_in_or_out_of_the_workspace() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "needle outside\n").unwrap();
    let tree = Tree::new();
    tree.write("real/inside.txt", "needle inside\n");
    tree.symlink(outside.path(), "out-dir");
    tree.symlink(outside.path().join("secret.txt"), "out-file.txt");
    tree.symlink(tree.root().join("real"), "in-dir");
    tree.symlink(tree.root().join("real/inside.txt"), "in-file.txt");
    tree.symlink("missing-target", "dangling.txt");
    let out = tree.grep(json!({"pattern": "needle"})).await;
    assert_eq!(out.text, "real/inside.txt:1: needle inside\n");
    assert_eq!(glob_files(&tree, json!({})).await, ["real/inside.txt"]);
    // As `path`: a link that stays inside is resolved; one that leads out is refused.
    let out = tree
        .grep(json!({"pattern": "needle", "path": "in-dir"}))
        .await;
    assert_eq!(out.text, "real/inside.txt:1: needle inside\n");
    for path in ["out-dir", "out-file.txt"] {
        let out = tree.grep(json!({"pattern": "needle", "path": path})).await;
        assert!(
            out.is_error && out.text.contains("outside the workspace"),
            "{path}: {}",
            out.text
        );
        let out = tree.glob(json!({"pattern": "*", "path": path})).await;
        assert!(
            out.is_error && out.text.contains("outside the workspace"),
            "{path}: {}",
            out.text
        );
    }
}

#[cfg(unix)]
#[tokio::test]
async fn unreadable_files_are_reported_not_fatal() {
    use std::os::unix::fs::PermissionsExt;
    let tree = Tree::new();
    tree.write("ok.txt", "needle\n");
    let locked = tree.write("locked/f.txt", "needle\n");
    let dir = locked.parent().unwrap().to_path_buf();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root ignores permissions; only check when the directory really is unreadable.
    let unreadable = std::fs::read_dir(&dir).is_err();
    let out = tree.grep(json!({"pattern": "needle"})).await;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert!(!out.is_error);
    if unreadable {
        assert!(
            out.text
                .starts_with("ok.txt:1: needle\n\n1 path could not be read: locked"),
            "{}",
            out.text
        );
    } else {
        assert_eq!(
            entries(&out.text),
            ["locked/f.txt:1: needle", "ok.txt:1: needle"]
        );
    }
}
