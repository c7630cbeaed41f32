//! A real workspace (a git repository of the user's, with a commit), real tools through the
//! real dispatcher, and the checkpoint hook around them.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::Value;

use lathe_checkpoint::{CheckpointRecorder, Checkpoints};
use lathe_runtime::{
    ApprovalMode, CallStatus, Dispatcher, Gate, NonInteractive, Session, ToolConfig, ToolContext,
    Workspace,
};

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub data: PathBuf,
}

/// A file's bytes and permission bits.
pub type Tree = BTreeMap<PathBuf, (Vec<u8>, u32)>;

impl Fixture {
    /// A workspace that is a git repository of the user's, with `files` committed.
    pub fn new(files: &[(&str, &str)]) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        for (path, content) in files {
            let full = root.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
        }
        let root = root.canonicalize().unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .args([
                    "-c",
                    "user.name=u",
                    "-c",
                    "user.email=u@x",
                    "-c",
                    "commit.gpgSign=false",
                ])
                .args(args)
                .current_dir(&root)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .unwrap();
            assert!(status.status.success(), "{status:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "-A"]);
        git(&["commit", "-q", "-m", "user's own"]);
        let data = dir.path().join("data");
        Fixture { dir, root, data }
    }

    pub fn checkpoints(&self, session: &str) -> Arc<Checkpoints> {
        Arc::new(
            Checkpoints::builder(&self.data, &self.root, session)
                .build()
                .unwrap(),
        )
    }

    pub fn agent(&self, checkpoints: Arc<Checkpoints>) -> Agent {
        let hook = Arc::new(CheckpointRecorder::new(checkpoints));
        let workspace = Workspace::new(&self.root).unwrap();
        let state = self.dir.path().join(format!("state-{}", fastrand_name()));
        let session = Session::new(workspace, ToolConfig::default(), state).unwrap();
        let dispatcher = Dispatcher::new(
            Arc::new(lathe_tools::builtin()),
            Arc::new(Gate::new(ApprovalMode::Full, &self.root)),
        )
        .with_hook(hook.clone());
        Agent {
            hook,
            dispatcher,
            session,
        }
    }

    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }

    pub fn read(&self, path: &str) -> Vec<u8> {
        std::fs::read(self.path(path)).unwrap()
    }

    /// Every file of the work tree (the user's `.git` aside), with bytes and mode.
    pub fn tree(&self) -> Tree {
        let mut tree = Tree::new();
        walk(&self.root, &self.root, &mut tree, true);
        tree
    }

    /// The user's `.git`, every file with bytes and mode.
    pub fn user_git(&self) -> Tree {
        let mut tree = Tree::new();
        walk(&self.root.join(".git"), &self.root, &mut tree, false);
        tree
    }
}

fn fastrand_name() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst)
}

fn walk(dir: &Path, root: &Path, tree: &mut Tree, skip_git: bool) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if skip_git && entry.file_name() == ".git" {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            walk(&path, root, tree, skip_git);
        } else {
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            tree.insert(
                rel,
                (
                    std::fs::read(&path).unwrap(),
                    meta.permissions().mode() & 0o7777,
                ),
            );
        }
    }
}

pub struct Agent {
    pub hook: Arc<CheckpointRecorder>,
    pub dispatcher: Dispatcher,
    pub session: Arc<Session>,
}

impl Agent {
    /// Runs one call through the dispatcher; it must succeed.
    pub async fn call(&self, name: &str, arguments: Value) -> String {
        let outcome = self
            .dispatcher
            .call(
                name,
                arguments,
                &NonInteractive,
                ToolContext::new(Arc::clone(&self.session)),
            )
            .await;
        assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
        outcome.output.text
    }
}
