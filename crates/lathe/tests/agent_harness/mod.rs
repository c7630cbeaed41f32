//! What the `exec_*` and `chat_*` tests share: a temporary workspace and data directory, the
//! scripted model server, and the real `lathe` binary pointed at both.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use lathe_store::{Session, SessionFilter, Store};
use lathe_testkit::{Script, ScriptedServer, ollama};

/// The model every script answers as.
pub const MODEL: &str = "qwen3:8b";

/// A workspace, a data directory and a model server.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub ws: PathBuf,
    pub data: PathBuf,
    pub server: ScriptedServer,
}

/// One streamed reply of the model.
pub fn reply() -> ollama::OllamaTurn {
    ollama::turn(MODEL)
}

impl Harness {
    /// A model with native tool calling.
    pub fn new(script: Script) -> Self {
        Self::with_capabilities(script, &["completion", "tools"])
    }

    /// A model with the given `/api/show` capabilities.
    pub fn with_capabilities(script: Script, capabilities: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let data = dir.path().join("data");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(dir.path().join("config")).unwrap();
        let server = ScriptedServer::start(script.ollama_models(&[MODEL], capabilities)).unwrap();
        Harness {
            ws: ws.canonicalize().unwrap(),
            dir,
            data,
            server,
        }
    }

    /// Writes a workspace file.
    pub fn write(&self, path: &str, text: &str) {
        let path = self.ws.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// `lathe trust --yes`: the workspace's `.lathe/config.toml` as it is now applies in full,
    /// its settings that weaken safety included.
    pub fn trust(&self) {
        let out = self
            .lathe()
            .args(["trust", "--yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "lathe trust: {out:?}");
    }

    /// Reads a workspace file.
    pub fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.ws.join(path)).unwrap()
    }

    /// The `lathe` binary with the environment isolated: its data and configuration in the
    /// temporary directory, no model settings inherited from the machine.
    pub fn lathe(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lathe"));
        cmd.env("LATHE_DATA_DIR", &self.data)
            .env("LATHE_CONFIG_DIR", self.dir.path().join("config"))
            .env("HOME", self.dir.path())
            .env_remove("OLLAMA_HOST")
            .env_remove("LATHE_MODEL")
            .env_remove("LATHE_PROVIDER")
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env_remove("LATHE_LOG")
            .current_dir(&self.ws);
        cmd
    }

    /// `lathe exec PROMPT --model M --base-url URL ARGS...` with stdin closed.
    pub fn exec(&self, prompt: &str, args: &[&str]) -> Output {
        let mut cmd = self.lathe();
        cmd.arg("exec")
            .arg(prompt)
            .args(["--model", MODEL, "--base-url", &self.server.url()])
            .args(args);
        cmd.stdin(Stdio::null());
        cmd.output().unwrap()
    }

    /// The sessions database.
    pub fn store(&self) -> Store {
        Store::open(self.data.join("sessions.sqlite3")).unwrap()
    }

    /// The newest session.
    pub fn newest_session(&self) -> Session {
        let sessions = self
            .store()
            .list_sessions(&SessionFilter {
                workspace: None,
                limit: Some(1),
            })
            .unwrap();
        sessions.into_iter().next().expect("a session was stored")
    }

    /// The newest session's events, as stored.
    pub fn stored_events(&self) -> Vec<Value> {
        let session = self.newest_session();
        self.store()
            .events(&session.id)
            .unwrap()
            .into_iter()
            .map(|e| e.payload)
            .collect()
    }

    /// The chat request bodies the server received.
    pub fn bodies(&self) -> Vec<Value> {
        self.server.chat_bodies()
    }
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// JSON lines of `--json` output.
pub fn json_lines(output: &Output) -> Vec<Value> {
    stdout(output)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// Events of one type.
pub fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The messages of a request body.
pub fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().expect("messages")
}

/// The user messages of a request the server received, in order.
pub fn user_texts(body: &Value) -> Vec<String> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

/// Fails with both streams shown unless the run exited with `code`.
pub fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        stdout(output),
        stderr(output)
    );
}
