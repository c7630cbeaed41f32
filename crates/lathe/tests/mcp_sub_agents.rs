//! Sub-agents over `lathe mcp`: offered only with a model, run against the scripted model
//! server, driven by the official MCP Python SDK (`mcp_py/sub_agents_test.py`): a foreground
//! child with progress notifications and its transcript, a child's approval asked by
//! elicitation (accepted, declined), and `notifications/cancelled` killing a child's command.
//! Without the SDK these print a loud SKIPPED line and pass, as `mcp_python` does.

use std::path::Path;
use std::process::Command;

use serde_json::json;

use lathe_testkit::{Script, ScriptedServer};

use crate::agent_harness::{MODEL, reply};
use crate::mcp_support::python::PythonClient;

/// Runs scenario `name` against a fresh workspace (`setup` prepares it) and a model server
/// playing `script`; `mark` is what the child's command line carries.
fn scenario(name: &str, script: Script, mark: &str, setup: impl FnOnce(&Path)) {
    let server = ScriptedServer::start(script.ollama_models(&[MODEL], &["completion", "tools"]))
        .expect("model server");
    PythonClient::new("sub_agents_test.py", "sub-agent tests")
        .env("LATHE_TEST_MODEL_URL", server.url())
        .env("LATHE_TEST_MODEL", MODEL)
        .env("LATHE_TEST_MARK", mark)
        .home()
        .env_remove("LATHE_MODEL")
        .env_remove("OLLAMA_HOST")
        .run(name, setup);
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
