//! The names a search selects, as a shell glob: `find -name`, `fd PATTERN`/`-g`/`-e`,
//! `grep --include`, `rg -g`. A command run on each match (`find -exec cat {} +`) then reads
//! a path like `./**/.env`, which the sensitive-path check compares with its patterns.
//!
//! A search without a name filter (`find . -type f -exec cat {} +`, `rg TOKEN`) walks the
//! tree and is knowingly not judged by what it may find.

use super::Cmd;
use crate::word::Word;

/// A glob that stands for a match of the search: `START/**/NAME`, shown as `shown`.
pub(super) fn match_word(shown: &str, start: &str, names: &[String]) -> Word {
    let s = start.trim_end_matches('/');
    let mut globs: Vec<String> = Vec::new();
    for name in names {
        if name.starts_with('/') {
            globs.push(name.clone());
            continue;
        }
        globs.push(format!("{s}/**/{name}"));
        // searches also walk into hidden directories (`.git/config`), which `**` in bash
        // does not: followed for a literal name only (`*.rs` there would match anything)
        if !name.contains(['*', '?', '[']) {
            globs.push(format!("{s}/.*/**/{name}"));
            globs.push(format!("{s}/**/.*/**/{name}"));
        }
    }
    // one path with braces in its last part, so that it resolves like any other
    let prefix = common_dir(&globs);
    let glob = match globs.as_slice() {
        [one] => one.clone(),
        _ => {
            let rest: Vec<&str> = globs.iter().map(|g| &g[prefix.len()..]).collect();
            format!("{prefix}{{{}}}", rest.join(","))
        }
    };
    let mut w = Word::literal(&glob);
    w.glob = true;
    w.brace = globs.len() > 1;
    w.display = shown.to_string();
    w
}

/// The longest directory prefix (ending in `/`) all of `globs` share, without wildcards.
fn common_dir(globs: &[String]) -> String {
    let first = globs.first().map(String::as_str).unwrap_or("");
    let mut end = 0;
    for (i, c) in first.char_indices() {
        if matches!(c, '*' | '?' | '[' | '{' | '\\') {
            break;
        }
        let same = |g: &String| g.as_bytes().get(..=i) == first.as_bytes().get(..=i);
        if c == '/' && globs.iter().all(same) {
            end = i + 1;
        }
    }
    first[..end].to_string()
}

/// A filter that lets every name through (`-name '*'`, `fd .`): the search is a walk over
/// the whole tree, like one without a filter.
fn everything(pattern: &str) -> bool {
    pattern.chars().all(|c| c == '*' || c == '?')
}

/// find and fd match names that start with a dot with their wildcards, which bash does not:
/// `*` in `-name '*'` also stands for `.env`.
fn with_dot_names(pattern: &str) -> Vec<String> {
    let mut out = vec![pattern.to_string()];
    let rest = match pattern.chars().next() {
        Some('*') => Some(pattern),
        Some('?') => Some(&pattern[1..]),
        Some('[') => pattern.find(']').map(|i| &pattern[i + 1..]),
        _ => None,
    };
    if let Some(r) = rest {
        out.push(format!(".{r}"));
    }
    out
}

/// The `-name`/`-iname`/`-path` filters of a `find` that are not negated; `None` when there
/// are none (or one is not known until run time, which could be anything).
pub(super) fn find_names(cmd: &Cmd<'_>, start: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut i = 0;
    while let Some(w) = cmd.args.get(i) {
        let opt = w.known().unwrap_or("");
        let negated = i > 0 && matches!(cmd.arg(i - 1), Some("!" | "-not"));
        if matches!(opt, "-exec" | "-execdir" | "-ok" | "-okdir") {
            break;
        }
        match opt {
            "-name" | "-iname" if !negated => match cmd.args.get(i + 1).and_then(Word::known) {
                Some(p) if everything(p) => {}
                // the sensitive patterns are lowercase: `-iname .ENV` finds `.env`
                Some(p) if opt == "-iname" => names.extend(with_dot_names(&p.to_lowercase())),
                Some(p) => names.extend(with_dot_names(p)),
                None => names.push("*".into()),
            },
            "-path" | "-ipath" | "-wholename" | "-iwholename" if !negated => {
                // find's `*` crosses `/` here: `**` does in a glob
                match cmd.args.get(i + 1).and_then(Word::known) {
                    Some(p) if everything(p.trim_start_matches("./")) => {}
                    Some(p) => {
                        let p = if opt.starts_with("-i") {
                            p.to_lowercase()
                        } else {
                            p.to_string()
                        };
                        let crossing = p.replace("**", "*").replace('*', "**");
                        let rel = crossing.trim_start_matches("./");
                        names.push(match p.starts_with('/') {
                            true => crossing.clone(),
                            false => format!("{}/{rel}", start.trim_end_matches('/'))
                                .trim_start_matches("./")
                                .to_string(),
                        });
                    }
                    None => names.push("*".into()),
                }
            }
            _ => {}
        }
        i += 1;
    }
    (!names.is_empty()).then_some(names)
}

/// A simple regular expression (fd's default pattern) as a glob over names; `*` when it
/// uses something this does not follow.
fn regex_glob(re: &str) -> String {
    let start = re.starts_with('^');
    let end = re.ends_with('$') && !re.ends_with("\\$");
    let body = re.trim_start_matches('^');
    let body = if end { &body[..body.len() - 1] } else { body };
    let mut out = String::from(if start { "" } else { "*" });
    let cs: Vec<char> = body.chars().collect();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        let next = cs.get(i + 1).copied();
        match c {
            '\\' => match next {
                Some(n) if ".[](){}*+?^$|\\/-".contains(n) => {
                    if "*?[]{}\\".contains(n) {
                        out.push('\\');
                    }
                    out.push(n);
                    i += 1;
                }
                Some('d') => {
                    out.push_str("[0-9]");
                    i += 1;
                }
                _ => return "*".into(),
            },
            '.' if matches!(next, Some('*' | '+' | '?')) => {
                out.push('*');
                i += 1;
            }
            '.' => out.push('?'),
            '*' | '+' | '?' => out.push('*'),
            '[' => {
                let Some(close) = cs[i..].iter().position(|&x| x == ']') else {
                    return "*".into();
                };
                let class: String = cs[i..=i + close].iter().collect();
                out.push_str(&class.replacen("[^", "[!", 1));
                i += close;
            }
            '(' | ')' | '|' | '{' | '}' => return "*".into(),
            _ => out.push(c),
        }
        i += 1;
    }
    if !end && !out.ends_with('*') {
        out.push('*');
    }
    out
}

/// What an `fd` selects before `-x`/`-X` (at `exec`): its start directory and name globs.
pub(super) fn fd_names(cmd: &Cmd<'_>, exec: usize) -> Option<(String, Vec<String>)> {
    #[rustfmt::skip]
    let valued = [
        "-e", "--extension", "-t", "--type", "-E", "--exclude", "-d", "--max-depth",
        "--min-depth", "--exact-depth", "-S", "--size", "--changed-within", "--changed-before",
        "-j", "--threads", "-c", "--color", "--base-directory", "--search-path", "-o", "--owner",
        "--max-results", "--format", "--ignore-file", "--path-separator", "--batch-size",
    ];
    let before = Cmd {
        args: &cmd.args[..exec],
        ..*cmd
    };
    let ops = before.operands(&valued);
    let glob = before.has(&["-g", "--glob"]);
    let fixed = before.has(&["-F", "--fixed-strings"]);
    let exts = before.option_values(&["-e"], &["--extension"]);
    let start = ops
        .get(1)
        .and_then(|w| w.known())
        .unwrap_or(".")
        .to_string();
    let mut names: Vec<String> = exts
        .iter()
        .map(|e| format!("*.{}", e.known().unwrap_or("*").trim_start_matches('.')))
        .collect();
    if names.is_empty() {
        let pattern = ops.first()?;
        let p = pattern.known().unwrap_or("*");
        names.push(match (glob, fixed) {
            (true, _) => p.to_string(),
            (false, true) => format!("*{}*", crate::glob::escape(p)),
            (false, false) => regex_glob(p),
        });
    }
    if names.iter().all(|n| everything(n)) {
        return None;
    }
    let names = names.iter().flat_map(|n| with_dot_names(n)).collect();
    Some((start, names))
}

/// `grep --include=GLOB`, `rg -g GLOB`/`--glob`/`--iglob`: the files the search reads.
pub(super) fn include_globs(cmd: &Cmd<'_>) -> Vec<Word> {
    let values = match cmd.program {
        "rg" | "ripgrep" => cmd.option_values(&["-g"], &["--glob", "--iglob"]),
        _ => cmd.option_values(&[], &["--include"]),
    };
    values
        .into_iter()
        .filter_map(|w| {
            let g = w.known()?.to_string();
            if g.starts_with('!') || everything(&g) {
                return None;
            }
            let names = with_dot_names(&g);
            Some(match_word(&g, ".", &names))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::regex_glob;
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn regexes_as_globs() {
        assert_eq!(regex_glob("^\\.env$"), ".env");
        assert_eq!(regex_glob("\\.pem$"), "*.pem");
        assert_eq!(regex_glob(".env"), "*?env*");
        assert_eq!(regex_glob("^id_.*"), "id_*");
        assert_eq!(regex_glob("(a|b)"), "*");
    }

    #[test]
    fn issue_12_7_searches_that_select_sensitive_files_are_judged_by_their_filters() {
        // the severity is unchanged; the sensitive-path check (decision table) asks
        expect(&[
            ("find . -name .env -exec cat {} +", Safe),
            ("find . -name '*.rs' -exec grep -l unsafe {} +", Safe),
            ("fd -g .env -x cat", Safe),
            ("rg -g '.env*' TOKEN", Safe),
            ("fd . -x cat", Safe),
            ("find . -name '*' -exec cat {} +", Safe),
        ]);
    }
}
