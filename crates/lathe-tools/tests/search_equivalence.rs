//! For a set of patterns over a generated tree, `files_with_matches` is exactly what the `ignore`
//! walker (configured as documented: ignore files without git, no hidden files, no symlinks)
//! plus a naive line-by-line regex scan finds; `count` agrees line for line; and `glob` agrees
//! with the walker plus a name match.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::search_support::{Lcg, Tree, entries};

const WORDS: &[&str] = &[
    "alpha", "beta", "Gamma", "delta", "fn", "main", "struct", "impl", "TODO", "FIXME", "x1",
    "y22", "foo_bar", "FooBar", "(", ")", "{", "}", "[", "]", "+", "*", "é", "naïve", "日本", "\t",
    "  ", "return", "let", "mut", "42", "0x1F", "a.b", "self", "::", "//", "#", "-",
];

const DIRS: &[&str] = &[
    "", "src", "src/core", "tests", "docs", "vendor", "build", ".hidden", "a/b/c",
];
const EXTS: &[&str] = &["rs", "py", "md", "txt", "log", "c"];

fn generate(tree: &Tree, rng: &mut Lcg) {
    tree.write(".gitignore", "*.log\nbuild/\n!build/keep.rs\n");
    tree.write("src/.gitignore", "gen_*\n");
    tree.write("docs/.ignore", "draft*\n");
    tree.write("vendor/.rgignore", "*.c\n");
    for i in 0..400 {
        let dir = rng.pick(DIRS);
        let ext = rng.pick(EXTS);
        let prefix = match rng.below(10) {
            0 => "gen_",
            1 => "draft",
            _ => "file",
        };
        let name = if dir.is_empty() {
            format!("{prefix}{i}.{ext}")
        } else {
            format!("{dir}/{prefix}{i}.{ext}")
        };
        let lines = rng.below(40);
        let mut body = String::new();
        for _ in 0..lines {
            let words = rng.below(9);
            let line: Vec<&str> = (0..words).map(|_| *rng.pick(WORDS)).collect();
            body.push_str(&line.join(" "));
            body.push_str(if rng.below(8) == 0 { "\r\n" } else { "\n" });
        }
        let mut bytes = body.into_bytes();
        match rng.below(25) {
            0 => bytes.insert(bytes.len() / 2, 0),
            1 => bytes.extend_from_slice(b"\xff\xfe latin\xe9 alpha\n"),
            _ => {}
        }
        tree.write(&name, bytes);
    }
    tree.write("build/keep.rs", "alpha beta\n");
    std::os::unix::fs::symlink(tree.root().join("src"), tree.root().join("link-to-src")).unwrap();
}

/// The reference: the `ignore` walker as documented, and a plain scan of each line.
fn reference(root: &Path, regex: &regex::bytes::Regex) -> BTreeMap<PathBuf, usize> {
    let mut found = BTreeMap::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(true)
        .require_git(false)
        .follow_links(false)
        .add_custom_ignore_filename(".rgignore")
        .build();
    for entry in walker {
        let entry = entry.unwrap();
        if !entry.file_type().unwrap().is_file() {
            continue;
        }
        let bytes = std::fs::read(entry.path()).unwrap();
        if bytes.contains(&0) {
            continue;
        }
        let count = bytes
            .split(|&b| b == b'\n')
            .enumerate()
            .filter(|(i, line)| {
                // The empty piece after a final newline is not a line.
                let last = *i == bytes.split(|&b| b == b'\n').count() - 1;
                !(last && line.is_empty())
            })
            .map(|(_, line)| line.strip_suffix(b"\r").unwrap_or(line))
            .filter(|line| regex.is_match(line))
            .count();
        if count > 0 {
            found.insert(
                entry.path().strip_prefix(root).unwrap().to_path_buf(),
                count,
            );
        }
    }
    found
}

#[tokio::test]
async fn files_with_matches_equals_walker_plus_naive_scan() {
    let tree = Tree::new();
    let mut rng = Lcg(2024);
    generate(&tree, &mut rng);
    let root = tree.root();
    let cases: &[(&str, bool, bool)] = &[
        // (pattern, case_insensitive, fixed_strings)
        ("alpha", false, false),
        ("gamma", true, false),
        ("TODO|FIXME", false, false),
        (r"\bfoo_[a-z]+\b", false, false),
        (r"^fn\s+main", false, false),
        (r"[0-9]{2,}", false, false),
        (r"0x[0-9A-F]+", false, false),
        ("naïve", false, false),
        ("NAÏVE", true, false),
        ("日本", false, false),
        ("a.b", true, true),
        ("(", false, true),
        (r"\)$", false, false),
        (r"^\s*$", false, false),
        ("latin", false, false),
        ("struct.*impl", false, false),
        ("does-not-occur", false, false),
    ];
    for &(pattern, case_insensitive, fixed) in cases {
        let source = if fixed {
            regex::escape(pattern)
        } else {
            pattern.to_owned()
        };
        let regex = regex::bytes::RegexBuilder::new(&source)
            .case_insensitive(case_insensitive)
            .build()
            .unwrap();
        let expected = reference(&root, &regex);
        let args = |mode: &str| {
            json!({"pattern": pattern, "case_insensitive": case_insensitive, "fixed_strings": fixed,
                   "output_mode": mode, "limit": 0})
        };
        let out = tree.grep(args("files_with_matches")).await;
        assert!(!out.is_error, "{pattern}: {}", out.text);
        let got: Vec<String> = if out.text.starts_with("No matches") {
            Vec::new()
        } else {
            entries(&out.text)
        };
        let want: Vec<String> = expected
            .keys()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        assert_same(&got, &want, &format!("files_with_matches for {pattern:?}"));
        let out = tree.grep(args("count")).await;
        let got: Vec<String> = if out.text.starts_with("No matches") {
            Vec::new()
        } else {
            entries(&out.text)
        };
        let want: Vec<String> = expected
            .iter()
            .map(|(p, n)| format!("{}:{n}", p.to_string_lossy()))
            .collect();
        assert_same(&got, &want, &format!("count for {pattern:?}"));
    }
}

#[tokio::test]
async fn glob_equals_walker_plus_name_match() {
    let tree = Tree::new();
    let mut rng = Lcg(99);
    generate(&tree, &mut rng);
    let root = tree.root();
    for pattern in [
        "**/*.rs",
        "*.md",
        "src/**/*.py",
        "src/*.rs",
        "**/file1*.{c,txt}",
        "a/b/**",
        "*",
    ] {
        let glob = if pattern.contains('/') {
            pattern.to_owned()
        } else {
            format!("**/{pattern}")
        };
        let matcher = globset::GlobBuilder::new(&glob)
            .literal_separator(true)
            .build()
            .unwrap()
            .compile_matcher();
        let mut want: Vec<String> = ignore::WalkBuilder::new(&root)
            .require_git(false)
            .add_custom_ignore_filename(".rgignore")
            .build()
            .map(Result::unwrap)
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.path().strip_prefix(&root).unwrap().to_path_buf())
            .filter(|p| matcher.is_match(p))
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        want.sort_by(|a, b| Path::new(a).cmp(Path::new(b)));
        let out = tree
            .glob(json!({"pattern": pattern, "sort": "path", "limit": 0}))
            .await;
        assert!(!out.is_error, "{pattern}: {}", out.text);
        let got = if out.text.starts_with("No files match") {
            Vec::new()
        } else {
            entries(&out.text)
        };
        assert_same(&got, &want, &format!("glob {pattern:?}"));
    }
}

/// Equal lists, or a failure that names only the differences.
fn assert_same(got: &[String], want: &[String], what: &str) {
    if got != want {
        let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).collect();
        let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).collect();
        panic!("{what}: unexpected {extra:?}, missing {missing:?} (or a different order)");
    }
}
