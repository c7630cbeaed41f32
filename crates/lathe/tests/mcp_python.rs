//! `lathe mcp` driven by a client this project did not write: the official MCP Python SDK.
//! Each test runs one scenario of `mcp_py/client_test.py` against a fresh workspace.
//!
//! The SDK comes from PyPI (`pip install mcp`; `.ci/run` installs it). Without it these tests
//! print a loud SKIPPED line and pass, so a machine without Python can still run the suite. The
//! scenarios run with the SDK's 1.x and 2.x lines; those of the 2026-07-28 lifecycle need 2.x and
//! say SKIPPED loudly on 1.x.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A scenario that has not finished by then is stuck (a hung server or client).
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(180);

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_py/client_test.py")
}

/// The interpreter: `python3`, or `LATHE_TEST_PYTHON` (a virtualenv with another SDK version).
fn python() -> String {
    std::env::var("LATHE_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

fn sdk_available() -> bool {
    let found = Command::new(python())
        .args(["-c", "import mcp, anyio"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !found {
        loud(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             SKIPPED: the MCP Python SDK is not installed (`python3 -m pip install mcp`).\n\
             The Python client tests of `lathe mcp` did not run.\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
        );
    }
    found
}

/// Writes to the real stderr: libtest captures `eprintln!` of passing tests, and a skip must be
/// seen.
fn loud(message: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(message.as_bytes());
}

fn scenario(name: &str) {
    if !sdk_available() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let workspace = dir.path().join("workspace");
    std::fs::create_dir_all(&workspace).expect("workspace");
    let mut child = Command::new(python())
        .arg(script())
        .arg(name)
        .env("LATHE_BIN", env!("CARGO_BIN_EXE_lathe"))
        .env("LATHE_TEST_WORKSPACE", &workspace)
        .env("LATHE_DATA_DIR", dir.path().join("data"))
        .env("LATHE_CONFIG_DIR", dir.path().join("config"))
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
        None => {
            panic!("scenario {name} did not finish in {SCENARIO_TIMEOUT:?}:\n{stdout}\n{stderr}")
        }
    }
}

#[test]
fn initialize_and_tools_list_match_lathe_tools() {
    scenario("initialize_and_list");
}

#[test]
fn project_commands_are_prompts() {
    scenario("project_prompts");
}

#[test]
fn modern_lifecycle_discover_and_call() {
    scenario("modern_lifecycle");
}

#[test]
fn read_file_and_edit_file() {
    scenario("read_and_edit");
}

#[test]
fn shell_to_background_then_output_and_kill() {
    scenario("shell_background");
}

#[test]
fn denied_call_in_read_only_mode() {
    scenario("denied_read_only");
}

#[test]
fn denied_call_by_a_permissions_rule() {
    scenario("denied_by_rule");
}

#[test]
fn asking_call_refused_in_band_without_elicitation() {
    scenario("ask_without_elicitation");
}

#[test]
fn asking_call_elicits_on_handshake_connections() {
    scenario("elicitation_legacy");
}

#[test]
fn asking_call_elicits_through_input_required_on_2026_connections() {
    scenario("elicitation_modern");
}

#[test]
fn cancellation_kills_the_running_command() {
    scenario("cancel_running_call");
}

#[test]
fn cancellation_kills_the_running_command_on_2026_connections() {
    scenario("cancel_running_call_modern");
}

#[test]
fn disconnect_leaves_no_process_behind() {
    scenario("disconnect_kills_background");
}

#[test]
fn disconnect_leaves_no_process_behind_on_2026_connections() {
    scenario("disconnect_kills_background_modern");
}

#[test]
fn progress_notifications_carry_command_output() {
    scenario("progress_notifications");
}

#[test]
fn streamable_http_serves_the_same_tools() {
    scenario("streamable_http");
}

#[test]
fn resolve_is_listed_only_while_something_is_pending() {
    scenario("resolve_offered_only_while_pending");
}

#[test]
fn a_preview_waits_in_its_own_mcp_session_and_tools_list_changes() {
    scenario("pending_per_session");
}

#[test]
fn resolve_apply_asks_through_elicitation_with_the_diff() {
    scenario("pending_apply_asks");
}
