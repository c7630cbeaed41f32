//! Paths judged as they resolve, not only as they are written.
//!
//! A symlink inside the workspace makes a harmless-looking path name a sensitive file:
//! `cfg/config.toml` with `cfg -> .lathe` is `.lathe/config.toml`, `notenv -> .env` is `.env`.
//! The policy does no I/O, so the caller resolves: a file tool's path arrives as a
//! [`FileTarget`] (the text and where it leads), and shell command paths are resolved through a
//! [`PathResolver`] the caller puts in the [`AnalysisContext`]. Each path is judged both ways and
//! the stricter judgment wins: a rule that allows the name as written does not allow the file it
//! leads to.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::analysis::{Access, SimpleCommand};
use crate::context::AnalysisContext;
use crate::paths::{credential, normalize, workspace_relative};
use crate::sensitive::PathKey;
use crate::severity::Severity;

/// The path of a file action: as the tool was given it, and where it resolves.
///
/// Built by the caller that can look at the filesystem (Lathe's workspace resolves every
/// component, following symlinks, and keeps a missing tail as written). Both paths are judged,
/// and the stricter decision wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileTarget {
    given: String,
    resolved: Option<String>,
}

impl FileTarget {
    /// A path and its resolution: `resolved` is absolute and free of symlinks (components that
    /// do not exist yet kept as written).
    pub fn resolved(given: impl Into<String>, resolved: impl AsRef<Path>) -> Self {
        FileTarget {
            given: given.into(),
            resolved: Some(normalize(&resolved.as_ref().to_string_lossy())),
        }
    }

    /// A path nobody resolved, judged by its text alone. Only for callers with no filesystem to
    /// look at (tests, a path checked in the abstract), or when resolution failed (a symlink
    /// loop, which the tools refuse).
    pub fn unresolved(given: impl Into<String>) -> Self {
        FileTarget {
            given: given.into(),
            resolved: None,
        }
    }

    /// The path as given.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// The resolved absolute path, when the caller resolved it.
    pub fn resolved_path(&self) -> Option<&str> {
        self.resolved.as_deref()
    }

    /// The resolved path when it differs from the given one read lexically (a symlink on the
    /// way), shown relative to the workspace root when inside it, absolute otherwise.
    pub fn redirected(&self, ctx: &AnalysisContext) -> Option<String> {
        let resolved = self.resolved.as_deref()?;
        let lexical = PathKey::from_text(&self.given, ctx).absolute;
        if lexical.as_deref() == Some(resolved) {
            return None;
        }
        Some(shown(resolved, ctx))
    }

    /// The paths to judge, each with the reason that explains it: the given one, then the
    /// resolved one when a symlink leads elsewhere.
    pub(crate) fn judged(&self, ctx: &AnalysisContext) -> Vec<(String, Option<String>)> {
        let mut out = vec![(self.given.clone(), None)];
        if let Some(shown) = self.redirected(ctx) {
            let note = format!(
                "`{}` resolves through a symlink to `{shown}`, which is judged too (the stricter \
                 judgment wins)",
                self.given
            );
            out.push((shown, Some(note)));
        }
        out
    }
}

fn shown(abs: &str, ctx: &AnalysisContext) -> String {
    match workspace_relative(abs, ctx) {
        Some(rel) if rel.is_empty() => ".".to_owned(),
        Some(rel) => rel,
        None => abs.to_owned(),
    }
}

/// Maps an absolute path to where it resolves (symlinks followed in every existing component,
/// a missing tail kept), or `None` when it cannot tell. Supplied by the caller, which does the
/// I/O; see [`AnalysisContext::with_resolver`].
#[derive(Clone)]
pub struct PathResolver(Arc<ResolveFn>);

/// The function behind a [`PathResolver`].
type ResolveFn = dyn Fn(&str) -> Option<String> + Send + Sync;

impl PathResolver {
    /// A resolver from a function.
    pub fn new(resolve: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        PathResolver(Arc::new(resolve))
    }

    /// Where `abs` resolves, normalised, when it is somewhere else.
    pub(crate) fn elsewhere(&self, abs: &str) -> Option<String> {
        let resolved = normalize(&(self.0)(abs)?);
        (resolved != abs).then_some(resolved)
    }
}

impl fmt::Debug for PathResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PathResolver(..)")
    }
}

impl PartialEq for PathResolver {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for PathResolver {}

/// A path a command names that resolves elsewhere.
pub(crate) struct Redirected {
    /// How it is shown: the argument and where it leads.
    pub shown: String,
    /// The resolved path, as the patterns see it.
    pub key: PathKey,
    /// Whether the command writes it.
    pub write: bool,
}

/// The paths of `command` that the context's resolver says lead elsewhere (none without a
/// resolver). Paths only named for their metadata are left out, as the sensitive check does.
pub(crate) fn command_paths(command: &SimpleCommand, ctx: &AnalysisContext) -> Vec<Redirected> {
    let Some(resolver) = ctx.resolver() else {
        return Vec::new();
    };
    command
        .paths
        .iter()
        .filter(|p| p.access != Access::Metadata)
        .filter_map(|p| {
            let abs = p.path.as_deref()?;
            let resolved = resolver.elsewhere(abs)?;
            Some(Redirected {
                shown: format!("{} (resolves to {})", p.text, shown(&resolved, ctx)),
                key: PathKey {
                    relative: workspace_relative(&resolved, ctx),
                    absolute: Some(resolved),
                },
                write: p.access == Access::Write,
            })
        })
        .collect()
}

/// What the resolved paths of `command` add to its judgment: reading or writing a credential
/// through a symlink is as critical as naming it.
pub(crate) fn command_findings(
    command: &SimpleCommand,
    ctx: &AnalysisContext,
) -> Vec<(Severity, String)> {
    command_paths(command, ctx)
        .into_iter()
        .filter_map(|r| {
            let what = credential(r.key.absolute.as_deref()?, ctx)?;
            let verb = if r.write { "writes" } else { "reads" };
            Some((Severity::Critical, format!("{verb} {what}: `{}`", r.shown)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> AnalysisContext {
        AnalysisContext::new("/home/u/proj", "/home/u")
    }

    #[test]
    fn a_target_is_judged_twice_only_when_a_symlink_leads_elsewhere() {
        let c = ctx();
        let same = FileTarget::resolved("src/a.rs", "/home/u/proj/src/a.rs");
        assert_eq!(same.judged(&c).len(), 1);
        let linked = FileTarget::resolved("cfg/config.toml", "/home/u/proj/.lathe/config.toml");
        let judged = linked.judged(&c);
        assert_eq!(judged[1].0, ".lathe/config.toml");
        assert!(judged[1].1.as_deref().unwrap().contains("symlink"));
        let out = FileTarget::resolved("notes", "/home/u/.ssh/id_rsa");
        assert_eq!(out.redirected(&c).as_deref(), Some("/home/u/.ssh/id_rsa"));
        assert_eq!(FileTarget::unresolved("x").judged(&c).len(), 1);
    }
}
