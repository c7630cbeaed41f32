//! A real temporary workspace for the search tools' tests, and calls through the real registry.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lathe_runtime::{Registry, Session, ToolConfig, ToolContext, ToolOutput, Workspace};
use serde_json::Value;

/// A workspace in a temporary directory, with its session state kept outside it.
pub struct Tree {
    pub dir: tempfile::TempDir,
    _state: tempfile::TempDir,
    pub session: Arc<Session>,
    pub registry: Registry,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let config = ToolConfig {
            // Paging tests read whole results; the budget has its own tests.
            result_budget: 50_000_000,
            ..ToolConfig::default()
        };
        let session = Session::new(
            Workspace::new(dir.path()).unwrap(),
            config,
            state.path().join("s"),
        )
        .unwrap();
        Tree {
            dir,
            _state: state,
            session,
            registry: lathe_tools::builtin(),
        }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// Writes `content` at `rel`, creating parents.
    pub fn write(&self, rel: impl AsRef<Path>, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// Writes a file whose name is raw bytes (not UTF-8) inside `dir`.
    pub fn write_raw_name(&self, dir: &str, name: &[u8], content: impl AsRef<[u8]>) -> PathBuf {
        let parent = self.dir.path().join(dir);
        std::fs::create_dir_all(&parent).unwrap();
        let path = parent.join(OsStr::from_bytes(name));
        std::fs::write(&path, content).unwrap();
        path
    }

    pub fn mkdir(&self, rel: &str) {
        std::fs::create_dir_all(self.dir.path().join(rel)).unwrap();
    }

    pub fn symlink(&self, target: impl AsRef<Path>, rel: &str) {
        let link = self.dir.path().join(rel);
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, link).unwrap();
    }

    pub fn ctx(&self) -> ToolContext {
        ToolContext::new(Arc::clone(&self.session))
    }

    pub async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        self.registry.call(tool, args, self.ctx()).await
    }

    pub async fn grep(&self, args: Value) -> ToolOutput {
        self.call("grep", args).await
    }

    pub async fn glob(&self, args: Value) -> ToolOutput {
        self.call("glob", args).await
    }

    /// A successful call's text.
    pub async fn grep_ok(&self, args: Value) -> String {
        let out = self.grep(args.clone()).await;
        assert!(!out.is_error, "grep {args} failed: {}", out.text);
        out.text
    }
}

/// The result lines, without the blank line and notes that follow them.
pub fn entries(text: &str) -> Vec<String> {
    text.lines()
        .take_while(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A small deterministic generator (no dependency, same sequence everywhere).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}
