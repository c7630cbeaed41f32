//! `list_files`: an ignore-aware tree of a directory, breadth first under a cap.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use crate::suggest;
use lathe_runtime::session::Session;
use lathe_runtime::text::{self, group};
use lathe_runtime::tool::{
    Effect, ResultExt, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult,
};
use lathe_runtime::workspace::{Access, Beneath};

/// Levels listed when the call gives no `depth`.
pub const DEFAULT_DEPTH: usize = 2;
/// Entries shown when the call gives no `limit`.
pub const DEFAULT_LIMIT: usize = 200;
/// The walk stops counting after this many entries, so a vast tree costs a bounded walk.
const MAX_WALKED: usize = 200_000;

/// List the files and directories under a directory, as an indented tree.
///
/// Goes `depth` levels down (default 2; 1 lists only the directory's own entries). Directory
/// names end with `/`. Hidden files and files ignored by .gitignore or .ignore are left out.
/// Shows at most `limit` entries (default 200), shallow ones first, and counts the rest.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListFilesInput {
    /// The directory, relative to the workspace root. Default: "." (the root).
    pub path: Option<String>,
    /// How many levels down to list. Default: 2.
    pub depth: Option<i64>,
    /// The most entries to show. Default: 200.
    pub limit: Option<i64>,
}

/// The `list_files` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ListFilesTool;

impl Tool for ListFilesTool {
    const NAME: &'static str = "list_files";
    const COMPACT_DESCRIPTION: Option<&'static str> =
        Some(r#"List a directory as a tree, `depth` levels (2). Skips hidden and ignored files."#);
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("path", r#"Default: the root."#), ("depth", "")]);
    const ALIASES: &'static [&'static str] =
        &["ls", "list_dir", "list_directory", "tree", "dir", "list"];
    type Input = ListFilesInput;

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
        text::title(Self::NAME, input.path.as_deref().unwrap_or(""))
    }

    async fn run(&self, input: ListFilesInput, ctx: ToolContext) -> ToolResult {
        let session = Arc::clone(&ctx.session);
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || list(&session, &input, &cancel))
            .await
            .or_model(|err| format!("list_files stopped unexpectedly: {err}"))?
    }
}

/// One walked entry.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    /// Path components below the listed directory.
    parts: Vec<OsString>,
    is_dir: bool,
    /// The target, for a symlink.
    link: Option<PathBuf>,
}

fn positive(value: Option<i64>, default: usize, name: &str, what: &str) -> Result<usize, String> {
    match value {
        None => Ok(default),
        Some(n) if n >= 1 => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Some(n) => Err(format!(
            "{name} must be 1 or more ({what}; default {default}), got {n}"
        )),
    }
}

fn list(session: &Session, input: &ListFilesInput, cancel: &CancellationToken) -> ToolResult {
    let depth = positive(
        input.depth,
        DEFAULT_DEPTH,
        "depth",
        "how many levels down to list",
    )
    .map_err(ToolError::new)?;
    let limit = positive(
        input.limit,
        DEFAULT_LIMIT,
        "limit",
        "the most entries to show",
    )
    .map_err(ToolError::new)?;
    let workspace = session.workspace();
    let path = input
        .path
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or(".");
    let resolved = workspace
        .resolve(path, Access::Read)
        .or_model(|err| err.to_string())?;
    let shown = resolved.shown().to_owned();
    match workspace.open_read(&resolved).and_then(|f| f.metadata()) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(ToolError::new(format!(
                "{shown} is a file, not a directory; use read_file with path=\"{shown}\" to read it"
            ))
            .with_path(shown));
        }
        Err(err)
            if err.kind() == io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            let similar = suggest::similar_paths(workspace, resolved.abs(), 3);
            return Err(ToolError::new(format!(
                "{shown} does not exist.{} Use list_files on a parent directory to see what is there.",
                suggest::did_you_mean(&similar)
            ))
            .with_path(shown)
            .with_meta("suggestions", similar));
        }
        Err(err) => {
            return Err(ToolError::new(format!("cannot list {shown}: {err}")).with_path(shown));
        }
    }
    let walk = walk(resolved.abs(), &workspace.beneath(), depth, cancel)
        .or_model(|()| format!("listing {shown} was cancelled"))?;
    Ok(render(&shown, &walk, limit))
}

struct Walk {
    entries: Vec<Entry>,
    /// The walk stopped at `MAX_WALKED`.
    capped: bool,
    /// Entries that could not be read (permissions, vanished files).
    unreadable: usize,
}

/// Lists `root` down to `depth`. Every entry is checked beneath the workspace's descriptor before
/// it is shown (and a directory before the walk descends into it): the walk lists directories by
/// name, and one swapped for a symlink while it runs must not show what lies elsewhere. Such
/// entries count as unreadable, unnamed.
fn walk(
    root: &Path,
    beneath: &Beneath,
    depth: usize,
    cancel: &CancellationToken,
) -> Result<Walk, ()> {
    let descend = beneath.clone();
    let walker = ignore::WalkBuilder::new(root)
        .max_depth(Some(depth))
        .standard_filters(true)
        // .gitignore applies outside a git repository too: a fresh project has ignore files
        // before it has a .git directory.
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            entry.depth() == 0
                || !entry.file_type().is_some_and(|t| t.is_dir())
                || descend.is_real_dir(entry.path())
        })
        .build();
    let mut walk = Walk {
        entries: Vec::new(),
        capped: false,
        unreadable: 0,
    };
    for result in walker {
        if cancel.is_cancelled() {
            return Err(());
        }
        let entry = match result {
            Ok(entry) => entry,
            Err(_) => {
                walk.unreadable += 1;
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        if walk.entries.len() >= MAX_WALKED {
            walk.capped = true;
            break;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let Ok(stat) = beneath.lstat(entry.path()) else {
            walk.unreadable += 1;
            continue;
        };
        let kind = stat.st_mode & libc::S_IFMT;
        let link =
            (kind == libc::S_IFLNK).then(|| beneath.read_link(entry.path()).unwrap_or_default());
        walk.entries.push(Entry {
            parts: rel.iter().map(|p| p.to_os_string()).collect(),
            is_dir: kind == libc::S_IFDIR,
            link,
        });
    }
    Ok(walk)
}

fn render(shown: &str, walk: &Walk, limit: usize) -> ToolOutput {
    let total = walk.entries.len();
    let root_label = if shown == "." {
        "./".to_owned()
    } else {
        format!("{shown}/")
    };
    if total == 0 {
        let mut text =
            format!("{root_label} is empty (hidden files and ignored files are not listed).");
        if walk.unreadable > 0 {
            text.push_str(&format!(" {} entries could not be read.", walk.unreadable));
        }
        return ToolOutput::ok(text)
            .with_path(shown)
            .with_meta("entries", 0)
            .with_meta("total", 0)
            .with_found("0 entries");
    }
    // Shallow entries first, so a cut keeps the overview; every kept entry's parent is kept too,
    // because it is shallower.
    let mut chosen: Vec<&Entry> = walk.entries.iter().collect();
    chosen.sort_by(|a, b| {
        a.parts
            .len()
            .cmp(&b.parts.len())
            .then(a.parts.cmp(&b.parts))
    });
    chosen.truncate(limit);
    chosen.sort_by(|a, b| a.parts.cmp(&b.parts));
    let mut text = format!("{root_label}\n");
    for entry in &chosen {
        let name = entry
            .parts
            .last()
            .map(|p| p.to_string_lossy())
            .unwrap_or_default();
        text.push_str(&"  ".repeat(entry.parts.len()));
        text.push_str(&name);
        if entry.is_dir {
            text.push('/');
        }
        if let Some(target) = &entry.link {
            text.push_str(&format!(" -> {}", target.display()));
        }
        text.push('\n');
    }
    let left_out = total - chosen.len();
    if left_out > 0 {
        let more = if walk.capped { "more than " } else { "" };
        text.push_str(&format!(
            "\n(showing {} of {more}{} entries; {} more not shown: list a subdirectory, or raise limit)\n",
            chosen.len(),
            group(total as u64),
            group(left_out as u64)
        ));
    } else if walk.capped {
        text.push_str(&format!(
            "\n(the walk stopped after {} entries)\n",
            group(total as u64)
        ));
    }
    if walk.unreadable > 0 {
        text.push_str(&format!(
            "({} entries could not be read)\n",
            walk.unreadable
        ));
    }
    ToolOutput::ok(text)
        .with_path(shown)
        .with_found(crate::search_walk::plural(chosen.len(), "entry", "entries"))
        .with_meta("entries", chosen.len())
        .with_meta("total", total)
        .with_meta("truncated", left_out > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str, is_dir: bool) -> Entry {
        Entry {
            parts: path.split('/').map(OsString::from).collect(),
            is_dir,
            link: None,
        }
    }

    #[test]
    fn tree_is_sorted_indented_and_marks_directories() {
        let walk = Walk {
            entries: vec![
                entry("b.txt", false),
                entry("a", true),
                entry("a/x.rs", false),
            ],
            capped: false,
            unreadable: 0,
        };
        let out = render(".", &walk, 100);
        assert_eq!(out.text, "./\n  a/\n    x.rs\n  b.txt\n");
    }

    #[test]
    fn the_cap_keeps_shallow_entries_and_counts_the_rest() {
        let mut entries = vec![entry("z", true)];
        entries.extend((0..10).map(|i| entry(&format!("z/{i}"), false)));
        entries.push(entry("top.txt", false));
        let walk = Walk {
            entries,
            capped: false,
            unreadable: 0,
        };
        let out = render("src", &walk, 4);
        assert!(out.text.starts_with("src/\n"), "{}", out.text);
        assert!(out.text.contains("  top.txt\n"), "{}", out.text);
        assert!(out.text.contains("  z/\n    0\n    1\n"), "{}", out.text);
        assert!(
            out.text
                .contains("(showing 4 of 12 entries; 8 more not shown"),
            "{}",
            out.text
        );
    }

    #[test]
    fn bad_numbers_are_refused() {
        assert_eq!(positive(None, 2, "depth", "x"), Ok(2));
        assert!(
            positive(Some(0), 2, "depth", "x")
                .unwrap_err()
                .contains("depth must be 1 or more")
        );
    }
}
