//! `lathe exec` stopped by the user: the first Ctrl-C (SIGINT) stops the run and kills its
//! running command, and the run ends as stopped with exit 130 (128 + SIGINT, as shells report
//! it).

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

const DEADLINE: Duration = Duration::from_secs(60);

fn running(marker: &str) -> bool {
    !lathe_testkit::processes_with(marker).is_empty()
}

/// `lathe exec` (approval `full`, `extra` flags added) whose model asks to run `command`,
/// waited for until the file `started` exists and `marker` shows in `at_least` processes.
fn exec_running(
    command: &str,
    marker: &str,
    at_least: usize,
    extra: &[&str],
) -> (Harness, std::process::Child) {
    let script = Script::new().chat(
        reply()
            .tool_call("shell", json!({ "command": command }))
            .done(),
    );
    let h = Harness::new(script);
    let mut cmd = h.lathe();
    cmd.args([
        "exec",
        "wait a long time",
        "--model",
        MODEL,
        "--base-url",
        &h.server.url(),
        "--approval",
        "full",
    ]);
    cmd.args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let start = Instant::now();
    while !(h.ws.join("started").exists()
        && lathe_testkit::processes_with(marker).len() >= at_least)
    {
        assert!(start.elapsed() < DEADLINE, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    (h, child)
}

#[test]
fn sigint_stops_the_run_kills_the_running_command_and_exits_130() {
    let marker = "876543219";
    let command = format!("touch started; sleep {marker}");
    let (h, child) = exec_running(&command, marker, 1, &["--json"]);
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 128 + libc::SIGINT);
    let start = Instant::now();
    while running(marker) {
        assert!(start.elapsed() < DEADLINE, "the command was left running");
        std::thread::sleep(Duration::from_millis(50));
    }
    let events = json_lines(&output);
    assert_eq!(
        of_type(&events, "tool_call_finished")[0]["status"],
        "cancelled"
    );
    assert_eq!(events.last().unwrap()["status"], "stopped");
    assert_eq!(h.newest_session().status.as_str(), "interrupted");
    // The model never saw a request after the stop.
    assert_eq!(h.bodies().len(), 1);
}

/// Without `--json` too: the end line says who stopped it, and the exit code is 130.
#[test]
fn sigint_exits_130_in_plain_output() {
    let marker = "876543220";
    let command = format!("touch started; sleep {marker}");
    let (_h, child) = exec_running(&command, marker, 1, &[]);
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 130);
    assert!(
        stdout(&output).contains("Stopped by the user"),
        "{}",
        stdout(&output)
    );
}

/// SIGTERM (a `timeout`, a supervisor stopping the job) ends the run at once: the running
/// command's whole tree is killed, the session is marked interrupted, and the exit code is
/// the signal's (143).
#[test]
fn sigterm_kills_the_running_command_and_exits_143() {
    let marker = "876543221";
    let command = format!("setsid sleep {marker} & touch started; sleep {marker}");
    let (h, child) = exec_running(&command, marker, 2, &[]);
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 128 + libc::SIGTERM);
    assert!(
        !running(marker),
        "left behind: {:?}",
        lathe_testkit::processes_with(marker)
    );
    assert_eq!(h.newest_session().status.as_str(), "interrupted");
}

/// A session whose process was SIGKILLed is not shown as running for ever: while `lathe exec`
/// runs, `lathe sessions` says running; once it is killed, interrupted (and the store says so).
#[test]
fn a_sigkilled_session_is_shown_interrupted_not_running() {
    let marker = "876543229";
    let command = format!("touch started; sleep {marker}");
    let (h, mut child) = exec_running(&command, marker, 1, &[]);
    let status = |h: &Harness| {
        let out = h
            .lathe()
            .args(["sessions", "list", "--json"])
            .output()
            .unwrap();
        let sessions: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        sessions[0]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(status(&h), "running");
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(status(&h), "interrupted");
    assert_eq!(h.newest_session().status.as_str(), "interrupted");
    // The killed run's command is killed by its guard, as a SIGKILL of Lathe always does.
    let start = Instant::now();
    while running(marker) {
        assert!(start.elapsed() < DEADLINE, "the command was left running");
        std::thread::sleep(Duration::from_millis(50));
    }
}
