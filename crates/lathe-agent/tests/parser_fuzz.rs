//! The parser never panics, never loops, and streams the same as it reads whole.
//!
//! The case count defaults to a CI-friendly number; run long with
//!
//! ```text
//! PROPTEST_CASES=2000000 cargo test --release -p lathe-agent --test integration \
//!     parser_fuzz:: -- --nocapture
//! ```
//!
//! which prints how many inputs were checked. A watchdog aborts the run if one input takes more
//! than `STUCK_AFTER` (a loop), printing that input.

use lathe_agent::parser::{ParsedText, Scanner, Scope, ToolNames, collect, parse_text};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use serde_json::{Map, Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};

const TOOLS: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "grep",
    "glob",
    "shell",
    "list_files",
];
/// A single input taking this long means the parser is looping.
const STUCK_AFTER: Duration = Duration::from_secs(20);

static CHECKED: AtomicU64 = AtomicU64::new(0);
static CURRENT: Mutex<Option<(Instant, String)>> = Mutex::new(None);
static WATCHDOG: Once = Once::new();

fn names() -> Arc<ToolNames> {
    Arc::new(ToolNames::new(TOOLS.iter().copied()))
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300)
}

fn watch(input: &str) {
    WATCHDOG.call_once(|| {
        std::thread::spawn(|| {
            loop {
                std::thread::sleep(Duration::from_secs(1));
                let current = CURRENT.lock().unwrap_or_else(|p| p.into_inner());
                if let Some((since, input)) = current.as_ref()
                    && since.elapsed() > STUCK_AFTER
                {
                    eprintln!("parser stuck for {STUCK_AFTER:?} on input: {input:?}");
                    std::process::abort();
                }
            }
        });
    });
    *CURRENT.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), input.to_string()));
}

fn done() {
    *CURRENT.lock().unwrap_or_else(|p| p.into_inner()) = None;
    let n = CHECKED.fetch_add(1, Ordering::Relaxed) + 1;
    if n.is_multiple_of(100_000) {
        eprintln!("parser_fuzz: {n} inputs checked");
    }
}

fn streamed(text: &str, cuts: &[usize], scope: Scope) -> ParsedText {
    let mut scanner = Scanner::new(names(), scope);
    let mut segments = Vec::new();
    let mut start = 0;
    for &cut in cuts {
        if cut > start && cut < text.len() && text.is_char_boundary(cut) {
            segments.extend(scanner.push(&text[start..cut]));
            start = cut;
        }
    }
    segments.extend(scanner.push(&text[start..]));
    segments.extend(scanner.finish());
    collect(segments)
}

/// Reads `text` whole and in pieces, in both scopes, and checks they agree.
fn check(text: &str, cuts: &[usize]) {
    watch(text);
    for scope in [Scope::Text, Scope::Thinking] {
        let whole = streamed(text, &[], scope);
        let pieces = streamed(text, cuts, scope);
        assert_eq!(
            whole, pieces,
            "streaming differs in {scope:?} for {text:?} cut at {cuts:?}"
        );
        // Nothing is invented: the shown text never grows.
        assert!(whole.text.len() <= text.len());
    }
    done();
}

/// Text that leans towards the characters the scanner cares about.
fn tricky_text() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "<tool_call>",
        "</tool_call>",
        "<function=",
        "</function>",
        "<parameter=",
        "</parameter>",
        "[TOOL_CALLS]",
        "[ARGS]",
        "[CALL_ID]",
        "<|python_tag|>",
        "<|eom_id|>",
        "<|tool_call|>",
        "```",
        "```json\n",
        "~~~",
        "\n",
        "{",
        "}",
        "[",
        "]",
        "(",
        ")",
        "\"",
        "'",
        ":",
        ",",
        ";",
        "=",
        "\\",
        "\\u00",
        "\\ud83d",
        "“",
        "”",
        "‘",
        "’",
        "name",
        "arguments",
        "\"name\"",
        "\"arguments\"",
        "read_file",
        "write_file",
        "grep",
        "True",
        "None",
        "null",
        "tru",
        "1",
        "-2.5e3",
        " ",
        "\t",
        "é",
        "日本",
        "\u{0}",
        "<",
        ">",
        "/",
        "[TASK_COMPLETE]",
        "functions.",
        // Issue 19's families.
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁call▁begin｜>",
        "<｜tool▁sep｜>",
        "<｜tool▁call▁end｜>",
        "<｜tool▁calls▁end｜>",
        "function",
        "<｜DSML｜function_calls>",
        "<|DSML|invoke name=\"",
        "<｜DSML｜parameter name=\"",
        "</｜DSML｜parameter>",
        "</|DSML|invoke>",
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        "<invoke name=",
        "<parameter name=\"path\" string=\"false\">",
        "</parameter>",
        "</invoke>",
        "<steptml:invoke name=\"grep\">",
        "<｜tool_calls_begin｜>",
        "<arg_key>",
        "</arg_key>",
        "<arg_value>",
        "</arg_value>",
        "<|tool_calls_section_begin|>",
        "<|tool_call_begin|>",
        "<|tool_call_argument_begin|>",
        "<|tool_call_end|>",
        "<start_function_call>call:",
        "<end_function_call>",
        "<escape>",
        "<|tool_call>call:",
        "<|\"|>",
        "<tool_call|>",
        ">>>",
        ">>>all\n",
        "<|start|>assistant",
        "<|channel|>",
        "analysis",
        "commentary to=functions.read_file",
        "<|constrain|>json",
        "<|message|>",
        "<|call|>",
        "<|end|>",
        "<|python_start|>",
        "<|python_end|>",
        "<seed:tool_call>",
        "<function_calls>",
        "<|tools_prefix|>",
        "<tool_response>",
        "</tool_response>",
        "<｜tool▁output▁begin｜>",
        "- ",
        "1. ",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|parts| parts.concat())
}

fn cut_points() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..400, 0..6).prop_map(|mut v| {
        v.sort_unstable();
        v
    })
}

/// A JSON value for arguments: strings with anything in them, numbers, booleans, nesting.
fn argument_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<String>().prop_map(Value::from),
        "[ -~\n\t{}\\[\\]<>\"'`]{0,40}".prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z][a-z_]{0,10}", argument_value(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Prose without any character that could start a call.
fn prose() -> impl Strategy<Value = String> {
    "[A-Za-z ,.!?é]{0,40}".prop_map(|s| s.trim().to_string())
}

/// A call written in one of the families.
fn written_call(name: &str, args: &Value, family: usize) -> String {
    let call = json!({"name": name, "arguments": args});
    match family {
        0 => format!("<tool_call>\n{call}\n</tool_call>"),
        1 => format!("<tool_call>{call}"),
        2 => format!(
            "```json\n{}\n```",
            serde_json::to_string_pretty(&call).unwrap_or_default()
        ),
        3 => format!("{call}"),
        4 => format!("[TOOL_CALLS][{call}]"),
        5 => format!("[TOOL_CALLS]{name}[ARGS]{args}"),
        6 => format!("<function={name}>{args}</function>"),
        7 => format!(
            "<|python_tag|>{}<|eom_id|>",
            json!({"name": name, "parameters": args})
        ),
        8 => format!("[{call}]"),
        9 => format!(
            "{}",
            json!({"type": "function", "function": {"name": name, "arguments": args.to_string()}})
        ),
        _ => format!("{}", json!({"tool": name, "args": args})),
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        // Integration tests have no lib.rs for proptest to find; name the file.
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(
            "tests/parser_fuzz.proptest-regressions"
        ))),
        ..ProptestConfig::default()
    })]

    #[test]
    fn arbitrary_strings(text in any::<String>(), cuts in cut_points()) {
        check(&text, &cuts);
    }

    #[test]
    fn strings_full_of_call_syntax(text in tricky_text(), cuts in cut_points()) {
        check(&text, &cuts);
    }

    #[test]
    fn cut_off_calls(name in prop::sample::select(TOOLS), args in arguments(), family in 0usize..11,
                     keep in 0.0f64..1.0, cuts in cut_points()) {
        let full = written_call(name, &args, family);
        let mut end = ((full.len() as f64) * keep) as usize;
        while !full.is_char_boundary(end) {
            end -= 1;
        }
        let text = &full[..end];
        check(text, &cuts);
        let parsed = parse_text(text, &ToolNames::new(TOOLS.iter().copied()));
        for call in &parsed.calls {
            // Cut inside the name, the name is partial, and the call says it was cut off.
            prop_assert!(
                call.name == name || (call.is_truncated() && name.starts_with(call.name.as_str())),
                "{:?} from {:?}", call, text
            );
            prop_assert!(call.arguments.is_object());
        }
    }

    #[test]
    fn written_calls_are_recovered_exactly(before in prose(), after in prose(), name in prop::sample::select(TOOLS),
                                           args in arguments(), family in 0usize..11, cuts in cut_points()) {
        let call = written_call(name, &args, family);
        let text = format!("{before}\n{call}\n{after}");
        check(&text, &cuts);
        let parsed = parse_text(&text, &ToolNames::new(TOOLS.iter().copied()));
        prop_assert_eq!(parsed.calls.len(), 1, "text: {:?} -> {:?}", text, parsed);
        prop_assert_eq!(&parsed.calls[0].name, name);
        prop_assert_eq!(&parsed.calls[0].arguments, &args);
        prop_assert!(!parsed.calls[0].is_truncated());
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        prop_assert_eq!(squash(&parsed.text), squash(&format!("{before} {after}")));
    }

    #[test]
    fn prose_and_data_are_never_calls(before in prose(), value in argument_value(), after in prose()) {
        // JSON without a tool name in it, shown in prose or a fence, stays text.
        let text = format!("{before} {value} {after}\n```json\n{value}\n```\n");
        check(&text, &[]);
        let parsed = parse_text(&text, &ToolNames::new(TOOLS.iter().copied()));
        let name_keys = ["name", "tool", "tool_name", "toolName", "function", "function_name", "action"];
        let has_name = name_keys.iter().any(|k| text.contains(&format!("\"{k}\"")));
        if !has_name {
            prop_assert!(parsed.calls.is_empty(), "{:?}", parsed.calls);
            prop_assert_eq!(parsed.text, text);
        }
    }
}

#[test]
fn zz_report_count() {
    // Runs last by name; the count is only complete when the other tests ran first, which
    // `cargo test` does not promise, so it is printed, not asserted.
    eprintln!(
        "parser_fuzz: {} inputs checked so far",
        CHECKED.load(Ordering::Relaxed)
    );
}
