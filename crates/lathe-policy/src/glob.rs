//! Can a shell glob name a sensitive file? Globs as small automata, and whether two of them
//! have a name in common.
//!
//! Bash and the sensitive-path patterns read globs differently: in bash `*`, `?` and `[...]`
//! never match a leading `.` of a name (no `dotglob`), braces expand first (`{a,b}`,
//! `{1..3}`); the patterns follow gitignore (`**/` crosses directories, a leading dot is an
//! ordinary character). Both become automata over characters; [`common`] searches their
//! product for a path both accept and returns it as a witness.

use std::collections::{HashSet, VecDeque};

/// How a glob is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// Bash pathname expansion: wildcards skip names that start with `.`.
    Shell,
    /// gitignore-style patterns (the sensitive paths): a leading `.` is ordinary.
    Pattern,
}

/// More brace alternatives than this are not checked one by one.
pub(crate) const MAX_ALTERNATIVES: usize = 256;

/// A glob longer than this is not compiled (a command line this long is unusual).
const MAX_GLOB_LEN: usize = 4096;

#[derive(Debug, Clone)]
enum Set {
    Lit(char),
    /// Any character but `/`.
    Name,
    /// Any character.
    All,
    Class {
        ranges: Vec<(char, char)>,
        negated: bool,
    },
}

impl Set {
    fn contains(&self, c: char) -> bool {
        match self {
            Set::Lit(l) => *l == c,
            Set::Name => c != '/',
            Set::All => true,
            Set::Class { ranges, negated } => {
                c != '/' && (ranges.iter().any(|(a, b)| *a <= c && c <= *b) != *negated)
            }
        }
    }

    fn wild(&self) -> bool {
        !matches!(self, Set::Lit(_))
    }
}

/// One brace-free glob as an automaton.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    eps: Vec<Vec<usize>>,
    edges: Vec<Vec<(Set, usize)>>,
    /// States inside a `*` or `**`: a name read from one may not start with `.` in bash
    /// (`*.rs` does not match `.rs`).
    star: Vec<bool>,
    accept: usize,
    flavor: Flavor,
    chars: Vec<char>,
}

impl Glob {
    fn state(&mut self) -> usize {
        self.eps.push(Vec::new());
        self.edges.push(Vec::new());
        self.star.push(false);
        self.eps.len() - 1
    }

    /// Compiles a glob without braces (expand them first with [`expand_braces`]).
    pub(crate) fn new(text: &str, flavor: Flavor) -> Option<Glob> {
        if text.len() > MAX_GLOB_LEN {
            return None;
        }
        let mut g = Glob {
            eps: Vec::new(),
            edges: Vec::new(),
            star: Vec::new(),
            accept: 0,
            flavor,
            chars: Vec::new(),
        };
        let mut cur = g.state();
        let cs: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < cs.len() {
            let c = cs[i];
            let at_boundary = i == 0 || cs[i - 1] == '/';
            match c {
                '\\' if i + 1 < cs.len() => {
                    let n = g.state();
                    g.edges[cur].push((Set::Lit(cs[i + 1]), n));
                    g.chars.push(cs[i + 1]);
                    cur = n;
                    i += 2;
                    continue;
                }
                '*' if cs.get(i + 1) == Some(&'*') => {
                    let mut j = i;
                    while cs.get(j) == Some(&'*') {
                        j += 1;
                    }
                    if at_boundary && cs.get(j) == Some(&'/') {
                        // `**/`: nothing, or anything ending with `/`
                        let next = g.state();
                        let mid = g.state();
                        g.eps[cur].push(next);
                        g.edges[cur].push((Set::All, mid));
                        g.edges[mid].push((Set::All, mid));
                        g.star[mid] = true;
                        g.edges[mid].push((Set::Lit('/'), next));
                        cur = next;
                        i = j + 1;
                    } else {
                        // `**` anywhere else crosses directories (bash's globstar, or more)
                        let n = g.state();
                        g.eps[cur].push(n);
                        g.edges[n].push((Set::All, n));
                        g.star[n] = true;
                        cur = n;
                        i = j;
                    }
                    continue;
                }
                '*' => {
                    let n = g.state();
                    g.eps[cur].push(n);
                    g.edges[n].push((Set::Name, n));
                    g.star[n] = true;
                    cur = n;
                }
                '?' => {
                    let n = g.state();
                    g.edges[cur].push((Set::Name, n));
                    cur = n;
                }
                '[' => match class(&cs, i) {
                    Some((set, end, members)) => {
                        let n = g.state();
                        g.edges[cur].push((set, n));
                        g.chars.extend(members);
                        cur = n;
                        i = end + 1;
                        continue;
                    }
                    None => {
                        let n = g.state();
                        g.edges[cur].push((Set::Lit('['), n));
                        g.chars.push('[');
                        cur = n;
                    }
                },
                _ => {
                    let n = g.state();
                    g.edges[cur].push((Set::Lit(c), n));
                    g.chars.push(c);
                    cur = n;
                }
            }
            i += 1;
        }
        g.accept = cur;
        Some(g)
    }

    /// Whether the glob matches this concrete path.
    pub(crate) fn is_match(&self, path: &str) -> bool {
        let lit = Glob::new(&escape(path), Flavor::Pattern);
        lit.is_some_and(|l| common(self, &l).is_some())
    }
}

/// Parses `[...]` starting at `cs[start]`: the set, the index of `]`, the characters named.
fn class(cs: &[char], start: usize) -> Option<(Set, usize, Vec<char>)> {
    let mut i = start + 1;
    let negated = matches!(cs.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut ranges = Vec::new();
    let mut members = Vec::new();
    let first = i;
    while let Some(&c) = cs.get(i) {
        if c == ']' && i > first {
            return Some((Set::Class { ranges, negated }, i, members));
        }
        if c == '/' {
            return None;
        }
        let lo = if c == '\\' {
            i += 1;
            *cs.get(i)?
        } else {
            c
        };
        if cs.get(i + 1) == Some(&'-') && cs.get(i + 2).is_some_and(|&h| h != ']') {
            let hi = cs[i + 2];
            ranges.push((lo, hi));
            members.extend([lo, hi]);
            i += 3;
        } else {
            ranges.push((lo, lo));
            members.push(lo);
            i += 1;
        }
    }
    None
}

/// A concrete path both globs match, if there is one.
pub(crate) fn common(a: &Glob, b: &Glob) -> Option<String> {
    let mut candidates: Vec<char> = a.chars.iter().chain(&b.chars).copied().collect();
    candidates.extend(['/', '.', 'x', '\u{e000}']);
    candidates.sort_unstable();
    candidates.dedup();
    type State = (usize, usize, bool);
    let start: State = (0, 0, true);
    let mut seen: HashSet<State> = HashSet::from([start]);
    let mut parent: Vec<(State, Option<(usize, char)>)> = vec![(start, None)];
    let mut queue = VecDeque::from([0usize]);
    while let Some(idx) = queue.pop_front() {
        let ((sa, sb, at_start), _) = parent[idx];
        if sa == a.accept && sb == b.accept {
            let mut out = Vec::new();
            let mut k = idx;
            while let (_, Some((from, c))) = parent[k] {
                if c != '\0' {
                    out.push(c);
                }
                k = from;
            }
            out.reverse();
            return Some(out.into_iter().collect());
        }
        let mut next: Vec<(State, char)> = Vec::new();
        for &e in &a.eps[sa] {
            next.push(((e, sb, at_start), '\0'));
        }
        for &e in &b.eps[sb] {
            next.push(((sa, e, at_start), '\0'));
        }
        for (set_a, to_a) in &a.edges[sa] {
            for (set_b, to_b) in &b.edges[sb] {
                // bash: a name's leading `.` is matched only by a literal `.` outside `*`
                let hidden = |g: &Glob, s: &Set, at: usize| {
                    g.flavor == Flavor::Shell && (s.wild() || g.star[at])
                };
                let ok = |c: char| {
                    set_a.contains(c)
                        && set_b.contains(c)
                        && !(c == '.' && at_start && (hidden(a, set_a, sa) || hidden(b, set_b, sb)))
                };
                // only whether the character is `/` matters to what follows
                if ok('/') {
                    next.push(((*to_a, *to_b, true), '/'));
                }
                if let Some(c) = candidates.iter().copied().find(|&c| c != '/' && ok(c)) {
                    next.push(((*to_a, *to_b, false), c));
                }
            }
        }
        for (state, c) in next {
            if seen.insert(state) {
                parent.push((state, Some((idx, c))));
                queue.push_back(parent.len() - 1);
            }
        }
    }
    None
}

/// Escapes a concrete path so that it compiles to a glob matching only itself.
pub(crate) fn escape(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\' | '{' | '}') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Bash brace expansion (`{a,b}`, `{1..3}`, `{a..c}`, nested), at most
/// [`MAX_ALTERNATIVES`] results; `None` when there would be more.
pub(crate) fn expand_braces(text: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    expand_into(text, &mut out)?;
    Some(out)
}

fn expand_into(text: &str, out: &mut Vec<String>) -> Option<()> {
    let cs: Vec<char> = text.chars().collect();
    // the first `{` that has a matching `}` with a top-level `,` or `..`
    let mut i = 0;
    while i < cs.len() {
        if cs[i] == '\\' {
            i += 2;
            continue;
        }
        if cs[i] == '{'
            && let Some((end, parts)) = brace_group(&cs, i)
        {
            let prefix: String = cs[..i].iter().collect();
            let suffix: String = cs[end + 1..].iter().collect();
            for part in parts {
                expand_into(&format!("{prefix}{part}{suffix}"), out)?;
                if out.len() > MAX_ALTERNATIVES {
                    return None;
                }
            }
            return Some(());
        }
        i += 1;
    }
    out.push(text.to_string());
    (out.len() <= MAX_ALTERNATIVES).then_some(())
}

/// The alternatives of the brace group opening at `cs[open]`, and where it closes.
fn brace_group(cs: &[char], open: usize) -> Option<(usize, Vec<String>)> {
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut i = open;
    while i < cs.len() {
        let c = cs[i];
        match c {
            '\\' => {
                current.push(c);
                if let Some(&n) = cs.get(i + 1) {
                    current.push(n);
                }
                i += 2;
                continue;
            }
            '{' => {
                depth += 1;
                if depth > 1 {
                    current.push(c);
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    parts.push(current);
                    if parts.len() > 1 {
                        return Some((i, parts));
                    }
                    return sequence(&parts[0]).map(|seq| (i, seq));
                }
                current.push(c);
            }
            ',' if depth == 1 => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
        i += 1;
    }
    None
}

/// `1..5`, `05..10..2`, `a..e`: the items of a sequence expression.
fn sequence(body: &str) -> Option<Vec<String>> {
    let fields: Vec<&str> = body.split("..").collect();
    let (from, to) = match fields.as_slice() {
        [a, b] | [a, b, _] => (*a, *b),
        _ => return None,
    };
    let step = fields
        .get(2)
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(1)
        .unsigned_abs()
        .max(1);
    if let (Ok(a), Ok(b)) = (from.parse::<i64>(), to.parse::<i64>()) {
        let count = a.abs_diff(b) / step + 1;
        if count > MAX_ALTERNATIVES as u64 {
            // too long to list: the ends stand for it, which is all a name check needs
            return Some(vec![from.to_string(), to.to_string(), "0".to_string()]);
        }
        let width = if from.starts_with('0') || to.starts_with('0') {
            from.len().max(to.len())
        } else {
            0
        };
        let items = (0..count).map(|k| {
            let v = if a <= b {
                a + (k * step) as i64
            } else {
                a - (k * step) as i64
            };
            format!("{v:0width$}")
        });
        return Some(items.collect());
    }
    let (mut a, mut b) = (from.chars(), to.chars());
    match (a.next(), a.next(), b.next(), b.next()) {
        (Some(x), None, Some(y), None) => {
            let (lo, hi) = (x.min(y) as u32, x.max(y) as u32);
            Some(
                (lo..=hi)
                    .step_by(step as usize)
                    .filter_map(char::from_u32)
                    .map(String::from)
                    .collect(),
            )
        }
        _ => None,
    }
}

/// A concrete name the glob matches: each `*` becomes `filler`, `?` and classes a member,
/// `**/` nothing. Used to ask the sensitive patterns about one likely expansion.
pub(crate) fn instance(text: &str, filler: &str) -> String {
    let cs: Vec<char> = text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < cs.len() {
        match cs[i] {
            '\\' if i + 1 < cs.len() => {
                out.push(cs[i + 1]);
                i += 2;
                continue;
            }
            '*' => {
                let mut j = i;
                while cs.get(j) == Some(&'*') {
                    j += 1;
                }
                if j - i >= 2 && cs.get(j) == Some(&'/') && (i == 0 || cs[i - 1] == '/') {
                    if !filler.is_empty() {
                        out.push_str(filler);
                        out.push('/');
                    }
                    i = j + 1;
                } else {
                    out.push_str(filler);
                    i = j;
                }
                continue;
            }
            '?' => out.push('x'),
            '[' => {
                if let Some((set, end, members)) = class(&cs, i) {
                    let pick = members
                        .iter()
                        .copied()
                        .chain("xyz_0".chars())
                        .find(|c| set.contains(*c));
                    out.extend(pick);
                    i = end + 1;
                    continue;
                }
                out.push('[');
            }
            c => out.push(c),
        }
        i += 1;
    }
    out
}

/// The pattern with its name wildcards filled in and `**` kept: the glob of "a file like
/// this pattern's examples, in any directory".
pub(crate) fn examples_of_pattern(text: &str, filler: &str) -> String {
    // split around `**` so that only the name wildcards are filled
    text.split("**")
        .map(|part| escape_keep(&instance(part, filler)))
        .collect::<Vec<_>>()
        .join("**")
}

fn escape_keep(concrete: &str) -> String {
    escape(concrete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meet(a: &str, fa: Flavor, b: &str, fb: Flavor) -> Option<String> {
        common(&Glob::new(a, fa)?, &Glob::new(b, fb)?)
    }

    #[test]
    fn shell_wildcards_skip_dot_names() {
        use Flavor::{Pattern, Shell};
        assert_eq!(
            meet("/w/.e*", Shell, "/**/.env", Pattern).as_deref(),
            Some("/w/.env")
        );
        assert!(meet("/w/.[e]nv", Shell, "/**/.env", Pattern).is_some());
        assert!(meet("/w/.en?", Shell, "/**/.env", Pattern).is_some());
        assert!(meet("/w/*", Shell, "/**/.env", Pattern).is_none());
        assert!(meet("/w/*", Shell, "/**/x.pem", Pattern).is_some());
        assert!(meet("/w/src/*.rs", Shell, "/**/secrets", Pattern).is_none());
        assert!(meet("/w/.g*/c*", Shell, "/**/.git/**", Pattern).is_some());
        assert!(meet("/w/**/.env", Shell, "/**/.env", Pattern).is_some());
        assert!(meet("/w/[!.]env", Shell, "/**/.env", Pattern).is_none());
        assert!(meet("/w/*.rs", Shell, "/**/.rs", Pattern).is_none());
        assert!(meet("/w/**/*.rs", Shell, "/**/.git/**", Pattern).is_none());
        assert!(meet("/w/.*", Shell, "/**/.env", Pattern).is_some());
        assert_eq!(
            meet("/w/.*/**/*.rs", Shell, "/**/.git/**", Pattern).as_deref(),
            Some("/w/.git/g.rs")
        );
        assert!(Glob::new("/a/*.rs", Shell).is_some_and(|g| g.is_match("/a/b.rs")));
        assert!(!Glob::new("/a/*.rs", Shell).is_some_and(|g| g.is_match("/a/b/c.rs")));
    }

    #[test]
    fn braces_expand_like_bash() {
        assert_eq!(
            expand_braces("{.env,x}"),
            Some(vec![".env".into(), "x".into()])
        );
        assert_eq!(
            expand_braces("a{1..3}b"),
            Some(vec!["a1b".into(), "a2b".into(), "a3b".into()])
        );
        assert_eq!(expand_braces("{a,{b,c}}d").map(|v| v.len()), Some(3));
        assert_eq!(expand_braces("{}"), Some(vec!["{}".into()]));
        assert_eq!(expand_braces("x{a..c}").map(|v| v.len()), Some(3));
        let bomb = "{a,b}".repeat(12);
        assert_eq!(expand_braces(&bomb), None);
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_globs_never_panic(text in "[a-z./*?\\[\\]{},!^\\\\-é]{0,40}") {
            for alt in expand_braces(&text).unwrap_or_default() {
                let _ = instance(&alt, "x");
                let _ = examples_of_pattern(&alt, "");
                if let (Some(a), Some(b)) = (
                    Glob::new(&alt, Flavor::Shell),
                    Glob::new("/**/.env*", Flavor::Pattern),
                ) {
                    let _ = common(&a, &b);
                    let _ = a.is_match("/w/.env");
                }
            }
        }
    }

    #[test]
    fn instances_fill_wildcards() {
        assert_eq!(instance(".env*", ""), ".env");
        assert_eq!(instance("*.pem", "x"), "x.pem");
        assert_eq!(instance("**/secrets*", ""), "secrets");
        assert_eq!(instance(".[e]nv", ""), ".env");
        assert_eq!(examples_of_pattern("**/*.pem", "x"), "**/x.pem");
    }
}
