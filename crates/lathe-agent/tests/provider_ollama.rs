//! The Ollama provider end to end against the scripted server: what streams in, what is sent,
//! and what goes back in the next request.

use lathe_agent::events::Event;
use lathe_agent::message::Message;
use lathe_agent::provider::{ChatRequest, ProviderError, ProviderKind, Think};
use lathe_testkit::{Reply, Response, Script, ScriptedServer, ollama};
use serde_json::json;

use crate::common::{self, dead_url, notices, provider, shown, tools, try_turn, turn};

const MODEL: &str = "qwen3:8b";

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest::new(MODEL, messages, tools())
}

#[tokio::test]
async fn streamed_text_split_inside_utf8_characters() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools"])
            .chat(
                ollama::turn(MODEL)
                    .text("Hé")
                    .text("llo, wörld ")
                    .text("日本語 ✓")
                    .done()
                    .rechunk(1),
            ),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let mut req = request(vec![Message::user("hi")]);
    req.options.keep_alive = Some("30m".into());
    req.options.temperature = Some(0.2);
    let (turn, events) = turn(p.as_ref(), &req).await;
    assert_eq!(turn.content, "Héllo, wörld 日本語 ✓");
    assert_eq!(shown(&events), turn.content);
    assert_eq!(turn.finish_reason.as_deref(), Some("stop"));
    assert_eq!(turn.usage.and_then(|u| u.completion_tokens), Some(12));
    assert!(turn.complete);

    let body = &server.chat_bodies()[0];
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["stream"], true);
    assert_eq!(body["options"]["num_ctx"], 32768);
    assert_eq!(body["keep_alive"], "30m");
    assert!((body["options"]["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
    assert_eq!(body["tools"].as_array().unwrap().len(), 4);
    assert_eq!(body["tools"][0]["function"]["name"], "read_file");
    assert!(
        body.get("think").is_none(),
        "no think for a model that cannot"
    );
    assert_eq!(body["messages"], json!([{"role": "user", "content": "hi"}]));
    let show = server
        .requests()
        .into_iter()
        .find(|r| r.path == "/api/show")
        .unwrap();
    assert_eq!(show.json().unwrap(), json!({"model": MODEL}));
}

#[tokio::test]
async fn thinking_streams_and_goes_back_with_the_calls() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools", "thinking"])
            .chat(
                ollama::turn(MODEL)
                    .thinking("The user wants ")
                    .thinking("the file.")
                    .text("Reading it.")
                    .tool_call("read_file", json!({"path": "src/main.rs"}))
                    .tool_call_with_id("call_7", "grep", json!({"pattern": "fn main"}))
                    .done_with("stop", None)
                    .rechunk(9),
            )
            .chat(ollama::turn(MODEL).text("It prints hello.").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let mut history = vec![
        Message::system("You are Lathe."),
        Message::user("what does main do?"),
    ];
    let (first, events) = turn(p.as_ref(), &request(history.clone())).await;
    assert_eq!(first.thinking, "The user wants the file.");
    assert!(first.thinking_duration.is_some());
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::ThinkingDone { .. }))
    );
    assert_eq!(first.content, "Reading it.");
    assert_eq!(first.calls.len(), 2);
    assert_eq!(first.calls[0].name, "read_file");
    assert_eq!(first.calls[1].id.as_deref(), Some("call_7"));
    assert!(first.usage.is_none(), "counts are optional");
    assert_eq!(server.chat_bodies()[0]["think"], true);

    history.push(first.to_message());
    let calls: Vec<_> = first.calls.iter().map(|c| c.to_tool_call()).collect();
    history.push(Message::tool_result(
        &calls[0],
        "1: fn main() { println!(\"hello\"); }",
    ));
    history.push(Message::tool_result(&calls[1], "src/main.rs:1: fn main"));
    let (second, _) = turn(p.as_ref(), &request(history)).await;
    assert_eq!(second.content, "It prints hello.");

    let sent = &server.chat_bodies()[1]["messages"];
    assert_eq!(
        sent[2],
        json!({"role": "assistant", "content": "Reading it.", "thinking": "The user wants the file.", "tool_calls": [
            {"function": {"name": "read_file", "arguments": {"path": "src/main.rs"}}},
            {"id": "call_7", "function": {"name": "grep", "arguments": {"pattern": "fn main"}}}
        ]})
    );
    assert_eq!(
        sent[3],
        json!({"role": "tool", "tool_name": "read_file", "content": "1: fn main() { println!(\"hello\"); }"})
    );
    assert_eq!(
        sent[4],
        json!({"role": "tool", "tool_name": "grep", "content": "src/main.rs:1: fn main", "tool_call_id": "call_7"})
    );
}

#[tokio::test]
async fn several_calls_in_one_chunk_and_think_levels() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools", "thinking"])
            .chat(
                ollama::turn(MODEL)
                    .tool_calls(&[
                        (None, "read_file", json!({"path": "a"})),
                        (None, "read_file", json!({"path": "b"})),
                        (None, "ReadFile", json!({"path": "c"})),
                    ])
                    .done(),
            ),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let mut req = request(vec![Message::user("read a, b, c")]);
    req.options.think = Think::Level("high".into());
    let (turn, events) = turn(p.as_ref(), &req).await;
    let paths: Vec<_> = turn
        .calls
        .iter()
        .map(|c| c.arguments["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["a", "b", "c"]);
    assert_eq!(
        turn.calls[2].name, "read_file",
        "native names are normalised too"
    );
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, Event::ToolCallSeen { .. }))
            .count(),
        3
    );
    assert_eq!(server.chat_bodies()[0]["think"], "high");
}

#[tokio::test]
async fn model_without_tools_gets_the_text_protocol_and_is_told_once() {
    let call =
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}\n</tool_call>";
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&["gemma:2b"], &["completion"])
            .chat(
                ollama::turn("gemma:2b")
                    .text("Let me look.\n")
                    .text(call)
                    .done()
                    .rechunk(4),
            )
            .chat(ollama::turn("gemma:2b").text("Done.").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let mut history = vec![
        Message::system("You are Lathe."),
        Message::user("read a.rs"),
    ];
    let req = ChatRequest::new("gemma:2b", history.clone(), tools());
    let (first, events) = turn(p.as_ref(), &req).await;
    assert_eq!(first.content, "Let me look.\n");
    assert_eq!(
        shown(&events),
        "Let me look.\n",
        "the call never reaches the screen"
    );
    assert_eq!(first.calls.len(), 1);
    assert_eq!(first.calls[0].arguments, json!({"path": "a.rs"}));
    assert_eq!(notices(&events).len(), 1);
    assert!(notices(&events)[0].contains("text tool protocol"));
    assert!(!p.capabilities("gemma:2b").await.unwrap().tools);

    let body = &server.chat_bodies()[0];
    assert!(body.get("tools").is_none());
    // Issue 14: the answer stops after the call, before an invented result.
    assert_eq!(
        body["options"]["stop"],
        json!(["</tool_call>", "<tool_result"])
    );
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are Lathe.\n\n# Tools"));
    assert!(system.contains("## write_file"));

    history.push(first.to_message());
    history.push(Message::tool_result(
        &first.calls[0].to_tool_call(),
        "1: fn a() {}",
    ));
    let (second, events) = turn(p.as_ref(), &ChatRequest::new("gemma:2b", history, tools())).await;
    assert_eq!(second.content, "Done.");
    assert!(notices(&events).is_empty(), "said once");
    let sent = &server.chat_bodies()[1]["messages"];
    assert_eq!(sent[2]["role"], "assistant");
    assert!(
        sent[2]["content"]
            .as_str()
            .unwrap()
            .contains("<tool_call>\n{\"name\":\"read_file\"")
    );
    assert!(sent[2].get("tool_calls").is_none());
    assert_eq!(
        sent[3],
        json!({"role": "user", "content": "<tool_result name=\"read_file\">\n1: fn a() {}\n</tool_result>"})
    );
}

#[tokio::test]
async fn server_refusing_tools_switches_to_the_text_protocol() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&["tiny"], &["completion", "tools"])
            .chat(ollama::tools_unsupported("tiny"))
            .chat(
                ollama::turn("tiny")
                    .text("<tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}")
                    .done(),
            )
            .chat(ollama::turn("tiny").text("ok").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let (first, events) = turn(
        p.as_ref(),
        &ChatRequest::new("tiny", vec![Message::user("go")], tools()),
    )
    .await;
    assert_eq!(first.calls[0].name, "grep");
    let told = notices(&events);
    assert_eq!(told.len(), 1);
    assert!(
        told[0].contains("refused native tool calls for tiny"),
        "{told:?}"
    );
    let bodies = server.chat_bodies();
    assert!(bodies[0].get("tools").is_some());
    assert!(bodies[1].get("tools").is_none(), "sent again without tools");
    let (_, events) = turn(
        p.as_ref(),
        &ChatRequest::new("tiny", vec![Message::user("go")], tools()),
    )
    .await;
    assert!(notices(&events).is_empty());
    assert_eq!(
        server.chat_requests().len(),
        3,
        "no second refusal: straight to the text protocol"
    );
}

#[tokio::test]
async fn mid_stream_error_line_is_an_error_with_the_partial_turn() {
    let server = ScriptedServer::start(
        Script::new().ollama_models(&[MODEL], &["completion"]).chat(
            ollama::turn(MODEL)
                .text("Part")
                .error("model runner has unexpectedly stopped")
                .text("never")
                .done(),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    let common::Failure::Stream(e) = failure else {
        panic!("expected a stream error")
    };
    assert!(
        matches!(&e.error, ProviderError::MidStream(m) if m == "model runner has unexpectedly stopped")
    );
    assert_eq!(e.partial.content, "Part");
    assert!(!e.partial.complete);
}

#[tokio::test]
async fn dropped_connection_after_output_is_not_sent_again() {
    let full = ollama::turn(MODEL)
        .text("Hello there")
        .text(" and more")
        .done();
    let cut = full.body_bytes().len() / 2;
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion"])
            .chat(full.truncate_and_drop(cut))
            .chat(ollama::turn(MODEL).text("second try").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(
        matches!(failure.error(), ProviderError::ConnectionLost(_)),
        "{failure:?}"
    );
    assert_eq!(
        server.chat_requests().len(),
        1,
        "output had started: never re-sent"
    );
}

#[tokio::test]
async fn failures_before_the_first_byte_are_retried() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion"])
            .chat(Reply::Reset)
            .chat(ollama::error(503, "server busy"))
            .chat(Response::new(502).text("bad gateway"))
            .chat(ollama::turn(MODEL).text("finally").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let (turn, _) = turn(p.as_ref(), &request(vec![Message::user("x")])).await;
    assert_eq!(turn.content, "finally");
    assert_eq!(server.chat_requests().len(), 4);
}

#[tokio::test]
async fn retries_run_out() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion"])
            .always("/api/chat", ollama::error(503, "loading")),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(
        matches!(failure.error(), ProviderError::Http { status: 503, body, .. } if body == "loading")
    );
    assert_eq!(server.chat_requests().len(), 4, "one try and three retries");
}

#[tokio::test]
async fn errors_that_are_not_transient_are_not_retried() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion"])
            .always(
                "/api/chat",
                ollama::error(500, "model requires more system memory"),
            ),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert_eq!(
        failure.error().to_string(),
        "model server answered http 500: model requires more system memory"
    );
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn nothing_listening() {
    let url = dead_url();
    let p = provider(ProviderKind::Ollama, &url);
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert_eq!(
        failure.error().to_string(),
        format!(
            "no model server at {url}: start Ollama (ollama serve), or pass --base-url with the address of a running server"
        )
    );
}

#[tokio::test]
async fn unknown_model_lists_what_the_server_has() {
    let server = ScriptedServer::start(
        Script::new()
            .always("/api/show", ollama::model_not_found("llama9"))
            .always("/api/tags", ollama::tags(&["qwen3:8b", "llama3.2:latest"])),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(
        p.as_ref(),
        &ChatRequest::new("llama9", vec![Message::user("x")], tools()),
    )
    .await
    .unwrap_err();
    match failure.error() {
        ProviderError::UnknownModel {
            model, available, ..
        } => {
            assert_eq!(model, "llama9");
            assert_eq!(available, &["qwen3:8b", "llama3.2:latest"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        failure
            .error()
            .to_string()
            .contains("it has: qwen3:8b, llama3.2:latest")
    );
    assert!(server.chat_requests().is_empty());
}

#[tokio::test]
async fn unknown_model_found_at_chat_time() {
    let server = ScriptedServer::start(
        Script::new()
            .always("/api/show", ollama::show(&["completion", "tools"], None))
            .always("/api/tags", ollama::tags(&["qwen3:8b"]))
            .chat(ollama::model_not_found("gone")),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(
        p.as_ref(),
        &ChatRequest::new("gone", vec![Message::user("x")], vec![]),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(failure.error(), ProviderError::UnknownModel { available, .. } if available == &["qwen3:8b"])
    );
}

#[tokio::test]
async fn capabilities_are_cached_per_model() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools", "thinking"])
            .chat(ollama::turn(MODEL).text("a").done())
            .chat(ollama::turn(MODEL).text("b").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let caps = p.capabilities(MODEL).await.unwrap();
    assert!(caps.tools && caps.thinking);
    assert_eq!(caps.context_length, Some(32768));
    turn(p.as_ref(), &request(vec![Message::user("x")])).await;
    turn(p.as_ref(), &request(vec![Message::user("y")])).await;
    let shows = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/show")
        .count();
    assert_eq!(shows, 1);
    assert_eq!(p.list_models().await.unwrap(), [MODEL]);
}

#[tokio::test]
async fn stream_that_ends_without_done_is_an_error() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion"])
            .chat(ollama::turn(MODEL).text("half").unfinished()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(
        matches!(failure.error(), ProviderError::ConnectionLost(m) if m.contains("ended before"))
    );
}

#[tokio::test]
async fn cancelling_stops_the_turn_and_closes_the_stream() {
    use lathe_agent::stream::collect_turn;
    use std::time::Duration;
    use tokio_util::sync::CancellationToken;

    let server = ScriptedServer::start(
        Script::new().ollama_models(&[MODEL], &["completion"]).chat(
            ollama::turn(MODEL)
                .text("Working on it")
                .unfinished()
                // A model that goes quiet: only the cancel can end this turn.
                .delay(Duration::from_secs(600))
                .text("{\"message\":{\"content\":\" never\"},\"done\":true}\n"),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let stream = p.chat(&request(vec![Message::user("x")])).await.unwrap();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let mut events = Vec::new();
    let turn = tokio::time::timeout(
        Duration::from_secs(30),
        collect_turn(stream, common::names(), &cancel, &mut |e| {
            if matches!(e, Event::TextDelta { .. }) {
                trigger.cancel();
            }
            events.push(e);
        }),
    )
    .await
    .expect("the cancel ends the turn")
    .unwrap();
    assert!(turn.cancelled);
    assert!(!turn.complete);
    assert_eq!(turn.content, "Working on it");
}

#[tokio::test]
async fn forced_text_protocol_skips_native_tools_without_a_notice() {
    use lathe_agent::provider::ToolProtocol;
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools"])
            .chat(ollama::turn(MODEL).text("ok").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let mut req = request(vec![Message::user("x")]);
    req.tool_protocol = ToolProtocol::Text;
    let (_, events) = turn(p.as_ref(), &req).await;
    assert!(notices(&events).is_empty());
    let body = &server.chat_bodies()[0];
    assert!(body.get("tools").is_none());
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("# Tools")
    );
    assert!(
        p.capabilities(MODEL).await.unwrap().tools,
        "forcing text for one request changes nothing else"
    );
}
