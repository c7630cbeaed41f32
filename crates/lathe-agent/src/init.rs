//! The task `/init` gives the model: write the project's `AGENTS.md` from a look at the
//! project, or improve the one there. A front end runs it as if the user had typed it.

use std::path::Path;

use crate::prompt::PROJECT_INSTRUCTIONS_FILE;

/// The task `/init` runs when the workspace has no AGENTS.md.
const WRITE_PROMPT: &str = "\
Write AGENTS.md at the workspace root: the instructions a coding agent needs to work on this \
project. First look at the project: its build files (Cargo.toml, package.json, pyproject.toml, \
go.mod, Makefile and the like), the README, the CI configuration, and the layout of the source \
and test directories. Then write AGENTS.md with write_file, covering: what the project is (a \
line or two), how to build it, how to run the tests (the exact commands, and how to run a single \
test), the layout (what lives where), and the conventions to follow (formatting, lints, style, \
commit rules) as the project states them. Keep it short and concrete: commands that work here, \
paths that exist; no generic advice.";

/// The task `/init` runs when AGENTS.md is already there.
const IMPROVE_PROMPT: &str = "\
AGENTS.md already exists at the workspace root: read it first, then improve it rather than start \
over. Look at the project: its build files (Cargo.toml, package.json, pyproject.toml, go.mod, \
Makefile and the like), the README, the CI configuration, and the layout of the source and test \
directories. Then fix what AGENTS.md gets wrong or out of date and add what it lacks (how to \
build, how to run the tests and a single test, the layout, the conventions), with edit_file; \
keep what is still right. Keep it short and concrete: commands that work here, paths that exist.";

/// Which task `/init` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitTask {
    /// The workspace has no `AGENTS.md`: write one.
    Write,
    /// `AGENTS.md` is there: improve it, keeping what is still right.
    Improve,
}

impl InitTask {
    /// The task for the workspace at `root`.
    pub fn for_workspace(root: &Path) -> InitTask {
        if root.join(PROJECT_INSTRUCTIONS_FILE).exists() {
            InitTask::Improve
        } else {
            InitTask::Write
        }
    }

    /// What the model is asked.
    pub fn prompt(self) -> &'static str {
        match self {
            InitTask::Write => WRITE_PROMPT,
            InitTask::Improve => IMPROVE_PROMPT,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_file_there_is_improved_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(InitTask::for_workspace(dir.path()), InitTask::Write);
        assert!(InitTask::Write.prompt().starts_with("Write AGENTS.md"));
        std::fs::write(dir.path().join("AGENTS.md"), "Use tabs.\n").unwrap();
        assert_eq!(InitTask::for_workspace(dir.path()), InitTask::Improve);
        assert!(
            InitTask::Improve
                .prompt()
                .contains("improve it rather than start over")
        );
    }
}
