//! One answer for the same call (issue 13): `lathe tool`, `lathe mcp` (a real MCP client over
//! stdio) and the agent (`lathe exec` against a scripted model) run the same calls through the
//! one dispatcher, and the model reads the same text in each: an unknown tool, a bad argument,
//! a denial by the read-only mode, a denial by a deny rule, and a successful read.

mod agent_harness;

use std::process::Stdio;

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::{Map, Value, json};

use agent_harness::*;
use lathe_testkit::Script;

/// The calls, in order, with how each ends (the agent's and `lathe tool`'s status).
fn calls() -> Vec<(&'static str, Value, &'static str)> {
    vec![
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
    ]
}

/// Every front end runs in read-only mode with this configuration: the write is refused by
/// the mode, the read of `secret.txt` (which read-only allows) by the rule.
const CONFIG: &str = "[permissions]\ndeny = [\"read(secret.txt)\"]\n";

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
}

fn harness(script: Script) -> (Harness, std::path::PathBuf) {
    let h = Harness::new(script);
    h.write("hello.txt", "hello from the workspace\n");
    h.write("secret.txt", "TOKEN=1\n");
    let config = h.dir.path().join("frontends.toml");
    std::fs::write(&config, CONFIG).unwrap();
    (h, config)
}

fn common_args(h: &Harness, config: &std::path::Path) -> Vec<String> {
    vec![
        "--workspace".into(),
        h.ws.display().to_string(),
        "--config".into(),
        config.display().to_string(),
    ]
}

/// `lathe tool --batch --approval read-only`, one line per call.
fn through_lathe_tool() -> Vec<Answer> {
    let (h, config) = harness(Script::new());
    let mut child = h
        .lathe()
        .args(common_args(&h, &config))
        .args(["tool", "--batch", "--approval", "read-only"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = String::new();
    for (name, arguments, _) in calls() {
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
    let answers: Vec<Answer> = json_lines(&output)
        .into_iter()
        .map(|line| Answer {
            text: line["text"].as_str().unwrap().to_owned(),
            is_error: line["is_error"].as_bool().unwrap(),
            status: line["status"].as_str().map(str::to_owned),
            metadata: line["metadata"]
                .as_object()
                .filter(|m| !m.is_empty())
                .cloned(),
        })
        .collect();
    assert!(!h.ws.join("new.txt").exists());
    answers
}

/// `lathe mcp --approval read-only` over stdio, with the SDK's client. An unknown tool is a
/// protocol error there (as MCP asks); its message is what the others' models read.
async fn through_lathe_mcp() -> Vec<Answer> {
    let (h, config) = harness(Script::new());
    let mut command = tokio::process::Command::from(h.lathe());
    command
        .args(common_args(&h, &config))
        .args(["mcp", "--approval", "read-only"])
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
    for (name, arguments, _) in calls() {
        let Value::Object(arguments) = arguments else {
            unreachable!()
        };
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let answer = match client.call_tool(params).await {
            Ok(result) => Answer {
                text: result
                    .content
                    .iter()
                    .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                    .collect::<Vec<_>>()
                    .join(""),
                is_error: result.is_error == Some(true),
                status: None,
                metadata: result
                    .structured_content
                    .and_then(|v| v.as_object().cloned()),
            },
            Err(rmcp::ServiceError::McpError(error)) => Answer {
                text: error.message.to_string(),
                is_error: true,
                status: None,
                metadata: None,
            },
            Err(other) => panic!("{name}: {other}"),
        };
        answers.push(answer);
    }
    client.cancel().await.expect("the client closes");
    let _ = child.wait().await;
    assert!(!h.ws.join("new.txt").exists());
    answers
}

/// `lathe exec --approval read-only`: a scripted model makes every call in one turn; the
/// results are the tool messages of its next request, the statuses those of the events.
fn through_the_agent() -> Vec<Answer> {
    let tool_calls: Vec<(Option<&str>, &str, Value)> = calls()
        .into_iter()
        .map(|(name, arguments, _)| (None, name, arguments))
        .collect();
    let script = Script::new()
        .chat(reply().tool_calls(&tool_calls).done())
        .chat(reply().text("Done.").done());
    let (h, config) = harness(script);
    let output = h.exec(
        "read hello.txt",
        &[
            "--config",
            &config.display().to_string(),
            "--approval",
            "read-only",
            "--json",
        ],
    );
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let statuses: Vec<String> = of_type(&events, "tool_call_finished")
        .iter()
        .map(|e| e["status"].as_str().unwrap().to_owned())
        .collect();
    let bodies = h.bodies();
    let results: Vec<String> = messages(&bodies[1])
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), calls().len(), "{:#?}", messages(&bodies[1]));
    assert_eq!(statuses.len(), calls().len(), "{events:#?}");
    assert!(!h.ws.join("new.txt").exists());
    results
        .into_iter()
        .zip(statuses)
        .map(|(text, status)| Answer {
            is_error: status != "ok",
            text,
            status: Some(status),
            metadata: None,
        })
        .collect()
}

#[test]
fn lathe_tool_and_lathe_mcp_give_the_same_answers() {
    let tool = through_lathe_tool();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mcp = runtime.block_on(through_lathe_mcp());
    check_the_answers(&tool);
    for (i, ((name, arguments, _), (tool, mcp))) in
        calls().iter().zip(tool.iter().zip(&mcp)).enumerate()
    {
        let what = format!("call {i}: {name} {arguments}");
        assert_eq!(tool.text, mcp.text, "{what}");
        assert_eq!(tool.is_error, mcp.is_error, "{what}");
        // The same typed metadata: `lathe tool --json` and `structuredContent` are both its
        // JSON form.
        assert_eq!(tool.metadata, mcp.metadata, "{what}");
    }
    assert_eq!(tool.len(), mcp.len());
}

#[test]
fn the_agent_gives_the_same_answers_as_lathe_tool() {
    let tool = through_lathe_tool();
    let agent = through_the_agent();
    // The model-facing text and the status of each call, all at once: a difference shows
    // every call it touches.
    let seen = |answers: &[Answer]| -> Vec<(String, Option<String>)> {
        answers
            .iter()
            .map(|a| (a.text.clone(), a.status.clone()))
            .collect()
    };
    assert_eq!(seen(&agent), seen(&tool));
}

/// What the answers say, so that "the same" is not "the same mistake".
fn check_the_answers(answers: &[Answer]) {
    let statuses: Vec<&str> = answers
        .iter()
        .map(|a| a.status.as_deref().unwrap())
        .collect();
    let expected: Vec<&str> = calls().iter().map(|(_, _, status)| *status).collect();
    assert_eq!(statuses, expected, "{answers:#?}");
    let [unknown, bad, read_only, ruled, read] = answers else {
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
