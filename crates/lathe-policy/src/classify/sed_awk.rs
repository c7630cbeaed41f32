//! `sed` and `awk`: read-only filters unless the script writes files or runs commands.

use super::readonly::in_place;
use super::{Cmd, Verdict};
use crate::severity::Severity;
use crate::word::Word;

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    match cmd.program {
        "sed" | "gsed" => Some(sed(cmd)),
        "awk" | "gawk" | "mawk" | "nawk" => Some(awk(cmd)),
        _ => None,
    }
}

/// What a sed script does besides printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SedEffects {
    pub writes: Vec<String>,
    pub executes: bool,
    pub unreadable: bool,
}

fn sed(cmd: &Cmd<'_>) -> Verdict {
    let mut scripts: Vec<&Word> = Vec::new();
    let mut files: Vec<&Word> = Vec::new();
    let mut in_place_edit = false;
    let mut script_file = false;
    let mut i = 0;
    let mut only_operands = false;
    while let Some(w) = cmd.args.get(i) {
        i += 1;
        let v = w.known().unwrap_or("");
        if only_operands || !v.starts_with('-') || v == "-" || !w.is_known() {
            files.push(w);
            continue;
        }
        match v {
            "--" => only_operands = true,
            "-e" | "--expression" => {
                if let Some(s) = cmd.args.get(i) {
                    scripts.push(s);
                }
                i += 1;
            }
            "-f" | "--file" => {
                script_file = true;
                i += 1;
            }
            "-l" | "--line-length" => i += 1,
            _ if v.starts_with("--in-place") => in_place_edit = true,
            _ if v.starts_with("--expression=") || v.starts_with("--file=") => {
                script_file |= v.starts_with("--file=");
            }
            _ if v.starts_with("--") => {}
            _ => {
                let letters = &v[1..];
                // in a short cluster, `i` starts the in-place suffix and `e`/`f` take a value
                for (n, c) in letters.char_indices() {
                    match c {
                        'i' => {
                            in_place_edit = true;
                            break;
                        }
                        'e' | 'f' => {
                            script_file |= c == 'f';
                            if n + 1 == letters.len() {
                                if c == 'e'
                                    && let Some(s) = cmd.args.get(i)
                                {
                                    scripts.push(s);
                                }
                                i += 1;
                            }
                            break;
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    if scripts.is_empty() && !script_file && !files.is_empty() {
        scripts.push(files.remove(0));
    }
    let mut v = Verdict::safe("sed without -i only prints");
    if in_place_edit {
        v = in_place(cmd, &[]);
        v.writes = files.iter().map(|w| (*w).clone()).collect();
        v.a.reasons = vec!["sed -i edits files in place".to_string()];
    }
    if script_file {
        v.raise(
            Severity::Normal,
            "sed runs a script from a file, which is not analysed",
        );
    }
    for s in scripts {
        let Some(text) = s.known() else {
            v.raise(
                Severity::Normal,
                "the sed script is not known until run time",
            );
            continue;
        };
        let effects = sed_effects(text);
        if effects.executes {
            v.raise(
                Severity::Dangerous,
                "the sed script runs shell commands (`e`)",
            );
        }
        if effects.unreadable {
            v.raise(
                Severity::Normal,
                "the sed script could not be read completely",
            );
        }
        for w in effects.writes {
            v.raise(Severity::Normal, format!("the sed script writes `{w}`"));
            v.write(&Word::literal(&w));
        }
    }
    v
}

/// Reads a sed script far enough to find `w`, `W`, `e` commands and `s///w` / `s///e` flags.
pub(crate) fn sed_effects(script: &str) -> SedEffects {
    let chars: Vec<char> = script.chars().collect();
    let mut fx = SedEffects::default();
    let mut i = 0;
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
        chars[start..*i]
            .iter()
            .collect::<String>()
            .trim()
            .to_string()
    };
    let skip_delimited = |i: &mut usize, delim: char| -> bool {
        while *i < chars.len() {
            let c = chars[*i];
            *i += 1;
            if c == '\\' {
                *i += 1;
            } else if c == delim {
                return true;
            }
        }
        false
    };
    while i < chars.len() {
        let c = chars[i];
        // addresses: numbers, $, /regex/, \cregexc, ranges and steps
        match c {
            ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '~' | '+' | '$' => {
                i += 1;
                continue;
            }
            '0'..='9' => {
                i += 1;
                continue;
            }
            '/' => {
                i += 1;
                if !skip_delimited(&mut i, '/') {
                    fx.unreadable = true;
                }
                while i < chars.len() && (chars[i] == 'I' || chars[i] == 'M') {
                    i += 1;
                }
                continue;
            }
            '\\' => {
                let delim = chars.get(i + 1).copied().unwrap_or('\\');
                i += 2;
                if !skip_delimited(&mut i, delim) {
                    fx.unreadable = true;
                }
                continue;
            }
            _ => {}
        }
        i += 1;
        match c {
            '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z' | 'F' => {}
            'l' | 'L' | 'q' | 'Q' => {
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            '#' | ':' | 'b' | 't' | 'T' | 'v' => {
                while i < chars.len() && chars[i] != '\n' && chars[i] != ';' {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => loop {
                let line = rest_of_line(&mut i);
                if line.ends_with('\\') && i < chars.len() {
                    i += 1;
                    continue;
                }
                break;
            },
            'r' | 'R' => {
                rest_of_line(&mut i);
            }
            'w' | 'W' => {
                let file = rest_of_line(&mut i);
                if !matches!(file.as_str(), "/dev/stdout" | "/dev/stderr") {
                    fx.writes.push(file);
                }
            }
            'e' => {
                fx.executes = true;
                rest_of_line(&mut i);
            }
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    fx.unreadable = true;
                    break;
                };
                i += 1;
                if !(skip_delimited(&mut i, delim) && skip_delimited(&mut i, delim)) {
                    fx.unreadable = true;
                    break;
                }
                if c == 's' {
                    while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                        match chars[i] {
                            'w' => {
                                i += 1;
                                let file = rest_of_line(&mut i);
                                if !matches!(file.as_str(), "/dev/stdout" | "/dev/stderr") {
                                    fx.writes.push(file);
                                }
                                break;
                            }
                            'e' => {
                                fx.executes = true;
                                i += 1;
                            }
                            _ => i += 1,
                        }
                    }
                }
            }
            _ => {
                fx.unreadable = true;
                break;
            }
        }
    }
    fx
}

fn awk(cmd: &Cmd<'_>) -> Verdict {
    #[rustfmt::skip]
    let valued = [
        "-F", "-v", "-f", "--field-separator", "--assign", "--file", "-i", "--include", "-l",
        "--load",
    ];
    let mut v = Verdict::safe("awk only prints");
    let program_files = cmd.option_values(&["-f"], &["--file"]);
    let inplace = cmd
        .option_values(&["-i"], &["--include"])
        .iter()
        .any(|w| w.known().is_some_and(|x| x.starts_with("inplace")));
    let ops = cmd.operands(&valued);
    let files_from = if program_files.is_empty() { 1 } else { 0 };
    if !program_files.is_empty() {
        v.raise(
            Severity::Normal,
            "awk runs a program from a file, which is not analysed",
        );
    } else if let Some(program) = ops.first() {
        match program.known() {
            Some(text) => {
                let fx = awk_effects(text);
                if fx.executes {
                    v.raise(
                        Severity::Dangerous,
                        "the awk program runs shell commands (system() or a pipe)",
                    );
                }
                if fx.writes {
                    v.raise(
                        Severity::Normal,
                        "the awk program writes files (print > file)",
                    );
                }
            }
            None => v.raise(
                Severity::Dangerous,
                "the awk program is not known until run time",
            ),
        }
    }
    if inplace {
        v.raise(Severity::Normal, "gawk -i inplace edits files in place");
        v.destructive = true;
        for f in ops.iter().skip(files_from) {
            v.write(f);
        }
    }
    v
}

/// What an awk program does besides printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct AwkEffects {
    pub executes: bool,
    pub writes: bool,
}

/// Strips strings and regex literals, then looks for `system(`, pipes and `print > file`.
pub(crate) fn awk_effects(program: &str) -> AwkEffects {
    let mut code = String::new();
    let mut chars = program.chars().peekable();
    let mut prev_significant = ' ';
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == '"' {
                        break;
                    }
                }
                code.push_str("\"\"");
                prev_significant = '"';
            }
            // a slash starts a regex where an operand is expected
            '/' if matches!(
                prev_significant,
                ' ' | '(' | ',' | '~' | '!' | '{' | ';' | '&' | '|' | '\n'
            ) =>
            {
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == '/' {
                        break;
                    }
                }
                code.push_str("//");
                prev_significant = '/';
            }
            _ => {
                code.push(c);
                if !c.is_whitespace() {
                    prev_significant = c;
                }
            }
        }
    }
    let without_or = code.replace("||", " ");
    let executes = without_or.contains('|')
        || code
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .any(|t| t == "system");
    let writes = code.split([';', '{', '}', '\n']).any(|stmt| {
        let t = stmt.trim_start();
        (t.starts_with("print") || t.starts_with("printf")) && t.contains('>')
    });
    AwkEffects { executes, writes }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn sed_scripts() {
        assert_eq!(sed_effects("1,20p"), SedEffects::default());
        assert_eq!(sed_effects("s/a/b/g;/x/d"), SedEffects::default());
        assert_eq!(
            sed_effects("s/a/b/w out.txt").writes,
            vec!["out.txt".to_string()]
        );
        assert!(sed_effects("1e rm -rf /").executes);
        assert!(sed_effects("s/.*/id/e").executes);
        assert_eq!(
            sed_effects("/foo/w /tmp/x").writes,
            vec!["/tmp/x".to_string()]
        );
        assert!(sed_effects("s/a\\/b/c/").writes.is_empty());
        assert!(sed_effects("$!N;s/\\n/ /").writes.is_empty());
    }

    #[test]
    fn awk_programs() {
        assert_eq!(awk_effects("{print $1}"), AwkEffects::default());
        assert_eq!(awk_effects("/a|b/ {print}"), AwkEffects::default());
        assert_eq!(
            awk_effects("$1 > 5 || $2 < 3 {print \"a|b\"}"),
            AwkEffects::default()
        );
        assert!(awk_effects("{system(\"rm \" $1)}").executes);
        assert!(awk_effects("{print | \"sh\"}").executes);
        assert!(awk_effects("{\"date\" | getline d}").executes);
        assert!(awk_effects("{print $1 > \"out\"}").writes);
    }

    #[test]
    fn sed_and_awk_commands() {
        expect(&[
            ("sed -n 1,20p file.txt", Safe),
            ("sed 's/foo/bar/g' file.txt", Safe),
            ("sed -n '/start/,/end/p' f", Safe),
            ("sed -i 's/a/b/' src/main.rs", Normal),
            ("sed -i.bak 's/a/b/' src/main.rs", Normal),
            ("sed -ie 's/a/b/' f", Normal),
            ("sed -i 's/a/b/' ~/.bashrc", Dangerous),
            ("sed 's/x/y/w /etc/passwd' f", Critical),
            ("sed '1e id' f", Dangerous),
            ("awk '{print $1}' f.txt", Safe),
            ("awk -F: '{print $1}' /etc/passwd", Safe),
            ("awk 'BEGIN{system(\"rm -rf /\")}'", Dangerous),
            ("awk '{print > \"out.txt\"}' f", Normal),
        ]);
    }
}
