//! The model-facing result of a search: the requested page, exact totals, the next offset, and
//! notes on what was skipped or could not be read.

use std::fmt::Write as _;

use super::search::{self, Census, PageSpec};
use super::{DEFAULT_LIMIT, GrepInput, OutputMode, render};
use crate::search_walk::{self, SearchRoot, WalkSpec, plural};
use lathe_runtime::budget::group;
use lathe_runtime::tool::{ToolContext, ToolError, ToolOutput, ToolResult};

/// Binary files named in the note before it only counts.
const BINARY_EXAMPLES: usize = 3;

/// Turns a census into the model-facing result.
pub(super) struct Report<'a> {
    pub input: &'a GrepInput,
    pub ctx: &'a ToolContext,
    pub stop: &'a search_walk::Stop,
    pub root: &'a SearchRoot,
    pub walk: &'a WalkSpec,
    pub census: Census,
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

    pub fn content(self, matcher: &grep_regex::RegexMatcher) -> ToolResult {
        let total = self.total_lines();
        if total == 0 {
            return Ok(self.nothing_found());
        }
        let offset = self.input.offset as u64;
        if offset >= total {
            return Err(self.past_the_end(&format!("{} matching lines", group(total as usize))));
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
                    beneath: &self.walk.beneath,
                    stop: self.stop,
                };
                let shown = search_walk::shown(workspace, &file.path);
                match search::page_lines(&file.path, &spec) {
                    Ok(lines) => {
                        render::push_file_lines(&mut text, &shown, &lines, before + after > 0)
                    }
                    Err(err) if lathe_runtime::workspace::changed_under_walk(&err) => {
                        problems.add_changed()
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
        if self.stop.is_set() {
            return Err(ToolError::new(
                "grep was cancelled while reading the page; nothing is shown",
            ));
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
        Ok(self
            .finish(text, summary, problems)
            .with_meta("matches", lines_total)
            .with_meta("shown", shown)
            .with_found(plural(lines_total as usize, "match", "matches")))
    }

    pub fn files(self) -> ToolResult {
        let total = self.census.files.len();
        if total == 0 {
            return Ok(self.nothing_found());
        }
        let offset = self.input.offset;
        if offset >= total {
            return Err(self.past_the_end(&plural(
                total,
                "file with matches",
                "files with matches",
            )));
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
            output = output.with_meta("matches", lines_total).with_found(plural(
                lines_total as usize,
                "match",
                "matches",
            ));
        }
        Ok(output.with_meta("shown", end - offset))
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
            .with_found(plural(self.census.files.len(), "file", "files"))
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

    fn past_the_end(&self, what: &str) -> ToolError {
        ToolError::new(format!(
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
        output.with_meta("matches", 0).with_found("0 matches")
    }

    /// When nothing matched: whether hidden or ignored files exist that were not searched.
    fn excluded_note(&self) -> Option<String> {
        if !self.root.is_dir || !self.walk.filters_apply() {
            return None;
        }
        let searched = self.census.searched as usize;
        let unfiltered =
            search_walk::unfiltered_count(self.walk, |_| true, searched + 1, self.stop);
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

fn describe_root(root: &SearchRoot) -> String {
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
