//! Unit tests of the lenient argument handling.

use super::*;
use serde_json::json;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file. Relative to the root."},
            "offset": {"type": "integer"},
            "limit": {"type": "integer"},
            "replace_all": {"type": "boolean"},
            "globs": {"type": "array", "items": {"type": "string"}},
            "mode": {"type": "string", "enum": ["content", "count"]},
            "edits": {"type": "array", "items": {
                "type": "object",
                "properties": {"old_string": {"type": "string"}, "new_string": {"type": "string"}},
                "required": ["old_string", "new_string"]
            }}
        },
        "required": ["path"]
    })
}

#[test]
fn other_agents_names_map_when_the_schema_has_the_target() {
    let grep = json!({"type": "object", "properties": {
        "pattern": {"type": "string"}, "case_insensitive": {"type": "boolean"},
        "limit": {"type": "integer"}, "path": {"type": "string"}}});
    let out = normalize(
        json!({"regex": "x", "-i": true, "head_limit": 5, "directory": "src"}),
        &grep,
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"pattern": "x", "case_insensitive": true, "limit": 5, "path": "src"})
    );
    // No target in the schema: still an unknown parameter.
    assert!(normalize(json!({"cmd": "ls"}), &grep).is_err());
}

#[test]
fn path_aliases_and_key_folding() {
    for key in ["path", "file", "file_path", "filePath", "FILE-PATH", "Path"] {
        let out = normalize(json!({key: "a.rs", "Replace-All": true}), &schema()).unwrap();
        assert_eq!(
            out,
            json!({"path": "a.rs", "replace_all": true}),
            "key {key}"
        );
    }
}

#[test]
fn scalars_in_strings_are_coerced_only_when_whole() {
    let out = normalize(
        json!({"path": "a", "offset": "10", "replace_all": "true", "globs": "[\"a\",\"b\"]"}),
        &schema(),
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"path": "a", "offset": 10, "replace_all": true, "globs": ["a", "b"]})
    );
    let err = normalize(json!({"path": "a", "offset": "10 lines"}), &schema()).unwrap_err();
    assert!(
        err.0.contains("parameter `offset` must be an integer"),
        "{err}"
    );
    assert_eq!(
        normalize(json!({"path": "a", "offset": 5.0}), &schema()).unwrap()["offset"],
        json!(5)
    );
}

#[test]
fn strings_become_arrays_and_numbers_become_strings() {
    let out = normalize(json!({"path": 12, "globs": "*.rs"}), &schema()).unwrap();
    assert_eq!(out, json!({"path": "12", "globs": ["*.rs"]}));
}

#[test]
fn double_escapes_repaired_only_without_real_newlines() {
    let out = normalize(json!({"path": "fn a() {\\n\\t\\\"x\\\"\\n}"}), &schema()).unwrap();
    assert_eq!(out["path"], json!("fn a() {\n\t\"x\"\n}"));
    let real = "line one\nprintf(\"\\n\");";
    let out = normalize(json!({"path": real}), &schema()).unwrap();
    assert_eq!(out["path"], json!(real));
    let plain = "C:\\temp";
    assert_eq!(repair_double_escape(plain.to_owned()), plain);
}

#[test]
fn escapes_inside_string_literals_are_not_repaired() {
    for literal in [
        r#"printf("hi\n");"#,
        r#"{"msg":"line1\nline2"}"#,
        r#"lines = text.split('\n')"#,
        r#"const s = `a\nb`;"#,
        r#"pat = re.compile(r"\d+\n")"#,
    ] {
        assert_eq!(repair_double_escape(literal.to_owned()), literal);
    }
    // Double-escaped text has its quotes escaped too, so its `\n` are outside any literal.
    assert_eq!(
        repair_double_escape(r#"def f():\n    print(\"hi\")\n"#.to_owned()),
        "def f():\n    print(\"hi\")\n"
    );
    // An apostrophe in a word opens no quote.
    assert_eq!(
        repair_double_escape(r"don't stop\nnext line".to_owned()),
        "don't stop\nnext line"
    );
    // One `\n` outside quotes is enough: the whole text is repaired.
    assert_eq!(
        repair_double_escape(r"x = 'a\\nb'\ny = 2".to_owned()),
        "x = 'a\\nb'\ny = 2"
    );
}

#[test]
fn strings_meant_as_written_pass_the_argument_layer_unchanged() {
    // Issue 14: LaTeX, Windows paths and text about escapes are not double-escaped code.
    for literal in [
        r"$\theta \neq \nabla f$",
        r"dir=C:\new\table",
        r"\newcommand{\R}{\mathbb{R}}",
        r"split on \n and trim",
        r"[^\n]+",
        r"a\tb\nc",
    ] {
        let out = normalize(json!({"path": literal}), &schema()).unwrap();
        assert_eq!(out["path"], json!(literal), "{literal}");
    }
    // Code with its line breaks escaped is still repaired, tab indentation and all.
    let out = normalize(json!({"path": r"func f() {\n\treturn\n}"}), &schema()).unwrap();
    assert_eq!(out["path"], json!("func f() {\n\treturn\n}"));
}

#[test]
fn missing_required_names_parameter_and_unknown_keys() {
    let err = normalize(json!({"name": "x"}), &schema()).unwrap_err();
    assert!(
        err.0
            .contains("missing required parameter `path` (a string): The file."),
        "{err}"
    );
    assert!(err.0.contains("unknown parameters given: name"), "{err}");
    let err = normalize(
        json!({"path": "a", "edits": [{"old_string": "x"}]}),
        &schema(),
    )
    .unwrap_err();
    assert!(err.0.contains("`edits[0].new_string`"), "{err}");
}

#[test]
fn arguments_as_a_json_string_and_null() {
    let out = normalize(json!("{\"file\": \"a\"}"), &schema()).unwrap();
    assert_eq!(out, json!({"path": "a"}));
    assert!(
        normalize(Value::Null, &schema())
            .unwrap_err()
            .0
            .contains("`path`")
    );
    let out = normalize(json!({"path": "a", "limit": null}), &schema()).unwrap();
    assert_eq!(out, json!({"path": "a"}));
}

#[test]
fn enums_fold_case_and_list_choices() {
    let out = normalize(json!({"path": "a", "mode": "Content"}), &schema()).unwrap();
    assert_eq!(out["mode"], json!("content"));
    let err = normalize(json!({"path": "a", "mode": "lines"}), &schema()).unwrap_err();
    assert!(
        err.0.contains("must be one of \"content\", \"count\""),
        "{err}"
    );
}
