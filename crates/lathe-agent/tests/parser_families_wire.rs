//! Issue 19 end to end: each model family's written calls streamed by the scripted Ollama and
//! OpenAI-compatible servers in small pieces (cut inside the multi-byte special tokens too),
//! with tools sent natively and through the text protocol. Then the rules for what must not
//! run, through the same wire.

use lathe_agent::message::Message;
use lathe_agent::provider::{ChatRequest, ProviderKind, ToolProtocol};
use lathe_testkit::{Script, ScriptedServer, ollama, openai};
use serde_json::{Value, json};

use crate::common::{provider, shown, tools, turn};

/// What one reply came to: the text shown, the calls, the thinking.
#[derive(Debug, PartialEq)]
struct Seen {
    content: String,
    calls: Vec<(String, Value)>,
    thinking: String,
}

/// Streams `text` (and `thinking`, in the server's reasoning field, when given) from both
/// servers, cut every `size` bytes, in both tool protocols; all four must agree.
async fn through_wire(thinking: Option<&str>, text: &str, size: usize) -> Seen {
    let mut results: Vec<Seen> = Vec::new();
    for protocol in [ToolProtocol::Native, ToolProtocol::Text] {
        for kind in [ProviderKind::Ollama, ProviderKind::OpenAi] {
            let server = match kind {
                ProviderKind::Ollama => {
                    let mut t = ollama::turn("m");
                    if let Some(th) = thinking {
                        t = t.thinking(th);
                    }
                    ScriptedServer::start(
                        Script::new()
                            .ollama_models(&["m"], &["completion", "tools"])
                            .chat(t.text(text).done().rechunk(size)),
                    )
                }
                ProviderKind::OpenAi => {
                    let mut t = openai::turn("m");
                    if let Some(th) = thinking {
                        t = t.reasoning(th);
                    }
                    ScriptedServer::start(
                        Script::new().chat(t.text(text).finish("stop").done().rechunk(size)),
                    )
                }
            }
            .unwrap();
            let p = provider(kind, &server.url());
            let mut request = ChatRequest::new("m", vec![Message::user("go")], tools());
            request.tool_protocol = protocol;
            let (turn, events) = turn(p.as_ref(), &request).await;
            assert_eq!(shown(&events), turn.content, "events and turn agree");
            results.push(Seen {
                content: turn.content,
                calls: turn
                    .calls
                    .iter()
                    .map(|c| (c.name.clone(), c.arguments.clone()))
                    .collect(),
                thinking: turn.thinking,
            });
        }
    }
    for r in &results[1..] {
        assert_eq!(
            r, &results[0],
            "the servers or protocols differ for {text:?}"
        );
    }
    results.remove(0)
}

fn read(path: &str) -> (String, Value) {
    ("read_file".into(), json!({"path": path}))
}

fn grep(pattern: &str) -> (String, Value) {
    ("grep".into(), json!({"pattern": pattern}))
}

/// Each family: one call, and two calls, as its models write them.
fn families() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        (
            "gpt-oss harmony",
            "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"a\"}<|call|>",
            "<|start|>assistant to=functions.read_file<|channel|>commentary json<|message|>{\"path\": \"a\"}<|call|><|start|>assistant<|channel|>commentary to=functions.grep <|constrain|>json<|message|>{\"pattern\": \"x\"}<|call|>",
        ),
        (
            "DeepSeek V3/R1",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>grep\n```json\n{\"pattern\": \"x\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        ),
        (
            "DeepSeek V3.1",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
            "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>grep<｜tool▁sep｜>{\"pattern\": \"x\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        ),
        (
            "DeepSeek V3.2 DSML",
            "<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"read_file\">\n<｜DSML｜parameter name=\"path\" string=\"true\">a</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
            "<|DSML|function_calls>\n<|DSML|invoke name=\"read_file\">\n<|DSML|parameter name=\"path\" string=\"true\">a</|DSML|parameter>\n</|DSML|invoke>\n<|DSML|invoke name=\"grep\">\n<|DSML|parameter name=\"pattern\" string=\"true\">x</|DSML|parameter>\n</|DSML|invoke>\n</|DSML|function_calls>",
        ),
        (
            "GLM-4.5/4.6",
            "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>",
            "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>\n<tool_call>grep<arg_key>pattern</arg_key><arg_value>x</arg_value></tool_call>",
        ),
        (
            "Kimi K2",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_calls_section_end|>",
            "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_call_begin|>functions.grep:1<|tool_call_argument_begin|>{\"pattern\": \"x\"}<|tool_call_end|><|tool_calls_section_end|>",
        ),
        (
            "MiniMax-M2",
            "<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a</parameter>\n</invoke>\n</minimax:tool_call>",
            "<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a</parameter>\n</invoke>\n<invoke name=\"grep\">\n<parameter name=\"pattern\">x</parameter>\n</invoke>\n</minimax:tool_call>",
        ),
        (
            "Mistral v11",
            "[TOOL_CALLS]read_file{\"path\": \"a\"}",
            "[TOOL_CALLS]read_file{\"path\": \"a\"}[TOOL_CALLS]grep{\"pattern\": \"x\"}",
        ),
        (
            "Llama 4",
            "<|python_start|>[read_file(path=\"a\")]<|python_end|>",
            "<|python_start|>[read_file(path=\"a\"), grep(pattern=\"x\")]<|python_end|>",
        ),
        (
            "FunctionGemma",
            "<start_function_call>call:read_file{path:<escape>a<escape>}<end_function_call>",
            "<start_function_call>call:read_file{path:<escape>a<escape>}<end_function_call><start_function_call>call:grep{pattern:<escape>x<escape>}<end_function_call>",
        ),
        (
            "Gemma 4",
            "<|tool_call>call:read_file{path:<|\"|>a<|\"|>}<tool_call|>",
            "<|tool_call>call:read_file{path:<|\"|>a<|\"|>}<tool_call|><|tool_call>call:grep{pattern:<|\"|>x<|\"|>}<tool_call|>",
        ),
        (
            "Functionary v3.2",
            ">>>read_file\n{\"path\": \"a\"}",
            ">>>read_file\n{\"path\": \"a\"}>>>grep\n{\"pattern\": \"x\"}",
        ),
        (
            "Seed-OSS",
            "<seed:tool_call>\n<function=read_file>\n<parameter=path>a</parameter>\n</function>\n</seed:tool_call>",
            "<seed:tool_call>\n<function=read_file>\n<parameter=path>a</parameter>\n</function>\n<function=grep>\n<parameter=pattern>x</parameter>\n</function>\n</seed:tool_call>",
        ),
        (
            "Step3",
            "<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"read_file\"><steptml:parameter name=\"path\">a</steptml:parameter></steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>",
            "<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"read_file\"><steptml:parameter name=\"path\">a</steptml:parameter></steptml:invoke><｜tool_call_end｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"grep\"><steptml:parameter name=\"pattern\">x</steptml:parameter></steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>",
        ),
        (
            "Apertus",
            "<|tools_prefix|>[{\"read_file\": {\"path\": \"a\"}}]<|tools_suffix|>",
            "<|tools_prefix|>[{\"read_file\": {\"path\": \"a\"}}, {\"grep\": {\"pattern\": \"x\"}}]<|tools_suffix|>",
        ),
        (
            "OLMo 3",
            "<function_calls>read_file(path=\"a\")</function_calls>",
            "<function_calls>read_file(path=\"a\")\ngrep(pattern=\"x\")</function_calls>",
        ),
    ]
}

#[tokio::test]
async fn every_family_through_both_servers_and_protocols() {
    for (family, one, two) in families() {
        for size in [1, 4] {
            let seen = through_wire(None, one, size).await;
            assert_eq!(
                seen.calls,
                vec![read("a")],
                "{family}, one call, cut every {size}"
            );
            assert_eq!(seen.content, "", "{family}: its markup is not shown");
            let seen = through_wire(None, two, size).await;
            assert_eq!(
                seen.calls,
                vec![read("a"), grep("x")],
                "{family}, two calls, cut every {size}"
            );
            assert_eq!(seen.content.trim(), "", "{family}: its markup is not shown");
        }
    }
}

#[tokio::test]
async fn prose_before_a_family_call_is_shown() {
    let seen = through_wire(
        None,
        "Let me read it.\n\n<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a</parameter>\n</invoke>\n</minimax:tool_call>",
        3,
    )
    .await;
    assert_eq!(seen.calls, vec![read("a")]);
    assert_eq!(seen.content, "Let me read it.\n\n");
}

#[tokio::test]
async fn harmony_analysis_is_reasoning_and_final_is_the_answer() {
    let seen = through_wire(
        None,
        "<|channel|>analysis<|message|>The user wants a.<|end|><|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"a\"}<|call|>",
        2,
    )
    .await;
    assert_eq!(seen.calls, vec![read("a")]);
    assert_eq!(seen.thinking, "The user wants a.");
    assert_eq!(seen.content, "");
    let seen = through_wire(
        None,
        "<|channel|>analysis<|message|>Just greet.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>",
        2,
    )
    .await;
    assert!(seen.calls.is_empty());
    assert_eq!(seen.thinking, "Just greet.");
    assert_eq!(seen.content, "Hello!");
    // A preamble, then more analysis in the middle of the reply, then the call.
    let seen = through_wire(
        None,
        "<|start|>assistant<|channel|>commentary<|message|>Let me look.<|end|><|start|>assistant<|channel|>analysis<|message|>Need a.<|end|><|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\":\"a\"}<|call|>",
        3,
    )
    .await;
    assert_eq!(seen.calls, vec![read("a")]);
    assert_eq!(seen.thinking, "Need a.");
    assert_eq!(seen.content, "Let me look.");
}

/// A call quoted in the reasoning does not run when the answer has text of its own; it runs
/// when the answer is empty (as Ollama does for some models).
#[tokio::test]
async fn calls_in_reasoning_run_only_when_the_answer_is_empty() {
    let call = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>";
    // Reasoning in the server's own field.
    let seen = through_wire(
        Some(&format!("I could {call} but no.")),
        "The file is not needed.",
        3,
    )
    .await;
    assert!(seen.calls.is_empty(), "{:?}", seen.calls);
    assert_eq!(seen.content, "The file is not needed.");
    let seen = through_wire(Some(&format!("Reading: {call}")), "", 3).await;
    assert_eq!(seen.calls, vec![read("a")]);
    // Reasoning left in the content: <think>, <seed:think>, harmony's analysis channel.
    for (open, close) in [
        ("<think>", "</think>"),
        ("<seed:think>", "</seed:think>"),
        ("<|channel|>analysis<|message|>", "<|end|>"),
    ] {
        let text = format!("{open}Maybe {call} first.{close}No need, the answer is 4.");
        let seen = through_wire(None, &text, 2).await;
        assert!(seen.calls.is_empty(), "{open}: {:?}", seen.calls);
        assert_eq!(seen.content, "No need, the answer is 4.", "{open}");
        assert_eq!(seen.thinking, "Maybe  first.", "{open}");
        let text = format!("{open}Maybe {call} first.{close}");
        let seen = through_wire(None, &text, 2).await;
        assert_eq!(
            seen.calls,
            vec![read("a")],
            "{open}: an empty answer runs it"
        );
    }
}

#[tokio::test]
async fn quoted_tool_results_never_run() {
    for text in [
        "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
        "<tool_response>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n</tool_response>",
        "<|tool_result|>[read_file(path=\"a\")]<|/tool_result|>",
    ] {
        let seen = through_wire(None, text, 3).await;
        assert!(seen.calls.is_empty(), "{text:?} ran {:?}", seen.calls);
    }
}

#[tokio::test]
async fn a_list_with_an_unknown_tool_keeps_the_known_calls() {
    let seen = through_wire(
        None,
        "<|python_start|>[read_file(path=\"a\"), deploy(target=\"prod\")]<|python_end|>",
        3,
    )
    .await;
    assert_eq!(
        seen.calls,
        vec![read("a"), ("deploy".into(), json!({"target": "prod"}))]
    );
}

/// Through the executor: the known call of the list runs, and the model is told the unknown
/// name and the closest real tool (the registry's answer).
#[tokio::test]
async fn the_model_is_told_which_name_in_a_list_was_unknown() {
    use crate::agent_executor::start_with;
    use crate::common::reply;
    use lathe_agent::events::RunStatus;
    use tokio_util::sync::CancellationToken;
    let script = Script::new()
        .chat(
            reply()
                .text(
                    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>cat<｜tool▁sep｜>{\"path\": \"notes.txt\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>catt_all<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                )
                .done()
                .rechunk(3),
        )
        .chat(reply().text("The notes say hello.").done());
    let mut run = start_with(script, |_| {}, |_| {});
    let outcome = run.agent.run("notes?", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let bodies = run.server.chat_bodies();
    let messages = bodies[1]["messages"].as_array().unwrap();
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 2, "{messages:?}");
    assert!(results[0].contains("hello"), "{results:?}");
    assert!(
        results[1].starts_with("unknown tool `catt_all`. Did you mean `cat`"),
        "{results:?}"
    );
}
