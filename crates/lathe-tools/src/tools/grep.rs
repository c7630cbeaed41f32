//! `grep`: content search on ripgrep's own engine (`grep-searcher`, `grep-regex`, the `ignore`
//! walker), in-process, with output shaped for a model: sorted by path then line whatever the
//! thread scheduling, exact totals when the page is capped, and `offset` pages that concatenate
//! to the full list.
//!
//! Paging counts entries: matching lines in `content` mode (context lines travel with their
//! match and are not counted), files in `files_with_matches` and `count` modes. A line of a
//! multi-line match counts as one matching line each.

mod file;
mod pattern;
mod render;
mod search;

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::budget::group;
use crate::tool::{Tool, ToolContext, ToolKind, ToolOutput};
use crate::tools::search_walk::{self, WalkSpec, plural};

use pattern::PatternFlags;
use search::{Census, CensusSpec, PageSpec};

/// Entries on one page unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 200;

/// Binary files named in the note before it only counts.
const BINARY_EXAMPLES: usize = 3;

/// The `grep` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct GrepTool;

/// Search file contents with a regular expression (ripgrep's engine and syntax). Results are
/// sorted by path, then line, and paged: at most `limit` entries (default 200) from `offset`, with
/// exact totals and the offset of the next page when there is more.
///
/// Output (`output_mode`): `content` (default) gives `path:line: text` for matching lines and
/// `path-line- text` for context lines, groups separated by `--`, lines over 500 characters cut
/// around the match; `files_with_matches` gives one path a line; `count` gives `path:N` (matching
/// lines per file). Paths are relative to the workspace root.
///
/// Files ignored by .gitignore, .ignore or .rgignore are skipped, as are hidden files and
/// directories (unless `hidden: true`) and binary files (counted in a note). Symbolic links are
/// not followed. No look-around or backreferences: rewrite such patterns, or use `fixed_strings`
/// for literal text.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression (Rust/ripgrep syntax, e.g. `fn\s+main`, `TODO|FIXME`,
    /// `\bfoo_[a-z]+\b`). Escape special characters (`\(`, `\.`, `\[`) or pass
    /// fixed_strings: true to search for literal text.
    pub pattern: String,
    /// File or directory to search, relative to the workspace root. Default: the whole
    /// workspace.
    pub path: Option<String>,
    /// Glob or list of globs choosing files, matched relative to `path`: `*.rs` (a glob without
    /// `/` matches file names at any depth), `src/**/*.ts`, `*.{ts,tsx}`; a leading `!` excludes
    /// (`!**/tests/**`).
    pub glob: Option<StringList>,
    /// File type or list of types, by ripgrep's names: `rust`, `py`, `js`, `ts`, `go`, `c`,
    /// `cpp`, `java`, `md`, `json`, `yaml`, ...; a leading `!` excludes a type.
    #[serde(rename = "type")]
    pub file_type: Option<StringList>,
    /// Match letters in either case. Default false.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Treat `pattern` as literal text, not a regex. Default false.
    #[serde(default)]
    pub fixed_strings: bool,
    /// Let matches span lines; `.` then also matches a line break. Default false.
    #[serde(default)]
    pub multiline: bool,
    /// Lines of context shown before and after each match (content mode). Default 0.
    pub context: Option<usize>,
    /// Lines of context before each match; overrides `context`.
    pub before: Option<usize>,
    /// Lines of context after each match; overrides `context`.
    pub after: Option<usize>,
    /// What to show.
    #[serde(default)]
    pub output_mode: OutputMode,
    /// Most entries to show: matching lines (content), or files (files_with_matches, count).
    /// Default 200; 0 for no limit.
    pub limit: Option<usize>,
    /// Entries to skip, for the next page (the output says which offset to use). Default 0.
    #[serde(default)]
    pub offset: usize,
    /// Also search hidden files and directories (names starting with `.`). Default false.
    #[serde(default)]
    pub hidden: bool,
}

/// What `grep` shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// matching lines as `path:line: text` (the default)
    #[default]
    Content,
    /// the paths of files with matches, one a line
    FilesWithMatches,
    /// matching lines per file, `path:N`
    Count,
}

/// One string or a list of strings (models send both).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StringList(pub Vec<String>);

impl<'de> Deserialize<'de> for StringList {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum OneOrMany {
            One(String),
            Many(Vec<String>),
        }
        Ok(match OneOrMany::deserialize(deserializer)? {
            OneOrMany::One(one) if one.trim().is_empty() => StringList(Vec::new()),
            OneOrMany::One(one) => StringList(vec![one]),
            OneOrMany::Many(many) => StringList(many),
        })
    }
}

impl JsonSchema for StringList {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "StringList".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <Vec<String>>::json_schema(generator)
    }

    fn inline_schema() -> bool {
        true
    }
}

impl Tool for GrepTool {
    const NAME: &'static str = "grep";
    type Input = GrepInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    async fn run(&self, input: GrepInput, ctx: ToolContext) -> ToolOutput {
        let cancel = ctx.cancel.clone();
        search_walk::run_blocking(Self::NAME, &cancel, move || execute(&input, &ctx)).await
    }
}

/// The whole search, on a blocking thread.
fn execute(input: &GrepInput, ctx: &ToolContext) -> ToolOutput {
    let root = match search_walk::resolve_root(ctx, input.path.as_deref()) {
        Ok(root) => root,
        Err(output) => return output,
    };
    let globs = input.glob.clone().unwrap_or_default().0;
    let type_names = input.file_type.clone().unwrap_or_default().0;
    let glob_root = if root.is_dir {
        root.abs.clone()
    } else {
        root.abs
            .parent()
            .map_or_else(|| root.abs.clone(), std::path::Path::to_path_buf)
    };
    let overrides = match search_walk::overrides(&glob_root, &globs) {
        Ok(overrides) => overrides,
        Err(message) => return ToolOutput::error(message),
    };
    let types = match search_walk::types(&type_names) {
        Ok(types) => types,
        Err(message) => return ToolOutput::error(message),
    };
    let flags = PatternFlags {
        case_insensitive: input.case_insensitive,
        fixed_strings: input.fixed_strings,
        multiline: input.multiline,
    };
    let matcher = match pattern::build(&input.pattern, flags) {
        Ok(matcher) => matcher,
        Err(message) => return ToolOutput::error(message),
    };
    let walk = WalkSpec {
        root: root.abs.clone(),
        hidden: input.hidden
            || globs
                .iter()
                .any(|g| !g.trim().starts_with('!') && search_walk::names_hidden(g)),
        overrides,
        types,
    };
    let workspace = ctx.session.workspace();
    let census = search::census(&CensusSpec {
        walk: &walk,
        matcher: &matcher,
        multiline: input.multiline,
        first_match_only: input.output_mode == OutputMode::FilesWithMatches,
        cancel: &ctx.cancel,
        progress: ctx.progress.as_ref(),
        workspace,
    });
    if census.cancelled {
        return ToolOutput::error(format!(
            "grep was cancelled after searching {}; nothing is shown",
            plural(census.searched as usize, "file", "files")
        ))
        .with_meta("files_searched", census.searched)
        .with_meta("cancelled", true);
    }
    let report = Report {
        input,
        ctx,
        root: &root,
        walk: &walk,
        census,
    };
    match input.output_mode {
        OutputMode::Content => report.content(&matcher),
        OutputMode::FilesWithMatches | OutputMode::Count => report.files(),
    }
}

/// Turns a census into the model-facing result.
struct Report<'a> {
    input: &'a GrepInput,
    ctx: &'a ToolContext,
    root: &'a search_walk::SearchRoot,
    walk: &'a WalkSpec,
    census: Census,
}

impl Report<'_> {
    fn limit(&self) -> usize {
        match self.input.limit {
            None => DEFAULT_LIMIT,
            Some(0) => usize::MAX,
            Some(n) => n,
        }
    }

    fn total_lines(&self) -> u64 {
        self.census.files.iter().map(|f| f.lines).sum()
    }

    fn content(self, matcher: &grep_regex::RegexMatcher) -> ToolOutput {
        let total = self.total_lines();
        if total == 0 {
            return self.nothing_found();
        }
        let offset = self.input.offset as u64;
        if offset >= total {
            return self.past_the_end(&format!("{} matching lines", group(total as usize)));
        }
        let end = offset.saturating_add(self.limit() as u64).min(total);
        let before = self.input.before.or(self.input.context).unwrap_or(0);
        let after = self.input.after.or(self.input.context).unwrap_or(0);
        let workspace = self.ctx.session.workspace();
        let mut text = String::new();
        let mut problems = search_walk::Problems::default();
        let mut first_of_file = 0u64;
        for file in &self.census.files {
            let file_end = first_of_file + file.lines;
            if file_end > offset && first_of_file < end {
                let skip = offset.max(first_of_file) - first_of_file;
                let take = end.min(file_end) - first_of_file - skip;
                let spec = PageSpec {
                    matcher,
                    multiline: self.input.multiline,
                    before,
                    after,
                    skip,
                    take,
                    cancel: &self.ctx.cancel,
                };
                let shown = search_walk::shown(workspace, &file.path);
                match search::page_lines(&file.path, &spec) {
                    Ok(lines) => {
                        render::push_file_lines(&mut text, &shown, &lines, before + after > 0)
                    }
                    Err(err) => {
                        problems.add(format!("{shown}: {}", err.to_string().to_lowercase()))
                    }
                }
            }
            if file_end >= end {
                break;
            }
            first_of_file = file_end;
        }
        if self.ctx.cancel.is_cancelled() {
            return ToolOutput::error(
                "grep was cancelled while reading the page; nothing is shown",
            );
        }
        let files = self.census.files.len();
        let summary = (offset > 0 || end < total).then(|| {
            let range = if offset == 0 {
                format!(
                    "showing {} of {} matching lines",
                    group(end as usize),
                    group(total as usize)
                )
            } else {
                format!(
                    "showing matching lines {}-{} of {}",
                    group(offset as usize + 1),
                    group(end as usize),
                    group(total as usize)
                )
            };
            format!(
                "{range} in {}{}",
                plural(files, "file", "files"),
                next_page(end, total)
            )
        });
        let (lines_total, shown) = (total, end - offset);
        self.finish(text, summary, problems)
            .with_meta("matches", lines_total)
            .with_meta("shown", shown)
    }

    fn files(self) -> ToolOutput {
        let total = self.census.files.len();
        if total == 0 {
            return self.nothing_found();
        }
        let offset = self.input.offset;
        if offset >= total {
            return self.past_the_end(&plural(total, "file with matches", "files with matches"));
        }
        let end = offset.saturating_add(self.limit()).min(total);
        let workspace = self.ctx.session.workspace();
        let counting = self.input.output_mode == OutputMode::Count;
        let mut text = String::new();
        for file in &self.census.files[offset..end] {
            text.push_str(&search_walk::shown(workspace, &file.path));
            if counting {
                let _ = write!(text, ":{}", file.lines);
            }
            text.push('\n');
        }
        let lines_total = self.total_lines();
        let summary = (offset > 0 || end < total).then(|| {
            let range = if offset == 0 {
                format!(
                    "showing {} of {} files with matches",
                    group(end),
                    group(total)
                )
            } else {
                format!(
                    "showing files {}-{} of {} with matches",
                    group(offset + 1),
                    group(end),
                    group(total)
                )
            };
            let lines = if counting {
                format!(" ({} matching lines in all)", group(lines_total as usize))
            } else {
                String::new()
            };
            format!("{range}{lines}{}", next_page(end as u64, total as u64))
        });
        let mut output = self.finish(text, summary, search_walk::Problems::default());
        if counting {
            output = output.with_meta("matches", lines_total);
        }
        output.with_meta("shown", end - offset)
    }

    /// Appends the summary and notes, and the metadata every result carries.
    fn finish(
        self,
        mut text: String,
        summary: Option<String>,
        page_problems: search_walk::Problems,
    ) -> ToolOutput {
        let mut notes: Vec<String> = summary.into_iter().collect();
        notes.extend(self.binary_note());
        let mut problems = self.census.problems;
        problems.merge(page_problems);
        notes.extend(problems.note());
        if !notes.is_empty() {
            text.push('\n');
            for note in notes {
                text.push_str(&note);
                text.push('\n');
            }
        }
        ToolOutput::ok(text)
            .with_meta("files", self.census.files.len())
            .with_meta("files_searched", self.census.searched)
            .with_meta("binary_skipped", self.census.binary.len())
    }

    fn binary_note(&self) -> Option<String> {
        let binary = &self.census.binary;
        if binary.is_empty() {
            return None;
        }
        let workspace = self.ctx.session.workspace();
        if !self.root.is_dir {
            return Some(format!(
                "'{}' is a binary file; grep does not search binary files",
                self.root.shown
            ));
        }
        let named: Vec<String> = binary
            .iter()
            .take(BINARY_EXAMPLES)
            .map(|p| search_walk::shown(workspace, p))
            .collect();
        let more = if binary.len() > BINARY_EXAMPLES {
            ", ..."
        } else {
            ""
        };
        Some(format!(
            "skipped {} (not searched): {}{more}",
            plural(binary.len(), "binary file", "binary files"),
            named.join(", ")
        ))
    }

    fn past_the_end(&self, what: &str) -> ToolOutput {
        ToolOutput::error(format!(
            "offset={} is past the end: there are {what}; use an offset below that, or 0 for the first page",
            self.input.offset
        ))
    }

    fn nothing_found(self) -> ToolOutput {
        let mut text = format!(
            "No matches for {:?} in {} (searched {}",
            self.input.pattern,
            describe_root(self.root),
            plural(self.census.searched as usize, "file", "files"),
        );
        let filters: Vec<String> = [
            self.input
                .glob
                .as_ref()
                .filter(|g| !g.0.is_empty())
                .map(|g| format!("glob {:?}", g.0)),
            self.input
                .file_type
                .as_ref()
                .filter(|t| !t.0.is_empty())
                .map(|t| format!("type {:?}", t.0)),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !filters.is_empty() {
            let _ = write!(text, " chosen by {}", filters.join(" and "));
        }
        text.push_str(").");
        if self.input.case_insensitive {
            text.push_str(" The search ignored case.");
        } else if self.input.pattern.chars().any(char::is_alphabetic) {
            text.push_str(" The search was case-sensitive (case_insensitive: true ignores case).");
        }
        if let Some(note) = self.excluded_note() {
            text.push(' ');
            text.push_str(&note);
        }
        let mut output = self.finish(text, None, search_walk::Problems::default());
        output.text = output.text.trim_end().to_owned();
        output.with_meta("matches", 0)
    }

    /// When nothing matched: whether hidden or ignored files exist that were not searched.
    fn excluded_note(&self) -> Option<String> {
        if !self.root.is_dir || !self.walk.filters_apply() {
            return None;
        }
        let searched = self.census.searched as usize;
        let unfiltered =
            search_walk::unfiltered_count(self.walk, |_| true, searched + 1, &self.ctx.cancel);
        if unfiltered.count <= searched {
            return None;
        }
        let hidden = if self.walk.hidden {
            ""
        } else {
            " pass hidden: true to search hidden files;"
        };
        Some(format!(
            "Some files here are hidden or ignored by .gitignore/.ignore/.rgignore and were not searched:{hidden} \
             to search an ignored directory, give it as path."
        ))
    }
}

fn describe_root(root: &search_walk::SearchRoot) -> String {
    if root.shown == "." {
        "the workspace".to_owned()
    } else {
        format!("'{}'", root.shown)
    }
}

fn next_page(end: u64, total: u64) -> String {
    if end < total {
        format!("; call grep with offset={end} for more")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs_and_types_take_one_string_or_a_list() {
        let input: GrepInput = serde_json::from_value(
            json!({"pattern": "x", "glob": "*.rs", "type": ["rust", "!md"]}),
        )
        .unwrap();
        assert_eq!(input.glob, Some(StringList(vec!["*.rs".into()])));
        assert_eq!(
            input.file_type,
            Some(StringList(vec!["rust".into(), "!md".into()]))
        );
        assert_eq!(input.output_mode, OutputMode::Content);
        let input: GrepInput = serde_json::from_value(json!({"pattern": "x", "glob": ""})).unwrap();
        assert_eq!(input.glob, Some(StringList(Vec::new())));
        assert!(serde_json::from_value::<GrepInput>(json!({"pattern": "x", "glob": 3})).is_err());
    }

    #[test]
    fn the_schema_is_plain() {
        let (description, schema) = crate::schema::tool_schema::<GrepInput>();
        assert!(description.starts_with("Search file contents"));
        assert_eq!(schema["properties"]["glob"]["type"], "array");
        assert_eq!(schema["properties"]["type"]["items"]["type"], "string");
        assert!(
            schema["properties"]["limit"].get("default").is_none(),
            "{schema}"
        );
        assert_eq!(schema["required"], json!(["pattern"]));
    }
}
