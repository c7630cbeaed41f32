//! What the `lathe mcp` tests share: a workspace with one file, and the command that serves it;
//! `http` is a raw HTTP client for `lathe mcp --listen`; `python` runs the scenarios of the
//! official MCP Python SDK's client against it.

pub mod http;
pub mod python;

use std::process::Command;

/// A temporary workspace (`ws/hello.txt`) with its own data and configuration directories.
pub struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    /// A fresh one.
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("ws")).expect("workspace");
        std::fs::write(
            dir.path().join("ws/hello.txt"),
            "hello from the workspace\n",
        )
        .expect("file");
        Fixture { dir }
    }

    /// The workspace root.
    pub fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("ws")
    }

    /// Lathe's data directory (`LATHE_DATA_DIR`) in the tests.
    pub fn data_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    /// `lathe mcp` over the workspace, with `extra` arguments.
    pub fn command(&self, extra: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_lathe"));
        command
            .arg("mcp")
            .arg("--workspace")
            .arg(self.workspace())
            .args(extra)
            .env("LATHE_DATA_DIR", self.dir.path().join("data"))
            .env("LATHE_CONFIG_DIR", self.dir.path().join("config"));
        command
    }
}
