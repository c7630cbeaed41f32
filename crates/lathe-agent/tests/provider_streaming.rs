//! A native call while it is generated: the thinking ends at once and the call is announced
//! by name, then by the file it works on, before it is whole.

use lathe_agent::events::Event;
use lathe_agent::message::Message;
use lathe_agent::provider::{ChatRequest, ProviderKind};
use lathe_testkit::{Script, ScriptedServer, ollama, openai};
use serde_json::json;

use crate::common::{provider, tools, turn};

const MODEL: &str = "qwen3:8b";

/// The events that matter here, in order, as short strings.
fn story(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ThinkingDone { .. } => Some("thought".to_string()),
            Event::ToolCallStreaming { index, name, path } => Some(match path {
                Some(path) => format!("streaming {index} {name} {path}"),
                None => format!("streaming {index} {name}"),
            }),
            Event::ToolCallSeen { index, name, .. } => Some(format!("seen {index} {name}")),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn openai_argument_deltas_announce_the_file_before_the_call_is_whole() {
    let server = ScriptedServer::start(
        Script::new().chat(
            openai::turn(MODEL)
                .reasoning("I will write the notes.")
                .tool_call(
                    0,
                    "call_1",
                    "write_file",
                    &[
                        "{\"pa",
                        "th\": \"notes",
                        ".md\", \"content\": \"# No",
                        "tes\\n\"}",
                    ],
                )
                .finish("tool_calls")
                .done()
                .rechunk(7),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let request = ChatRequest::new(MODEL, vec![Message::user("notes")], tools());
    let (turn, events) = turn(p.as_ref(), &request).await;
    assert_eq!(
        story(&events),
        [
            "thought",
            "streaming 0 write_file",
            "streaming 0 write_file notes.md",
            "seen 0 write_file",
        ]
    );
    assert_eq!(
        turn.calls[0].arguments,
        json!({"path": "notes.md", "content": "# Notes\n"})
    );
    assert!(turn.thinking_duration.is_some());
}

#[tokio::test]
async fn an_ollama_call_is_announced_as_it_arrives_whole() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools", "thinking"])
            .chat(
                ollama::turn(MODEL)
                    .thinking("Notes first.")
                    .tool_call("write_file", json!({"path": "notes.md", "content": "x"}))
                    .tool_call("read_file", json!({"path": "a.rs"}))
                    .done(),
            ),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let request = ChatRequest::new(MODEL, vec![Message::user("notes")], tools());
    let (_, events) = turn(p.as_ref(), &request).await;
    assert_eq!(
        story(&events),
        [
            "thought",
            "streaming 0 write_file notes.md",
            "streaming 1 read_file a.rs",
            "seen 0 write_file",
            "seen 1 read_file",
        ]
    );
}
