//! The project memory with the real binary: `update_memory` asks with its diff in `auto` and
//! `full` on a terminal and the next session's system prompt holds the memory after AGENTS.md;
//! without a terminal nothing changes and the model reads how the user can change it;
//! `lathe memory show|edit|clear` and the `[memory] path` key.

use std::process::{Output, Stdio};

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;
use crate::pty::Terminal;

const MEMORY: &str = ".lathe/memory.md";

fn remember(entry: &str) -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call("update_memory", json!({"action": "add", "entry": entry}))
                .done(),
        )
        .chat(reply().text("Noted.").done())
        .chat(reply().text("Second session.").done())
}

/// The system prompt of the request `index` the server received.
fn system_prompt(h: &Harness, index: usize) -> String {
    let bodies = h.bodies();
    let first = &messages(&bodies[index])[0];
    assert_eq!(first["role"], "system");
    first["content"].as_str().unwrap().to_owned()
}

fn memory(h: &Harness, args: &[&str]) -> Output {
    h.lathe()
        .arg("memory")
        .args(args)
        .env_remove("VISUAL")
        .env_remove("EDITOR")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn update_memory_asks_with_its_diff_in_auto_and_full_and_the_next_session_reads_it() {
    for mode in ["auto", "full"] {
        let h = Harness::new(remember("The tests need `make db` first."));
        h.write("AGENTS.md", "Follow the house style.\n");
        let mut term = Terminal::exec(&h, "remember the db step", &["--approval", mode]);
        term.wait_for("+- The tests need `make db` first.");
        term.wait_for("Allow?");
        let screen = term.screen();
        assert!(
            screen.contains("memory changes always ask"),
            "{mode}: {screen}"
        );
        term.type_line("y");
        term.wait_for("Noted.");
        assert_eq!(term.wait_exit(), 0, "{mode}");
        assert_eq!(h.read(MEMORY), "- The tests need `make db` first.\n");
        // The session that made the change started without it; the next one holds it, after
        // the project's instructions.
        assert!(!system_prompt(&h, 0).contains("make db"), "{mode}");
        let output = h.exec("next task", &["--approval", mode]);
        assert_exit(&output, 0);
        let prompt = system_prompt(&h, 2);
        let agents = prompt.find("Follow the house style.").expect("AGENTS.md");
        let entry = prompt
            .find("- The tests need `make db` first.")
            .expect("the memory");
        assert!(agents < entry, "{mode}: {prompt}");
        assert!(
            prompt.contains("# Project memory (.lathe/memory.md)"),
            "{prompt}"
        );
    }
}

#[test]
fn without_a_terminal_memory_is_not_changed_and_the_model_reads_what_the_user_can_do() {
    let h = Harness::new(remember("Planted by a model."));
    let output = h.exec("remember it", &["--approval", "full"]);
    // Nothing was written because a change was denied.
    assert_exit(&output, 3);
    assert!(!h.ws.join(MEMORY).exists());
    let bodies = h.bodies();
    let result = messages(&bodies[1]).last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.contains("memory changes always need the user's approval"),
        "{result}"
    );
    assert!(result.contains("lathe memory edit"), "{result}");
    assert!(!result.contains("--approval auto"), "{result}");
}

/// The hint under exec's end line for a denied memory change, exactly.
const MEMORY_HINT: &str = "  memory changes ask in every mode and no rule allows them unasked: \
approve it when asked (run on a terminal: lathe chat, or lathe exec), or edit the memory \
yourself with `lathe memory edit`\n";

#[test]
fn a_denied_memory_change_ends_with_a_hint_that_works_for_memory() {
    let h = Harness::new(remember("Planted by a model."));
    let output = h.exec("remember it", &["--approval", "full"]);
    assert_exit(&output, 3);
    let shown = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        shown.contains(&format!(
            "1 call was denied: update_memory add Planted by a model.; nothing was written\n{MEMORY_HINT}"
        )),
        "{shown}"
    );
    // No mode or rule would have allowed it: the ordinary hint is not given.
    assert!(!shown.contains("--approval auto"), "{shown}");
    assert!(!shown.contains("allow rule"), "{shown}");

    // The report says which kind of denial it was.
    let h = Harness::new(remember("Planted by a model."));
    let output = h.exec("remember it", &["--approval", "full", "--json"]);
    let events = json_lines(&output);
    let denied = &of_type(&events, "run_result")[0]["denied"];
    assert_eq!(denied[0]["kind"], "memory", "{denied:#}");
}

#[test]
fn an_ordinary_denial_keeps_the_approval_hint_and_both_show_when_both_were_denied() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("update_memory", json!({"action": "add", "entry": "x"}))
                .tool_call("write_file", json!({"path": "a.txt", "content": "a\n"}))
                .done(),
        )
        .chat(reply().text("Neither happened.").done());
    let h = Harness::new(script);
    let output = h.exec("do both", &["--approval", "ask", "--json"]);
    let events = json_lines(&output);
    let denied = of_type(&events, "run_result")[0]["denied"].clone();
    let kinds: Vec<&str> = denied
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["memory", "approval"], "{denied:#}");

    let script = Script::new()
        .chat(
            reply()
                .tool_call("update_memory", json!({"action": "add", "entry": "x"}))
                .tool_call("write_file", json!({"path": "a.txt", "content": "a\n"}))
                .done(),
        )
        .chat(reply().text("Neither happened.").done());
    let h = Harness::new(script);
    let output = h.exec("do both", &["--approval", "ask"]);
    let shown = format!("{}{}", stdout(&output), stderr(&output));
    assert!(
        shown.contains(&format!(
            "  to allow them: rerun with --approval auto (in chat: /approval auto), or add a \
             [permissions] allow rule to .lathe/config.toml (see `lathe policy`)\n{MEMORY_HINT}"
        )),
        "{shown}"
    );
}

#[test]
fn show_edit_and_clear() {
    let h = Harness::new(Script::new());
    let out = memory(&h, &["show"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("No project memory yet"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains(&h.ws.join(MEMORY).display().to_string()));

    // No editor: what to do instead.
    let out = memory(&h, &["edit"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("set $VISUAL or $EDITOR"),
        "{}",
        stderr(&out)
    );

    // A real editor: a script that appends an entry to the file it is given.
    let editor = h.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf -- '- Written in the editor.\\n' >> \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let edit = |h: &Harness, editor: &str| {
        h.lathe()
            .args(["memory", "edit"])
            .env_remove("VISUAL")
            .env("EDITOR", editor)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = edit(&h, editor.to_str().unwrap());
    assert_exit(&out, 0);
    assert_eq!(h.read(MEMORY), "- Written in the editor.\n");
    assert!(stdout(&out).contains("(1 entry)"), "{}", stdout(&out));
    // An editor that fails changes nothing.
    let out = edit(&h, "false");
    assert_exit(&out, 1);
    assert!(
        stderr(&out).contains("the memory was not changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(h.read(MEMORY), "- Written in the editor.\n");

    let out = memory(&h, &["show"]);
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "- Written in the editor.\n");

    // Nobody to ask: --yes, or nothing happens.
    let out = memory(&h, &["clear"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
    assert_eq!(h.read(MEMORY), "- Written in the editor.\n");
    let out = memory(&h, &["clear", "--yes"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("1 entry removed"), "{}", stdout(&out));
    assert_eq!(h.read(MEMORY), "");
    let out = memory(&h, &["clear", "--yes"]);
    assert!(stdout(&out).contains("already empty"), "{}", stdout(&out));
}

#[test]
fn the_memory_path_comes_from_the_user_config_and_from_a_workspace_file_only_once_trusted() {
    let h = Harness::new(Script::new());
    h.write("notes/mine.md", "- from the user's path\n");
    h.write("docs/theirs.md", "- from the repository's path\n");
    h.write(MEMORY, "- the default\n");
    let show = |h: &Harness| {
        let out = memory(h, &["show"]);
        assert_exit(&out, 0);
        (stdout(&out), stderr(&out))
    };
    assert_eq!(show(&h).0, "- the default\n");
    std::fs::write(
        h.dir.path().join("config/config.toml"),
        "[memory]\npath = \"notes/mine.md\"\n",
    )
    .unwrap();
    assert_eq!(show(&h).0, "- from the user's path\n");
    h.write(
        ".lathe/config.toml",
        "[memory]\npath = \"docs/theirs.md\"\n",
    );
    let (out, err) = show(&h);
    assert_eq!(out, "- from the user's path\n", "untrusted: left out");
    assert!(err.contains("memory.path"), "the notice names it: {err}");
    h.trust();
    assert_eq!(show(&h).0, "- from the repository's path\n");
    // A path that leads out of the workspace is a configuration error.
    std::fs::remove_file(h.ws.join(".lathe/config.toml")).unwrap();
    std::fs::write(
        h.dir.path().join("config/config.toml"),
        "[memory]\npath = \"../out.md\"\n",
    )
    .unwrap();
    let out = memory(&h, &["show"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("leads out of the workspace"),
        "{}",
        stderr(&out)
    );
}
