//! The registry's contract, with a small tool of the test's own.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use lathe_runtime::{
    Registry, Session, Tool, ToolConfig, ToolContext, ToolKind, ToolOutput, ToolResult, Workspace,
};

/// Repeats a word.
///
/// Use it to test things.
#[derive(Deserialize, JsonSchema)]
struct EchoInput {
    /// The file the word is about.
    path: String,
    /// How many times (default 1).
    times: Option<u32>,
    /// Shout it.
    #[serde(default)]
    loud: bool,
    /// Panic instead.
    #[serde(default)]
    explode: bool,
}

struct Echo;

impl Tool for Echo {
    const NAME: &'static str = "echo_path";
    type Input = EchoInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    async fn run(&self, input: EchoInput, _ctx: ToolContext) -> ToolResult {
        assert!(!input.explode, "the tool exploded");
        let word = if input.loud {
            input.path.to_uppercase()
        } else {
            input.path
        };
        Ok(ToolOutput::ok(
            vec![word; input.times.unwrap_or(1) as usize].join("\n"),
        ))
    }
}

fn setup(budget: usize) -> (tempfile::TempDir, Registry, Arc<Session>) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let ws = Workspace::new(dir.path().join("ws")).unwrap();
    let config = ToolConfig {
        result_budget: budget,
        ..ToolConfig::default()
    };
    let session = Session::new(ws, config, dir.path().join("state")).unwrap();
    let mut registry = Registry::new();
    registry.register(Echo);
    (dir, registry, session)
}

async fn call(registry: &Registry, session: &Arc<Session>, name: &str, args: Value) -> ToolOutput {
    registry
        .call(name, args, ToolContext::new(Arc::clone(session)))
        .await
}

#[test]
fn definitions_have_the_function_calling_shape() {
    let (_d, registry, _s) = setup(100);
    let defs = registry.function_definitions();
    let def = &defs[0];
    assert_eq!(def["type"], "function");
    assert_eq!(def["function"]["name"], "echo_path");
    assert_eq!(
        def["function"]["description"],
        "Repeats a word.\n\nUse it to test things."
    );
    let params = &def["function"]["parameters"];
    assert_eq!(params["type"], "object");
    assert_eq!(params["required"], json!(["path"]));
    assert_eq!(params["properties"]["times"]["type"], "integer");
    assert_eq!(
        params["properties"]["path"]["description"],
        "The file the word is about."
    );
}

#[tokio::test]
async fn lenient_arguments_reach_the_tool() {
    let (_d, registry, session) = setup(1000);
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"filePath": "a", "Times": "2", "LOUD": "true"}),
    )
    .await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text, "A\nA");
    // Names are folded too.
    let out = call(&registry, &session, "Echo-Path", json!({"file": "b"})).await;
    assert_eq!(out.text, "b");
}

#[tokio::test]
async fn unknown_tools_name_the_closest() {
    let (_d, registry, session) = setup(1000);
    let out = call(&registry, &session, "echo_paths", json!({})).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("unknown tool `echo_paths`"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("Did you mean `echo_path`?"),
        "{}",
        out.text
    );
    let out = call(&registry, &session, "zzzz", json!({})).await;
    assert!(!out.text.contains("Did you mean"), "{}", out.text);
    assert!(
        out.text.contains("The tools are: echo_path."),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn bad_arguments_say_which_and_what() {
    let (_d, registry, session) = setup(1000);
    let out = call(&registry, &session, "echo_path", json!({"times": 2})).await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("missing required parameter `path` (a string): The file the word is about."),
        "{}",
        out.text
    );
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "a", "times": "many"}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("parameter `times` must be an integer, got \"many\""),
        "{}",
        out.text
    );
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "a", "times": -3}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text.contains("invalid arguments for `echo_path`"),
        "{}",
        out.text
    );
}

#[tokio::test]
async fn results_over_budget_keep_head_tail_and_are_saved() {
    let (_d, registry, session) = setup(500);
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "abcdefghij", "times": 400}),
    )
    .await;
    assert!(!out.is_error);
    assert!(out.text.chars().count() <= 500, "{}", out.text.len());
    assert!(out.text.starts_with("abcdefghij\n"));
    assert!(out.text.ends_with("abcdefghij"));
    assert!(out.text.contains("characters cut"), "{}", out.text);
    let saved = out.metadata.full_result.as_deref().unwrap();
    let full = std::fs::read_to_string(saved).unwrap();
    assert_eq!(full.lines().count(), 400);
    // The saved result is readable through the workspace (a read-only root).
    assert!(
        session
            .workspace()
            .resolve(saved, lathe_runtime::Access::Read)
            .is_ok()
    );
    assert!(
        session
            .workspace()
            .resolve(saved, lathe_runtime::Access::Write)
            .is_err()
    );
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let (_d, registry, session) = setup(1000);
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "a", "explode": true}),
    )
    .await;
    assert!(out.is_error);
    assert!(out.text.contains("the tool exploded"), "{}", out.text);
}

#[test]
#[should_panic(expected = "is already taken by `echo_path`")]
fn duplicate_names_are_rejected() {
    let mut registry = Registry::new();
    registry.register(Echo);
    registry.register(Echo);
}

#[test]
fn builtin_names_are_unique_and_documented() {
    let registry = lathe_tools::builtin();
    for def in registry.definitions() {
        assert!(
            !def.description.is_empty(),
            "{} has no description",
            def.name
        );
        for (name, prop) in def.parameters["properties"].as_object().unwrap() {
            assert!(
                prop.get("description").is_some(),
                "{}.{name} has no description",
                def.name
            );
        }
        // No `null` anywhere: not as a type, not as a default (strict validators of MCP
        // clients reject a default that is not of the field's type).
        let text = def.parameters.to_string();
        assert!(!text.contains("null"), "{}: {text}", def.name);
    }
}

#[tokio::test]
async fn unknown_optional_parameters_are_refused_with_the_closest_name() {
    let (_d, registry, session) = setup(1000);
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "a", "tims": 2}),
    )
    .await;
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text
            .contains("unknown parameter `tims` (did you mean `times`?)"),
        "{}",
        out.text
    );
    assert!(out.text.contains("the parameters are: "), "{}", out.text);
}

#[tokio::test]
async fn a_value_the_input_type_refuses_names_the_parameter() {
    let (_d, registry, session) = setup(1000);
    // `times` is a u32: the schema's minimum refuses -3 before deserialization would.
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "a", "times": -3}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("parameter `times` must be 0 or more, got -3"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("u32"), "{}", out.text);
}

#[tokio::test]
async fn builtin_ids_and_offsets_refuse_negatives_by_name_and_take_whole_floats() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let ws = Workspace::new(dir.path().join("ws")).unwrap();
    let session = Session::new(ws, ToolConfig::default(), dir.path().join("state")).unwrap();
    let registry = lathe_tools::builtin();
    let out = call(&registry, &session, "command_output", json!({"id": -1})).await;
    assert!(out.is_error);
    assert!(
        out.text.contains("parameter `id` cannot be -1"),
        "{}",
        out.text
    );
    assert!(!out.text.contains("untagged enum"), "{}", out.text);
    let out = call(
        &registry,
        &session,
        "grep",
        json!({"pattern": "x", "offset": -1}),
    )
    .await;
    assert!(out.is_error);
    assert!(
        out.text
            .contains("parameter `offset` must be 0 or more, got -1"),
        "{}",
        out.text
    );
    let out = call(&registry, &session, "shell", json!({"command": "echo one"})).await;
    assert!(!out.is_error, "{}", out.text);
    let out = call(&registry, &session, "command_output", json!({"id": 1.0})).await;
    assert!(!out.is_error, "{}", out.text);
    assert!(out.text.contains("one"), "{}", out.text);
}

/// The budget holds however long the state directory's path (named twice in the marker) is.
#[tokio::test]
async fn the_budget_holds_with_a_long_state_directory() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let ws = Workspace::new(dir.path().join("ws")).unwrap();
    let config = ToolConfig {
        result_budget: 800,
        ..ToolConfig::default()
    };
    let state = dir.path().join("s".repeat(120)).join("t".repeat(60));
    let session = Session::new(ws, config, state).unwrap();
    let mut registry = Registry::new();
    registry.register(Echo);
    let out = call(
        &registry,
        &session,
        "echo_path",
        json!({"path": "abcdefghij", "times": 400}),
    )
    .await;
    assert!(!out.is_error);
    assert!(
        out.text.chars().count() <= 800,
        "{}",
        out.text.chars().count()
    );
    assert!(out.text.starts_with("abcdefghij\n"), "{}", out.text);
    assert!(out.text.contains("characters cut"), "{}", out.text);
}

/// Names other agents use for the same job reach the built-in tool, though they share no
/// letters with it: they are its aliases (the first cut only suggested the tool).
#[tokio::test]
async fn names_other_agents_use_for_a_job_resolve_to_the_tool_for_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("ws")).unwrap();
    let ws = Workspace::new(dir.path().join("ws")).unwrap();
    let session = Session::new(ws, ToolConfig::default(), dir.path().join("state")).unwrap();
    let registry = lathe_tools::builtin();
    for (written, real) in [
        ("bash", "shell"),
        ("cat", "read_file"),
        ("str_replace", "edit_file"),
        ("search", "grep"),
        ("ls", "list_files"),
    ] {
        assert_eq!(registry.resolve_name(written), Ok(real));
        let call = registry
            .prepare(written, json!({}), &session)
            .map(|call| call.name)
            .map_err(|out| out.text);
        match call {
            Ok(name) => assert_eq!(name, real),
            // The tool was found; only its arguments are missing.
            Err(text) => assert!(
                text.starts_with(&format!("invalid arguments for `{real}`")),
                "{written}: {text}"
            ),
        }
    }
}

/// A misspelt alias suggests the tool it names, and a tool's title comes without a session.
#[test]
fn misspelt_aliases_suggest_their_tool_and_titles_need_no_session() {
    let registry = lathe_tools::builtin();
    assert_eq!(registry.resolve_name("bsh"), Err(vec!["shell"]));
    let text = registry.unknown_tool("bsh").text;
    assert!(
        text.starts_with("unknown tool `bsh`. Did you mean `shell`?"),
        "{text}"
    );
    assert_eq!(
        registry.title("read_file", &json!({"path": "src/main.rs", "offset": 40})),
        "read_file src/main.rs (from line 40)"
    );
    // Aliases and folded names find the tool; what does not prepare is shown as written.
    assert_eq!(
        registry.title("cat", &json!({"file": "a.rs"})),
        "read_file a.rs"
    );
    assert_eq!(registry.title("nope", &json!({"a": 1})), "nope a=1");
    assert_eq!(
        registry.title("read_file", &json!({"offset": "x"})),
        "read_file offset=x"
    );
}

/// What a result echoes of a huge argument (an unknown tool's name, the diff of a big write) is
/// cut to a bound that the result names, instead of being copied whole.
#[tokio::test]
async fn echoed_arguments_are_bounded() {
    let (_d, _, session) = setup(10_000);
    let registry = lathe_tools::builtin();
    let name = "x".repeat(4 << 20);
    let out = call(&registry, &session, &name, json!({})).await;
    assert!(out.is_error);
    assert!(out.text.len() < 4_000, "{} bytes", out.text.len());
    assert!(out.text.contains("4194304 bytes"), "{}", out.text);
    assert!(out.text.contains("at most 128 bytes"), "{}", out.text);

    let path = format!("{}/file.txt", "d".repeat(1 << 20));
    let out = call(&registry, &session, "list_files", json!({"path": path})).await;
    let shown = serde_json::to_string(&out.metadata).unwrap();
    assert!(
        shown.len() < 300 * 1024,
        "{} bytes of metadata",
        shown.len()
    );
    assert!(
        shown.contains("metadata values are at most 262144 bytes]"),
        "{}",
        &shown[shown.len().saturating_sub(200)..]
    );
}

/// Every schema keyword `type` of every built-in tool names one type: type arrays are not
/// portable (strict MCP clients such as the Inspector's `--strict` flag them).
#[test]
fn builtin_schemas_use_one_type_per_value() {
    fn check(schema: &Value, at: &str, found: &mut Vec<String>) {
        let Some(object) = schema.as_object() else {
            return;
        };
        if let Some(kind) = object.get("type")
            && !kind.is_string()
        {
            found.push(format!("{at}: {kind}"));
        }
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (name, property) in properties {
                check(property, &format!("{at}.{name}"), found);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = object.get(key) {
                check(inner, &format!("{at}[{key}]"), found);
            }
        }
        for key in ["anyOf", "oneOf", "allOf"] {
            for (i, inner) in object
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                check(inner, &format!("{at}.{key}[{i}]"), found);
            }
        }
    }
    let registry = lathe_tools::builtin();
    let mut found = Vec::new();
    for definition in registry.definitions() {
        check(&definition.parameters, &definition.name, &mut found);
    }
    assert!(found.is_empty(), "type arrays: {found:?}");
}

/// Command ids given as strings still work with the one-type schema.
#[tokio::test]
async fn command_ids_are_accepted_as_strings_too() {
    let (_d, _, session) = setup(10_000);
    let registry = lathe_tools::builtin();
    for id in [json!("cmd-41"), json!("41"), json!(41)] {
        let out = call(&registry, &session, "kill_command", json!({"id": id})).await;
        assert!(out.text.contains("41"), "{id}: {}", out.text);
        assert!(
            !out.text.contains("invalid arguments"),
            "{id}: {}",
            out.text
        );
    }
}

#[test]
fn the_builtin_names_are_unique_also_after_folding() {
    let registry = lathe_tools::builtin();
    let mut all: Vec<String> = Vec::new();
    for definition in registry.definitions() {
        for name in std::iter::once(&definition.name).chain(&definition.aliases) {
            let folded = lathe_runtime::args::fold_name(name);
            assert!(!all.contains(&folded), "`{name}` is listed twice");
            all.push(folded);
        }
    }
}
