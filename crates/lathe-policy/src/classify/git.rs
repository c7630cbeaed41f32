//! git: which subcommands only read, which change the repository, which destroy or publish.

use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;
use crate::word::Word;

const READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "annotate",
    "shortlog",
    "describe",
    "rev-parse",
    "rev-list",
    "ls-files",
    "ls-tree",
    "cat-file",
    "grep",
    "show-ref",
    "for-each-ref",
    "merge-base",
    "name-rev",
    "whatchanged",
    "cherry",
    "count-objects",
    "diff-tree",
    "diff-files",
    "diff-index",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "var",
    "verify-commit",
    "verify-tag",
    "range-diff",
    "show-branch",
    "ls-remote",
    "fsck",
    "help",
    "version",
    "request-pull",
    "archive",
    "cherry-mark",
    "get-tar-commit-id",
    "column",
    "check-mailmap",
    "diff-pairs",
    "fsck-objects",
    "verify-pack",
    "show-index",
    "patch-id",
    "stripspace",
];

const CHANGES: &[&str] = &[
    "add",
    "commit",
    "mv",
    "merge",
    "cherry-pick",
    "revert",
    "init",
    "fetch",
    "pull",
    "clone",
    "am",
    "format-patch",
    "maintenance",
    "sparse-checkout",
    "commit-tree",
    "hash-object",
    "mergetool",
    "difftool",
    "mktag",
    "mktree",
    "read-tree",
    "write-tree",
    "update-index",
    "symbolic-ref",
    "replace",
    "rerere",
    "bundle",
    "citool",
    "gui",
    "annex",
    "lfs",
    "p4",
    "svn",
    "fast-import",
    "pack-refs",
    "repack",
    "unpack-objects",
    "index-pack",
    "multi-pack-index",
    "commit-graph",
    "merge-file",
    "merge-tree",
    "interpret-trailers",
    "restore-staged",
];

/// Whether setting this configuration key can make git run a program.
fn risky_config(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    const MARKERS: &[&str] = &[
        "pager",
        "editor",
        "sshcommand",
        "fsmonitor",
        "hookspath",
        "askpass",
        "proxy",
        "textconv",
        "external",
        "driver",
        "filter.",
        "helper",
        "program",
        "alias.",
        "uploadpack",
        "receivepack",
        "include",
        "templatedir",
        "command",
        "hook.",
        "sendemail.",
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
    let mut v = subcommand(sub, &rest);
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

fn subcommand(sub: &str, c: &Cmd<'_>) -> Verdict {
    let first = c.first_operand().map(|(_, v)| v);
    match sub {
        _ if READ_ONLY.contains(&sub) => read_only(sub, c),
        "branch" => {
            let valued = [
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
                "--sort",
                "--format",
                "--color",
                "--column",
                "-u",
                "--set-upstream-to",
                "-t",
                "--track",
            ];
            if c.has(&["-D"]) || (c.flag('d', &["--delete"]) && c.flag('f', &["--force"])) {
                Verdict::dangerous(
                    "git branch -D deletes a branch even if its commits are not merged",
                )
                .destroys()
            } else if c.flag('M', &[]) || c.flag('C', &[]) {
                Verdict::dangerous("git branch -M/-C overwrites an existing branch").destroys()
            } else if c.flag('d', &["--delete"])
                || c.flag('m', &["--move"])
                || c.flag('c', &["--copy"])
                || c.has(&[
                    "-u",
                    "--set-upstream-to",
                    "--unset-upstream",
                    "--edit-description",
                    "-f",
                    "--force",
                ])
                || !c.operands(&valued).is_empty()
                    && !c.has(&[
                        "-l",
                        "--list",
                        "--contains",
                        "--merged",
                        "--no-merged",
                        "--points-at",
                    ])
            {
                Verdict::normal("git branch changes branches")
            } else {
                Verdict::safe("git branch only lists branches")
            }
        }
        "tag" => {
            let valued = [
                "--contains",
                "--no-contains",
                "--merged",
                "--no-merged",
                "--points-at",
                "--sort",
                "--format",
                "-n",
                "--color",
                "--column",
            ];
            if c.has(&["-l", "--list", "-v", "--verify"])
                || c.operands(&valued).is_empty()
                    && !c.has(&["-d", "--delete", "-a", "-s", "-m", "-F"])
            {
                Verdict::safe("git tag only lists tags")
            } else {
                Verdict::normal("git tag creates or deletes tags")
            }
        }
        "remote" => match first {
            None | Some("show" | "get-url") => Verdict::safe("git remote only lists remotes"),
            _ => Verdict::normal("git remote changes the configured remotes"),
        },
        "config" => config(c),
        "stash" => match first {
            Some("list" | "show") => Verdict::safe("git stash list/show only reads"),
            Some("drop" | "clear") => {
                Verdict::dangerous("git stash drop/clear deletes stashed changes for good")
                    .destroys()
            }
            _ => Verdict::normal("git stash saves or restores uncommitted changes"),
        },
        "worktree" => match first {
            Some("list") => Verdict::safe("git worktree list only reads"),
            Some("remove" | "prune") if c.flag('f', &["--force"]) => Verdict::dangerous(
                "git worktree remove --force deletes a worktree with its changes",
            )
            .destroys(),
            _ => Verdict::normal("git worktree changes worktrees"),
        },
        "reflog" => match first {
            None | Some("show") => Verdict::safe("git reflog only reads"),
            _ => Verdict::dangerous(
                "git reflog expire/delete removes the record used to recover lost commits",
            )
            .destroys(),
        },
        "notes" => match first {
            None | Some("list" | "show") => Verdict::safe("git notes only reads"),
            _ => Verdict::normal("git notes changes notes"),
        },
        "submodule" => match first {
            None | Some("status" | "summary") => Verdict::safe("git submodule status only reads"),
            Some("foreach") => {
                let script: Vec<&str> = c
                    .values()
                    .skip_while(|v| *v != "foreach")
                    .skip(1)
                    .filter(|v| *v != "--recursive" && *v != "-q" && *v != "--quiet")
                    .collect();
                let mut v =
                    Verdict::normal("git submodule foreach runs a command in every submodule");
                v.inner.push(Inner::Script(script.join(" ")));
                v
            }
            _ => Verdict::normal("git submodule updates submodules"),
        },
        "bisect" => {
            let mut v = Verdict::normal("git bisect checks out commits");
            if first == Some("run") {
                let at = c.values().position(|x| x == "run").unwrap_or(0);
                v.inner.push(Inner::Argv {
                    argv: c.args[at + 1..].to_vec(),
                    per_item: None,
                });
            }
            v
        }
        "push" => {
            let mut v = Verdict::dangerous("git push publishes commits to a remote");
            let force = c.flag(
                'f',
                &[
                    "--force",
                    "--force-with-lease",
                    "--force-if-includes",
                    "--mirror",
                ],
            ) || c.values().any(|x| x.starts_with('+') && x.len() > 1);
            if force {
                v.raise(
                    Severity::Dangerous,
                    "force-pushing overwrites history on the remote",
                );
                v.destructive = true;
            }
            if c.flag('d', &["--delete", "--prune"])
                || c.values().any(|x| x.starts_with(':') && x.len() > 1)
            {
                v.raise(
                    Severity::Dangerous,
                    "deletes branches or tags on the remote",
                );
                v.destructive = true;
            }
            v
        }
        "reset" => {
            if c.has(&["--hard", "--merge", "--keep"]) {
                Verdict::dangerous("git reset --hard discards uncommitted changes").destroys()
            } else {
                Verdict::normal("git reset moves HEAD or unstages changes")
            }
        }
        "clean" => {
            if c.flag('n', &["--dry-run"]) {
                Verdict::safe("git clean -n only lists what would be deleted")
            } else if c.flag('f', &["--force"]) || c.flag('i', &["--interactive"]) {
                let mut v = Verdict::dangerous("git clean deletes untracked files").destroys();
                if c.flag('x', &[]) || c.flag('X', &[]) {
                    v.raise(Severity::Dangerous, "including ignored files (-x)");
                }
                v
            } else {
                Verdict::normal("git clean without -f refuses to delete")
            }
        }
        "checkout" => {
            let discards = c.has(&[
                "--", ".", "-f", "--force", "-p", "--patch", "--ours", "--theirs",
            ]) || c
                .values()
                .any(|x| x == ":/" || x.starts_with("--pathspec-from-file"));
            if discards && !c.has(&["-b", "-B", "--orphan"]) {
                Verdict::dangerous("git checkout of paths discards their uncommitted changes")
                    .destroys()
            } else {
                Verdict::normal("git checkout switches branches")
            }
        }
        "switch" => {
            match c.has(&["--discard-changes", "-f", "--force"]) || c.flag('C', &["--force-create"])
            {
                true => Verdict::dangerous("git switch --discard-changes/-C throws away work")
                    .destroys(),
                false => Verdict::normal("git switch changes branches"),
            }
        }
        "restore" => {
            let worktree = c.flag('W', &["--worktree"]) || !c.flag('S', &["--staged"]);
            match worktree {
                true => Verdict::dangerous(
                    "git restore discards uncommitted changes in the working tree",
                )
                .destroys(),
                false => Verdict::normal("git restore --staged unstages changes"),
            }
        }
        "rm" => {
            Verdict::normal("git rm removes tracked files (recoverable from history)").destroys()
        }
        "filter-branch" | "filter-repo" => {
            Verdict::dangerous("rewrites the whole history of the repository").destroys()
        }
        "update-ref" if c.flag('d', &[]) => {
            Verdict::dangerous("git update-ref -d deletes a ref").destroys()
        }
        "update-ref" => Verdict::normal("git update-ref moves a ref"),
        "gc" if c.values().any(|x| x.starts_with("--prune")) => {
            Verdict::dangerous("git gc --prune deletes unreachable commits for good").destroys()
        }
        "gc" => Verdict::normal("git gc compacts the repository"),
        "prune" => Verdict::dangerous("git prune deletes unreachable commits for good").destroys(),
        "rebase" => {
            let mut v = Verdict::normal("git rebase rewrites local commits");
            for script in c.option_values(&["-x"], &["--exec"]) {
                if let Some(s) = script.known() {
                    v.inner.push(Inner::Script(s.to_string()));
                } else {
                    v.raise(
                        Severity::Dangerous,
                        "git rebase --exec runs a command not known until run time",
                    );
                }
            }
            v
        }
        "apply"
            if c.has(&["--check", "--stat", "--numstat", "--summary"])
                && !c.has(&["--apply", "--index", "--cached"]) =>
        {
            Verdict::safe("git apply --check only tests a patch")
        }
        "apply" => Verdict::normal("git apply changes files"),
        "clone" => {
            let mut v = Verdict::normal("git clone downloads a repository");
            let valued = [
                "-b",
                "--branch",
                "-o",
                "--origin",
                "--depth",
                "--reference",
                "-c",
                "--config",
                "-u",
                "--upload-pack",
                "-j",
                "--jobs",
                "--template",
                "--separate-git-dir",
                "--filter",
                "--shallow-since",
                "--shallow-exclude",
            ];
            if c.has(&["-u", "--upload-pack", "--template"]) {
                v.raise(
                    Severity::Dangerous,
                    "git clone --upload-pack/--template runs other programs",
                );
            }
            if let Some(dir) = c.operands(&valued).get(1) {
                v.write(dir);
            }
            v
        }
        "send-email" => Verdict::dangerous("git send-email publishes patches by mail"),
        "daemon" | "instaweb" => Verdict::dangerous("serves the repository over the network"),
        "credential" | "credential-store" | "credential-cache" => {
            Verdict::critical("git credential prints or stores credentials")
        }
        _ if CHANGES.contains(&sub) => Verdict::normal(format!("git {sub} changes the repository")),
        _ => Verdict::normal(format!(
            "runs `git {sub}`, an alias or extension Lathe does not know"
        )),
    }
}

fn read_only(sub: &str, c: &Cmd<'_>) -> Verdict {
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

fn config(c: &Cmd<'_>) -> Verdict {
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
