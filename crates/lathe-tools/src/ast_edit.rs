//! `ast_edit`: structural search and rewrite with ast-grep's engine, in-process, over the same
//! ignore-aware, contained walk as `grep`.
//!
//! Without `rewrite` the call only searches and lists the matches. With `rewrite` it is a
//! preview: it works out the rewritten content of every file that changes, as a [`Plan`] (each
//! file's stamp taken from the very bytes that were parsed), shows the matches and a diff per
//! file, and pushes a pending action whose apply writes that plan, all files or none, after
//! checking that none changed since. Nothing is written by the call itself.
//!
//! The result lists the totals and the files first, then the matches, then the diffs, so that a
//! result cut to the budget still says what the whole would do.

mod engine;
mod lang;
mod walk;

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::grep::StringList;
use crate::search_walk::{self, plural};
use lathe_runtime::session::Session;
use lathe_runtime::text;
use lathe_runtime::tool::{
    Effect, Plan, Tool, ToolContext, ToolError, ToolHints, ToolKind, ToolOutput, ToolResult,
};
use lathe_runtime::{PendingAction, Workspace};

use lang::Lang;
use walk::{Census, FileResult, Scope};

/// Search code by its syntax tree, and optionally rewrite it (ast-grep's patterns and engine).
///
/// `pattern` is code of the language with meta-variables: `$A` matches any one node (an
/// expression, an identifier, a statement), `$$$ARGS` any number of nodes (arguments,
/// statements); the same name twice must match the same code. It matches whatever parses to the
/// same tree, whatever the spacing, line breaks or comments: `foo($A, $$$REST)`,
/// `$X.unwrap()`, `if err != nil { $$$B }`. Prefer it to grep when the code's structure matters
/// (a call with its arguments, a block), and to edit_file for the same change in many places.
///
/// Without `rewrite`: lists every match as `path:line:col: text`, grouped by file. With
/// `rewrite`: a preview, nothing is changed yet. It lists the matches, a unified diff per file and
/// the totals, and leaves a pending action: call `resolve` with action "apply" to write all of it
/// (refused if a file changed since), or "discard". Files ignored by .gitignore/.ignore, hidden
/// files (unless `hidden: true`), binary and non-UTF-8 files are skipped, as by grep.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AstEditInput {
    /// The code pattern, e.g. `foo($A, $$$REST)`. It must be valid code of the language on its
    /// own (one expression, statement or item).
    pub pattern: String,
    /// The code that replaces each match; meta-variables of the pattern insert what they
    /// matched (`bar($$$REST, $A)`). "" deletes the matches. Without it, the call only searches.
    pub rewrite: Option<String>,
    /// The language: rust, python, javascript, typescript, tsx, go, java, c, cpp, bash. Only
    /// files of that language are searched (by extension: .rs, .py, .js/.jsx/.mjs, .ts, .tsx,
    /// .go, .java, .c/.h, .cpp/.cc/.hpp, .sh/.bash). Default: each file's language from its
    /// extension.
    pub language: Option<String>,
    /// File or directory to search, relative to the workspace root. Default: the whole
    /// workspace.
    pub path: Option<String>,
    /// Glob or list of globs choosing files, relative to `path`, as in grep: `*.rs`,
    /// `src/**/*.ts`; a leading `!` excludes (`!**/tests/**`).
    pub glob: Option<StringList>,
    /// Also search hidden files and directories (names starting with `.`). Default false.
    #[serde(default)]
    pub hidden: bool,
}

/// The `ast_edit` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct AstEditTool;

impl Tool for AstEditTool {
    const NAME: &'static str = "ast_edit";
    const ON_DEMAND: bool = true;
    const ALIASES: &'static [&'static str] = &["ast_grep", "sg", "structural_search"];
    // Code goes to files as written: a `\n` inside a string literal of the pattern or the
    // rewrite is two characters of the source, never a line break to repair.
    const RAW_STRINGS: &'static [&'static str] = &["pattern", "rewrite"];
    type Input = AstEditInput;

    fn kind(&self) -> ToolKind {
        // The call reads; what it leaves pending is written by `resolve`, judged there.
        ToolKind::Read
    }

    fn hints(&self) -> ToolHints {
        ToolHints {
            // A second preview pushes a second pending action.
            idempotent: false,
            ..lathe_runtime::tool::hints_for(ToolKind::Read)
        }
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        let mut effects = vec![Effect::Read {
            path: input.path.clone().unwrap_or_else(|| ".".to_owned()),
        }];
        if input.rewrite.is_some() {
            effects.push(Effect::OwnState { changes: true });
        }
        effects
    }

    fn title(&self, input: &Self::Input) -> String {
        let what = match &input.rewrite {
            Some(rewrite) => format!("{:?} -> {:?}", input.pattern, rewrite),
            None => format!("{:?}", input.pattern),
        };
        text::title(Self::NAME, &text::in_path(&what, &input.path))
    }

    async fn run(&self, input: AstEditInput, ctx: ToolContext) -> ToolResult {
        let cancel = ctx.cancel.clone();
        search_walk::run_blocking(Self::NAME, &cancel, move |stop| execute(&input, &ctx, stop))
            .await
    }
}

/// The whole call, on a blocking thread.
fn execute(input: &AstEditInput, ctx: &ToolContext, stop: &search_walk::Stop) -> ToolResult {
    let forced = match input.language.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => match Lang::parse(name) {
            Some(lang) => Some(lang),
            None => {
                return Err(ToolError::new(format!(
                    "parameter `language`: {name:?} is not a language ast_edit knows; it knows {}. \
                     Leave `language` out to take each file's language from its extension",
                    Lang::list()
                )));
            }
        },
    };
    let root = search_walk::resolve_root(ctx, input.path.as_deref())?;
    if !root.is_dir && forced.is_none() && Lang::of_path(&root.abs).is_none() {
        return Err(ToolError::new(format!(
            "cannot tell the language of {} from its name; give `language` (one of {})",
            root.shown,
            Lang::list()
        )));
    }
    let scope = Scope {
        pattern: &input.pattern,
        rewrite: input.rewrite.as_deref(),
        forced,
    };
    if let Some(lang) = forced {
        // A broken pattern is reported before any file is read.
        engine::Compiled::new(lang, scope.pattern, scope.rewrite).map_err(ToolError::new)?;
    }
    let census = walk::census(input, ctx, &root, &scope, stop)?;
    if census.cancelled {
        return Err(ToolError::new(format!(
            "ast_edit was cancelled after reading {}; nothing is shown and nothing changed",
            plural(census.searched, "file", "files")
        ))
        .with_meta("files_searched", census.searched)
        .with_meta("cancelled", true));
    }
    if let Some(message) = census.pattern_fails_everywhere() {
        return Err(ToolError::new(message).with_meta("files_searched", census.searched));
    }
    if census.files.is_empty() {
        return Ok(nothing_found(input, &root.shown, census));
    }
    report(input, ctx, census)
}

/// The languages searched, for people: `Rust`, `Rust, Python`.
fn languages(census: &Census) -> String {
    let langs: Vec<&str> = census.searched_langs().iter().map(|l| l.title()).collect();
    if langs.is_empty() {
        "no language".to_owned()
    } else {
        langs.join(", ")
    }
}

fn nothing_found(input: &AstEditInput, shown_root: &str, mut census: Census) -> ToolOutput {
    let where_ = if shown_root == "." {
        "the workspace".to_owned()
    } else {
        shown_root.to_owned()
    };
    let mut text = if census.searched == 0 {
        let which = match Lang::parse(input.language.as_deref().unwrap_or("")) {
            Some(lang) => format!("{} files", lang.title()),
            None => "files of a language ast_edit knows".to_owned(),
        };
        format!(
            "No matches: {where_} has no {which} to search (by extension; ignored and hidden files are \
             skipped). ast_edit knows {}.",
            Lang::list()
        )
    } else {
        format!(
            "No matches for `{}` in {where_} ({} searched: {}).",
            input.pattern,
            plural(census.searched, "file", "files"),
            languages(&census),
        )
    };
    if census.searched > 0 {
        text.push_str(
            " Check the pattern against one file you know holds such code: call ast_edit with that \
             file as `path`. A pattern matches whole syntax nodes as the parser sees them (`foo($$$ARGS)` \
             finds every call of foo, `foo(` finds nothing); $A stands for one node, $$$A for any \
             number; a name used twice must match the same code.",
        );
    }
    for note in census.notes() {
        text.push('\n');
        text.push_str(&note);
    }
    ToolOutput::ok(text)
        .with_found("0 matches")
        .with_meta("matches", 0)
        .with_meta("files", 0)
        .with_meta("files_searched", census.searched)
}

/// What a search or a preview with matches found, counted once for its text and metadata.
struct Counts {
    matches: usize,
    files: usize,
    replacements: usize,
    /// Files the rewrite changes.
    changed: usize,
    searched: usize,
}

impl Counts {
    fn of(census: &Census) -> Counts {
        Counts {
            matches: census.files.iter().map(|f| f.hits.len()).sum(),
            files: census.files.len(),
            replacements: census.files.iter().map(|f| f.replacements).sum(),
            changed: census.files.iter().filter(|f| f.rewrite.is_some()).count(),
            searched: census.searched,
        }
    }

    /// The metadata every result with matches carries.
    fn meta(&self, output: ToolOutput) -> ToolOutput {
        output
            .with_found(format!(
                "{} in {}",
                plural(self.matches, "match", "matches"),
                plural(self.files, "file", "files")
            ))
            .with_meta("matches", self.matches)
            .with_meta("files", self.files)
            .with_meta("files_searched", self.searched)
    }
}

/// The model-facing result of a search or a preview with matches.
fn report(input: &AstEditInput, ctx: &ToolContext, mut census: Census) -> ToolResult {
    let notes = census.notes();
    let counts = Counts::of(&census);
    let rewriting = input.rewrite.is_some();
    let mut text = summary(&census, &counts, rewriting);
    push_details(&mut text, &census, rewriting);
    if !notes.is_empty() {
        text.push('\n');
        for note in &notes {
            text.push_str(note);
            text.push('\n');
        }
    }
    if !rewriting {
        return Ok(counts.meta(ToolOutput::ok(text)));
    }
    if counts.changed == 0 {
        text.push_str("\nThe rewrite leaves every match as it is, so nothing is pending.\n");
        return Ok(counts
            .meta(ToolOutput::ok(text))
            .with_meta("replacements", 0)
            .with_meta("files_changed", 0));
    }
    propose(input, ctx, census, text, &counts)
}

/// The first line(s) of a report: how many matches in how many files, and for a preview what
/// the rewrite would change.
fn summary(census: &Census, counts: &Counts, rewriting: bool) -> String {
    let mut text = String::new();
    let searched = format!(
        "{} searched: {}",
        plural(census.searched, "file", "files"),
        languages(census)
    );
    if rewriting {
        let _ = writeln!(
            text,
            "Preview (nothing is changed yet): {} of {} in {} would change {} ({searched}).",
            plural(counts.replacements, "replacement", "replacements"),
            plural(counts.matches, "match", "matches"),
            plural(counts.files, "file", "files"),
            plural(counts.changed, "file", "files"),
        );
        if counts.matches > counts.replacements && counts.replacements > 0 {
            text.push_str(
                "A match inside another match is rewritten only as part of the outer one.\n",
            );
        }
    } else {
        let _ = writeln!(
            text,
            "{} in {} ({searched}).",
            plural(counts.matches, "match", "matches"),
            plural(counts.files, "file", "files"),
        );
    }
    text
}

/// Appends each file's counts, every match, and the diffs of the files the rewrite changes.
fn push_details(text: &mut String, census: &Census, rewriting: bool) {
    for file in &census.files {
        let _ = write!(
            text,
            "{}: {}",
            file.shown,
            plural(file.hits.len(), "match", "matches")
        );
        if let Some(rewrite) = &file.rewrite {
            let _ = write!(
                text,
                ", {} (+{} -{})",
                plural(file.replacements, "replacement", "replacements"),
                rewrite.diff.added,
                rewrite.diff.removed
            );
        } else if rewriting {
            text.push_str(", unchanged by the rewrite");
        }
        text.push('\n');
    }
    text.push_str("\nMatches:\n");
    for file in &census.files {
        for hit in &file.hits {
            let _ = writeln!(
                text,
                "{}:{}:{}: {}",
                file.shown, hit.line, hit.column, hit.text
            );
        }
    }
    let changed: Vec<&FileResult> = census
        .files
        .iter()
        .filter(|f| f.rewrite.is_some())
        .collect();
    if !changed.is_empty() {
        text.push_str("\nDiffs:\n");
        for file in &changed {
            if let Some(rewrite) = &file.rewrite {
                text.push_str(&rewrite.diff.cut(usize::MAX));
            }
        }
    }
}

/// Keeps a preview's plan as the session's pending action, and says so after the report
/// `text`; when it cannot be kept, the model reads why, with the preview.
fn propose(
    input: &AstEditInput,
    ctx: &ToolContext,
    census: Census,
    mut text: String,
    counts: &Counts,
) -> ToolResult {
    let plan = plan(ctx.session.workspace(), census, counts.replacements, input)?;
    let label = format!(
        "ast_edit {} -> {}: {} in {}",
        text::one_line(&input.pattern, 60),
        text::one_line(input.rewrite.as_deref().unwrap_or(""), 60),
        plural(counts.replacements, "replacement", "replacements"),
        plural(counts.changed, "file", "files"),
    );
    let action = PendingAction::from_plan(label, AstEditTool::NAME, plan);
    let output = match ctx.session.push_pending(action) {
        Ok(notice) => {
            text.push('\n');
            text.push_str(notice.trim_end());
            text.push('\n');
            ToolOutput::ok(text)
        }
        Err(message) => ToolOutput::error(format!(
            "{message} The preview below cannot be applied here; make the change with edit_file \
             instead.\n\n{text}"
        )),
    };
    // A preview that cannot be kept is an error that still carries its counts.
    counts
        .meta(output)
        .with_meta("replacements", counts.replacements)
        .with_meta("files_changed", counts.changed)
        .into_result()
}

/// The plan the pending action applies: each changed file's new content, against the stamp
/// of the bytes that were parsed.
fn plan(
    workspace: &Workspace,
    census: Census,
    replacements: usize,
    input: &AstEditInput,
) -> Result<Plan, ToolError> {
    let mut writes = Vec::new();
    let mut changed = 0;
    for file in census.files {
        let Some(rewrite) = file.rewrite else {
            continue;
        };
        let target = workspace
            .resolve(
                &file.path.to_string_lossy(),
                lathe_runtime::workspace::Access::Write,
            )
            .map_err(|err| {
                ToolError::new(format!(
                    "{} cannot be rewritten: {err}. Give a `path` inside the workspace",
                    file.shown
                ))
            })?;
        changed += 1;
        writes.push(rewrite.into_write(target, file.shown));
    }
    let output = ToolOutput::ok(format!(
        "Applied ast_edit {}: {} in {}.",
        text::one_line(&input.pattern, 60),
        plural(replacements, "replacement", "replacements"),
        plural(changed, "file", "files"),
    ))
    .with_meta("replacements", replacements)
    .with_meta("files_changed", changed);
    Ok(Plan::new(writes, output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn input(value: serde_json::Value) -> AstEditInput {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_search_only_reads_and_a_preview_also_leaves_session_state() {
        let dir = tempfile::tempdir().unwrap();
        let session = Session::new(
            Workspace::new(dir.path()).unwrap(),
            lathe_runtime::ToolConfig::default(),
            dir.path().join(".state"),
        )
        .unwrap();
        let search = input(json!({"pattern": "foo($A)", "path": "src"}));
        assert_eq!(
            AstEditTool.effects(&search, &session),
            [Effect::Read { path: "src".into() }]
        );
        let preview = input(json!({"pattern": "foo($A)", "rewrite": "bar($A)"}));
        let effects = AstEditTool.effects(&preview, &session);
        assert_eq!(
            effects,
            [
                Effect::Read { path: ".".into() },
                Effect::OwnState { changes: true }
            ]
        );
        // Nothing a preview does is a write: the policy lets it run in read-only mode.
        assert!(
            effects
                .iter()
                .all(|e| !matches!(e, Effect::Write { .. } | Effect::Edit { .. }))
        );
    }

    #[test]
    fn titles() {
        assert_eq!(
            AstEditTool.title(&input(json!({"pattern": "foo($A)", "path": "src"}))),
            "ast_edit \"foo($A)\" in src"
        );
        assert_eq!(
            AstEditTool.title(&input(json!({"pattern": "foo($A)", "rewrite": "bar($A)"}))),
            "ast_edit \"foo($A)\" -> \"bar($A)\""
        );
    }

    #[test]
    fn the_schema_requires_only_the_pattern() {
        let (description, schema) = lathe_runtime::schema::tool_schema::<AstEditInput>();
        assert!(description.starts_with("Search code by its syntax tree"));
        assert_eq!(schema["required"], json!(["pattern"]));
        assert_eq!(schema["properties"]["glob"]["type"], "array");
    }
}
