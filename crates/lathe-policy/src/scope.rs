//! What an "always allow" answer remembers.

use crate::analysis::SimpleCommand;
use crate::paths::basename;

/// Programs whose first operand is a subcommand.
#[rustfmt::skip]
const SUBCOMMANDS: &[&str] = &[
    "git", "cargo", "npm", "pnpm", "yarn", "bun", "deno", "go", "docker", "podman", "nerdctl",
    "docker-compose", "kubectl", "helm", "gh", "glab", "pip", "pip3", "pipx", "uv", "poetry",
    "pdm", "pipenv", "hatch", "rye", "rustup", "dotnet", "systemctl", "apt", "apt-get", "brew",
    "dnf", "yum", "terraform", "tofu", "just", "make", "mix", "gradle", "gradlew", "./gradlew",
    "mvn", "./mvnw", "bundle", "gem", "composer", "flutter", "dart", "swift", "zig", "nx", "turbo",
    "rails", "rake", "npx", "conda", "mamba", "snap", "journalctl", "task", "pulumi", "wrangler",
    "vercel", "firebase", "aws", "gcloud", "az", "minikube", "kind", "stack", "cabal", "opam",
    "dune", "bazel", "nix", "flatpak", "service", "cmake", "meson", "ninja",
];

/// Subcommands whose own first operand belongs in the scope too (`npm run test`).
fn second_level(program: &str, sub: &str) -> bool {
    match program {
        "npm" | "pnpm" | "yarn" | "bun" => matches!(sub, "run" | "run-script"),
        "docker" | "podman" | "nerdctl" => {
            matches!(
                sub,
                "compose" | "container" | "image" | "network" | "volume" | "system" | "buildx"
            )
        }
        "gh" | "glab" | "aws" | "gcloud" | "az" => true,
        "git" => matches!(
            sub,
            "stash" | "remote" | "submodule" | "worktree" | "notes" | "lfs"
        ),
        "uv" => matches!(sub, "pip" | "tool" | "python"),
        "cargo" | "kubectl" | "helm" => false,
        _ => false,
    }
}

/// Options before the subcommand that take a separate value.
fn takes_value(program: &str, option: &str) -> bool {
    matches!(
        (program, option),
        (
            "git",
            "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace"
        ) | (
            "docker" | "podman",
            "-H" | "--host"
                | "--context"
                | "-c"
                | "--config"
                | "-f"
                | "--file"
                | "-p"
                | "--project-name"
        ) | (
            "kubectl" | "helm",
            "-n" | "--namespace" | "--context" | "--kubeconfig"
        ) | ("gh", "-R" | "--repo")
            | (
                "npm" | "pnpm" | "yarn",
                "--prefix" | "-C" | "--dir" | "--cwd" | "-w" | "--workspace" | "--filter"
            )
            | ("make", "-C" | "-f" | "-j")
            | ("cargo", "-C" | "--manifest-path" | "-Z")
            | ("go", "-C")
    )
}

fn dangerous_in_general(program: &str) -> bool {
    #[rustfmt::skip]
    const LIST: &[&str] = &[
        "rm", "rmdir", "unlink", "shred", "mv", "cp", "dd", "ln", "install", "chmod", "chown",
        "chgrp", "chattr", "setfacl", "truncate", "tee", "kill", "pkill", "killall", "sudo", "su",
        "doas", "pkexec", "curl", "wget", "ssh", "scp", "sftp", "rsync", "nc", "ncat", "netcat",
        "socat", "telnet", "ftp", "eval", "source", ".", "exec", "node", "perl", "ruby", "php",
        "lua", "osascript", "pwsh", "powershell", "find", "fd", "xargs", "parallel", "sed", "awk",
        "gawk", "mawk", "tar", "unzip", "zip", "crontab", "at", "mount", "umount", "reboot",
        "shutdown", "poweroff", "halt", "watch", "trap", "fdisk", "parted", "patch", "mknod",
        "sysctl", "iptables", "useradd", "userdel", "passwd",
    ];
    #[rustfmt::skip]
    const SHELLS: &[&str] = &[
        "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "tcsh", "csh",
    ];
    let trimmed = program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    LIST.contains(&program)
        || SHELLS.contains(&program)
        || program.starts_with("mkfs")
        || matches!(
            trimmed,
            "python" | "pypy" | "node" | "perl" | "ruby" | "php"
        )
}

/// Escapes text so that a shell pattern matches it literally.
fn literal(text: &str) -> String {
    text.replace('\\', "\\\\").replace('*', "\\*")
}

/// The shell pattern an "always allow" answer for this command should store (without the
/// `shell(...)` around it; see [`remember_rule`]).
///
/// The scope is the program and its subcommand, not the exact command and not the whole
/// program: `npm run test -- -w` remembers `npm run test *`, `git commit -m x` remembers
/// `git commit *`, `cargo +nightly test -p a` remembers `cargo +nightly test *`. Options
/// before the subcommand are kept (`git -C sub status *`) because the rule must match the
/// command's text.
///
/// A program without subcommands is remembered as `program *` only when no use of it is
/// dangerous in itself (`ls *`, `pytest *`, `./build.sh *`). Programs that delete, move,
/// change permissions, download, run other code or act as root (`rm`, `mv`, `chmod`, `curl`,
/// `bash`, `python`, `sed`, `find`, `sudo`, ...) are remembered as the exact command only.
pub fn remember_scope(cmd: &SimpleCommand) -> String {
    let base = basename(&cmd.program).to_ascii_lowercase();
    let is_python_module =
        base.starts_with("python") && cmd.args.first().map(String::as_str) == Some("-m");
    if SUBCOMMANDS.contains(&base.as_str())
        || SUBCOMMANDS.contains(&cmd.program.as_str())
        || is_python_module
    {
        let mut words = vec![cmd.program.clone()];
        let mut i = 0;
        while let Some(a) = cmd.args.get(i) {
            if is_python_module && a == "-m" {
                words.push(a.clone());
                i += 1;
                continue;
            }
            if !(a.starts_with('-') || a.starts_with('+')) || a == "-" {
                break;
            }
            words.push(a.clone());
            if takes_value(&base, a) {
                if let Some(v) = cmd.args.get(i + 1) {
                    words.push(v.clone());
                }
                i += 1;
            }
            i += 1;
        }
        if let Some(sub) = cmd.args.get(i) {
            words.push(sub.clone());
            if second_level(&base, sub)
                && let Some(next) = cmd.args.get(i + 1).filter(|n| !n.starts_with('-'))
            {
                words.push(next.clone());
            }
        }
        return format!("{} *", literal(&words.join(" ")));
    }
    if dangerous_in_general(&base) {
        return literal(&cmd.text);
    }
    format!("{} *", literal(&cmd.program))
}

/// [`remember_scope`] as a complete rule: `shell(npm run test *)`.
pub fn remember_rule(cmd: &SimpleCommand) -> String {
    format!("shell({})", remember_scope(cmd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::test_support::run;

    fn scope(command: &str) -> String {
        let a = run(command);
        a.commands.last().map(remember_scope).unwrap_or_default()
    }

    #[test]
    fn program_and_subcommand() {
        let cases = [
            ("npm run test -- --watch", "npm run test *"),
            ("npm test", "npm test *"),
            ("git commit -m 'fix the thing'", "git commit *"),
            ("git -C sub status", "git -C sub status *"),
            ("git --no-pager log -5", "git --no-pager log *"),
            ("cargo test -p lathe-policy", "cargo test *"),
            ("cargo +nightly fmt", "cargo +nightly fmt *"),
            ("docker compose up -d", "docker compose up *"),
            ("gh pr view 12", "gh pr view *"),
            ("python3 -m pytest -x", "python3 -m pytest *"),
            ("make -j4 test", "make -j4 test *"),
            ("ls -la src", "ls *"),
            ("pytest -x tests", "pytest *"),
            ("./build.sh --release", "./build.sh *"),
            ("rm -rf target", "rm -rf target"),
            ("rm *.o", "rm \\*.o"),
            ("curl -s https://example.com", "curl -s https://example.com"),
            ("bash x.sh", "bash x.sh"),
            ("sed -i s/a/b/ f", "sed -i s/a/b/ f"),
            ("timeout 5 cargo build", "cargo build *"),
        ];
        for (command, expected) in cases {
            assert_eq!(scope(command), expected, "{command}");
        }
    }

    #[test]
    fn the_scope_matches_the_command_it_came_from() {
        let ctx = crate::classify::test_support::ctx();
        for command in [
            "npm run test -- --watch",
            "rm *.o",
            "git -C sub status",
            "ls",
            "cargo test",
        ] {
            let a = run(command);
            let cmd = a
                .commands
                .last()
                .cloned()
                .unwrap_or_else(|| panic!("{command}"));
            let rule = crate::rules::Rule::parse(&remember_rule(&cmd), &ctx)
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(rule.matches_command(&cmd.text), "{command}");
        }
    }
}
