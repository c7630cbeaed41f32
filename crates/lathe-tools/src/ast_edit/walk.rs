//! The walk of an `ast_edit` call: grep's walk (ignore files, hidden files, containment), only
//! over files of the chosen languages, in parallel. Each thread parses the files it is handed
//! and keeps what matched, with the rewritten text and its diff; files that cannot match (the
//! pattern's literal text is not in them) are not parsed, and files without a match hold
//! nothing once they are passed.

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::WalkState;
use ignore::types::TypesBuilder;
use nix::fcntl::OFlag;

use super::AstEditInput;
use super::engine::{Compiled, Hit};
use super::lang::Lang;
use crate::search_walk::{self, Problems, SearchRoot, Stop, WalkSpec, plural};
use lathe_runtime::meta::MAX_CHANGE_DIFF_LINES;
use lathe_runtime::session::FileStamp;
use lathe_runtime::text::{UTF8_BOM, UnifiedDiff, human_size};
use lathe_runtime::tool::{FileChange, PlannedWrite, ToolContext, ToolError, ToolProgress};
use lathe_runtime::workspace::{ResolvedPath, changed_under_walk};

/// Files larger than this are skipped (and counted in a note): parsing them would hold the
/// whole tree in memory, and no source file is this large.
const MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Files read between two progress reports.
const PROGRESS_EVERY: usize = 1000;

/// What the call looks for.
pub(super) struct Scope<'a> {
    pub pattern: &'a str,
    pub rewrite: Option<&'a str>,
    /// The `language` given: only its files, and an explicitly named file whatever its name.
    pub forced: Option<Lang>,
}

/// One file with matches.
#[derive(Debug)]
pub(super) struct FileResult {
    /// Absolute path.
    pub path: PathBuf,
    /// As shown to the model.
    pub shown: String,
    pub hits: Vec<Hit>,
    pub replacements: usize,
    /// What the rewrite makes of the file, when it changes it.
    pub rewrite: Option<Rewrite>,
}

/// A file's rewritten content, against the bytes it was computed from.
#[derive(Debug)]
pub(super) struct Rewrite {
    pub diff: UnifiedDiff,
    before: FileStamp,
    content: Vec<u8>,
}

impl Rewrite {
    /// The write that puts this content in place.
    pub fn into_write(self, target: ResolvedPath, shown: String) -> PlannedWrite {
        PlannedWrite {
            target,
            before: Some(self.before),
            content: self.content,
            new_mode: 0o666,
            remove: false,
            change: FileChange {
                path: shown,
                created: false,
                deleted: false,
                added: self.diff.added as u64,
                removed: self.diff.removed as u64,
                diff: self.diff.cut(MAX_CHANGE_DIFF_LINES),
            },
        }
    }
}

/// What the walk found.
#[derive(Debug, Default)]
pub(super) struct Census {
    /// Files with matches, sorted by path.
    pub files: Vec<FileResult>,
    /// Files of a searched language that were read.
    pub searched: usize,
    /// Per language (by [`Lang::ALL`] position): files read.
    searched_by_lang: [usize; Lang::ALL.len()],
    /// Per language: files not read because the pattern is not valid in it, and why.
    refused_by_lang: [usize; Lang::ALL.len()],
    refusals: [Option<String>; Lang::ALL.len()],
    binary: usize,
    not_utf8: usize,
    too_large: usize,
    problems: Problems,
    pub cancelled: bool,
}

impl Census {
    /// The languages whose files were searched.
    pub fn searched_langs(&self) -> Vec<Lang> {
        Lang::ALL
            .into_iter()
            .enumerate()
            .filter(|(i, _)| self.searched_by_lang[*i] > 0)
            .map(|(_, lang)| lang)
            .collect()
    }

    /// When files were found but the pattern is valid in none of their languages: why, for
    /// each of them.
    pub fn pattern_fails_everywhere(&self) -> Option<String> {
        if self.searched > 0 {
            return None;
        }
        let reasons: Vec<&String> = self.refusals.iter().flatten().collect();
        match reasons.as_slice() {
            [] => None,
            [one] => Some((*one).clone()),
            many => {
                let mut text = "The pattern is valid in none of the languages of the files found; \
                                give `language` to choose one."
                    .to_owned();
                for reason in many {
                    text.push_str("\n- ");
                    text.push_str(reason);
                }
                Some(text)
            }
        }
    }

    /// Notes on what was skipped (taken once: the unreadable paths move into their note).
    pub fn notes(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        for (i, lang) in Lang::ALL.into_iter().enumerate() {
            if self.refused_by_lang[i] > 0 && self.searched > 0 {
                notes.push(format!(
                    "{} not searched: the pattern does not parse as {} code (give `language` to \
                     search one language only).",
                    plural(
                        self.refused_by_lang[i],
                        &format!("{} file was", lang.title()),
                        &format!("{} files were", lang.title())
                    ),
                    lang.title()
                ));
            }
        }
        if self.binary > 0 {
            notes.push(format!(
                "{} skipped: binary (a NUL byte).",
                plural(self.binary, "file", "files")
            ));
        }
        if self.not_utf8 > 0 {
            notes.push(format!(
                "{} skipped: not UTF-8 text.",
                plural(self.not_utf8, "file", "files")
            ));
        }
        if self.too_large > 0 {
            notes.push(format!(
                "{} skipped: larger than {}.",
                plural(self.too_large, "file", "files"),
                human_size(MAX_FILE_BYTES)
            ));
        }
        notes.extend(std::mem::take(&mut self.problems).note());
        notes
    }
}

/// One thread's share of the walk.
struct Tally {
    census: Census,
    buf: Vec<u8>,
}

/// Walks `root` and searches every file of the chosen languages.
pub(super) fn census(
    input: &AstEditInput,
    ctx: &ToolContext,
    root: &SearchRoot,
    scope: &Scope<'_>,
    stop: &Stop,
) -> Result<Census, ToolError> {
    let workspace = ctx.session.workspace();
    let globs = input.glob.clone().unwrap_or_default().0;
    let glob_root = if root.is_dir {
        root.abs.clone()
    } else {
        root.abs
            .parent()
            .map_or_else(|| root.abs.clone(), std::path::Path::to_path_buf)
    };
    let overrides = search_walk::overrides(&glob_root, &globs).map_err(ToolError::new)?;
    let langs: Vec<Lang> = match scope.forced {
        Some(lang) => vec![lang],
        None => Lang::ALL.to_vec(),
    };
    let mut types = TypesBuilder::new();
    for lang in &langs {
        for ext in lang.extensions() {
            types
                .add("astedit", &format!("*.{ext}"))
                .map_err(|err| ToolError::new(format!("internal error: {err}")))?;
        }
    }
    types.select("astedit");
    let types = types
        .build()
        .map_err(|err| ToolError::new(format!("internal error: {err}")))?;
    let walk = WalkSpec {
        root: root.abs.clone(),
        hidden: input.hidden
            || globs
                .iter()
                .any(|g| !g.trim().starts_with('!') && search_walk::names_hidden(g)),
        overrides,
        types,
        beneath: workspace.beneath(),
    };
    let compiled: [OnceLock<Result<Compiled, String>>; Lang::ALL.len()] =
        std::array::from_fn(|_| OnceLock::new());
    let read_total = AtomicUsize::new(0);
    let explicit_file = !root.is_dir;
    let tallies = search_walk::visit_parallel(
        &walk.builder(),
        || Tally {
            census: Census::default(),
            buf: Vec::new(),
        },
        |tally, entry| {
            if stop.is_set() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    tally.census.problems.add_walk_error(&err, workspace);
                    return WalkState::Continue;
                }
            };
            if !search_walk::is_regular_file(&entry) {
                return WalkState::Continue;
            }
            let lang = match (scope.forced, Lang::of_path(entry.path())) {
                (Some(forced), Some(found)) if forced == found => forced,
                // A file named as `path` is parsed as the language given, whatever its name.
                (Some(forced), _) if explicit_file => forced,
                (Some(_), _) | (None, None) => return WalkState::Continue,
                (None, Some(found)) => found,
            };
            let slot = lang.index();
            let Ok(matcher) =
                compiled[slot].get_or_init(|| Compiled::new(lang, scope.pattern, scope.rewrite))
            else {
                if tally.census.refusals[slot].is_none()
                    && let Some(Err(reason)) = compiled[slot].get()
                {
                    tally.census.refusals[slot] = Some(reason.clone());
                }
                tally.census.refused_by_lang[slot] += 1;
                return WalkState::Continue;
            };
            search_file(tally, matcher, entry.path(), &walk, ctx, stop, &read_total);
            WalkState::Continue
        },
    );
    let mut census = Census {
        cancelled: stop.is_set(),
        ..Census::default()
    };
    for tally in tallies {
        let part = tally.census;
        census.files.extend(part.files);
        census.searched += part.searched;
        for i in 0..Lang::ALL.len() {
            census.searched_by_lang[i] += part.searched_by_lang[i];
            census.refused_by_lang[i] += part.refused_by_lang[i];
            if census.refusals[i].is_none() {
                census.refusals[i] = part.refusals[i].clone();
            }
        }
        census.binary += part.binary;
        census.not_utf8 += part.not_utf8;
        census.too_large += part.too_large;
        census.problems.merge(part.problems);
    }
    census
        .files
        .sort_unstable_by(|a, b| search_walk::path_order(&a.path, &b.path));
    Ok(census)
}

/// Reads, filters, parses and (with a rewrite) rewrites one file.
fn search_file(
    tally: &mut Tally,
    matcher: &Compiled,
    path: &std::path::Path,
    walk: &WalkSpec,
    ctx: &ToolContext,
    stop: &Stop,
    read_total: &AtomicUsize,
) {
    let workspace = ctx.session.workspace();
    let census = &mut tally.census;
    let mut file = match walk
        .beneath
        .open(path, OFlag::O_RDONLY | OFlag::O_NOCTTY | OFlag::O_NONBLOCK)
    {
        Ok(file) => file,
        Err(err) if changed_under_walk(&err) => {
            census.problems.add_changed();
            return;
        }
        Err(err) => {
            census.problems.add(format!(
                "{}: {}",
                search_walk::shown(workspace, path),
                err.to_string().to_lowercase()
            ));
            return;
        }
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_FILE_BYTES {
        census.too_large += 1;
        return;
    }
    let buf = &mut tally.buf;
    buf.clear();
    if let Err(err) = (&mut file).take(MAX_FILE_BYTES + 1).read_to_end(buf) {
        census.problems.add(format!(
            "{}: {}",
            search_walk::shown(workspace, path),
            err.to_string().to_lowercase()
        ));
        return;
    }
    let total = read_total.fetch_add(1, Ordering::Relaxed) + 1;
    if let Some(progress) = &ctx.progress
        && total.is_multiple_of(PROGRESS_EVERY)
    {
        progress(ToolProgress::Status {
            message: format!(
                "ast_edit: read {} files",
                lathe_runtime::budget::group(total)
            ),
        });
    }
    if memchr::memchr(0, buf).is_some() {
        census.binary += 1;
        return;
    }
    census.searched += 1;
    census.searched_by_lang[matcher.lang.index()] += 1;
    let bom = buf.starts_with(UTF8_BOM);
    let body = if bom {
        &buf[UTF8_BOM.len()..]
    } else {
        &buf[..]
    };
    if !matcher.may_match(body) {
        return;
    }
    let Ok(source) = std::str::from_utf8(body) else {
        census.searched -= 1;
        census.searched_by_lang[matcher.lang.index()] -= 1;
        census.not_utf8 += 1;
        return;
    };
    if stop.is_set() {
        return;
    }
    let scan = matcher.scan(source);
    if scan.hits.is_empty() {
        return;
    }
    let shown = search_walk::shown(workspace, path);
    let rewrite = scan.rewritten.map(|new| {
        let diff = UnifiedDiff::new(source, &new, &shown, 3);
        let mut content = Vec::with_capacity(new.len() + 3);
        if bom {
            content.extend_from_slice(UTF8_BOM);
        }
        content.extend_from_slice(new.as_bytes());
        Rewrite {
            diff,
            before: FileStamp::of(buf),
            content,
        }
    });
    census.files.push(FileResult {
        path: path.to_path_buf(),
        shown,
        hits: scan.hits,
        replacements: scan.replacements,
        rewrite,
    });
}
