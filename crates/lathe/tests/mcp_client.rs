//! Lathe as an MCP client: `lathe exec` (the scripted model) calling the tools of real MCP
//! servers: one written with the official Python SDK (`mcp_py/tool_server.py`), the reference
//! server `@modelcontextprotocol/server-everything` (npm), and a second `lathe mcp` as a remote
//! workspace, over stdio and over streamable HTTP. `lathe mcp list|add|remove` on a temporary
//! configuration.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::Terminal;

const DEADLINE: Duration = Duration::from_secs(90);

fn server_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_py/tool_server.py")
}

/// Whether the Python SDK is here; a loud SKIPPED line when not.
fn sdk() -> bool {
    let found = Command::new("python3")
        .args(["-c", "import mcp.server.mcpserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        use std::io::Write;
        let _ = std::io::stderr().write_all(
            b"\n!!!! SKIPPED: the MCP Python SDK 2.x is not installed (python3 -m pip install 'mcp>=2.3'); the MCP client tests with it did not run\n",
        );
    }
    found
}

/// A `[mcp_servers.NAME]` entry for the Python server in `mode`.
fn py_entry(name: &str, mode: &str, marker: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{:?}, {mode:?}]\nenv = {{ MARKER = {:?} }}\n{extra}\n",
        server_script().display().to_string(),
        marker.display().to_string(),
    )
}

/// Writes the user's configuration file (the one `lathe mcp add` writes).
fn user_config(h: &Harness, text: &str) {
    std::fs::write(h.dir.path().join("config/config.toml"), text).unwrap();
}

fn call(name: &str, arguments: Value) -> lathe_testkit::Response {
    reply().tool_call(name, arguments).done()
}

/// The content of the tool messages of the request `n`.
fn tool_results(h: &Harness, n: usize) -> Vec<String> {
    messages(&h.bodies()[n])
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The tool names offered in request `n`.
fn offered(h: &Harness, n: usize) -> Vec<String> {
    h.bodies()[n]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn statuses(output: &std::process::Output) -> Vec<String> {
    of_type(&json_lines(output), "tool_call_finished")
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn the_agent_calls_a_python_sdk_server_and_an_allow_rule_lets_it_run() {
    if !sdk() {
        return;
    }
    let script = Script::new()
        .chat(call("mcp__py__add", json!({"a": 2, "b": 3})))
        .chat(reply().text("The sum is 5.").done());
    let h = Harness::new(script);
    let marker = h.dir.path().join("marker");
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__py__*)\"]\n\n{}",
            py_entry("py", "normal", &marker, "")
        ),
    );
    let output = h.exec("add 2 and 3", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(statuses(&output), ["ok"]);
    let tools = offered(&h, 0);
    for name in ["mcp__py__add", "mcp__py__lookup", "read_file"] {
        assert!(
            tools.contains(&name.to_owned()),
            "{name} offered: {tools:?}"
        );
    }
    // The server's schema, made portable: no titles.
    let bodies = h.bodies();
    let add = &bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "mcp__py__add")
        .unwrap()["function"];
    assert_eq!(add["description"], "Adds two integers.");
    assert_eq!(
        add["parameters"]["properties"]["a"],
        json!({"type": "integer"})
    );
    assert_eq!(tool_results(&h, 1), ["sum 5"]);
}

#[test]
fn mcp_tools_ask_in_auto_and_read_only_hints_count_only_for_a_trusted_server() {
    if !sdk() {
        return;
    }
    let script = || {
        Script::new()
            .chat(call("mcp__py__lookup", json!({"key": "k"})))
            .chat(call("mcp__py__add", json!({"a": 1, "b": 1})))
            .chat(reply().text("done").done())
    };
    let h = Harness::new(script());
    let marker = h.dir.path().join("marker");
    user_config(&h, &py_entry("py", "normal", &marker, ""));
    let output = h.exec("look up k", &["--approval", "auto", "--json"]);
    // Not trusted: the hint does not count, and nobody can be asked in this run.
    assert_eq!(
        statuses(&output),
        ["denied", "denied"],
        "{}",
        stderr(&output)
    );
    let asked = of_type(&json_lines(&output), "approval_requested").len();
    assert_eq!(asked, 2);

    let h = Harness::new(script());
    user_config(&h, &py_entry("py", "normal", &marker, "trusted = true"));
    let output = h.exec("look up k", &["--approval", "auto", "--json"]);
    // Trusted: the read-only tool runs unasked; the other still asks.
    assert_eq!(statuses(&output), ["ok", "denied"], "{}", stderr(&output));
    assert_eq!(tool_results(&h, 1), ["value of k"]);
}

#[test]
fn a_workspace_server_needs_the_workspace_trusted_and_cannot_trust_itself() {
    if !sdk() {
        return;
    }
    let script = || {
        Script::new()
            .chat(call("mcp__py__lookup", json!({"key": "k"})))
            .chat(reply().text("done").done())
    };
    let h = Harness::new(script());
    let marker = h.dir.path().join("marker");
    h.write(
        ".lathe/config.toml",
        &py_entry("py", "normal", &marker, "trusted = true"),
    );
    let output = h.exec("look up k", &["--approval", "auto", "--json"]);
    assert!(
        !offered(&h, 0).contains(&"mcp__py__lookup".to_owned()),
        "an untrusted workspace's server is not started"
    );
    assert!(
        stderr(&output).contains("lathe trust"),
        "{}",
        stderr(&output)
    );

    let h2 = Harness::new(script());
    h2.write(
        ".lathe/config.toml",
        &py_entry("py", "normal", &marker, "trusted = true"),
    );
    h2.trust();
    let output = h2.exec("look up k", &["--approval", "auto", "--json"]);
    assert!(offered(&h2, 0).contains(&"mcp__py__lookup".to_owned()));
    // `trusted` is the user's word only: the read-only hint of a workspace's server still asks.
    assert_eq!(statuses(&output), ["denied"], "{}", stderr(&output));
}

#[test]
fn a_server_that_fails_is_left_out_and_one_that_crashes_is_restarted_once() {
    if !sdk() {
        return;
    }
    let script = Script::new()
        .chat(call("mcp__py__crash", json!({})))
        .chat(call("mcp__py__crash", json!({})))
        .chat(reply().text("It came back.").done());
    let h = Harness::new(script);
    let marker = h.dir.path().join("crashed");
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__*)\"]\n\n{}{}",
            py_entry("py", "normal", &marker, ""),
            py_entry("broken", "fail", &marker, "")
        ),
    );
    let output = h.exec("crash it", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    let err = stderr(&output);
    assert!(
        err.contains("MCP server `broken` is left out")
            && err.contains("cannot open the database /nonexistent/db.sqlite"),
        "{err}"
    );
    assert!(marker.exists(), "the first call crashed the server");
    let first = tool_results(&h, 1);
    assert!(
        first[0].contains("the MCP server `py` stopped during the call"),
        "{first:?}"
    );
    assert_eq!(tool_results(&h, 2)[1], "survived the restart");
}

#[test]
fn two_hundred_tools_are_offered_on_demand_through_more_tools() {
    if !sdk() {
        return;
    }
    let script = Script::new()
        .chat(call("more_tools", json!({"enable": ["mcp__many__tool_7"]})))
        .chat(call("mcp__many__tool_7", json!({"text": "hi"})))
        .chat(reply().text("done").done());
    let h = Harness::new(script);
    let marker = h.dir.path().join("marker");
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__many__*)\"]\n\n{}",
            py_entry("many", "many", &marker, "")
        ),
    );
    let output = h.exec("use tool 7", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains("200 MCP tools"),
        "{}",
        stderr(&output)
    );
    let first = offered(&h, 0);
    assert!(first.contains(&"more_tools".to_owned()), "{first:?}");
    assert!(!first.iter().any(|n| n.starts_with("mcp__")), "{first:?}");
    assert!(offered(&h, 2).contains(&"mcp__many__tool_7".to_owned()));
    assert_eq!(tool_results(&h, 2).last().unwrap(), "tool 7 got hi");
}

#[test]
fn ctrl_c_during_a_call_sends_the_server_notifications_cancelled() {
    if !sdk() {
        return;
    }
    let script = Script::new().chat(call("mcp__py__slow", json!({})));
    let h = Harness::new(script);
    let marker = h.dir.path().join("slow");
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__py__*)\"]\n\n{}",
            py_entry("py", "normal", &marker, "")
        ),
    );
    let mut cmd = h.lathe();
    cmd.args([
        "exec",
        "wait",
        "--model",
        MODEL,
        "--base-url",
        &h.server.url(),
    ])
    .args(["--approval", "auto", "--json"])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let child = cmd.spawn().unwrap();
    let started = marker.with_extension("started");
    let start = Instant::now();
    while !started.exists() {
        assert!(start.elapsed() < DEADLINE, "the call never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: plain kill(2) on our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 128 + libc::SIGINT);
    let cancelled = marker.with_extension("cancelled");
    let start = Instant::now();
    while !cancelled.exists() {
        assert!(
            start.elapsed() < DEADLINE,
            "the server was not told: {}",
            stderr(&output)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(statuses(&output), ["cancelled"]);
}

/// `lathe mcp --workspace other` as a stdio server: the agent reads the other workspace.
#[test]
fn a_second_lathe_mcp_is_a_remote_workspace() {
    let script = Script::new()
        .chat(call("mcp__remote__read_file", json!({"path": "notes.txt"})))
        .chat(reply().text("read it").done());
    let h = Harness::new(script);
    let other = h.dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "remote line one\n").unwrap();
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__remote__*)\"]\n\n[mcp_servers.remote]\ncommand = {:?}\nargs = [\"mcp\", \"--workspace\", {:?}]\n",
            env!("CARGO_BIN_EXE_lathe"),
            other.display().to_string()
        ),
    );
    let output = h.exec("read the notes", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    let results = tool_results(&h, 1);
    assert!(results[0].contains("remote line one"), "{results:?}");
    assert!(!h.ws.join("notes.txt").exists());
}

/// `lathe mcp --listen` on another workspace, reached over streamable HTTP, configured with a
/// header and a bearer token from the environment (that they reach the wire is not checked:
/// `lathe mcp --listen` ignores them).
#[test]
fn a_streamable_http_server_is_called_with_headers_configured() {
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("far.txt"), "over http\n").unwrap();
    let script = Script::new()
        .chat(call("mcp__web__read_file", json!({"path": "far.txt"})))
        .chat(reply().text("read it").done());
    let h = Harness::new(script);
    let mut server = h
        .lathe()
        .args(["mcp", "--listen", "127.0.0.1:0", "--workspace"])
        .arg(other.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr_pipe = server.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let _ = tx.send(rest.trim().to_owned());
            }
        }
    });
    let url = rx.recv_timeout(DEADLINE).expect("the server listens");
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__web__*)\"]\n\n[mcp_servers.web]\nurl = {url:?}\nheaders = {{ X-Team = \"core\" }}\nbearer_token_env = \"WEB_TOKEN\"\n"
        ),
    );
    let mut cmd = h.lathe();
    cmd.args([
        "exec",
        "read far",
        "--model",
        MODEL,
        "--base-url",
        &h.server.url(),
    ])
    .args(["--approval", "auto", "--json"])
    .env("WEB_TOKEN", "secret-1")
    .stdin(Stdio::null());
    let output = cmd.output().unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert_exit(&output, 0);
    let results = tool_results(&h, 1);
    assert!(results[0].contains("over http"), "{results:?}");
}

#[test]
fn a_missing_bearer_token_variable_is_reported_and_the_run_goes_on() {
    let script = Script::new().chat(reply().text("fine").done());
    let h = Harness::new(script);
    user_config(
        &h,
        "[mcp_servers.web]\nurl = \"http://127.0.0.1:9/mcp\"\nbearer_token_env = \"LATHE_TEST_NO_SUCH_TOKEN\"\n",
    );
    let output = h.exec("hello", &[]);
    assert_exit(&output, 0);
    assert!(
        stderr(&output).contains(
            "MCP server `web` is left out: the environment variable LATHE_TEST_NO_SUCH_TOKEN (bearer_token_env) is not set"
        ),
        "{}",
        stderr(&output)
    );
}

fn everything() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-everything/node_modules/.bin/mcp-server-everything");
    if bin.exists() {
        return Some(bin);
    }
    use std::io::Write;
    let _ = std::io::stderr().write_all(
        b"\n!!!! SKIPPED: @modelcontextprotocol/server-everything is not installed in target/mcp-everything (.ci/run installs it); its MCP client tests did not run\n",
    );
    None
}

/// The reference server: progress shown, an image result passed on, elicitation declined in a
/// headless run.
#[test]
fn the_reference_server_progress_images_and_a_declined_elicitation() {
    let Some(bin) = everything() else {
        return;
    };
    let script = Script::new()
        .chat(call(
            "mcp__everything__trigger-long-running-operation",
            json!({"duration": 1, "steps": 2}),
        ))
        .chat(call("mcp__everything__get-tiny-image", json!({})))
        .chat(call(
            "mcp__everything__trigger-elicitation-request",
            json!({}),
        ))
        .chat(reply().text("done").done());
    let h = Harness::new(script);
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__everything__*)\"]\n\n[mcp_servers.everything]\ncommand = {:?}\nargs = [\"stdio\"]\n",
            bin.display().to_string()
        ),
    );
    let output = h.exec("try everything", &["--approval", "auto", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(statuses(&output), ["ok", "ok", "ok"], "{}", stderr(&output));
    let events = json_lines(&output);
    let progress: String = of_type(&events, "tool_output_delta")
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default())
        .collect();
    assert!(progress.contains("progress 1/2"), "{events:#?}");
    let image = tool_results(&h, 2);
    assert!(image.join("\n").contains("[image image/png]"), "{image:?}");
    let elicited = tool_results(&h, 3).join("\n");
    assert!(elicited.to_lowercase().contains("decline"), "{elicited}");
}

#[test]
fn mcp_add_list_and_remove_edit_the_user_file_and_keep_the_rest() {
    if !sdk() {
        return;
    }
    let h = Harness::new(Script::new());
    let file = h.dir.path().join("config/config.toml");
    std::fs::write(
        &file,
        "# my settings\n[model]\nname = \"qwen3:8b\" # the usual\n",
    )
    .unwrap();
    let run = |args: &[&str]| {
        h.lathe()
            .arg("mcp")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let script = server_script().display().to_string();
    let added = run(&[
        "add",
        "py",
        "--env",
        "MARKER=/tmp/x",
        "--",
        "python3",
        &script,
        "normal",
    ]);
    assert_exit(&added, 0);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with("# my settings\n[model]\nname = \"qwen3:8b\" # the usual\n"),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.py]") && text.contains("command = \"python3\""),
        "{text}"
    );
    let again = run(&["add", "py", "--", "python3"]);
    assert_exit(&again, 2);
    assert!(stderr(&again).contains("already in"), "{}", stderr(&again));
    assert_exit(
        &run(&["add", "broken", "--", "python3", &script, "fail"]),
        0,
    );

    let listed = run(&["list"]);
    assert_exit(&listed, 1);
    let out = stdout(&listed);
    assert!(out.contains("py: connected, 5 tools"), "{out}");
    assert!(
        out.contains("  mcp__py__lookup [read-only]  Looks a key up"),
        "{out}"
    );
    assert!(
        out.contains("broken: failed:") && out.contains("cannot open the database"),
        "{out}"
    );

    assert_exit(&run(&["remove", "broken"]), 0);
    assert_exit(&run(&["list"]), 0);
    let missing = run(&["remove", "nope"]);
    assert_exit(&missing, 2);
    assert!(
        stderr(&missing).contains("no MCP server `nope`"),
        "{}",
        stderr(&missing)
    );
    assert_exit(&run(&["remove", "py"]), 0);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        "# my settings\n[model]\nname = \"qwen3:8b\" # the usual\n"
    );
    let nothing = run(&["add", "x"]);
    assert_exit(&nothing, 2);
    assert!(
        stderr(&nothing).contains("after `--`"),
        "{}",
        stderr(&nothing)
    );
}

/// In chat, a server's elicitation request is put to the user, field by field; in a headless
/// run it is declined.
#[test]
fn chat_puts_an_elicitation_to_the_user_and_exec_declines_it() {
    if !sdk() {
        return;
    }
    let script = Script::new()
        .chat(call("mcp__py__ask_name", json!({})))
        .chat(reply().text("Greeted.").done());
    let h = Harness::new(script);
    let marker = h.dir.path().join("marker");
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__py__*)\"]\n\n{}",
            py_entry("py", "normal", &marker, "")
        ),
    );
    let mut term = Terminal::start(&h, &["--approval", "auto"]);
    term.wait_for("> ");
    term.type_line("who am I");
    term.wait_for("The MCP server `py` asks: Who is asking?");
    term.wait_for("Name [string]: ");
    term.type_line("Ada");
    term.wait_for("Age [integer]: ");
    term.type_line("many");
    term.wait_for("give integer");
    term.type_line("36");
    term.wait_for("Greeted.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    assert_eq!(tool_results(&h, 1), ["hello Ada, 36"]);

    let script = Script::new()
        .chat(call("mcp__py__ask_name", json!({})))
        .chat(reply().text("Nobody.").done());
    let h = Harness::new(script);
    user_config(
        &h,
        &format!(
            "[permissions]\nallow = [\"tool(mcp__py__*)\"]\n\n{}",
            py_entry("py", "normal", &marker, "")
        ),
    );
    let output = h.exec("who am I", &["--approval", "auto"]);
    assert_exit(&output, 0);
    assert_eq!(tool_results(&h, 1), ["the user answered decline"]);
}
