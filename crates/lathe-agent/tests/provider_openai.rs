//! The OpenAI-compatible provider end to end against the scripted server.

use lathe_agent::message::{Message, ToolCall};
use lathe_agent::provider::{
    ChatRequest, OpenAiProvider, Provider, ProviderConfig, ProviderError, ProviderKind, RetryPolicy,
};
use lathe_testkit::{Reply, Script, ScriptedServer, openai};
use serde_json::{Value, json};

use crate::common::{self, dead_url, notices, provider, shown, tools, try_turn, turn};

const MODEL: &str = "qwen2.5-coder";

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest::new(MODEL, messages, tools())
}

#[tokio::test]
async fn streamed_text_with_crlf_and_awkward_chunks() {
    for crlf in [false, true] {
        let mut t = openai::turn(MODEL);
        if crlf {
            t = t.crlf();
        }
        let reply = t
            .comment("keep-alive")
            .text("Hé")
            .text("llo ")
            .text("wörld")
            .finish("stop")
            .usage(9, 3)
            .done();
        let server = ScriptedServer::start(Script::new().chat(reply.rechunk(3))).unwrap();
        let p = provider(ProviderKind::OpenAi, &server.url());
        let (turn, events) = turn(p.as_ref(), &request(vec![Message::user("hi")])).await;
        assert_eq!(turn.content, "Héllo wörld");
        assert_eq!(shown(&events), "Héllo wörld");
        assert_eq!(turn.finish_reason.as_deref(), Some("stop"));
        assert_eq!(turn.usage.and_then(|u| u.prompt_tokens), Some(9));
        let req = &server.chat_requests()[0];
        assert_eq!(
            req.path, "/v1/chat/completions",
            "a base URL without a path gets /v1"
        );
        assert_eq!(req.header("authorization"), Some("Bearer sk-test"));
        let body = req.json().unwrap();
        assert_eq!(body["stream"], true);
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(body["tools"].as_array().unwrap().len(), 4);
    }
}

#[tokio::test]
async fn reasoning_under_every_name_is_thinking() {
    let server = ScriptedServer::start(
        Script::new().chat(
            openai::turn(MODEL)
                .reasoning("First ")
                .reasoning_under("reasoning", "second ")
                .reasoning_under("thinking", "third.")
                .text("Answer.")
                .finish("stop")
                .done(),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let (turn, _) = turn(p.as_ref(), &request(vec![Message::user("hi")])).await;
    assert_eq!(turn.thinking, "First second third.");
    assert_eq!(turn.content, "Answer.");
    assert!(turn.thinking_duration.is_some());
}

#[tokio::test]
async fn tool_call_fragments_are_joined_and_sent_back_as_strings() {
    let server = ScriptedServer::start(
        Script::new()
            .chat(
                openai::turn(MODEL)
                    .text("Let me check.")
                    .tool_call(
                        0,
                        "call_a",
                        "read_file",
                        &["{\"pa", "th\": \"src/", "lib.rs\"}"],
                    )
                    .tool_call(1, "call_b", "grep", &["{\"pattern\":", " \"é\"}"])
                    .finish("tool_calls")
                    .usage(20, 10)
                    .done()
                    .rechunk(7),
            )
            .chat(openai::turn(MODEL).text("Found it.").finish("stop").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let mut history = vec![Message::user("where is it?")];
    let (first, _) = turn(p.as_ref(), &request(history.clone())).await;
    assert_eq!(first.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(first.calls.len(), 2);
    assert_eq!(first.calls[0].id.as_deref(), Some("call_a"));
    assert_eq!(first.calls[0].arguments, json!({"path": "src/lib.rs"}));
    assert_eq!(first.calls[1].arguments, json!({"pattern": "é"}));

    history.push(first.to_message());
    for (call, out) in first.calls.iter().zip(["A", "B"]) {
        history.push(Message::tool_result(&call.to_tool_call(), out));
    }
    turn(p.as_ref(), &request(history)).await;
    let sent = &server.chat_bodies()[1]["messages"];
    assert_eq!(
        sent[1],
        json!({"role": "assistant", "content": "Let me check.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"src/lib.rs\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\":\"é\"}"}}
        ]})
    );
    assert_eq!(
        sent[2],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "A"})
    );
    assert_eq!(
        sent[3],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "B"})
    );
}

#[tokio::test]
async fn calls_all_at_index_zero_with_new_ids() {
    let server = ScriptedServer::start(
        Script::new().chat(
            openai::turn(MODEL)
                .tool_call(0, "x1", "read_file", &["{\"path\": \"a\"}"])
                .tool_call(0, "x2", "read_file", &["{\"path\": \"b\"}"])
                .finish("tool_calls")
                .done(),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let (turn, _) = turn(p.as_ref(), &request(vec![Message::user("x")])).await;
    let paths: Vec<_> = turn
        .calls
        .iter()
        .map(|c| c.arguments["path"].clone())
        .collect();
    assert_eq!(paths, [json!("a"), json!("b")]);
}

#[tokio::test]
async fn calls_without_ids_get_stable_ids_in_the_next_request() {
    let server = ScriptedServer::start(
        Script::new().chat(openai::turn(MODEL).text("ok").finish("stop").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let a = ToolCall::new("read_file", json!({"path": "a"}));
    let history = vec![
        Message::user("x"),
        Message::Assistant(lathe_agent::message::AssistantMessage {
            content: String::new(),
            thinking: Some("hidden".into()),
            tool_calls: vec![a.clone()],
        }),
        Message::tool_result(&a, "A"),
    ];
    turn(p.as_ref(), &request(history)).await;
    let sent = &server.chat_bodies()[0]["messages"];
    assert_eq!(sent[1]["tool_calls"][0]["id"], "call_1_0");
    assert_eq!(sent[1]["content"], Value::Null);
    assert!(
        sent[1].get("reasoning_content").is_none(),
        "reasoning is not echoed by default"
    );
    assert_eq!(sent[2]["tool_call_id"], "call_1_0");
}

#[tokio::test]
async fn truncated_native_arguments_are_repaired_and_marked() {
    let server = ScriptedServer::start(
        Script::new().chat(
            openai::turn(MODEL)
                .tool_call(
                    0,
                    "w",
                    "write_file",
                    &["{\"path\": \"a.rs\", \"content\": \"fn ma"],
                )
                .finish("length")
                .done(),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let (turn, _) = turn(p.as_ref(), &request(vec![Message::user("x")])).await;
    assert!(turn.hit_length_limit());
    assert_eq!(
        turn.calls[0].arguments,
        json!({"path": "a.rs", "content": "fn ma"})
    );
    assert!(turn.calls[0].is_truncated());
    assert!(
        lathe_agent::parser::refuse_truncated_write(
            &turn.calls[0],
            common::changes(&turn.calls[0])
        )
        .is_some()
    );
}

#[tokio::test]
async fn vllm_refusing_tools_switches_to_the_text_protocol() {
    let server = ScriptedServer::start(
        Script::new().chat(openai::vllm_tools_unsupported()).chat(
            openai::turn(MODEL)
                .text("```json\n{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}\n```")
                .finish("stop")
                .done(),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let (turn, events) = turn(p.as_ref(), &request(vec![Message::user("list")])).await;
    assert_eq!(turn.calls[0].name, "shell");
    assert_eq!(turn.content, "");
    assert_eq!(notices(&events).len(), 1);
    assert!(!p.capabilities(MODEL).await.unwrap().tools);
    let bodies = server.chat_bodies();
    assert!(bodies[0].get("tools").is_some());
    assert!(bodies[1].get("tools").is_none());
    // Issue 14: native calls need no stop string; the text protocol stops after the call.
    assert!(bodies[0].get("stop").is_none());
    assert_eq!(bodies[1]["stop"], json!(["</tool_call>", "<tool_result"]));
    assert!(
        bodies[1]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("<tool_call>")
    );
}

#[tokio::test]
async fn unknown_model_lists_the_servers_models() {
    let server = ScriptedServer::start(
        Script::new()
            .chat(openai::model_not_found("gpt-9"))
            .openai_models(&["qwen2.5-coder", "llama"]),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let failure = try_turn(
        p.as_ref(),
        &ChatRequest::new("gpt-9", vec![Message::user("x")], vec![]),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(failure.error(), ProviderError::UnknownModel { available, .. } if available == &["qwen2.5-coder", "llama"])
    );
    assert_eq!(p.list_models().await.unwrap(), ["qwen2.5-coder", "llama"]);
}

#[tokio::test]
async fn mid_stream_error_event() {
    let server = ScriptedServer::start(
        Script::new().chat(
            openai::turn(MODEL)
                .text("Par")
                .error("context length exceeded")
                .text("x")
                .done(),
        ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    let common::Failure::Stream(e) = failure else {
        panic!("stream error expected")
    };
    assert!(matches!(&e.error, ProviderError::MidStream(m) if m == "context length exceeded"));
    assert_eq!(e.partial.content, "Par");
}

#[tokio::test]
async fn retry_before_first_byte_but_not_after() {
    let server = ScriptedServer::start(
        Script::new()
            .chat(Reply::Reset)
            .chat(openai::error(502, "upstream"))
            .chat(openai::turn(MODEL).text("ok").finish("stop").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    assert_eq!(
        turn(p.as_ref(), &request(vec![Message::user("x")]))
            .await
            .0
            .content,
        "ok"
    );
    assert_eq!(server.chat_requests().len(), 3);

    let full = openai::turn(MODEL)
        .text("a long answer that breaks")
        .finish("stop")
        .done();
    let len = full.body_bytes().len();
    let server = ScriptedServer::start(
        Script::new()
            .chat(full.truncate_and_drop(len / 2))
            .chat(openai::turn(MODEL).text("again").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(matches!(failure.error(), ProviderError::ConnectionLost(_)));
    assert_eq!(server.chat_requests().len(), 1);
}

#[tokio::test]
async fn end_without_done_marker() {
    let server = ScriptedServer::start(
        Script::new()
            .chat(
                openai::turn(MODEL)
                    .text("complete")
                    .finish("stop")
                    .unfinished(),
            )
            .chat(openai::turn(MODEL).text("incomplete").unfinished()),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    assert_eq!(
        turn(p.as_ref(), &request(vec![Message::user("x")]))
            .await
            .0
            .content,
        "complete"
    );
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert!(matches!(failure.error(), ProviderError::ConnectionLost(_)));
}

#[tokio::test]
async fn nothing_listening_and_paths_kept() {
    let url = dead_url();
    let p = provider(ProviderKind::OpenAi, &format!("{url}/v1"));
    let failure = try_turn(p.as_ref(), &request(vec![Message::user("x")]))
        .await
        .unwrap_err();
    assert_eq!(
        failure.error().to_string(),
        format!(
            "no model server at {url}/v1: start an OpenAI-compatible server there (llama-server -m MODEL.gguf --port 8080, vllm serve MODEL), or pass --base-url with the address of a running one"
        )
    );

    // A base URL with a path is used as given (llama.cpp serves /chat/completions too).
    let server = ScriptedServer::start(
        Script::new().chat(openai::turn(MODEL).text("x").finish("stop").done()),
    )
    .unwrap();
    let p = OpenAiProvider::new(
        ProviderConfig::new(format!("{}/custom/", server.url())).retry(RetryPolicy::none()),
    )
    .unwrap();
    let stream = p.chat(&request(vec![Message::user("x")])).await;
    assert!(stream.is_ok());
    assert_eq!(server.chat_requests()[0].path, "/custom/chat/completions");
}
