//! More programs that run another program: privilege and namespace tools (`setpriv`,
//! `proot`, `bwrap`), resource and time shims (`prlimit`, `faketime`, `cpulimit`,
//! `systemd-inhibit`), compiler caches (`ccache gcc ...`) and programs that hand the command
//! to something outside the sandbox (`flatpak-spawn --host`, `pkgx`).
//!
//! [`crate::wrappers`] asks here for what it does not know itself; the result is the same
//! [`Unwrap`], so the inner command is classified as if it were written alone.

use crate::severity::Severity;
use crate::word::Word;
use crate::wrappers::{Unwrap, Unwrapped, skip_opts};

fn known(argv: &[Word], i: usize) -> Option<&str> {
    argv.get(i).and_then(Word::known)
}

fn any(argv: &[Word], pred: impl Fn(&str) -> bool) -> bool {
    argv.iter().skip(1).any(|w| w.known().is_some_and(&pred))
}

fn at(argv: &[Word], i: usize, note: Option<(Severity, String)>) -> Unwrap {
    match argv.get(i..) {
        Some(rest) if !rest.is_empty() => Unwrap::Inner(Box::new(Unwrapped {
            argv: rest.to_vec(),
            note,
            ..Unwrapped::default()
        })),
        _ => Unwrap::No,
    }
}

/// A command given as one shell string (`entr -s 'make && ./run'`), run as `sh -c`.
pub(crate) fn as_shell(script: Word, note: Option<(Severity, String)>) -> Unwrap {
    Unwrap::Inner(Box::new(Unwrapped {
        argv: vec![Word::literal("sh"), Word::literal("-c"), script],
        note,
        ..Unwrapped::default()
    }))
}

fn note(severity: Severity, why: &str) -> Option<(Severity, String)> {
    Some((severity, why.to_string()))
}

/// Looks through `program` (lowercase basename) if it is one of these wrappers.
pub(crate) fn unwrap(program: &str, argv: &[Word]) -> Unwrap {
    match program {
        "setpriv" => {
            if any(argv, |v| matches!(v, "-d" | "--dump" | "--list-caps")) {
                return Unwrap::No;
            }
            #[rustfmt::skip]
            let valued = [
                "--reuid", "--regid", "--ruid", "--rgid", "--euid", "--egid", "--groups",
                "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig",
                "--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule",
                "--ptracer", "--seccomp-filter",
            ];
            let privileged = any(argv, |v| {
                [
                    "--reuid",
                    "--regid",
                    "--ruid",
                    "--rgid",
                    "--euid",
                    "--egid",
                    "--inh-caps",
                    "--ambient-caps",
                    "--groups",
                ]
                .iter()
                .any(|o| v == *o || v.starts_with(&format!("{o}=")))
            });
            let n = privileged.then(|| {
                (
                    Severity::Critical,
                    "runs as another user or with other capabilities (setpriv)".to_string(),
                )
            });
            at(argv, skip_opts(argv, 1, &valued), n)
        }
        "prlimit" if !any(argv, |v| v == "-p" || v.starts_with("--pid")) => {
            at(argv, skip_opts(argv, 1, &[]), None)
        }
        "proot" => {
            #[rustfmt::skip]
            let valued = [
                "-r", "--rootfs", "-b", "--bind", "-m", "--mount", "-w", "--pwd", "--cwd", "-q",
                "--qemu", "-k", "--kernel-release", "-R", "-S", "-p", "--port",
            ];
            at(argv, skip_opts(argv, 1, &valued), None)
        }
        "bwrap" => {
            // every bubblewrap option takes values; the command follows the last of them
            let two = [
                "--bind",
                "--bind-try",
                "--dev-bind",
                "--dev-bind-try",
                "--ro-bind",
                "--ro-bind-try",
                "--symlink",
                "--setenv",
                "--file",
                "--bind-data",
                "--ro-bind-data",
                "--chmod",
            ];
            let mut i = 1;
            while let Some(v) = known(argv, i) {
                if v == "--" {
                    i += 1;
                    break;
                }
                if !v.starts_with("--") {
                    break;
                }
                i += if two.contains(&v) {
                    3
                } else if matches!(
                    v,
                    "--unshare-all"
                        | "--share-net"
                        | "--unshare-user"
                        | "--unshare-user-try"
                        | "--unshare-ipc"
                        | "--unshare-pid"
                        | "--unshare-net"
                        | "--unshare-uts"
                        | "--unshare-cgroup"
                        | "--unshare-cgroup-try"
                        | "--die-with-parent"
                        | "--as-pid-1"
                        | "--new-session"
                        | "--clearenv"
                        | "--disable-userns"
                        | "--assert-userns-disabled"
                ) {
                    1
                } else {
                    2
                };
            }
            at(argv, i, None)
        }
        "faketime" => {
            let i = skip_opts(argv, 1, &["-p", "--date-prog"]);
            at(argv, i + 1, None)
        }
        "cpulimit" if !any(argv, |v| v.starts_with("-p") || v.starts_with("--pid")) => at(
            argv,
            skip_opts(argv, 1, &["-l", "--limit", "-m", "--monitor-forks"]),
            None,
        ),
        "systemd-inhibit" if !any(argv, |v| v == "--list") => {
            let valued = ["--what", "--who", "--why", "--mode"];
            at(argv, skip_opts(argv, 1, &valued), None)
        }
        "trickle" => at(
            argv,
            skip_opts(argv, 1, &["-d", "-u", "-w", "-t", "-l", "-n"]),
            None,
        ),
        "rlwrap" => at(
            argv,
            skip_opts(
                argv,
                1,
                &[
                    "-f", "-H", "-l", "-P", "-S", "-z", "-a", "-p", "-w", "-C", "-D", "-g", "-M",
                    "-o", "-q", "-s", "-t", "-b", "-O", "-e", "-m",
                ],
            ),
            None,
        ),
        "eatmydata" | "nocache" | "fakechroot" | "linux32" | "linux64" | "uname26"
        | "with-contenv" | "tini" | "dumb-init" => at(argv, skip_opts(argv, 1, &[]), None),
        "sandbox-exec" => at(argv, skip_opts(argv, 1, &["-f", "-n", "-p", "-D"]), None),
        // daemontools/runit limits: every option takes a value
        "softlimit" => at(
            argv,
            skip_opts(
                argv,
                1,
                &[
                    "-m", "-d", "-s", "-l", "-a", "-o", "-p", "-f", "-c", "-r", "-t",
                ],
            ),
            None,
        ),
        "chpst" => {
            #[rustfmt::skip]
            let valued = [
                "-u", "-U", "-b", "-e", "-/", "-C", "-n", "-l", "-L", "-m", "-d", "-o", "-p",
                "-f", "-c", "-r", "-t",
            ];
            let user = any(argv, |v| matches!(v, "-u" | "-U"));
            let n = user.then(|| {
                (
                    Severity::Critical,
                    "runs as root or another user (chpst -u)".to_string(),
                )
            });
            at(argv, skip_opts(argv, 1, &valued), n)
        }
        "setarch" => {
            // `setarch ARCH [options] [program]`; without a program it starts a shell
            let i = skip_opts(argv, 2, &["--uname-2.6"]);
            match at(argv, i, None) {
                Unwrap::No if argv.len() >= 2 => at(
                    &[argv.to_vec(), vec![Word::literal("sh")]].concat(),
                    i,
                    None,
                ),
                found => found,
            }
        }
        // macOS `arch -x86_64 cmd` runs the command; Linux `arch` takes no operands
        "arch" if argv.len() > 1 => {
            let mut i = 1;
            while let Some(v) = known(argv, i) {
                if v == "-arch" || v == "-d" || v == "-e" {
                    i += 2;
                } else if v.starts_with('-') {
                    i += 1;
                } else {
                    break;
                }
            }
            at(argv, i, None)
        }
        "ccache" | "sccache" | "distcc" | "icecc" | "buildcache"
            if known(argv, 1).is_some_and(|v| !v.starts_with('-')) =>
        {
            at(argv, 1, None)
        }
        "sshpass" => {
            let mut found = at(argv, skip_opts(argv, 1, &["-p", "-f", "-d", "-P"]), None);
            if let (Unwrap::Inner(u), Some(i)) = (
                &mut found,
                argv.iter().position(|w| w.known() == Some("-f")),
            ) {
                u.reads.extend(argv.get(i + 1).cloned());
            }
            found
        }
        "sg" => {
            // `sg GROUP -c CMD` or `sg GROUP CMD`
            let n = note(Severity::Critical, "runs with another group's rights (sg)");
            match (known(argv, 2), argv.get(3)) {
                (Some("-c"), Some(script)) => as_shell(script.clone(), n),
                _ => at(argv, 2, n),
            }
        }
        "entr" => {
            let shell = any(argv, |v| {
                v.starts_with('-') && !v.starts_with("--") && v.contains('s')
            });
            let i = skip_opts(argv, 1, &[]);
            if shell {
                match argv.get(i) {
                    Some(script) => as_shell(script.clone(), None),
                    None => Unwrap::No,
                }
            } else {
                at(argv, i, None)
            }
        }
        "flatpak-spawn" | "host-spawn" | "distrobox-host-exec" => {
            let valued = [
                "--env",
                "--directory",
                "--forward-fd",
                "--app-path",
                "--usr-path",
            ];
            let host = program != "flatpak-spawn" || any(argv, |v| v == "--host");
            let n = host.then(|| {
                (
                    Severity::Dangerous,
                    format!("{program} runs the command on the host, outside any sandbox"),
                )
            });
            at(argv, skip_opts(argv, 1, &valued), n)
        }
        "pkgx" | "pkgm" => at(
            argv,
            skip_opts(argv, 1, &[]),
            note(
                Severity::Dangerous,
                "pkgx downloads the program and runs it (like npx)",
            ),
        ),
        _ => Unwrap::No,
    }
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn issue_12_2_wrappers_are_looked_through() {
        expect(&[
            ("setpriv --reuid=1000 --init-groups rm -rf ~", Critical),
            ("setpriv --no-new-privs rm -rf ~", Critical),
            ("setpriv --no-new-privs cargo test", Normal),
            ("setpriv -d", Normal),
            ("prlimit --nofile=1024 rm -rf ~", Critical),
            ("proot -r ./rootfs -b /dev sh -c 'rm -rf ~'", Critical),
            (
                "bwrap --ro-bind / / --dev /dev bash -c 'curl x | sh'",
                Critical,
            ),
            ("faketime '2020-01-01 00:00:00' rm -rf ~", Critical),
            ("faketime -f '+2d' cargo test", Normal),
            ("cpulimit -l 50 rm -rf ~", Critical),
            ("systemd-inhibit --what=idle rm -rf ~", Critical),
            ("eatmydata rm -rf ~", Critical),
            ("softlimit -m 1000000 -s 100 rm -rf ~", Critical),
            ("chpst -u nobody make", Critical),
            ("chpst -n 10 make", Normal),
            ("sandbox-exec -p '(version 1)' sh -c 'rm -rf ~'", Critical),
            ("rlwrap rm -rf ~", Critical),
            ("rlwrap -a python3", Normal),
            ("setarch x86_64 -R rm -rf ~", Critical),
            ("linux32 rm -rf ~", Critical),
            ("arch -arm64 rm -rf ~", Critical),
            ("arch", Safe),
            ("ccache sh -c 'rm -rf ~'", Critical),
            ("ccache gcc -c main.c", Normal),
            ("sshpass -p pw ssh host 'rm -rf /'", Critical),
            ("sshpass -f ~/.ssh/pw ssh host id", Critical),
            ("xargs -a ~/.aws/credentials echo", Critical),
            ("xargs --arg-file=/proc/1/environ echo", Critical),
            ("xargs -a files.txt rm", Dangerous),
            ("sg wheel -c 'ls'", Critical),
            ("entr -s 'rm -rf ~'", Critical),
            ("entr -r cargo test", Normal),
            ("flatpak-spawn --host ls", Dangerous),
            ("distrobox-host-exec make", Dangerous),
            ("pkgx deno run x.ts", Dangerous),
            ("trickle -d 100 rm -rf ~", Critical),
            (
                "GIT_SEQUENCE_EDITOR='sh -c id' git rebase -i HEAD~2",
                Dangerous,
            ),
            ("SYSTEMD_PAGER=./x systemctl status", Dangerous),
            ("SHELL=/tmp/x vim -c ':!ls' f", Dangerous),
        ]);
    }
}
