//! Checkpoints over MCP, with the Rust SDK's own client (rmcp) against the real `lathe mcp`:
//! each changing `tools/call` is a turn of its own, `checkpoint_list` shows it,
//! `checkpoint_restore` takes it back without overwriting what somebody changed since, and two
//! MCP sessions on one workspace keep separate histories.

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceExt, model::ClientConfig};
use serde_json::{Value, json};

use crate::mcp_support::Fixture;

async fn connect(fixture: &Fixture, name: &str) -> RunningService<RoleClient, ClientConfig> {
    let mut command = tokio::process::Command::from(fixture.command(&[]));
    command.env("LATHE_LOG", "error");
    let transport = TokioChildProcess::new(command).expect("lathe mcp starts");
    let mut info = ClientConfig::default();
    info.client_info.name = name.to_owned();
    info.serve(transport).await.expect("the client connects")
}

async fn call(
    client: &RunningService<RoleClient, ClientConfig>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object");
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(arguments))
        .await
        .unwrap_or_else(|err| panic!("{name} answers: {err}"))
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

fn structured(result: &CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or_default()
}

#[tokio::test]
async fn a_write_is_listed_restored_and_a_later_change_by_the_user_is_not_overwritten() {
    let fixture = Fixture::new();
    let ws = fixture.workspace();
    let client = connect(&fixture, "checkpoint-test").await;

    let listed = call(&client, "checkpoint_list", json!({})).await;
    assert_eq!(listed.is_error, Some(false), "{listed:?}");
    assert!(text(&listed).contains("no checkpoints yet"), "{listed:?}");

    // Turn 1: a file tool creates a file.
    let wrote = call(
        &client,
        "write_file",
        json!({"path": "notes.txt", "content": "one\ntwo\n"}),
    )
    .await;
    assert_eq!(wrote.is_error, Some(false), "{wrote:?}");
    // A call that changes nothing is no turn.
    let read = call(&client, "read_file", json!({"path": "hello.txt"})).await;
    assert_eq!(read.is_error, Some(false), "{read:?}");
    // Turn 2: a shell command removes a file, which no file tool reported.
    let removed = call(&client, "shell", json!({"command": "rm hello.txt"})).await;
    assert_eq!(removed.is_error, Some(false), "{removed:?}");
    assert!(!ws.join("hello.txt").exists());

    let listed = call(&client, "checkpoint_list", json!({})).await;
    let shown = text(&listed);
    assert!(shown.contains("2 steps"), "{shown}");
    assert!(shown.contains("turn 1"), "{shown}");
    assert!(shown.contains("notes.txt +2 -0"), "{shown}");
    assert!(shown.contains("hello.txt +0 -1"), "{shown}");
    assert!(shown.contains("checkpoint_restore"), "{shown}");
    let steps = structured(&listed)["steps"].clone();
    assert_eq!(steps.as_array().map(Vec::len), Some(2), "{steps}");
    assert_eq!(steps[0]["turn"], 1, "{steps}");
    assert_eq!(steps[1]["turn"], 2, "{steps}");
    assert_eq!(steps[1]["files"][0]["path"], "hello.txt", "{steps}");
    assert!(steps[0]["at"].is_string(), "{steps}");

    // The newest turn comes back: the removed file, byte for byte.
    let restored = call(&client, "checkpoint_restore", json!({})).await;
    assert_eq!(restored.is_error, Some(false), "{restored:?}");
    assert!(text(&restored).contains("undid turn 2"), "{restored:?}");
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "hello from the workspace\n"
    );
    // The restore did not become a turn of its own: it is an undo step.
    let listed = call(&client, "checkpoint_list", json!({})).await;
    let steps = structured(&listed)["steps"].clone();
    assert_eq!(steps.as_array().map(Vec::len), Some(3), "{steps}");
    assert_eq!(steps[2]["kind"], "undo", "{steps}");

    // The user changes the file turn 1 wrote: the undo of turn 1 leaves it alone.
    std::fs::write(ws.join("notes.txt"), "the user's own\n").unwrap();
    let refused = call(&client, "checkpoint_restore", json!({"turn": 1})).await;
    assert_eq!(refused.is_error, Some(true), "{refused:?}");
    let said = text(&refused);
    assert!(said.contains("notes.txt"), "{said}");
    assert!(said.contains("\"force\": true"), "{said}");
    assert_eq!(structured(&refused)["conflicts"], json!(["notes.txt"]));
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "the user's own\n"
    );

    // Forced, it goes.
    let forced = call(
        &client,
        "checkpoint_restore",
        json!({"turn": 1, "force": true}),
    )
    .await;
    assert_eq!(forced.is_error, Some(false), "{forced:?}");
    assert!(!ws.join("notes.txt").exists(), "{forced:?}");

    // The MCP session is a stored session: `lathe sessions show` lists its checkpoints.
    let id = structured(&listed)["session"]
        .as_str()
        .expect("the session id")
        .to_owned();
    let show = std::process::Command::new(env!("CARGO_BIN_EXE_lathe"))
        .args(["sessions", "show", &id])
        .env("LATHE_DATA_DIR", fixture.data_dir())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success(), "{shown}");
    assert!(shown.contains("running · mcp checkpoint-test"), "{shown}");
    assert!(
        shown.contains("step 2 · turn 2 · turn · 1 file +0 -1"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!("lathe undo --session {id}")),
        "{shown}"
    );
    client.cancel().await.expect("the client closes");
}

#[tokio::test]
async fn two_mcp_sessions_keep_separate_histories() {
    let fixture = Fixture::new();
    let ws = fixture.workspace();
    let first = connect(&fixture, "first").await;
    let second = connect(&fixture, "second").await;

    let a = call(
        &first,
        "write_file",
        json!({"path": "a.txt", "content": "a\n"}),
    )
    .await;
    assert_eq!(a.is_error, Some(false), "{a:?}");
    let b = call(
        &second,
        "write_file",
        json!({"path": "b.txt", "content": "b\n"}),
    )
    .await;
    assert_eq!(b.is_error, Some(false), "{b:?}");

    let listed = text(&call(&first, "checkpoint_list", json!({})).await);
    assert!(listed.contains("a.txt"), "{listed}");
    assert!(!listed.contains("b.txt"), "{listed}");

    let undone = call(&first, "checkpoint_restore", json!({})).await;
    assert_eq!(undone.is_error, Some(false), "{undone:?}");
    assert!(!ws.join("a.txt").exists());
    assert!(ws.join("b.txt").exists(), "the other session's file stays");

    // Nothing of the first session's is left to undo; the second's is its own.
    let again = call(&first, "checkpoint_restore", json!({})).await;
    assert_eq!(again.is_error, Some(true), "{again:?}");
    assert!(text(&again).contains("nothing to undo"), "{again:?}");
    let listed = text(&call(&second, "checkpoint_list", json!({})).await);
    assert!(
        listed.contains("b.txt") && !listed.contains("a.txt"),
        "{listed}"
    );
    first.cancel().await.expect("closes");
    second.cancel().await.expect("closes");
}
