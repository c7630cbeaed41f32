//! Permission rules: `[permissions] allow / ask / deny` in the configuration.

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::context::AnalysisContext;
use crate::error::PolicyError;
use crate::sensitive::{PathKey, PathPattern};

/// The `[permissions]` table of the configuration file.
///
/// ```toml
/// [permissions]
/// allow = ["shell(git status *)", "shell(npm run test:*)", "edit(src/**)", "tool(ast_edit)"]
/// ask = ["shell(git push *)"]
/// deny = ["read(**/.env)", "shell(rm -rf *)"]
/// sensitive_paths = ["!.env.example", "config/credentials.*"]
/// ```
///
/// Shell patterns match the normalised text of each simple command (program and arguments
/// joined by single spaces, quotes removed). `*` matches any text; a pattern ending in ` *`
/// matches the prefix alone or followed by a space and anything, one ending in `:*` the
/// prefix alone or followed by a space, `:` and anything (`npm run test:*` matches
/// `npm run test`, `npm run test:unit`, `npm run test -- -w`). `\*` is a literal star.
/// `read(GLOB)` matches files read, `edit(GLOB)` and `write(GLOB)` (synonyms) files changed,
/// with the gitignore-style syntax of [`SensitivePaths`](crate::SensitivePaths);
/// `tool(NAME)` or a bare `NAME` matches a tool (`*` allowed), and `shell` as a tool name
/// matches every shell command. `fetch(HOST)` matches fetches from a host, compared without
/// case (`fetch(docs.rs)`; `*` is any text, so `fetch(*.github.com)` matches `api.github.com`
/// but not `github.com`; an IPv6 address without brackets). Unknown keys in the table are an error, so a typo such as
/// `alow` cannot silently drop rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Rules that allow without asking (a compound command needs every part allowed).
    pub allow: Vec<String>,
    /// Rules that always ask.
    pub ask: Vec<String>,
    /// Rules that always deny; they win over everything.
    pub deny: Vec<String>,
    /// Paths that are sensitive: reading or changing them asks. Gitignore syntax; these are
    /// added after the built-in defaults (`.env*`, `*.pem`, `*.key`, `id_rsa*`, `.git/**`,
    /// `.lathe/**`, `**/secrets*`), and `!pattern` exempts a path.
    pub sensitive_paths: Vec<String>,
}

#[derive(Debug, Clone)]
enum Matcher {
    Shell(Regex),
    Read(PathPattern),
    Edit(PathPattern),
    Tool(Regex),
    Fetch(Regex),
}

/// One parsed permission rule.
#[derive(Debug, Clone)]
pub struct Rule {
    text: String,
    matcher: Matcher,
}

/// Turns a `*`-glob into an anchored regex; `tail` handles the trailing ` *` / `:*` forms.
fn glob_regex(pattern: &str, tail: &str) -> Result<Regex, regex::Error> {
    let mut re = String::from("(?s)^");
    let mut chars = pattern.chars().peekable();
    let mut literal = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\\' if matches!(chars.peek(), Some('*' | '\\')) => {
                literal.push(chars.next().unwrap_or('\\'))
            }
            '*' => {
                re.push_str(&regex::escape(&literal));
                literal.clear();
                re.push_str(".*");
            }
            _ => literal.push(c),
        }
    }
    re.push_str(&regex::escape(&literal));
    re.push_str(tail);
    re.push('$');
    Regex::new(&re)
}

/// Collapses runs of blanks, as the normalised command text has single spaces.
fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Rule {
    /// Parses `shell(..)`, `read(..)`, `edit(..)`, `write(..)`, `fetch(..)`, `tool(..)` or a
    /// bare tool name.
    /// `bash(..)` is accepted as a synonym of `shell(..)`. Path patterns need the context to
    /// expand `~/`.
    pub fn parse(text: &str, ctx: &AnalysisContext) -> Result<Rule, PolicyError> {
        let invalid = |problem: String| PolicyError::InvalidRule {
            rule: text.to_string(),
            problem,
        };
        let t = text.trim();
        let matcher = match t.find('(') {
            Some(open) => {
                let kind = t[..open].trim().to_ascii_lowercase();
                let inner = t[open + 1..]
                    .strip_suffix(')')
                    .ok_or_else(|| invalid("missing the closing `)`".into()))?
                    .trim();
                if inner.is_empty() {
                    return Err(invalid(
                        "the pattern inside the parentheses is empty".into(),
                    ));
                }
                match kind.as_str() {
                    "shell" | "bash" => {
                        let p = squeeze(inner);
                        let (body, tail) = if let Some(b) = p.strip_suffix(" *") {
                            (b.to_string(), "(?: .*)?")
                        } else if let Some(b) = p.strip_suffix(":*") {
                            (b.to_string(), "(?:[ :].*)?")
                        } else {
                            (p, "")
                        };
                        Matcher::Shell(glob_regex(&body, tail).map_err(|e| invalid(e.to_string()))?)
                    }
                    "read" => Matcher::Read(PathPattern::new(inner, ctx, false)?),
                    "edit" | "write" => Matcher::Edit(PathPattern::new(inner, ctx, false)?),
                    "fetch" => Matcher::Fetch(
                        glob_regex(&host_key(inner), "").map_err(|e| invalid(e.to_string()))?,
                    ),
                    "tool" => {
                        Matcher::Tool(glob_regex(inner, "").map_err(|e| invalid(e.to_string()))?)
                    }
                    other => return Err(invalid(format!("unknown rule kind `{other}`"))),
                }
            }
            None => {
                let plain = !t.is_empty()
                    && t.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "_-.*".contains(c));
                if !plain {
                    return Err(invalid("a bare rule must be a tool name".into()));
                }
                Matcher::Tool(glob_regex(t, "").map_err(|e| invalid(e.to_string()))?)
            }
        };
        Ok(Rule {
            text: t.to_string(),
            matcher,
        })
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether this shell rule matches a simple command's normalised text.
    pub fn matches_command(&self, text: &str) -> bool {
        matches!(&self.matcher, Matcher::Shell(re) if re.is_match(&squeeze(text)))
    }

    /// Whether this tool rule names the tool.
    pub fn matches_tool(&self, name: &str) -> bool {
        matches!(&self.matcher, Matcher::Tool(re) if re.is_match(name))
    }

    /// Whether this fetch rule names the host (a name or an address; case, IPv6 brackets and a
    /// trailing dot do not matter).
    pub fn matches_fetch(&self, host: &str) -> bool {
        matches!(&self.matcher, Matcher::Fetch(re) if re.is_match(&host_key(host)))
    }

    /// Whether this is a fetch rule that names hosts, not one that matches every host
    /// (`fetch(*)`): only such a rule lets a fetch reach a private address.
    pub fn names_hosts(&self) -> bool {
        matches!(&self.matcher, Matcher::Fetch(re) if !re.is_match("") )
    }

    pub(crate) fn matches_read(&self, key: &PathKey) -> bool {
        matches!(&self.matcher, Matcher::Read(p) if p.matches(key))
    }

    pub(crate) fn matches_edit(&self, key: &PathKey) -> bool {
        matches!(&self.matcher, Matcher::Edit(p) if p.matches(key))
    }
}

/// A host as rules compare it: lower case, without IPv6 brackets or a trailing dot.
fn host_key(host: &str) -> String {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// The three rule lists, parsed.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    /// Rules that allow.
    pub allow: Vec<Rule>,
    /// Rules that ask.
    pub ask: Vec<Rule>,
    /// Rules that deny.
    pub deny: Vec<Rule>,
}

impl RuleSet {
    /// Parses every rule of the configuration; the first invalid one is the error.
    pub fn new(config: &PermissionsConfig, ctx: &AnalysisContext) -> Result<Self, PolicyError> {
        let parse = |list: &[String]| {
            list.iter()
                .map(|r| Rule::parse(r, ctx))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(RuleSet {
            allow: parse(&config.allow)?,
            ask: parse(&config.ask)?,
            deny: parse(&config.deny)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> Rule {
        let ctx = AnalysisContext::new("/w", "/h");
        Rule::parse(text, &ctx).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn shell_patterns() {
        let cases = [
            ("shell(git status*)", "git status", true),
            ("shell(git status*)", "git status -s", true),
            ("shell(git status *)", "git status", true),
            ("shell(git status *)", "git status --short", true),
            ("shell(git status *)", "git statusx", false),
            ("shell(npm run test:*)", "npm run test", true),
            ("shell(npm run test:*)", "npm run test:unit", true),
            ("shell(npm run test:*)", "npm run test -- --watch", true),
            ("shell(npm run test:*)", "npm run testing", false),
            ("shell(cargo test)", "cargo test", true),
            ("shell(cargo test)", "cargo test -p x", false),
            ("shell(*)", "anything at all", true),
            ("shell(rm \\*.o)", "rm *.o", true),
            ("shell(rm \\*.o)", "rm a.o", false),
            ("Bash(ls  -la *)", "ls -la src", true),
            ("shell(echo a.b)", "echo axb", false),
        ];
        for (r, text, expected) in cases {
            assert_eq!(rule(r).matches_command(text), expected, "{r} vs {text}");
        }
    }

    #[test]
    fn tools_and_paths() {
        assert!(rule("tool(ast_edit)").matches_tool("ast_edit"));
        assert!(rule("ast_edit").matches_tool("ast_edit"));
        assert!(rule("mcp_*").matches_tool("mcp_search"));
        assert!(!rule("tool(ast_edit)").matches_tool("ast_edit2"));
        let ctx = AnalysisContext::new("/w", "/h");
        let key = PathKey::from_text("src/a/b.rs", &ctx);
        assert!(rule("edit(src/**)").matches_edit(&key));
        assert!(rule("write(src/**)").matches_edit(&key));
        assert!(!rule("read(src/**)").matches_edit(&key));
        assert!(rule("read(**/.env)").matches_read(&PathKey::from_text("a/.env", &ctx)));
    }

    #[test]
    fn fetch_rules_name_hosts() {
        assert!(rule("fetch(docs.rs)").matches_fetch("docs.rs"));
        assert!(rule("fetch(docs.rs)").matches_fetch("Docs.RS."));
        assert!(!rule("fetch(docs.rs)").matches_fetch("evil-docs.rs"));
        assert!(!rule("fetch(docs.rs)").matches_fetch("docs.rs.evil.com"));
        assert!(rule("fetch(*.github.com)").matches_fetch("api.github.com"));
        assert!(rule("fetch(*.github.com)").matches_fetch("a.b.github.com"));
        assert!(!rule("fetch(*.github.com)").matches_fetch("github.com"));
        assert!(!rule("fetch(*.github.com)").matches_fetch("evilgithub.com"));
        assert!(rule("fetch([::1])").matches_fetch("::1"));
        assert!(rule("fetch(::1)").matches_fetch("[::1]"));
        assert!(!rule("fetch(docs.rs)").matches_tool("docs.rs"));
        assert!(!rule("tool(web_fetch)").matches_fetch("web_fetch"));
        assert!(rule("fetch(docs.rs)").names_hosts());
        assert!(rule("fetch(*.github.com)").names_hosts());
        assert!(!rule("fetch(*)").names_hosts());
        assert!(!rule("tool(web_fetch)").names_hosts());
    }

    #[test]
    fn invalid_rules_say_why() {
        let ctx = AnalysisContext::new("/w", "/h");
        for bad in [
            "shell(ls",
            "frobnicate(x)",
            "shell()",
            "has space",
            "read(!x)",
        ] {
            let err = Rule::parse(bad, &ctx)
                .map(|_| ())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.contains(bad) || err.contains('x'), "{bad}: {err}");
        }
    }

    #[test]
    fn config_deserialises_from_toml() {
        let text = "allow = [\"shell(git status *)\"]\ndeny = [\"read(**/.env)\"]\nsensitive_paths = [\"!.env.example\"]\n";
        let config: PermissionsConfig = toml::from_str(text).unwrap_or_default();
        assert_eq!(config.allow, vec!["shell(git status *)".to_string()]);
        assert_eq!(config.sensitive_paths, vec!["!.env.example".to_string()]);
        assert!(toml::from_str::<PermissionsConfig>("alow = []").is_err());
    }
}
