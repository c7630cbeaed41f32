//! git subcommands: which only read, which change the repository, which destroy or publish.

use super::git::{CHANGES, READ_ONLY, config, read_only};
use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;

pub(super) fn subcommand(sub: &str, c: &Cmd<'_>) -> Verdict {
    let first = c.first_operand().map(|(_, v)| v);
    match sub {
        _ if READ_ONLY.contains(&sub) => read_only(sub, c),
        "branch" => {
            #[rustfmt::skip]
            let valued = [
                "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
                "--format", "--color", "--column", "-u", "--set-upstream-to", "-t", "--track",
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
            #[rustfmt::skip]
            let valued = [
                "--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort",
                "--format", "-n", "--color", "--column",
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
            let mut v =
                Verdict::dangerous("rewrites the whole history of the repository").destroys();
            #[rustfmt::skip]
            let filters = c.option_values(&[], &[
                "--tree-filter", "--index-filter", "--msg-filter", "--env-filter",
                "--commit-filter", "--parent-filter", "--tag-name-filter", "--setup",
            ]);
            for f in filters {
                if let Some(text) = f.known() {
                    v.inner.push(Inner::Script(text.to_string()));
                }
            }
            v
        }
        "difftool" | "mergetool" => {
            let mut v =
                Verdict::normal(format!("git {sub} runs the configured diff or merge tool"));
            let hidden = c.args.iter().any(|w| {
                !w.is_known() && (w.display.starts_with("--extcmd=") || w.display.starts_with("-x"))
            });
            if hidden {
                v.raise(
                    Severity::Dangerous,
                    format!("git {sub} -x runs a command not known until run time"),
                );
            }
            for program in c.option_values(&["-x"], &["--extcmd"]) {
                match program.known() {
                    Some(text) => {
                        v.raise(
                            Severity::Normal,
                            format!("git {sub} -x runs `{text}` on every changed file"),
                        );
                        v.inner.push(Inner::Argv {
                            argv: vec![
                                crate::word::Word::literal("sh"),
                                crate::word::Word::literal("-c"),
                                crate::word::Word::literal(text),
                            ],
                            per_item: Some(format!("git {sub} -x")),
                        });
                    }
                    None => v.raise(
                        Severity::Dangerous,
                        format!(
                            "git {sub} -x runs `{}`, a command not known until run time",
                            program.display
                        ),
                    ),
                }
            }
            v
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
            #[rustfmt::skip]
            let valued = [
                "-b", "--branch", "-o", "--origin", "--depth", "--reference", "-c", "--config",
                "-u", "--upload-pack", "-j", "--jobs", "--template", "--separate-git-dir",
                "--filter", "--shallow-since", "--shallow-exclude",
            ];
            for kv in c.option_values(&["-c"], &["--config"]) {
                let text = kv.known().unwrap_or(kv.display.as_str());
                if super::git::risky_config(text.split('=').next().unwrap_or("")) {
                    v.raise(
                        Severity::Dangerous,
                        format!("git clone -c {text} can make git run another program"),
                    );
                }
            }
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
