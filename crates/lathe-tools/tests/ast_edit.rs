//! `ast_edit` through the real registry on real files: structural search in several languages,
//! the preview of a rewrite (nothing written, every match and a diff per file), patterns that
//! do not parse, zero matches, and the walk's rules (ignore files, languages by extension).

use crate::file_support::Ws;
use serde_json::{Value, json};

fn meta(out: &lathe_runtime::ToolOutput, key: &str) -> Value {
    out.metadata.extra.get(key).cloned().unwrap_or(Value::Null)
}

/// The `path:line:col: text` lines of a result.
fn hit_lines(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| *l != "Matches:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn search_finds_calls_by_structure_in_each_language() {
    let ws = Ws::new();
    let cases: [(&str, &str, &str, &str, &str); 10] = [
        (
            "a.rs",
            "fn main() {\n    let v = foo(1,\n        2);\n    bar(foo(3, 4));\n}\n",
            "foo($A, $B)",
            "rust",
            "a.rs:2:13: foo(1,|a.rs:4:9: foo(3, 4)",
        ),
        (
            "b.py",
            "def f(x):\n    print(x)\n    print ( x , 2 )\n",
            "print($$$ARGS)",
            "python",
            "b.py:2:5: print(x)|b.py:3:5: print ( x , 2 )",
        ),
        (
            "c.js",
            "console.log(a);\nconsole.warn(b);\n",
            "console.log($A)",
            "javascript",
            "c.js:1:1: console.log(a)",
        ),
        (
            "d.ts",
            "const x: number = 1;\nlet y = 2;\n",
            "const $X: $T = $V",
            "typescript",
            "d.ts:1:1: const x: number = 1;",
        ),
        (
            "e.tsx",
            "const a = <b>hi</b>;\n",
            "<b>$$$C</b>",
            "tsx",
            "e.tsx:1:11: <b>hi</b>",
        ),
        (
            "f.go",
            "package m\nfunc g() error {\n\tif err != nil {\n\t\treturn err\n\t}\n\treturn nil\n}\n",
            "if err != nil { $$$B }",
            "go",
            "f.go:3:2: if err != nil {",
        ),
        (
            "G.java",
            "class G { void m() { System.out.println(1); } }\n",
            "System.out.println($A)",
            "java",
            "G.java:1:22: System.out.println(1)",
        ),
        (
            "h.c",
            "void f(void) { p = kmalloc(n, GFP_KERNEL); q = kmalloc(n, GFP_ATOMIC); }\n",
            "kmalloc($N, GFP_KERNEL)",
            "c",
            "h.c:1:20: kmalloc(n, GFP_KERNEL)",
        ),
        (
            "i.cpp",
            "int main() { std::vector<int> v; return 0; }\n",
            "std::vector<$T> $V;",
            "cpp",
            "i.cpp:1:14: std::vector<int> v;",
        ),
        (
            "j.sh",
            "#!/bin/sh\necho hello world\nprintf x\n",
            "echo $$$A",
            "bash",
            "j.sh:2:1: echo hello world",
        ),
    ];
    for (file, content, _, _, _) in &cases {
        ws.write(file, content);
    }
    for (file, _, pattern, language, expected) in cases {
        let expected: Vec<&str> = expected.split('|').collect();
        // By the language given, over the whole workspace: only that language's files.
        let out = ws.ok(
            "ast_edit",
            json!({"pattern": pattern, "language": language}),
        );
        assert_eq!(hit_lines(&out.text), expected, "{language}: {}", out.text);
        assert_eq!(meta(&out, "matches"), json!(expected.len()), "{language}");
        assert_eq!(meta(&out, "files"), json!(1), "{language}");
        // By the file's extension.
        let out = ws.ok("ast_edit", json!({"pattern": pattern, "path": file}));
        assert_eq!(hit_lines(&out.text), expected, "{file}: {}", out.text);
    }
}

#[test]
fn without_a_language_each_file_is_parsed_as_its_own() {
    let ws = Ws::new();
    ws.write("a.rs", "fn f() { foo(1); }\n");
    ws.write("b.py", "foo(2)\n");
    ws.write("c.go", "package m\nfunc g() { foo(3) }\n");
    ws.write("notes.txt", "foo(4)\n");
    let out = ws.ok("ast_edit", json!({"pattern": "foo($A)"}));
    assert_eq!(
        hit_lines(&out.text),
        ["a.rs:1:10: foo(1)", "b.py:1:1: foo(2)", "c.go:2:12: foo(3)"],
        "{}",
        out.text
    );
    assert!(
        out.text
            .starts_with("3 matches in 3 files (3 files searched: "),
        "{}",
        out.text
    );
    // Only Python files with the language given.
    let out = ws.ok("ast_edit", json!({"pattern": "foo($A)", "language": "py"}));
    assert_eq!(hit_lines(&out.text), ["b.py:1:1: foo(2)"]);
}

#[test]
fn a_rewrite_is_a_preview_that_changes_nothing() {
    let ws = Ws::new();
    let a = "fn main() {\n    let x = old(1, two);\n    old(old(3, 4), 5);\n}\n";
    let b = "fn g() {\n    old(7, 8)\n}\n";
    ws.write("src/a.rs", a);
    ws.write("src/b.rs", b);
    ws.write("src/c.rs", "fn h() {}\n");
    let out = ws.call(
        "ast_edit",
        json!({"pattern": "old($A, $B)", "rewrite": "new($B, $A)", "language": "rust"}),
    );
    assert_eq!(ws.text("src/a.rs"), a);
    assert_eq!(ws.text("src/b.rs"), b);
    let text = &out.text;
    // Totals and files first.
    assert!(
        text.starts_with(
            "Preview (nothing is changed yet): 3 replacements of 4 matches in 2 files would change 2 files"
        ),
        "{text}"
    );
    assert!(
        text.contains("src/a.rs: 3 matches, 2 replacements (+2 -2)\n"),
        "{text}"
    );
    assert!(
        text.contains("src/b.rs: 1 match, 1 replacement (+1 -1)\n"),
        "{text}"
    );
    assert_eq!(
        hit_lines(text),
        [
            "src/a.rs:2:13: old(1, two)",
            "src/a.rs:3:5: old(old(3, 4), 5)",
            "src/a.rs:3:9: old(3, 4)",
            "src/b.rs:2:5: old(7, 8)",
        ]
    );
    // A unified diff per file, of the rewrite ast-grep makes (the outer match of a nested pair).
    assert!(
        text.contains(
            "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,4 +1,4 @@\n fn main() {\n-    let x = old(1, two);\n-    old(old(3, 4), 5);\n+    let x = new(two, 1);\n+    new(5, old(3, 4));\n }\n"
        ),
        "{text}"
    );
    assert!(text.contains("--- a/src/b.rs\n+++ b/src/b.rs\n"), "{text}");
    assert_eq!(meta(&out, "replacements"), json!(3));
    assert_eq!(meta(&out, "files_changed"), json!(2));
    // The call itself records no change.
    assert!(out.metadata.changes.is_empty());
}

#[test]
fn a_pattern_that_does_not_parse_says_so_with_the_language() {
    let ws = Ws::new();
    ws.write("a.rs", "fn f() { foo(1); }\n");
    let out = ws.err("ast_edit", json!({"pattern": "foo($A", "language": "rust"}));
    assert!(
        out.text.contains("does not parse as Rust") && out.text.contains("`foo($A`"),
        "{}",
        out.text
    );
    let out = ws.err(
        "ast_edit",
        json!({"pattern": "fn $F() { let = 1; }", "language": "rust"}),
    );
    assert!(
        out.text
            .contains("syntax error at column 11 near `let = 1;`")
            || out.text.contains("syntax error at column"),
        "{}",
        out.text
    );
    // Without a language: the languages of the files found are tried, and each one's error is
    // told when none of them takes the pattern.
    ws.write("b.py", "foo(2)\n");
    let out = ws.err("ast_edit", json!({"pattern": "foo(($A"}));
    assert!(
        out.text.contains("Rust") && out.text.contains("Python"),
        "{}",
        out.text
    );
    // A rewrite naming a meta-variable the pattern does not capture.
    let out = ws.err(
        "ast_edit",
        json!({"pattern": "foo($A)", "rewrite": "bar($B)", "language": "rust"}),
    );
    assert!(out.text.contains("uses $B"), "{}", out.text);
    assert_eq!(ws.text("a.rs"), "fn f() { foo(1); }\n");
}

#[test]
fn zero_matches_says_so_and_suggests_checking_one_file() {
    let ws = Ws::new();
    ws.write("a.rs", "fn f() { foo(1); }\n");
    let out = ws.ok(
        "ast_edit",
        json!({"pattern": "bar($A)", "language": "rust"}),
    );
    assert!(
        out.text
            .starts_with("No matches for `bar($A)` in the workspace (1 file searched: Rust)."),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("Check the pattern against one file you know holds such code"),
        "{}",
        out.text
    );
    assert_eq!(meta(&out, "matches"), json!(0));
    // No file of the language at all.
    let out = ws.ok("ast_edit", json!({"pattern": "foo($A)", "language": "go"}));
    assert!(
        out.text.contains("has no Go files to search"),
        "{}",
        out.text
    );
}

#[test]
fn an_unknown_language_lists_the_known_ones() {
    let ws = Ws::new();
    let out = ws.err("ast_edit", json!({"pattern": "x", "language": "cobol"}));
    assert!(
        out.text
            .contains("\"cobol\" is not a language ast_edit knows")
            && out
                .text
                .contains("rust, python, javascript, typescript, tsx, go, java, c, cpp, bash"),
        "{}",
        out.text
    );
    // A file whose language its name does not tell needs `language`.
    ws.write("script", "echo hi\n");
    let out = ws.err("ast_edit", json!({"pattern": "echo $A", "path": "script"}));
    assert!(out.text.contains("give `language`"), "{}", out.text);
    let out = ws.ok(
        "ast_edit",
        json!({"pattern": "echo $A", "path": "script", "language": "bash"}),
    );
    assert_eq!(hit_lines(&out.text), ["script:1:1: echo hi"]);
}

#[test]
fn the_walk_skips_what_grep_skips() {
    let ws = Ws::new();
    ws.write(".gitignore", "gen/\n");
    ws.write("src/a.rs", "fn f() { foo(1); }\n");
    ws.write("gen/b.rs", "fn f() { foo(2); }\n");
    ws.write(".hidden/c.rs", "fn f() { foo(3); }\n");
    ws.write("bin.rs", b"fn f() { foo(4); }\0\n");
    ws.write("latin1.rs", b"fn f() { foo(5); } // \xe9\n");
    let out = ws.ok("ast_edit", json!({"pattern": "foo($A)"}));
    assert_eq!(
        hit_lines(&out.text),
        ["src/a.rs:1:10: foo(1)"],
        "{}",
        out.text
    );
    assert!(
        out.text.contains("1 file skipped: binary")
            && out.text.contains("1 file skipped: not UTF-8"),
        "{}",
        out.text
    );
    let out = ws.ok("ast_edit", json!({"pattern": "foo($A)", "hidden": true}));
    assert_eq!(
        hit_lines(&out.text),
        [".hidden/c.rs:1:10: foo(3)", "src/a.rs:1:10: foo(1)"]
    );
    // An ignored directory given as the path is searched, as by grep.
    let out = ws.ok("ast_edit", json!({"pattern": "foo($A)", "path": "gen"}));
    assert_eq!(hit_lines(&out.text), ["gen/b.rs:1:10: foo(2)"]);
    let out = ws.ok(
        "ast_edit",
        json!({"pattern": "foo($A)", "glob": "!src/**", "hidden": true}),
    );
    assert_eq!(hit_lines(&out.text), [".hidden/c.rs:1:10: foo(3)"]);
    // Outside the workspace: refused, as every path is.
    let out = ws.err("ast_edit", json!({"pattern": "foo($A)", "path": "../"}));
    assert!(!out.text.is_empty());
}

#[test]
fn a_cut_result_still_starts_with_the_totals() {
    let ws = Ws::with_budget(2_000);
    let body: String = (0..400).map(|i| format!("    foo({i});\n")).collect();
    ws.write("a.rs", format!("fn f() {{\n{body}}}\n"));
    let out = ws.call(
        "ast_edit",
        json!({"pattern": "foo($A)", "rewrite": "bar($A)", "language": "rust"}),
    );
    assert!(out.text.chars().count() <= 2_000, "{}", out.text.len());
    assert!(
        out.text.starts_with(
            "Preview (nothing is changed yet): 400 replacements of 400 matches in 1 file would change 1 file"
        ),
        "{}",
        out.text
    );
    let saved = out
        .metadata
        .full_result
        .clone()
        .expect("the whole result is saved");
    let whole = std::fs::read_to_string(saved).unwrap();
    assert!(whole.contains("a.rs:401:5: foo(399)"), "{whole}");
    assert!(whole.contains("+    bar(399);"), "{whole}");
}

// The preview's pending action, applied and discarded through `resolve` in the real pipeline.

mod pending {
    use std::time::Duration;

    use lathe_policy::ApprovalMode::{self, Ask, Full, ReadOnly};
    use lathe_runtime::{
        ApprovalDecision, Approver, CallStatus, FixedAnswer, NonInteractive, Outcome,
        PENDING_UNAVAILABLE,
    };
    use serde_json::{Value, json};

    use crate::dispatch_support::{Fixture, Recording};

    const A: &str = "fn a() {\n    old(1, 2);\n}\n";
    const B: &str = "fn b() -> u8 {\n    old(3, 4)\n}\n";

    async fn call(
        f: &Fixture,
        mode: ApprovalMode,
        approver: &dyn Approver,
        name: &str,
        args: Value,
    ) -> Outcome {
        let dispatcher = f.dispatcher(mode);
        tokio::time::timeout(
            Duration::from_secs(20),
            dispatcher.call(name, args, approver, f.ctx()),
        )
        .await
        .expect("the call did not end")
    }

    fn fixture() -> Fixture {
        let f = Fixture::new();
        std::fs::write(f.path("src/a.rs"), A).unwrap();
        std::fs::write(f.path("src/b.rs"), B).unwrap();
        f
    }

    fn preview_args() -> Value {
        json!({"pattern": "old($X, $Y)", "rewrite": "new($Y, $X)", "path": "src"})
    }

    #[tokio::test]
    async fn a_preview_runs_in_read_only_and_resolve_applies_exactly_it() {
        let f = fixture();
        // The preview only reads: allowed in read-only, never asked about.
        let approver = Recording::new(NonInteractive);
        let preview = call(&f, ReadOnly, &approver, "ast_edit", preview_args()).await;
        assert_eq!(preview.status, CallStatus::Ok, "{}", preview.output.text);
        assert_eq!(approver.asked(), 0);
        assert!(
            preview
                .output
                .text
                .contains("Nothing has been changed yet: this is a preview"),
            "{}",
            preview.output.text
        );
        assert_eq!(f.read("src/a.rs"), A);
        assert_eq!(f.read("src/b.rs"), B);
        let pending = f.session.pending_summaries();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(pending[0].source, "ast_edit");
        let paths: Vec<&str> = pending[0].changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, ["src/a.rs", "src/b.rs"]);
        // The diffs the preview showed are the diffs of the pending changes.
        for change in &pending[0].changes {
            assert!(
                preview.output.text.contains(&change.diff),
                "{}\n---\n{}",
                preview.output.text,
                change.diff
            );
        }

        // Its apply is judged as writes: refused in read-only, the action kept.
        let outcome = call(
            &f,
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
        assert_eq!(f.read("src/a.rs"), A);
        assert!(f.session.has_pending());

        // Asked in ask mode, with the preview's diff; allowed: written as previewed.
        let approver = Recording::new(FixedAnswer(ApprovalDecision::AllowOnce));
        let outcome = call(
            &f,
            Ask,
            &approver,
            "resolve",
            json!({"action": "apply", "reason": "swap the arguments"}),
        )
        .await;
        assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
        assert_eq!(approver.asked(), 1);
        let diff = approver.requests()[0].diff.clone().unwrap_or_default();
        assert!(diff.contains("+    new(2, 1);"), "{diff}");
        assert_eq!(f.read("src/a.rs"), "fn a() {\n    new(2, 1);\n}\n");
        assert_eq!(f.read("src/b.rs"), "fn b() -> u8 {\n    new(4, 3)\n}\n");
        assert!(
            outcome
                .output
                .text
                .starts_with("Applied ast_edit old($X, $Y): 2 replacements in 2 files."),
            "{}",
            outcome.output.text
        );
        assert_eq!(outcome.output.metadata.changes, pending[0].changes);
        assert!(!f.session.has_pending());
    }

    #[tokio::test]
    async fn apply_is_refused_when_a_file_changed_after_the_preview() {
        let f = fixture();
        let preview = call(&f, Full, &NonInteractive, "ast_edit", preview_args()).await;
        assert_eq!(preview.status, CallStatus::Ok, "{}", preview.output.text);
        let edited = "fn b() -> u8 {\n    old(3, 4) + 1\n}\n";
        std::fs::write(f.path("src/b.rs"), edited).unwrap();
        let outcome = call(
            &f,
            Full,
            &NonInteractive,
            "resolve",
            json!({"action": "apply"}),
        )
        .await;
        assert_eq!(outcome.status, CallStatus::Error, "{}", outcome.output.text);
        assert!(
            outcome.output.text.contains("src/b.rs")
                && outcome.output.text.contains("nothing was written"),
            "{}",
            outcome.output.text
        );
        // All or nothing: the unchanged file was not written either.
        assert_eq!(f.read("src/a.rs"), A);
        assert_eq!(f.read("src/b.rs"), edited);
    }

    #[tokio::test]
    async fn discard_writes_nothing_and_a_search_leaves_nothing_pending() {
        let f = fixture();
        let search = call(
            &f,
            Full,
            &NonInteractive,
            "ast_edit",
            json!({"pattern": "old($X, $Y)", "path": "src"}),
        )
        .await;
        assert_eq!(search.status, CallStatus::Ok, "{}", search.output.text);
        assert!(!f.session.has_pending());
        // A rewrite that changes nothing leaves nothing pending either.
        let same = call(
            &f,
            Full,
            &NonInteractive,
            "ast_edit",
            json!({"pattern": "old($X, $Y)", "rewrite": "old($X, $Y)", "path": "src"}),
        )
        .await;
        assert!(
            same.output.text.contains("nothing is pending"),
            "{}",
            same.output.text
        );
        assert!(!f.session.has_pending());

        call(&f, Full, &NonInteractive, "ast_edit", preview_args()).await;
        assert!(f.session.has_pending());
        let outcome = call(
            &f,
            Full,
            &NonInteractive,
            "resolve",
            json!({"action": "discard"}),
        )
        .await;
        assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
        assert!(!f.session.has_pending());
        assert_eq!(f.read("src/a.rs"), A);
        assert_eq!(f.read("src/b.rs"), B);
    }

    #[tokio::test]
    async fn without_a_pending_store_the_preview_says_it_cannot_be_applied() {
        let f = fixture();
        f.session.set_pending_store(false);
        let outcome = call(&f, Full, &NonInteractive, "ast_edit", preview_args()).await;
        assert_eq!(outcome.status, CallStatus::Error, "{}", outcome.output.text);
        assert!(
            outcome.output.text.starts_with(PENDING_UNAVAILABLE)
                && outcome.output.text.contains("--- a/src/a.rs"),
            "{}",
            outcome.output.text
        );
        assert_eq!(f.read("src/a.rs"), A);
    }
}
