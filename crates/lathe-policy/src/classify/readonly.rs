//! Programs that only read, with the arguments that would make them write checked.

use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;
use crate::word::Word;

/// Read-only whatever their arguments (redirections are judged separately).
#[rustfmt::skip]
const ALWAYS_SAFE: &[&str] = &[
    "ls", "dir", "vdir", "pwd", "whoami", "id", "groups", "users", "who", "w", "last", "lastlog",
    "uname", "arch", "nproc", "uptime", "hostid", "logname", "tty", "locale", "cal", "ncal",
    "echo", "printf", "true", "false", ":", "test", "[", "[[", "cat", "tac", "nl", "head", "tail",
    "wc", "cut", "tr", "paste", "join", "comm", "fold", "fmt", "column", "expand", "unexpand",
    "rev", "od", "hexdump", "hd", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum",
    "sha384sum", "sha512sum", "b2sum", "cksum", "sum", "shasum", "md5", "grep", "egrep", "fgrep",
    "zgrep", "zegrep", "zfgrep", "rgrep", "zcat", "bzcat", "xzcat", "zstdcat", "lz4cat", "zdiff",
    "diff", "diff3", "sdiff", "cmp", "colordiff", "file", "stat", "du", "df", "free", "vmstat",
    "iostat", "mpstat", "ps", "pstree", "pgrep", "pidof", "lsof", "lsblk", "lscpu", "lsmem",
    "lspci", "lsusb", "lsmod", "findmnt", "readlink", "realpath", "basename", "dirname", "which",
    "whereis", "type", "whatis", "apropos", "seq", "sleep", "wait", "jobs", "printenv", "getconf",
    "getent", "cd", "pushd", "popd", "dirs", "shopt", "read", "let", "exit", "return", "shift",
    "break", "continue", "times", "bat", "batcat", "jq", "gojq", "jaq", "tokei", "cloc", "scc",
    "ag", "ack", "ack-grep", "eza", "exa", "lsd", "nm", "objdump", "readelf", "size", "addr2line",
    "c++filt", "rustfilt", "shellcheck", "unalias", "umask", "ulimit", "hash", "set", "disown",
    "tput", "expr", "bc", "factor", "numfmt", "tsort", "look", "top", "htop", "btop", "nvidia-smi",
    "lsb_release", "sw_vers", "ss", "netstat", "env", "help", "info", "tldr", "fc-list", "locate",
    "mdfind", "pbpaste", "wslpath", "cygpath", "zipinfo", "namei", "getfacl", "lsattr", "tokei",
    "onefetch", "difft", "delta", "diffstat", "sha3sum", "xxhsum", "gzcat", "pr",
    "csvlook", "mlr", "xsv", "qsv", "gron", "fx", "htmlq", "pup", "dasel", "taplo", "shfmt",
    "grex", "sd", "tail", "true", "declare", "typeset", "local", "export", "readonly", "unset",
    "logger", "stty", "clear", "basenc", "yes", "nohup",
];

/// Programs that name paths without reading their contents.
#[rustfmt::skip]
const METADATA_ONLY: &[&str] = &[
    "ls", "dir", "vdir", "stat", "test", "[", "[[", "du", "readlink", "realpath", "basename",
    "dirname", "echo", "printf", "cd", "pushd", "eza", "exa", "lsd", "namei", "getfacl", "lsattr",
    "tree", "find", "fd", "fdfind", "which", "type",
];

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let mut v = match p {
        "sd" => sd(cmd),
        "sort" => writes_with(cmd, &["-o"], &["--output"], "sort only reads")
            .and_runs(cmd, &["--compress-program"]),
        "shuf" => writes_with(cmd, &["-o"], &["--output"], "shuf only reads"),
        "tree" => writes_with(cmd, &["-o"], &[], "tree only lists files"),
        "less" | "more" | "most" => pager(cmd),
        "ps" => ps(cmd),
        "base64" | "base32" => writes_with(
            cmd,
            &["-o"],
            &["--output"],
            "only encodes or decodes to the terminal",
        ),
        "iconv" => writes_with(cmd, &["-o"], &["--output"], "only converts to the terminal"),
        "xmllint" => writes_with(cmd, &["-o"], &["--output"], "only reads XML"),
        "uniq" | "xxd" => second_operand_writes(cmd),
        "yq" => match cmd.has(&["-i", "--inplace"]) {
            true => in_place(
                cmd,
                &[
                    "-e",
                    "-p",
                    "-o",
                    "-I",
                    "--input-format",
                    "--output-format",
                    "--indent",
                    "--expression",
                ],
            ),
            false => Verdict::safe("yq without -i only reads"),
        },
        "date" => date(cmd),
        "hostname" => hostname(cmd),
        "rg" | "ripgrep" => {
            let mut v = if cmd.has(&["--pre"]) {
                let pre = cmd.option_values(&[], &["--pre"]);
                let shown = pre.first().map(|w| w.display.clone()).unwrap_or_default();
                Verdict::dangerous(format!("rg --pre runs `{shown}` on every file it searches"))
            } else {
                Verdict::safe("rg only searches")
            };
            v.reads = super::selects::include_globs(cmd);
            v
        }
        "grep" | "egrep" | "fgrep" | "rgrep" | "zgrep" => {
            let mut v = Verdict::safe(format!("`{p}` only reads"));
            v.reads = super::selects::include_globs(cmd);
            v
        }
        "man" => man(cmd),
        "printenv" => {
            let secret = cmd.values().find(|v| crate::word::is_secret_name(v));
            match secret {
                Some(name) => {
                    Verdict::dangerous(format!("printenv prints {name}, which looks like a secret"))
                }
                None => Verdict::safe("printenv only prints the environment"),
            }
        }
        "find" => find(cmd),
        "fd" | "fdfind" => fd(cmd),
        "exec" => Verdict::safe("exec without a command only changes redirections"),
        "command" => Verdict::safe("command -v only looks a program up"),
        _ if ALWAYS_SAFE.contains(&p) => Verdict::safe(format!("`{p}` only reads")),
        _ => return None,
    };
    v.metadata_only |= METADATA_ONLY.contains(&p);
    Some(v)
}

/// `less`/`more`: safe unless a log file is written, an initial command runs a shell
/// (`+!cmd`, `+|cmd`) or a lesskey file (which can set `LESSOPEN`) is loaded.
fn pager(cmd: &Cmd<'_>) -> Verdict {
    let mut v = writes_with(
        cmd,
        &["-o", "-O"],
        &["--log-file", "--LOG-FILE"],
        "the pager only reads",
    );
    for w in cmd.args {
        let Some(text) = w.known() else { continue };
        if let Some(command) = text.strip_prefix('+')
            && command.contains(['!', '|'])
        {
            v.raise(
                Severity::Dangerous,
                format!(
                    "{} runs the start-up command `{command}`, which runs a shell command",
                    cmd.program
                ),
            );
        }
    }
    if cmd.has(&["-k", "--lesskey-file", "--lesskey-src", "--lesskey-content"]) {
        v.raise(
            Severity::Normal,
            "less loads a lesskey file, which can make it run other programs",
        );
    }
    v
}

/// `ps e`, `ps auxe`, `ps eww`: the BSD `e` option prints every process's environment.
fn ps(cmd: &Cmd<'_>) -> Verdict {
    #[rustfmt::skip]
    let valued = [
        "-o", "-O", "--format", "-p", "--pid", "-q", "--quick-pid", "-u", "-U", "--user", "--User",
        "-g", "-G", "--group", "--Group", "-t", "--tty", "-C", "--ppid", "--sid", "-s", "--sort",
        "-k", "--cols", "--columns", "--rows", "--lines",
    ];
    // a short cluster ending in a value-taking letter (`-eo user`) takes the next word
    let mut environment = false;
    let mut i = 0;
    while let Some(w) = cmd.args.get(i) {
        i += 1;
        let Some(v) = w.known() else { continue };
        if valued.contains(&v)
            || (v.starts_with('-')
                && !v.starts_with("--")
                && v.ends_with([
                    'o', 'O', 'p', 'q', 'u', 'U', 'g', 'G', 't', 'C', 's', 'k', 'N',
                ]))
        {
            i += 1;
            continue;
        }
        environment |= !v.starts_with('-')
            && !v.is_empty()
            && v.chars().all(|c| c.is_ascii_alphabetic())
            && v.contains('e');
    }
    match environment {
        true => Verdict::critical(
            "ps e prints the environment of other processes, where tokens and keys are (Lathe's own included)",
        ),
        false => Verdict::safe("`ps` only reads"),
    }
}

/// `man -P PAGER` / `-H BROWSER` runs the given program: it is judged as a command.
fn man(cmd: &Cmd<'_>) -> Verdict {
    let programs = cmd.option_values(&["-P", "-H"], &["--pager", "--html"]);
    if programs.is_empty() {
        return Verdict::safe("man only shows manuals");
    }
    let mut v = Verdict::normal("man runs a pager or browser program given on the command line");
    for p in programs {
        match p.known() {
            Some(text) => v.inner.push(Inner::Script(text.to_string())),
            None => v.raise(
                Severity::Dangerous,
                format!(
                    "man runs `{}`, a program not known until run time",
                    p.display
                ),
            ),
        }
    }
    v
}

trait AndRuns {
    fn and_runs(self, cmd: &Cmd<'_>, long: &[&str]) -> Self;
}

impl AndRuns for Verdict {
    fn and_runs(mut self, cmd: &Cmd<'_>, long: &[&str]) -> Self {
        if cmd.has(long) {
            self.raise(
                Severity::Dangerous,
                format!("{} runs a program given by {}", cmd.program, long.join("/")),
            );
        }
        self
    }
}

/// Safe unless one of the output options is given, whose values are written.
fn writes_with(cmd: &Cmd<'_>, short: &[&str], long: &[&str], safe: &str) -> Verdict {
    let outputs = cmd.option_values(short, long);
    if outputs.is_empty() {
        return Verdict::safe(safe);
    }
    let mut v = Verdict::normal(format!("{} writes its output to a file", cmd.program));
    for o in &outputs {
        v.write(o);
    }
    v
}

/// `uniq IN OUT`, `xxd IN OUT`: a second operand is an output file.
fn second_operand_writes(cmd: &Cmd<'_>) -> Verdict {
    #[rustfmt::skip]
    let valued = [
        "-f", "-s", "-w", "-c", "-g", "-l", "-n", "-o", "-s", "--skip-fields", "--skip-chars",
        "--check-chars", "-cols", "-len", "-seek",
    ];
    let ops = cmd.operands(&valued);
    match ops.get(1) {
        Some(out) => {
            let mut v = Verdict::normal(format!(
                "{} writes its output to `{}`",
                cmd.program, out.display
            ));
            v.write(out);
            v
        }
        None => Verdict::safe(format!("{} only reads", cmd.program)),
    }
}

/// A tool editing its operand files in place.
pub(super) fn in_place(cmd: &Cmd<'_>, valued: &[&str]) -> Verdict {
    let mut v = Verdict::normal(format!("{} edits files in place", cmd.program));
    let ops = cmd.operands(valued);
    for o in ops.iter().skip(usize::from(
        cmd.program == "yq" && !cmd.has(&["-e", "--expression"]),
    )) {
        v.write(o);
    }
    v.destructive = true;
    v
}

/// `sd FIND REPLACE [FILES]` edits files in place unless previewing.
fn sd(cmd: &Cmd<'_>) -> Verdict {
    let ops = cmd.operands(&["-f", "--flags", "-n", "--max-replacements"]);
    if ops.len() <= 2 || cmd.has(&["-p", "--preview"]) {
        return Verdict::safe("sd without files only filters its input");
    }
    let mut v = Verdict::normal("sd edits files in place");
    for o in ops.iter().skip(2) {
        v.write(o);
    }
    v
}

fn date(cmd: &Cmd<'_>) -> Verdict {
    let valued = ["-d", "--date", "-r", "--reference", "-f", "--file"];
    let sets = cmd.has(&["-s", "--set"])
        || cmd
            .operands(&valued)
            .iter()
            .any(|w| !w.known().is_some_and(|v| v.starts_with('+')));
    match sets {
        true => Verdict::dangerous("date sets the system clock"),
        false => Verdict::safe("date only prints the time"),
    }
}

fn hostname(cmd: &Cmd<'_>) -> Verdict {
    if cmd.has(&["-F", "--file", "-b", "--boot"]) || !cmd.operands(&[]).is_empty() {
        Verdict::dangerous("hostname with an argument changes the machine's name")
    } else {
        Verdict::safe("hostname only prints the name")
    }
}

/// `find` reads unless it runs commands, deletes, or prints into files.
fn find(cmd: &Cmd<'_>) -> Verdict {
    let args = cmd.args;
    let mut starts: Vec<&str> = Vec::new();
    let mut i = 0;
    while let Some(v) = cmd.arg(i) {
        if matches!(v, "-H" | "-L" | "-P") || v.starts_with("-O") {
            i += 1;
        } else if v == "-D" {
            i += 2;
        } else {
            break;
        }
    }
    while let Some(w) = args.get(i) {
        match w.known() {
            Some(v) if v.starts_with('-') || v == "(" || v == "!" || v == "," => break,
            Some(v) => starts.push(v),
            None => starts.push("$unknown"),
        }
        i += 1;
    }
    if starts.is_empty() {
        starts.push(".");
    }
    let (start, rank) = worst_start(&starts, cmd);
    let names = super::selects::find_names(cmd, &start);
    let mut v = Verdict::safe("find only lists files");
    if let Some(n) = &names
        && start != "$unknown"
    {
        v.names
            .push(super::selects::match_word("(found)", &start, n));
    }
    while i < args.len() {
        let opt = cmd.arg(i).unwrap_or("");
        match opt {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let end = (i + 1..args.len())
                    .find(|j| matches!(cmd.arg(*j), Some(";" | "+")))
                    .unwrap_or(args.len());
                let inner: Vec<Word> = args[i + 1..end]
                    .iter()
                    .map(|w| match (&names, w.known()) {
                        (Some(n), Some("{}")) if start != "$unknown" => {
                            super::selects::match_word("{}", &start, n)
                        }
                        _ => placeholder(w, &start, &["{}"]),
                    })
                    .collect();
                if inner.is_empty() {
                    v.raise(Severity::Normal, format!("find {opt} without a command"));
                } else {
                    v.raise(
                        Severity::Safe,
                        format!("find {opt} runs `{}` on every match", inner[0].display),
                    );
                    v.inner.push(Inner::Argv {
                        argv: inner,
                        per_item: Some(format!("find {opt}")),
                    });
                }
                i = end + 1;
                continue;
            }
            "-delete" => {
                let sev = if rank == 2 {
                    Severity::Critical
                } else {
                    Severity::Dangerous
                };
                v.raise(
                    sev,
                    format!("find -delete deletes every match under `{start}`"),
                );
                v.destructive = true;
            }
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                if let Some(f) = args.get(i + 1) {
                    v.raise(
                        Severity::Normal,
                        format!("find {opt} writes `{}`", f.display),
                    );
                    v.write(f);
                }
            }
            _ => {}
        }
        i += 1;
    }
    v
}

/// The start directory that matters most: an unknown one, else one outside the workspace.
fn worst_start(starts: &[&str], cmd: &Cmd<'_>) -> (String, u8) {
    let judged = starts.iter().map(|s| {
        let abs = crate::paths::resolve(s, cmd.cwd, cmd.ctx);
        let loc = abs.as_deref().map(|a| crate::paths::locate(a, cmd.ctx));
        (s, abs, loc)
    });
    let mut best: Option<(String, u8)> = None;
    for (s, abs, loc) in judged {
        let rank = match loc {
            None => 3,
            Some(crate::paths::Location::Outside | crate::paths::Location::Device) => 2,
            Some(crate::paths::Location::Temp) => 1,
            _ => 0,
        };
        let shown = if *s == "$unknown" {
            s.to_string()
        } else {
            abs.unwrap_or_else(|| s.to_string())
        };
        if best.as_ref().is_none_or(|(_, r)| rank > *r) {
            best = Some((shown, rank));
        }
    }
    best.unwrap_or_else(|| (".".to_string(), 0))
}

/// Replaces a `{}` placeholder with a path under the start directory, kept shown as `{}`.
fn placeholder(w: &Word, start: &str, marks: &[&str]) -> Word {
    match w.known() {
        Some(v) if marks.iter().any(|m| v.contains(m)) => {
            if start == "$unknown" {
                return Word::unknown(v, "a path found by the search");
            }
            let mut p = Word::literal(&format!("{}/{}", start.trim_end_matches('/'), "{}"));
            p.display = v.to_string();
            p
        }
        _ => w.clone(),
    }
}

/// `fd` reads unless it runs a command per match (`-x`, `-X`).
fn fd(cmd: &Cmd<'_>) -> Verdict {
    let at = cmd.args.iter().position(|w| {
        w.known()
            .is_some_and(|v| matches!(v, "-x" | "--exec" | "-X" | "--exec-batch"))
    });
    let Some(at) = at else {
        let mut v = Verdict::safe("fd only lists files");
        if let Some((start, n)) = super::selects::fd_names(cmd, cmd.args.len()) {
            v.names
                .push(super::selects::match_word("(found)", &start, &n));
        }
        return v;
    };
    let end = (at + 1..cmd.args.len())
        .find(|j| cmd.arg(*j) == Some(";"))
        .unwrap_or(cmd.args.len());
    let marks = ["{}", "{/}", "{//}", "{.}", "{/.}"];
    let selected = super::selects::fd_names(cmd, at);
    let mut inner: Vec<Word> = cmd.args[at + 1..end]
        .iter()
        .map(|w| match (&selected, w.known()) {
            (Some((start, n)), Some("{}")) => super::selects::match_word("{}", start, n),
            _ => placeholder(w, ".", &marks),
        })
        .collect();
    // without a placeholder fd appends the path of the match
    let placed = cmd.args[at + 1..end].iter().any(|w| {
        w.known()
            .is_some_and(|v| marks.iter().any(|m| v.contains(m)))
    });
    if !placed
        && !inner.is_empty()
        && let Some((start, n)) = &selected
    {
        inner.push(super::selects::match_word("{}", start, n));
    }
    let mut v = Verdict::safe("fd only lists files");
    if let Some(first) = inner.first() {
        v.raise(
            Severity::Safe,
            format!("fd runs `{}` on every match", first.display),
        );
        v.inner.push(Inner::Argv {
            argv: inner,
            per_item: Some("fd --exec".into()),
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn read_only_tools() {
        expect(&[
            ("ls -la", Safe),
            ("cat README.md | head -20", Safe),
            ("sort -u names.txt", Safe),
            ("sort -o out.txt names.txt", Normal),
            ("sort -o /etc/x names.txt", Critical),
            ("uniq a.txt", Safe),
            ("uniq a.txt b.txt", Normal),
            ("tree -L 2", Safe),
            ("tree -o ../x.txt", Dangerous),
            ("date +%s", Safe),
            ("date -s 'now'", Dangerous),
            ("hostname", Safe),
            ("hostname evil", Dangerous),
            ("rg foo --pre ./x.sh", Dangerous),
            ("rg -n 'fn main' src", Safe),
            ("ls ~/.ssh", Safe),
            ("ps aux", Safe),
            ("ps -ef", Safe),
            ("ps -o pid,user,cmd -p 1", Safe),
            ("ps eww", Critical),
            ("ps -eo user", Safe),
            ("ps -e -o user,pid", Safe),
            ("ps -U root -u root u", Safe),
            ("ps auxe", Critical),
            ("man -P cat ls", Normal),
            ("man -P 'rm -rf ~' ls", Critical),
            ("less '+!rm x' f", Dangerous),
            ("less +G f", Safe),
            ("hyperfine 'rm -rf ~'", Critical),
        ]);
    }

    #[test]
    fn find_actions() {
        expect(&[
            ("find . -name '*.rs'", Safe),
            ("find . -name '*.rs' -exec grep -l foo {} +", Safe),
            ("find . -name '*.o' -delete", Dangerous),
            ("find / -delete", Critical),
            ("find . -exec rm {} \\;", Dangerous),
            ("find / -exec rm -rf {} +", Critical),
            ("find . -fprint out.txt", Normal),
            ("fd -e rs", Safe),
            ("fd -e tmp -x rm", Dangerous),
        ]);
    }
}
