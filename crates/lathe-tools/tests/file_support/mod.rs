//! A real temporary workspace for the file tools' tests, with calls through the real registry.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lathe_runtime::{Plan, Registry, Session, ToolConfig, ToolContext, ToolOutput, Workspace};
use serde_json::Value;

/// A workspace in a temporary directory; the session's state and an "outside" directory live
/// elsewhere.
pub struct Ws {
    pub dir: tempfile::TempDir,
    pub outside: tempfile::TempDir,
    _state: tempfile::TempDir,
    pub session: Arc<Session>,
    registry: Registry,
    runtime: tokio::runtime::Runtime,
}

impl Ws {
    /// A workspace with the default result budget.
    pub fn new() -> Ws {
        Ws::with_budget(ToolConfig::default().result_budget)
    }

    /// A workspace whose results are cut at `budget` characters.
    pub fn with_budget(budget: usize) -> Ws {
        Ws::with_config(ToolConfig {
            result_budget: budget,
            ..ToolConfig::default()
        })
    }

    /// A workspace whose session has `config`.
    pub fn with_config(config: ToolConfig) -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let session = Session::new(
            Workspace::new(dir.path()).unwrap(),
            config,
            state.path().join("s"),
        )
        .unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        Ws {
            dir,
            outside,
            _state: state,
            session,
            registry: lathe_tools::builtin(),
            runtime,
        }
    }

    /// The canonical workspace root.
    pub fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    /// The absolute path of `rel` in the workspace.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// The canonical outside directory.
    pub fn outside(&self) -> PathBuf {
        self.outside.path().canonicalize().unwrap()
    }

    /// Writes `content` at `rel`, creating parents.
    pub fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        path
    }

    /// The bytes at `rel`.
    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    /// The text at `rel`.
    pub fn text(&self, rel: &str) -> String {
        String::from_utf8(self.read(rel)).unwrap()
    }

    /// Permission bits of `rel`.
    pub fn mode(&self, rel: &str) -> u32 {
        std::fs::metadata(self.path(rel))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    /// Sets the permission bits of `rel`.
    pub fn chmod(&self, rel: &str, mode: u32) {
        std::fs::set_permissions(self.path(rel), std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Calls a tool through the registry, as the agent and `lathe tool` do.
    pub fn call(&self, name: &str, args: Value) -> ToolOutput {
        let ctx = ToolContext::new(Arc::clone(&self.session));
        self.runtime.block_on(self.registry.call(name, args, ctx))
    }

    /// Calls a tool that must succeed.
    pub fn ok(&self, name: &str, args: Value) -> ToolOutput {
        let out = self.call(name, args.clone());
        assert!(!out.is_error, "{name} {args} failed: {}", out.text);
        out
    }

    /// Calls a tool that must fail.
    pub fn err(&self, name: &str, args: Value) -> ToolOutput {
        let out = self.call(name, args.clone());
        assert!(
            out.is_error,
            "{name} {args} should have failed: {}",
            out.text
        );
        out
    }

    /// Plans a call through the registry, as the dispatcher does before asking for approval;
    /// `None` when the tool does not plan. Nothing is written.
    pub fn plan(&self, name: &str, args: Value) -> Option<Result<Plan, ToolOutput>> {
        let call = self
            .registry
            .prepare(name, args.clone(), &self.session)
            .unwrap_or_else(|out| panic!("{name} {args}: {}", out.text));
        call.plan(&self.session)
    }

    /// Plans a call that must plan successfully.
    pub fn planned(&self, name: &str, args: Value) -> Plan {
        match self.plan(name, args.clone()) {
            Some(Ok(plan)) => plan,
            Some(Err(out)) => panic!("{name} {args} refused: {}", out.text),
            None => panic!("{name} made no plan"),
        }
    }

    /// Names in a directory (for "no temporary file left behind").
    pub fn names_in(&self, dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }
}

/// The numbered lines of a read_file result: (number, text).
pub fn numbered(text: &str) -> Vec<(u64, String)> {
    text.split('\n')
        .filter_map(|line| {
            let (number, rest) = line.split_once('\t')?;
            let number = number.trim_start();
            if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            Some((number.parse().ok()?, rest.to_owned()))
        })
        .collect()
}

/// The offset a read_file note says to continue with, if any.
pub fn next_offset(text: &str) -> Option<u64> {
    let at = text.rfind("call read_file with offset=")?;
    let digits: String = text[at + "call read_file with offset=".len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}
