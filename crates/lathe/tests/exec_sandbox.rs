//! `lathe exec` and the sandbox: a call that asks for `sandbox: false` always needs approval, and
//! so does every command where Landlock is missing unless the configuration says `run`.

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::*;

fn shell(args: Value) -> lathe_testkit::Response {
    reply().tool_call("shell", args).done()
}

fn landlock() -> bool {
    let available = lathe_exec::sandbox::probe().is_available();
    if !available {
        eprintln!("skipping: landlock is not available here");
    }
    available
}

/// What the model was told about its last call, in request `n`.
fn told(h: &Harness, n: usize) -> String {
    messages(&h.bodies()[n]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn sandbox_false_asks_even_in_full_mode_and_is_denied_without_a_terminal() {
    if !landlock() {
        return;
    }
    for mode in ["auto", "full"] {
        let script = Script::new()
            .chat(shell(
                json!({"command": "touch made.txt", "sandbox": false}),
            ))
            .chat(reply().text("It needs you.").done());
        let h = Harness::new(script);
        let output = h.exec("make made.txt", &["--approval", mode, "--json"]);
        // The only change was denied: nothing was written.
        assert_exit(&output, 3);
        let events = json_lines(&output);
        let asked = of_type(&events, "approval_requested");
        assert_eq!(asked.len(), 1, "{mode}: {events:#?}");
        assert_eq!(
            of_type(&events, "tool_call_finished")[0]["status"],
            "denied",
            "{mode}"
        );
        assert!(!h.ws.join("made.txt").exists(), "{mode}: it ran");
        let told = told(&h, 1);
        assert!(
            told.starts_with("this call needs the user's approval, and this run has no terminal"),
            "{mode}: {told}"
        );
    }
}

#[test]
fn sandbox_false_runs_with_dangerously_skip_approvals() {
    if !landlock() {
        return;
    }
    let script = Script::new()
        .chat(shell(
            json!({"command": "touch made.txt", "sandbox": false}),
        ))
        .chat(reply().text("Made.").done());
    let h = Harness::new(script);
    let output = h.exec(
        "make made.txt",
        &[
            "--approval",
            "full",
            "--dangerously-skip-approvals",
            "--json",
        ],
    );
    assert_exit(&output, 0);
    assert!(of_type(&json_lines(&output), "approval_requested").is_empty());
    assert!(h.ws.join("made.txt").exists());
    let told = told(&h, 1);
    let header = told.lines().next().unwrap();
    assert!(
        header.ends_with("| not sandboxed (sandbox: false)"),
        "{told}"
    );
}

#[test]
fn without_landlock_every_command_asks_by_default() {
    let script = Script::new()
        .chat(shell(json!({"command": "ls"})))
        .chat(reply().text("Cannot list.").done());
    let h = Harness::new(script);
    let output = h
        .lathe()
        .env("LATHE_SANDBOX_FORCE_UNAVAILABLE", "1")
        .args(["exec", "list the files", "--model", MODEL, "--base-url"])
        .arg(h.server.url())
        .args(["--approval", "auto", "--json"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let events = json_lines(&output);
    assert_eq!(
        of_type(&events, "approval_requested").len(),
        1,
        "even a safe command asks: {events:#?}"
    );
    assert!(
        told(&h, 1)
            .starts_with("this call needs the user's approval, and this run has no terminal")
    );
    // The person hears why once, though no command ran.
    assert_eq!(
        stderr(&output).matches("landlock is not available").count(),
        1,
        "{}",
        stderr(&output)
    );
}

#[test]
fn without_landlock_run_mode_runs_and_the_result_says_so_once() {
    let script = Script::new()
        .chat(shell(json!({"command": "touch one.txt"})))
        .chat(shell(json!({"command": "touch two.txt"})))
        .chat(reply().text("Done.").done());
    let h = Harness::new(script);
    h.write(
        ".lathe/config.toml",
        "[shell]\nsandbox_unavailable = \"run\"\n",
    );
    h.trust();
    let output = h
        .lathe()
        .env("LATHE_SANDBOX_FORCE_UNAVAILABLE", "1")
        .args(["exec", "make two files", "--model", MODEL, "--base-url"])
        .arg(h.server.url())
        .args(["--approval", "auto", "--json"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 0);
    assert!(of_type(&json_lines(&output), "approval_requested").is_empty());
    assert!(h.ws.join("one.txt").exists() && h.ws.join("two.txt").exists());
    let first = told(&h, 1);
    assert!(
        first
            .lines()
            .next()
            .unwrap()
            .ends_with("| not sandboxed (landlock unavailable)"),
        "{first}"
    );
    assert!(
        first.contains("[note: landlock is not available"),
        "{first}"
    );
    let second = told(&h, 2);
    assert!(!second.contains("[note:"), "said once: {second}");
}
