//! Issue 20: the window the server really has, the prompt budget of small windows (the compact
//! profile) and the server's sign that it cut a prompt, over real HTTP to the scripted model
//! server speaking each server family's endpoints.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::ContextWindow;
use lathe_agent::approval::ApprovalMode;
use lathe_agent::message::Message;
use lathe_agent::provider::{ChatOptions, ProviderKind, RetryPolicy};
use lathe_agent::subagent::SubAgentConfig;
use lathe_runtime::{Profile, Registry};
use lathe_testkit::{Script, ScriptedServer, ollama, openai};

use crate::common::{Harness, MODEL, Run, provider, tool_session};

/// The fixed part of a request (system prompt and tool definitions) may take at most this
/// many tokens in a window of 8k and less...
const FIXED_MAX_8K: u64 = 1_500;
/// ...and at most this many in a window of 16k and less.
const FIXED_MAX_16K: u64 = 3_000;

async fn served(kind: ProviderKind, script: Script) -> (Option<u32>, ScriptedServer) {
    let server = ScriptedServer::start(script).unwrap();
    let provider = provider(kind, &server.url());
    (provider.served_window(MODEL).await, server)
}

fn asked(server: &ScriptedServer, path: &str) -> usize {
    server.requests().iter().filter(|r| r.path == path).count()
}

#[tokio::test]
async fn ollama_serves_the_models_context_length() {
    let script = Script::new().always(
        "/api/show",
        ollama::show(&["completion", "tools"], Some(4_096)),
    );
    assert_eq!(served(ProviderKind::Ollama, script).await.0, Some(4_096));
    // A server that does not say (no context length in model_info): no window.
    let script = Script::new().always("/api/show", ollama::show(&["completion", "tools"], None));
    assert_eq!(served(ProviderKind::Ollama, script).await.0, None);
}

#[tokio::test]
async fn llama_cpp_serves_its_slots_n_ctx_from_props() {
    let script = Script::new()
        .always("/props", openai::llama_cpp_props(4_096))
        .openai_models(&[MODEL]);
    let (window, server) = served(ProviderKind::OpenAi, script).await;
    assert_eq!(window, Some(4_096));
    assert_eq!(asked(&server, "/props"), 1);
}

#[tokio::test]
async fn vllm_serves_the_models_max_model_len() {
    let script = Script::new().always(
        "/v1/models",
        openai::vllm_models(&[("other", 131_072), (MODEL, 8_192)]),
    );
    let (window, server) = served(ProviderKind::OpenAi, script).await;
    assert_eq!(window, Some(8_192));
    // llama.cpp's endpoint was asked once first, and not again: a probe is never retried.
    assert_eq!(asked(&server, "/props"), 1);
}

#[tokio::test]
async fn lm_studio_serves_the_loaded_context_length() {
    let script = Script::new().openai_models(&[MODEL]).always(
        "/api/v0/models",
        openai::lmstudio_models(&[("other", 8_192, None), (MODEL, 32_768, Some(4_096))]),
    );
    assert_eq!(served(ProviderKind::OpenAi, script).await.0, Some(4_096));
    let script = Script::new().openai_models(&[MODEL]).always(
        "/api/v0/models",
        openai::lmstudio_models(&[(MODEL, 32_768, None)]),
    );
    assert_eq!(served(ProviderKind::OpenAi, script).await.0, Some(32_768));
}

#[tokio::test]
async fn a_server_that_says_nothing_has_no_window() {
    let (window, server) =
        served(ProviderKind::OpenAi, Script::new().openai_models(&[MODEL])).await;
    assert_eq!(window, None);
    for path in ["/props", "/v1/models", "/api/v0/models"] {
        assert_eq!(asked(&server, path), 1, "{path}");
    }
}

/// An agent as `lathe` builds it (sub-agents on, `ask` mode, retrying as the provider tests
/// do), with a window of `window` tokens, given `task` against `script`.
async fn run_agent(window: u32, script: Script, task: &str) -> Run {
    let mut run = Harness::new()
        .script(script)
        .retry(RetryPolicy::immediate(3))
        .api_key("sk-test")
        .approval(ApprovalMode::Ask)
        .config(|c| {
            c.options = ChatOptions {
                num_ctx: window,
                ..ChatOptions::default()
            }
        })
        .sub_agents(SubAgentConfig::default())
        .detached()
        .start();
    run.agent.run(task, &CancellationToken::new()).await;
    run
}

fn first_request(run: &Run) -> Value {
    run.server.chat_bodies().remove(0)
}

/// The fixed part of a request body, in tokens, by the estimator that keeps requests inside
/// the window: its system prompt and its tool definitions.
fn fixed_part(body: &Value, window: u32) -> u64 {
    let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
    let tools = body["tools"].as_array().cloned().unwrap_or_default();
    ContextWindow::new(u64::from(window)).estimate(&[Message::system(system)], &tools)
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_fixed_part_of_a_request_fits_the_budget_of_each_window() {
    let mut sizes = Vec::new();
    for window in [2_048, 4_096, 8_192, 16_384, 32_768] {
        let script = Script::new().chat(ollama::turn(MODEL).text("Hi.").done());
        let run = run_agent(window, script, "hi").await;
        let body = first_request(&run);
        let fixed = fixed_part(&body, window);
        sizes.push((window, fixed));
        let tools = offered(&body);
        if window <= 16_384 {
            // Compact: the optional tools wait behind more_tools, the core ones are there.
            for core in [
                "read_file",
                "write_file",
                "edit_file",
                "shell",
                "grep",
                "more_tools",
            ] {
                assert!(tools.contains(&core.to_owned()), "{window}: {tools:?}");
            }
            for optional in ["apply_patch", "ast_edit", "spawn_agent", "command_output"] {
                assert!(!tools.contains(&optional.to_owned()), "{window}: {tools:?}");
            }
        } else {
            assert!(tools.contains(&"apply_patch".to_owned()), "{tools:?}");
            assert!(!tools.contains(&"more_tools".to_owned()), "{tools:?}");
        }
    }
    eprintln!("fixed part by window: {sizes:?}");
    for (window, fixed) in &sizes {
        match window {
            ..=8_192 => assert!(*fixed <= FIXED_MAX_8K, "{sizes:?}"),
            ..=16_384 => assert!(*fixed <= FIXED_MAX_16K, "{sizes:?}"),
            // The full profile is what the budget saves: well over it.
            _ => assert!(*fixed > FIXED_MAX_16K, "{sizes:?}"),
        }
    }
}

#[tokio::test]
async fn a_tool_on_demand_is_still_called_by_name_in_a_small_window() {
    let script = Script::new()
        .chat(
            ollama::turn(MODEL)
                .tool_call("list_commands", json!({}))
                .done(),
        )
        .chat(ollama::turn(MODEL).text("None ran.").done());
    let run = run_agent(8_192, script, "which commands ran?").await;
    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let result = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!result.contains("unknown tool"), "{result}");
    assert!(!offered(&bodies[0]).contains(&"list_commands".to_owned()));
}

#[tokio::test]
async fn a_server_that_counts_far_fewer_prompt_tokens_than_sent_is_said_to_have_cut_it() {
    // About 3,000 tokens of task; the server says it read 600.
    let task = format!(
        "summarise this:\n{}",
        "the quick brown fox jumps. ".repeat(400)
    );
    let script = Script::new().chat(
        ollama::turn(MODEL)
            .text("A fox.")
            .done_with("stop", Some((600, 3))),
    );
    let run = run_agent(8_192, script, &task).await;
    let notices = run.notices();
    let cut: Vec<&String> = notices
        .iter()
        .filter(|n| n.contains("read only 600 of the about"))
        .collect();
    assert_eq!(cut.len(), 1, "{notices:?}");
    assert!(
        cut[0].contains("8,192 tokens Lathe assumed") && cut[0].contains("[model] context_window"),
        "{}",
        cut[0]
    );
    // Treated as an overflow: the window is what the server kept and wrote.
    assert!(
        cut[0].ends_with("; until then, requests are fitted to 603 tokens"),
        "{}",
        cut[0]
    );

    // The same request counted whole: nothing to say.
    let script = Script::new().chat(
        ollama::turn(MODEL)
            .text("A fox.")
            .done_with("stop", Some((3_400, 3))),
    );
    let run = run_agent(8_192, script, &task).await;
    assert!(
        run.notices().iter().all(|n| !n.contains("read only")),
        "{:?}",
        run.notices()
    );
}

/// A value of the type `schema` asks for, to call with.
fn sample(schema: &Value) -> Value {
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let kind = match &schema["type"] {
        Value::String(kind) => kind.clone(),
        Value::Array(kinds) => kinds[0].as_str().unwrap_or("string").to_owned(),
        _ => "string".to_owned(),
    };
    match kind.as_str() {
        "integer" | "number" => json!(1),
        "boolean" => json!(true),
        "array" => json!([sample(&schema["items"])]),
        "object" => {
            let mut object = serde_json::Map::new();
            if let Some(properties) = schema["properties"].as_object() {
                for (name, property) in properties {
                    object.insert(name.clone(), sample(property));
                }
            }
            Value::Object(object)
        }
        _ => json!("x"),
    }
}

/// Every parameter of every tool's full schema is taken by the compact profile's registry
/// exactly as by the full one: left out of the compact definitions, never refused.
#[test]
fn every_parameter_stays_accepted_in_the_compact_profile() {
    let dir = tempfile::tempdir().unwrap();
    let session = tool_session(dir.path(), &dir.path().join(".state"), Default::default());
    let full = lathe_tools::builtin();
    let mut compact = lathe_tools::builtin();
    compact.use_profile(Profile::Compact);
    let mut unlisted = 0;
    for definition in full.definitions() {
        let name = &definition.name;
        let advertised = compact.definition(name).unwrap();
        let properties = definition.parameters["properties"].as_object().unwrap();
        let required: Vec<&str> = definition.parameters["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut base = serde_json::Map::new();
        for key in &required {
            base.insert((*key).to_owned(), sample(&properties[*key]));
        }
        for (parameter, schema) in properties {
            if advertised.parameters["properties"].get(parameter).is_none() {
                unlisted += 1;
            }
            let mut arguments = base.clone();
            arguments.insert(parameter.clone(), sample(schema));
            let arguments = Value::Object(arguments);
            let outcome =
                |registry: &Registry| match registry.prepare(name, arguments.clone(), &session) {
                    Ok(call) => Ok(call.arguments),
                    Err(output) => Err(output.text),
                };
            let (in_full, in_compact) = (outcome(&full), outcome(&compact));
            assert_eq!(in_full, in_compact, "{name}.{parameter}");
            if let Err(text) = &in_compact {
                assert!(
                    !text.contains("unknown parameter"),
                    "{name}.{parameter}: {text}"
                );
            }
        }
        // What is listed keeps its type, and every required parameter is listed.
        for key in &required {
            assert!(
                advertised.parameters["properties"].get(*key).is_some(),
                "{name} must list its required `{key}`"
            );
        }
    }
    assert!(unlisted > 0, "the compact profile lists fewer parameters");
}
