//! Language interpreters: inline programs (`python -c`, `node -e`, `perl -e`) are not
//! analysed and so are dangerous; scripts from the workspace are normal.

use super::exec::script_file;
use super::{Cmd, Verdict};
use crate::severity::Severity;

/// The option that makes an interpreter run code from the command line.
fn inline_flag(lang: &str, arg: &str) -> bool {
    match lang {
        "python" => {
            arg == "-c"
                || (arg.starts_with('-')
                    && !arg.starts_with("--")
                    && arg.ends_with('c')
                    && arg[1..]
                        .chars()
                        .all(|c| "bBdEiIOqsSuvx".contains(c) || c == 'c'))
        }
        "node" => {
            matches!(arg, "-e" | "--eval" | "-p" | "--print")
                || arg.starts_with("--eval=")
                || arg.starts_with("--print=")
        }
        "bun" => matches!(arg, "-e" | "--eval" | "-p" | "--print"),
        "perl" | "ruby" => {
            // in a short cluster, letters up to a value-taking one are flags; `e` runs code
            arg.starts_with('-') && !arg.starts_with("--") && {
                let mut inline = false;
                for c in arg[1..].chars() {
                    match c {
                        'e' | 'E' => {
                            inline = true;
                            break;
                        }
                        'I' | 'M' | 'm' | 'x' | 'i' | 'C' | 'F' | '0' | 'r' => break,
                        c if c.is_ascii_alphabetic() => {}
                        _ => break,
                    }
                }
                inline
            }
        }
        "php" => matches!(arg, "-r" | "-R" | "-B" | "-E"),
        "lua" | "rscript" | "osascript" => arg == "-e",
        "julia" => matches!(arg, "-e" | "--eval" | "-E" | "--print"),
        "pwsh" => {
            let a = arg.to_ascii_lowercase();
            matches!(
                a.as_str(),
                "-c" | "-command" | "-e" | "-ec" | "-encodedcommand" | "/c"
            )
        }
        "tclsh" | "deno" | "java" => false,
        _ => false,
    }
}

pub(super) fn language(p: &str) -> Option<&'static str> {
    let trimmed = p.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    Some(match trimmed {
        "python" | "pypy" | "py" => "python",
        "node" | "nodejs" => "node",
        "bun" => "bun",
        "deno" => "deno",
        "perl" => "perl",
        "ruby" | "jruby" => "ruby",
        "php" => "php",
        "lua" | "luajit" => "lua",
        "rscript" | "r" => "rscript",
        "julia" => "julia",
        "osascript" => "osascript",
        "pwsh" | "powershell" | "powershell.exe" => "pwsh",
        "tclsh" | "wish" => "tclsh",
        "java" | "jshell" | "groovy" | "kotlin" | "scala" | "elixir" | "erl" | "guile"
        | "racket" | "sbcl" | "ghci" | "runghc" | "swift" => "java",
        _ => return None,
    })
}

pub(super) fn interpreter(cmd: &Cmd<'_>, lang: &str) -> Verdict {
    let p = cmd.program;
    if cmd.args.len() == 1
        && matches!(
            cmd.arg(0),
            Some("--version" | "-V" | "-v" | "version" | "--help" | "-h")
        )
    {
        return Verdict::safe(format!("{p} only prints its version or help"));
    }
    let mut i = 0;
    while let Some(w) = cmd.args.get(i) {
        let Some(a) = w.known() else { break };
        if inline_flag(lang, a) {
            let mut v = Verdict::dangerous(format!(
                "runs an inline {p} program ({a}); what it does is not analysed"
            ));
            if cmd.args.get(i + 1).is_some_and(|c| c.from_download) {
                v.raise(
                    Severity::Critical,
                    format!("{p} runs code downloaded from the network"),
                );
            }
            if lang == "pwsh" && a.to_ascii_lowercase().starts_with("-e") {
                v.raise(
                    Severity::Dangerous,
                    "the PowerShell command is encoded, which hides it",
                );
            }
            return v;
        }
        if lang == "python" && a == "-m" {
            return python_module(cmd, i + 1);
        }
        if lang == "deno" && i == 0 {
            return match a {
                "eval" => {
                    Verdict::dangerous("deno eval runs inline code; what it does is not analysed")
                }
                "install" | "upgrade" | "add" | "x" => {
                    Verdict::dangerous(format!("deno {a} installs packages"))
                }
                _ if cmd.args.iter().skip(1).any(|w| {
                    w.known().is_none_or(|v| {
                        ["http://", "https://", "npm:", "jsr:"]
                            .iter()
                            .any(|p| v.starts_with(p))
                    })
                }) =>
                {
                    Verdict::dangerous(format!(
                        "deno {a} downloads the program it runs from the network"
                    ))
                }
                _ => Verdict::normal(format!("deno {a} runs code from the workspace")),
            };
        }
        if lang == "bun" && i == 0 && !a.starts_with('-') {
            return match a {
                "x" | "create" | "c" => {
                    Verdict::dangerous(format!("bun {a} downloads and runs a package"))
                }
                "install" | "i" | "add" | "update" | "remove" | "upgrade" | "link" | "pm" => {
                    Verdict::dangerous(format!(
                        "bun {a} installs packages, which may run install scripts"
                    ))
                }
                "publish" => Verdict::dangerous("bun publish publishes a package"),
                _ => Verdict::normal(format!("bun {a} runs code from the workspace")),
            };
        }
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let takes_value = matches!(
            (lang, a),
            ("python", "-W" | "-X" | "-Q")
                | ("node", "-r" | "--require" | "--import" | "--loader")
                | ("perl" | "ruby", "-I" | "-r")
                | ("java", "-cp" | "-classpath" | "--class-path" | "-jar")
        );
        i += if takes_value { 2 } else { 1 };
    }
    script_file(cmd, cmd.args.get(i), p, "runs the program")
}

fn python_module(cmd: &Cmd<'_>, at: usize) -> Verdict {
    let Some(module) = cmd.arg(at) else {
        return Verdict::dangerous("python -m runs a module not known until run time");
    };
    let rest = Cmd {
        args: &cmd.args[at + 1..],
        program: "pip",
        ..*cmd
    };
    match module {
        "pip" | "pip3" => super::packages::pip(&rest),
        "json.tool" | "tokenize" | "pydoc" | "sysconfig" | "site" | "platform" | "tabnanny" => {
            Verdict::safe(format!("python -m {module} only reads"))
        }
        "http.server" | "SimpleHTTPServer" | "smtpd" => {
            Verdict::dangerous(format!("python -m {module} serves files over the network"))
        }
        "venv" | "virtualenv" => Verdict::normal("creates a virtual environment"),
        _ => Verdict::normal(format!("python -m {module} runs a module")),
    }
}
