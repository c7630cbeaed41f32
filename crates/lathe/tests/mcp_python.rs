//! `lathe mcp` driven by a client this project did not write: the official MCP Python SDK.
//! Each test runs one scenario of `mcp_py/client_test.py` against a fresh workspace.
//!
//! The SDK comes from PyPI (`pip install mcp`; `.ci/run` installs it). Without it these tests
//! print a loud SKIPPED line and pass, so a machine without Python can still run the suite. The
//! scenarios run with the SDK's 1.x and 2.x lines; those of the 2026-07-28 lifecycle need 2.x and
//! say SKIPPED loudly on 1.x.

use crate::mcp_support::python::PythonClient;

fn scenario(name: &str) {
    PythonClient::new("client_test.py", "Python client tests").run(name, |_| {});
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
