//! What went wrong on the way: paths a walk could not read, counted, a few of them named.

use crate::search_walk::shown;
use lathe_runtime::budget::group;
use lathe_runtime::workspace::Workspace;

/// How many problem paths a note names before it only counts.
const PROBLEM_EXAMPLES: usize = 3;

/// Paths the walk could not read (permissions, broken ignore files), counted, with a few named.
#[derive(Debug, Default)]
pub(crate) struct Problems {
    count: usize,
    examples: Vec<String>,
    /// Paths that changed under the walk (a symlink swapped in, a file removed): counted and
    /// never named, since such a name may come from a directory outside the workspace.
    changed: usize,
}

impl Problems {
    /// Records one problem.
    pub fn add(&mut self, message: String) {
        self.count += 1;
        if self.examples.len() < PROBLEM_EXAMPLES * 4 {
            self.examples.push(message);
        }
    }

    /// Records a path that was no longer what the walk listed (see
    /// [`changed_under_walk`](lathe_runtime::workspace::changed_under_walk)).
    pub fn add_changed(&mut self) {
        self.changed += 1;
    }

    /// Records a walk error, its paths shown relative to the workspace.
    pub fn add_walk_error(&mut self, err: &ignore::Error, workspace: &Workspace) {
        self.add(describe_walk_error(err, workspace));
    }

    /// Merges another thread's problems.
    pub fn merge(&mut self, other: Problems) {
        self.count += other.count;
        self.examples.extend(other.examples);
        self.changed += other.changed;
    }

    /// The note, if anything went wrong.
    pub fn note(mut self) -> Option<String> {
        let changed = (self.changed > 0).then(|| {
            format!(
                "{} changed while the walk ran (removed, or a symlink swapped in) and {} skipped",
                plural(self.changed, "path", "paths"),
                if self.changed == 1 { "was" } else { "were" }
            )
        });
        if self.count == 0 {
            return changed;
        }
        self.examples.sort();
        self.examples.dedup();
        self.examples.truncate(PROBLEM_EXAMPLES);
        let more = self.count.saturating_sub(self.examples.len());
        let tail = if more > 0 {
            format!("; and {} more", group(more))
        } else {
            String::new()
        };
        let unreadable = format!(
            "{} could not be read: {}{tail}",
            plural(self.count, "path", "paths"),
            self.examples.join("; ")
        );
        Some(match changed {
            Some(changed) => format!("{unreadable}\n{changed}"),
            None => unreadable,
        })
    }
}

fn describe_walk_error(err: &ignore::Error, workspace: &Workspace) -> String {
    match err {
        ignore::Error::WithPath { path, err } => {
            format!(
                "{}: {}",
                shown(workspace, path),
                describe_walk_error(err, workspace)
            )
        }
        ignore::Error::WithDepth { err, .. } => describe_walk_error(err, workspace),
        ignore::Error::WithLineNumber { line, err } => {
            format!("line {line}: {}", describe_walk_error(err, workspace))
        }
        ignore::Error::Partial(errs) => errs
            .iter()
            .map(|e| describe_walk_error(e, workspace))
            .collect::<Vec<_>>()
            .join("; "),
        ignore::Error::Io(io) => io.to_string().to_lowercase(),
        other => other.to_string(),
    }
}

/// `1 file` / `2 files`, with thousands separators.
pub(crate) fn plural(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{} {many}", group(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plurals() {
        assert_eq!(plural(1, "file", "files"), "1 file");
        assert_eq!(plural(1234, "file", "files"), "1,234 files");
    }
}
