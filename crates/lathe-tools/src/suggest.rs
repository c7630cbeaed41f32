//! "Did you mean" for a path that does not exist: names like the missing one, from the nearest
//! existing directory and from the rest of the workspace.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use lathe_runtime::workspace::Workspace;

/// How deep the walk from the nearest existing directory goes.
const NEAR_DEPTH: usize = 2;
/// How deep the walk from the workspace root goes (deep enough for `crates/x/src/y/z.rs`).
const ROOT_DEPTH: usize = 8;
/// At most this many names are compared, so a huge tree costs a bounded walk.
const MAX_CANDIDATES: usize = 20_000;
/// A candidate needs at least this score to be suggested.
const MIN_SCORE: f64 = 0.72;

/// Up to `max` existing paths (as shown to the model, directories with a trailing `/`) whose
/// names are most like `missing`, an absolute path that does not exist.
pub fn similar_paths(workspace: &Workspace, missing: &Path, max: usize) -> Vec<String> {
    let Some(target_name) = missing
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
    else {
        return Vec::new();
    };
    let target_shown = workspace.shown(missing).to_lowercase();
    let near = nearest_existing_dir(missing);
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut scored: Vec<(f64, String, PathBuf)> = Vec::new();
    let mut consider = |path: PathBuf, is_dir: bool, scored: &mut Vec<(f64, String, PathBuf)>| {
        let in_git_dir = path.components().any(|c| c.as_os_str() == ".git");
        if path == missing || in_git_dir || !seen.insert(path.clone()) {
            return;
        }
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().to_lowercase()) else {
            return;
        };
        let shown = workspace.shown(&path);
        let score = score(&target_name, &target_shown, &name, &shown.to_lowercase());
        if score >= MIN_SCORE {
            let shown = if is_dir { format!("{shown}/") } else { shown };
            scored.push((score, shown, path));
        }
    };
    let mut budget = MAX_CANDIDATES;
    // The nearest directory first, unfiltered: a hidden or ignored neighbour is still a likely
    // intended target when the model named that directory.
    if let Some(near) = &near {
        walk(near, NEAR_DEPTH, false, &mut budget, |p, d| {
            consider(p, d, &mut scored)
        });
    }
    let root = workspace.root().to_path_buf();
    if near.as_deref().is_none_or(|n| n.starts_with(&root)) {
        walk(&root, ROOT_DEPTH, true, &mut budget, |p, d| {
            consider(p, d, &mut scored)
        });
    }
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(&b.1))
    });
    scored.dedup_by(|a, b| a.1 == b.1);
    // The walk lists directories by name: suggest only what is really there beneath the root
    // (a directory swapped for a symlink meanwhile would show names from elsewhere).
    let beneath = workspace.beneath();
    scored
        .into_iter()
        .filter(|(_, _, path)| beneath.lstat(path).is_ok())
        .take(max)
        .map(|(_, shown, _)| shown)
        .collect()
}

/// "; did you mean `a`, `b`?" or nothing.
pub fn did_you_mean(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        return String::new();
    }
    let quoted: Vec<String> = suggestions.iter().map(|s| format!("`{s}`")).collect();
    format!(" Did you mean {}?", quoted.join(", "))
}

fn nearest_existing_dir(path: &Path) -> Option<PathBuf> {
    let mut current = path.parent();
    while let Some(dir) = current {
        if dir.is_dir() {
            return Some(dir.to_path_buf());
        }
        current = dir.parent();
    }
    None
}

fn walk(
    dir: &Path,
    depth: usize,
    filtered: bool,
    budget: &mut usize,
    mut visit: impl FnMut(PathBuf, bool),
) {
    let walker = ignore::WalkBuilder::new(dir)
        .max_depth(Some(depth))
        .standard_filters(filtered)
        .require_git(false)
        .follow_links(false)
        .build();
    for entry in walker.flatten() {
        if entry.depth() == 0 {
            continue;
        }
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        visit(entry.into_path(), is_dir);
    }
}

/// How alike a candidate is to the missing path: mostly by file name (a typo, another
/// extension, another case), partly by the whole path (the right name in the wrong directory
/// scores high on the name alone).
fn score(target_name: &str, target_path: &str, name: &str, path: &str) -> f64 {
    let mut name_score = if name == target_name {
        1.0
    } else {
        strsim::jaro_winkler(target_name, name)
    };
    // Jaro-Winkler undervalues a typo in a short name ("scr" for "src"); an edit distance of
    // one or two counts as close whatever the length.
    let distance = strsim::osa_distance(target_name, name);
    let longest = target_name.chars().count().max(name.chars().count());
    if distance == 1 && longest >= 3 {
        name_score = name_score.max(0.9);
    } else if distance == 2 && longest >= 6 {
        name_score = name_score.max(0.85);
    }
    let stem = |s: &str| s.split('.').next().unwrap_or(s).to_owned();
    if !stem(name).is_empty() && stem(name) == stem(target_name) {
        name_score = name_score.max(0.93);
    }
    let path_score = strsim::normalized_levenshtein(target_path, path);
    if name_score < 0.8 && path_score < 0.75 {
        return 0.0;
    }
    0.75 * name_score + 0.25 * path_score
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        for path in [
            "src/main.rs",
            "src/lib.rs",
            "src/util/mod.rs",
            "README.md",
            "docs/guide.md",
        ] {
            let full = dir.path().join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, "x\n").unwrap();
        }
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn typo_in_name() {
        let (_dir, ws) = workspace();
        let got = similar_paths(&ws, &ws.root().join("src/mian.rs"), 3);
        assert_eq!(
            got.first().map(String::as_str),
            Some("src/main.rs"),
            "{got:?}"
        );
    }

    #[test]
    fn transposed_letters_in_a_short_name() {
        let (_dir, ws) = workspace();
        let got = similar_paths(&ws, &ws.root().join("scr"), 3);
        assert_eq!(got.first().map(String::as_str), Some("src/"), "{got:?}");
    }

    #[test]
    fn right_name_wrong_directory() {
        let (_dir, ws) = workspace();
        let got = similar_paths(&ws, &ws.root().join("lib/guide.md"), 3);
        assert!(got.contains(&"docs/guide.md".to_owned()), "{got:?}");
    }

    #[test]
    fn missing_extension_and_case() {
        let (_dir, ws) = workspace();
        let got = similar_paths(&ws, &ws.root().join("readme"), 3);
        assert_eq!(
            got.first().map(String::as_str),
            Some("README.md"),
            "{got:?}"
        );
    }

    #[test]
    fn at_most_max_and_nothing_for_unrelated_names() {
        let (_dir, ws) = workspace();
        assert!(similar_paths(&ws, &ws.root().join("src/mod.rs"), 1).len() <= 1);
        let got = similar_paths(&ws, &ws.root().join("zzzzqqqq.toml"), 3);
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(did_you_mean(&[]), "");
        assert_eq!(
            did_you_mean(&["a".into(), "b/".into()]),
            " Did you mean `a`, `b/`?"
        );
    }
}
