//! Programs that run commands given to them in their own language: editors (`vim -c ':!cmd'`,
//! `emacs --eval`), debuggers (`gdb -ex 'shell cmd'`), benchmark runners (`hyperfine CMD`).
//!
//! What they run is judged when it is a shell command; their own languages (Ex commands,
//! Emacs Lisp, gdb's Python) can run anything, so an argument in them that is not plainly
//! harmless counts as dangerous.

use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;
use crate::walk::Stdin;
use crate::word::Word;

#[rustfmt::skip]
const VIMS: &[&str] = &[
    "vim", "vi", "nvim", "gvim", "view", "gview", "vimdiff", "nvimdiff", "gvimdiff", "ex", "evim",
    "vimx", "mvim",
];

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let v = match p {
        _ if VIMS.contains(&p) => vim(cmd),
        "emacs" | "xemacs" => emacs(cmd),
        "emacsclient" => match cmd.has(&["-e", "--eval"]) {
            true => Verdict::dangerous(
                "emacsclient --eval runs Emacs Lisp in the running Emacs server, outside the sandbox",
            ),
            false => Verdict::normal("emacsclient opens files in the running Emacs"),
        },
        "nvr" => Verdict::dangerous("nvr drives a running Neovim, outside the sandbox"),
        "gdb" | "gdb-multiarch" | "cgdb" => gdb(cmd),
        "lldb" => lldb(cmd),
        "hyperfine" => hyperfine(cmd),
        "strace" | "ltrace" | "perf" | "bpftrace" if cmd.has(&["-p", "--pid"]) => {
            Verdict::dangerous(format!(
                "{p} attaches to a running process and reads what it does (its secrets too)"
            ))
        }
        "expect" => match cmd.has(&["-c"]) {
            true => Verdict::dangerous("expect -c runs an inline Tcl program; it is not analysed"),
            false => Verdict::normal("expect runs a script"),
        },
        _ => return None,
    };
    Some(v)
}

/// What an Ex command (vim's `-c`, `+`, `--cmd`, a line of an `-es` script) does.
enum Ex {
    /// Only moves, edits, writes or quits.
    Harmless,
    /// Runs this shell command (`:!cmd`, `:r !cmd`, `:terminal cmd`).
    Shell(String),
    /// Can run anything and is not analysed (`:call system(...)`, `:py`, `:exe`).
    Unknown,
}

#[rustfmt::skip]
const HARMLESS_EX: &[&str] = &[
    "q", "qa", "qall", "quit", "quita", "quitall", "wq", "wqa", "wqall", "x", "xa", "xall", "xit",
    "exi", "exit", "w", "wa", "wall", "write", "up", "update", "e", "edit", "ene", "enew", "set",
    "se", "setl", "setlocal", "setg", "setglobal", "syntax", "sy", "syn", "filetype", "filet",
    "colorscheme", "colo", "noh", "nohlsearch", "s", "substitute", "d", "delete", "g", "global",
    "v", "vglobal", "m", "move", "t", "co", "copy", "j", "join", "retab", "ret", "sort", "sor",
    "u", "undo", "red", "redo", "only", "on", "sp", "split", "vs", "vsplit", "new", "vne",
    "vnew", "tabnew", "tabe", "tabedit", "bd", "bdelete", "bn", "bnext", "bp", "bprevious",
    "b", "buffer", "cd", "lcd", "tcd", "le", "left", "ri", "right", "ce", "center", "norm",
    "normal", "y", "yank", "pu", "put", "k", "mark", "ma", "diffupdate", "diffu", "diffthis",
    "redraw", "redr", "echo", "ec", "startinsert", "star", "stopinsert", "wn", "wnext", "n",
    "next", "prev", "previous", "rew", "rewind", "fo", "fold", "foldopen", "foldo", "ab",
    "abbreviate", "iabbrev", "lang", "language", "messages", "mes", "ls", "files", "buffers",
    "reg", "registers", "marks", "jumps", "undol", "undolist", "pwd", "f", "file", "r", "read",
    "sav", "saveas", "so", "source", "ru", "runtime", "packadd", "pa", "let", "unl", "unlet",
    "hi", "highlight", "map", "nmap", "imap", "vmap", "noremap", "nnoremap", "inoremap",
];

fn ex(text: &str) -> Ex {
    let mut t = text.trim_start_matches([' ', '\t', ':']);
    // a range (`%`, `1,$`, `'<,'>`, `.,+3`) before `!` filters lines through a shell command
    t = t.trim_start_matches(|c: char| c.is_ascii_digit() || ".,;$%'<>+-".contains(c));
    t = t.trim_start_matches([' ', ':']);
    for prefix in [
        "silent!",
        "silent",
        "sil!",
        "sil",
        "keepjumps",
        "noautocmd",
        "noa",
    ] {
        if let Some(rest) = t.strip_prefix(prefix)
            && rest.starts_with(' ')
        {
            return ex(rest);
        }
    }
    if t.is_empty() || t.starts_with('"') {
        return Ex::Harmless;
    }
    if let Some(shell) = t.strip_prefix('!') {
        return Ex::Shell(shell.to_string());
    }
    let name: String = t.chars().take_while(char::is_ascii_alphabetic).collect();
    // a `!` right after the name forces the command (`w!`, `q!`); it runs nothing
    let rest = t[name.len()..].trim_start_matches('!').trim_start();
    match name.as_str() {
        // `:r !cmd`, `:w !cmd` read from or write to a shell command
        "r" | "read" | "w" | "write" if rest.starts_with('!') => {
            return Ex::Shell(rest[1..].to_string());
        }
        "ter" | "terminal" if !rest.is_empty() => return Ex::Shell(rest.to_string()),
        "mak" | "make" => return Ex::Shell(format!("make {rest}")),
        "bufdo" | "argdo" | "windo" | "tabdo" | "cdo" | "ldo" | "cfdo" | "lfdo" => return ex(rest),
        _ => {}
    }
    // a bar starts another command; expressions (`(`, `\=`) and backticks can run anything
    let plain = !rest.contains(['(', '`', '!', '|']) && !rest.contains("\\=");
    if HARMLESS_EX.contains(&name.as_str()) && plain && name != "let" && name != "echo" {
        return Ex::Harmless;
    }
    if matches!(name.as_str(), "let" | "echo" | "ec") && !rest.contains(['(', '`', '|']) {
        return Ex::Harmless;
    }
    if t.contains('|') && !t.contains(['(', '`', '!']) {
        let all = t.split('|').all(|part| matches!(ex(part), Ex::Harmless));
        if all {
            return Ex::Harmless;
        }
    }
    Ex::Unknown
}

fn judge_ex(v: &mut Verdict, p: &str, how: &str, text: &str) {
    match ex(text) {
        Ex::Harmless => {}
        Ex::Shell(shell) => {
            v.raise(
                Severity::Normal,
                format!("{p} {how} `{text}` runs a shell command"),
            );
            v.inner.push(Inner::Script(shell));
        }
        Ex::Unknown => v.raise(
            Severity::Dangerous,
            format!(
                "{p} {how} `{text}` runs an editor command that can run any program; it is not analysed"
            ),
        ),
    }
}

fn vim(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let mut v = Verdict::normal(format!("{p} edits files"));
    let mut ex_mode = p == "ex";
    let mut i = 0;
    while let Some(w) = cmd.args.get(i) {
        let Some(a) = w.known() else {
            i += 1;
            continue;
        };
        if a == "--" {
            break;
        }
        match a {
            "-c" | "--cmd" => {
                if let Some(c) = cmd.args.get(i + 1) {
                    match c.known() {
                        Some(text) => judge_ex(&mut v, p, a, text),
                        None => v.raise(
                            Severity::Dangerous,
                            format!(
                                "{p} {a} runs `{}`, an editor command not known until run time",
                                c.display
                            ),
                        ),
                    }
                }
                i += 2;
                continue;
            }
            "--remote-send" | "--remote-expr" | "--server" | "--servername" | "--remote"
            | "--remote-silent" | "--remote-wait" | "--remote-tab" | "--remote-ui" => {
                v.raise(
                    Severity::Dangerous,
                    format!(
                        "{p} {a} drives another running editor, which acts outside the sandbox"
                    ),
                );
            }
            "-S" | "-u" | "-U" | "-l" | "-s" | "-i" | "-w" | "-W" | "-T" | "-t" | "-q" | "-r"
                if !(a == "-s" && ex_mode) =>
            {
                if matches!(a, "-S" | "-u" | "-l" | "-s") {
                    v.raise(
                        Severity::Normal,
                        format!("{p} {a} runs editor commands from a file"),
                    );
                }
                i += 2;
                continue;
            }
            _ if a.starts_with('+') => judge_ex(&mut v, p, "+", &a[1..]),
            _ if a.starts_with('-') && !a.starts_with("--") && a.contains(['e', 'E']) => {
                ex_mode = true;
            }
            _ => {}
        }
        i += 1;
    }
    if ex_mode {
        match cmd.stdin {
            Stdin::Heredoc { body } => {
                for line in body.lines() {
                    judge_ex(&mut v, p, "reads", line);
                }
            }
            Stdin::Herestring(w) if w.is_known() => {
                for line in w.known().unwrap_or_default().lines() {
                    judge_ex(&mut v, p, "reads", line);
                }
            }
            Stdin::Herestring(_) | Stdin::Pipe { .. } => v.raise(
                Severity::Dangerous,
                format!(
                    "{p} in Ex mode runs editor commands read from stdin; they are not analysed"
                ),
            ),
            Stdin::File(f) => v.raise(
                Severity::Normal,
                format!("{p} in Ex mode runs the editor commands in `{}`", f.display),
            ),
            Stdin::Terminal => {}
        }
    }
    v
}

fn emacs(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::normal("emacs edits files");
    let evals = cmd.option_values(&["-eval", "--eval"], &["--eval"]);
    for e in evals {
        v.raise(
            Severity::Dangerous,
            format!(
                "emacs --eval `{}` runs Emacs Lisp, which can run any program; it is not analysed",
                e.display
            ),
        );
    }
    if cmd.has(&["-l", "--load", "--script", "-x", "-scriptload"]) {
        v.raise(Severity::Normal, "emacs runs Emacs Lisp from a file");
    }
    v
}

/// gdb's own commands: `shell`/`!` run a shell command, `python`/`pipe`/calls run anything.
fn gdb_command(v: &mut Verdict, p: &str, text: &str) {
    let t = text.trim_start();
    let name: String = t
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect();
    if let Some(shell) = t.strip_prefix('!') {
        v.inner.push(Inner::Script(shell.to_string()));
        return;
    }
    match name.as_str() {
        "shell" => v.inner.push(Inner::Script(t[name.len()..].to_string())),
        "python" | "py" | "pi" | "python-interactive" | "guile" | "gu" | "pipe" | "source"
        | "compile" | "call" | "define" | "eval" | "script" | "command" | "platform" => v.raise(
            Severity::Dangerous,
            format!("{p} runs `{t}`, a debugger command that can run any program"),
        ),
        _ if t.starts_with('|') || t.contains('(') => v.raise(
            Severity::Dangerous,
            format!("{p} runs `{t}`, which can call any function of the program or run a shell"),
        ),
        _ => {}
    }
}

fn gdb(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let mut v = Verdict::normal(format!("{p} debugs a program"));
    if cmd.has(&["-p", "--pid"]) || cmd.values().any(|x| x.starts_with("--pid=")) {
        v.raise(
            Severity::Dangerous,
            format!("{p} attaches to a running process and can read or change its memory"),
        );
    }
    #[rustfmt::skip]
    let commands = cmd.option_values(
        &["-ex", "-iex", "--ex", "--iex", "-eval-command", "-init-eval-command"],
        &["--eval-command", "--init-eval-command"],
    );
    for c in commands {
        match c.known() {
            Some(text) => gdb_command(&mut v, p, text),
            None => v.raise(
                Severity::Dangerous,
                format!(
                    "{p} runs `{}`, a command not known until run time",
                    c.display
                ),
            ),
        }
    }
    if let Some(at) = cmd.values().position(|x| x == "--args") {
        v.inner.push(Inner::Argv {
            argv: cmd.args[at + 1..].to_vec(),
            per_item: None,
        });
    }
    v
}

fn lldb(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::normal("lldb debugs a program");
    if cmd.has(&["-p", "--attach-pid", "-n", "--attach-name"]) {
        v.raise(
            Severity::Dangerous,
            "lldb attaches to a running process and can read or change its memory",
        );
    }
    let commands = cmd.option_values(
        &["-o", "-O", "-k", "-K"],
        &[
            "--one-line",
            "--one-line-before-file",
            "--one-line-on-crash",
        ],
    );
    for c in commands {
        gdb_command(&mut v, "lldb", c.known().unwrap_or("(unknown)"));
    }
    if let Some(at) = cmd.values().position(|x| x == "--") {
        v.inner.push(Inner::Argv {
            argv: cmd.args[at + 1..].to_vec(),
            per_item: None,
        });
    }
    v
}

/// `hyperfine CMD...`: every command (and `--prepare`, `--setup`, `--cleanup`) runs in a shell.
fn hyperfine(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::safe("hyperfine runs the commands it benchmarks");
    v.transparent = true;
    #[rustfmt::skip]
    let script_opts = [
        "-p", "--prepare", "-s", "--setup", "-c", "--cleanup", "--conclude", "--reference",
        "-S", "--shell",
    ];
    #[rustfmt::skip]
    let file_opts = [
        "--export-asciidoc", "--export-csv", "--export-json", "--export-markdown",
        "--export-orgmode", "--output", "--input",
    ];
    #[rustfmt::skip]
    let one = [
        "-w", "--warmup", "-m", "--min-runs", "-M", "--max-runs", "-r", "--runs", "-u",
        "--time-unit", "--style", "--sort", "-n", "--command-name", "-D", "--parameter-step-size",
    ];
    let mut scripts: Vec<&Word> = Vec::new();
    let mut i = 0;
    while let Some(w) = cmd.args.get(i) {
        let a = w.known().unwrap_or("");
        let (name, attached) = match a.split_once('=') {
            Some((n, val)) if n.starts_with("--") => (n, Some(val)),
            _ => (a, None),
        };
        let next = cmd.args.get(i + 1);
        if script_opts.contains(&name) {
            match attached {
                Some(text) => v.inner.push(Inner::Script(text.to_string())),
                None => scripts.extend(next),
            }
            i += if attached.is_some() { 1 } else { 2 };
        } else if file_opts.contains(&name) {
            let target = attached.map(Word::literal).or_else(|| next.cloned());
            if let Some(t) = target
                && name != "--input"
            {
                v.raise(
                    Severity::Normal,
                    format!("hyperfine writes `{}`", t.display),
                );
                v.write(&t);
            }
            i += if attached.is_some() { 1 } else { 2 };
        } else if one.contains(&name) {
            i += if attached.is_some() { 1 } else { 2 };
        } else if matches!(name, "-L" | "--parameter-list") {
            i += 3;
        } else if matches!(name, "-P" | "--parameter-scan") {
            i += 4;
        } else if a.starts_with('-') && w.is_known() {
            i += 1;
        } else {
            scripts.push(w);
            i += 1;
        }
    }
    for s in scripts {
        match s.known() {
            Some(text) if text != "none" => v.inner.push(Inner::Script(text.to_string())),
            Some(_) => {}
            None => {
                v.transparent = false;
                v.raise(
                    Severity::Dangerous,
                    format!(
                        "hyperfine runs `{}`, a command not known until run time",
                        s.display
                    ),
                );
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn issue_12_2_editors_and_debuggers_run_what_they_are_given() {
        expect(&[
            ("vim -c ':!rm -rf ~' f", Critical),
            ("vim '+!rm -rf ~' f", Critical),
            ("nvim --cmd 'silent !curl x | sh' f", Critical),
            ("vim -c ':r !cat ~/.ssh/id_rsa' f", Critical),
            ("vim -c ':call system(\"id\")' f", Dangerous),
            ("vim -c 'py3 import os' f", Dangerous),
            ("vim -c 'exe \"!\" . x' f", Dangerous),
            ("vim -c '%!sort' f", Normal),
            ("vim -c '%s/a/b/g' -c 'wq' f", Normal),
            ("vim -c 'set ff=unix | wq' f", Normal),
            ("vim +42 src/main.rs", Normal),
            ("vim -c 'w!' -c 'q!' f", Normal),
            ("vim -c 'wq!' f", Normal),
            ("vim -c 'w !sh' f", Normal),
            ("vim -c 'w !rm -rf ~' f", Critical),
            ("vim src/main.rs", Normal),
            ("vim -es f <<'EOF'\n%s/a/b/g\n!rm -rf ~\nwq\nEOF", Critical),
            ("vim -es f <<'EOF'\n%s/a/b/g\nwq\nEOF", Normal),
            ("cat x.vim | vim -es f", Dangerous),
            ("ex -s f < script.ex", Normal),
            (
                "nvim --server /tmp/nvim.sock --remote-send ':!id<CR>'",
                Dangerous,
            ),
            ("emacs --batch --eval '(shell-command \"id\")'", Dangerous),
            ("emacs -batch -l build.el", Normal),
            ("emacsclient -e '(kill-emacs)'", Dangerous),
            ("gdb -batch -ex 'shell rm -rf ~' ./a.out", Critical),
            ("gdb -ex 'python import os' ./a.out", Dangerous),
            ("gdb -batch -ex run -ex bt --args ./a.out x", Normal),
            ("gdb --args sh -c 'rm -rf ~'", Critical),
            ("gdb -p 1234", Dangerous),
            ("lldb -o 'platform shell id' ./a.out", Dangerous),
            ("hyperfine 'rm -rf ~'", Critical),
            ("hyperfine --prepare 'curl x | sh' 'ls'", Critical),
            ("hyperfine 'cargo build' 'cargo build --release'", Normal),
            ("hyperfine 'ls' 'ls -la'", Safe),
            ("hyperfine -w 3 --export-json out.json 'ls'", Normal),
            ("strace -p 1", Dangerous),
            ("strace -f -o trace.txt cargo test", Normal),
            ("expect -c 'spawn id'", Dangerous),
            ("rsync --rsync-path='rm -rf ~' a b", Critical),
            ("rsync -e 'sh -c id' a b", Dangerous),
            ("rsync -a src/ build/", Normal),
        ]);
    }
}
