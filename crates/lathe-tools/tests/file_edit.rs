//! edit_file through the registry, on real temporary workspaces.

use serde_json::json;

use crate::file_support::Ws;

#[test]
fn exact_edit_reports_strategy_diff_and_counts() {
    let ws = Ws::new();
    ws.write("src/lib.rs", "fn a() {\n    1\n}\n\nfn b() {\n    2\n}\n");
    let out = ws.ok(
        "edit_file",
        json!({"path": "src/lib.rs", "old_string": "    2\n", "new_string": "    20\n    21\n"}),
    );
    assert_eq!(
        ws.text("src/lib.rs"),
        "fn a() {\n    1\n}\n\nfn b() {\n    20\n    21\n}\n"
    );
    assert!(
        out.text
            .starts_with("Edited src/lib.rs (+2 -1): 1 replacement at line 6, matched exactly.\n"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ "),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("\n-    2\n+    20\n+    21\n"),
        "{}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["path"], "src/lib.rs");
    assert_eq!(out.metadata.to_json()["added"], 2);
    assert_eq!(out.metadata.to_json()["removed"], 1);
    assert_eq!(out.metadata.to_json()["strategies"], json!(["exact"]));
}

#[test]
fn ambiguous_match_lists_every_line() {
    let ws = Ws::new();
    ws.write("f.py", "x = 1\nprint(x)\nx = 1\nx = 1\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "f.py", "old_string": "x = 1", "new_string": "x = 2"}),
    );
    assert!(
        out.text
            .contains("matches 3 places in f.py (lines 1, 3 and 4)"),
        "{}",
        out.text
    );
    assert!(out.text.contains("replace_all=true"), "{}", out.text);
    assert_eq!(ws.text("f.py"), "x = 1\nprint(x)\nx = 1\nx = 1\n");
    let out = ws.ok(
        "edit_file",
        json!({"path": "f.py", "old_string": "x = 1", "new_string": "x = 2", "replace_all": true}),
    );
    assert_eq!(ws.text("f.py"), "x = 2\nprint(x)\nx = 2\nx = 2\n");
    assert!(
        out.text.contains("3 replacements at lines 1, 3 and 4"),
        "{}",
        out.text
    );
}

/// A long line matched in a hundred thousand places: the line numbers are counted in one pass
/// (counting from the start of the file for each match took minutes).
#[test]
fn ambiguous_match_with_very_many_places_is_answered() {
    let ws = Ws::new();
    let line = "y".repeat(300_000);
    ws.write("one_line.txt", format!("{line}\nsecond yyy\n"));
    let out = ws.err(
        "edit_file",
        json!({"path": "one_line.txt", "old_string": "yyy", "new_string": "z"}),
    );
    assert!(
        out.text.contains("matches 100001 places in one_line.txt"),
        "{}",
        out.text
    );
    assert!(out.text.contains("(100001 in all)"), "{}", out.text);
    assert_eq!(ws.text("one_line.txt"), format!("{line}\nsecond yyy\n"));
}

#[test]
fn no_match_shows_the_closest_region_and_says_read_again() {
    let ws = Ws::new();
    ws.write(
        "m.rs",
        "use std::io;\n\nfn main() {\n    let total = add(1, 2);\n    println!(\"{total}\");\n}\n",
    );
    let out = ws.err(
        "edit_file",
        json!({"path": "m.rs", "old_string": "    let total = add(1, 3);\n    println!(\"{total}\");", "new_string": "x"}),
    );
    assert!(
        out.text.contains("old_string was not found in m.rs"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("The most similar text is at lines 4-5 ("),
        "{}",
        out.text
    );
    assert!(out.text.contains("% similar"), "{}", out.text);
    assert!(
        out.text.contains("     4\t    let total = add(1, 2);\n"),
        "{}",
        out.text
    );
    assert!(
        out.text
            .contains("Read the file again with read_file (offset=4)"),
        "{}",
        out.text
    );
}

#[test]
fn tolerant_strategies_are_named() {
    let ws = Ws::new();
    ws.write(
        "t.rs",
        "impl A {\n    fn f(&self) {\n        go(1);\n    }\n}\n",
    );
    // Indentation lost: trimmed lines, re-indented on the way in.
    let out = ws.ok(
        "edit_file",
        json!({"path": "t.rs", "old_string": "fn f(&self) {\n    go(1);\n}", "new_string": "fn f(&self) {\n    go(2);\n}"}),
    );
    assert!(out.text.contains("strategy trimmed_lines"), "{}", out.text);
    assert_eq!(
        out.metadata.to_json()["strategies"],
        json!(["trimmed_lines"])
    );
    assert_eq!(
        ws.text("t.rs"),
        "impl A {\n    fn f(&self) {\n        go(2);\n    }\n}\n"
    );
    // Spacing inside a line differs: runs of whitespace collapsed.
    ws.write("c.rs", "call(first,   second);\n");
    let out = ws.ok(
        "edit_file",
        json!({"path": "c.rs", "old_string": "call(first, second);", "new_string": "call(first, third);"}),
    );
    assert!(
        out.text.contains("strategy collapsed_whitespace"),
        "{}",
        out.text
    );
    assert_eq!(ws.text("c.rs"), "call(first, third);\n");
    // A call the model reflowed onto one line is not matched across the file's line break
    // (that would join lines, and in Python or shell two statements): refused, file intact.
    ws.write("r.py", "return foo\nbar()\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "r.py", "old_string": "foo bar", "new_string": "foo_bar"}),
    );
    assert!(out.text.contains("not found"), "{}", out.text);
    assert_eq!(ws.text("r.py"), "return foo\nbar()\n");
}

/// The model dedented `old_string` but wrote `new_string` at the file's indentation: the
/// replacement lands as written, not indented a second time.
#[test]
fn trimmed_match_keeps_a_replacement_already_at_the_files_indentation() {
    let ws = Ws::new();
    ws.write(
        "p.py",
        "def average(numbers):\n    total = sum(numbers)\n    return total / len(numbers)\n",
    );
    let out = ws.ok(
        "edit_file",
        json!({"path": "p.py",
               "old_string": "total = sum(numbers)\nreturn total / len(numbers)",
               "new_string": "    total = 0\n    return 0"}),
    );
    assert!(out.text.contains("strategy trimmed_lines"), "{}", out.text);
    assert_eq!(
        ws.text("p.py"),
        "def average(numbers):\n    total = 0\n    return 0\n"
    );
}

#[test]
fn double_escaped_text_is_unescaped() {
    let ws = Ws::new();
    ws.write("u.txt", "alpha\nbeta\ngamma\n");
    // A real newline keeps the argument layer's repair away; the literal \n is still escaped.
    let out = ws.ok(
        "edit_file",
        json!({"path": "u.txt", "old_string": "alpha\\nbeta\ngamma", "new_string": "ALPHA\\nbeta\ngamma"}),
    );
    assert!(out.text.contains("strategy unescaped"), "{}", out.text);
    assert_eq!(ws.text("u.txt"), "ALPHA\nbeta\ngamma\n");
    // Fully double-escaped (no real newline): not in the file as given, so unescaped.
    let out = ws.ok(
        "edit_file",
        json!({"path": "u.txt", "old_string": "beta\\ngamma", "new_string": "BETA\\ngamma"}),
    );
    assert!(out.text.contains("strategy unescaped"), "{}", out.text);
    assert_eq!(ws.text("u.txt"), "ALPHA\nBETA\ngamma\n");
}

#[test]
fn escape_sequences_in_source_match_as_written() {
    let ws = Ws::new();
    ws.write("p.c", "int main() {\n    printf(\"hello\\n\");\n}\n");
    let out = ws.ok(
        "edit_file",
        json!({"path": "p.c", "old_string": "printf(\"hello\\n\");", "new_string": "printf(\"bye\\n\");"}),
    );
    assert_eq!(ws.text("p.c"), "int main() {\n    printf(\"bye\\n\");\n}\n");
    assert!(out.text.contains("matched exactly"), "{}", out.text);
    // The literal text wins over a place that matches only once unescaped: `a\n"` is on the
    // last line as written, while line 1 holds `a`, a newline and `"`.
    ws.write("esc.py", "msg = \"\"\"a\n\"\"\"\nprint(\"a\\n\")\n");
    let out = ws.ok(
        "edit_file",
        json!({"path": "esc.py", "old_string": "a\\n\"", "new_string": "b\\n\""}),
    );
    assert!(out.text.contains("matched exactly"), "{}", out.text);
    assert_eq!(
        ws.text("esc.py"),
        "msg = \"\"\"a\n\"\"\"\nprint(\"b\\n\")\n"
    );
    // A one-line old_string with a new_string that is one line of code with an escape in a
    // string literal: written as given, not split.
    ws.write("re.py", "pat = None\n");
    ws.ok(
        "edit_file",
        json!({"path": "re.py", "old_string": "pat = None", "new_string": "pat = re.compile(r\"\\d+\\n\")"}),
    );
    assert_eq!(ws.text("re.py"), "pat = re.compile(r\"\\d+\\n\")\n");
    // ...while a double-escaped multi-line new_string is repaired.
    ws.write("m.py", "x = 1\n");
    ws.ok(
        "edit_file",
        json!({"path": "m.py", "old_string": "x = 1", "new_string": "x = 1\\ny = 2"}),
    );
    assert_eq!(ws.text("m.py"), "x = 1\ny = 2\n");
}

#[test]
fn edits_list_is_all_or_nothing() {
    let ws = Ws::new();
    ws.write("e.txt", "one\ntwo\nthree\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "e.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "zwei", "new_string": "2"}
        ]}),
    );
    assert!(
        out.text.starts_with("edits[1]: old_string was not found"),
        "{}",
        out.text
    );
    assert!(out.text.contains("No edit was applied"), "{}", out.text);
    assert_eq!(ws.text("e.txt"), "one\ntwo\nthree\n");
    let out = ws.ok(
        "edit_file",
        json!({"path": "e.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "two", "new_string": "2"},
            {"old_string": "1\n2", "new_string": "1+2", "replace_all": false}
        ]}),
    );
    assert_eq!(ws.text("e.txt"), "1+2\nthree\n");
    assert!(
        out.text
            .contains("3 edits; edits[0]: 1 replacement at line 1"),
        "{}",
        out.text
    );
}

#[test]
fn pointless_and_malformed_edits_are_refused_with_reasons() {
    let ws = Ws::new();
    ws.write("s.txt", "same\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "s.txt", "old_string": "same", "new_string": "same"}),
    );
    assert!(out.text.contains("identical"), "{}", out.text);
    let out = ws.err(
        "edit_file",
        json!({"path": "s.txt", "old_string": "", "new_string": "x"}),
    );
    assert!(
        out.text
            .contains("old_string is empty, but s.txt already exists"),
        "{}",
        out.text
    );
    let out = ws.err("edit_file", json!({"path": "s.txt", "old_string": "same"}));
    assert!(out.text.contains("new_string is missing"), "{}", out.text);
    let out = ws.err(
        "edit_file",
        json!({"path": "s.txt", "old_string": "a", "new_string": "b", "edits": [{"old_string": "c", "new_string": "d"}]}),
    );
    assert!(out.text.contains("not both"), "{}", out.text);
    assert_eq!(ws.text("s.txt"), "same\n");
}

#[test]
fn empty_old_string_creates_a_missing_file() {
    let ws = Ws::new();
    let out = ws.ok(
        "edit_file",
        json!({"path": "new/dir/n.txt", "old_string": "", "new_string": "hi\nthere\n"}),
    );
    assert_eq!(
        out.text.lines().next().unwrap(),
        "Created new/dir/n.txt (+2 -0)."
    );
    assert_eq!(ws.text("new/dir/n.txt"), "hi\nthere\n");
    assert_eq!(out.metadata.to_json()["created"], true);
}

#[test]
fn missing_file_suggests_names_and_write_file() {
    let ws = Ws::new();
    ws.write("config.toml", "a = 1\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "conifg.toml", "old_string": "a", "new_string": "b"}),
    );
    assert!(
        out.text.contains("conifg.toml does not exist"),
        "{}",
        out.text
    );
    assert!(out.text.contains("`config.toml`"), "{}", out.text);
    assert!(out.text.contains("write_file"), "{}", out.text);
}

#[test]
fn crlf_bom_final_newline_and_permissions_are_kept() {
    let ws = Ws::new();
    ws.write("win.txt", "\u{FEFF}first\r\nsecond\r\nthird");
    ws.chmod("win.txt", 0o640);
    ws.ok(
        "edit_file",
        json!({"path": "win.txt", "old_string": "second\nthird", "new_string": "2nd\nextra\nthird"}),
    );
    assert_eq!(
        ws.read("win.txt"),
        "\u{FEFF}first\r\n2nd\r\nextra\r\nthird".as_bytes()
    );
    assert_eq!(ws.mode("win.txt"), 0o640);
    ws.write("unix.txt", "a\nb\n");
    ws.ok(
        "edit_file",
        json!({"path": "unix.txt", "old_string": "b\n", "new_string": "c"}),
    );
    assert_eq!(ws.text("unix.txt"), "a\nc\n", "the final newline stays");
    ws.write("open.txt", "a\nb");
    ws.ok(
        "edit_file",
        json!({"path": "open.txt", "old_string": "b", "new_string": "c\n"}),
    );
    assert_eq!(ws.text("open.txt"), "a\nc", "no final newline stays absent");
}

#[test]
fn bytes_that_are_not_utf8_survive_an_edit_elsewhere() {
    let ws = Ws::new();
    ws.write("l1.txt", b"caf\xe9\nname = old\n\xff\xfe end\n");
    ws.ok(
        "edit_file",
        json!({"path": "l1.txt", "old_string": "name = old", "new_string": "name = new"}),
    );
    assert_eq!(ws.read("l1.txt"), b"caf\xe9\nname = new\n\xff\xfe end\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "l1.txt", "old_string": "caf\u{FFFD}", "new_string": "cafe"}),
    );
    assert!(out.text.contains("not UTF-8"), "{}", out.text);
}

#[test]
fn stale_file_is_refused_until_read_again() {
    let ws = Ws::new();
    ws.write("s.rs", "let a = 1;\n");
    ws.ok("read_file", json!({"path": "s.rs"}));
    ws.write("s.rs", "let a = 1;\nlet b = 2;\n");
    let out = ws.err(
        "edit_file",
        json!({"path": "s.rs", "old_string": "a = 1", "new_string": "a = 3"}),
    );
    assert!(out.text.contains("changed on disk"), "{}", out.text);
    assert_eq!(ws.text("s.rs"), "let a = 1;\nlet b = 2;\n");
    ws.ok("read_file", json!({"path": "s.rs"}));
    ws.ok(
        "edit_file",
        json!({"path": "s.rs", "old_string": "a = 1", "new_string": "a = 3"}),
    );
    // Its own edit counts as seen.
    ws.ok(
        "edit_file",
        json!({"path": "s.rs", "old_string": "b = 2", "new_string": "b = 4"}),
    );
    assert_eq!(ws.text("s.rs"), "let a = 3;\nlet b = 4;\n");
}

#[test]
fn directories_and_binary_files_are_not_edited() {
    let ws = Ws::new();
    ws.write("d/x", "");
    let out = ws.err(
        "edit_file",
        json!({"path": "d", "old_string": "a", "new_string": "b"}),
    );
    assert!(out.text.contains("d is a directory"), "{}", out.text);
    ws.write("b.bin", b"ab\0cd");
    let out = ws.err(
        "edit_file",
        json!({"path": "b.bin", "old_string": "ab", "new_string": "x"}),
    );
    assert!(out.text.contains("binary"), "{}", out.text);
    assert_eq!(ws.read("b.bin"), b"ab\0cd");
}

#[test]
fn no_temporary_file_is_left_behind() {
    let ws = Ws::new();
    ws.write("d/f.txt", "a\n");
    ws.ok(
        "edit_file",
        json!({"path": "d/f.txt", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(ws.names_in(&ws.path("d")), vec!["f.txt"]);
}
