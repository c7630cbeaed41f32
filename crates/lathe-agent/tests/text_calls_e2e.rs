//! Tool calls written in the text, through a real HTTP stream cut at awkward places: each
//! family, several examples, and text that must stay text.

use lathe_agent::message::Message;
use lathe_agent::parser::refuse_truncated_write;
use lathe_agent::provider::{ChatRequest, ProviderKind};
use lathe_testkit::{Script, ScriptedServer, ollama, openai};
use serde_json::{Value, json};

use crate::common::{changes, provider, shown, tools, turn};

/// Streams `text` from an Ollama server (cut every `size` bytes) and from an OpenAI-compatible
/// one (cut every `size + 1` bytes); both must give the same turn.
async fn through_both(text: &str, size: usize) -> (String, Vec<(String, Value)>, Vec<bool>) {
    let mut results = Vec::new();
    for kind in [ProviderKind::Ollama, ProviderKind::OpenAi] {
        let server = match kind {
            ProviderKind::Ollama => ScriptedServer::start(
                Script::new()
                    .ollama_models(&["m"], &["completion", "tools"])
                    .chat(ollama::turn("m").text(text).done().rechunk(size)),
            ),
            ProviderKind::OpenAi => ScriptedServer::start(
                Script::new().chat(
                    openai::turn("m")
                        .text(text)
                        .finish("stop")
                        .done()
                        .rechunk(size + 1),
                ),
            ),
        }
        .unwrap();
        let p = provider(kind, &server.url());
        let (turn, events) = turn(
            p.as_ref(),
            &ChatRequest::new("m", vec![Message::user("go")], tools()),
        )
        .await;
        assert_eq!(shown(&events), turn.content, "events and turn agree");
        let calls = turn
            .calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect::<Vec<_>>();
        let refused = turn
            .calls
            .iter()
            .map(|c| refuse_truncated_write(c, changes(c)).is_some())
            .collect::<Vec<_>>();
        results.push((turn.content, calls, refused));
    }
    assert_eq!(
        results[0], results[1],
        "ollama and openai differ for {text:?}"
    );
    results.remove(0)
}

fn read(path: &str) -> (String, Value) {
    ("read_file".to_string(), json!({"path": path}))
}

#[tokio::test]
async fn every_family_through_the_wire() {
    let cases: Vec<(&str, Vec<(String, Value)>)> = vec![
        (
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
            vec![read("a")],
        ),
        (
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
            vec![read("a")],
        ),
        (
            "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```",
            vec![read("a")],
        ),
        (
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}",
            vec![read("a"), read("b")],
        ),
        (
            "[{\"tool\": \"read_file\", \"args\": {\"path\": \"a\"}}, {\"function\": {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"b\\\"}\"}}]",
            vec![read("a"), read("b")],
        ),
        (
            "{\"name\": \"read_file\", \"path\": \"a\"}",
            vec![read("a")],
        ),
        (
            "{'name': 'read_file', 'arguments': {'path': 'a',},}",
            vec![read("a")],
        ),
        (
            "{“name”: “read_file”, “arguments”: {“path”: “a”}}",
            vec![read("a")],
        ),
        (
            "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]",
            vec![read("a")],
        ),
        (
            "[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}",
            vec![read("a")],
        ),
        (
            "<function=read_file>{\"path\": \"a\"}</function>",
            vec![read("a")],
        ),
        (
            "<function=read_file>\n<parameter=path>\na\n</parameter>\n</function>",
            vec![read("a")],
        ),
        (
            "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}<|eom_id|>",
            vec![read("a")],
        ),
        ("read_file(path=\"a\")", vec![read("a")]),
        (
            "[read_file(path='a'), read_file(path='b')]",
            vec![read("a"), read("b")],
        ),
        ("```tool_code\nread_file(path=\"a\")\n```", vec![read("a")]),
    ];
    for (text, want) in cases {
        for size in [1, 3, 17] {
            let (content, calls, _) = through_both(text, size).await;
            assert_eq!(calls, want, "{text:?} cut every {size}");
            assert_eq!(content.trim(), "", "{text:?}: the call is not shown");
        }
    }
}

#[tokio::test]
async fn prose_before_a_call_is_kept_and_json_samples_stay_text() {
    let text = "I'll check the config.\n\nA config looks like {\"name\": \"app\", \"port\": 8080}.\n\n\
                <tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"port\"}}</tool_call>\nThen I'll decide.";
    let (content, calls, _) = through_both(text, 5).await;
    assert_eq!(
        calls,
        vec![("grep".to_string(), json!({"pattern": "port"}))]
    );
    // What follows the call is said before its result was seen, and is dropped.
    assert_eq!(
        content,
        "I'll check the config.\n\nA config looks like {\"name\": \"app\", \"port\": 8080}.\n\n"
    );
}

/// Issue 14: a model without native tools wrote its own result and an answer built on it.
#[tokio::test]
async fn an_invented_result_after_a_call_is_dropped() {
    let call =
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>";
    let invented = "\n<tool_result name=\"read_file\">\nfn a() {}\n</tool_result>\n\
                    The file defines a. <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}</tool_call> \
                    Done, all tests pass.";
    for size in [1, 4, 13] {
        let (content, calls, _) =
            through_both(&format!("Reading a.\n{call}{invented}"), size).await;
        assert_eq!(calls, vec![read("a")], "cut every {size}");
        assert_eq!(content, "Reading a.\n", "cut every {size}");
    }
    // A second real call is kept; the text around it is not.
    let (content, calls, _) = through_both(&format!("{call}\nand then\n{call}\nwaiting"), 3).await;
    assert_eq!(calls, vec![read("a"), read("a")]);
    assert_eq!(content, "");
    // A server that strips the stop string leaves the call without its closing tag.
    let (content, calls, _) = through_both(
        "Reading.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n",
        2,
    )
    .await;
    assert_eq!(calls, vec![read("a")]);
    assert_eq!(content, "Reading.\n");
}

#[tokio::test]
async fn false_positives_through_the_wire() {
    for text in [
        "Here is an example payload:\n```json\n{\"user\": {\"name\": \"Ada\"}}\n```\nThat's all.",
        "Use `read_file(path)` to read. The format is {\"key\": \"value\"}.",
        "```python\nimport json\nprint(json.dumps({\"name\": \"read_file\"}))\n```",
        "```rust\nlet call = json!({\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}});\n```",
    ] {
        let (content, calls, _) = through_both(text, 4).await;
        assert!(calls.is_empty(), "{text:?} gave {calls:?}");
        assert_eq!(content, text);
    }
}

#[tokio::test]
async fn cut_off_write_through_the_wire_is_refused() {
    let text = "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"big.rs\", \"content\": \"fn main() {\\n    let x = ";
    let (_, calls, refused) = through_both(text, 6).await;
    assert_eq!(calls[0].0, "write_file");
    assert_eq!(calls[0].1["content"], "fn main() {\n    let x = ");
    assert_eq!(refused, [true]);
}

#[tokio::test]
async fn completion_marker_split_across_chunks() {
    let (content, _, _) = through_both("All done. [TASK_COMPLETE]", 2).await;
    assert_eq!(content, "All done. ");
}
