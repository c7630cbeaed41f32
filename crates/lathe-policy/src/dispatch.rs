//! From one parsed command to the simple commands it runs: wrappers are looked through,
//! the program is classified, paths and redirections are judged.

use crate::analysis::{Access, SimpleCommand};
use crate::classify::{self, Cmd, Inner};
use crate::judge::{judge_read, judge_write, path_ref};
use crate::paths::{basename, parent, resolve};
use crate::redirect::{self, RedirectSpec};
use crate::script::analyze_script;
use crate::severity::{Assessment, Severity};
use crate::walk::{Scope, Stdin, Walker};
use crate::word::{Word, is_plain};
use crate::wrappers::{Unwrap, unwrap};

/// `nice timeout env sudo ...` deeper than this is not followed.
const MAX_WRAPPERS: usize = 16;

/// Directories whose programs are the real system programs of that name.
#[rustfmt::skip]
const SYSTEM_BIN_DIRS: &[&str] = &[
    "/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/usr/local/sbin",
    "/opt/homebrew/bin", "/run/current-system/sw/bin",
];

/// A command as parsed: prefix assignments, words, redirections, input.
pub(crate) struct Invocation {
    pub assigns: Vec<(String, Word)>,
    pub argv: Vec<Word>,
    pub redirects: Vec<RedirectSpec>,
    pub stdin: Stdin,
    pub source: String,
}

/// Why setting this environment variable changes what code runs, if it does.
pub(crate) fn risky_env(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let why = match upper.as_str() {
        "PATH" => "changes which programs run",
        "LD_PRELOAD" | "LD_LIBRARY_PATH" | "LD_AUDIT" => "injects code into every program",
        "BASH_ENV" | "ENV" | "PROMPT_COMMAND" | "SHELLOPTS" | "BASHOPTS" | "PS0" | "PS1"
        | "PS2" | "PS3" | "PS4" => "makes the shell run other code",
        "IFS" => "changes how the shell splits words, a common way to hide commands",
        "GIT_SSH"
        | "GIT_SSH_COMMAND"
        | "GIT_EXTERNAL_DIFF"
        | "GIT_PAGER"
        | "GIT_EDITOR"
        | "GIT_ASKPASS"
        | "SSH_ASKPASS"
        | "GIT_EXEC_PATH"
        | "GIT_PROXY_COMMAND"
        | "GIT_CONFIG"
        | "GIT_CONFIG_GLOBAL"
        | "GIT_CONFIG_PARAMETERS"
        | "GIT_CONFIG_COUNT"
        | "GIT_TEMPLATE_DIR" => "makes git run other programs",
        "PAGER" | "MANPAGER" | "EDITOR" | "VISUAL" | "BROWSER" | "LESSOPEN" | "LESSCLOSE" => {
            "makes programs run another program"
        }
        "NODE_OPTIONS" | "PERL5OPT" | "RUBYOPT" | "PYTHONSTARTUP" | "PYTHONPATH" | "PERL5LIB"
        | "RUBYLIB" | "NODE_PATH" | "JAVA_TOOL_OPTIONS" | "RUSTC_WRAPPER" => {
            "changes what code an interpreter or compiler loads"
        }
        _ if upper.starts_with("DYLD_") => "injects code into every program",
        // GIT_SEQUENCE_EDITOR, SYSTEMD_PAGER, SUDO_ASKPASS, GH_EDITOR, ... (issue 12.2)
        _ if ["_PAGER", "_EDITOR", "_ASKPASS"]
            .iter()
            .any(|s| upper.ends_with(s)) =>
        {
            "makes programs run another program"
        }
        "SHELL" | "TERMINAL" => "changes the program other programs start as a shell",
        // the sockets of daemons that act outside the sandbox (issue 12.4)
        "DOCKER_HOST"
        | "CONTAINER_HOST"
        | "TMUX"
        | "STY"
        | "DBUS_SESSION_BUS_ADDRESS"
        | "DBUS_SYSTEM_BUS_ADDRESS"
        | "SSH_AUTH_SOCK"
        | "KITTY_LISTEN_ON"
        | "WEZTERM_UNIX_SOCKET"
        | "NVIM"
        | "NVIM_LISTEN_ADDRESS" => "points the command at a daemon that acts outside the sandbox",
        _ if upper.starts_with("GIT_CONFIG_KEY_") || upper.starts_with("GIT_CONFIG_VALUE_") => {
            "makes git run other programs"
        }
        _ => return None,
    };
    Some(why)
}

fn join_text(argv: &[Word]) -> String {
    argv.iter()
        .map(|w| w.display.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A word naming a path in an argument: the argument itself, or the value of
/// `--opt=value` / `key=value`.
fn path_candidate(arg: &Word, home: &str) -> Option<Word> {
    let v = arg.known()?;
    if v.is_empty() || v == "-" {
        return None;
    }
    let value = if let Some((key, value)) = v.split_once('=') {
        if !(key.starts_with("--")
            || (!key.starts_with('-') && !key.is_empty() && !key.contains('/')))
        {
            return if v.starts_with('-') {
                None
            } else {
                Some(arg.clone())
            };
        }
        value
    } else if v.starts_with('-') {
        return None;
    } else {
        return Some(arg.clone());
    };
    if value.is_empty() {
        return None;
    }
    let expanded = match value.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{home}{rest}"),
        _ => value.to_string(),
    };
    let mut w = Word::literal(&expanded);
    w.glob = arg.glob;
    w.brace = arg.brace;
    w.display = value.to_string();
    Some(w)
}

pub(crate) fn dispatch(w: &mut Walker<'_>, inv: Invocation, scope: &mut Scope) {
    let ctx = w.ctx;
    let mut a = Assessment::default();
    // `IFS=... read` is the idiom for reading lines as they are: the prefix changes only how
    // `read` itself splits its input, and hides nothing
    let reads_lines = inv.argv.first().and_then(Word::known) == Some("read");
    for (name, value) in &inv.assigns {
        w.assigned(name, value, scope);
        if name == "IFS" && reads_lines {
            continue;
        }
        if let Some(why) = risky_env(name) {
            a.raise(
                Severity::Dangerous,
                format!("sets {name}={} for the command, which {why}", value.display),
            );
        }
    }
    let (redirects, mut paths, judged) = redirect::judge(&inv.redirects, scope, ctx);
    a.absorb(judged);
    if inv.argv.is_empty() {
        for (name, value) in &inv.assigns {
            scope.vars.insert(name.clone(), crate::walk::capped(value));
        }
        for r in &a.reasons {
            w.out.finding(a.severity, format!("`{}`: {r}", inv.source));
        }
        return;
    }

    let mut argv = inv.argv;
    let mut wrappers: Vec<String> = Vec::new();
    let mut imposed: Vec<(Severity, String)> = Vec::new();
    let mut per_item = w.frame.per_item.clone();
    let mut cwd = scope.cwd.clone();
    let mut rounds = 0;
    let mut custom_path = None;
    let mut wrapper_reads: Vec<Word> = Vec::new();
    let (name_value, base) = loop {
        rounds += 1;
        let name = argv[0].clone();
        for s in &name.secrets {
            a.raise(
                Severity::Dangerous,
                format!("expands ${s}, which looks like a secret"),
            );
        }
        let Some(value) = name.known().map(str::to_string) else {
            let why = name.dynamic.first().cloned().unwrap_or_default();
            if name.from_download {
                a.raise(
                    Severity::Critical,
                    format!("the command name comes from {why}, which downloads from the network"),
                );
            }
            a.raise(
                Severity::Dangerous,
                format!(
                    "the command name comes from {why}, so what runs is not known until run time"
                ),
            );
            break (name.display.clone(), String::new());
        };
        if name.glob || name.brace {
            a.raise(
                Severity::Dangerous,
                format!("the command name `{}` is expanded by the shell (glob or braces), which hides what runs", name.raw),
            );
            break (value, String::new());
        }
        if !name.expanded.is_empty() {
            a.raise(
                Severity::Dangerous,
                format!("the command name comes from the variable ${} (`{value}`), which hides what runs", name.expanded[0]),
            );
        } else if name.quoted && is_plain(&value) {
            a.raise(
                Severity::Dangerous,
                format!(
                    "the command name is written `{}`: quoting that hides `{value}`",
                    name.raw
                ),
            );
        }
        let base = basename(&value).to_ascii_lowercase();
        if value.contains('/') {
            let dir = parent(&value);
            if !SYSTEM_BIN_DIRS.contains(&dir) {
                custom_path = Some(value.clone());
            }
        } else if scope.functions.contains(&value) {
            a.raise(
                Severity::Safe,
                format!("calls the shell function `{value}` defined in this command (its body is analysed where it is defined)"),
            );
            break (value, String::new());
        }
        if rounds > MAX_WRAPPERS {
            a.raise(Severity::Dangerous, "too many nested wrappers to analyse");
            break (value, base);
        }
        match unwrap(&base, &argv) {
            Unwrap::No => break (value, base),
            Unwrap::Inner(u) => {
                wrappers.push(join_text(&argv));
                if let Some((s, r)) = u.note {
                    a.raise(s, r.clone());
                    imposed.push((s, r));
                }
                for (n, v) in &u.env {
                    if let Some(why) = risky_env(n) {
                        a.raise(
                            Severity::Dangerous,
                            format!("sets {n}={} for the command, which {why}", v.display),
                        );
                    }
                }
                if let Some(p) = u.per_item {
                    per_item = Some(p);
                }
                wrapper_reads.extend(u.reads);
                if let Some(dir) = u.cwd {
                    cwd = dir.known().and_then(|d| resolve(d, cwd.as_deref(), ctx));
                }
                argv = u.argv;
                custom_path = None;
            }
        }
    };

    if per_item.as_deref() == Some("xargs") && matches!(inv.stdin, Stdin::Pipe { .. }) {
        crate::wrappers::piped_inputs(&mut argv, w.out.commands.last());
    }
    let networked = paths
        .iter()
        .any(|p| crate::judge::network_device(p).is_some());
    let mut verdict = classify::Verdict::default();
    if !base.is_empty() {
        let cmd = Cmd {
            name: &name_value,
            program: &base,
            args: &argv[1..],
            cwd: cwd.as_deref(),
            ctx,
            stdin: &inv.stdin,
        };
        verdict = classify::classify(&cmd);
        crate::builtins::check(w, &base, &argv, scope, cwd.as_deref(), &inv.stdin);
    }
    a.absorb(std::mem::take(&mut verdict.a));
    if networked {
        verdict.downloads = true;
        if classify::runs_code(&base) {
            a.raise(
                Severity::Critical,
                format!("connects `{base}` to the network through /dev/tcp: a reverse shell"),
            );
        }
    }
    if let Some(p) = &custom_path {
        a.raise(
            Severity::Normal,
            format!("runs `{p}`, a program from a path rather than the system's `{base}`"),
        );
    }
    let write_texts: Vec<String> = verdict.writes.iter().map(|w| w.display.clone()).collect();
    for word in &verdict.writes {
        let (r, j) = judge_write(word, cwd.as_deref(), ctx);
        // "writes x in the workspace" adds nothing to a command already judged normal or worse
        if j.severity > Severity::Normal || a.severity < Severity::Normal {
            a.absorb(j);
        }
        paths.push(r);
    }
    for word in &verdict.names {
        paths.push(path_ref(word, cwd.as_deref(), ctx, Access::Metadata));
    }
    for word in verdict.reads.iter().chain(&wrapper_reads) {
        let (r, j) = judge_read(word, cwd.as_deref(), ctx);
        a.absorb(j);
        paths.push(r);
    }
    for arg in argv.iter().skip(1) {
        for s in &arg.secrets {
            a.raise(
                Severity::Dangerous,
                format!("expands ${s}, which looks like a secret"),
            );
        }
        // `/proc/$PPID/environ`: a secret whatever the unknown part turns out to be
        if !arg.is_known()
            && !verdict.metadata_only
            && let Some(what) = crate::paths::credential_text(&arg.display)
        {
            a.raise(
                Severity::Critical,
                format!("reads {what} (`{}`)", arg.display),
            );
        }
        let Some(target) = path_candidate(arg, ctx.home()) else {
            continue;
        };
        if write_texts.contains(&target.display) || paths.iter().any(|p| p.text == target.display) {
            continue;
        }
        if verdict.metadata_only {
            paths.push(path_ref(&target, cwd.as_deref(), ctx, Access::Metadata));
        } else {
            let (r, j) = judge_read(&target, cwd.as_deref(), ctx);
            a.absorb(j);
            paths.push(r);
        }
    }
    if let Some(how) = &per_item
        && (verdict.destructive || a.severity >= Severity::Dangerous)
    {
        a.raise(
            Severity::Dangerous,
            format!("{how} runs `{base}` on every input item, which is not known until run time"),
        );
        let outside = paths.iter().any(|p| {
            p.access == Access::Write
                && matches!(
                    p.location,
                    crate::paths::Location::Outside | crate::paths::Location::Device
                )
        });
        if verdict.destructive && outside {
            a.raise(
                Severity::Critical,
                format!("{how} runs `{base}` on every file of a tree outside the workspace"),
            );
        }
    }
    for (s, r) in &w.frame.imposed {
        a.raise(*s, r.clone());
    }

    w.record_writes(&base, &argv, &paths, &redirects, &inv.stdin);
    let text = join_text(&argv);
    let mut wrapped_by = w.frame.texts.clone();
    wrapped_by.extend(wrappers.iter().cloned());
    let command = SimpleCommand {
        program: name_value,
        args: argv.iter().skip(1).map(|w| w.display.clone()).collect(),
        text: text.clone(),
        source: inv.source.clone(),
        wrapped_by: wrapped_by.clone(),
        severity: a.severity,
        reasons: a.reasons,
        redirects,
        paths,
        destructive: verdict.destructive,
        downloads: verdict.downloads,
    };
    if !verdict.transparent || command.severity > Severity::Safe {
        w.out.commands.push(command);
    }

    for inner in verdict.inner {
        let mut frame = w.frame.clone();
        frame.texts = wrapped_by.clone();
        frame.texts.push(text.clone());
        frame.imposed.extend(imposed.iter().cloned());
        frame.per_item = per_item.clone();
        let mut inner_scope = scope.clone();
        inner_scope.cwd = cwd.clone();
        match inner {
            Inner::Script(script) => {
                analyze_script(ctx, &script, &mut inner_scope, w.depth + 1, frame, w.out);
            }
            Inner::Argv {
                argv: inner_argv,
                per_item: how,
            } => {
                if inner_argv.is_empty() {
                    continue;
                }
                if let Some(how) = how {
                    frame.per_item = Some(how);
                }
                let saved = std::mem::replace(&mut w.frame, frame);
                let invocation = Invocation {
                    assigns: Vec::new(),
                    argv: inner_argv,
                    redirects: Vec::new(),
                    stdin: Stdin::Terminal,
                    source: inv.source.clone(),
                };
                dispatch(w, invocation, &mut inner_scope);
                w.frame = saved;
            }
        }
    }

    if matches!(base.as_str(), "cd" | "pushd" | "popd") {
        let target = argv
            .iter()
            .skip(1)
            .find(|a| !a.known().is_some_and(|v| v.starts_with('-') && v.len() > 1));
        scope.cwd = match (base.as_str(), target) {
            ("popd", _) => None,
            (_, None) => Some(ctx.home().to_string()),
            (_, Some(t)) => match t.known() {
                Some("-") | None => None,
                Some(dir) => resolve(dir, cwd.as_deref(), ctx),
            },
        };
    }
}
