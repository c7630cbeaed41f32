//! Issue 19: the tool-call formats of the model families people run locally, in the exact
//! shapes their servers' parsers read (llama.cpp `tests/test-chat*.cpp`, vLLM's and SGLang's
//! tool-parser tests, Ollama's `model/parsers`): one call, two calls, and (through `parse`)
//! every two-piece split and one character at a time. Then what must not run.

use lathe_agent::parser::{
    CallSource, Family, ParsedText, Repair, Scanner, Scope, ToolNames, collect, parse_text,
    refuse_truncated_write,
};
use serde_json::{Value, json};
use std::sync::Arc;

use crate::common::changes;

const TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "grep",
    "shell",
    "glob",
];

fn names() -> ToolNames {
    ToolNames::new(TOOLS.iter().copied())
}

fn streamed(text: &str, cuts: &[usize]) -> ParsedText {
    let mut scanner = Scanner::new(Arc::new(names()), Scope::Text);
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

/// One-shot, every two-piece split and one character at a time must agree.
pub(crate) fn parse(text: &str) -> ParsedText {
    let whole = streamed(text, &[]);
    assert_eq!(
        parse_text(text, &names()),
        whole,
        "parse_text differs for {text:?}"
    );
    let boundaries: Vec<usize> = (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    for &cut in &boundaries {
        assert_eq!(
            streamed(text, &[cut]),
            whole,
            "split at {cut} differs for {text:?}"
        );
    }
    assert_eq!(
        streamed(text, &boundaries),
        whole,
        "char by char differs for {text:?}"
    );
    whole
}

fn calls(p: &ParsedText) -> Vec<(String, Value)> {
    p.calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

fn read(path: &str) -> (String, Value) {
    ("read_file".into(), json!({"path": path}))
}

fn grep(pattern: &str) -> (String, Value) {
    ("grep".into(), json!({"pattern": pattern}))
}

fn family(p: &ParsedText) -> Family {
    match p.calls[0].source {
        CallSource::Text(f) | CallSource::Thinking(f) => f,
        CallSource::Native => Family::Native,
    }
}

/// `text` gives `want`, nothing of it is shown (but `shown`), in `fam`.
fn check(text: &str, want: Vec<(String, Value)>, shown: &str, fam: Family) {
    let p = parse(text);
    assert_eq!(calls(&p), want, "{text:?}");
    assert_eq!(p.text, shown, "{text:?}");
    assert!(p.malformed.is_empty(), "{text:?}: {:?}", p.malformed);
    assert_eq!(family(&p), fam, "{text:?}");
}

// ---- gpt-oss harmony ----

#[test]
fn harmony() {
    check(
        "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"a\"}<|call|>",
        vec![read("a")],
        "",
        Family::Harmony,
    );
    check(
        "<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\":\"a\"}",
        vec![read("a")],
        "",
        Family::Harmony,
    );
    // The recipient in the header, before the channel.
    check(
        "<|start|>assistant to=functions.grep<|channel|>commentary json<|message|>{\"pattern\": \"TODO\"}<|call|>",
        vec![grep("TODO")],
        "",
        Family::Harmony,
    );
    check(
        "<|channel|>analysis<|message|>Two calls.<|end|><|start|>assistant to=functions.read_file<|channel|>commentary<|message|>{\"path\": \"a\"}<|call|><|start|>assistant<|channel|>commentary to=functions.grep <|constrain|>json<|message|>{\"pattern\": \"x\"}<|call|>",
        vec![read("a"), grep("x")],
        "Two calls.",
        Family::Harmony,
    );
    // The final channel is the answer; its header and end are not shown.
    let p = parse("<|start|>assistant<|channel|>final<|message|>Hello, world!<|return|>");
    assert!(p.calls.is_empty());
    assert_eq!(p.text, "Hello, world!");
}

// ---- DeepSeek ----

#[test]
fn deepseek_v3_and_r1() {
    check(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        vec![read("a")],
        "",
        Family::DeepSeek,
    );
    check(
        "I'll look.\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{\"path\": \"a\"}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>grep\n```json\n{\"pattern\": \"x\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>",
        vec![read("a"), grep("x")],
        "I'll look.\n\n<｜end▁of▁sentence｜>",
        Family::DeepSeek,
    );
}

#[test]
fn deepseek_v3_1() {
    check(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        vec![read("a")],
        "",
        Family::DeepSeek,
    );
    check(
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>grep<｜tool▁sep｜>{\"pattern\": \"x\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        vec![read("a"), grep("x")],
        "",
        Family::DeepSeek,
    );
    // Without the outer token.
    check(
        "<｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜>",
        vec![read("a")],
        "",
        Family::DeepSeek,
    );
}

#[test]
fn deepseek_v3_2_dsml_in_both_spellings() {
    for bar in ["｜", "|"] {
        let text = format!(
            "<{bar}DSML{bar}function_calls>\n<{bar}DSML{bar}invoke name=\"read_file\">\n<{bar}DSML{bar}parameter name=\"path\" string=\"true\">a</{bar}DSML{bar}parameter>\n</{bar}DSML{bar}invoke>\n<{bar}DSML{bar}invoke name=\"grep\">\n<{bar}DSML{bar}parameter name=\"pattern\" string=\"true\">x</{bar}DSML{bar}parameter>\n</{bar}DSML{bar}invoke>\n</{bar}DSML{bar}function_calls>"
        );
        check(&text, vec![read("a"), grep("x")], "", Family::Invoke);
    }
    // `string="false"` is JSON.
    let p = parse(
        "<｜DSML｜function_calls><｜DSML｜invoke name=\"read_file\"><｜DSML｜parameter name=\"path\" string=\"true\">a</｜DSML｜parameter><｜DSML｜parameter name=\"offset\" string=\"false\">20</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
    );
    assert_eq!(
        calls(&p),
        vec![("read_file".into(), json!({"path": "a", "offset": 20}))]
    );
}

// ---- GLM ----

#[test]
fn glm_4_5_and_4_7() {
    check(
        "<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>",
        vec![read("a")],
        "",
        Family::Glm,
    );
    check(
        "Looking.\n<tool_call>read_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n</tool_call>\n<tool_call>grep\n<arg_key>pattern</arg_key>\n<arg_value>x</arg_value>\n</tool_call>",
        vec![read("a"), grep("x")],
        "Looking.\n\n",
        Family::Glm,
    );
    // 4.7 runs them together; values are kept as written.
    check(
        "<tool_call>shell<arg_key>command</arg_key><arg_value>  echo \"hi\"\n</arg_value></tool_call>",
        vec![("shell".into(), json!({"command": "  echo \"hi\"\n"}))],
        "",
        Family::Glm,
    );
    check(
        "<tool_call>glob</tool_call>",
        vec![("glob".into(), json!({}))],
        "",
        Family::Glm,
    );
}

// ---- Kimi K2 ----

#[test]
fn kimi_k2() {
    let p = parse(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|><|tool_calls_section_end|>",
    );
    assert_eq!(calls(&p), vec![read("a")]);
    assert_eq!(p.calls[0].id.as_deref(), Some("functions.read_file:0"));
    assert_eq!(family(&p), Family::Kimi);
    check(
        "<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"}<|tool_call_end|>\n<|tool_call_begin|>functions.grep:1<|tool_call_argument_begin|>{\"pattern\": \"x\"}<|tool_call_end|>\n<|tool_calls_section_end|>",
        vec![read("a"), grep("x")],
        "",
        Family::Kimi,
    );
}

// ---- MiniMax-M2, Step3 ----

#[test]
fn minimax_m2() {
    check(
        "<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a</parameter>\n</invoke>\n</minimax:tool_call>",
        vec![read("a")],
        "",
        Family::Invoke,
    );
    check(
        "<minimax:tool_call>\n<invoke name=\"read_file\">\n<parameter name=\"path\">a</parameter>\n</invoke>\n<invoke name=\"grep\">\n<parameter name=\"pattern\">x</parameter>\n</invoke>\n</minimax:tool_call>",
        vec![read("a"), grep("x")],
        "",
        Family::Invoke,
    );
}

#[test]
fn step3() {
    check(
        "<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"read_file\">\n<steptml:parameter name=\"path\">a</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name=\"grep\"><steptml:parameter name=\"pattern\">x</steptml:parameter></steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>",
        vec![read("a"), grep("x")],
        "",
        Family::Invoke,
    );
}

// ---- Mistral v11, Llama 4 ----

#[test]
fn mistral_v11() {
    check(
        "[TOOL_CALLS]read_file{\"path\": \"a\"}",
        vec![read("a")],
        "",
        Family::ToolCallsMarker,
    );
    check(
        "[TOOL_CALLS]read_file{\"path\": \"a\"}[TOOL_CALLS]grep{\"pattern\": \"x\"}",
        vec![read("a"), grep("x")],
        "",
        Family::ToolCallsMarker,
    );
}

#[test]
fn llama_4() {
    check(
        "<|python_start|>[read_file(path=\"a\")]<|python_end|>",
        vec![read("a")],
        "",
        Family::PythonTag,
    );
    check(
        "<|python_start|>[read_file(path=\"a\"), grep(pattern=\"x\")]<|python_end|>",
        vec![read("a"), grep("x")],
        "",
        Family::PythonTag,
    );
}

// ---- Gemma ----

#[test]
fn function_gemma_and_gemma_4() {
    check(
        "<start_function_call>call:read_file{path:<escape>a<escape>}<end_function_call>",
        vec![read("a")],
        "",
        Family::Gemma,
    );
    check(
        "<start_function_call>call:read_file{path:<escape>a<escape>}<end_function_call><start_function_call>call:grep{pattern:<escape>x<escape>}<end_function_call>",
        vec![read("a"), grep("x")],
        "",
        Family::Gemma,
    );
    check(
        "<|tool_call>call:read_file{path:<|\"|>a<|\"|>,offset:3}<tool_call|><|tool_call>call:grep{pattern:<|\"|>x, y<|\"|>}<tool_call|>",
        vec![
            ("read_file".into(), json!({"path": "a", "offset": 3})),
            grep("x, y"),
        ],
        "",
        Family::Gemma,
    );
    let p = parse(
        "<|tool_call>call:edit_file{path:<|\"|>a<|\"|>,edits:[{old_string:<|\"|>1<|\"|>,new_string:<|\"|>2<|\"|>}],dry:true}<tool_call|>",
    );
    assert_eq!(
        calls(&p),
        vec![(
            "edit_file".into(),
            json!({"path": "a", "edits": [{"old_string": "1", "new_string": "2"}], "dry": true})
        )]
    );
}

// ---- Functionary, Seed-OSS, Apertus, OLMo ----

#[test]
fn functionary_v3_2() {
    check(
        ">>>read_file\n{\"path\": \"a\"}",
        vec![read("a")],
        "",
        Family::Functionary,
    );
    check(
        ">>>read_file\n{\"path\": \"a\"}>>>grep\n{\"pattern\": \"x\"}",
        vec![read("a"), grep("x")],
        "",
        Family::Functionary,
    );
    // `>>>all` is the answer.
    let p = parse(">>>all\nLet me check.>>>read_file\n{\"path\": \"a\"}");
    assert_eq!(calls(&p), vec![read("a")]);
    assert_eq!(p.text, "Let me check.");
}

#[test]
fn seed_oss() {
    check(
        "<seed:tool_call>\n<function=read_file>\n<parameter=path>a</parameter>\n</function>\n</seed:tool_call>",
        vec![read("a")],
        "",
        Family::ToolCallTag,
    );
    check(
        "<seed:tool_call>\n<function=read_file>\n<parameter=path>a</parameter>\n</function>\n<function=grep>\n<parameter=pattern>x</parameter>\n</function>\n</seed:tool_call>",
        vec![read("a"), grep("x")],
        "",
        Family::ToolCallTag,
    );
}

#[test]
fn apertus() {
    check(
        "<|tools_prefix|>[{\"read_file\": {\"path\": \"a\"}}]<|tools_suffix|>",
        vec![read("a")],
        "",
        Family::ToolCallTag,
    );
    check(
        "<|tools_prefix|>[{\"read_file\": {\"path\": \"a\"}}, {\"grep\": {\"pattern\": \"x\"}}]<|tools_suffix|>",
        vec![read("a"), grep("x")],
        "",
        Family::ToolCallTag,
    );
}

#[test]
fn olmo_3() {
    check(
        "<function_calls>read_file(path=\"a\")</function_calls>",
        vec![read("a")],
        "",
        Family::ToolCallTag,
    );
    check(
        "<function_calls>read_file(path=\"a\")\ngrep(pattern=\"x\")</function_calls>",
        vec![read("a"), grep("x")],
        "",
        Family::ToolCallTag,
    );
}

// ---- Python calls inside a sentence or a list ----

#[test]
fn python_calls_in_a_sentence_or_a_list() {
    let p = parse("Sure, I will run [read_file(path=\"a\"), grep(pattern=\"x\")] for you.");
    assert_eq!(calls(&p), vec![read("a"), grep("x")]);
    assert_eq!(p.text, "Sure, I will run  for you.");
    let p = parse("Steps:\n- read_file(path=\"a\")\n2. grep(pattern=\"x\")\n");
    assert_eq!(calls(&p), vec![read("a"), grep("x")]);
    assert_eq!(p.text, "Steps:\n- \n2. \n");
    // Still text: a call named in prose, a link, a bullet about a tool.
    for text in [
        "read_file(path=\"a\") is how you would do it.",
        "See [read_file](docs/tools.md) or [read_file(path)].",
        "- read_file is a tool\n- 3. grep too\n",
        "Use [x](y) and [read_file] freely.",
    ] {
        let p = parse(text);
        assert!(p.calls.is_empty(), "{text:?}: {:?}", p.calls);
        assert_eq!(p.text, text);
    }
}

// ---- JSON cut off by the token limit ----

#[test]
fn json_cut_after_its_last_string_is_repaired_a_cut_content_is_refused() {
    for text in [
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{\"path\": \"a\"",
        "<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\"path\": \"a\"",
        "[TOOL_CALLS]read_file{\"path\": \"a\"",
        ">>>read_file\n{\"path\": \"a\"",
    ] {
        let p = parse(text);
        assert_eq!(calls(&p), vec![read("a")], "{text:?}");
        assert!(p.calls[0].is_truncated(), "{text:?}");
        assert!(refuse_truncated_write(&p.calls[0], changes(&p.calls[0])).is_none());
        assert_eq!(p.text, "", "{text:?}");
    }
    for text in [
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>write_file<｜tool▁sep｜>{\"path\": \"a\", \"content\": \"fn main() {",
        "<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>{\"path\": \"a\", \"content\": \"half",
        "<minimax:tool_call>\n<invoke name=\"write_file\">\n<parameter name=\"path\">a</parameter>\n<parameter name=\"content\">half",
        "<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a</arg_value>\n<arg_key>content</arg_key>\n<arg_value>half",
        "<|tool_call>call:write_file{path:<|\"|>a<|\"|>,content:<|\"|>half",
    ] {
        let p = parse(text);
        assert_eq!(p.calls.len(), 1, "{text:?}: {:?}", p.malformed);
        assert_eq!(p.calls[0].name, "write_file");
        assert!(
            p.calls[0]
                .repairs
                .contains(&Repair::Truncated { in_string: true }),
            "{text:?}: {:?}",
            p.calls[0].repairs
        );
        assert!(
            refuse_truncated_write(&p.calls[0], changes(&p.calls[0])).is_some(),
            "{text:?}"
        );
    }
}

// ---- what must not run ----

#[test]
fn quoted_tool_results_never_run() {
    for text in [
        "<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}<｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
        "<tool_response>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>\n</tool_response>",
        "<tool_result name=\"shell\">[read_file(path=\"a\")]</tool_result>",
        "<|tool_result|>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}<|/tool_result|>",
        "<|tool_response>response:read_file{path:<|\"|>a<|\"|>}<tool_response|>",
        "<|start|>functions.read_file to=assistant<|channel|>commentary<|message|>{\"name\": \"read_file\", \"arguments\": {\"path\": \"b\"}}<|end|>",
    ] {
        let p = parse(text);
        assert!(p.calls.is_empty(), "{text:?} ran {:?}", p.calls);
        assert_eq!(p.text, text);
    }
    // A call after the quoted result is read.
    let p = parse(
        "<tool_response>ok</tool_response>\n<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}</tool_call>",
    );
    assert_eq!(calls(&p), vec![read("a")]);
}

#[test]
fn a_list_with_an_unknown_tool_keeps_the_known_calls() {
    for text in [
        "[read_file(path=\"a\"), deploy(target=\"prod\")]",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁call▁begin｜>deploy<｜tool▁sep｜>{\"target\": \"prod\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "<minimax:tool_call><invoke name=\"read_file\"><parameter name=\"path\">a</parameter></invoke><invoke name=\"deploy\"><parameter name=\"target\">prod</parameter></invoke></minimax:tool_call>",
    ] {
        let p = parse(text);
        assert_eq!(p.calls.len(), 2, "{text:?}");
        assert_eq!(
            (p.calls[0].name.as_str(), p.calls[0].is_unknown()),
            ("read_file", false)
        );
        assert_eq!(
            (p.calls[1].name.as_str(), p.calls[1].is_unknown()),
            ("deploy", true)
        );
        assert_eq!(p.text, "");
    }
}

#[test]
fn family_markup_that_cannot_be_read_is_reported_not_run() {
    for text in [
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file{\"path\": \"a\"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        "<minimax:tool_call><invoke><parameter name=\"path\">a</parameter></invoke></minimax:tool_call>",
        "<start_function_call>call:read_file{path:<escape>a}<end_function_call>",
    ] {
        let p = parse(text);
        assert!(p.calls.is_empty(), "{text:?}");
        assert_eq!(p.malformed.len(), 1, "{text:?}");
    }
}

#[test]
fn prose_near_the_new_tokens_stays_text() {
    for text in [
        "Quote it like this:\n> read_file is a tool\n>> nested\n",
        ">>> import os\n>>> os.getcwd()\n",
        "a >>> b and x >> y",
        "<|im_start|>assistant but not harmony",
        "Use <invoke> in XML and <start> tags.",
        "The <|channel|> token, without a message.",
    ] {
        let p = parse(text);
        assert!(p.calls.is_empty(), "{text:?}: {:?}", p.calls);
        assert_eq!(p.text, text, "{text:?}");
    }
}

/// Found by fuzzing: `<|start|>` with a `<|message|>` 300 bytes later took everything
/// between as its header and dropped it. A header is a role, a channel, a recipient and a
/// constraint, nothing else.
#[test]
fn regression_a_harmony_header_never_swallows_text() {
    let filler = "Some prose with <b>markup</b> and\nlines. ".repeat(3);
    let text = format!("<|start|>assistant {filler}<|message|>the rest");
    let p = parse(&text);
    assert!(p.calls.is_empty());
    assert_eq!(p.text, text, "nothing is lost");
    let text = "grep<|message|><|start|>assistant```<|tool_call_end|><end_function_call>[ARGS]-2.5e3\\u00<|tool_call_end|>\\ud83d[ARGS]<｜tool▁calls▁begin｜>[ARGS]<｜tool▁sep｜><｜tool▁calls▁begin｜>`````````\n```<|DSML|invoke name=\"\\u00</function><|tool_calls_section_begin|><|tool_calls_section_begin|><function=~~~<|message|>";
    assert_eq!(streamed(text, &[315]), streamed(text, &[]));
    assert!(
        streamed(text, &[])
            .text
            .starts_with("grep<|message|><|start|>assistant```")
    );
}
