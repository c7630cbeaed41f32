//! The directory walk that `grep` and `glob` share: ripgrep's `ignore` crate, configured once, so
//! that both tools skip exactly the same files.
//!
//! - Ignore files: `.gitignore`, `.ignore` and `.rgignore` in the searched directories and their
//!   parents, git's `info/exclude` and its global excludes file, with ripgrep's precedence. Unlike
//!   ripgrep's default, a `.gitignore` applies outside a git repository too: a tree without
//!   `.git` (a tarball, a copy, a fresh project before `git init`) is searched as its authors
//!   meant it, which is what editors and agents expect. Inside a repository the walk keeps git's
//!   boundaries: `.gitignore` files above the repository root (or above a nested repository's
//!   root) do not apply. (The `ignore` crate's `require_git(false)` would drop those boundaries,
//!   so it is only used when the searched path is in no repository.)
//! - Hidden files and directories (names starting with `.`) are skipped unless asked for; the
//!   version-control directories (`.git`, `.hg`, `.svn`, `.jj`) are never walked.
//! - Symbolic links are never followed nor reported: a link cannot lead a search outside the
//!   workspace, and a link inside it would only show the same file twice. The `path` argument
//!   itself goes through workspace containment (a link inside the workspace that stays inside is
//!   resolved; one that leads out is refused).
//! - Everything the walk finds is reached beneath the root's descriptor with no symlink on the
//!   way ([`Beneath`]): a directory is descended into only if it is a real directory there, and
//!   the tools open (`grep`) or check (`glob`) each file the same way. The `ignore` crate lists
//!   directories by name, so a directory swapped for a symlink while the walk runs can still make
//!   it list a tree outside; what it lists there fails that check and is skipped unnamed
//!   ([`Problems::add_changed`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::types::{Types, TypesBuilder};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkBuilder, WalkState};

use lathe_runtime::tool::{ToolContext, ToolError};
use lathe_runtime::workspace::{Access, Beneath, Workspace};

mod call;
mod paths;
mod problems;

pub(crate) use call::{Stop, run_blocking};
pub(crate) use paths::{path_order, relative_to, shown};
pub(crate) use problems::{Problems, plural};

/// Directory names that hold version-control internals: never searched, even with hidden files.
const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".jj"];

/// The ignore file ripgrep reads besides `.gitignore` and `.ignore`.
const RG_IGNORE: &str = ".rgignore";

/// Paths named when a note gives examples.
const EXAMPLES: usize = 3;

/// What a search walks: a resolved root (file or directory) and the filters.
pub(crate) struct WalkSpec {
    /// The absolute, symlink-free root.
    pub root: PathBuf,
    /// Include hidden files and directories.
    pub hidden: bool,
    /// Include/exclude globs, relative to `root`.
    pub overrides: Override,
    /// Selected file types.
    pub types: Types,
    /// The roots' descriptors: what the walk finds is checked beneath them.
    pub beneath: Beneath,
}

impl WalkSpec {
    /// The walker with the shared rules (see the module documentation).
    pub fn builder(&self) -> WalkBuilder {
        let mut builder = WalkBuilder::new(&self.root);
        builder
            .standard_filters(true)
            .hidden(!self.hidden)
            .require_git(in_repository(&self.root))
            .follow_links(false)
            .add_custom_ignore_filename(RG_IGNORE)
            .overrides(self.overrides.clone())
            .types(self.types.clone())
            .filter_entry(self.entry_filter());
        builder
    }

    /// Skips version-control directories, and directories that are not real directories
    /// beneath the root (a symlink swapped in since they were listed).
    fn entry_filter(&self) -> impl Fn(&DirEntry) -> bool + Send + Sync + 'static {
        let beneath = self.beneath.clone();
        move |entry| {
            if is_vcs_dir(entry) {
                return false;
            }
            entry.depth() == 0
                || !entry.file_type().is_some_and(|t| t.is_dir())
                || beneath.is_real_dir(entry.path())
        }
    }

    /// The same walk with hidden files included and no ignore files: what the filters hid.
    pub fn unfiltered_builder(&self) -> WalkBuilder {
        let mut builder = WalkBuilder::new(&self.root);
        builder
            .standard_filters(false)
            .follow_links(false)
            .overrides(self.overrides.clone())
            .types(self.types.clone())
            .filter_entry(self.entry_filter());
        builder
    }

    /// True when the filters could have hidden something: hidden files are skipped, or ignore
    /// rules exist.
    pub fn filters_apply(&self) -> bool {
        !self.hidden || ignore_files_above(&self.root)
    }
}

/// True when `path` is inside a git (or jj) repository: it or an ancestor holds `.git`/`.jj`.
fn in_repository(path: &Path) -> bool {
    path.ancestors()
        .any(|dir| dir.join(".git").exists() || dir.join(".jj").exists())
}

fn is_vcs_dir(entry: &DirEntry) -> bool {
    entry.depth() > 0
        && VCS_DIRS
            .iter()
            .any(|name| entry.file_name() == std::ffi::OsStr::new(name))
}

/// True when the root or one of its ancestors holds an ignore file. A cheap, partial answer
/// (nested ignore files are not looked for), used only to word a note.
fn ignore_files_above(root: &Path) -> bool {
    let dir = if root.is_dir() {
        Some(root)
    } else {
        root.parent()
    };
    dir.into_iter().flat_map(Path::ancestors).any(|dir| {
        [".gitignore", ".ignore", RG_IGNORE]
            .iter()
            .any(|name| dir.join(name).is_file())
    })
}

/// A regular file found by the walk (symlinks and special files are skipped).
pub(crate) fn is_regular_file(entry: &DirEntry) -> bool {
    entry.file_type().is_some_and(|t| t.is_file())
}

/// Builds the include/exclude globs, ripgrep's `--glob`: relative to `root`, a glob without `/`
/// matches a name at any depth, a leading `!` excludes. The error is written for the model.
pub(crate) fn overrides(root: &Path, globs: &[String]) -> Result<Override, String> {
    let mut builder = OverrideBuilder::new(root);
    for glob in globs {
        let trimmed = glob.trim();
        if trimmed.is_empty() || trimmed == "!" {
            return Err(format!(
                "parameter `glob` has an empty glob ({glob:?}); give globs such as \"*.rs\" or \"!**/tests/**\""
            ));
        }
        let (negated, body) = match trimmed.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        let body = body.strip_prefix("./").unwrap_or(body);
        let normalized = if negated {
            format!("!{body}")
        } else {
            body.to_owned()
        };
        builder
            .add(&normalized)
            .map_err(|err| format!("parameter `glob`: {}", glob_error(glob, &err)))?;
    }
    builder
        .build()
        .map_err(|err| format!("parameter `glob`: {err}"))
}

fn glob_error(glob: &str, err: &ignore::Error) -> String {
    match err {
        ignore::Error::Glob { err, .. } => format!("invalid glob {glob:?}: {err}"),
        other => format!("invalid glob {glob:?}: {other}"),
    }
}

/// Selects ripgrep's built-in file types (`rust`, `py`, ...); `!name` excludes a type. The error
/// names the closest real types.
pub(crate) fn types(names: &[String]) -> Result<Types, String> {
    let mut builder = TypesBuilder::new();
    builder.add_defaults();
    if names.is_empty() {
        return builder.build().map_err(|err| err.to_string());
    }
    let known: Vec<String> = builder
        .definitions()
        .iter()
        .map(|def| def.name().to_owned())
        .collect();
    for raw in names {
        let name = raw.trim();
        let (negated, bare) = match name.strip_prefix('!') {
            Some(rest) => (true, rest.trim()),
            None => (false, name),
        };
        let bare = bare.trim_start_matches('.').to_ascii_lowercase();
        let bare = match bare.as_str() {
            // Common spellings that are not ripgrep type names.
            "python" => "py".to_owned(),
            "javascript" => "js".to_owned(),
            "typescript" => "ts".to_owned(),
            "golang" => "go".to_owned(),
            "c++" => "cpp".to_owned(),
            "markdown" => "md".to_owned(),
            "shell" | "bash" => "sh".to_owned(),
            "rs" => "rust".to_owned(),
            "rb" => "ruby".to_owned(),
            "yml" => "yaml".to_owned(),
            _ => bare,
        };
        if !known.contains(&bare) {
            let mut scored: Vec<(f64, &String)> = known
                .iter()
                .map(|k| (strsim::jaro_winkler(&bare, k), k))
                .filter(|(score, _)| *score > 0.75)
                .collect();
            scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
            let close: Vec<String> = scored
                .iter()
                .take(5)
                .map(|(_, k)| format!("`{k}`"))
                .collect();
            let hint = if close.is_empty() {
                ".".to_owned()
            } else {
                format!("; did you mean {}?", close.join(", "))
            };
            return Err(format!(
                "parameter `type`: unknown file type {raw:?}{hint} Types are ripgrep's names such as \
                 `rust`, `py`, `js`, `ts`, `go`, `c`, `cpp`, `java`, `md`, `json`, `yaml`; or use `glob` \
                 (e.g. \"*.ext\") instead"
            ));
        }
        if negated {
            builder.negate(&bare);
        } else {
            builder.select(&bare);
        }
    }
    builder
        .build()
        .map_err(|err| format!("parameter `type`: {err}"))
}

/// True when a glob names a hidden file or directory itself (`.github/**`, `**/.env`, `.*rc`):
/// such a glob asks for hidden files, so the walk includes them.
pub(crate) fn names_hidden(glob: &str) -> bool {
    let glob = glob.trim().trim_start_matches('!');
    glob.split('/')
        .any(|part| part.starts_with('.') && part != "." && part != "..")
}

/// The search root as resolved from the `path` argument.
pub(crate) struct SearchRoot {
    /// Absolute and symlink-free.
    pub abs: PathBuf,
    /// As shown to the model.
    pub shown: String,
    /// A directory (otherwise a file).
    pub is_dir: bool,
}

/// Resolves the `path` argument (default: the workspace root) through workspace containment, or
/// returns the result that tells the model what to fix.
pub(crate) fn resolve_root(ctx: &ToolContext, path: Option<&str>) -> Result<SearchRoot, ToolError> {
    let workspace = ctx.session.workspace();
    let given = path.map(str::trim).filter(|p| !p.is_empty()).unwrap_or(".");
    let resolved = workspace
        .resolve(given, Access::Read)
        .map_err(|err| ToolError::new(err.to_string()))?;
    let abs = resolved.abs().to_path_buf();
    match std::fs::metadata(&abs) {
        Ok(meta) if meta.is_dir() || meta.is_file() => Ok(SearchRoot {
            shown: shown(workspace, &abs),
            is_dir: meta.is_dir(),
            abs,
        }),
        Ok(_) => Err(ToolError::new(format!(
            "'{}' is not a regular file or directory; give a file or directory inside the workspace",
            resolved.shown()
        ))),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(ToolError::new(format!(
            "'{}' does not exist{}; give a file or directory relative to the workspace root (\".\" is the root)",
            resolved.shown(),
            suggest_sibling(&abs, workspace)
        ))),
        Err(err) => Err(ToolError::new(format!(
            "cannot read '{}': {err}",
            resolved.shown()
        ))),
    }
}

/// " (did you mean 'x'?)" when the parent directory holds a name close to the missing one.
fn suggest_sibling(abs: &Path, workspace: &Workspace) -> String {
    let (Some(parent), Some(name)) = (abs.parent(), abs.file_name()) else {
        return String::new();
    };
    let name = name.to_string_lossy();
    let Ok(entries) = std::fs::read_dir(parent) else {
        return String::new();
    };
    // Typos: a transposition, a missing or extra letter, or a difference in case.
    let allowed = (name.chars().count() / 4).max(1);
    let best = entries
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|other| {
            (
                strsim::damerau_levenshtein(&name.to_lowercase(), &other.to_lowercase()),
                other,
            )
        })
        .filter(|(distance, _)| *distance <= allowed)
        .min();
    // Listed by name: suggested only if it is really there beneath the root (the directory may
    // have been swapped for a symlink to elsewhere since).
    let best = best.filter(|(_, other)| workspace.beneath().lstat(&parent.join(other)).is_ok());
    match best {
        Some((_, other)) => format!(
            " (did you mean '{}'?)",
            shown(workspace, &parent.join(other))
        ),
        None => String::new(),
    }
}

/// Runs a parallel walk with one `S` per thread; returns every thread's `S` once the walk ends.
/// The visit function returns [`WalkState::Quit`] to stop all threads.
pub(crate) fn visit_parallel<S, M, V>(builder: &WalkBuilder, make: M, visit: V) -> Vec<S>
where
    S: Send,
    M: Fn() -> S + Sync,
    V: Fn(&mut S, Result<DirEntry, ignore::Error>) -> WalkState + Sync,
{
    struct Builder<'a, S, M, V> {
        make: &'a M,
        visit: &'a V,
        out: &'a Mutex<Vec<S>>,
    }
    struct Visitor<'a, S: Send, V> {
        state: Option<S>,
        visit: &'a V,
        out: &'a Mutex<Vec<S>>,
    }
    impl<'a, S, M, V> ParallelVisitorBuilder<'a> for Builder<'a, S, M, V>
    where
        S: Send + 'a,
        M: Fn() -> S + Sync,
        V: Fn(&mut S, Result<DirEntry, ignore::Error>) -> WalkState + Sync,
    {
        fn build(&mut self) -> Box<dyn ParallelVisitor + 'a> {
            Box::new(Visitor {
                state: Some((self.make)()),
                visit: self.visit,
                out: self.out,
            })
        }
    }
    impl<S, V> ParallelVisitor for Visitor<'_, S, V>
    where
        S: Send,
        V: Fn(&mut S, Result<DirEntry, ignore::Error>) -> WalkState + Sync,
    {
        fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
            match self.state.as_mut() {
                Some(state) => (self.visit)(state, entry),
                None => WalkState::Quit,
            }
        }
    }
    impl<S: Send, V> Drop for Visitor<'_, S, V> {
        // Each thread's results are handed over when its visitor is dropped, at the walk's end.
        fn drop(&mut self) {
            if let Some(state) = self.state.take() {
                lathe_runtime::session::lock(self.out).push(state);
            }
        }
    }
    let out = Mutex::new(Vec::new());
    builder.build_parallel().visit(&mut Builder {
        make: &make,
        visit: &visit,
        out: &out,
    });
    out.into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Files the filters excluded: found by the unfiltered walk, accepted by `wanted`, beyond the
/// `seen` the filtered walk found. The walk stops once `enough` such files are counted.
pub(crate) struct Excluded {
    /// How many were counted (a lower bound when `capped`).
    pub count: usize,
    /// True when the count stopped at `enough`.
    pub capped: bool,
    /// A few of them, sorted.
    pub examples: Vec<PathBuf>,
}

/// Walks without the ignore and hidden filters and counts the regular files `wanted` accepts.
pub(crate) fn unfiltered_count(
    spec: &WalkSpec,
    wanted: impl Fn(&Path) -> bool + Sync,
    enough: usize,
    stop: &Stop,
) -> Excluded {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let counted = AtomicUsize::new(0);
    let found = visit_parallel(
        &spec.unfiltered_builder(),
        Vec::new,
        |paths: &mut Vec<PathBuf>, entry| {
            if stop.is_set() || counted.load(Ordering::Relaxed) >= enough {
                return WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            // Named in a note: only what is really beneath the root (see the module docs).
            let real_file = || {
                spec.beneath
                    .lstat(entry.path())
                    .is_ok_and(|stat| stat.st_mode & libc::S_IFMT == libc::S_IFREG)
            };
            if is_regular_file(&entry) && wanted(entry.path()) && real_file() {
                counted.fetch_add(1, Ordering::Relaxed);
                paths.push(entry.into_path());
            }
            WalkState::Continue
        },
    );
    let mut examples: Vec<PathBuf> = found.into_iter().flatten().collect();
    let count = examples.len();
    examples.sort_unstable_by(|a, b| path_order(a, b));
    examples.truncate(EXAMPLES);
    Excluded {
        count,
        capped: count >= enough,
        examples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_globs() {
        assert!(names_hidden(".github/**/*.yml"));
        assert!(names_hidden("**/.env"));
        assert!(names_hidden("!.*rc"));
        assert!(!names_hidden("./src/*.rs"));
        assert!(!names_hidden("../x/*.rs"));
        assert!(!names_hidden("**/*.rs"));
    }

    #[test]
    fn type_names_and_suggestions() {
        assert!(types(&["rust".into(), "python".into(), "!md".into()]).is_ok());
        let err = types(&["rusty".into()]).unwrap_err();
        assert!(
            err.contains("unknown file type \"rusty\"") && err.contains("`rust`"),
            "{err}"
        );
    }

    #[test]
    fn empty_glob_is_refused() {
        let err = overrides(Path::new("/"), &["!".into()]).unwrap_err();
        assert!(err.contains("empty glob"), "{err}");
        let err = overrides(Path::new("/"), &["src/[a".into()]).unwrap_err();
        assert!(err.contains("invalid glob \"src/[a\""), "{err}");
    }
}
