//! `lathe mcp` driven by the official MCP Python SDK: one scenario of a script in `mcp_py/` per
//! process, against a fresh workspace, with a deadline.
//!
//! The SDK comes from PyPI (`pip install mcp`; `.ci/run` installs it). Without it a scenario
//! prints a loud SKIPPED line and passes, so a machine without Python can still run the suite;
//! so does one the installed SDK cannot speak (the script prints `skipped`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scenario that has not finished by then is stuck (a hung server or client).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(180);

/// The interpreter: `python3`, or `LATHE_TEST_PYTHON` (a virtualenv with another SDK version).
fn python() -> String {
    std::env::var("LATHE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Writes to the real stderr: libtest captures `eprintln!` of passing tests, and a skip must be
/// seen.
fn loud(message: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(message.as_bytes());
}

/// Whether the SDK is installed; a loud SKIPPED line naming `tests` when not.
fn sdk_available(tests: &str) -> bool {
    let found = Command::new(python())
        .args(["-c", "import mcp, anyio"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        loud(&format!(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             SKIPPED: the MCP Python SDK is not installed (`python3 -m pip install mcp`).\n\
             The {tests} of `lathe mcp` did not run.\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
        ));
    }
    found
}

/// The scenarios of one script of `mcp_py/`, and how each process is started.
pub struct PythonClient {
    script: PathBuf,
    tests: &'static str,
    env: Vec<(&'static str, OsString)>,
    env_remove: Vec<&'static str>,
    home: bool,
}

impl PythonClient {
    /// The scenarios of `mcp_py/SCRIPT`; `tests` names them in the SKIPPED line.
    pub fn new(script: &str, tests: &'static str) -> Self {
        PythonClient {
            script: Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/mcp_py")
                .join(script),
            tests,
            env: Vec::new(),
            env_remove: Vec::new(),
            home: false,
        }
    }

    /// Sets `name` for the script.
    pub fn env(mut self, name: &'static str, value: impl Into<OsString>) -> Self {
        self.env.push((name, value.into()));
        self
    }

    /// Leaves `name` out of the script's environment.
    pub fn env_remove(mut self, name: &'static str) -> Self {
        self.env_remove.push(name);
        self
    }

    /// `HOME` is the scenario's temporary directory.
    pub fn home(mut self) -> Self {
        self.home = true;
        self
    }

    /// Runs scenario `name` against a fresh workspace (`setup` prepares it), with `LATHE_BIN`,
    /// `LATHE_TEST_WORKSPACE` and its own data and configuration directories; fails unless it
    /// prints `ok` (or `skipped`) and exits 0 within the deadline.
    pub fn run(self, name: &str, setup: impl FnOnce(&Path)) {
        if !sdk_available(self.tests) {
            return;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(&workspace).expect("workspace");
        setup(&workspace);
        let mut command = Command::new(python());
        command
            .arg(&self.script)
            .arg(name)
            .env("LATHE_BIN", env!("CARGO_BIN_EXE_lathe"))
            .env("LATHE_TEST_WORKSPACE", &workspace)
            .env("LATHE_DATA_DIR", dir.path().join("data"))
            .env("LATHE_CONFIG_DIR", dir.path().join("config"));
        for (name, value) in &self.env {
            command.env(name, value);
        }
        if self.home {
            command.env("HOME", dir.path());
        }
        for name in &self.env_remove {
            command.env_remove(name);
        }
        let mut child = command
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for python3") {
                break Some(status);
            }
            if started.elapsed() > SCENARIO_TIMEOUT {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let output = child.wait_with_output().expect("python3 output");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        match status {
            Some(status) if status.success() && stdout.trim_end().ends_with("ok") => {}
            // The installed SDK (1.x) cannot speak this scenario's protocol version.
            Some(status) if status.success() && stdout.trim_end().ends_with("skipped") => {
                loud(&stderr);
            }
            Some(status) => panic!("scenario {name} failed ({status}):\n{stdout}\n{stderr}"),
            None => panic!(
                "scenario {name} did not finish in {SCENARIO_TIMEOUT:?}:\n{stdout}\n{stderr}"
            ),
        }
    }
}
