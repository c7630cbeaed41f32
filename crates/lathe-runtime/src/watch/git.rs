//! Git's side of the watch: where a repository's hooks and configuration are, and which of its
//! settings make git run a program.

use std::path::{Path, PathBuf};

/// How many parent directories are searched for the repository's `.git`.
const MAX_PARENTS: usize = 64;

/// Where a repository's parts are.
pub(super) struct GitPaths {
    /// The `.git` entry (a directory, or a file naming the git directory).
    pub(super) dot_git: PathBuf,
    /// The git directory (`.git`, or `.git/worktrees/NAME` for a worktree).
    pub(super) dir: PathBuf,
    /// The common directory (hooks, config): the git directory, or what its `commondir` names.
    pub(super) common: PathBuf,
    /// The working tree's root (relative `core.hooksPath` values start there).
    pub(super) work_tree: PathBuf,
}

/// The repository the workspace is in: its `.git` in the workspace or a parent.
pub(super) fn find_git(root: &Path) -> Option<GitPaths> {
    let mut dir = Some(root);
    for _ in 0..MAX_PARENTS {
        let here = dir?;
        let dot_git = here.join(".git");
        if let Ok(meta) = std::fs::symlink_metadata(&dot_git) {
            let git_dir = if meta.is_file() {
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let named = text.lines().next()?.strip_prefix("gitdir:")?.trim();
                let named = Path::new(named);
                if named.is_absolute() {
                    named.to_path_buf()
                } else {
                    here.join(named)
                }
            } else {
                dot_git.clone()
            };
            let common = match std::fs::read_to_string(git_dir.join("commondir")) {
                Ok(text) if !text.trim().is_empty() => {
                    let named = Path::new(text.trim());
                    if named.is_absolute() {
                        named.to_path_buf()
                    } else {
                        git_dir.join(named)
                    }
                }
                _ => git_dir.clone(),
            };
            let common = std::fs::canonicalize(&common).unwrap_or(common);
            return Some(GitPaths {
                dot_git,
                dir: git_dir,
                common,
                work_tree: here.to_path_buf(),
            });
        }
        dir = here.parent();
    }
    None
}

pub(super) fn expand_home(value: &str) -> PathBuf {
    if let Some(rest) = value.strip_prefix("~/")
        && let Some(home) = std::env::var_os("HOME")
    {
        return PathBuf::from(home).join(rest);
    }
    PathBuf::from(value)
}

/// Whether `section.key = value` (lowercase section and key; `section` may hold a subsection,
/// `filter.lfs`) makes git run a program or read settings from elsewhere. By the shape of the
/// key rather than a closed list, so that the many `*.command`, `*.cmd`, `*.program` and
/// `*.helper` settings are all covered.
fn runs_program(section: &str, key: &str, value: &str) -> bool {
    let base = section.split_once('.').map_or(section, |(base, _)| base);
    const SUFFIXES: &[&str] = &[
        "command", "cmd", "program", "hook", "helper", "editor", "pager", "driver", "textconv",
        "clean", "smudge", "process", "external", "proxy", "askpass",
    ];
    match (base, key) {
        ("alias" | "pager", _) => true,
        ("core", "hookspath" | "fsmonitor" | "attributesfile" | "gitproxy" | "worktree") => true,
        ("include" | "includeif", "path") => true,
        ("protocol", "allow") => true,
        ("submodule", "update") => value.trim_start_matches('"').starts_with('!'),
        (_, "url" | "pushurl") => value.trim_start_matches('"').starts_with("ext::"),
        _ => SUFFIXES.iter().any(|suffix| key.ends_with(suffix)),
    }
}

/// The settings in a git configuration file's text that run programs, as `section.key=value`
/// (section and key lowercase, as git compares them; subsections kept as written).
pub(super) fn program_keys(text: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut section = String::new();
    for line in text.lines() {
        let mut line = line.trim();
        if let Some(rest) = line.strip_prefix('[') {
            let Some(end) = rest.find(']') else {
                continue;
            };
            let header = &rest[..end];
            section = match header.split_once(char::is_whitespace) {
                Some((name, sub)) => {
                    let sub = sub.trim().trim_matches('"');
                    format!("{}.{sub}", name.to_ascii_lowercase())
                }
                None => match header.split_once('.') {
                    Some((name, sub)) => format!("{}.{sub}", name.to_ascii_lowercase()),
                    None => header.to_ascii_lowercase(),
                },
            };
            line = rest[end + 1..].trim();
            if line.is_empty() {
                continue;
            }
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((key, value)) => (key.trim(), value.trim()),
            None => (line, "true"),
        };
        let key = key.to_ascii_lowercase();
        if runs_program(&section, &key, value) {
            let value = value.trim_matches('"');
            keys.push(format!("{section}.{key}={value}"));
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_keys_reads_git_config_shapes() {
        let text = "[core]\n\tFSMonitor = \"watch\"\n\teditor=vim\n\tbare\n\
                    [filter \"lfs\"]\n\tsmudge = git-lfs smudge %f\n\trequired = true\n\
                    [includeIf \"gitdir:~/x/\"]\n\tpath = ~/.evil\n[user]\n\tname = me\n\
                    # [alias] comment\n[diff.pdf] textconv = pdftotext\n";
        assert_eq!(
            program_keys(text),
            [
                "core.fsmonitor=watch",
                "core.editor=vim",
                "filter.lfs.smudge=git-lfs smudge %f",
                "includeif.gitdir:~/x/.path=~/.evil",
                "diff.pdf.textconv=pdftotext",
            ]
        );
    }
}
