//! What every command that runs tools sets up: the workspace, the configuration and the session.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use lathe_runtime::{Session, Workspace};
use lathe_runtime::{commands, memory};

use crate::args::CommonArgs;
use crate::config::{self, Config};
use crate::trust::WorkspaceFile;

/// A loaded workspace and configuration.
pub struct Setup {
    /// The workspace root as given (canonicalised by [`Workspace`]).
    pub root: PathBuf,
    /// The merged configuration.
    pub config: Config,
    /// The workspace's own configuration file and its trust state, when there is one.
    pub workspace_file: Option<WorkspaceFile>,
}

impl Setup {
    /// Finds the workspace (the flag, else the current directory) and loads the configuration;
    /// when the workspace's file had settings left out because it is not trusted, says so on
    /// stderr (every front end but `lathe chat`, which asks instead).
    pub fn load(common: &CommonArgs) -> anyhow::Result<Setup> {
        let setup = Setup::load_quiet(common)?;
        if let Some(notice) = setup.trust_notice() {
            eprintln!("lathe: {notice}");
        }
        Ok(setup)
    }

    /// The notice for a workspace file whose weakening settings were left out.
    pub fn trust_notice(&self) -> Option<String> {
        self.workspace_file.as_ref().and_then(WorkspaceFile::notice)
    }

    /// Like [`load`](Self::load), without the notice.
    pub fn load_quiet(common: &CommonArgs) -> anyhow::Result<Setup> {
        let root = match &common.workspace {
            Some(dir) => dir.clone(),
            None => default_workspace()?,
        };
        if !root.is_dir() {
            anyhow::bail!("workspace {} is not a directory", root.display());
        }
        let loaded = config::load(&root, common.config.as_deref())?;
        Ok(Setup {
            root,
            config: loaded.config,
            workspace_file: loaded.workspace_file,
        })
    }

    /// A tool session over the workspace with its state in `state_dir`, its commands set up
    /// by the `[shell]` configuration (sandbox included). Every command that runs tools (`lathe
    /// tool`, `exec`, `chat`, `mcp`) creates its sessions here.
    pub fn session(&self, state_dir: PathBuf) -> anyhow::Result<Arc<Session>> {
        self.session_reading(state_dir, &[])
    }

    /// Like [`session`](Self::session), with `read_roots` readable (never writable) as well.
    pub fn session_reading(
        &self,
        state_dir: PathBuf,
        read_roots: &[PathBuf],
    ) -> anyhow::Result<Arc<Session>> {
        let mut workspace = Workspace::new(&self.root)
            .with_context(|| format!("cannot open workspace {}", self.root.display()))?;
        for root in read_roots {
            workspace
                .add_read_root(root)
                .with_context(|| format!("cannot open {}", root.display()))?;
        }
        let session = Session::new(workspace, self.config.tools.clone(), state_dir.clone())
            .with_context(|| format!("cannot create state directory {}", state_dir.display()))?;
        commands::configure(&session, self.config.shell.clone());
        memory::configure(&session, self.config.memory.clone());
        lathe_web::configure(&session, self.config.web.clone(), &self.config.permissions);
        Ok(session)
    }
}

/// The tools every front end offers: the built-in ones and the web tools (`web_fetch`,
/// `web_search`), which live in their own crate so the runtime stays without HTTP.
pub fn registry() -> lathe_runtime::Registry {
    let mut registry = lathe_tools::builtin();
    lathe_web::register(&mut registry);
    registry
}

/// The workspace when `--workspace` is not given: the root of the git repository the current
/// directory is in, else the current directory. A repository at the home directory (or above
/// it: a dotfiles repository) is not taken: it would make the whole home the workspace.
pub fn default_workspace() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    Ok(repository_root(&cwd, home.as_deref()).unwrap_or(cwd))
}

/// The nearest directory at or above `dir` with a `.git` (a directory, or a worktree's file),
/// unless it is `home`, an ancestor of it, or `/`.
fn repository_root(dir: &std::path::Path, home: Option<&std::path::Path>) -> Option<PathBuf> {
    let root = dir.ancestors().find(|d| d.join(".git").exists())?;
    let too_wide = root.parent().is_none() || home.is_some_and(|home| home.starts_with(root));
    (!too_wide).then(|| root.to_path_buf())
}

#[cfg(test)]
mod default_workspace_tests {
    use super::repository_root;

    #[test]
    fn the_repository_root_unless_it_holds_the_home() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home/u");
        let repo = home.join("src/repo");
        let sub = repo.join("crates/app");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(repository_root(&sub, Some(&home)), None);
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        assert_eq!(repository_root(&sub, Some(&home)), Some(repo.clone()));
        // A worktree's `.git` is a file.
        let worktree = home.join("src/wt");
        std::fs::create_dir_all(worktree.join("x")).unwrap();
        std::fs::write(worktree.join(".git"), "gitdir: ../repo/.git/worktrees/wt\n").unwrap();
        assert_eq!(
            repository_root(&worktree.join("x"), Some(&home)),
            Some(worktree)
        );
        // A dotfiles repository at the home is not a workspace for a project without its own.
        std::fs::create_dir_all(home.join(".git")).unwrap();
        let plain = home.join("notes");
        std::fs::create_dir_all(&plain).unwrap();
        assert_eq!(repository_root(&plain, Some(&home)), None);
        assert_eq!(repository_root(&sub, Some(&home)), Some(repo));
    }
}
