//! The two passes of a search. The census walks the tree in parallel and counts matching lines
//! per file, holding no text, so totals are exact whatever the page size; the page pass then
//! reads only the files the requested page shows, with context, and keeps only those lines.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use ignore::WalkState;

use super::file::{FileSearcher, Verdict};
use super::render::line_text;
use crate::search_walk::{self, Problems, Stop, WalkSpec};
use lathe_runtime::tool::{ProgressSink, ToolProgress};
use lathe_runtime::workspace::{Beneath, Workspace, changed_under_walk};

/// Files searched between two progress reports.
const PROGRESS_EVERY: u64 = 1000;

/// The census of one search.
#[derive(Debug, Default)]
pub(super) struct Census {
    /// Files with matches and their matching-line counts, sorted by path.
    pub files: Vec<FileCount>,
    /// Binary files skipped, sorted.
    pub binary: Vec<PathBuf>,
    /// Regular files opened.
    pub searched: u64,
    /// Paths that could not be read.
    pub problems: Problems,
    /// The search was cancelled before it ended.
    pub cancelled: bool,
}

/// One file with matches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct FileCount {
    /// Absolute path.
    pub path: PathBuf,
    /// Matching lines (1 when only the presence of a match was asked for).
    pub lines: u64,
}

/// What the census needs.
pub(super) struct CensusSpec<'a> {
    pub walk: &'a WalkSpec,
    pub matcher: &'a RegexMatcher,
    pub multiline: bool,
    /// Stop reading a file at its first match (only which files match is wanted).
    pub first_match_only: bool,
    pub stop: &'a Stop,
    pub progress: Option<&'a ProgressSink>,
    pub workspace: &'a Workspace,
}

struct Tally {
    searcher: FileSearcher,
    beneath: Beneath,
    matcher: RegexMatcher,
    files: Vec<FileCount>,
    binary: Vec<PathBuf>,
    searched: u64,
    problems: Problems,
}

/// Walks and counts, in parallel; each thread keeps its own results, merged and sorted at the
/// end so that the order never depends on scheduling.
pub(super) fn census(spec: &CensusSpec<'_>) -> Census {
    let searched_total = AtomicU64::new(0);
    let tallies = search_walk::visit_parallel(
        &spec.walk.builder(),
        || Tally {
            searcher: FileSearcher::new(
                SearcherBuilder::new()
                    .line_number(false)
                    .multi_line(spec.multiline),
            ),
            beneath: spec.walk.beneath.clone(),
            matcher: spec.matcher.clone(),
            files: Vec::new(),
            binary: Vec::new(),
            searched: 0,
            problems: Problems::default(),
        },
        |tally, entry| {
            if spec.stop.is_set() {
                return WalkState::Quit;
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    tally.problems.add_walk_error(&err, spec.workspace);
                    return WalkState::Continue;
                }
            };
            if !search_walk::is_regular_file(&entry) {
                return WalkState::Continue;
            }
            tally.searched += 1;
            let total = searched_total.fetch_add(1, Ordering::Relaxed) + 1;
            if let Some(progress) = spec.progress
                && total.is_multiple_of(PROGRESS_EVERY)
            {
                progress(ToolProgress::Status {
                    message: format!(
                        "grep: searched {} files",
                        lathe_runtime::budget::group(total as usize)
                    ),
                });
            }
            let mut sink = CountSink {
                lines: 0,
                binary: false,
                first_match_only: spec.first_match_only,
                multiline: spec.multiline,
            };
            let result = tally.searcher.search(
                entry.path(),
                &tally.beneath,
                &tally.matcher,
                spec.stop,
                &mut sink,
            );
            match result {
                Err(_) if spec.stop.is_set() => return WalkState::Quit,
                Err(err) if changed_under_walk(&err) => {
                    tally.searched -= 1;
                    tally.problems.add_changed();
                }
                Err(err) => tally.problems.add(format!(
                    "{}: {}",
                    search_walk::shown(spec.workspace, entry.path()),
                    err.to_string().to_lowercase()
                )),
                Ok(Verdict::Binary) => tally.binary.push(entry.into_path()),
                Ok(Verdict::Text) if sink.binary => tally.binary.push(entry.into_path()),
                Ok(Verdict::Text) if sink.lines > 0 => tally.files.push(FileCount {
                    path: entry.into_path(),
                    lines: sink.lines,
                }),
                Ok(Verdict::Text) => {}
            }
            WalkState::Continue
        },
    );
    let mut census = Census {
        cancelled: spec.stop.is_set(),
        ..Census::default()
    };
    for tally in tallies {
        census.files.extend(tally.files);
        census.binary.extend(tally.binary);
        census.searched += tally.searched;
        census.problems.merge(tally.problems);
    }
    census
        .files
        .sort_unstable_by(|a, b| search_walk::path_order(&a.path, &b.path));
    census
        .binary
        .sort_unstable_by(|a, b| search_walk::path_order(a, b));
    census
}

struct CountSink {
    lines: u64,
    binary: bool,
    first_match_only: bool,
    multiline: bool,
}

impl Sink for CountSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.lines += if self.multiline {
            mat.lines().count() as u64
        } else {
            1
        };
        Ok(!self.first_match_only)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// One line of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PageLine {
    /// 1-based line number.
    pub number: u64,
    /// A matching line (otherwise context).
    pub is_match: bool,
    /// The text, cut when long, without its line terminator.
    pub text: String,
}

/// Which matching lines of one file the page shows, and the context around them.
pub(super) struct PageSpec<'a> {
    pub matcher: &'a RegexMatcher,
    pub multiline: bool,
    pub before: usize,
    pub after: usize,
    /// The roots' descriptors, beneath which the file is opened.
    pub beneath: &'a Beneath,
    /// Matching lines of this file to pass over before the page starts.
    pub skip: u64,
    /// Matching lines of this file on the page.
    pub take: u64,
    pub stop: &'a Stop,
}

/// Reads one file again and returns the page's lines in order: its matching lines from `skip`
/// on, `take` of them, with their context lines.
pub(super) fn page_lines(path: &Path, spec: &PageSpec<'_>) -> io::Result<Vec<PageLine>> {
    let mut searcher = FileSearcher::new(
        SearcherBuilder::new()
            .line_number(true)
            .multi_line(spec.multiline)
            .before_context(spec.before)
            .after_context(spec.after),
    );
    let mut sink = PageSink {
        spec,
        seen: 0,
        end: spec.skip.saturating_add(spec.take),
        window_started: false,
        last_selected: 0,
        kept: VecDeque::new(),
        selected: Vec::new(),
        done: false,
    };
    if searcher.search(path, spec.beneath, spec.matcher, spec.stop, &mut sink)? == Verdict::Binary {
        return Ok(Vec::new());
    }
    let PageSink { kept, selected, .. } = sink;
    // Keep context only around the selected matches: lines before the page that were kept
    // in case they are context may be too far from the first selected match.
    let near = |number: u64| {
        let i = selected.partition_point(|&s| s < number);
        let after_prev = i > 0 && number - selected[i - 1] <= spec.after as u64;
        let before_next = i < selected.len() && selected[i] - number <= spec.before as u64;
        after_prev || before_next
    };
    Ok(kept.into_iter().filter(|line| near(line.number)).collect())
}

struct PageSink<'a> {
    spec: &'a PageSpec<'a>,
    /// Matching lines seen so far.
    seen: u64,
    /// `skip + take`.
    end: u64,
    window_started: bool,
    last_selected: u64,
    kept: VecDeque<PageLine>,
    selected: Vec<u64>,
    done: bool,
}

impl PageSink<'_> {
    /// Takes one line; false once nothing more of the file can be on the page.
    fn line(&mut self, number: u64, bytes: &[u8], is_match: bool) -> bool {
        let selected = is_match && self.seen >= self.spec.skip && self.seen < self.end;
        if is_match {
            self.seen += 1;
        }
        if selected {
            self.window_started = true;
            self.last_selected = number;
            self.selected.push(number);
        } else if !self.window_started {
            // Before the page: only the last `before` lines can become context.
            if self.spec.before == 0 {
                return true;
            }
            while self.kept.len() >= self.spec.before {
                self.kept.pop_front();
            }
        } else if number > self.last_selected + self.spec.after as u64 {
            // Past the page and its trailing context (no further match can be selected once
            // `seen` reached `end`).
            if self.seen >= self.end {
                self.done = true;
                return false;
            }
        }
        let focus = if is_match {
            self.spec
                .matcher
                .find(bytes)
                .ok()
                .flatten()
                .map(|m| m.start()..m.end())
        } else {
            None
        };
        self.kept.push_back(PageLine {
            number,
            is_match,
            text: line_text(bytes, focus),
        });
        true
    }
}

impl Sink for PageSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(1);
        for (i, line) in mat.lines().enumerate() {
            if !self.line(first + i as u64, line, true) {
                return Ok(false);
            }
        }
        Ok(!self.done)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        let number = context.line_number().unwrap_or(1);
        Ok(self.line(number, context.bytes(), false))
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        Ok(false)
    }
}
