//! Shell words resolved to their literal values where the text alone decides them.
//!
//! `r""m`, `'rm'`, `\rm` and `$'\x72m'` all resolve to `rm`; the word remembers that quoting
//! was used so that a command name hidden this way can be flagged.

/// One shell word after quote removal, as far as it can be known before running.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Word {
    /// The source text.
    pub raw: String,
    /// The value when every part is known.
    pub value: Option<String>,
    /// Known parts resolved, unknown parts kept as written: what is shown and matched.
    pub display: String,
    /// Unknown parts replaced by nothing: the value if every variable were empty.
    pub worst: String,
    /// Quotes, backslashes or ANSI-C strings were used.
    pub quoted: bool,
    /// Unquoted glob characters (`*`, `?`, `[`).
    pub glob: bool,
    /// Unquoted brace expansion (`{a,b}`, `{1..3}`).
    pub brace: bool,
    /// Descriptions of the parts that are not known until run time.
    pub dynamic: Vec<String>,
    /// Variables whose known values were substituted (`$X` with `X=rm` earlier).
    pub expanded: Vec<String>,
    /// A command or process substitution inside runs a network download.
    pub from_download: bool,
    /// The word is (or contains) a process substitution `<(...)`.
    pub process: bool,
    /// Variables with secret-looking names that are expanded (`$API_TOKEN`).
    pub secrets: Vec<String>,
    /// An unquoted known expansion contained blanks: the shell splits the value into fields.
    pub splits: bool,
    /// The value is not known, but every unknown part is a number (`$((n+1))`, `$#`, `${#x}`)
    /// and the rest digits: evaluating it as arithmetic or as a name cannot run code.
    pub inert: bool,
}

impl Word {
    /// A word with a known literal value (used for words made up by the analysis).
    pub fn literal(value: &str) -> Word {
        Word {
            raw: value.to_string(),
            value: Some(value.to_string()),
            display: value.to_string(),
            worst: value.to_string(),
            ..Word::default()
        }
    }

    /// A word whose value is not known, shown as `display`.
    pub fn unknown(display: &str, why: &str) -> Word {
        Word {
            raw: display.to_string(),
            display: display.to_string(),
            dynamic: vec![why.to_string()],
            ..Word::default()
        }
    }

    /// The value if known.
    pub fn known(&self) -> Option<&str> {
        self.value.as_deref()
    }

    /// Whether the value is fully known.
    pub fn is_known(&self) -> bool {
        self.value.is_some()
    }

    /// Splits a word whose unquoted expansion produced blanks into the fields the shell makes.
    pub fn fields(self) -> Vec<Word> {
        match (&self.value, self.splits) {
            (Some(v), true) => {
                let parts: Vec<Word> = v.split_ascii_whitespace().map(Word::literal).collect();
                if parts.is_empty() { vec![self] } else { parts }
            }
            _ => vec![self],
        }
    }
}

/// Builds a [`Word`] part by part.
#[derive(Debug, Default)]
pub(crate) struct WordBuilder {
    word: Word,
    known: bool,
    /// Every unknown part so far is a number.
    numeric: bool,
    /// Unquoted text seen so far, quoted parts replaced by a marker, for brace detection.
    bare: String,
}

impl WordBuilder {
    pub fn new(raw: &str) -> Self {
        WordBuilder {
            word: Word {
                raw: raw.to_string(),
                ..Word::default()
            },
            known: true,
            numeric: true,
            bare: String::new(),
        }
    }

    fn push_known(&mut self, text: &str) {
        self.word.display.push_str(text);
        self.word.worst.push_str(text);
        if let Some(v) = self.word.value.as_mut() {
            v.push_str(text);
        } else if self.known {
            self.word.value = Some(text.to_string());
        }
    }

    /// An unquoted word part: backslash escapes removed, globs and a leading tilde noticed.
    pub fn unquoted(&mut self, text: &str, first: bool, home: &str) {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        let mut at_start = first && self.word.display.is_empty();
        while let Some(c) = chars.next() {
            if at_start && c == '~' {
                let rest: String = chars.clone().take_while(|&c| c != '/').collect();
                if rest.is_empty() {
                    out.push_str(home);
                    self.bare.push('~');
                    at_start = false;
                    continue;
                }
            }
            at_start = false;
            match c {
                '\\' => {
                    self.word.quoted = true;
                    self.bare.push('\u{1}');
                    match chars.next() {
                        Some('\n') | None => {}
                        Some(n) => out.push(n),
                    }
                }
                '*' | '?' | '[' => {
                    self.word.glob = true;
                    self.bare.push(c);
                    out.push(c);
                }
                _ => {
                    self.bare.push(c);
                    out.push(c);
                }
            }
        }
        self.push_known(&out);
    }

    /// Text inside single quotes, or any other text taken literally.
    pub fn quoted(&mut self, text: &str) {
        self.word.quoted = true;
        self.bare.push('\u{1}');
        self.push_known(text);
    }

    /// Text inside double quotes: only `\$`, `` \` ``, `\"`, `\\` and `\newline` are escapes.
    pub fn double_quoted(&mut self, text: &str) {
        self.word.quoted = true;
        self.bare.push('\u{1}');
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.peek() {
                    Some('$' | '`' | '"' | '\\') => out.push(chars.next().unwrap_or('\\')),
                    Some('\n') => {
                        chars.next();
                    }
                    _ => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        self.push_known(&out);
    }

    /// The body of `$'...'` with its C escapes decoded.
    pub fn ansi_c(&mut self, body: &str) {
        self.quoted(&decode_ansi_c(body));
    }

    /// A variable whose value is known.
    pub fn expanded(&mut self, name: &str, value: &str, in_quotes: bool) {
        self.word.expanded.push(name.to_string());
        if !in_quotes && value.chars().any(|c| c.is_ascii_whitespace()) {
            self.word.splits = true;
        }
        self.bare.push('\u{1}');
        self.push_known(value);
    }

    /// A part whose value is not known until run time.
    pub fn dynamic(&mut self, raw: &str, why: String) {
        self.numeric = false;
        self.unknown_part(raw, why);
    }

    /// A part not known until run time that is always a number (`$((...))`, `$#`, `${#x}`).
    pub fn dynamic_number(&mut self, raw: &str, why: String) {
        self.unknown_part(raw, why);
    }

    fn unknown_part(&mut self, raw: &str, why: String) {
        self.known = false;
        self.word.value = None;
        self.bare.push('\u{1}');
        self.word.display.push_str(raw);
        self.word.dynamic.push(why);
    }

    pub fn secret(&mut self, name: &str) {
        self.word.secrets.push(name.to_string());
    }

    pub fn download(&mut self) {
        self.word.from_download = true;
    }

    pub fn process(&mut self) {
        self.word.process = true;
    }

    pub fn finish(mut self) -> Word {
        if self.known && self.word.value.is_none() {
            self.word.value = Some(String::new());
        }
        self.word.brace = has_brace_expansion(&self.bare);
        self.word.inert = !self.known
            && self.numeric
            && self
                .word
                .worst
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '-' | '+' | ' '));
        self.word
    }
}

/// Whether unquoted text contains `{a,b}` or `{x..y}`.
fn has_brace_expansion(bare: &str) -> bool {
    let mut depth_start = None;
    for (i, c) in bare.char_indices() {
        match c {
            '{' => depth_start = Some(i),
            '}' => {
                if let Some(s) = depth_start {
                    let inner = &bare[s + 1..i];
                    if !inner.contains('\u{1}') && (inner.contains(',') || inner.contains("..")) {
                        return true;
                    }
                }
                depth_start = None;
            }
            _ => {}
        }
    }
    false
}

/// Decodes the escapes of a `$'...'` string body.
pub(crate) fn decode_ansi_c(body: &str) -> String {
    let mut out = String::new();
    let chars: Vec<char> = body.chars().collect();
    let mut i = 0;
    let digits = |from: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max {
            match chars.get(from + n).and_then(|c| c.to_digit(radix)) {
                Some(d) => {
                    value = value.saturating_mul(radix).saturating_add(d);
                    n += 1;
                }
                None => break,
            }
        }
        (value, n)
    };
    while i < chars.len() {
        let c = chars[i];
        if c != '\\' || i + 1 >= chars.len() {
            out.push(c);
            i += 1;
            continue;
        }
        let e = chars[i + 1];
        i += 2;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            continue;
        }
        let (code, used) = match e {
            '0'..='7' => {
                let (v, n) = digits(i - 1, 3, 8);
                (Some(v), n - 1)
            }
            'x' => match digits(i, 2, 16) {
                (_, 0) => (None, 0),
                (v, n) => (Some(v), n),
            },
            'u' => match digits(i, 4, 16) {
                (_, 0) => (None, 0),
                (v, n) => (Some(v), n),
            },
            'U' => match digits(i, 8, 16) {
                (_, 0) => (None, 0),
                (v, n) => (Some(v), n),
            },
            'c' => match chars.get(i) {
                Some(c) => (Some((*c as u32) & 0x1f), 1),
                None => (None, 0),
            },
            _ => (None, 0),
        };
        match code.and_then(char::from_u32) {
            Some(ch) => {
                out.push(ch);
                i += used;
            }
            None => {
                out.push('\\');
                out.push(e);
            }
        }
    }
    out
}

/// Whether a name needs no quoting at all: quoting such a name only serves to hide it.
pub(crate) fn is_plain(value: &str) -> bool {
    !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./+-:@%,=".contains(c))
}

/// Whether a variable name looks like it holds a secret (`API_KEY`, `GITHUB_TOKEN`).
pub(crate) fn is_secret_name(name: &str) -> bool {
    #[rustfmt::skip]
    const MARKERS: &[&str] = &[
        "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIALS", "CREDENTIAL", "APIKEY",
        "PAT",
    ];
    name.to_ascii_uppercase()
        .split('_')
        .any(|part| MARKERS.contains(&part))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ansi_c_escapes() {
        assert_eq!(decode_ansi_c(r"\x72\x6d"), "rm");
        assert_eq!(decode_ansi_c(r"\162\155"), "rm");
        assert_eq!(decode_ansi_c(r"\u0072m"), "rm");
        assert_eq!(decode_ansi_c(r"a\tb\\"), "a\tb\\");
        assert_eq!(decode_ansi_c(r"\xZZ"), r"\xZZ");
        assert_eq!(decode_ansi_c("\\"), "\\");
    }

    #[test]
    fn builder_resolves_concatenation() {
        let mut b = WordBuilder::new(r#"r""m"#);
        b.unquoted("r", true, "/h");
        b.double_quoted("");
        b.unquoted("m", false, "/h");
        let w = b.finish();
        assert_eq!(w.known(), Some("rm"));
        assert!(w.quoted);
    }

    #[test]
    fn tilde_and_globs() {
        let mut b = WordBuilder::new("~/x*");
        b.unquoted("~/x*", true, "/home/u");
        let w = b.finish();
        assert_eq!(w.known(), Some("/home/u/x*"));
        assert!(w.glob && !w.quoted);
    }

    #[test]
    fn dynamic_parts() {
        let mut b = WordBuilder::new("$X/y");
        b.dynamic("$X", "the variable $X".into());
        b.unquoted("/y", false, "/h");
        let w = b.finish();
        assert_eq!(w.known(), None);
        assert_eq!(w.display, "$X/y");
        assert_eq!(w.worst, "/y");
    }

    #[test]
    fn braces_and_names() {
        assert!(has_brace_expansion("{rm,-rf,/}"));
        assert!(has_brace_expansion("x{1..3}"));
        assert!(!has_brace_expansion("{}"));
        assert!(!has_brace_expansion("{\u{1},}"));
        assert!(is_plain("rm") && is_plain("./x.sh") && !is_plain("my tool"));
        assert!(is_secret_name("OPENAI_API_KEY") && is_secret_name("github_token"));
        assert!(!is_secret_name("SSH_AUTH_SOCK") && !is_secret_name("KEYBOARD"));
    }
}
