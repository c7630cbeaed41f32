//! `glob`: find files by name with a glob, on the same walk as `grep` (ignore files, hidden
//! files, symlinks), sorted newest first or by path, with an exact total when capped.
//!
//! A pattern without `/` matches file names at any depth (`*.rs` is `**/*.rs`), as in
//! `.gitignore` and ripgrep's `--glob`, because that is what people mean by it; a pattern with
//! `/` is matched against the whole path relative to `path`. `*` and `?` never cross a `/`;
//! `**` does.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use ignore::WalkState;
use ignore::overrides::Override;
use ignore::types::Types;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::search_walk::{self, Problems, SearchRoot, WalkSpec, plural};
use lathe_runtime::Workspace;
use lathe_runtime::budget::group;
use lathe_runtime::session::Session;
use lathe_runtime::text::{self, in_path};
use lathe_runtime::tool::{Effect, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult};
use lathe_runtime::workspace::changed_under_walk;

/// Paths listed unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 100;

/// Paths named when explaining an empty result.
const EXAMPLES: usize = 3;

/// When nothing matched, the hidden or ignored matches counted before the count says "at least".
const EXCLUDED_ENOUGH: usize = 1000;

/// The `glob` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GlobTool;

/// Find files by name with a glob pattern, e.g. `**/*.rs`, `src/**/test_*.py`, `*.{ts,tsx}`.
/// A pattern without `/` matches file names at any depth (`*.rs` finds every Rust file); a pattern
/// with `/` is matched against the path relative to `path`. Lists paths relative to the workspace
/// root, newest first (or by path), at most `limit` (default 100) with the exact total.
///
/// Files ignored by .gitignore, .ignore or .rgignore are skipped, as are hidden files and
/// directories unless `hidden: true` or the pattern names them (`.github/**`). Symbolic links are
/// neither followed nor listed; directories are not listed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GlobInput {
    /// The glob: `*` and `?` match within one path component, `**` across directories,
    /// `[abc]` a character, `{a,b}` alternatives.
    pub pattern: String,
    /// Directory to search in, relative to the workspace root. Default: the whole workspace.
    pub path: Option<String>,
    /// Most paths to list. Default 100; 0 for no limit.
    pub limit: Option<usize>,
    /// Order of the paths.
    #[serde(default)]
    pub sort: GlobSort,
    /// Also list hidden files and files in hidden directories. Default false.
    #[serde(default)]
    pub hidden: bool,
}

/// The order of `glob`'s paths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GlobSort {
    /// most recently modified first, ties by path (the default)
    #[default]
    Modified,
    /// by path
    Path,
}

impl Tool for GlobTool {
    const NAME: &'static str = "glob";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Find files by glob (`**/*.rs`, `*.{ts,tsx}`; no `/`: names at any depth). Newest first, at most `limit` (100); ignored and hidden files skipped."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = Some(&[
        ("pattern", ""),
        ("path", r#"Directory. Default: all."#),
        ("limit", ""),
    ]);
    const ALIASES: &'static [&'static str] =
        &["find_files", "file_search", "glob_files", "glob_search"];
    type Input = GlobInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Read {
            path: input.path.clone().unwrap_or_else(|| ".".to_owned()),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        text::title(Self::NAME, &in_path(&input.pattern, &input.path))
    }

    async fn run(&self, input: GlobInput, ctx: ToolContext) -> ToolResult {
        let cancel = ctx.cancel.clone();
        search_walk::run_blocking(Self::NAME, &cancel, move |stop| execute(&input, &ctx, stop))
            .await
    }
}

/// The patterns a glob is matched with: as given, and ignoring case (to explain a miss).
struct Patterns {
    exact: GlobSet,
    any_case: GlobSet,
}

impl Patterns {
    fn new(pattern: &str, root: &SearchRoot) -> Result<Patterns, String> {
        let normalized = normalize(pattern, root)?;
        let build = |case_insensitive: bool| {
            GlobBuilder::new(&normalized)
                .literal_separator(true)
                .backslash_escape(true)
                .case_insensitive(case_insensitive)
                .build()
                .and_then(|glob| GlobSetBuilder::new().add(glob).build())
                .map_err(|err| format!("invalid glob pattern {pattern:?}: {}", err.kind()))
        };
        Ok(Patterns {
            exact: build(false)?,
            any_case: build(true)?,
        })
    }
}

/// The glob as matched against paths relative to the search root.
fn normalize(pattern: &str, root: &SearchRoot) -> Result<String, String> {
    let mut pattern = pattern.trim();
    if pattern.is_empty() {
        return Err("parameter `pattern` is empty: give a glob such as \"**/*.rs\"".to_owned());
    }
    if Path::new(pattern).is_absolute() {
        let base = root.abs.to_string_lossy();
        match pattern.strip_prefix(base.as_ref()) {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => pattern = rest,
            _ if names_outside(pattern, root) => {
                return Err(format!(
                    "the pattern {pattern:?} is an absolute path outside the searched directory \
                     ('{}'); give a pattern relative to `path`, such as \"**/*.rs\"",
                    root.shown
                ));
            }
            // Otherwise a leading `/` anchors the pattern at `path`, as in `.gitignore`.
            _ => {}
        }
    }
    while let Some(rest) = pattern.strip_prefix("./") {
        pattern = rest;
    }
    let pattern = pattern.trim_start_matches('/');
    let mut normalized = if pattern.contains('/') {
        pattern.to_owned()
    } else {
        format!("**/{pattern}")
    };
    if normalized.ends_with('/') {
        // "src/" means the files under src.
        normalized.push_str("**");
    }
    if normalized == "**/" || normalized.is_empty() {
        normalized = "**".to_owned();
    }
    Ok(normalized)
}

/// True when an absolute pattern's first component names a directory at the file system root
/// that is not also under the search root: the pattern is a path elsewhere, not an anchor.
fn names_outside(pattern: &str, root: &SearchRoot) -> bool {
    let first = pattern
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("");
    let literal = !first.is_empty() && !first.contains(['*', '?', '[', '{', '\\']);
    literal && Path::new("/").join(first).exists() && !root.abs.join(first).exists()
}

struct Found {
    path: PathBuf,
    /// Modification time as (seconds, nanoseconds) since the epoch.
    modified: Option<(libc::time_t, libc::c_long)>,
}

#[derive(Default)]
struct Local {
    found: Vec<Found>,
    any_case: Vec<PathBuf>,
    problems: Problems,
}

/// The whole call, on a blocking thread.
fn execute(input: &GlobInput, ctx: &ToolContext, stop: &search_walk::Stop) -> ToolResult {
    let root = search_walk::resolve_root(ctx, input.path.as_deref())?;
    if !root.is_dir {
        return Err(ToolError::new(format!(
            "'{}' is a file; glob lists files under a directory: give a directory as path \
             (or read the file with read_file)",
            root.shown
        )));
    }
    let patterns = Patterns::new(&input.pattern, &root).map_err(ToolError::new)?;
    let walk = WalkSpec {
        root: root.abs.clone(),
        hidden: input.hidden || search_walk::names_hidden(&input.pattern),
        overrides: Override::empty(),
        types: Types::empty(),
        beneath: ctx.session.workspace().beneath(),
    };
    let workspace = ctx.session.workspace();
    let by_time = input.sort == GlobSort::Modified;
    let beneath = &walk.beneath;
    let locals = search_walk::visit_parallel(&walk.builder(), Local::default, |local, entry| {
        if stop.is_set() {
            return WalkState::Quit;
        }
        let entry = match entry {
            Ok(entry) => entry,
            Err(err) => {
                local.problems.add_walk_error(&err, workspace);
                return WalkState::Continue;
            }
        };
        if !search_walk::is_regular_file(&entry) {
            return WalkState::Continue;
        }
        let rel = search_walk::relative_to(&root.abs, entry.path());
        let exact = patterns.exact.is_match(rel);
        let example = !exact
            && local.found.is_empty()
            && local.any_case.len() < EXAMPLES
            && patterns.any_case.is_match(rel);
        if !exact && !example {
            return WalkState::Continue;
        }
        // Listed by name: only a regular file reached beneath the root without a symlink is
        // reported (the walk may have listed a directory swapped for a symlink to elsewhere).
        let stat = match beneath.lstat(entry.path()) {
            Ok(stat) if stat.st_mode & libc::S_IFMT == libc::S_IFREG => stat,
            Ok(_) => return WalkState::Continue,
            Err(err) if changed_under_walk(&err) => {
                local.problems.add_changed();
                return WalkState::Continue;
            }
            Err(err) => {
                local.problems.add(format!(
                    "{}: {}",
                    search_walk::shown(workspace, entry.path()),
                    err.to_string().to_lowercase()
                ));
                return WalkState::Continue;
            }
        };
        if exact {
            local.found.push(Found {
                path: entry.into_path(),
                modified: by_time.then_some((stat.st_mtime, stat.st_mtime_nsec)),
            });
        } else {
            // Only wanted to explain an empty result: not looked for once a match is known.
            local.any_case.push(entry.into_path());
        }
        WalkState::Continue
    });
    if stop.is_set() {
        return Err(
            ToolError::new("glob was cancelled; nothing is shown").with_meta("cancelled", true)
        );
    }
    let mut found = Vec::new();
    let mut any_case = Vec::new();
    let mut problems = Problems::default();
    for local in locals {
        found.extend(local.found);
        any_case.extend(local.any_case);
        problems.merge(local.problems);
    }
    if found.is_empty() {
        any_case.sort_unstable_by(|a, b| search_walk::path_order(a, b));
        any_case.truncate(EXAMPLES);
        let text = nothing_found(input, &root, &walk, &patterns, &any_case, ctx, stop);
        return Ok(with_notes(text, None, problems)
            .with_meta("files", 0)
            .with_found("0 files"));
    }
    Ok(listing(input, found, problems, workspace))
}

/// The result for the files `found`: the first `limit` of them in the order asked for, and how
/// many more there are.
fn listing(
    input: &GlobInput,
    mut found: Vec<Found>,
    problems: Problems,
    workspace: &Workspace,
) -> ToolOutput {
    let total = found.len();
    let by_time = input.sort == GlobSort::Modified;
    let limit = match input.limit {
        None => DEFAULT_LIMIT,
        Some(0) => usize::MAX,
        Some(n) => n,
    };
    // Newest first (files whose time cannot be read go last), ties by path; or by path. Only
    // the listed head needs sorting: the rest is only counted.
    let order = |a: &Found, b: &Found| {
        let by_path = || search_walk::path_order(&a.path, &b.path);
        if by_time {
            b.modified.cmp(&a.modified).then_with(by_path)
        } else {
            by_path()
        }
    };
    if limit < found.len() {
        found.select_nth_unstable_by(limit, order);
        found.truncate(limit);
    }
    let head = limit.min(found.len());
    found[..head].sort_unstable_by(order);
    let shown = head;
    let mut text = String::new();
    for file in &found[..shown] {
        text.push_str(&search_walk::shown(workspace, &file.path));
        text.push('\n');
    }
    let summary = (shown < total).then(|| {
        let order = if by_time { "newest first" } else { "by path" };
        format!(
            "showing {} of {} files ({order}); {} left out: narrow the pattern or path, or raise limit",
            group(shown),
            group(total),
            group(total - shown)
        )
    });
    with_notes(text, summary, problems)
        .with_found(plural(total, "file", "files"))
        .with_meta("files", total)
        .with_meta("shown", shown)
}

fn with_notes(mut text: String, summary: Option<String>, problems: Problems) -> ToolOutput {
    let notes: Vec<String> = summary.into_iter().chain(problems.note()).collect();
    if !notes.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push('\n');
        text.push_str(&notes.join("\n"));
        text.push('\n');
    }
    ToolOutput::ok(text.trim_start().to_owned())
}

fn nothing_found(
    input: &GlobInput,
    root: &SearchRoot,
    walk: &WalkSpec,
    patterns: &Patterns,
    any_case: &[PathBuf],
    ctx: &ToolContext,
    stop: &search_walk::Stop,
) -> String {
    let workspace = ctx.session.workspace();
    let place = if root.shown == "." {
        "the workspace".to_owned()
    } else {
        format!("'{}'", root.shown)
    };
    let mut text = format!("No files match {:?} in {place}.", input.pattern);
    let plain = input.pattern.trim().trim_end_matches('/');
    if !plain.is_empty() && !plain.contains(['*', '?', '[', '{']) && root.abs.join(plain).is_dir() {
        text.push_str(&format!(
            " '{plain}' is a directory: \"{plain}/**\" lists the files in it."
        ));
    }
    if !any_case.is_empty() {
        let names: Vec<String> = any_case
            .iter()
            .map(|p| search_walk::shown(workspace, p))
            .collect();
        text.push_str(&format!(
            " Ignoring case, these match: {} (the pattern is case-sensitive).",
            names.join(", ")
        ));
    }
    if walk.filters_apply() {
        let excluded = search_walk::unfiltered_count(
            walk,
            |path| {
                patterns
                    .exact
                    .is_match(search_walk::relative_to(&root.abs, path))
            },
            EXCLUDED_ENOUGH,
            stop,
        );
        if excluded.count > 0 {
            let names: Vec<String> = excluded
                .examples
                .iter()
                .map(|p| search_walk::shown(workspace, p))
                .collect();
            let count = if excluded.capped {
                format!("at least {}", plural(excluded.count, "file", "files"))
            } else {
                plural(excluded.count, "file", "files")
            };
            let hidden = if walk.hidden {
                ""
            } else {
                " pass hidden: true to include hidden files;"
            };
            text.push_str(&format!(
                " {count} that match are hidden or ignored by .gitignore/.ignore/.rgignore (e.g. {}):{hidden} \
                 to list an ignored directory, give it as path.",
                names.join(", ")
            ));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> SearchRoot {
        SearchRoot {
            abs: PathBuf::from("/ws/src"),
            shown: "src".into(),
            is_dir: true,
        }
    }

    #[test]
    fn patterns_without_a_slash_match_at_any_depth() {
        assert_eq!(normalize("*.rs", &root()).unwrap(), "**/*.rs");
        assert_eq!(normalize("./*.rs", &root()).unwrap(), "**/*.rs");
        assert_eq!(normalize("a/*.rs", &root()).unwrap(), "a/*.rs");
        assert_eq!(normalize("/a/*.rs", &root()).unwrap(), "a/*.rs");
        assert_eq!(normalize("a/", &root()).unwrap(), "a/**");
        assert_eq!(normalize("/ws/src/a/*.rs", &root()).unwrap(), "a/*.rs");
        assert!(
            normalize("/usr/*.rs", &root())
                .unwrap_err()
                .contains("outside")
        );
        assert!(normalize("  ", &root()).unwrap_err().contains("empty"));
    }

    #[test]
    fn star_does_not_cross_directories() {
        let patterns = Patterns::new("src/*.rs", &root()).unwrap();
        assert!(patterns.exact.is_match("src/a.rs"));
        assert!(!patterns.exact.is_match("src/x/a.rs"));
        let patterns = Patterns::new("*.{ts,tsx}", &root()).unwrap();
        assert!(patterns.exact.is_match("deep/er/a.tsx"));
        let err = Patterns::new("src/[a", &root()).err().unwrap();
        assert!(err.contains("invalid glob pattern \"src/[a\""), "{err}");
    }
}
