//! ast-grep's engine on one file: a pattern (and rewrite template) compiled once per language,
//! then each file parsed, searched and, with a rewrite, rewritten in memory.

use ast_grep_core::matcher::{PatternError, PatternNode};
use ast_grep_core::replacer::TemplateFix;
use ast_grep_core::{Language, Pattern};
use ast_grep_language::LanguageExt;
use memchr::memmem;

use super::lang::Lang;

/// Characters of a match's first line shown in the listing.
const MATCH_TEXT_CHARS: usize = 200;

/// A pattern (and rewrite) ready to run on files of one language.
pub(crate) struct Compiled {
    pub lang: Lang,
    pattern: Pattern,
    fix: Option<TemplateFix>,
    /// Text every match contains (the pattern's longest named tokens): a file without one of
    /// them cannot match and is not parsed.
    needles: Vec<memmem::Finder<'static>>,
}

/// One match, for the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hit {
    /// 1-based line of the match's start.
    pub line: usize,
    /// 1-based column (in characters) of the match's start.
    pub column: usize,
    /// The first line of the matched text, cut when long.
    pub text: String,
}

/// What one file holds for the pattern.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// Every match, nested ones included, in the order of the source.
    pub hits: Vec<Hit>,
    /// Replacements made (a match inside a replaced one is not rewritten on its own).
    pub replacements: usize,
    /// The rewritten text, when a rewrite changes the file.
    pub rewritten: Option<String>,
}

impl Compiled {
    /// Compiles `pattern` (and `rewrite`) for `lang`, or says, for the model, why it cannot be.
    pub fn new(lang: Lang, pattern: &str, rewrite: Option<&str>) -> Result<Compiled, String> {
        let support = lang.support();
        if pattern.trim().is_empty() {
            return Err(
                "parameter `pattern` is empty; give a piece of code to look for, such as `foo($A)`"
                    .to_owned(),
            );
        }
        let compiled =
            Pattern::try_new(pattern, support).map_err(|err| explain(lang, pattern, &err))?;
        if let Some(message) = syntax_error(lang, pattern) {
            return Err(message);
        }
        let fix = match rewrite {
            None => None,
            Some(template) => {
                let fix = match TemplateFix::try_new(template, &support) {
                    Ok(fix) => fix,
                    Err(never) => match never {},
                };
                let defined = compiled.defined_vars();
                let mut missing: Vec<&str> = fix
                    .used_vars()
                    .into_iter()
                    .filter(|var| !defined.contains(var))
                    .collect();
                missing.sort_unstable();
                if !missing.is_empty() {
                    let names: Vec<String> = missing.iter().map(|v| format!("${v}")).collect();
                    let captured = if defined.is_empty() {
                        "captures nothing".to_owned()
                    } else {
                        let mut have: Vec<String> =
                            defined.iter().map(|v| format!("${v}")).collect();
                        have.sort();
                        format!("captures only {}", have.join(", "))
                    };
                    return Err(format!(
                        "the rewrite uses {} but the pattern {captured}; name every meta-variable of the \
                         rewrite in the pattern (`$A` for one node, `$$$A` for a list), or drop it from the rewrite",
                        names.join(", ")
                    ));
                }
                Some(fix)
            }
        };
        let needles = needles(&compiled.node, support.expando_char());
        Ok(Compiled {
            lang,
            pattern: compiled,
            fix,
            needles,
        })
    }

    /// True when `bytes` may hold a match: every needle is in it.
    pub fn may_match(&self, bytes: &[u8]) -> bool {
        self.needles
            .iter()
            .all(|needle| needle.find(bytes).is_some())
    }

    /// Searches (and rewrites) one file's text.
    pub fn scan(&self, source: &str) -> Scan {
        let root = self.lang.support().ast_grep(source);
        let node = root.root();
        // One traversal: every match, outer ones before those nested in them (pre-order).
        let found: Vec<_> = node.find_all(&self.pattern).collect();
        let hits: Vec<Hit> = found
            .iter()
            .map(|found| {
                let start = found.start_pos();
                let text = found.text();
                let first = text.lines().next().unwrap_or("");
                Hit {
                    line: start.line() + 1,
                    column: start.column(found) + 1,
                    text: cut(first, MATCH_TEXT_CHARS),
                }
            })
            .collect();
        let mut scan = Scan {
            hits,
            ..Scan::default()
        };
        let Some(fix) = &self.fix else {
            return scan;
        };
        if found.is_empty() {
            return scan;
        }
        // Rewritten as ast-grep's non-reentrant visit does: a match inside one already
        // rewritten is part of it, not rewritten on its own.
        let mut out = String::with_capacity(source.len());
        let mut last = 0;
        let mut covered = 0;
        for matched in &found {
            let range = matched.range();
            if range.start < covered {
                continue;
            }
            covered = range.end;
            let edit = matched.make_edit(&self.pattern, fix);
            let end = edit.position + edit.deleted_length;
            if edit.position < last || end > source.len() {
                continue;
            }
            let inserted = String::from_utf8_lossy(&edit.inserted_text);
            if inserted != source[edit.position..end] {
                scan.replacements += 1;
            }
            out.push_str(&source[last..edit.position]);
            out.push_str(&inserted);
            last = end;
        }
        out.push_str(&source[last..]);
        if out != source {
            scan.rewritten = Some(out);
        }
        scan
    }
}

/// The most needles a file is checked for before it is parsed.
const MAX_NEEDLES: usize = 4;

/// The texts every match of the pattern holds: its named tokens (identifiers, literals), which
/// ast-grep matches by kind and exact text, so each is a slice of any source that matches.
/// Unnamed tokens (punctuation, keywords) are matched by kind only and are left out, as is any
/// token holding the expando character (a meta-variable the parser took as part of a token).
/// The longest first, as they are the rarest; one-character names say too little to keep.
fn needles(node: &PatternNode, expando: char) -> Vec<memmem::Finder<'static>> {
    fn collect<'p>(node: &'p PatternNode, out: &mut Vec<&'p str>) {
        match node {
            PatternNode::Terminal {
                text,
                is_named: true,
                ..
            } => out.push(text),
            PatternNode::Terminal { .. } | PatternNode::MetaVar { .. } => {}
            PatternNode::Internal { children, .. } => {
                for child in children {
                    collect(child, out);
                }
            }
        }
    }
    let mut texts = Vec::new();
    collect(node, &mut texts);
    texts.retain(|t| t.len() >= 2 && !t.contains(expando) && !t.contains('$'));
    texts.sort_unstable_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    texts.dedup();
    texts.truncate(MAX_NEEDLES);
    texts
        .into_iter()
        .map(|t| memmem::Finder::new(t.as_bytes()).into_owned())
        .collect()
}

/// `text` cut to `max` characters, with `…`.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// A pattern that is not one piece of code, in the model's terms.
fn explain(lang: Lang, pattern: &str, err: &PatternError) -> String {
    let name = lang.title();
    let what = match err {
        PatternError::Parse(reason) => format!("the {name} parser failed on it ({reason})"),
        PatternError::NoContent(_) => format!("it holds no {name} code (only blanks or comments?)"),
        PatternError::MultipleNode(_) => format!(
            "it is more than one {name} node (several statements or items side by side); a pattern \
             is one expression, statement or item: search for one of them, or for the block around them"
        ),
        PatternError::RootMultiMetaVar(_) => {
            "a pattern cannot be only a list meta-variable (`$$$A`); put it inside a larger pattern, \
             e.g. `foo($$$A)`, or use `$A` for one node"
                .to_owned()
        }
        other => other.to_string(),
    };
    format!(
        "parameter `pattern` {} is not a valid {name} pattern: {what}. {}",
        quoted(pattern),
        hint(lang)
    )
}

/// The first syntax error in the pattern as the language's parser sees it, in the model's
/// terms; `None` when the pattern parses cleanly.
///
/// A fragment (an expression where the grammar wants items) is wrapped in an `ERROR` node by
/// the parser and is fine: ast-grep descends through single children to the node the pattern
/// really is, as done here. Only an `ERROR` at or under that node is an error.
fn syntax_error(lang: Lang, pattern: &str) -> Option<String> {
    let support = lang.support();
    let processed = support.pre_process_pattern(pattern);
    let root = support.ast_grep(processed.as_ref());
    let mut node = root.root();
    loop {
        let count = node.children().len();
        let single = count == 1
            || (count == 2
                && node
                    .child(1)
                    .is_some_and(|c| c.is_missing() || c.kind().is_empty()));
        match node.child(0) {
            Some(child) if single => node = child,
            _ => break,
        }
    }
    let name = lang.title();
    // The processed pattern differs from the given one only in meta-variable characters, one
    // for one, so text is cut from the given pattern by characters.
    let given = |range: std::ops::Range<usize>| -> String {
        let start = processed[..range.start].chars().count();
        let len = processed[range].chars().count();
        let text: String = pattern.chars().skip(start).take(len.min(40)).collect();
        text.lines().next().unwrap_or("").trim().to_owned()
    };
    let at = |n: &ast_grep_core::Node<'_, _>| {
        let start = n.start_pos();
        if pattern.contains('\n') {
            format!("line {}, column {}", start.line() + 1, start.column(n) + 1)
        } else {
            format!("column {}", start.column(n) + 1)
        }
    };
    let problem = if node.is_error() {
        format!(
            "the parser cannot make one {name} expression, statement or item of `{}`",
            given(node.range())
        )
    } else {
        // A missing token is not an error here: a meta-variable standing for a statement is
        // parsed as an expression lacking its `;`, and ast-grep leaves missing tokens out of
        // the pattern.
        let bad = node.dfs().find(|n| n.is_error())?;
        format!(
            "the parser reports a syntax error at {} near `{}`",
            at(&bad),
            given(bad.range())
        )
    };
    Some(format!(
        "parameter `pattern` {} does not parse as {name}: {problem}. {}",
        quoted(pattern),
        hint(lang)
    ))
}

fn quoted(pattern: &str) -> String {
    let one = cut(pattern.lines().next().unwrap_or(""), 80);
    if pattern.lines().nth(1).is_some() {
        format!("`{one} …`")
    } else {
        format!("`{one}`")
    }
}

/// What a pattern looks like, per language.
fn hint(lang: Lang) -> String {
    let example = match lang {
        Lang::Rust => "`$X.unwrap()`, `fn $NAME($$$ARGS) { $$$BODY }`",
        Lang::Python => "`print($$$ARGS)`, `def $F($$$P): $$$B`",
        Lang::JavaScript | Lang::TypeScript | Lang::Tsx => "`console.log($$$ARGS)`, `await $P`",
        Lang::Go => "`log($$$ARGS)`, `if err != nil { $$$B }`",
        Lang::Java => "`System.out.println($A)`, `$OBJ.equals($B)`",
        Lang::C | Lang::Cpp => "`malloc($SIZE)`, `if ($COND) { $$$BODY }`",
        Lang::Bash => "`echo $$$ARGS`, `rm -rf $DIR`",
    };
    format!(
        "A pattern is {} code as it would appear in a file, with $NAME for any one node and $$$NAME \
         for any number of them, e.g. {example}; check brackets and quotes, and that `language` is right",
        lang.title()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_lists_nested_matches_and_rewrite_replaces_the_outer_one() {
        let compiled = Compiled::new(Lang::Rust, "foo($$$A)", Some("bar($$$A)")).unwrap();
        let scan = compiled.scan("fn main() {\n    foo(foo(1), 2);\n}\n");
        let lines: Vec<(usize, usize)> = scan.hits.iter().map(|h| (h.line, h.column)).collect();
        assert_eq!(lines, vec![(2, 5), (2, 9)]);
        assert_eq!(scan.hits[0].text, "foo(foo(1), 2)");
        assert_eq!(scan.replacements, 1);
        assert_eq!(
            scan.rewritten.as_deref(),
            Some("fn main() {\n    bar(foo(1), 2);\n}\n")
        );
    }

    #[test]
    fn the_literal_prefilter_skips_files_without_the_token() {
        let compiled = Compiled::new(Lang::C, "kmalloc($A, GFP_KERNEL)", None).unwrap();
        assert!(compiled.may_match(b"p = kmalloc(n, GFP_KERNEL);"));
        assert!(!compiled.may_match(b"p = malloc(n);"));
        // Every named token must be there, not only the longest.
        assert!(!compiled.may_match(b"p = kzalloc(n, GFP_KERNEL);"));
        // Punctuation is matched by kind only: no needle, every file is parsed.
        let call = Compiled::new(Lang::C, "$A($B)", None).unwrap();
        assert!(call.may_match(b"x;"));
        let any = Compiled::new(Lang::C, "$A", None).unwrap();
        assert!(any.may_match(b"x"));
    }

    /// The prefilter never drops a file that matches: real sources, patterns with named tokens,
    /// each file's matches counted with and without it.
    #[test]
    fn the_prefilter_keeps_every_file_that_matches() {
        let sources = [
            include_str!("engine.rs"),
            include_str!("walk.rs"),
            include_str!("../ast_edit.rs"),
            include_str!("../grep.rs"),
        ];
        let patterns = [
            "$X.unwrap()",
            "Ok($A)",
            "format!($$$A)",
            "Some(Err($E))",
            "let $X = $Y.iter().map($F);",
            "plural($N, \"file\", \"files\")",
            "matches!($A, $B)",
        ];
        let mut matched = 0;
        for pattern in patterns {
            let compiled = Compiled::new(Lang::Rust, pattern, None).unwrap();
            assert!(!compiled.needles.is_empty(), "{pattern}");
            for source in sources {
                if !compiled.scan(source).hits.is_empty() {
                    matched += 1;
                    assert!(compiled.may_match(source.as_bytes()), "{pattern}");
                }
            }
        }
        assert!(matched > 10, "{matched}");
    }

    #[test]
    fn broken_patterns_name_the_language_and_the_place() {
        let err = Compiled::new(Lang::Rust, "foo($A", None).err().unwrap();
        assert!(err.contains("does not parse as Rust"), "{err}");
        assert!(
            err.contains("one Rust expression, statement or item of `foo($A`"),
            "{err}"
        );
        let err = Compiled::new(Lang::Rust, "fn $F() { let = 1; }", None)
            .err()
            .unwrap();
        assert!(err.contains("syntax error at column"), "{err}");
        let err = Compiled::new(Lang::Python, "def (:", None).err().unwrap();
        assert!(err.contains("Python"), "{err}");
        let err = Compiled::new(Lang::Rust, "$$$A", None).err().unwrap();
        assert!(err.contains("list meta-variable"), "{err}");
        let err = Compiled::new(Lang::Rust, "foo($A)", Some("bar($B)"))
            .err()
            .unwrap();
        assert!(
            err.contains("uses $B") && err.contains("captures only $A"),
            "{err}"
        );
    }

    #[test]
    fn common_patterns_parse_cleanly() {
        let cases = [
            (Lang::Rust, "$X.unwrap()"),
            (Lang::Rust, "fn $NAME($$$ARGS) { $$$BODY }"),
            (Lang::Rust, "let $X = $Y;"),
            (Lang::Python, "print($$$ARGS)"),
            (Lang::Python, "def $F($$$P): $$$B"),
            (Lang::JavaScript, "console.log($$$ARGS)"),
            (Lang::TypeScript, "const $X: $T = $V"),
            (Lang::Tsx, "<div $$$PROPS>$$$C</div>"),
            (Lang::Go, "log($$$ARGS)"),
            (Lang::Go, "if err != nil { $$$B }"),
            (Lang::Java, "System.out.println($A)"),
            (Lang::C, "kmalloc($A, GFP_KERNEL)"),
            (Lang::C, "if ($COND) { $$$BODY }"),
            (Lang::Cpp, "std::vector<$T> $V;"),
            (Lang::Bash, "echo $$$ARGS"),
        ];
        for (lang, pattern) in cases {
            if let Err(err) = Compiled::new(lang, pattern, None) {
                panic!("{lang:?} {pattern}: {err}");
            }
        }
    }
}
