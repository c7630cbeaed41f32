//! What the analysis needs to know about the machine, passed in as plain values.

use std::path::Path;

use crate::paths::normalize;
use crate::resolved::PathResolver;

/// Where the workspace and home directory are, and where commands start.
///
/// The analysis never touches the filesystem: these paths are compared lexically with the
/// paths a command names, to tell writes inside the workspace from writes elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnalysisContext {
    workspace: String,
    home: String,
    cwd: String,
    writable: Vec<String>,
    resolver: Option<PathResolver>,
}

/// Directories that are fine to write besides the workspace; the sandbox allows them too.
const DEFAULT_WRITABLE: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

impl AnalysisContext {
    /// A context for a workspace root and a home directory (both absolute). Commands start in
    /// the workspace root. By default, `/tmp`, `/var/tmp` and `/dev/shm` are fine places to
    /// write besides the workspace.
    pub fn new(workspace: impl AsRef<Path>, home: impl AsRef<Path>) -> Self {
        let workspace = normalize(&workspace.as_ref().to_string_lossy());
        let home = normalize(&home.as_ref().to_string_lossy());
        AnalysisContext {
            cwd: workspace.clone(),
            workspace,
            home,
            writable: DEFAULT_WRITABLE.iter().map(|s| s.to_string()).collect(),
            resolver: None,
        }
    }

    /// Sets the directory the command starts in (absolute, or relative to the workspace).
    /// By default, this is the workspace root.
    pub fn with_cwd(mut self, cwd: impl AsRef<Path>) -> Self {
        let cwd = cwd.as_ref().to_string_lossy();
        self.cwd = if cwd.starts_with('/') {
            normalize(&cwd)
        } else {
            normalize(&format!("{}/{}", self.workspace, cwd))
        };
        self
    }

    /// Adds a directory that commands may write to besides the workspace (for example the
    /// session's temporary directory or a configured extra path).
    pub fn with_writable_root(mut self, root: impl AsRef<Path>) -> Self {
        let root = normalize(&root.as_ref().to_string_lossy());
        if !self.writable.contains(&root) {
            self.writable.push(root);
        }
        self
    }

    /// Resolves the paths commands name through symlinks (the caller does the I/O), so that
    /// sensitive files and credentials are judged where a path really leads as well as by its
    /// text. By default, paths are judged by their text only.
    pub fn with_resolver(mut self, resolver: PathResolver) -> Self {
        self.resolver = Some(resolver);
        self
    }

    /// The resolver set with [`with_resolver`](Self::with_resolver).
    pub fn resolver(&self) -> Option<&PathResolver> {
        self.resolver.as_ref()
    }

    /// The workspace root, normalised.
    pub fn workspace(&self) -> &str {
        &self.workspace
    }

    /// The home directory, normalised.
    pub fn home(&self) -> &str {
        &self.home
    }

    /// The directory commands start in.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// Directories besides the workspace that are fine to write.
    pub fn writable_roots(&self) -> &[String] {
        &self.writable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_and_cwd_defaults_to_workspace() {
        let ctx = AnalysisContext::new("/home/u/proj/", "/home/u");
        assert_eq!(ctx.workspace(), "/home/u/proj");
        assert_eq!(ctx.cwd(), "/home/u/proj");
        let ctx = ctx
            .with_cwd("src/../crates")
            .with_writable_root("/var/cache/x/");
        assert_eq!(ctx.cwd(), "/home/u/proj/crates");
        assert!(ctx.writable_roots().contains(&"/var/cache/x".to_string()));
    }
}
