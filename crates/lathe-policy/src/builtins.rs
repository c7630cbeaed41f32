//! Builtins that run text as code or take variable names from strings (`let`, `read`,
//! `printf -v`, `test -v`, `mapfile -C`, `compgen -C/-F/-W`, `complete`, `bind -x`, `fc`,
//! `enable -f`, `hash -p`, `declare` reached through `builtin`/`command`), and programs that run
//! a file the same command line wrote.

use crate::hidden::{is_name, short};
use crate::paths::resolve;
use crate::walk::{Scope, Stdin, Walker};
use crate::word::Word;

/// Options and operands of a builtin: `valued` letters take a value (`-p PROMPT`, `-pPROMPT`).
struct Parsed<'w> {
    flags: Vec<char>,
    values: Vec<(char, Word)>,
    operands: Vec<&'w Word>,
}

fn parse<'w>(args: &'w [Word], valued: &str) -> Parsed<'w> {
    let mut p = Parsed {
        flags: Vec::new(),
        values: Vec::new(),
        operands: Vec::new(),
    };
    let mut i = 0;
    let mut options = true;
    while let Some(w) = args.get(i) {
        i += 1;
        let v = w.known().unwrap_or("");
        if !options || !(v.starts_with('-') || v.starts_with('+')) || v.len() < 2 {
            options = false;
            p.operands.push(w);
            continue;
        }
        if v == "--" {
            options = false;
            continue;
        }
        for (at, c) in v.char_indices().skip(1) {
            if valued.contains(c) {
                let rest = &v[at + c.len_utf8()..];
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned().unwrap_or_default()
                } else {
                    Word::literal(rest)
                };
                p.values.push((c, value));
                break;
            }
            p.flags.push(c);
        }
    }
    p
}

impl Parsed<'_> {
    fn value(&self, c: char) -> impl Iterator<Item = &Word> {
        self.values
            .iter()
            .filter(move |(k, _)| *k == c)
            .map(|(_, w)| w)
    }
}

/// Shells that run a script file as shell code (so a script written in the same line can be
/// analysed).
const SH: &[&str] = &[
    "sh", "bash", "dash", "ksh", "zsh", "ash", "mksh", "rbash", "yash", "posh", "source", ".",
];

/// Checks one builtin or program invocation (wrappers removed; `argv[0]` is the program).
pub(crate) fn check(
    w: &mut Walker<'_>,
    base: &str,
    argv: &[Word],
    scope: &mut Scope,
    cwd: Option<&str>,
    stdin: &Stdin,
) {
    let args = argv.get(1..).unwrap_or(&[]);
    let cmd = format!("`{}`", short(&text_of(argv)));
    match base {
        "let" => {
            for a in args {
                w.arith_word(a, scope, &cmd);
            }
        }
        "read" => {
            let p = parse(args, "adinNptu");
            let mut names: Vec<Word> = p.value('a').cloned().collect();
            names.extend(p.operands.iter().map(|w| (*w).clone()));
            for n in &names {
                w.name_word(n, scope, &cmd);
            }
            for n in names.iter().filter_map(Word::known) {
                w.taint(n, scope);
            }
            if names.is_empty() {
                w.taint("REPLY", scope);
            }
        }
        "mapfile" | "readarray" => {
            let p = parse(args, "dnOsuCc");
            for callback in p.value('C') {
                script_or_unseen(w, callback, scope, &format!("the callback of {cmd}"));
            }
            for n in &p.operands {
                w.name_word(n, scope, &cmd);
            }
            let name = p
                .operands
                .first()
                .and_then(|n| n.known())
                .unwrap_or("MAPFILE");
            w.taint(name, scope);
        }
        "printf" => {
            let p = parse(args, "v");
            for n in p.value('v') {
                w.name_word(n, scope, &cmd);
                if let Some(v) = n.known() {
                    w.taint(v, scope);
                }
            }
        }
        "getopts" => {
            if let Some(n) = args.get(1) {
                w.name_word(n, scope, &cmd);
                if let Some(v) = n.known() {
                    w.taint(v, scope);
                }
            }
            w.taint("OPTARG", scope);
        }
        "wait" => {
            let p = parse(args, "p");
            for n in p.value('p') {
                w.name_word(n, scope, &cmd);
                if let Some(v) = n.known() {
                    w.taint(v, scope);
                }
            }
        }
        "test" | "[" => {
            for pair in args.windows(2) {
                if matches!(pair[0].known(), Some("-v" | "-R")) {
                    w.name_word(&pair[1], scope, &cmd);
                }
            }
        }
        "compgen" | "complete" => {
            let p = parse(args, "oAGWFCXPSV");
            for c in p.value('C') {
                script_or_unseen(w, c, scope, &format!("the command of {cmd}"));
            }
            for f in p.value('F') {
                match f.known() {
                    Some(name) if scope.functions.contains(name) => {}
                    _ => w.unseen(format!(
                        "{cmd} calls the function `{}`, which this command line does not define",
                        f.display
                    )),
                }
            }
            for list in p.value('W') {
                match list.known() {
                    // the word list is expanded again: `$(...)` in it runs
                    Some(v) => w.nested_words(v, scope, &format!("the word list of {cmd}")),
                    None => w.unseen(format!(
                        "{cmd} expands the word list `{}`, which is not known until run time",
                        list.display
                    )),
                }
            }
            for n in p.value('V') {
                w.name_word(n, scope, &cmd);
            }
        }
        "bind" => {
            let p = parse(args, "mqurfxX");
            for binding in p.value('x') {
                match binding.known() {
                    Some(v) => {
                        let command = v.split_once(':').map_or(v, |(_, c)| c).trim();
                        let command = command
                            .strip_prefix('"')
                            .and_then(|c| c.strip_suffix('"'))
                            .unwrap_or(command);
                        w.nested_script(command, scope, &format!("the key binding of {cmd}"));
                    }
                    None => w.unseen(format!(
                        "{cmd} binds a key to `{}`, which is not known until run time",
                        binding.display
                    )),
                }
            }
        }
        "fc" => {
            let p = parse(args, "e");
            if p.values.iter().any(|(c, _)| *c == 'e') || p.flags.contains(&'s') {
                w.unseen(format!("{cmd} runs commands again from the shell history"));
            }
        }
        "enable" => {
            let p = parse(args, "fd");
            if p.values.iter().any(|(c, _)| *c == 'f') {
                w.unseen(format!(
                    "{cmd} loads a shared library into the shell, which runs its code"
                ));
            }
        }
        "hash" => {
            let p = parse(args, "pd");
            for path in p.value('p') {
                w.unseen(format!(
                    "{cmd} makes a command name run `{}` from now on",
                    path.display
                ));
            }
        }
        "declare" | "typeset" | "local" | "export" | "readonly" => {
            let mut flags = String::new();
            for a in args {
                declare_word(w, a, &mut flags, scope, &cmd);
            }
        }
        "unset" => {
            for a in args
                .iter()
                .filter(|a| !a.known().is_some_and(|v| v.starts_with('-')))
            {
                w.name_word(a, scope, &cmd);
            }
        }
        _ => {}
    }
    runs_written(w, base, argv, cwd, stdin, scope);
}

fn text_of(argv: &[Word]) -> String {
    argv.iter()
        .map(|w| w.display.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A callback or command string: analysed when literal, otherwise code the analysis cannot see.
fn script_or_unseen(w: &mut Walker<'_>, text: &Word, scope: &Scope, why: &str) {
    match text.known() {
        Some(v) => w.nested_script(v, scope, why),
        None => w.unseen(format!(
            "{why} is `{}`, which is not known until run time",
            text.display
        )),
    }
}

/// One flag or `NAME[=VALUE]` word of `declare`/`local`/`typeset`/`export`/`readonly` given as
/// a string: `-i` makes values arithmetic, `-n` makes them names, `-A` makes subscripts strings;
/// a subscript in a name is evaluated.
pub(crate) fn declare_word(
    w: &mut Walker<'_>,
    word: &Word,
    flags: &mut String,
    scope: &mut Scope,
    what: &str,
) {
    let Some(v) = word.known() else {
        // `export "NAME=$value"`: the name is known, the value is not
        let lhs = word
            .display
            .split_once('=')
            .map(|(n, _)| n.trim_end_matches('+'));
        match lhs {
            Some(name) if is_name(name) => {
                declared(name, flags, scope);
                let value = Word {
                    value: None,
                    ..word.clone()
                };
                declared_value(w, name, &value, flags, scope, what);
            }
            _ => w.name_word(word, scope, what),
        }
        return;
    };
    if (v.starts_with('-') || v.starts_with('+')) && v.len() > 1 && !v.contains('=') {
        if let Some(f) = v.strip_prefix('-') {
            flags.push_str(f);
        }
        return;
    }
    let (name, value) = match v.split_once('=') {
        Some((n, value)) => (n.trim_end_matches('+'), Some(value)),
        None => (v, None),
    };
    declared(name, flags, scope);
    w.name_text(name, scope, what);
    if let Some(value) = value {
        let value = Word::literal(value);
        declared_value(w, name, &value, flags, scope, what);
    }
}

/// Remembers the attributes a declaration gives a name.
pub(crate) fn declared(name: &str, flags: &str, scope: &mut Scope) {
    let base = name.split('[').next().unwrap_or(name);
    if !is_name(base) {
        return;
    }
    if flags.contains('i') {
        scope.integers.insert(base.to_string());
    }
    if flags.contains('A') {
        scope.assoc.insert(base.to_string());
    }
    if flags.contains('n') {
        scope.namerefs.insert(base.to_string());
    }
}

/// Checks the value a declaration assigns: `-n` takes it as a name.
pub(crate) fn declared_value(
    w: &mut Walker<'_>,
    name: &str,
    value: &Word,
    flags: &str,
    scope: &mut Scope,
    what: &str,
) {
    // `declare -a 'x=([$(cmd)]=1)'`: a compound value in a string is parsed and expanded again
    if let Some(v) = value.known().filter(|v| v.starts_with('(')) {
        let base = name.split('[').next().unwrap_or(name);
        if flags.contains('A') || scope.assoc.contains(base) {
            w.nested_words(v.trim_start_matches('(').trim_end_matches(')'), scope, what);
        } else {
            w.arith_value(v, scope, what);
        }
    }
    w.assigned(name, value, scope);
    scope
        .vars
        .insert(name.to_string(), crate::walk::capped(value));
}

/// A program that runs a file this same command line wrote: a shell script whose text is known
/// is analysed; anything else is code the analysis cannot see.
fn runs_written(
    w: &mut Walker<'_>,
    base: &str,
    argv: &[Word],
    cwd: Option<&str>,
    stdin: &Stdin,
    scope: &Scope,
) {
    let program = argv.first().and_then(Word::known).unwrap_or("");
    let shell = SH.contains(&base);
    let mut files: Vec<(String, bool)> = Vec::new();
    if program.contains('/') {
        files.push((program.to_string(), true));
    }
    if shell || crate::classify::runs_code(base) {
        let operand = script_operand(&argv[1..], shell).or_else(|| match stdin {
            Stdin::File(f) if shell => f.known().map(str::to_string),
            _ => None,
        });
        files.extend(operand.map(|f| (f, shell)));
    }
    // recipes are shell commands: a makefile or justfile the line writes is a script it runs
    if matches!(base, "make" | "gmake" | "just") {
        let p = parse(&argv[1..], "fCIoWj");
        let dir = p
            .value('C')
            .next()
            .and_then(Word::known)
            .map(str::to_string);
        let named: Vec<String> = p
            .value('f')
            .filter_map(Word::known)
            .map(str::to_string)
            .collect();
        let defaults: &[&str] = if base == "just" {
            &["justfile", "Justfile", ".justfile"]
        } else {
            &["GNUmakefile", "makefile", "Makefile"]
        };
        let names = if named.is_empty() {
            defaults.iter().map(|d| d.to_string()).collect()
        } else {
            named
        };
        for name in names {
            let file = match &dir {
                Some(d) if !name.starts_with('/') => format!("{d}/{name}"),
                _ => name,
            };
            files.push((file, false));
        }
    }
    for (file, shell) in files {
        let Some(path) = resolve(&file, cwd, w.ctx) else {
            continue;
        };
        let descriptor =
            path.starts_with("/dev/fd/") || (path.starts_with("/proc/") && path.contains("/fd/"));
        if descriptor {
            w.unseen(format!(
                "`{}` runs the script open on `{file}`, which is not known until run time",
                short(&text_of(argv))
            ));
            continue;
        }
        if let Some(text) = w.written(&path) {
            run_written(w, argv, &file, text, shell, scope);
        }
    }
}

fn run_written(
    w: &mut Walker<'_>,
    argv: &[Word],
    file: &str,
    text: Option<String>,
    shell: bool,
    scope: &Scope,
) {
    let first = text.as_deref().and_then(|t| t.lines().next()).unwrap_or("");
    let shebang_shell = !first.starts_with("#!")
        || SH
            .iter()
            .any(|s| first.ends_with(&format!("/{s}")) || first.ends_with(&format!(" {s}")));
    match text {
        Some(t) if shell && shebang_shell => w.nested_script(
            &t,
            scope,
            &format!("`{file}`, which this command line writes"),
        ),
        _ => w.unseen(format!(
            "`{}` runs `{file}`, which this same command line writes; what it runs is not \
             known until run time ({UNSEEN_HINT})",
            short(&text_of(argv))
        )),
    }
}

const UNSEEN_HINT: &str = "run the script in a command of its own after writing it";

/// The script file operand of a shell or interpreter: the first operand, unless `-c` (for an
/// interpreter also `-e` or `-m`) gives the code instead.
fn script_operand(args: &[Word], shell: bool) -> Option<String> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        let v = a.known()?;
        i += 1;
        if v == "--" {
            return args.get(i).and_then(Word::known).map(str::to_string);
        }
        if matches!(v, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 1;
            continue;
        }
        if v.starts_with('-') || (v.starts_with('+') && shell) {
            let code = if shell { "c" } else { "cem" };
            if !v.starts_with("--") && v.contains(|c| code.contains(c)) {
                return None;
            }
            continue;
        }
        return Some(v.to_string());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_operands() {
        let args: Vec<Word> = ["-rp", "prompt:", "-a", "arr", "x"]
            .iter()
            .map(|s| Word::literal(s))
            .collect();
        let p = parse(&args, "adinNptu");
        assert_eq!(p.flags, vec!['r']);
        let values: Vec<_> = p
            .values
            .iter()
            .map(|(c, w)| (*c, w.display.as_str()))
            .collect();
        assert_eq!(values, vec![('p', "prompt:"), ('a', "arr")]);
        assert_eq!(p.operands.len(), 1);
        let s: Vec<Word> = ["-x", "--", "f.sh"]
            .iter()
            .map(|s| Word::literal(s))
            .collect();
        assert_eq!(script_operand(&s, true).as_deref(), Some("f.sh"));
        let c: Vec<Word> = ["-xc", "f.sh"].iter().map(|s| Word::literal(s)).collect();
        assert_eq!(script_operand(&c, true), None);
    }
}
