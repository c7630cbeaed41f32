//! `grep` on real temporary trees: each parameter, each output mode, each message.

use serde_json::json;

use crate::search_support::{self, Tree, entries};

#[tokio::test]
async fn content_lines_are_sorted_by_path_then_line() {
    let tree = Tree::new();
    for (name, body) in [
        ("b.txt", "x\nneedle one\nneedle two\n"),
        ("a/z.txt", "needle deep\n"),
        ("a.txt", "needle top\n"),
        ("a-b.txt", "needle dash\n"),
        ("c/d/e.txt", "no\nno\nneedle 3\n"),
    ] {
        tree.write(name, body);
    }
    let text = tree.grep_ok(json!({"pattern": "needle"})).await;
    assert_eq!(
        text,
        "a/z.txt:1: needle deep\n\
         a-b.txt:1: needle dash\n\
         a.txt:1: needle top\n\
         b.txt:2: needle one\n\
         b.txt:3: needle two\n\
         c/d/e.txt:3: needle 3\n"
    );
}

#[tokio::test]
async fn order_is_the_same_on_every_run() {
    let tree = Tree::new();
    for i in 0..300 {
        tree.write(
            format!("d{}/f{}.txt", i % 17, i),
            format!("line\nmatch {i}\n"),
        );
    }
    let first = tree.grep_ok(json!({"pattern": "match", "limit": 0})).await;
    let mut sorted = entries(&first);
    let mut keys: Vec<(String, u64)> = sorted
        .iter()
        .map(|l| {
            let mut parts = l.splitn(3, ':');
            (
                parts.next().unwrap().to_owned(),
                parts.next().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let given = keys.clone();
    keys.sort_by(|a, b| {
        std::path::Path::new(&a.0)
            .cmp(std::path::Path::new(&b.0))
            .then(a.1.cmp(&b.1))
    });
    assert_eq!(given, keys);
    assert_eq!(sorted.len(), 300);
    for _ in 0..5 {
        assert_eq!(
            tree.grep_ok(json!({"pattern": "match", "limit": 0})).await,
            first
        );
    }
    sorted.clear();
}

#[tokio::test]
async fn case_fixed_strings_and_regex_classes() {
    let tree = Tree::new();
    tree.write(
        "f.txt",
        "Hello World\nhello world\nprice: $5 (approx)\nid_42 id_x\n",
    );
    let text = tree.grep_ok(json!({"pattern": "hello"})).await;
    assert_eq!(text, "f.txt:2: hello world\n");
    let text = tree
        .grep_ok(json!({"pattern": "HELLO", "case_insensitive": true}))
        .await;
    assert_eq!(text, "f.txt:1: Hello World\nf.txt:2: hello world\n");
    let text = tree
        .grep_ok(json!({"pattern": "$5 (approx)", "fixed_strings": true}))
        .await;
    assert_eq!(text, "f.txt:3: price: $5 (approx)\n");
    let text = tree.grep_ok(json!({"pattern": r"id_[0-9]+\b"})).await;
    assert_eq!(text, "f.txt:4: id_42 id_x\n");
    // Strings where booleans are expected are coerced by the registry.
    let text = tree
        .grep_ok(json!({"pattern": "WORLD", "case_insensitive": "true"}))
        .await;
    assert_eq!(entries(&text).len(), 2);
}

#[tokio::test]
async fn globs_include_exclude_and_match_names_at_any_depth() {
    let tree = Tree::new();
    tree.write("src/main.rs", "needle\n");
    tree.write("src/deep/lib.rs", "needle\n");
    tree.write("src/deep/notes.md", "needle\n");
    tree.write("tests/t.rs", "needle\n");
    tree.write("top.rs", "needle\n");
    let files = |text: String| entries(&text);
    let all = |glob: serde_json::Value| json!({"pattern": "needle", "glob": glob, "output_mode": "files_with_matches"});
    assert_eq!(
        files(tree.grep_ok(all(json!("*.rs"))).await),
        ["src/deep/lib.rs", "src/main.rs", "tests/t.rs", "top.rs"]
    );
    assert_eq!(
        files(tree.grep_ok(all(json!("src/*.rs"))).await),
        ["src/main.rs"]
    );
    assert_eq!(
        files(tree.grep_ok(all(json!(["*.rs", "!tests/**"]))).await),
        ["src/deep/lib.rs", "src/main.rs", "top.rs"]
    );
    assert_eq!(
        files(tree.grep_ok(all(json!(["!*.rs"]))).await),
        ["src/deep/notes.md"]
    );
    assert_eq!(
        files(tree.grep_ok(all(json!("*.{md,txt}"))).await),
        ["src/deep/notes.md"]
    );
    // Globs are relative to `path`.
    let text = tree
        .grep_ok(json!({"pattern": "needle", "path": "src", "glob": "deep/*.rs", "output_mode": "files_with_matches"}))
        .await;
    assert_eq!(files(text), ["src/deep/lib.rs"]);
    let out = tree.grep(all(json!("src/[a"))).await;
    assert!(
        out.is_error && out.text.contains("invalid glob \"src/[a\""),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn file_types_select_and_exclude() {
    let tree = Tree::new();
    tree.write("a.rs", "needle\n");
    tree.write("b.py", "needle\n");
    tree.write("c.md", "needle\n");
    let run = |t: serde_json::Value| json!({"pattern": "needle", "type": t, "output_mode": "files_with_matches"});
    assert_eq!(entries(&tree.grep_ok(run(json!("rust"))).await), ["a.rs"]);
    assert_eq!(
        entries(&tree.grep_ok(run(json!(["rust", "py"]))).await),
        ["a.rs", "b.py"]
    );
    assert_eq!(entries(&tree.grep_ok(run(json!("python"))).await), ["b.py"]);
    assert_eq!(
        entries(&tree.grep_ok(run(json!("!md"))).await),
        ["a.rs", "b.py"]
    );
    let out = tree.grep(run(json!("rusty"))).await;
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text.contains("unknown file type \"rusty\"") && out.text.contains("`rust`"),
        "{}",
        out.text
    );
    // With nothing close to suggest, the name still ends its sentence.
    let out = tree.grep(run(json!("nosuchtype"))).await;
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text
            .contains("unknown file type \"nosuchtype\". Types are ripgrep's names"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn multiline_matches_span_lines() {
    let tree = Tree::new();
    tree.write("f.rs", "fn a() {\n    body();\n}\nfn b() {}\n");
    let text = tree
        .grep_ok(json!({"pattern": r"fn a\(\) \{\n\s+body", "multiline": true}))
        .await;
    assert_eq!(text, "f.rs:1: fn a() {\nf.rs:2:     body();\n");
    let text = tree
        .grep_ok(json!({"pattern": r"a\(\).*?\}", "multiline": true, "output_mode": "count"}))
        .await;
    assert_eq!(text, "f.rs:3\n");
    let out = tree.grep(json!({"pattern": "body();\n}"})).await;
    assert!(
        out.is_error && out.text.contains("multiline: true"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn context_lines_and_group_separators() {
    let tree = Tree::new();
    let body: String = (1..=20)
        .map(|i| {
            if i == 5 || i == 7 || i == 15 {
                format!("hit {i}\n")
            } else {
                format!("line {i}\n")
            }
        })
        .collect();
    tree.write("a.txt", &body);
    tree.write("b.txt", "hit b\nafter\n");
    let text = tree.grep_ok(json!({"pattern": "hit", "context": 1})).await;
    assert_eq!(
        text,
        "a.txt-4- line 4\na.txt:5: hit 5\na.txt-6- line 6\na.txt:7: hit 7\na.txt-8- line 8\n\
         --\na.txt-14- line 14\na.txt:15: hit 15\na.txt-16- line 16\n\
         --\nb.txt:1: hit b\nb.txt-2- after\n"
    );
    let text = tree
        .grep_ok(json!({"pattern": "hit 15", "before": 2}))
        .await;
    assert_eq!(
        text,
        "a.txt-13- line 13\na.txt-14- line 14\na.txt:15: hit 15\n"
    );
    let text = tree
        .grep_ok(json!({"pattern": "hit 15", "after": 1, "context": 5}))
        .await;
    assert_eq!(entries(&text).first().unwrap(), "a.txt-10- line 10");
    assert_eq!(entries(&text).last().unwrap(), "a.txt-16- line 16");
}

#[tokio::test]
async fn files_with_matches_and_count_modes() {
    let tree = Tree::new();
    tree.write("one.txt", "x\nx\nx\n");
    tree.write("two/t.txt", "x\n");
    tree.write("none.txt", "y\n");
    assert_eq!(
        tree.grep_ok(json!({"pattern": "x", "output_mode": "files_with_matches"}))
            .await,
        "one.txt\ntwo/t.txt\n"
    );
    assert_eq!(
        tree.grep_ok(json!({"pattern": "x", "output_mode": "count"}))
            .await,
        "one.txt:3\ntwo/t.txt:1\n"
    );
    // Enum values are matched leniently.
    assert_eq!(
        tree.grep_ok(json!({"pattern": "x", "output_mode": "Count"}))
            .await,
        "one.txt:3\ntwo/t.txt:1\n"
    );
    let out = tree
        .grep(json!({"pattern": "x", "output_mode": "lines"}))
        .await;
    assert!(
        out.is_error && out.text.contains("output_mode"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn capped_output_has_exact_totals_and_the_next_offset() {
    let tree = Tree::new();
    for f in 0..41 {
        let body: String = (0..10 + (f % 3))
            .map(|i| format!("match {f} {i}\n"))
            .collect();
        tree.write(format!("f{f:02}.txt"), body);
    }
    let total: usize = (0..41).map(|f| 10 + (f % 3)).sum();
    assert_eq!(total, 450);
    let out = tree.grep(json!({"pattern": "match"})).await;
    assert!(!out.is_error);
    assert_eq!(entries(&out.text).len(), 200);
    assert!(
        out.text.ends_with("\n\nshowing 200 of 450 matching lines in 41 files; call grep with offset=200 for more\n"),
        "{}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["matches"], 450);
    let out = tree.grep(json!({"pattern": "match", "offset": 400})).await;
    assert_eq!(entries(&out.text).len(), 50);
    assert!(
        out.text
            .ends_with("\n\nshowing matching lines 401-450 of 450 in 41 files\n"),
        "{}",
        out.text
    );
    let out = tree
        .grep(json!({"pattern": "match", "offset": 200, "limit": 100}))
        .await;
    assert!(
        out.text.contains(
            "showing matching lines 201-300 of 450 in 41 files; call grep with offset=300 for more"
        ),
        "{}",
        out.text
    );
    let out = tree
        .grep(json!({"pattern": "match", "output_mode": "files_with_matches", "limit": 10}))
        .await;
    assert!(
        out.text.ends_with(
            "\n\nshowing 10 of 41 files with matches; call grep with offset=10 for more\n"
        ),
        "{}",
        out.text
    );
    let out = tree
        .grep(json!({"pattern": "match", "output_mode": "count", "limit": 40}))
        .await;
    assert!(
        out.text.ends_with("\n\nshowing 40 of 41 files with matches (450 matching lines in all); call grep with offset=40 for more\n"),
        "{}",
        out.text
    );
    let out = tree.grep(json!({"pattern": "match", "offset": 450})).await;
    assert!(
        out.is_error
            && out
                .text
                .contains("offset=450 is past the end: there are 450 matching lines"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn pages_concatenate_to_the_full_list() {
    let tree = Tree::new();
    let mut rng = search_support::Lcg(7);
    for f in 0..60 {
        let lines = rng.below(30);
        let body: String = (0..lines)
            .map(|i| {
                if rng.below(3) == 0 {
                    format!("hit {f} {i}\n")
                } else {
                    format!("miss {i}\n")
                }
            })
            .collect();
        tree.write(format!("d{}/f{f}.txt", f % 7), body);
    }
    for mode in ["content", "files_with_matches", "count"] {
        for context in [0, 2] {
            let full = entries(
                &tree
                    .grep_ok(json!({"pattern": "hit", "output_mode": mode, "limit": 0}))
                    .await,
            );
            let mut pages = Vec::new();
            let mut offset = 0;
            loop {
                let out = tree.grep(json!({"pattern": "hit", "output_mode": mode, "limit": 7, "offset": offset})).await;
                if out.is_error {
                    assert!(out.text.contains("past the end"), "{}", out.text);
                    break;
                }
                let page = entries(&out.text);
                assert!(page.len() <= 7);
                pages.extend(page);
                offset += 7;
            }
            assert_eq!(pages, full, "mode {mode}");
            // With context, every matching line of the full list appears on exactly one page's
            // selection; the context travels with it.
            if mode == "content" && context > 0 {
                let with_context = tree
                    .grep_ok(json!({"pattern": "hit", "context": context, "limit": 0}))
                    .await;
                let matches: Vec<&str> = with_context
                    .lines()
                    .filter(|l| l.contains(": hit"))
                    .collect();
                assert_eq!(matches.len(), full.len());
            }
        }
    }
}

#[tokio::test]
async fn invalid_patterns_explain_themselves() {
    let tree = Tree::new();
    tree.write("f.txt", "call(x)\n");
    let out = tree.grep(json!({"pattern": "call(x"})).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("not a valid regex") && out.text.contains("unclosed group"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("    call(x\n"),
        "the pattern is shown: {}",
        out.text
    );
    assert!(
        out.text.contains('^'),
        "where it failed is marked: {}",
        out.text
    );
    assert!(
        out.text.contains("fixed_strings: true") && out.text.contains(r"`call\(x`"),
        "{}",
        out.text
    );
    let out = tree.grep(json!({"pattern": r"foo(?!bar)"})).await;
    assert!(
        out.is_error && out.text.starts_with("look-around"),
        "{}",
        out.text
    );
    assert!(out.text.contains("not supported"), "{}", out.text);
    let out = tree.grep(json!({"pattern": r"(\w+) \1"})).await;
    assert!(
        out.is_error && out.text.starts_with("backreferences"),
        "{}",
        out.text
    );
    let out = tree.grep(json!({})).await;
    assert!(
        out.is_error && out.text.contains("missing required parameter `pattern`"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn empty_results_say_so_and_what_was_left_out() {
    let tree = Tree::new();
    tree.write("a.txt", "nothing here\n");
    let out = tree.grep(json!({"pattern": "absent"})).await;
    assert!(!out.is_error);
    assert!(
        out.text
            .starts_with("No matches for \"absent\" in the workspace (searched 1 file)."),
        "{}",
        out.text
    );
    assert!(
        !out.text.contains("hidden or ignored"),
        "nothing is hidden or ignored here: {}",
        out.text
    );
    tree.write(".env", "absent\n");
    tree.write(".gitignore", "build/\n");
    tree.write("build/out.txt", "absent\n");
    let out = tree.grep(json!({"pattern": "absent"})).await;
    assert!(
        out.text
            .contains("hidden or ignored by .gitignore/.ignore/.rgignore"),
        "{}",
        out.text
    );
    assert!(out.text.contains("hidden: true"), "{}", out.text);
    let out = tree
        .grep(json!({"pattern": "absent", "glob": "*.md", "type": "rust"}))
        .await;
    assert!(
        out.text
            .contains("chosen by glob [\"*.md\"] and type [\"rust\"]"),
        "{}",
        out.text
    );
    assert!(out.text.contains("case-sensitive"), "{}", out.text);
}

#[tokio::test]
async fn paths_are_checked() {
    let tree = Tree::new();
    tree.write("src/lib.rs", "needle\n");
    let out = tree
        .grep(json!({"pattern": "needle", "path": "src/lib.rs"}))
        .await;
    assert_eq!(out.text, "src/lib.rs:1: needle\n");
    let out = tree
        .grep(json!({"pattern": "needle", "file_path": "src"}))
        .await;
    assert_eq!(out.text, "src/lib.rs:1: needle\n");
    let out = tree.grep(json!({"pattern": "needle", "path": "scr"})).await;
    assert!(
        out.is_error
            && out.text.contains("'scr' does not exist")
            && out.text.contains("did you mean 'src'"),
        "{}",
        out.text
    );
    let out = tree
        .grep(json!({"pattern": "needle", "path": "/etc"}))
        .await;
    assert!(
        out.is_error && out.text.contains("outside the workspace"),
        "{}",
        out.text
    );
    let out = tree.grep(json!({"pattern": "needle", "path": "../"})).await;
    assert!(
        out.is_error && out.text.contains("outside the workspace"),
        "{}",
        out.text
    );
}
