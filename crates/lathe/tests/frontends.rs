//! One answer for the same call (issue 13): `lathe tool`, `lathe mcp` (a real MCP client over
//! stdio) and the agent (`lathe exec` against a scripted model) run the same calls through the
//! one dispatcher, and the model reads the same text in each: an unknown tool, a bad argument,
//! a denial by the read-only mode, a denial by a deny rule, a successful read; and, where
//! changes are allowed, an edit and a new file, with the same diffs.

use std::path::Path;
use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

use crate::agent_harness::*;
use lathe_testkit::Script;

/// Calls run in one approval mode with one configuration, in a fresh workspace per front end.
struct Scenario {
    mode: &'static str,
    config: &'static str,
    /// The calls, in order, with how each ends (the status of `lathe tool` and the agent).
    calls: Vec<(&'static str, Value, &'static str)>,
}

/// Read-only, with a deny rule: the write is refused by the mode, the read of `secret.txt`
/// (which read-only allows) by the rule.
fn refusals() -> Scenario {
    Scenario {
        mode: "read-only",
        config: "[permissions]\ndeny = [\"read(secret.txt)\"]\n",
        calls: vec![
            ("bsh", json!({"command": "ls"}), "refused"),
            (
                "read_file",
                json!({"path": "hello.txt", "offset": "x"}),
                "refused",
            ),
            (
                "write_file",
                json!({"path": "new.txt", "content": "x\n"}),
                "denied",
            ),
            ("read_file", json!({"path": "secret.txt"}), "denied"),
            ("read_file", json!({"path": "hello.txt"}), "ok"),
        ],
    }
}

/// `auto` runs changes inside the workspace: an edit, a new file, and an edit whose text is
/// not there (its plan fails: the tool's error).
fn changes() -> Scenario {
    Scenario {
        mode: "auto",
        config: "",
        calls: vec![
            ("read_file", json!({"path": "hello.txt"}), "ok"),
            (
                "edit_file",
                json!({"path": "hello.txt", "old_string": "hello", "new_string": "hi"}),
                "ok",
            ),
            (
                "write_file",
                json!({"path": "new/made.txt", "content": "one\ntwo\n"}),
                "ok",
            ),
            (
                "edit_file",
                json!({"path": "hello.txt", "old_string": "absent", "new_string": "x"}),
                "error",
            ),
        ],
    }
}

/// What one front end answered to one call.
#[derive(Debug, Clone, PartialEq)]
struct Answer {
    /// The text the model reads.
    text: String,
    is_error: bool,
    /// The status, where the front end reports one (`lathe tool`, the agent's events).
    status: Option<String>,
    /// The metadata's JSON form, where the front end shows it (`lathe tool --json`, MCP
    /// `structuredContent`); `None` for an empty one.
    metadata: Option<Map<String, Value>>,
    /// The files the call changed, with their diffs (`null` for none): in the metadata, or in
    /// the agent's `tool_call_finished` event.
    changes: Value,
}

impl Answer {
    fn with_metadata(
        text: String,
        is_error: bool,
        status: Option<String>,
        metadata: Option<Map<String, Value>>,
    ) -> Answer {
        let metadata = metadata.filter(|m| !m.is_empty());
        let changes = metadata
            .as_ref()
            .and_then(|m| m.get("changes").cloned())
            .unwrap_or(Value::Null);
        Answer {
            text,
            is_error,
            status,
            metadata,
            changes,
        }
    }
}

/// A workspace for one front end, and the configuration file.
fn harness(scenario: &Scenario, script: Script) -> (Harness, std::path::PathBuf) {
    let h = Harness::new(script);
    h.write("hello.txt", "hello from the workspace\n");
    h.write("secret.txt", "TOKEN=1\n");
    let config = h.dir.path().join("frontends.toml");
    std::fs::write(&config, scenario.config).unwrap();
    (h, config)
}

fn common_args(h: &Harness, config: &Path) -> Vec<String> {
    vec![
        "--workspace".into(),
        h.ws.display().to_string(),
        "--config".into(),
        config.display().to_string(),
    ]
}

/// What the workspace holds after the calls (the configuration's own files aside).
fn contents(h: &Harness) -> Vec<(String, String)> {
    let mut files = Vec::new();
    for path in ["hello.txt", "secret.txt", "new.txt", "new/made.txt"] {
        if let Ok(text) = std::fs::read_to_string(h.ws.join(path)) {
            files.push((path.to_owned(), text));
        }
    }
    files
}

/// `lathe tool --batch --approval MODE`, one line per call.
fn through_lathe_tool(scenario: &Scenario) -> (Vec<Answer>, Vec<(String, String)>) {
    let (h, config) = harness(scenario, Script::new());
    let mut child = h
        .lathe()
        .args(common_args(&h, &config))
        .args(["tool", "--batch", "--approval", scenario.mode])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for (name, arguments, _) in &scenario.calls {
        input.push_str(&json!({"name": name, "arguments": arguments}).to_string());
        input.push('\n');
    }
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "some calls fail");
    let answers = json_lines(&output)
        .into_iter()
        .map(|line| {
            Answer::with_metadata(
                line["text"].as_str().unwrap().to_owned(),
                line["is_error"].as_bool().unwrap(),
                line["status"].as_str().map(str::to_owned),
                line["metadata"].as_object().cloned(),
            )
        })
        .collect();
    (answers, contents(&h))
}

/// `lathe mcp --approval MODE` over stdio, with the SDK's client. An unknown tool is a
/// protocol error there (as MCP asks); its message is what the others' models read.
async fn through_lathe_mcp(scenario: &Scenario) -> (Vec<Answer>, Vec<(String, String)>) {
    let (h, config) = harness(scenario, Script::new());
    let mut command = tokio::process::Command::from(h.lathe());
    command
        .args(common_args(&h, &config))
        .args(["mcp", "--approval", scenario.mode])
        .env("LATHE_LOG", "error")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    let mut child = command.spawn().expect("lathe mcp starts");
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    let client = ().serve((stdout, stdin)).await.expect("the client connects");
    let mut answers = Vec::new();
    for (name, arguments, _) in &scenario.calls {
        let Value::Object(arguments) = arguments.clone() else {
            unreachable!()
        };
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(arguments);
        let answer = match client.call_tool(params).await {
            Ok(result) => Answer::with_metadata(
                result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect::<Vec<_>>()
                    .join(""),
                result.is_error == Some(true),
                None,
                result
                    .structured_content
                    .and_then(|v| v.as_object().cloned()),
            ),
            Err(rmcp::ServiceError::McpError(error)) => {
                Answer::with_metadata(error.message.to_string(), true, None, None)
            }
            Err(other) => panic!("{name}: {other}"),
        };
        answers.push(answer);
    }
    client.cancel().await.expect("the client closes");
    let _ = child.wait().await;
    (answers, contents(&h))
}

/// `lathe exec --approval MODE`: a scripted model makes every call in one turn; the results
/// are the tool messages of its next request, the statuses and changes those of the events.
fn through_the_agent(scenario: &Scenario) -> (Vec<Answer>, Vec<(String, String)>) {
    let tool_calls: Vec<(Option<&str>, &str, Value)> = scenario
        .calls
        .iter()
        .map(|(name, arguments, _)| (None, *name, arguments.clone()))
        .collect();
    let script = Script::new()
        .chat(reply().tool_calls(&tool_calls).done())
        .chat(reply().text("Done.").done());
    let (h, config) = harness(scenario, script);
    let config = config.display().to_string();
    let output = h.exec(
        "work on hello.txt",
        &["--config", &config, "--approval", scenario.mode, "--json"],
    );
    // The scenario's write is denied and nothing is written: `exec` says so with exit 3.
    let denied_write = json_lines(&output)
        .last()
        .is_some_and(|last| last["changes_denied"] == true);
    assert_exit(&output, if denied_write { 3 } else { 0 });
    let events = json_lines(&output);
    let finished = of_type(&events, "tool_call_finished");
    let bodies = h.bodies();
    let results: Vec<String> = messages(&bodies[1])
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    let count = scenario.calls.len();
    assert_eq!(results.len(), count, "{:#?}", messages(&bodies[1]));
    assert_eq!(finished.len(), count, "{events:#?}");
    let answers = results
        .into_iter()
        .zip(finished)
        .map(|(text, event)| {
            let status = event["status"].as_str().unwrap().to_owned();
            Answer {
                is_error: status != "ok",
                text,
                status: Some(status),
                metadata: None,
                changes: event.get("changes").cloned().unwrap_or(Value::Null),
            }
        })
        .collect();
    (answers, contents(&h))
}

/// Runs `scenario` through the three front ends and compares what each model would read,
/// each status, the typed metadata and the workspace left behind. Returns `lathe tool`'s
/// answers for the scenario's own checks.
fn same_everywhere(scenario: &Scenario) -> Vec<Answer> {
    let (tool, tool_files) = through_lathe_tool(scenario);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (mcp, mcp_files) = runtime.block_on(through_lathe_mcp(scenario));
    let (agent, agent_files) = through_the_agent(scenario);

    let statuses: Vec<&str> = tool.iter().map(|a| a.status.as_deref().unwrap()).collect();
    let expected: Vec<&str> = scenario.calls.iter().map(|(_, _, s)| *s).collect();
    assert_eq!(statuses, expected, "{tool:#?}");

    // lathe tool and lathe mcp: the text, the error flag and the whole metadata (`--json`'s
    // `metadata` and `structuredContent` are both its JSON form).
    type Shown = (String, bool, Option<Map<String, Value>>);
    let shown = |answers: &[Answer]| -> Vec<Shown> {
        answers
            .iter()
            .map(|a| (a.text.clone(), a.is_error, a.metadata.clone()))
            .collect()
    };
    // `lathe mcp` offers two tools of its own (an MCP session's checkpoints; the agent has
    // `lathe undo` and chat's commands for that), which an unknown tool's list names too.
    let mcp_shown: Vec<Shown> = shown(&mcp)
        .into_iter()
        .map(|(text, is_error, metadata)| {
            let text = text.replace(", checkpoint_list, checkpoint_restore.", ".");
            (text, is_error, metadata)
        })
        .collect();
    assert_eq!(mcp_shown, shown(&tool), "lathe mcp and lathe tool");
    // The agent: the text, the status and the changes its events record. A difference shows
    // every call it touches.
    let told = |answers: &[Answer]| -> Vec<(String, Option<String>, Value)> {
        answers
            .iter()
            .map(|a| (a.text.clone(), a.status.clone(), a.changes.clone()))
            .collect()
    };
    // The agent offers the sub-agent tools too (`lathe tool` and `lathe mcp` have no model).
    let agent_told: Vec<(String, Option<String>, Value)> = told(&agent)
        .into_iter()
        .map(|(text, status, changes)| {
            let text = text.replace(", spawn_agent, read_sub_agent.", ".");
            (text, status, changes)
        })
        .collect();
    assert_eq!(agent_told, told(&tool), "the agent and lathe tool");
    assert_eq!(mcp_files, tool_files, "what lathe mcp left");
    assert_eq!(agent_files, tool_files, "what the agent left");
    tool
}

#[test]
fn refusals_and_a_read_give_the_same_answer_in_every_front_end() {
    let answers = same_everywhere(&refusals());
    // What the answers say, so that "the same" is not "the same mistake".
    let [unknown, bad, read_only, ruled, read] = answers.as_slice() else {
        panic!("{answers:#?}");
    };
    assert!(
        unknown.text.starts_with("unknown tool `bsh`.") && unknown.text.contains("read_file"),
        "{}",
        unknown.text
    );
    assert!(
        bad.text.starts_with("invalid arguments for `read_file`") && bad.text.contains("offset"),
        "{}",
        bad.text
    );
    assert!(
        read_only.text.starts_with("denied by Lathe's policy: ")
            && read_only.text.contains("read-only"),
        "{}",
        read_only.text
    );
    assert!(
        ruled.text.starts_with("denied by Lathe's policy: ")
            && ruled.text.contains("read(secret.txt)"),
        "{}",
        ruled.text
    );
    assert!(!ruled.text.contains("TOKEN"), "{}", ruled.text);
    assert!(
        !read.is_error && read.text.contains("hello from the workspace"),
        "{}",
        read.text
    );
    let metadata = read.metadata.as_ref().expect("a read says what it showed");
    assert_eq!(metadata["path"], "hello.txt", "{metadata:?}");
}

#[test]
fn changes_give_the_same_answer_and_the_same_diffs_in_every_front_end() {
    let answers = same_everywhere(&changes());
    let [_, edit, write, missing] = answers.as_slice() else {
        panic!("{answers:#?}");
    };
    let edited = &edit.changes[0];
    assert_eq!(edited["path"], "hello.txt", "{edited}");
    assert_eq!(
        (&edited["added"], &edited["removed"]),
        (&json!(1), &json!(1))
    );
    let diff = edited["diff"].as_str().unwrap();
    assert!(
        diff.contains("-hello from the workspace") && diff.contains("+hi from the workspace"),
        "{diff}"
    );
    let made = &write.changes[0];
    assert_eq!(made["path"], "new/made.txt", "{made}");
    assert_eq!(made["created"], true, "{made}");
    assert_eq!(made["added"], 2, "{made}");
    assert!(missing.is_error && missing.changes.is_null(), "{missing:?}");
}
