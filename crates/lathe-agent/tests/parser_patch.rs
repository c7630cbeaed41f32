//! A patch block written in a reply becomes one `apply_patch` call: bare, fenced or in a
//! heredoc, as models trained with Codex and OpenCode write it. Each reply is also fed in
//! pieces at every split point: the streaming scanner must agree with the one-shot read.

use lathe_agent::parser::{
    CallSource, Family, ParsedText, Repair, Scanner, Scope, ToolNames, collect, parse_text,
    refuse_truncated_write,
};
use std::sync::Arc;

const TOOLS: &[&str] = &["read_file", "edit_file", "shell", "apply_patch"];

const PATCH: &str = "*** Begin Patch\n\
*** Update File: src/app.py\n\
@@ def greet():\n\
-    print(\"Hi\")\n\
+    print(\"Hello\")\n\
*** End Patch\n";

fn streamed(text: &str, cuts: &[usize], names: &ToolNames, scope: Scope) -> ParsedText {
    let mut scanner = Scanner::new(Arc::new(names.clone()), scope);
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

fn parse_with(text: &str, tools: &[&str], scope: Scope) -> ParsedText {
    let names = ToolNames::new(tools.iter().copied());
    let whole = streamed(text, &[], &names, scope);
    if scope == Scope::Text {
        assert_eq!(parse_text(text, &names), whole, "parse_text differs");
    }
    let boundaries: Vec<usize> = (1..text.len())
        .filter(|&i| text.is_char_boundary(i))
        .collect();
    for &cut in &boundaries {
        assert_eq!(
            streamed(text, &[cut], &names, scope),
            whole,
            "split at {cut} differs for {text:?}"
        );
    }
    assert_eq!(
        streamed(text, &boundaries, &names, scope),
        whole,
        "char by char differs for {text:?}"
    );
    whole
}

fn parse(text: &str) -> ParsedText {
    parse_with(text, TOOLS, Scope::Text)
}

fn patch_of(parsed: &ParsedText) -> &str {
    assert_eq!(parsed.calls.len(), 1, "{parsed:?}");
    assert_eq!(parsed.calls[0].name, "apply_patch");
    parsed.calls[0].arguments["patch"].as_str().unwrap()
}

#[test]
fn a_bare_patch_between_prose_is_one_call_and_the_prose_stays() {
    let reply = format!("I'll change the greeting.\n\n{PATCH}\nThat should print Hello now.");
    let parsed = parse(&reply);
    assert_eq!(patch_of(&parsed), PATCH);
    assert_eq!(parsed.calls[0].source, CallSource::Text(Family::Patch));
    assert!(parsed.calls[0].repairs.is_empty());
    assert_eq!(
        parsed.text,
        "I'll change the greeting.\n\n\n\nThat should print Hello now."
    );
}

#[test]
fn a_fenced_patch_and_a_heredoc_are_calls_too() {
    let parsed = parse(&format!("Here is the fix:\n```diff\n{PATCH}```\n"));
    assert_eq!(patch_of(&parsed), PATCH);
    assert_eq!(parsed.text, "Here is the fix:\n\n");

    // How Codex's models call it through a shell.
    let parsed = parse(&format!("apply_patch <<'EOF'\n{PATCH}EOF\n"));
    assert_eq!(patch_of(&parsed), PATCH);
    assert_eq!(parsed.text, "\n");
    let parsed = parse(&format!(
        "```bash\napply_patch <<\"PATCH\"\n{PATCH}PATCH\n```"
    ));
    assert_eq!(patch_of(&parsed), PATCH);
    assert_eq!(parsed.text, "");

    // Two blocks, two calls, in order.
    let second = PATCH.replace("src/app.py", "src/other.py");
    let parsed = parse(&format!("{PATCH}\n{second}"));
    assert_eq!(parsed.calls.len(), 2);
    assert_eq!(parsed.calls[1].arguments["patch"], second.as_str());
}

#[test]
fn patches_that_are_not_calls_stay_text() {
    // No apply_patch among the tools.
    let reply = format!("Done:\n{PATCH}");
    let parsed = parse_with(&reply, &["read_file", "shell"], Scope::Text);
    assert!(parsed.calls.is_empty());
    assert_eq!(parsed.text, reply);
    // Thinking drafts a patch; it is not the call.
    let parsed = parse_with(&reply, TOOLS, Scope::Thinking);
    assert!(parsed.calls.is_empty());
    // Mentioned inline, or quoted in a fence with other text (an explanation of the format).
    for reply in [
        "Start your patch with `*** Begin Patch` and end it with `*** End Patch`.".to_owned(),
        format!("```\n$ cat fix.patch\n{PATCH}```\n"),
        "*** Begin Patching the server tonight, stay tuned".to_owned(),
        "cat <<EOF\nhello\nEOF\n".to_owned(),
    ] {
        let parsed = parse(&reply);
        assert!(parsed.calls.is_empty(), "{reply:?}: {parsed:?}");
        assert_eq!(parsed.text, reply);
    }
}

#[test]
fn a_reply_that_ends_inside_a_patch_is_cut_off_and_refused() {
    let cut = &PATCH[..PATCH.find("+    print").unwrap() + 8];
    let parsed = parse(&format!("Fixing it:\n{cut}"));
    assert_eq!(patch_of(&parsed), format!("{cut}\n"));
    assert_eq!(
        parsed.calls[0].repairs,
        [Repair::Truncated { in_string: false }]
    );
    let refusal = refuse_truncated_write(&parsed.calls[0], true).unwrap();
    assert!(refusal.contains("cut off"), "{refusal}");

    // Closed by its fence or its heredoc delimiter, a patch without `*** End Patch` is whole.
    let body = PATCH.replace("*** End Patch\n", "");
    let parsed = parse(&format!("```\n{body}```\n"));
    assert_eq!(patch_of(&parsed), body);
    assert_eq!(parsed.calls[0].repairs, [Repair::MissingCloseTag]);
    assert!(refuse_truncated_write(&parsed.calls[0], true).is_none());
    let parsed = parse(&format!("apply_patch <<'EOF'\n{body}EOF\nDone."));
    assert_eq!(patch_of(&parsed), body);
    assert_eq!(parsed.text, "\nDone.");
}

#[test]
fn a_realistic_reply_from_a_codex_trained_model() {
    let reply = "I found the bug: `parse_port` rejects port 0.\n\n\
*** Begin Patch\n\
*** Update File: src/config.rs\n\
@@ fn parse_port(s: &str) -> Result<u16, String> {\n\
     let port: u16 = s.parse().map_err(|e| format!(\"{e}\"))?;\n\
-    if port == 0 {\n\
-        return Err(\"port 0\".into());\n\
-    }\n\
     Ok(port)\n\
*** Add File: tests/port.rs\n\
+#[test]\n\
+fn zero_is_allowed() {\n\
+    assert_eq!(parse_port(\"0\"), Ok(0));\n\
+}\n\
*** End Patch\n\n\
Then run `cargo test`.";
    let parsed = parse(reply);
    let patch = patch_of(&parsed);
    assert!(patch.starts_with("*** Begin Patch\n*** Update File: src/config.rs\n"));
    assert!(patch.ends_with("+}\n*** End Patch\n"));
    assert_eq!(
        parsed.text,
        "I found the bug: `parse_port` rejects port 0.\n\n\n\nThen run `cargo test`."
    );
}
