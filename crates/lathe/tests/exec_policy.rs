//! `lathe exec` with the safety policy: modes, command analysis and `[permissions]` rules.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

fn shell(command: &str) -> lathe_testkit::Response {
    reply()
        .tool_call("shell", json!({ "command": command }))
        .done()
}

#[test]
fn auto_mode_runs_safe_and_normal_commands_and_stops_at_a_dangerous_one() {
    let script = Script::new()
        .chat(shell("ls -la"))
        .chat(shell("mkdir -p build && touch build/out.txt"))
        .chat(shell("rm -r build"))
        .chat(reply().text("Built; removing it needs you.").done());
    let h = Harness::new(script);
    let landlock = lathe_exec::sandbox::probe().is_available();
    if !landlock {
        // Without Landlock every command would ask (exec_sandbox.rs tests that); this test is
        // about the analysis.
        h.write(
            ".lathe/config.toml",
            "[shell]\nsandbox_unavailable = \"run\"\n",
        );
        h.trust();
    }
    let output = h.exec("build it and clean up", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    // The dangerous command was stopped before it ran: what it would remove is still there.
    assert!(h.ws.join("build/out.txt").exists());
    let events = json_lines(&output);
    let asked = of_type(&events, "approval_requested");
    assert_eq!(
        asked.len(),
        1,
        "only the dangerous command asks: {events:#?}"
    );
    assert_eq!(asked[0]["description"], "shell rm -r build");
    let statuses: Vec<&str> = of_type(&events, "tool_call_finished")
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "denied"]);
    let listed = messages(&h.bodies()[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    if landlock {
        assert!(
            listed
                .lines()
                .next()
                .unwrap()
                .contains("| sandboxed (landlock abi"),
            "{listed}"
        );
    }
    let told = messages(&h.bodies()[3]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        told.starts_with("this call needs the user's approval, and this run has no terminal"),
        "{told}"
    );
}

#[test]
fn deny_rules_refuse_even_in_full_mode_and_say_which_rule() {
    let script = Script::new()
        .chat(shell("rm notes.txt"))
        .chat(reply().text("Could not remove it.").done());
    let h = Harness::new(script);
    h.write("notes.txt", "keep\n");
    h.write(
        ".lathe/config.toml",
        "[permissions]\ndeny = [\"shell(rm *)\"]\n",
    );
    let output = h.exec("remove notes.txt", &["--approval", "full"]);
    // Every change was denied and nothing was written.
    assert_exit(&output, 3);
    assert!(h.ws.join("notes.txt").exists());
    let told = messages(&h.bodies()[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(told.contains("shell(rm *)"), "{told}");
}

#[test]
fn allow_rules_let_ask_mode_run_a_command_without_asking() {
    let script = Script::new()
        .chat(shell("touch made.txt"))
        .chat(reply().text("Made.").done());
    let h = Harness::new(script);
    h.write(
        ".lathe/config.toml",
        "[permissions]\nallow = [\"shell(touch *)\"]\n",
    );
    h.trust();
    let output = h.exec("make made.txt", &["--json"]);
    assert_exit(&output, 0);
    assert!(h.ws.join("made.txt").exists());
    assert!(of_type(&json_lines(&output), "approval_requested").is_empty());
}

#[test]
fn critical_commands_ask_even_in_full_mode() {
    let script = Script::new()
        .chat(shell("sudo rm -rf /"))
        .chat(reply().text("Refused.").done());
    let h = Harness::new(script);
    let output = h.exec("clean the machine", &["--approval", "full", "--json"]);
    assert_exit(&output, 3);
    let events = json_lines(&output);
    assert_eq!(of_type(&events, "approval_requested").len(), 1);
    assert_eq!(
        of_type(&events, "tool_call_finished")[0]["status"],
        "denied"
    );
}

#[test]
fn an_invalid_rule_is_a_configuration_error() {
    let h = Harness::new(Script::new());
    h.write(
        ".lathe/config.toml",
        "[permissions]\nallow = [\"shell(\"]\n",
    );
    let output = h.exec("hi", &[]);
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("[permissions]"),
        "{}",
        stderr(&output)
    );
}
