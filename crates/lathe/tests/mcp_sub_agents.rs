//! Sub-agents over `lathe mcp`: offered only with a model, run against the scripted model
//! server, driven by the official MCP Python SDK (`mcp_py/sub_agents_test.py`): a foreground
//! child with progress notifications and its transcript, a child's approval asked by
//! elicitation (accepted, declined), and `notifications/cancelled` killing a child's command.
//! Without the SDK these print a loud SKIPPED line and pass, as `mcp_python` does.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use lathe_testkit::{Script, ScriptedServer};

use crate::agent_harness::{MODEL, reply};

const SCENARIO_TIMEOUT: Duration = Duration::from_secs(180);

fn sdk_available() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import mcp, anyio"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
              SKIPPED: the MCP Python SDK is not installed (`python3 -m pip install mcp`).\n\
              The sub-agent tests of `lathe mcp` did not run.\n\
              !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
        );
    }
    found
}

/// Runs scenario `name` against a fresh workspace (`setup` prepares it) and a model server
/// playing `script`; `mark` is what the child's command line carries.
fn scenario(name: &str, script: Script, mark: &str, setup: impl FnOnce(&Path)) {
    if !sdk_available() {
        return;
    }
    let server = ScriptedServer::start(script.ollama_models(&[MODEL], &["completion", "tools"]))
        .expect("model server");
    let dir = tempfile::tempdir().expect("temp dir");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    setup(&workspace);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_py/sub_agents_test.py");
    let mut child = Command::new("python3")
        .arg(script)
        .arg(name)
        .env("LATHE_BIN", env!("CARGO_BIN_EXE_lathe"))
        .env("LATHE_TEST_WORKSPACE", &workspace)
        .env("LATHE_TEST_MODEL_URL", server.url())
        .env("LATHE_TEST_MODEL", MODEL)
        .env("LATHE_TEST_MARK", mark)
        .env("LATHE_DATA_DIR", dir.path().join("data"))
        .env("LATHE_CONFIG_DIR", dir.path().join("config"))
        .env("HOME", dir.path())
        .env_remove("LATHE_MODEL")
        .env_remove("OLLAMA_HOST")
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
        Some(status) => panic!("scenario {name} failed ({status}):\n{stdout}\n{stderr}"),
        None => {
            panic!("scenario {name} did not finish in {SCENARIO_TIMEOUT:?}:\n{stdout}\n{stderr}")
        }
    }
}

#[test]
fn without_a_model_the_sub_agent_tools_are_not_offered_and_help_says_how() {
    scenario("not_offered_without_model", Script::new(), "", |_| {});
    let help = Command::new(env!("CARGO_BIN_EXE_lathe"))
        .args(["mcp", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("spawn_agent and read_sub_agent are offered when a model is configured"),
        "{help}"
    );
    assert!(help.contains("--model <MODEL>"), "{help}");
}

#[test]
fn a_foreground_child_reports_progress_and_its_transcript_is_readable() {
    let script = Script::new()
        .chat_when(
            "You are sub-agent sub-1,",
            reply()
                .tool_call("read_file", json!({"path": "a.txt"}))
                .done(),
        )
        .chat(reply().text("a.txt says alpha.").done());
    scenario("foreground_with_progress", script, "", |ws| {
        std::fs::write(ws.join("a.txt"), "alpha\n").unwrap();
    });
}

fn writes_b() -> Script {
    Script::new()
        .chat_when(
            "You are sub-agent sub-1,",
            reply()
                .tool_call("write_file", json!({"path": "b.txt", "content": "beta\n"}))
                .done(),
        )
        .chat_when(
            "denied",
            reply().text("I was not allowed to write b.txt.").done(),
        )
        .chat(reply().text("Wrote b.txt.").done())
}

#[test]
fn a_childs_approval_is_asked_of_the_client_by_elicitation() {
    scenario("approval_by_elicitation", writes_b(), "", |_| {});
}

#[test]
fn a_childs_declined_call_reaches_it_as_text() {
    scenario("denied_reaches_the_child", writes_b(), "", |_| {});
}

#[test]
fn cancelling_the_call_stops_the_child_and_kills_its_command() {
    let mark = format!("{}.{}", 7_000_000 + std::process::id(), 4242);
    let script = Script::new().chat_when(
        "You are sub-agent sub-1,",
        reply()
            .tool_call(
                "shell",
                json!({"command": format!("sleep {mark}"), "timeout": 3600}),
            )
            .done(),
    );
    scenario("cancel_stops_the_child", script, &mark, |_| {});
}
