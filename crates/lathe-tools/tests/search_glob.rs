//! `glob` on real temporary trees: patterns, sorting, limits and messages.

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::search_support::{Tree, entries};

fn set_mtime(path: &std::path::Path, seconds_ago: u64) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - Duration::from_secs(seconds_ago))
        .unwrap();
}

fn code_tree() -> Tree {
    let tree = Tree::new();
    for path in [
        "src/main.rs",
        "src/lib.rs",
        "src/deep/mod.rs",
        "src/tests/test_a.py",
        "src/tests/deeper/test_b.py",
        "src/helper.py",
        "tests/test_c.py",
        "README.md",
        "build.rs",
    ] {
        tree.write(path, "x\n");
    }
    tree
}

async fn by_path(tree: &Tree, pattern: &str) -> Vec<String> {
    let out = tree.glob(json!({"pattern": pattern, "sort": "path"})).await;
    assert!(!out.is_error, "{pattern}: {}", out.text);
    if out.text.starts_with("No files match") {
        return Vec::new();
    }
    entries(&out.text)
}

#[tokio::test]
async fn patterns_match_as_documented() {
    let tree = code_tree();
    assert_eq!(
        by_path(&tree, "**/*.rs").await,
        ["build.rs", "src/deep/mod.rs", "src/lib.rs", "src/main.rs"]
    );
    // Without a slash: any depth.
    assert_eq!(
        by_path(&tree, "*.rs").await,
        by_path(&tree, "**/*.rs").await
    );
    assert_eq!(by_path(&tree, "mod.rs").await, ["src/deep/mod.rs"]);
    // With a slash: anchored at the search root; `*` stays within one directory.
    assert_eq!(
        by_path(&tree, "src/*.rs").await,
        ["src/lib.rs", "src/main.rs"]
    );
    assert_eq!(
        by_path(&tree, "src/**/test_*.py").await,
        ["src/tests/deeper/test_b.py", "src/tests/test_a.py"]
    );
    assert_eq!(by_path(&tree, "./src/*.py").await, ["src/helper.py"]);
    assert_eq!(by_path(&tree, "*.{md,py}").await.len(), 5);
    assert_eq!(
        by_path(&tree, "src/tests/").await,
        ["src/tests/deeper/test_b.py", "src/tests/test_a.py"]
    );
    let abs = format!("{}/src/*.rs", tree.root().display());
    assert_eq!(by_path(&tree, &abs).await, ["src/lib.rs", "src/main.rs"]);
    // Relative to `path`, shown relative to the workspace root.
    let out = tree
        .glob(json!({"pattern": "*.py", "path": "src/tests", "sort": "path"}))
        .await;
    assert_eq!(
        out.text,
        "src/tests/deeper/test_b.py\nsrc/tests/test_a.py\n"
    );
}

#[tokio::test]
async fn newest_first_by_default_ties_by_path() {
    let tree = Tree::new();
    for (name, age) in [
        ("old.txt", 300),
        ("new.txt", 10),
        ("b-tie.txt", 100),
        ("a-tie.txt", 100),
        ("mid/x.txt", 200),
    ] {
        let path = tree.write(name, "x\n");
        set_mtime(&path, age);
    }
    // Ties need equal times to the nanosecond: copy one file's time to the other.
    let tie = std::fs::metadata(tree.root().join("a-tie.txt"))
        .unwrap()
        .modified()
        .unwrap();
    std::fs::File::options()
        .write(true)
        .open(tree.root().join("b-tie.txt"))
        .unwrap()
        .set_modified(tie)
        .unwrap();
    let out = tree.glob(json!({"pattern": "*.txt"})).await;
    assert_eq!(
        out.text,
        "new.txt\na-tie.txt\nb-tie.txt\nmid/x.txt\nold.txt\n"
    );
    let out = tree.glob(json!({"pattern": "*.txt", "sort": "path"})).await;
    assert_eq!(
        out.text,
        "a-tie.txt\nb-tie.txt\nmid/x.txt\nnew.txt\nold.txt\n"
    );
}

#[tokio::test]
async fn capped_listing_gives_the_exact_total_and_what_was_left_out() {
    let tree = Tree::new();
    for i in 0..1234 {
        tree.write(format!("d{}/f{i:04}.txt", i % 9), "x\n");
    }
    let out = tree
        .glob(json!({"pattern": "**/*.txt", "sort": "path"}))
        .await;
    assert_eq!(entries(&out.text).len(), 100);
    assert!(
        out.text.ends_with("\n\nshowing 100 of 1,234 files (by path); 1,134 left out: narrow the pattern or path, or raise limit\n"),
        "{}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["files"], 1234);
    let out = tree.glob(json!({"pattern": "**/*.txt", "limit": 5})).await;
    assert!(
        out.text
            .contains("showing 5 of 1,234 files (newest first); 1,229 left out"),
        "{}",
        out.text
    );
    let out = tree.glob(json!({"pattern": "**/*.txt", "limit": 0})).await;
    assert_eq!(out.text.lines().count(), 1234);
}

#[tokio::test]
async fn empty_results_explain_themselves() {
    let tree = code_tree();
    let out = tree.glob(json!({"pattern": "*.java"})).await;
    assert!(!out.is_error);
    assert_eq!(out.text, "No files match \"*.java\" in the workspace.");
    let out = tree.glob(json!({"pattern": "src"})).await;
    assert!(
        out.text
            .contains("'src' is a directory: \"src/**\" lists the files in it."),
        "{}",
        out.text
    );
    let out = tree.glob(json!({"pattern": "readme.md"})).await;
    assert!(
        out.text.contains("Ignoring case, these match: README.md"),
        "{}",
        out.text
    );
    tree.write(".gitignore", "target/\n");
    tree.write("target/debug/gen.java", "x\n");
    tree.write(".cache/x.java", "x\n");
    let out = tree.glob(json!({"pattern": "*.java"})).await;
    assert!(
        out.text.contains("2 files that match are hidden or ignored by .gitignore/.ignore/.rgignore (e.g. .cache/x.java, target/debug/gen.java)"),
        "{}",
        out.text
    );
    assert!(out.text.contains("hidden: true"), "{}", out.text);
}

#[tokio::test]
async fn bad_arguments_are_explained() {
    let tree = code_tree();
    let out = tree.glob(json!({"pattern": "src/[a"})).await;
    assert!(
        out.is_error && out.text.contains("invalid glob pattern \"src/[a\""),
        "{}",
        out.text
    );
    let out = tree
        .glob(json!({"pattern": "*.rs", "path": "build.rs"}))
        .await;
    assert!(
        out.is_error && out.text.contains("'build.rs' is a file"),
        "{}",
        out.text
    );
    let out = tree.glob(json!({"pattern": "*.rs", "path": "nope"})).await;
    assert!(
        out.is_error && out.text.contains("'nope' does not exist"),
        "{}",
        out.text
    );
    let out = tree.glob(json!({"pattern": "/usr/*.rs"})).await;
    assert!(
        out.is_error && out.text.contains("absolute path outside"),
        "{}",
        out.text
    );
    let out = tree.glob(json!({"pattern": "*.rs", "sort": "size"})).await;
    assert!(out.is_error && out.text.contains("sort"), "{}", out.text);
    let out = tree.glob(json!({"pattern": ""})).await;
    assert!(out.is_error && out.text.contains("empty"), "{}", out.text);
}

#[tokio::test]
async fn non_utf8_names_are_listed() {
    let tree = Tree::new();
    tree.write_raw_name("d", b"\xffodd.txt", "x");
    tree.write("d/plain.txt", "x");
    assert_eq!(
        by_path(&tree, "*.txt").await,
        ["d/plain.txt", "d/\u{fffd}odd.txt"]
    );
}
