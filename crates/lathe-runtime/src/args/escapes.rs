//! When a one-line string was escaped twice. Small models sometimes send multi-line code with
//! every newline as the two characters `\n` (`def f():\n    return 1\n`); the repair turns them
//! back. The same two characters also start LaTeX commands (`\nabla`, `\theta`), Windows path
//! segments (`C:\new\table`) and text about escapes ("split on \n"), which must be written as
//! given. So the whole string is weighed: a string that was escaped twice holds only the escapes
//! a JSON encoder writes, at places where line breaks and indentation go.

/// What the text is for, from the file it goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// No file, or a file of a type whose text seldom holds a backslash meant as written.
    Other,
    /// TeX, Markdown, reStructuredText, Windows batch and PowerShell files: backslashes there
    /// are usually meant as written, so their text is never repaired.
    Backslashed,
}

/// Extensions of [`FileKind::Backslashed`] files.
const BACKSLASHED_EXTENSIONS: &[&str] = &[
    "tex", "latex", "ltx", "sty", "cls", "bib", "bst", "dtx", "ins", "md", "markdown", "mdx",
    "rst", "bat", "cmd", "ps1", "psm1", "psd1", "reg",
];

impl FileKind {
    /// The kind of the file at `path` (by its extension, case-insensitively).
    pub fn of_path(path: &str) -> Self {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        match name.rsplit_once('.') {
            Some((stem, ext))
                if !stem.is_empty()
                    && BACKSLASHED_EXTENSIONS
                        .iter()
                        .any(|known| known.eq_ignore_ascii_case(ext)) =>
            {
                FileKind::Backslashed
            }
            _ => FileKind::Other,
        }
    }
}

/// Words after a backslash that are LaTeX commands or path segments beginning with the letter of
/// an escape the repair would turn into a control character (`\n`, `\t`, `\r`): `\nabla` is a
/// command and `build\new` a path, not a newline followed by a line starting `abla` or `ew`,
/// unless the text also breaks lines as code does.
const LITERAL_WORDS: &[&str] = &[
    "new",
    "news",
    "node",
    "notes",
    "net",
    "network",
    "name",
    "names",
    "nginx",
    "npm",
    "nul",
    "next",
    "nicefrac",
    "nabla",
    "ne",
    "neq",
    "neg",
    "nearrow",
    "nexists",
    "ngeq",
    "ngtr",
    "ni",
    "nleq",
    "nless",
    "nmid",
    "not",
    "notin",
    "nparallel",
    "nsubseteq",
    "nsupseteq",
    "nu",
    "nwarrow",
    "newcommand",
    "newenvironment",
    "newtheorem",
    "newline",
    "newpage",
    "newlength",
    "newcounter",
    "noindent",
    "nonumber",
    "nolimits",
    "nobreak",
    "nocite",
    "node",
    "normalsize",
    "newif",
    "tau",
    "theta",
    "times",
    "to",
    "top",
    "text",
    "textbf",
    "textit",
    "texttt",
    "textrm",
    "textsf",
    "textsc",
    "textnormal",
    "textwidth",
    "textheight",
    "textcolor",
    "tilde",
    "triangle",
    "tiny",
    "tfrac",
    "tan",
    "tanh",
    "tableofcontents",
    "thanks",
    "thispagestyle",
    "title",
    "today",
    "therefore",
    "rho",
    "right",
    "rightarrow",
    "rangle",
    "rceil",
    "rfloor",
    "rbrace",
    "rbrack",
    "ref",
    "rm",
    "rule",
    "raggedright",
    "raisebox",
    "renewcommand",
    "renewenvironment",
    "rVert",
    "rvert",
];

/// `text` with its double escapes undone, when the evidence says it was escaped twice: no real
/// newline, a `\n` outside quoted strings, and nothing that marks it as meant literally (see
/// [`meant_literally`]). `None` leaves the text as given.
pub fn undo_double_escape(text: &str, kind: FileKind) -> Option<String> {
    if kind == FileKind::Backslashed
        || text.contains('\n')
        || !newline_escape_outside_quotes(text)
        || meant_literally(text)
    {
        return None;
    }
    Some(unescape(text, false).0)
}

/// `text` with `\n`, `\t`, `\r`, `\"` and `\\` (and `\'` with `single_quotes`) turned into
/// the characters they stand for, and whether anything was turned: the one unescaping of the
/// argument layer's repair and of `edit_file`'s escape-tolerant matching.
pub fn unescape(text: &str, single_quotes: bool) -> (String, bool) {
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let replaced = match (c, chars.peek()) {
            ('\\', Some('n')) => Some('\n'),
            ('\\', Some('t')) => Some('\t'),
            ('\\', Some('r')) => Some('\r'),
            ('\\', Some('"')) => Some('"'),
            ('\\', Some('\'')) if single_quotes => Some('\''),
            ('\\', Some('\\')) => Some('\\'),
            _ => None,
        };
        match replaced {
            Some(r) => {
                chars.next();
                out.push(r);
                changed = true;
            }
            None => out.push(c),
        }
    }
    (out, changed)
}

/// Whether something in `text` says its backslashes are meant as written:
/// - a backslash before a character a JSON encoder never escapes (`\alpha`, `\d`, `\section`,
///   `C:\Users`; `\b` and `\f` count too, as nobody's code holds a backspace or form feed);
/// - a drive path (`C:\new`);
/// - a `\t` or `\r` followed by a letter, other than a tab indenting a line (`\n\treturn`);
/// - an escape talked about as a word ("split on \n and trim", "use \t, not spaces");
/// - a `\n` in a regex: a character class (`[^\n]`, `[\n]`), between slashes (`s/\n/ /`) or
///   quantified at its end (`\n+$`);
/// - a LaTeX command or path segment (`\neq`, `\theta`, `build\new`), unless a `\n` is also followed by indentation, a blank
///   line or the end of the text, as in code.
pub fn meant_literally(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let mut literal_word = false;
    let mut code_break = false;
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '\\' {
            i += 1;
            continue;
        }
        let Some(&next) = chars.get(i + 1) else {
            return true;
        };
        let before = i.checked_sub(1).map(|b| chars[b]);
        let after = chars.get(i + 2).copied();
        match next {
            '\\' | '"' | '\'' | '/' => {
                i += 2;
                continue;
            }
            'u' if chars.len() >= i + 6
                && chars[i + 2..i + 6].iter().all(char::is_ascii_hexdigit) =>
            {
                i += 6;
                continue;
            }
            'n' | 't' | 'r' => {}
            _ => return true,
        }
        // A drive letter stands alone and a path segment follows: neither `on:\n` in YAML nor
        // `if x:\n\t` in Python is `C:\new`.
        let drive = before == Some(':')
            && after.is_some_and(char::is_alphanumeric)
            && i >= 2
            && chars[i - 2].is_ascii_alphabetic()
            && (i == 2 || !chars[i - 3].is_alphanumeric());
        if drive {
            return true;
        }
        let line_start =
            i == 0 || (i >= 2 && chars[i - 2] == '\\' && matches!(chars[i - 1], 'n' | 't'));
        if next != 'n' && after.is_some_and(char::is_alphabetic) && !(next == 't' && line_start) {
            return true;
        }
        if talked_about(&chars, i) {
            return true;
        }
        if next == 'n' {
            let class = (before == Some('^') && i >= 2 && chars[i - 2] == '[')
                || (before == Some('[') && after == Some(']'));
            let delimited = before == Some('/') && after == Some('/');
            let quantified = matches!(after, Some('+' | '*' | '?'))
                && matches!(chars.get(i + 3), None | Some('$' | ')' | '|' | '\\'));
            if class || delimited || quantified {
                return true;
            }
            code_break |= match after {
                None => true,
                Some('\\') => matches!(chars.get(i + 3), Some('n' | 't')),
                Some(' ') => chars.get(i + 3) == Some(&' '),
                _ => false,
            };
        }
        let word: String = chars[i + 1..]
            .iter()
            .take_while(|c| c.is_ascii_alphabetic())
            .collect();
        literal_word |= LITERAL_WORDS.contains(&word.as_str());
        i += 2;
    }
    literal_word && !code_break
}

/// Whether the run of escapes through the one at `i` stands as a word of prose: a space before
/// it, and after it the end, punctuation, or one space and a word ("use \n, not \r\n here").
fn talked_about(chars: &[char], i: usize) -> bool {
    let mut start = i;
    while start >= 2 && chars[start - 2] == '\\' && matches!(chars[start - 1], 'n' | 't' | 'r') {
        start -= 2;
    }
    let mut end = i + 2;
    while chars.get(end) == Some(&'\\') && matches!(chars.get(end + 1), Some('n' | 't' | 'r')) {
        end += 2;
    }
    if start == 0 || chars[start - 1] != ' ' {
        return false;
    }
    match chars.get(end) {
        None => true,
        Some(',' | '.' | ';' | ':' | '!' | '?') => true,
        Some(' ') => chars.get(end + 1).is_some_and(|c| !c.is_whitespace()),
        _ => false,
    }
}

/// Whether `text` has a `\n` escape outside any quoted string. Quotes are `"`, and `'` or `` ` ``
/// not preceded by a letter or digit (so the apostrophe of "don't" opens nothing); an escaped
/// quote (`\"`, as double-escaped text has them) neither opens nor closes one.
fn newline_escape_outside_quotes(text: &str) -> bool {
    let mut quote: Option<char> = None;
    let mut previous = ' ';
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            let escaped = chars.next();
            if escaped == Some('n') && quote.is_none() {
                return true;
            }
            previous = escaped.unwrap_or(c);
            continue;
        }
        match quote {
            Some(open) if c == open => quote = None,
            Some(_) => {}
            None if c == '"' => quote = Some(c),
            None if (c == '\'' || c == '`') && !previous.is_alphanumeric() => quote = Some(c),
            None => {}
        }
        previous = c;
    }
    false
}

/// The note a tool adds to its result when it wrote repaired text, so the model can undo it.
pub const REPAIR_NOTE: &str = "note: the text arrived on one line with its line breaks escaped \
     (\\n, and \\t, \\\" with them); they were written as real line breaks, tabs and quotes. If \
     the backslashes were meant as written, send the text again with at least one real line \
     break in it: text with a real line break is always written as given.";

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per rule: (text, meant as written).
    #[test]
    fn each_rule_decides_its_case() {
        let rows: &[(&str, bool)] = &[
            (r"a\nb", false),
            (r"\alpha\n", true),         // an escape JSON never writes
            (r"\b\n", true),             // backspace: nobody's code holds one
            (r"\u00e9\nx", false),       // \uXXXX is JSON's own
            (r"C:\new", true),           // a drive path
            (r"on:\n  x: 1", false),     // YAML, not a drive
            (r"a\tb\nc", true),          // a tab before a letter mid-line
            (r"{\n\treturn\n}", false),  // a tab indenting a line
            (r"x\rho\n", true),          // \r before a letter
            (r"a\r\nb\r\n", false),      // CRLF
            (r"use \n, not \r\n", true), // talked about
            (r"x = [^\n]", true),        // regex class
            (r"s/\n/ /", true),          // between slashes
            (r"a\n+$", true),            // quantified
            (r"$x \neq y$", true),       // a LaTeX word
            (r"x = 1\nu = 2\n", false),  // a LaTeX word, but code breaks
            (r"cd build\new", true),     // a path segment
            (r"trailing\n\", true),      // a lone final backslash
        ];
        for (text, literal) in rows {
            assert_eq!(meant_literally(text), *literal, "{text}");
        }
    }

    #[test]
    fn file_kinds_by_extension() {
        assert_eq!(FileKind::of_path("doc/Paper.TEX"), FileKind::Backslashed);
        assert_eq!(FileKind::of_path(r"scripts\run.ps1"), FileKind::Backslashed);
        assert_eq!(FileKind::of_path("src/main.rs"), FileKind::Other);
        assert_eq!(FileKind::of_path(".md"), FileKind::Other);
        assert_eq!(undo_double_escape(r"a\nb", FileKind::Backslashed), None);
    }
}
