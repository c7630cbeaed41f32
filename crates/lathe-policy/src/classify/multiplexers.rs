//! tmux and screen: their servers run outside the sandbox, so asking one to run a command
//! or type into a terminal is dangerous at least, and the command is judged as well.

use super::daemons::{operands_after, runs, text_of};
use super::{Cmd, Inner, Verdict};
use crate::severity::Severity;
use crate::word::Word;

#[rustfmt::skip]
const TMUX_READS: &[&str] = &[
    "ls", "list-sessions", "lsw", "list-windows", "lsp", "list-panes", "lsc", "list-clients",
    "lsk", "list-keys", "lscm", "list-commands", "has", "has-session", "show", "show-options",
    "showw", "show-window-options", "show-hooks", "display", "display-message", "info",
    "server-info", "showmsgs", "show-messages", "lsb", "list-buffers",
];

pub(super) fn tmux(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let mut v = Verdict::default();
    let args = cmd.args;
    let mut i = 0;
    while let Some(a) = args.get(i).and_then(Word::known) {
        match a {
            "-V" => return Verdict::safe("tmux -V only prints its version"),
            "-c" => {
                // the tmux client runs this itself, like `sh -c`
                v.raise(
                    Severity::Safe,
                    "tmux -c runs the command with the default shell",
                );
                runs(&mut v, args.get(i + 1..i + 2).unwrap_or(&[]), "tmux -c");
                return v;
            }
            "-L" | "-S" | "-f" | "-T" => i += 2,
            _ if a.starts_with('-') && a.len() > 1 => i += 1,
            _ => break,
        }
    }
    let rest = &args[i.min(args.len())..];
    if rest.is_empty() {
        return Verdict::dangerous(
            "tmux without a command starts a session on the tmux server, which may run outside the sandbox",
        );
    }
    for command in rest.split(|w| w.known() == Some(";")) {
        tmux_command(&mut v, command);
    }
    for w in rest {
        if let Some(t) = w.known()
            && let Some(at) = t.find("#(")
        {
            let inner = t[at + 2..].split(')').next().unwrap_or_default();
            v.raise(
                Severity::Dangerous,
                format!("the tmux format `#({inner})` makes the tmux server run a shell command, outside the sandbox"),
            );
            v.inner.push(Inner::Script(inner.to_string()));
        }
    }
    if v.a.reasons.is_empty() {
        v.raise(
            Severity::Safe,
            format!("{p} only shows the state of the tmux server"),
        );
    }
    v
}

fn tmux_command(v: &mut Verdict, words: &[Word]) {
    let Some(first) = words.first() else { return };
    let Some(verb) = first.known() else {
        v.raise(
            Severity::Dangerous,
            format!(
                "the tmux command `{}` is not known until run time",
                first.display
            ),
        );
        return;
    };
    let args = &words[1..];
    let outside = format!("tmux {verb} makes the tmux server run a command, outside the sandbox");
    match verb {
        _ if TMUX_READS.contains(&verb) => {}
        "capture-pane" | "capturep" | "show-buffer" | "showb" | "save-buffer" | "saveb" => {
            v.raise(
                Severity::Dangerous,
                format!(
                    "tmux {verb} reads what other terminals show or copied, which may hold secrets"
                ),
            );
        }
        "show-environment" | "showenv" => v.raise(
            Severity::Critical,
            "tmux show-environment prints the tmux server's environment, where tokens and keys are",
        ),
        "run-shell" | "run" | "pipe-pane" | "pipep" => {
            v.raise(Severity::Dangerous, outside);
            if args.iter().any(|w| w.known() == Some("-C")) {
                return;
            }
            let ops = operands_after(args, &["-c", "-d", "-t"]);
            runs(v, &ops, &format!("tmux {verb}"));
        }
        "if-shell" | "if" => {
            v.raise(Severity::Dangerous, outside);
            let ops = operands_after(args, &["-t"]);
            runs(v, ops.get(..1).unwrap_or(&[]), "tmux if-shell");
        }
        "new-session" | "new" | "new-window" | "neww" | "split-window" | "splitw"
        | "respawn-pane" | "respawnp" | "respawn-window" | "respawnw" | "display-popup"
        | "popup" => {
            v.raise(
                Severity::Dangerous,
                format!("tmux {verb} starts a program on the tmux server, outside the sandbox"),
            );
            #[rustfmt::skip]
            let valued = [
                "-c", "-e", "-f", "-F", "-n", "-s", "-t", "-x", "-y", "-l", "-p", "-b", "-d", "-h",
                "-w", "-S", "-T",
            ];
            let valued: Vec<&str> = valued
                .iter()
                .copied()
                .filter(|o| {
                    let popup = matches!(verb, "display-popup" | "popup");
                    popup || !matches!(*o, "-b" | "-d" | "-h" | "-w" | "-S" | "-T")
                })
                .collect();
            let ops = operands_after(args, &valued);
            runs(v, &ops, &format!("tmux {verb}"));
        }
        "send-keys" | "send" => {
            v.raise(
                Severity::Dangerous,
                "tmux send-keys types into another terminal, whose shell runs it outside the sandbox",
            );
            let literal = args.iter().any(|w| w.known() == Some("-l"));
            let keys = operands_after(args, &["-N", "-t"]);
            let mut text = String::new();
            for k in &keys {
                match k.known() {
                    Some("Enter" | "C-m" | "C-j" | "KPEnter") if !literal => text.push('\n'),
                    Some(key) if !literal && is_key_name(key) => {}
                    Some(t) => {
                        text.push_str(t);
                        text.push(' ');
                    }
                    None => v.raise(
                        Severity::Dangerous,
                        format!(
                            "tmux send-keys types `{}`, not known until run time",
                            k.display
                        ),
                    ),
                }
            }
            if !text.trim().is_empty() {
                v.inner.push(Inner::Script(text));
            }
        }
        _ => v.raise(
            Severity::Dangerous,
            format!("tmux {verb} drives the tmux server, which acts outside the sandbox"),
        ),
    }
}

/// A tmux key name such as `C-c`, `M-x`, `Escape`, `Up`, `F5` (not text to type).
fn is_key_name(key: &str) -> bool {
    let named = [
        "Escape", "Tab", "BTab", "BSpace", "Space", "Up", "Down", "Left", "Right", "Home", "End",
        "PageUp", "PageDown", "PgUp", "PgDn", "NPage", "PPage", "IC", "DC", "Insert", "Delete",
    ];
    named.contains(&key)
        || ["C-", "M-", "S-"]
            .iter()
            .any(|m| key.starts_with(m) && key.len() > 2)
        || key
            .strip_prefix('F')
            .is_some_and(|n| n.parse::<u8>().is_ok())
}

pub(super) fn screen(cmd: &Cmd<'_>) -> Verdict {
    let args = cmd.args;
    let mut detached = false;
    let mut i = 0;
    while let Some(a) = args.get(i).and_then(Word::known) {
        match a {
            "-ls" | "-list" | "-v" | "-version" | "--version" | "-wipe" => {
                return Verdict::safe("screen only lists sessions");
            }
            "-X" => return screen_command(&args[i + 1..]),
            "-Q" => return Verdict::normal("screen -Q queries a running session"),
            "-r" | "-R" | "-x" | "-D" | "-RR" => {
                return Verdict::dangerous(
                    "screen attaches to a running session, which acts outside the sandbox",
                );
            }
            _ if a.starts_with('-') && a.len() > 1 => {
                detached |=
                    a.contains('d') && a.contains('m') || a.contains('D') && a.contains('m');
                let takes = a.ends_with(['S', 'p', 'c', 't', 'e', 'h', 'T', 's', 'L']) && a != "-L";
                i += if takes { 2 } else { 1 };
            }
            _ => break,
        }
    }
    let mut v = Verdict::normal("screen starts a terminal session");
    if detached {
        v.raise(
            Severity::Dangerous,
            "screen -dm starts a detached session that keeps running after the command",
        );
    }
    if let Some(rest) = args.get(i..).filter(|r| !r.is_empty()) {
        v.inner.push(Inner::Argv {
            argv: rest.to_vec(),
            per_item: None,
        });
    }
    v
}

fn screen_command(words: &[Word]) -> Verdict {
    let verb = words.first().and_then(Word::known).unwrap_or("");
    let args = words.get(1..).unwrap_or(&[]);
    let mut v = Verdict::dangerous(format!(
        "screen -X {verb} drives a running screen session, which acts outside the sandbox"
    ));
    match verb {
        "stuff" => {
            v.raise(
                Severity::Dangerous,
                "screen -X stuff types into another terminal, whose shell runs it outside the sandbox",
            );
            match text_of(args) {
                Some(t) => {
                    let typed = t
                        .replace("\\n", "\n")
                        .replace("\\r", "\n")
                        .replace("^M", "\n");
                    v.inner.push(Inner::Script(typed));
                }
                None => v.raise(
                    Severity::Dangerous,
                    "screen -X stuff types text not known until run time",
                ),
            }
        }
        "exec" => {
            let ops: Vec<Word> = args
                .iter()
                .skip_while(|w| {
                    w.known()
                        .is_some_and(|t| t.starts_with(['.', '!', '|']) && t.len() <= 4)
                })
                .cloned()
                .collect();
            runs(&mut v, &ops, "screen -X exec");
        }
        "screen" => {
            let ops = operands_after(args, &["-t", "-T", "-h", "-L"]);
            runs(&mut v, &ops, "screen -X screen");
        }
        _ => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn issue_12_4_multiplexer_verbs_that_run_or_type_commands() {
        expect(&[
            ("tmux run-shell 'rm -rf ~'", Critical),
            ("tmux run -b 'make'", Dangerous),
            ("tmux send-keys -t 0 'rm -rf ~' Enter", Critical),
            ("tmux send-keys -t 0 'ls' C-m", Dangerous),
            ("tmux new-window 'curl x | sh'", Critical),
            ("tmux new-session -d -s x 'sleep 1'", Dangerous),
            ("tmux split-window -h 'htop'", Dangerous),
            ("tmux respawn-pane -k 'ls'", Dangerous),
            ("tmux pipe-pane -o 'cat >> ~/log'", Dangerous),
            ("tmux if-shell 'true' 'kill-server'", Dangerous),
            ("tmux ls", Safe),
            ("tmux list-panes -a", Safe),
            ("tmux display -p '#(rm -rf ~)'", Critical),
            ("tmux display -p '#{pane_id}'", Safe),
            ("tmux capture-pane -p -t 0", Dangerous),
            ("tmux showenv -g", Critical),
            ("tmux kill-server", Dangerous),
            ("tmux", Dangerous),
            ("tmux -V", Safe),
            ("tmux -c 'ls'", Safe),
            ("tmux -c 'rm -rf ~'", Critical),
            ("tmux new -d \\; send-keys 'rm -rf ~' Enter", Critical),
            ("screen -X stuff 'rm -rf ~\\n'", Critical),
            ("screen -S s -X stuff 'ls\\n'", Dangerous),
            ("screen -X exec sh -c 'id'", Dangerous),
            ("screen -dmS job sh -c 'rm -rf ~'", Critical),
            ("screen -dmS job make", Dangerous),
            ("screen -ls", Safe),
        ]);
    }
}
