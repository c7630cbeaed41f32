//! Path patterns in gitignore syntax, and the sensitive paths that make Lathe ask.

use std::sync::OnceLock;

use globset::{GlobBuilder, GlobMatcher};

use crate::context::AnalysisContext;
use crate::error::PolicyError;
use crate::glob::{Flavor, Glob, common, examples_of_pattern, expand_braces, instance};
use crate::paths::{normalize, resolve, workspace_relative};

/// The sensitive-path patterns used when the configuration adds none.
#[rustfmt::skip]
pub const DEFAULT_SENSITIVE_PATHS: &[&str] = &[
    ".env*", "*.pem", "*.key", "id_rsa*", ".git/**", ".lathe/**", "**/secrets*",
];

/// A path as the patterns see it: relative to the workspace when inside, absolute always.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PathKey {
    pub relative: Option<String>,
    pub absolute: Option<String>,
}

impl PathKey {
    /// A path given by a tool: relative paths are relative to the workspace root.
    pub fn from_text(path: &str, ctx: &AnalysisContext) -> PathKey {
        let absolute = resolve(path, Some(ctx.workspace()), ctx);
        PathKey {
            relative: absolute.as_deref().and_then(|a| workspace_relative(a, ctx)),
            absolute,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Anchor {
    /// Matched against the workspace-relative path.
    Workspace,
    /// Matched at any depth, inside the workspace or out.
    Anywhere,
    /// Matched against the absolute path.
    Absolute,
}

/// One compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct PathPattern {
    pub text: String,
    pub negated: bool,
    anchor: Anchor,
    /// The parsed globs (checked when the pattern is made).
    globs: Vec<globset::Glob>,
    /// Their matchers, compiled when the pattern is first matched: compiling is most of what
    /// making a policy costs, and a call that names no path never needs them.
    matchers: OnceLock<Vec<GlobMatcher>>,
    /// The globs as absolute paths (`/**/` for "anywhere"), for comparing with shell globs.
    absolute_globs: Vec<String>,
}

impl PathPattern {
    pub fn new(
        pattern: &str,
        ctx: &AnalysisContext,
        allow_negation: bool,
    ) -> Result<Self, PolicyError> {
        let invalid = |problem: &str| PolicyError::InvalidPattern {
            pattern: pattern.to_string(),
            problem: problem.to_string(),
        };
        let mut p = pattern.trim();
        let negated = p.starts_with('!');
        if negated {
            if !allow_negation {
                return Err(invalid("`!` is only meaningful in sensitive_paths"));
            }
            p = &p[1..];
        }
        if p.is_empty() {
            return Err(invalid("the pattern is empty"));
        }
        let (anchor, body) = if let Some(rest) = p.strip_prefix("~/") {
            (Anchor::Absolute, format!("{}/{}", ctx.home(), rest))
        } else if let Some(rest) = p.strip_prefix("//") {
            (Anchor::Absolute, format!("/{rest}"))
        } else if let Some(rest) = p.strip_prefix('/') {
            (Anchor::Workspace, rest.to_string())
        } else {
            let inner = p.trim_end_matches('/').trim_end_matches("/**");
            if inner.contains('/') && !inner.starts_with("**/") {
                (Anchor::Workspace, p.to_string())
            } else {
                (Anchor::Anywhere, p.to_string())
            }
        };
        let body = body.trim_end_matches('/');
        let base = body.strip_suffix("/**").unwrap_or(body);
        let base = if anchor == Anchor::Anywhere && !base.starts_with("**/") {
            format!("**/{base}")
        } else {
            base.to_string()
        };
        let mut globs = Vec::new();
        let mut absolute_globs = Vec::new();
        for g in [base.clone(), format!("{base}/**")] {
            absolute_globs.push(match anchor {
                Anchor::Absolute => g.clone(),
                Anchor::Anywhere => format!("/{g}"),
                Anchor::Workspace => format!("{}/{g}", crate::glob::escape(ctx.workspace())),
            });
            let glob = GlobBuilder::new(&g)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| invalid(&e.kind().to_string()))?;
            globs.push(glob);
        }
        Ok(PathPattern {
            text: pattern.trim().to_string(),
            negated,
            anchor,
            globs,
            matchers: OnceLock::new(),
            absolute_globs,
        })
    }

    pub fn matches(&self, key: &PathKey) -> bool {
        let matchers = self.matchers.get_or_init(|| {
            self.globs
                .iter()
                .map(globset::Glob::compile_matcher)
                .collect()
        });
        self.matches_with(key, |s: &str| matchers.iter().any(|g| g.is_match(s)))
    }

    /// Whether the pattern matches `key`, with `hit` saying whether one of its globs matches a
    /// string (the pattern's own matchers, or a set of many patterns' globs).
    fn matches_with(&self, key: &PathKey, hit: impl Fn(&str) -> bool) -> bool {
        match self.anchor {
            Anchor::Workspace => key
                .relative
                .as_deref()
                .is_some_and(|r| !r.is_empty() && hit(r)),
            Anchor::Absolute => key.absolute.as_deref().is_some_and(hit),
            Anchor::Anywhere => {
                key.relative
                    .as_deref()
                    .is_some_and(|r| !r.is_empty() && hit(r))
                    || (key.relative.is_none()
                        && key
                            .absolute
                            .as_deref()
                            .is_some_and(|a| hit(a.trim_start_matches('/'))))
            }
        }
    }
}

/// The patterns that make reading or changing a file ask.
///
/// A pattern without a slash matches the name at any depth (`.env*`); one with a slash at the
/// start or in the middle is anchored to the workspace root (`.git/**`, `/build`); `**`
/// crosses directories, `*` does not; a trailing `/` or `/**` also matches everything below.
/// `~/` starts a pattern in the home directory and `//` an absolute one. In
/// `sensitive_paths`, a leading `!` exempts what an earlier pattern matched (the last match
/// wins, as in gitignore).
#[derive(Debug, Clone)]
pub struct SensitivePaths {
    patterns: Vec<PathPattern>,
    /// Every pattern's globs in one set, built when a path is first checked: one set costs far
    /// less to build than a matcher per glob, and a policy that checks no path builds none.
    set: OnceLock<globset::GlobSet>,
    /// For each pattern that is not a negation: globs of examples of what it matches (name
    /// wildcards filled in, `**` kept), which a shell glob is checked against.
    examples: Vec<Glob>,
}

/// Fillers for the `*` of a pattern or glob when making examples: an empty and a short name
/// part (`.env*` gives `.env`, `*.pem` gives `x.pem`).
const FILLERS: [&str; 2] = ["", "x"];

/// Fillers for a shell glob's own wildcards: a name part first (`secrets.*` gives
/// `secrets.x`, `.lathe/*` gives `.lathe/x`).
const GLOB_FILLERS: [&str; 2] = ["x", ""];

impl SensitivePaths {
    /// The defaults ([`DEFAULT_SENSITIVE_PATHS`]) followed by `extra` patterns; a later
    /// `!pattern` exempts what an earlier one matched.
    pub fn new(extra: &[String], ctx: &AnalysisContext) -> Result<Self, PolicyError> {
        let mut patterns = Vec::new();
        for p in DEFAULT_SENSITIVE_PATHS
            .iter()
            .copied()
            .chain(extra.iter().map(String::as_str))
        {
            patterns.push(PathPattern::new(p, ctx, true)?);
        }
        let mut examples = Vec::new();
        for p in patterns.iter().filter(|p| !p.negated) {
            // "everything below" a name with wildcards (`*.pem/**`) would make a directory
            // `x.pem` of examples; the glob's own examples find such directories instead
            let below_named = !p.absolute_globs[0]
                .rsplit('/')
                .next()
                .unwrap_or("")
                .contains(['*', '?', '[']);
            for (k, g) in p.absolute_globs.iter().enumerate() {
                if k == 1 && !below_named {
                    continue;
                }
                for alt in expand_braces(g).unwrap_or_default() {
                    for filler in FILLERS {
                        examples.extend(Glob::new(
                            &examples_of_pattern(&alt, filler),
                            Flavor::Pattern,
                        ));
                    }
                }
            }
        }
        Ok(SensitivePaths {
            patterns,
            set: OnceLock::new(),
            examples,
        })
    }

    /// For a path with shell glob characters or braces (absolute, as the shell would expand
    /// it): the pattern that makes a name it can expand to sensitive, and that name.
    ///
    /// The glob is compared with examples of each pattern (`.e*` can expand to `.env`) and
    /// examples of the glob with the patterns (`secrets.*` to `secrets.x`). Wildcards follow
    /// bash: `*` does not match a leading dot, so `cat *` cannot name `.env`, but it can name
    /// `x.pem`.
    pub(crate) fn matching_glob(
        &self,
        glob_abs: &str,
        ctx: &AnalysisContext,
    ) -> Option<(String, String)> {
        let Some(alternatives) = expand_braces(glob_abs) else {
            return Some((
                "(every pattern)".to_string(),
                format!("{glob_abs} expands to too many names to check"),
            ));
        };
        let key = |path: &str| PathKey::from_text(&normalize(path), ctx);
        for alt in &alternatives {
            for filler in GLOB_FILLERS {
                let name = instance(alt, filler);
                if let Some(p) = self.matching_key(&key(&name)) {
                    return Some((p.to_string(), name));
                }
            }
            let Some(glob) = Glob::new(alt, Flavor::Shell) else {
                continue;
            };
            for example in &self.examples {
                if let Some(name) = common(&glob, example)
                    && let Some(p) = self.matching_key(&key(&name))
                {
                    return Some((p.to_string(), name));
                }
            }
        }
        None
    }

    /// The pattern that makes `path` (relative to the workspace root, or absolute) sensitive.
    pub fn matching(&self, path: &str, ctx: &AnalysisContext) -> Option<&str> {
        self.matching_key(&PathKey::from_text(&normalize(path), ctx))
    }

    pub(crate) fn matching_key(&self, key: &PathKey) -> Option<&str> {
        let set = self.set.get_or_init(|| {
            let mut builder = globset::GlobSetBuilder::new();
            for glob in self.patterns.iter().flat_map(|p| &p.globs) {
                builder.add(glob.clone());
            }
            // The globs were checked when each pattern was made.
            builder
                .build()
                .unwrap_or_else(|_| globset::GlobSet::empty())
        });
        // Which globs match each string a pattern may be matched against, once for all.
        let strings = [
            key.relative.as_deref(),
            key.absolute.as_deref(),
            key.absolute.as_deref().map(|a| a.trim_start_matches('/')),
        ];
        let hits: Vec<(&str, Vec<usize>)> = strings
            .into_iter()
            .flatten()
            .map(|s| (s, set.matches(s)))
            .collect();
        let mut found = None;
        let mut first = 0;
        for p in &self.patterns {
            let own = first..first + p.globs.len();
            first = own.end;
            let hit = |s: &str| {
                hits.iter()
                    .find(|(candidate, _)| *candidate == s)
                    .is_some_and(|(_, matched)| matched.iter().any(|g| own.contains(g)))
            };
            if p.matches_with(key, hit) {
                found = if p.negated {
                    None
                } else {
                    Some(p.text.as_str())
                };
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> AnalysisContext {
        AnalysisContext::new("/home/u/proj", "/home/u")
    }

    #[test]
    fn defaults() {
        let c = ctx();
        let s = SensitivePaths::new(&[], &c).expect("defaults compile");
        for p in [
            ".env",
            ".env.local",
            "config/.env",
            "certs/server.pem",
            "a/b/tls.key",
            "id_rsa",
            "id_rsa.pub",
            ".git/config",
            ".git",
            ".lathe/config.toml",
            "deploy/secrets.yaml",
            "secrets",
            "/home/u/other/.env",
        ] {
            assert!(s.matching(p, &c).is_some(), "{p} should be sensitive");
        }
        for p in [
            "src/main.rs",
            "README.md",
            "environment.md",
            "keys.rs",
            "sub/.git-keep",
            "my.env",
        ] {
            assert!(s.matching(p, &c).is_none(), "{p} should not be sensitive");
        }
    }

    #[test]
    fn issue_12_7_globs_that_can_name_a_sensitive_path() {
        let c = ctx();
        let s = SensitivePaths::new(&["!.env.example".to_string()], &c).expect("compiles");
        let at = |g: &str| s.matching_glob(&format!("/home/u/proj/{g}"), &c);
        for g in [
            ".e*",
            ".[e]nv",
            ".en?",
            "{.env,README.md}",
            ".env.{local,prod}",
            "*/.env",
            "**/.env",
            ".g*/config",
            ".lathe/*",
            ".l*/config.toml",
            "*.pem",
            "certs/*",
            "secrets.*",
            "id_*",
            "*",
            "conf/{a,b}.key",
            ".env.exampl?",
            "x{1..3}.key",
        ] {
            assert!(at(g).is_some(), "{g} can name a sensitive path");
        }
        for g in [
            "*.rs",
            "src/*.rs",
            "build/*.o",
            "*.{rs,toml}",
            "docs/*.md",
            "target/debug/*.d",
            "{a,b}.txt",
            "[!.]env",
            "x{1..3}.txt",
            ".env.example",
        ] {
            assert!(at(g).is_none(), "{g} names no sensitive path: {:?}", at(g));
        }
    }

    #[test]
    fn the_shared_set_answers_as_each_pattern_alone() {
        let c = ctx();
        let extra: Vec<String> = [
            "!.env.example",
            "/build",
            "config/*.toml",
            "~/.aws/**",
            "//etc/shadow",
            "*.sql[ab]",
            "!docs/secrets.md",
        ]
        .iter()
        .map(|p| (*p).to_owned())
        .collect();
        let s = SensitivePaths::new(&extra, &c).unwrap();
        let alone = |key: &PathKey| {
            let mut found = None;
            for p in &s.patterns {
                if p.matches(key) {
                    found = if p.negated {
                        None
                    } else {
                        Some(p.text.as_str())
                    };
                }
            }
            found
        };
        for path in [
            ".env",
            ".env.example",
            "a/.env.local",
            "x.pem",
            "deep/dir/x.key",
            "id_rsa.pub",
            ".git/config",
            ".git",
            ".lathe/config.toml",
            "src/secrets.rs",
            "docs/secrets.md",
            "build",
            "build/out.o",
            "src/build",
            "config/a.toml",
            "config/x/a.toml",
            "a.sqla",
            "a.sqlc",
            "src/main.rs",
            "/etc/shadow",
            "/etc/passwd",
            "/home/u/.aws/credentials",
            "/elsewhere/.env",
            "/elsewhere/x.pem",
            "../outside/.git/HEAD",
            "",
        ] {
            let key = PathKey::from_text(path, &c);
            assert_eq!(s.matching_key(&key), alone(&key), "{path}");
        }
    }

    #[test]
    fn negation_and_anchors() {
        let c = ctx();
        let extra = vec![
            "!.env.example".to_string(),
            "/private/**".to_string(),
            "~/notes/*.txt".to_string(),
        ];
        let s = SensitivePaths::new(&extra, &c).expect("compiles");
        assert!(s.matching(".env.example", &c).is_none());
        assert!(s.matching(".env", &c).is_some());
        assert!(s.matching("private/a/b", &c).is_some());
        assert!(s.matching("sub/private/a", &c).is_none());
        assert!(s.matching("/home/u/notes/x.txt", &c).is_some());
        assert!(PathPattern::new("[z-a]", &c, true).is_err());
        assert!(PathPattern::new("!x", &c, false).is_err());
    }
}
