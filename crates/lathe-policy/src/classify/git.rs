//! git: which subcommands only read, which change the repository, which destroy or publish.

use super::{Cmd, Verdict};
use crate::severity::Severity;
use crate::word::Word;

#[rustfmt::skip]
pub(super) const READ_ONLY: &[&str] = &[
    "status", "log", "diff", "show", "blame", "annotate", "shortlog", "describe", "rev-parse",
    "rev-list", "ls-files", "ls-tree", "cat-file", "grep", "show-ref", "for-each-ref",
    "merge-base", "name-rev", "whatchanged", "cherry", "count-objects", "diff-tree", "diff-files",
    "diff-index", "check-ignore", "check-attr", "check-ref-format", "var", "verify-commit",
    "verify-tag", "range-diff", "show-branch", "ls-remote", "fsck", "help", "version",
    "request-pull", "archive", "cherry-mark", "get-tar-commit-id", "column", "check-mailmap",
    "diff-pairs", "fsck-objects", "verify-pack", "show-index", "patch-id", "stripspace",
];

#[rustfmt::skip]
pub(super) const CHANGES: &[&str] = &[
    "add", "commit", "mv", "merge", "cherry-pick", "revert", "init", "fetch", "pull", "clone",
    "am", "format-patch", "maintenance", "sparse-checkout", "commit-tree", "hash-object",
    "mergetool", "difftool", "mktag", "mktree", "read-tree", "write-tree", "update-index",
    "symbolic-ref", "replace", "rerere", "bundle", "citool", "gui", "annex", "lfs", "p4", "svn",
    "fast-import", "pack-refs", "repack", "unpack-objects", "index-pack", "multi-pack-index",
    "commit-graph", "merge-file", "merge-tree", "interpret-trailers", "restore-staged",
];

/// Whether setting this configuration key can make git run a program.
fn risky_config(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    #[rustfmt::skip]
    const MARKERS: &[&str] = &[
        "pager", "editor", "sshcommand", "fsmonitor", "hookspath", "askpass", "proxy", "textconv",
        "external", "driver", "filter.", "helper", "program", "alias.", "uploadpack",
        "receivepack", "include", "templatedir", "command", "hook.", "sendemail.",
    ];
    MARKERS.iter().any(|m| k.contains(m))
}

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    if cmd.program != "git" {
        return None;
    }
    let args = cmd.args;
    let mut pre = Verdict::default();
    let mut repo_dir: Option<&Word> = None;
    let mut i = 0;
    while let Some(w) = args.get(i) {
        let Some(a) = w.known() else {
            return Some(Verdict::dangerous(format!(
                "the git subcommand or option `{}` is not known until run time",
                w.display
            )));
        };
        match a {
            "-C" => {
                repo_dir = args.get(i + 1);
                i += 2;
            }
            "-c" | "--config-env" => {
                let kv = args.get(i + 1).map(|w| w.display.as_str()).unwrap_or("");
                if risky_config(kv.split('=').next().unwrap_or("")) {
                    pre.raise(
                        Severity::Dangerous,
                        format!("git -c {kv} can make git run another program"),
                    );
                }
                i += 2;
            }
            "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix" | "--list-cmds" => {
                i += 2
            }
            "--exec-path" => i += 1,
            _ if a.starts_with("--exec-path=") => {
                pre.raise(
                    Severity::Dangerous,
                    "git --exec-path= runs git programs from another directory",
                );
                i += 1;
            }
            "--version" | "--help" | "-h" => {
                return Some(Verdict::safe("git only prints information"));
            }
            _ if a.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let Some(sub) = args.get(i).and_then(Word::known) else {
        return Some(Verdict::safe("git without a subcommand only prints help"));
    };
    let rest = Cmd {
        args: &args[i + 1..],
        ..*cmd
    };
    let mut v = super::git_sub::subcommand(sub, &rest);
    v.a.absorb(pre.a);
    if let Some(dir) = repo_dir {
        let outside = dir
            .known()
            .and_then(|d| crate::paths::resolve(d, cmd.cwd, cmd.ctx))
            .map(|p| crate::paths::locate(&p, cmd.ctx))
            .is_none_or(|l| {
                !matches!(
                    l,
                    crate::paths::Location::Workspace | crate::paths::Location::Temp
                )
            });
        if outside && v.severity() >= Severity::Normal {
            v.raise(
                Severity::Dangerous,
                format!(
                    "changes the repository in `{}`, outside the workspace",
                    dir.display
                ),
            );
        }
    }
    Some(v)
}

pub(super) fn read_only(sub: &str, c: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::safe(format!("git {sub} only reads"));
    for out in c.option_values(&["-o"], &["--output"]) {
        v.raise(
            Severity::Normal,
            format!("git {sub} writes `{}`", out.display),
        );
        v.write(&out);
    }
    if c.has(&["--ext-diff"]) {
        v.raise(
            Severity::Normal,
            "--ext-diff runs the configured external diff program",
        );
    }
    if sub == "grep" && c.has(&["-O", "--open-files-in-pager"]) {
        v.raise(Severity::Normal, "git grep -O opens a pager program");
    }
    if sub == "fsck" && c.has(&["--lost-found"]) {
        v.raise(
            Severity::Normal,
            "git fsck --lost-found writes recovered objects",
        );
    }
    v
}

pub(super) fn config(c: &Cmd<'_>) -> Verdict {
    let reads = c.has(&[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--list",
        "-l",
        "--get-color",
        "--get-colorbool",
    ]) || matches!(c.first_operand().map(|(_, v)| v), Some("get" | "list"));
    let valued = ["-f", "--file", "--blob", "--type", "--default", "--comment"];
    let ops = c.operands(&valued);
    if reads
        || (ops.len() == 1
            && !c.has(&[
                "--unset",
                "--unset-all",
                "--remove-section",
                "--rename-section",
                "-e",
                "--edit",
            ]))
    {
        return Verdict::safe("git config only reads settings");
    }
    let mut v = Verdict::normal("git config changes repository settings");
    if c.has(&["--global", "--system"]) {
        v.raise(
            Severity::Dangerous,
            "git config --global/--system changes settings outside the workspace",
        );
    }
    let key = ops
        .iter()
        .map(|w| w.display.as_str())
        .find(|k| !matches!(*k, "set" | "unset" | "edit"));
    if let Some(k) = key
        && risky_config(k)
    {
        v.raise(
            Severity::Dangerous,
            format!("setting {k} can make git run another program"),
        );
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn git_subcommands() {
        expect(&[
            ("git status", Safe),
            ("git log --oneline -5", Safe),
            ("git diff HEAD~1 --stat", Safe),
            ("git show HEAD:src/main.rs", Safe),
            ("git branch -a", Safe),
            ("git branch --contains abc123", Safe),
            ("git branch feature", Normal),
            ("git branch -D feature", Dangerous),
            ("git -C sub status", Safe),
            ("git --no-pager log -3", Safe),
            ("git add -A && git commit -m 'x'", Normal),
            ("git push", Dangerous),
            ("git push --force origin main", Dangerous),
            ("git push origin +main", Dangerous),
            ("git reset --hard HEAD~3", Dangerous),
            ("git reset HEAD file", Normal),
            ("git clean -fdx", Dangerous),
            ("git clean -n", Safe),
            ("git checkout -- .", Dangerous),
            ("git checkout -b topic", Normal),
            ("git restore --staged a.rs", Normal),
            ("git restore a.rs", Dangerous),
            ("git stash list", Safe),
            ("git stash clear", Dangerous),
            ("git config user.name", Safe),
            ("git config --global user.name x", Dangerous),
            ("git config core.pager 'sh -c x'", Dangerous),
            ("git -c core.pager='rm -rf ~' log", Dangerous),
            ("git log --output=/tmp/x", Normal),
            ("git rebase -x 'rm -rf /' main", Critical),
            ("git credential fill", Critical),
            ("git $SUB", Dangerous),
            ("git -C /elsewhere commit -m x", Dangerous),
            ("git remote -v", Safe),
            ("git tag", Safe),
            ("git tag v1.0", Normal),
        ]);
    }
}
