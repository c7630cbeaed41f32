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
mod report;
mod search;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::search_walk::{self, WalkSpec, plural};
use lathe_runtime::session::Session;
use lathe_runtime::text::{self, in_path};
use lathe_runtime::tool::{Effect, Tool, ToolContext, ToolError, ToolKind, ToolResult};

use pattern::PatternFlags;
use report::Report;
use search::CensusSpec;

/// Entries on one page unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 200;

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
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"Search file contents with a regex (ripgrep syntax, no look-around; `fixed_strings: true` for literal text). Lines as `path:line: text`, sorted, at most `limit` (200) from `offset`. Skips ignored, hidden and binary files."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = Some(&[
        ("pattern", ""),
        ("path", r#"File or directory. Default: all."#),
        ("glob", r#"`*.rs`, `!**/tests/**`"#),
        ("case_insensitive", ""),
        ("fixed_strings", ""),
        ("context", r#"Lines around each match."#),
        ("output_mode", ""),
        ("limit", ""),
        ("offset", ""),
    ]);
    const ALIASES: &'static [&'static str] = &[
        "search",
        "rg",
        "ripgrep",
        "grep_search",
        "search_files",
        "find_in_files",
        "code_search",
        "search_code",
    ];
    type Input = GrepInput;

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
        // Quoted: a pattern's spaces and escapes are part of it, and a newline stays on the line.
        text::title(
            Self::NAME,
            &in_path(&format!("{:?}", input.pattern), &input.path),
        )
    }

    async fn run(&self, input: GrepInput, ctx: ToolContext) -> ToolResult {
        let cancel = ctx.cancel.clone();
        search_walk::run_blocking(Self::NAME, &cancel, move |stop| execute(&input, &ctx, stop))
            .await
    }
}

/// The whole search, on a blocking thread.
fn execute(input: &GrepInput, ctx: &ToolContext, stop: &search_walk::Stop) -> ToolResult {
    let root = search_walk::resolve_root(ctx, input.path.as_deref())?;
    let globs = input.glob.clone().unwrap_or_default().0;
    let type_names = input.file_type.clone().unwrap_or_default().0;
    let glob_root = if root.is_dir {
        root.abs.clone()
    } else {
        root.abs
            .parent()
            .map_or_else(|| root.abs.clone(), std::path::Path::to_path_buf)
    };
    let overrides = search_walk::overrides(&glob_root, &globs).map_err(ToolError::new)?;
    let types = search_walk::types(&type_names).map_err(ToolError::new)?;
    let flags = PatternFlags {
        case_insensitive: input.case_insensitive,
        fixed_strings: input.fixed_strings,
        multiline: input.multiline,
    };
    let matcher = pattern::build(&input.pattern, flags).map_err(ToolError::new)?;
    let walk = WalkSpec {
        root: root.abs.clone(),
        hidden: input.hidden
            || globs
                .iter()
                .any(|g| !g.trim().starts_with('!') && search_walk::names_hidden(g)),
        overrides,
        types,
        beneath: ctx.session.workspace().beneath(),
    };
    let workspace = ctx.session.workspace();
    let census = search::census(&CensusSpec {
        walk: &walk,
        matcher: &matcher,
        multiline: input.multiline,
        first_match_only: input.output_mode == OutputMode::FilesWithMatches,
        stop,
        progress: ctx.progress.as_ref(),
        workspace,
    });
    if census.cancelled {
        return Err(ToolError::new(format!(
            "grep was cancelled after searching {}; nothing is shown",
            plural(census.searched as usize, "file", "files")
        ))
        .with_meta("files_searched", census.searched)
        .with_meta("cancelled", true));
    }
    let report = Report {
        input,
        ctx,
        stop,
        root: &root,
        walk: &walk,
        census,
    };
    match input.output_mode {
        OutputMode::Content => report.content(&matcher),
        OutputMode::FilesWithMatches | OutputMode::Count => report.files(),
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
        let (description, schema) = lathe_runtime::schema::tool_schema::<GrepInput>();
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
