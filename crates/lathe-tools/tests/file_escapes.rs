//! The double-escape repair (issue 14, "files written as given"): a corpus of one-line strings
//! meant as written, which every layer leaves alone, and of multi-line code sent with every line
//! break escaped, which is repaired with a note; through the argument-level function and through
//! `write_file` and `edit_file` on real files.

use lathe_runtime::args::{FileKind, REPAIR_NOTE, undo_double_escape};
use serde_json::json;

use crate::file_support::Ws;

/// One-line text meant as written: LaTeX, Windows paths, regexes, text about escapes.
const LITERAL: &[&str] = &[
    r"$\theta \neq \nabla f$",
    r"dir=C:\new\table",
    r"\newcommand{\R}{\mathbb{R}}",
    r"\textbf{bold} and \textit{italic}\newline",
    r"$a \ne b$ and $\nu \to 0$",
    r"\noindent Some text follows.",
    r"\begin{align} x \\ y \end{align}\nonumber",
    r"C:\Users\name\notes.txt",
    r"set PATH=D:\tools\node\bin",
    r"copy build\new.dll dist\",
    r"cd build\new",
    r"^\s*\n",
    r"[^\n]+",
    r"Use \n for a newline and \t for a tab.",
    r"The escapes \n, \t and \r.",
    r#"printf("a\tb\n");"#,
    r#"echo -e "line1\nline2""#,
    r"\tau = 2\pi",
    r"$\rho \cdot \nabla$",
    r"\section{Intro}\nThe theorem holds.",
    r"f(x) = \nabla \cdot F",
    r"\node[draw] (a) at (0,0) {A};",
    r"Windows: C:\new\tmp\readme.txt",
    r"%APPDATA%\npm\node_modules",
    r"regex: [^\n\t]+",
    r"a line ending in \n",
    r#""\n" is a newline"#,
    r"the sequence \r\n ends lines on Windows",
    r"\nicefrac{1}{2}",
    r"x \neq y",
    r"See \ref{fig:a}\newline",
    r"sed s/\n/,/g file",
    r"lines = text.split('\n')",
    r"split on \n+$",
    r"$\vec{v} = \nabla\phi$",
];

/// Multi-line code sent with every line break escaped, with the file it would go to.
const DOUBLE_ESCAPED: &[(&str, &str)] = &[
    ("a.py", r"def f():\n    return 1\n"),
    (
        "b.py",
        r#"def greet(name):\n    print(\"hello, \" + name)\n\ngreet(\"x\")\n"#,
    ),
    ("c.rs", r#"fn main() {\n    println!(\"hi\");\n}\n"#),
    (
        "d.go",
        r#"package main\n\nfunc main() {\n\tfmt.Println(\"hi\")\n}\n"#,
    ),
    (
        "e.js",
        r"function add(a, b) {\n  return a + b;\n}\nmodule.exports = add;\n",
    ),
    (
        "f.c",
        r"#include <stdio.h>\nint main(void) {\n    return 0;\n}\n",
    ),
    ("g.sh", r"#!/bin/sh\nset -e\necho done\n"),
    ("h.yml", r"name: ci\non:\n  push:\n    branches: [main]\n"),
    ("i.html", r"<ul>\n  <li>a</li>\n</ul>\n"),
    ("j.sql", r"SELECT id\nFROM users\nWHERE id = 1;\n"),
    ("k.rb", r"class A\n  def x\n    1\n  end\nend\n"),
    (
        "l.java",
        r#"public class A {\n    public static void main(String[] args) {\n        System.out.println(\"a\");\n    }\n}\n"#,
    ),
    (
        "m.toml",
        r#"[package]\nname = \"x\"\nversion = \"0.1.0\"\n"#,
    ),
    ("Makefile", r"all:\n\tcc -o app main.c\n"),
    ("n.lua", r"local t = {}\nfor i = 1, 3 do\n  t[i] = i\nend\n"),
    ("o.py", r"if x:\n\tprint(x)\n"),
    ("p.swift", r#"func hi() {\n    print(\"hi\")\n}\n"#),
    ("q.py", r#"import re\npat = re.compile(r\"\\d+\")\n"#),
    ("r.py", r"a = 1\r\nb = 2\r\n"),
    ("s.py", r#"print(\"a\\nb\")\nprint(2)"#),
    ("t.py", r"x = 1\nu = 2\n"),
    ("u.ts", r"const x = 1;\nexport default x;"),
];

/// What the sender meant: each JSON escape the second encoding added, undone.
fn meant(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[test]
fn corpus_sizes() {
    assert!(LITERAL.len() >= 25);
    assert!(DOUBLE_ESCAPED.len() >= 15);
}

#[test]
fn args_level_repair_keeps_literal_text_and_repairs_escaped_code() {
    for text in LITERAL {
        assert_eq!(
            undo_double_escape(text, FileKind::Other),
            None,
            "meant as written: {text}"
        );
    }
    for (path, text) in DOUBLE_ESCAPED {
        assert_eq!(
            undo_double_escape(text, FileKind::of_path(path)).as_deref(),
            Some(meant(text).as_str()),
            "double-escaped: {text}"
        );
    }
    assert_eq!(
        meant(r#"import re\npat = re.compile(r\"\\d+\")\n"#),
        "import re\npat = re.compile(r\"\\d+\")\n"
    );
}

#[test]
fn write_file_writes_literal_text_as_given() {
    let ws = Ws::new();
    for (i, text) in LITERAL.iter().enumerate() {
        let path = format!("lit{i}.txt");
        let out = ws.ok("write_file", json!({"path": path, "content": text}));
        assert_eq!(ws.text(&path), *text, "{text}");
        assert!(!out.text.contains("note:"), "{}", out.text);
        assert!(out.text.contains("(+1 -0)"), "{}", out.text);
    }
}

#[test]
fn write_file_repairs_escaped_code_and_says_so() {
    let ws = Ws::new();
    for (path, text) in DOUBLE_ESCAPED {
        let out = ws.ok("write_file", json!({"path": path, "content": text}));
        assert_eq!(ws.text(path), meant(text), "{text}");
        assert!(out.text.contains(REPAIR_NOTE), "{}", out.text);
    }
}

#[test]
fn edit_file_new_string_literal_text_is_written_as_given() {
    let ws = Ws::new();
    for (i, text) in LITERAL.iter().enumerate() {
        let path = format!("lit{i}.txt");
        ws.write(&path, "before\nMARKER\nafter\n");
        let out = ws.ok(
            "edit_file",
            json!({"path": path, "old_string": "MARKER", "new_string": text}),
        );
        assert_eq!(ws.text(&path), format!("before\n{text}\nafter\n"), "{text}");
        assert!(!out.text.contains("note:"), "{}", out.text);
        assert!(out.text.contains("(+1 -1)"), "{}", out.text);
    }
}

#[test]
fn edit_file_repairs_escaped_new_string_and_says_so() {
    let ws = Ws::new();
    for (path, text) in DOUBLE_ESCAPED {
        ws.write(path, "MARKER\n");
        let out = ws.ok(
            "edit_file",
            json!({"path": path, "old_string": "MARKER\n", "new_string": text}),
        );
        // edit_file keeps the file's final newline.
        let mut expected = meant(text);
        if !expected.ends_with('\n') {
            expected.push('\n');
        }
        assert_eq!(ws.text(path), expected, "{text}");
        assert!(out.text.contains(REPAIR_NOTE), "{}", out.text);
    }
    // Creating a file with edit_file (an empty old_string) repairs the same way.
    let out = ws.ok(
        "edit_file",
        json!({"path": "new.py", "old_string": "", "new_string": r"def f():\n    return 1\n"}),
    );
    assert_eq!(ws.text("new.py"), "def f():\n    return 1\n");
    assert!(out.text.contains(REPAIR_NOTE), "{}", out.text);
}

/// Regression for issue 14: the three reported corruptions.
#[test]
fn issue_14_reported_strings_are_written_as_given() {
    let ws = Ws::new();
    ws.ok(
        "write_file",
        json!({"path": "m.txt", "content": r"$\theta \neq \nabla f$"}),
    );
    assert_eq!(ws.text("m.txt"), r"$\theta \neq \nabla f$");
    ws.ok(
        "write_file",
        json!({"path": "c.cfg", "content": r"dir=C:\new\table"}),
    );
    assert_eq!(ws.text("c.cfg"), r"dir=C:\new\table");
    ws.write("doc.sty", "% macros\n");
    ws.ok(
        "edit_file",
        json!({"path": "doc.sty", "old_string": "% macros", "new_string": r"\newcommand{\R}{\mathbb{R}}"}),
    );
    assert_eq!(ws.text("doc.sty"), "\\newcommand{\\R}{\\mathbb{R}}\n");
}

#[test]
fn files_whose_backslashes_are_meant_are_never_repaired() {
    let ws = Ws::new();
    let code = r"def f():\n    return 1\n";
    for path in ["notes.md", "paper.tex", "setup.ps1", "build.BAT", "doc.rst"] {
        assert_eq!(FileKind::of_path(path), FileKind::Backslashed, "{path}");
        let out = ws.ok("write_file", json!({"path": path, "content": code}));
        assert_eq!(ws.text(path), code, "{path}");
        assert!(!out.text.contains("note:"), "{}", out.text);
    }
    for path in ["a.py", "src/md", ".md", "dir.tex/x.rs"] {
        assert_eq!(FileKind::of_path(path), FileKind::Other, "{path}");
    }
}

#[test]
fn text_with_a_real_line_break_is_written_as_given() {
    // The way back the note offers: any real line break keeps every escape as written.
    let ws = Ws::new();
    let text = "def f():\\n    return 1\\n\n";
    ws.ok("write_file", json!({"path": "k.py", "content": text}));
    assert_eq!(ws.text("k.py"), text);
}
