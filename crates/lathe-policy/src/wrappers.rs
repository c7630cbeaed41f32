//! Programs that run another program: `sudo`, `env`, `timeout`, `xargs`, `nice`, ...
//!
//! Each is looked through to the program it runs, which is what gets classified; what the
//! wrapper adds (root rights, once-per-item execution) is carried along.

use crate::severity::Severity;
use crate::word::Word;

/// What a wrapper runs.
pub(crate) enum Unwrap {
    /// Not a wrapper, or a wrapper used without a command: classify it as it is.
    No,
    /// The command it runs.
    Inner(Box<Unwrapped>),
}

/// The inner command of a wrapper and what the wrapper adds.
#[derive(Default)]
pub(crate) struct Unwrapped {
    pub argv: Vec<Word>,
    pub note: Option<(Severity, String)>,
    pub env: Vec<(String, Word)>,
    pub per_item: Option<String>,
    pub cwd: Option<Word>,
    /// Files the wrapper itself reads (`xargs -a FILE`, `sshpass -f FILE`).
    pub reads: Vec<Word>,
}

/// Index of the first operand at or after `start`: options are skipped, those in `valued`
/// with their separate value. An option not known until run time counts as the operand.
pub(crate) fn skip_opts(argv: &[Word], start: usize, valued: &[&str]) -> usize {
    let mut i = start;
    while let Some(word) = argv.get(i) {
        let Some(v) = word.known() else { return i };
        if v == "--" {
            return i + 1;
        }
        if !v.starts_with('-') || v == "-" {
            return i;
        }
        i += if valued.contains(&v) { 2 } else { 1 };
    }
    i
}

fn has(argv: &[Word], flags: &[&str]) -> bool {
    argv.iter()
        .skip(1)
        .any(|w| w.known().is_some_and(|v| flags.contains(&v)))
}

fn sub(argv: &[Word], names: &[&str]) -> bool {
    argv.get(1)
        .and_then(Word::known)
        .is_some_and(|v| names.contains(&v))
}

fn inner(argv: &[Word], at: usize, note: Option<(Severity, String)>) -> Unwrap {
    match argv.get(at..) {
        Some(rest) if !rest.is_empty() => Unwrap::Inner(Box::new(Unwrapped {
            argv: rest.to_vec(),
            note,
            ..Unwrapped::default()
        })),
        _ => Unwrap::No,
    }
}

fn root(how: &str) -> Option<(Severity, String)> {
    Some((
        Severity::Critical,
        format!("runs as root or another user ({how})"),
    ))
}

fn is_assignment(v: &str) -> bool {
    match v.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Looks through `program` (lowercase basename) if it is a wrapper.
pub(crate) fn unwrap(program: &str, argv: &[Word]) -> Unwrap {
    match program {
        "env" => env(argv),
        "sudo" => {
            #[rustfmt::skip]
            let valued = [
                "-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-T", "-U", "--user", "--group",
                "--host", "--prompt", "--close-from", "--chdir", "--role", "--type",
                "--command-timeout", "--other-user",
            ];
            if has(argv, &["-e", "--edit", "-l", "--list", "-v", "-k", "-K"]) {
                return Unwrap::No;
            }
            let mut i = skip_opts(argv, 1, &valued);
            while argv.get(i).and_then(Word::known).is_some_and(is_assignment) {
                i += 1;
            }
            inner(argv, i, root("sudo"))
        }
        "doas" => inner(argv, skip_opts(argv, 1, &["-u", "-C"]), root("doas")),
        "pkexec" => inner(argv, skip_opts(argv, 1, &["--user"]), root("pkexec")),
        "run0" => {
            #[rustfmt::skip]
            let valued = [
                "-u", "--user", "-g", "--group", "-D", "--chdir", "--setenv", "--property",
                "--unit", "--slice", "--nice", "--description",
            ];
            inner(argv, skip_opts(argv, 1, &valued), root("run0"))
        }
        "gosu" | "su-exec" => inner(argv, 2, root(program)),
        "runuser" if !has(argv, &["-c", "--command"]) => {
            let valued = ["-u", "-g", "-G", "--user", "--group", "--supp-group"];
            inner(argv, skip_opts(argv, 1, &valued), root("runuser"))
        }
        "nice" => inner(argv, skip_opts(argv, 1, &["-n", "--adjustment"]), None),
        "ionice" if !has(argv, &["-p", "-P", "-u", "--pid", "--pgid", "--uid"]) => inner(
            argv,
            skip_opts(argv, 1, &["-c", "-n", "--class", "--classdata"]),
            None,
        ),
        "timeout" => {
            let i = skip_opts(argv, 1, &["-s", "-k", "--signal", "--kill-after"]);
            inner(argv, i + 1, None)
        }
        "nohup" | "setsid" | "unbuffer" | "chronic" | "builtin" | "catchsegv" | "coproc"
        | "dbus-run-session" | "firejail" | "fakeroot" | "torsocks" | "tsocks" | "proxychains"
        | "proxychains4" | "ssh-agent" | "valgrind" => inner(argv, skip_opts(argv, 1, &[]), None),
        "xvfb-run" => inner(
            argv,
            skip_opts(argv, 1, &["-n", "-s", "-e", "-f", "-p"]),
            None,
        ),
        "caffeinate" => inner(argv, skip_opts(argv, 1, &["-t", "-w"]), None),
        "stdbuf" => inner(argv, skip_opts(argv, 1, &["-i", "-o", "-e"]), None),
        "time" => inner(
            argv,
            skip_opts(argv, 1, &["-f", "-o", "--format", "--output"]),
            None,
        ),
        "exec" => inner(argv, skip_opts(argv, 1, &["-a"]), None),
        "command" if !has(argv, &["-v", "-V"]) => inner(argv, skip_opts(argv, 1, &[]), None),
        "taskset" if !has(argv, &["-p", "--pid"]) => inner(argv, skip_opts(argv, 1, &[]) + 1, None),
        "chrt" if !has(argv, &["-p", "--pid"]) => {
            inner(argv, skip_opts(argv, 1, &["-T", "-P", "-D"]) + 1, None)
        }
        "numactl" => {
            #[rustfmt::skip]
            let valued = [
                "-C", "-N", "-m", "-i", "-p", "--cpunodebind", "--membind", "--interleave",
                "--preferred", "--physcpubind",
            ];
            inner(argv, skip_opts(argv, 1, &valued), None)
        }
        "strace" | "ltrace" if !has(argv, &["-p"]) => {
            #[rustfmt::skip]
            let valued = [
                "-o", "-e", "-s", "-u", "-E", "-P", "-I", "-b", "-a", "-X", "-O", "-S", "-U",
            ];
            inner(argv, skip_opts(argv, 1, &valued), None)
        }
        "flock" if !has(argv, &["-c", "--command"]) => {
            let i = skip_opts(argv, 1, &["-w", "--timeout", "-E", "--conflict-exit-code"]);
            let fd_form = argv
                .get(i)
                .and_then(Word::known)
                .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit()));
            if fd_form {
                Unwrap::No
            } else {
                inner(argv, i + 1, None)
            }
        }
        "watch" if has(argv, &["-x", "--exec"]) => {
            let valued = ["-n", "--interval", "-d", "-g", "-q", "--equexit"];
            inner(argv, skip_opts(argv, 1, &valued), None)
        }
        "xargs" => xargs(argv),
        "parallel" => {
            let i = skip_opts(
                argv,
                1,
                &["-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file"],
            );
            let end = argv
                .iter()
                .position(|w| w.known().is_some_and(|v| v.starts_with(":::")))
                .unwrap_or(argv.len());
            if i >= end {
                return Unwrap::No;
            }
            // GNU parallel joins the command's words and runs them with a shell
            let words = &argv[i..end];
            let shell_text = words.len() == 1
                || words.iter().any(|w| {
                    w.known().is_some_and(|v| {
                        v.contains(|c: char| c.is_whitespace() || ";|&<>$`".contains(c))
                    })
                });
            let inner_argv = if shell_text && words.iter().all(Word::is_known) {
                let text: Vec<&str> = words.iter().filter_map(Word::known).collect();
                let mut script = text.join(" ");
                if !script.contains("{") {
                    script.push_str(" {}");
                }
                vec![
                    Word::literal("sh"),
                    Word::literal("-c"),
                    Word::literal(&script),
                ]
            } else {
                let mut v = words.to_vec();
                v.push(Word::unknown("{}", "an input item read by parallel"));
                v
            };
            Unwrap::Inner(Box::new(Unwrapped {
                argv: inner_argv,
                per_item: Some("parallel".into()),
                ..Unwrapped::default()
            }))
        }
        "busybox" | "toybox" => inner(argv, skip_opts(argv, 1, &[]), None),
        "chroot" => {
            let i = skip_opts(argv, 1, &["--userspec", "--groups"]);
            let note = Some((
                Severity::Critical,
                "runs inside another root directory (chroot, needs root)".to_string(),
            ));
            match inner(argv, i + 1, note.clone()) {
                Unwrap::No => inner(
                    &[argv.to_vec(), vec![Word::literal("sh")]].concat(),
                    i + 1,
                    note,
                ),
                found => found,
            }
        }
        "unshare" => {
            #[rustfmt::skip]
            let valued = [
                "-S", "--setuid", "-G", "--setgid", "-w", "--wd", "-R", "--root", "--propagation",
                "--map-user", "--map-group", "--map-users", "--map-groups", "--monotonic",
                "--boottime",
            ];
            let note = Some((
                Severity::Dangerous,
                "runs in new namespaces (unshare)".to_string(),
            ));
            inner(argv, skip_opts(argv, 1, &valued), note)
        }
        "nsenter" => {
            #[rustfmt::skip]
            let valued = ["-t", "--target", "-S", "--setuid", "-G", "--setgid", "--env"];
            let note = Some((
                Severity::Critical,
                "enters another process's namespaces (nsenter: needs root, leaves containers)"
                    .to_string(),
            ));
            inner(argv, skip_opts(argv, 1, &valued), note)
        }
        "systemd-run" => {
            #[rustfmt::skip]
            let valued = [
                "-p", "--property", "-u", "--unit", "-E", "--setenv", "--description", "--slice",
                "-M", "--machine", "--uid", "--gid", "--working-directory", "-H", "--host",
                "--on-active", "--on-boot", "--on-startup", "--on-unit-active",
                "--on-unit-inactive", "--on-calendar", "--on-clock-change", "--timer-property",
                "--path-property", "--socket-property", "--nice", "--service-type", "--expand-environment",
            ];
            // the service manager runs it, outside the sandbox; the system one as root
            let note = Some(if has(argv, &["--user"]) {
                (
                    Severity::Dangerous,
                    "systemd-run --user hands the command to your service manager, which runs it outside the sandbox".to_string(),
                )
            } else {
                (
                    Severity::Critical,
                    "systemd-run hands the command to the system service manager, which runs it as root outside the sandbox".to_string(),
                )
            });
            inner(argv, skip_opts(argv, 1, &valued), note)
        }
        "uv" if sub(argv, &["run"]) => {
            #[rustfmt::skip]
            let valued = [
                "--with", "--python", "-p", "--package", "--extra", "--group", "--env-file",
                "--directory", "--project", "--index", "--with-requirements", "-w",
                "--with-editable",
            ];
            // `--with` installs packages from the network into the run's environment
            let with = argv.iter().skip(2).any(|w| {
                w.known()
                    .is_some_and(|v| v == "-w" || v.starts_with("--with"))
            });
            let note = with.then(|| {
                (
                    Severity::Dangerous,
                    "uv run --with downloads and installs packages for the run".to_string(),
                )
            });
            inner(argv, skip_opts(argv, 2, &valued), note)
        }
        "poetry" | "pipenv" | "pdm" | "hatch" | "rye" if sub(argv, &["run"]) => inner(
            argv,
            skip_opts(argv, 2, &["-C", "--directory", "-P", "--project"]),
            None,
        ),
        "bundle" | "pyenv" | "rbenv" | "asdf" if sub(argv, &["exec"]) => {
            inner(argv, skip_opts(argv, 2, &[]), None)
        }
        "conda" | "mamba" | "micromamba" if sub(argv, &["run"]) => inner(
            argv,
            skip_opts(argv, 2, &["-n", "--name", "-p", "--prefix", "--cwd"]),
            None,
        ),
        "direnv" if sub(argv, &["exec"]) => inner(argv, 3, None),
        "mise" | "rtx" if sub(argv, &["exec", "x"]) => {
            match argv.iter().position(|w| w.known() == Some("--")) {
                Some(i) => inner(argv, i + 1, None),
                None => Unwrap::No,
            }
        }
        _ => crate::launchers::unwrap(program, argv),
    }
}

fn env(argv: &[Word]) -> Unwrap {
    let mut out = Unwrapped::default();
    let mut split: Option<Word> = None;
    let mut i = 1;
    while let Some(v) = argv.get(i).and_then(Word::known) {
        match v {
            "--" => {
                i += 1;
                break;
            }
            "-" => i += 1,
            "-C" | "--chdir" => {
                out.cwd = argv.get(i + 1).cloned();
                i += 2;
            }
            "-S" | "--split-string" => {
                split = argv.get(i + 1).cloned();
                i += 2;
            }
            "-u" | "--unset" => i += 2,
            _ if v.starts_with("--chdir=") => {
                out.cwd = Some(Word::literal(&v["--chdir=".len()..]));
                i += 1;
            }
            _ if v.starts_with("--split-string=") => {
                split = Some(Word::literal(&v["--split-string=".len()..]));
                i += 1;
            }
            _ if v.starts_with("-S") && v.len() > 2 => {
                split = Some(Word::literal(&v[2..]));
                i += 1;
            }
            _ if v.starts_with('-') => i += 1,
            _ => break,
        }
    }
    while let Some(v) = argv.get(i).and_then(Word::known) {
        if !is_assignment(v) {
            break;
        }
        let (name, value) = v.split_once('=').unwrap_or((v, ""));
        out.env.push((name.to_string(), Word::literal(value)));
        i += 1;
    }
    let mut rest: Vec<Word> = Vec::new();
    if let Some(s) = split {
        match s.known() {
            Some(text) => rest.extend(text.split_ascii_whitespace().map(Word::literal)),
            None => rest.push(s),
        }
    }
    rest.extend(argv.get(i..).unwrap_or(&[]).iter().cloned());
    if rest.is_empty() {
        return Unwrap::No;
    }
    out.argv = rest;
    Unwrap::Inner(Box::new(out))
}

/// `ls .e* | xargs cat`, `find . -name .env | xargs cat`: the names the previous stage of
/// the pipeline printed (its metadata-only paths) are what `xargs` passes on; they replace
/// the unknown input items of the inner command. Anything else stays unknown.
pub(crate) fn piped_inputs(
    argv: &mut Vec<Word>,
    previous: Option<&crate::analysis::SimpleCommand>,
) {
    /// More names than this are not substituted one by one.
    const MAX_NAMES: usize = 16;
    let Some(prev) = previous else { return };
    let names: Vec<Word> = prev
        .paths
        .iter()
        .filter(|p| p.access == crate::analysis::Access::Metadata)
        .filter_map(|p| {
            let mut w = Word::literal(p.path.as_deref()?);
            w.glob = p.glob;
            w.brace = p.glob;
            w.display = p.text.clone();
            Some(w)
        })
        .take(MAX_NAMES)
        .collect();
    if names.is_empty() {
        return;
    }
    let is_input = |w: &Word| w.dynamic.iter().any(|d| d.ends_with("read by xargs"));
    let mut out = Vec::with_capacity(argv.len() + names.len());
    for w in argv.drain(..) {
        if is_input(&w) {
            out.extend(names.iter().cloned());
        } else {
            out.push(w);
        }
    }
    *argv = out;
}

fn xargs(argv: &[Word]) -> Unwrap {
    #[rustfmt::skip]
    let valued = [
        "-L", "-n", "-P", "-s", "-d", "-E", "-a", "--arg-file", "--delimiter", "--max-args",
        "--max-procs", "--max-lines", "--eof", "--max-chars", "--process-slot-var",
    ];
    let mut replace: Option<String> = None;
    let mut reads = Vec::new();
    let mut i = 1;
    while let Some(v) = argv.get(i).and_then(Word::known) {
        if v == "--" {
            i += 1;
            break;
        }
        if !v.starts_with('-') || v == "-" {
            break;
        }
        if v == "-I" {
            replace = argv.get(i + 1).and_then(Word::known).map(str::to_string);
            i += 2;
            continue;
        }
        if matches!(v, "-a" | "--arg-file") {
            reads.extend(argv.get(i + 1).cloned());
        } else if let Some(file) = v.strip_prefix("--arg-file=") {
            reads.push(Word::literal(file));
        }
        if let Some(r) = v.strip_prefix("-I") {
            replace = Some(r.to_string());
        } else if let Some(r) = v.strip_prefix("-i") {
            replace = Some(if r.is_empty() {
                "{}".into()
            } else {
                r.to_string()
            });
        } else if let Some(r) = v.strip_prefix("--replace") {
            replace = Some(r.strip_prefix('=').unwrap_or("{}").to_string());
        } else if valued.contains(&v) {
            i += 1;
        }
        i += 1;
    }
    let mut inner_argv: Vec<Word> = argv.get(i..).unwrap_or(&[]).to_vec();
    if inner_argv.is_empty() {
        inner_argv.push(Word::literal("echo"));
    }
    match replace {
        Some(r) if !r.is_empty() => {
            for w in inner_argv.iter_mut().skip(1) {
                if w.display.contains(&r) {
                    *w = Word::unknown(&w.display, "an input item read by xargs");
                }
            }
        }
        _ => inner_argv.push(Word::unknown("{input}", "input items read by xargs")),
    }
    Unwrap::Inner(Box::new(Unwrapped {
        argv: inner_argv,
        per_item: Some("xargs".into()),
        reads,
        ..Unwrapped::default()
    }))
}
