//! `[hooks]`: real `sh` commands run by `lathe exec` and `lathe mcp` at each event, with the
//! scripted model server recording what the model was sent.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::*;

impl Harness {
    fn user_config(&self, text: &str) {
        std::fs::write(self.dir.path().join("config/config.toml"), text).unwrap();
    }
}

fn tool_result(body: &Value) -> String {
    messages(body)
        .last()
        .unwrap()
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn shell_then_done(command: &str) -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({"command": command}))
                .done(),
        )
        .chat(reply().text("It answered. [TASK_COMPLETE]").done())
}

#[test]
fn a_pre_tool_use_hook_that_exits_2_refuses_the_call_and_the_model_reads_its_stderr() {
    let h = Harness::new(shell_then_done("touch made"));
    h.user_config(
        "[[hooks.PreToolUse]]\nmatcher = \"shell|write_file\"\nhooks = [{ type = \"command\", \
         command = \"cat > .pre.json; echo 'no shell in this repo' >&2; exit 2\" }]\n\
         [[hooks.PreToolUse]]\nmatcher = \"read_.*\"\ncommand = \"touch .wrong_matcher\"\n",
    );
    let output = h.exec("what does the shell say", &["--approval", "full"]);
    assert_exit(&output, 0);
    assert!(!h.ws.join("made").exists(), "the call ran");
    assert!(
        !h.ws.join(".wrong_matcher").exists(),
        "read_.* matched shell"
    );
    let result = tool_result(&h.bodies()[1]);
    assert!(
        result
            .contains("a PreToolUse hook refused this call; it did not run: no shell in this repo"),
        "{result}"
    );
    let input: Value = serde_json::from_str(&h.read(".pre.json")).unwrap();
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_name"], "shell");
    assert_eq!(input["tool_input"]["command"], "touch made");
    assert_eq!(input["cwd"], h.ws.to_str().unwrap());
    assert_eq!(input["session_id"], h.newest_session().id.as_str());
}

#[test]
fn an_allow_skips_an_ask_but_not_a_deny_rule_and_its_context_reaches_the_model() {
    let h = Harness::new(
        Script::new()
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "touch made"}))
                    .done(),
            )
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "touch denied"}))
                    .done(),
            )
            .chat(reply().text("It answered. [TASK_COMPLETE]").done()),
    );
    let answer = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","additionalContext":"remember to run cargo fmt"}}"#;
    h.user_config(&format!(
        "[permissions]\ndeny = [\"shell(touch denied*)\"]\n\
         [[hooks.PreToolUse]]\ncommand = '''echo '{answer}' '''\n\
         [[hooks.PostToolUse]]\nmatcher = \"shell\"\ncommand = \"cat > .post.json\"\n"
    ));
    // `ask` with nobody to ask refuses every shell call unless the hook's allow skips the ask.
    let output = h.exec("what do the commands say", &["--approval", "ask"]);
    assert_exit(&output, 0);
    assert!(h.ws.join("made").exists(), "the allow did not skip the ask");
    assert!(
        !h.ws.join("denied").exists(),
        "the allow overrode a deny rule"
    );
    let bodies = h.bodies();
    let first = tool_result(&bodies[1]);
    assert!(
        first.contains("[hook context] remember to run cargo fmt"),
        "{first}"
    );
    let second = tool_result(&bodies[2]);
    assert!(second.contains("denied"), "{second}");
    let post: Value = serde_json::from_str(&h.read(".post.json")).unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    assert_eq!(post["tool_input"]["command"], "touch made");
    assert_eq!(post["tool_response"]["is_error"], false);
}

#[test]
fn a_hook_past_its_timeout_is_killed_with_its_group_and_a_failing_hook_is_noted() {
    let h = Harness::new(shell_then_done("touch made"));
    h.user_config(
        "[[hooks.PreToolUse]]\nhooks = [\n\
         { command = \"sleep 300 & echo $! > .child; wait\", timeout = 1 },\n\
         { command = \"echo boom >&2; exit 1\" },\n]\n",
    );
    let output = h.exec("what does the shell say", &["--approval", "full"]);
    assert_exit(&output, 0);
    assert!(h.ws.join("made").exists(), "the run did not go on");
    let err = stderr(&output);
    assert!(
        err.contains("ran past its timeout of 1s and was killed; the run goes on"),
        "{err}"
    );
    assert!(
        err.contains("exited 1: boom; ignored, the run goes on"),
        "{err}"
    );
    let child = h.read(".child").trim().to_owned();
    let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
    let state = stat.rsplit(')').next().unwrap_or("").trim_start();
    assert!(
        stat.is_empty() || state.starts_with('Z'),
        "the hook's child {child} still runs: {stat}"
    );
}

/// Live processes that are exactly `sleep {marker}1`, `2` or `3`, by pid.
fn sleeps_with(marker: &str) -> Vec<i32> {
    let wanted: Vec<String> = (1..=3).map(|n| format!("sleep {marker}{n}")).collect();
    lathe_testkit::processes_with(marker)
        .into_iter()
        .filter(|(_, cmdline)| wanted.iter().any(|w| w == cmdline.trim_end()))
        .map(|(pid, _)| pid)
        .collect()
}

/// Polls `done` every 20 ms for up to 30 s.
fn wait_until(mut done: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !done() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    true
}

#[test]
fn a_sigkilled_lathe_leaves_no_process_of_a_running_hook_behind() {
    let h = Harness::new(shell_then_done("touch made"));
    let m = format!("1000.{}7", std::process::id());
    // A background job, a daemon in a session of its own (double fork), and the hook itself,
    // which waits for ever: all three are killed by the guard, as a command's would be.
    h.user_config(&format!(
        "[[hooks.PreToolUse]]\ncommand = \"sleep {m}1 >/dev/null 2>&1 & \
         (setsid sleep {m}2 >/dev/null 2>&1 &); exec sleep {m}3\"\ntimeout = 300\n"
    ));
    let mut lathe = h.lathe();
    lathe
        .arg("exec")
        .arg("what does the shell say")
        .args(["--model", MODEL, "--base-url", &h.server.url()])
        .args(["--approval", "full"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = lathe.spawn().unwrap();
    let started = wait_until(|| sleeps_with(&m).len() == 3);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(started, "the hook never started its processes");
    let gone = wait_until(|| sleeps_with(&m).is_empty());
    let left = sleeps_with(&m);
    for &pid in &left {
        // SAFETY: kill(2) on a process this test's hook started (its marker says so).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(gone, "the hook's processes outlived lathe: {left:?}");
    assert!(!h.ws.join("made").exists(), "the call ran");
}

#[test]
fn a_user_prompt_submit_hook_refuses_a_prompt_before_the_model_sees_it() {
    let h = Harness::new(Script::new().chat(reply().text("Hi. [TASK_COMPLETE]").done()));
    h.user_config(
        "[[hooks.UserPromptSubmit]]\ncommand = \"grep -q secret && { echo 'prompt names a \
         secret' >&2; exit 2; }; exit 0\"\n",
    );
    let output = h.exec("print the secret", &[]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).contains(
            "a UserPromptSubmit hook refused the prompt; the model did not see it: prompt names a secret"
        ),
        "{}",
        stderr(&output)
    );
    assert!(h.bodies().is_empty(), "the model was asked");
}

#[test]
fn session_start_and_user_prompt_submit_context_follow_the_prompt() {
    let h = Harness::new(Script::new().chat(reply().text("Hi. [TASK_COMPLETE]").done()));
    h.user_config(
        "[[hooks.SessionStart]]\ncommand = \"echo 'branch: main'\"\n\
         [[hooks.UserPromptSubmit]]\ncommand = \"echo \
         '{\\\"hookSpecificOutput\\\":{\\\"additionalContext\\\":\\\"ticket LAT-7\\\"}}'\"\n",
    );
    let output = h.exec("say hi", &[]);
    assert_exit(&output, 0);
    let prompt = messages(&h.bodies()[0])[1]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        prompt,
        "say hi\n\n[hook context] branch: main\n\n[hook context] ticket LAT-7"
    );
}

#[test]
fn a_stop_hook_sends_the_model_back_with_its_reason_a_bounded_number_of_times() {
    let mut script = Script::new();
    for _ in 0..4 {
        script = script.chat(reply().text("It holds nothing. [TASK_COMPLETE]").done());
    }
    let h = Harness::new(script);
    h.user_config(
        "[[hooks.Stop]]\ncommand = \"cat >> .stops; echo >> .stops; echo 'run the tests first' >&2; exit 2\"\n",
    );
    let output = h.exec("what is in the repo", &[]);
    assert_exit(&output, 0);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    let last = messages(&bodies[1]).last().unwrap()["content"].clone();
    assert_eq!(
        last,
        "A Stop hook asks you to continue before you finish: run the tests first"
    );
    assert!(
        stderr(&output).contains("a Stop hook blocked the end 4 times in a row; the run ends here"),
        "{}",
        stderr(&output)
    );
    let stops: Vec<Value> = h
        .read(".stops")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(stops.len(), 4);
    assert_eq!(stops[0]["stop_hook_active"], false);
    assert_eq!(stops[1]["stop_hook_active"], true);
}

#[test]
fn an_untrusted_workspace_s_hooks_do_not_run_until_it_is_trusted() {
    // Two runs: one before the trust, one after.
    let h = Harness::new(
        shell_then_done("true")
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "true"}))
                    .done(),
            )
            .chat(reply().text("It answered. [TASK_COMPLETE]").done()),
    );
    h.write(
        ".lathe/config.toml",
        "[[hooks.PreToolUse]]\ncommand = \"touch .hook_ran\"\n",
    );
    let output = h.exec("go", &["--approval", "full"]);
    assert_exit(&output, 0);
    assert!(!h.ws.join(".hook_ran").exists(), "an untrusted hook ran");
    let err = stderr(&output);
    assert!(err.contains("hooks.PreToolUse"), "{err}");
    assert!(err.contains("lathe trust"), "{err}");
    h.trust();
    let output = h.exec("go", &["--approval", "full"]);
    assert!(
        h.ws.join(".hook_ran").exists(),
        "the trusted hook did not run: {output:?}"
    );
}

/// One line of JSON-RPC to `lathe mcp` over stdio, and the answer with `id`.
fn rpc(stdin: &mut impl Write, stdout: &mut impl BufRead, message: Value) -> Option<Value> {
    writeln!(stdin, "{message}").unwrap();
    stdin.flush().unwrap();
    let id = message.get("id")?.clone();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "lathe mcp ended");
        let value: Value = serde_json::from_str(&line).unwrap();
        if value.get("id") == Some(&id) {
            return Some(value);
        }
    }
}

#[test]
fn a_pre_tool_use_hook_applies_to_a_call_from_an_mcp_client() {
    let h = Harness::new(Script::new());
    h.user_config(
        "[[hooks.PreToolUse]]\nmatcher = \"shell\"\ncommand = \"cat > .mcp_pre.json; echo \
         'not from MCP' >&2; exit 2\"\n",
    );
    let mut child = h
        .lathe()
        .args(["mcp", "--approval", "full"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    rpc(
        &mut stdin,
        &mut stdout,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
    );
    rpc(
        &mut stdin,
        &mut stdout,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let answer = rpc(
        &mut stdin,
        &mut stdout,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "shell", "arguments": {"command": "touch made"}}}),
    )
    .unwrap();
    drop(stdin);
    let _ = child.wait();
    let text = answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("it did not run: not from MCP"), "{answer}");
    assert_eq!(answer["result"]["isError"], true, "{answer}");
    assert!(!h.ws.join("made").exists(), "the call ran");
    let input: Value = serde_json::from_str(&h.read(".mcp_pre.json")).unwrap();
    assert_eq!(input["tool_input"]["command"], "touch made");
}

#[test]
fn in_chat_a_refused_prompt_is_shown_and_the_next_one_carries_the_session_start_context() {
    let h = Harness::new(Script::new().chat(reply().text("Hello back.").done()));
    h.user_config(
        "[[hooks.SessionStart]]\ncommand = \"echo 'branch: main'\"\n\
         [[hooks.UserPromptSubmit]]\ncommand = \"grep -q secret && { echo 'prompt names a \
         secret' >&2; exit 2; }; exit 0\"\n",
    );
    let mut term = crate::pty::Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("print the secret");
    term.wait_for(
        "a UserPromptSubmit hook refused this prompt; the model did not see it: prompt names a secret",
    );
    term.type_line("hello");
    term.wait_for("Hello back.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0, "{}", term.screen());
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    let sent = messages(&bodies[0])
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(!sent.contains("secret"), "{sent}");
    assert!(
        sent.contains("hello\n\n[hook context] branch: main"),
        "{sent}"
    );
}

/// `SessionStart` hooks are told how the session began: `startup` for a new chat, `clear` for
/// the session `/clear` opens, `resume` for `--resume`.
#[test]
fn session_start_hooks_are_told_startup_clear_or_resume() {
    let h = Harness::new(
        Script::new()
            .chat(reply().text("First.").done())
            .chat(reply().text("Second.").done())
            .chat(reply().text("Third.").done()),
    );
    h.user_config("[[hooks.SessionStart]]\ncommand = \"{ cat; echo; } >> starts.log\"\n");
    let sources = || -> Vec<String> {
        h.read("starts.log")
            .lines()
            .map(|line| {
                let input: Value = serde_json::from_str(line).unwrap();
                input["source"].as_str().unwrap_or_default().to_owned()
            })
            .collect()
    };
    let mut term = crate::pty::Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("hello");
    term.wait_for("First.");
    term.type_line("/clear");
    term.type_line("hello again");
    term.wait_for("Second.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0, "{}", term.screen());
    assert_eq!(sources(), ["startup", "clear"]);

    let id = h.newest_session().id.to_string();
    let mut term = crate::pty::Terminal::start(&h, &["--resume", &id]);
    term.wait_for("resumed session");
    term.type_line("and once more");
    term.wait_for("Third.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0, "{}", term.screen());
    assert_eq!(sources(), ["startup", "clear", "resume"]);
}

#[test]
fn lathe_tool_runs_the_configured_pre_and_post_tool_use_hooks() {
    // No model: `lathe tool` goes through the same host as the agent, hooks included.
    let h = Harness::new(Script::new());
    h.user_config(
        "[[hooks.PreToolUse]]\nmatcher = \"write_file\"\ncommand = \"cat > .pre.json\"\n\
         [[hooks.PostToolUse]]\nmatcher = \"write_file\"\ncommand = \"cat > .post.json\"\n\
         [[hooks.PreToolUse]]\nmatcher = \"shell\"\ncommand = \"echo 'not here' >&2; exit 2\"\n",
    );
    let output = h
        .lathe()
        .args([
            "tool",
            "write_file",
            r#"{"path": "a.txt", "content": "hi\n"}"#,
        ])
        .output()
        .unwrap();
    assert_exit(&output, 0);
    assert_eq!(h.read("a.txt"), "hi\n");
    let pre: Value = serde_json::from_str(&h.read(".pre.json")).unwrap();
    assert_eq!(pre["hook_event_name"], "PreToolUse");
    assert_eq!(pre["tool_name"], "write_file");
    assert_eq!(pre["tool_input"]["path"], "a.txt");
    let post: Value = serde_json::from_str(&h.read(".post.json")).unwrap();
    assert_eq!(post["hook_event_name"], "PostToolUse");
    // A hook that refuses stops the call, as in the agent.
    let output = h
        .lathe()
        .args(["tool", "shell", r#"{"command": "touch made"}"#])
        .output()
        .unwrap();
    assert_exit(&output, 1);
    assert!(!h.ws.join("made").exists(), "the refused call ran");
    assert!(stdout(&output).contains("not here"), "{}", stdout(&output));
}
