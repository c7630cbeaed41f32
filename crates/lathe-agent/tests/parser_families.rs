//! Every family of written tool call, with literal examples of what models send, and the
//! text that must stay text. Each example is also fed in pieces at every split point: the
//! streaming scanner must agree with the one-shot read.

use lathe_agent::parser::{
    CallSource, Family, ParsedText, Repair, Resolution, Scanner, Scope, ToolNames, collect,
    parse_text, refuse_truncated_write,
};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::common::changes;

const TOOLS: &[&str] = &[
    "read_file",
    "read_document",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
    "shell",
    "command_output",
    "list_commands",
    "kill_command",
    "ast_edit",
    "resolve",
    "spawn_agent",
    "update_memory",
];

fn names() -> ToolNames {
    ToolNames::new(TOOLS.iter().copied())
}

fn streamed(text: &str, cuts: &[usize], scope: Scope) -> ParsedText {
    let mut scanner = Scanner::new(Arc::new(names()), scope);
    let mut segments = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        segments.extend(scanner.push(&text[start..cut]));
        start = cut;
    }
    segments.extend(scanner.push(&text[start..]));
    segments.extend(scanner.finish());
    collect(segments)
}

/// One-shot, every two-piece split, and one character at a time must all agree.
fn parse(text: &str) -> ParsedText {
    parse_in(text, Scope::Text)
}

fn parse_in(text: &str, scope: Scope) -> ParsedText {
    let whole = streamed(text, &[], scope);
    if scope == Scope::Text {
        assert_eq!(
            parse_text(text, &names()),
            whole,
            "parse_text differs for {text:?}"
        );
    }
    let boundaries: Vec<usize> = (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    for &cut in &boundaries {
        assert_eq!(
            streamed(text, &[cut], scope),
            whole,
            "split at {cut} differs for {text:?}"
        );
    }
    assert_eq!(
        streamed(text, &boundaries, scope),
        whole,
        "char-by-char differs for {text:?}"
    );
    whole
}

/// The calls as (name, arguments).
fn calls(parsed: &ParsedText) -> Vec<(String, Value)> {
    parsed
        .calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

fn one(name: &str, arguments: Value) -> Vec<(String, Value)> {
    vec![(name.to_string(), arguments)]
}

fn family(parsed: &ParsedText) -> Family {
    match parsed.calls[0].source {
        CallSource::Text(f) | CallSource::Thinking(f) => f,
        CallSource::Native => Family::Native,
    }
}

// ---- <tool_call> and other wrapper tags ----

#[test]
fn tool_call_tag_closed() {
    let p = parse(
        "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\"}}\n</tool_call>",
    );
    assert_eq!(calls(&p), one("read_file", json!({"path": "src/main.rs"})));
    assert_eq!(p.text, "");
    assert_eq!(family(&p), Family::ToolCallTag);
    assert!(p.calls[0].repairs.is_empty());
}

#[test]
fn tool_call_tag_without_closing_tag() {
    let p = parse(
        "I'll read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}",
    );
    assert_eq!(calls(&p), one("read_file", json!({"path": "a.rs"})));
    assert_eq!(p.text, "I'll read it.\n");
    assert!(p.calls[0].repairs.contains(&Repair::MissingCloseTag));
    assert!(!p.calls[0].is_truncated());
}

#[test]
fn several_tool_call_tags() {
    let p = parse(
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n\
         <tool_call>{\"name\": \"grep\", \"arguments\": {\"pattern\": \"TODO\"}}</tool_call>",
    );
    assert_eq!(
        calls(&p),
        vec![
            ("read_file".into(), json!({"path": "a"})),
            ("grep".into(), json!({"pattern": "TODO"}))
        ]
    );
    assert_eq!(p.text, "\n");
    let p = parse(
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n\
         <tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}",
    );
    assert_eq!(
        p.calls.len(),
        2,
        "unclosed tags end at the next opening tag"
    );
    let p = parse(
        "<tool_call>[{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.rs\"}}, {\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}]</tool_call>",
    );
    assert_eq!(p.calls.len(), 2);
}

#[test]
fn closing_tag_inside_a_string_is_content() {
    let p = parse(
        "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"t.md\", \"content\": \"end with </tool_call> please\"}}</tool_call>",
    );
    assert_eq!(
        calls(&p),
        one(
            "write_file",
            json!({"path": "t.md", "content": "end with </tool_call> please"})
        )
    );
}

#[test]
fn unbalanced_json_before_the_closing_tag_is_closed() {
    let p = parse(
        "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}</tool_call> done",
    );
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    assert!(p.calls[0].repairs.contains(&Repair::Unbalanced));
    assert!(!p.calls[0].is_truncated());
    assert_eq!(p.text, " done");
}

#[test]
fn tool_call_tag_in_thinking() {
    let p = parse_in(
        "I should look first. <tool_call>{\"name\": \"list_files\", \"arguments\": {}}</tool_call> then decide",
        Scope::Thinking,
    );
    assert_eq!(calls(&p), one("list_files", json!({})));
    assert_eq!(p.text, "I should look first.  then decide");
    assert!(matches!(
        p.calls[0].source,
        CallSource::Thinking(Family::ToolCallTag)
    ));
    // Bare JSON in thinking is a draft, not a call.
    let p = parse_in(
        "maybe {\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}",
        Scope::Thinking,
    );
    assert!(p.calls.is_empty());
}

#[test]
fn other_wrapper_tags() {
    let p = parse("<|tool_call|>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})), "granite");
    let p = parse(
        "<|tool_call|>[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]<|/tool_call|>",
    );
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})), "phi");
    let p = parse(
        "<|tool_call_start|>[read_file(path=\"a\"), grep(pattern=\"b\")]<|tool_call_end|>Checking.",
    );
    assert_eq!(calls(&p).len(), 2, "lfm");
    assert_eq!(p.text, "Checking.");
    let p = parse(
        "<function_call>{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}</function_call>",
    );
    assert_eq!(calls(&p), one("shell", json!({"command": "ls"})));
}

// ---- fences, bare JSON, arrays ----

#[test]
fn json_in_fences() {
    for text in [
        "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```",
        "```\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```",
        "~~~json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n~~~",
        "```tool_call\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n```",
    ] {
        let p = parse(text);
        assert_eq!(calls(&p), one("read_file", json!({"path": "a"})), "{text}");
        assert_eq!(p.text, "", "{text}");
    }
    let p = parse(
        "Here:\n```json\n{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.rs\"}}\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"x\"}}\n```\nWaiting.",
    );
    assert_eq!(p.calls.len(), 2);
    assert_eq!(p.text, "Here:\n\nWaiting.");
    assert_eq!(family(&p), Family::Fenced);
}

#[test]
fn python_in_a_tool_code_fence() {
    let p = parse("```tool_code\nread_file(path=\"src/lib.rs\")\n```");
    assert_eq!(calls(&p), one("read_file", json!({"path": "src/lib.rs"})));
}

#[test]
fn bare_json_objects() {
    let p = parse("{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    assert_eq!(family(&p), Family::BareJson);
    let p = parse(
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}",
    );
    assert_eq!(p.calls.len(), 2, "back to back");
    let p = parse(
        "{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n\n{\"name\": \"grep\", \"arguments\": {\"pattern\": \"b\"}}",
    );
    assert_eq!(p.calls.len(), 2, "on separate lines");
    let p = parse("Action: {\"name\": \"grep\", \"arguments\": {\"pattern\": \"TODO\"}}");
    assert_eq!(calls(&p), one("grep", json!({"pattern": "TODO"})));
    assert_eq!(p.text, "Action: ");
}

#[test]
fn json_array_of_calls() {
    let p = parse(
        "[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}]",
    );
    assert_eq!(p.calls.len(), 2);
    assert_eq!(p.text, "");
    let p =
        parse("{\"tool_calls\": [{\"name\": \"shell\", \"arguments\": {\"command\": \"pwd\"}}]}");
    assert_eq!(calls(&p), one("shell", json!({"command": "pwd"})));
}

// ---- where the name and the arguments are ----

#[test]
fn name_and_argument_keys() {
    let cases = [
        r#"{"tool": "read_file", "args": {"path": "a"}}"#,
        r#"{"function": "read_file", "params": {"path": "a"}}"#,
        r#"{"name": "read_file", "parameters": {"path": "a"}}"#,
        r#"{"name": "read_file", "input": {"path": "a"}}"#,
        r#"{"type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}}"#,
        r#"{"function": {"name": "read_file", "arguments": {"path": "a"}}}"#,
        r#"{"name": "read_file", "path": "a"}"#,
        r#"{"name": "read_file", "arguments": "{\"path\": \"a\"}"}"#,
    ];
    for text in cases {
        let p = parse(text);
        assert_eq!(calls(&p), one("read_file", json!({"path": "a"})), "{text}");
    }
}

// ---- small-model JSON ----

#[test]
fn repaired_json() {
    let cases = [
        (
            r#"{"name": "read_file", "arguments": {"path": "a",},}"#,
            Repair::TrailingComma,
        ),
        (
            r#"{'name': 'read_file', 'arguments': {'path': 'a'}}"#,
            Repair::SingleQuotes,
        ),
        (
            "{“name”: “read_file”, “arguments”: {“path”: “a”}}",
            Repair::CurlyQuotes,
        ),
    ];
    for (text, repair) in cases {
        let p = parse(text);
        assert_eq!(calls(&p), one("read_file", json!({"path": "a"})), "{text}");
        assert!(
            p.calls[0].repairs.contains(&repair),
            "{text}: {:?}",
            p.calls[0].repairs
        );
    }
    let p = parse(
        r#"<tool_call>{"name": "list_files", "arguments": {"path": ".", "hidden": True, "depth": None}}</tool_call>"#,
    );
    assert_eq!(
        calls(&p),
        one(
            "list_files",
            json!({"path": ".", "hidden": true, "depth": null})
        )
    );
    assert!(p.calls[0].repairs.contains(&Repair::PythonLiterals));
}

#[test]
fn cut_off_write_is_closed_but_refused() {
    let p = parse(
        "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.rs\", \"content\": \"fn main() {\\n    println!(",
    );
    assert_eq!(
        calls(&p),
        one(
            "write_file",
            json!({"path": "a.rs", "content": "fn main() {\n    println!("})
        )
    );
    assert!(
        p.calls[0]
            .repairs
            .contains(&Repair::Truncated { in_string: true })
    );
    let message = refuse_truncated_write(&p.calls[0], changes(&p.calls[0]))
        .expect("a cut-off write is refused");
    assert!(
        message.contains("send the call again") || message.contains("Send the call again"),
        "{message}"
    );

    let p = parse(
        "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"b\", \"content\": \"half",
    );
    assert!(p.calls[0].is_truncated());
    assert!(refuse_truncated_write(&p.calls[0], changes(&p.calls[0])).is_some());

    let p = parse("{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a.rs"})));
    assert!(p.calls[0].is_truncated());
    assert!(
        refuse_truncated_write(&p.calls[0], changes(&p.calls[0])).is_none(),
        "reads are not writes"
    );
}

// ---- other families' native syntax written as text ----

#[test]
fn mistral_tool_calls_marker() {
    let p = parse("[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}]");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    assert_eq!(family(&p), Family::ToolCallsMarker);
    let p = parse("[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    let p = parse(
        "[TOOL_CALLS]read_file[ARGS]{\"path\": \"a\"}[TOOL_CALLS]grep[ARGS]{\"pattern\": \"x\"}",
    );
    assert_eq!(p.calls.len(), 2);
    let p = parse("[TOOL_CALLS]read_file[CALL_ID]a1B2c3D4e[ARGS]{\"path\": \"a\"}");
    assert_eq!(p.calls[0].id.as_deref(), Some("a1B2c3D4e"));
    let p = parse("[TOOL_CALLS] [{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}]</s>");
    assert_eq!(p.text, "</s>");
}

#[test]
fn function_equals_tags() {
    let p = parse("<function=read_file>{\"path\": \"a\"}</function>");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    assert_eq!(family(&p), Family::FunctionTag);
    let p = parse(
        "<function=write_file>\n<parameter=path>\nout.txt\n</parameter>\n<parameter=content>\nline1\nline2\n</parameter>\n</function>",
    );
    assert_eq!(
        calls(&p),
        one(
            "write_file",
            json!({"path": "out.txt", "content": "line1\nline2"})
        )
    );
    let p = parse(
        "<tool_call>\n<function=edit_file>\n<parameter=path>\nsrc/a.rs\n</parameter>\n<parameter=edits>\n[{\"old_string\": \"a\", \"new_string\": \"b\"}]\n</parameter>\n</function>\n</tool_call>",
    );
    assert_eq!(
        calls(&p),
        one(
            "edit_file",
            json!({"path": "src/a.rs", "edits": [{"old_string": "a", "new_string": "b"}]})
        )
    );
    let p = parse(
        "<function=write_file>\n<parameter=path>\nx\n</parameter>\n<parameter=content>\nunfinished",
    );
    assert!(p.calls[0].is_truncated());
    assert!(refuse_truncated_write(&p.calls[0], changes(&p.calls[0])).is_some());
}

#[test]
fn python_tag() {
    let p = parse(
        "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}<|eom_id|>",
    );
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    assert_eq!(family(&p), Family::PythonTag);
    assert_eq!(p.text, "");
    let p = parse("<|python_tag|>read_file.call(path=\"a\")");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a"})));
    let p = parse(
        "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"grep\", \"parameters\": {\"pattern\": \"b\"}}",
    );
    assert_eq!(p.calls.len(), 2);
}

#[test]
fn python_style_calls() {
    let p = parse("read_file(path=\"a.rs\")");
    assert_eq!(calls(&p), one("read_file", json!({"path": "a.rs"})));
    assert_eq!(family(&p), Family::PythonCall);
    let p =
        parse("Let me check.\n[read_file(path=\"a\"), grep(pattern='b', case_insensitive=True)]\n");
    assert_eq!(
        calls(&p),
        vec![
            ("read_file".into(), json!({"path": "a"})),
            (
                "grep".into(),
                json!({"pattern": "b", "case_insensitive": true})
            )
        ]
    );
    assert_eq!(p.text, "Let me check.\n\n");
    let p = parse("  shell(command=\"cargo test\", timeout=120)\n");
    assert_eq!(
        calls(&p),
        one("shell", json!({"command": "cargo test", "timeout": 120}))
    );
}

// ---- names ----

#[test]
fn names_are_normalised() {
    for written in [
        "ReadFile",
        "read-file",
        "READ_FILE",
        "Read.File",
        "functions.read_file",
    ] {
        let p = parse(&format!(
            "<tool_call>{{\"name\": \"{written}\", \"arguments\": {{\"path\": \"a\"}}}}</tool_call>"
        ));
        assert_eq!(p.calls[0].name, "read_file", "{written}");
        assert_eq!(
            p.calls[0].resolution,
            Resolution::Normalised {
                written: written.to_string()
            }
        );
    }
}

#[test]
fn unknown_names_get_an_answer_with_the_closest_tools() {
    let p =
        parse("<tool_call>{\"name\": \"raed_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>");
    assert!(p.calls[0].is_unknown());
    // The registry answers for unknown names, in every front end alike.
    let message = lathe_tools::builtin().unknown_tool(&p.calls[0].name).text;
    assert!(
        message.starts_with("unknown tool `raed_file`. Did you mean `read_file`"),
        "{message}"
    );
    // A misspelt call outside a wrapper is still a call; a foreign name is data.
    let p = parse("```json\n{\"name\": \"reed_file\", \"arguments\": {\"path\": \"a\"}}\n```");
    assert!(p.calls[0].is_unknown());
    let p = parse("{\"name\": \"deploy_production\", \"arguments\": {}}");
    assert!(p.calls.is_empty());
}

// ---- no false positives ----

#[test]
fn text_that_is_not_a_call_stays_text() {
    let cases = [
        "Use JSON like {\"key\": \"value\"} in your config.",
        "The response is {\"name\": \"Alice\", \"age\": 3}.",
        "```json\n{\"dependencies\": {\"serde\": \"1\"}}\n```",
        "```json\n{\"name\": \"my-app\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"jest\"}}\n```",
        "```rust\nfn main() { let x = read_file(\"a\"); }\n```",
        "```python\nimport os\nread_file(path=\"x\")\n```",
        "To read a file, the read_file tool takes a path.",
        "You could call read_file(path) yourself.",
        "read_file(path=\"a\") is how you would do it.",
        "read_file(path)",
        "See [read_file](docs/tools.md) and [grep][1].",
        "{\"name\": \"read_file\", \"description\": \"Read a file\", \"parameters\": {\"type\": \"object\", \"properties\": {\"path\": {\"type\": \"string\"}}}}",
        "Braces { and } and [ and ] and <b>tags</b> and {{template}}.",
        "if (a < b) { return [x]; }",
        "An empty object {} and array [] and [{}].",
        "{\"a\": 1}{\"b\": 2}",
        "<tool_calls are described in the docs>",
        "```\n```",
        "``` \nplain code\n```\n",
        "- item\n- read_file is a tool\n",
    ];
    for text in cases {
        let p = parse(text);
        assert!(p.calls.is_empty(), "{text:?} gave {:?}", p.calls);
        assert_eq!(p.text, text, "{text:?}");
    }
}

#[test]
fn code_fences_stream_through_and_only_whole_call_fences_are_taken() {
    let text = "Fix:\n```rust\nlet v = vec![{\"name\": \"read_file\"}];\n```\nAnd now:\n<tool_call>{\"name\": \"shell\", \"arguments\": {\"command\": \"cargo test\"}}</tool_call>";
    let p = parse(text);
    assert_eq!(calls(&p), one("shell", json!({"command": "cargo test"})));
    assert_eq!(
        p.text,
        "Fix:\n```rust\nlet v = vec![{\"name\": \"read_file\"}];\n```\nAnd now:\n"
    );
}

#[test]
fn explicit_wrappers_that_cannot_be_read_are_reported() {
    let p = parse("<tool_call>{\"arguments\": {\"path\": \"a\"}}</tool_call>");
    assert!(p.calls.is_empty());
    assert_eq!(p.malformed.len(), 1);
    assert_eq!(
        p.text, "<tool_call>{\"arguments\": {\"path\": \"a\"}}</tool_call>",
        "the text is still shown"
    );
    let p = parse("<tool_call>this is not json</tool_call>");
    assert_eq!(p.malformed.len(), 1);
}

#[test]
fn the_stream_holds_back_only_what_may_be_a_call() {
    // Plain prose comes out as it arrives, without waiting for the end.
    let mut scanner = Scanner::new(Arc::new(names()), Scope::Text);
    let out = collect(scanner.push("Hello there, I am looking"));
    assert_eq!(out.text, "Hello there, I am looking");
    let out = collect(scanner.push(" now.\n<tool_c"));
    assert_eq!(out.text, " now.\n");
    let out = collect(
        scanner.push("all>{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*\"}}</tool_call>"),
    );
    assert_eq!(
        out.calls.len(),
        1,
        "a closed call is out before the end of the text"
    );
    let rest = collect(scanner.finish());
    assert!(rest.text.is_empty());
}

#[test]
fn regression_literal_arguments_still_arriving() {
    // Found by fuzzing: `[ARGS]No` at a chunk boundary is `None` still arriving.
    let p = parse("[TOOL_CALLS]read_file[ARGS]None</tool_call>");
    assert_eq!(calls(&p), one("read_file", json!({})));
    let p = parse("<function=\n\n[CALL_ID]></function>");
    assert!(p.calls.is_empty(), "a function name never spans lines");
}
