//! What every command that runs tools sets up: the workspace, the configuration and the session.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use lathe_tools::tools::shell;
use lathe_tools::{Session, Workspace};

use crate::cli::CommonArgs;
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
            None => std::env::current_dir().context("cannot read the current directory")?,
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
        shell::configure(&session, self.config.shell.clone());
        Ok(session)
    }
}
