//! Project commands (`.lathe/commands/NAME.md`) through `lathe exec /NAME args`: the prompt the
//! model gets, `allowed-tools` narrowing what it is offered and may call, the model the
//! command names, and `/NAME` with no such command.

use serde_json::json;

use lathe_testkit::Script;

use crate::agent_harness::*;

fn tool_names(body: &serde_json::Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_project_command_runs_with_its_arguments_and_only_its_tools() {
    let h = Harness::new(
        Script::new()
            .chat(
                reply()
                    .tool_call("shell", json!({"command": "touch made"}))
                    .done(),
            )
            .chat(reply().text("Reviewed. [TASK_COMPLETE]").done()),
    );
    h.write(
        ".lathe/commands/review.md",
        "---\ndescription: Review a file\nallowed-tools: [read_file, Grep]\n---\nReview \
         $ARGUMENTS for bugs.\n",
    );
    // `full` would run the command: only the narrowing stops it.
    let output = h.exec("/review src/a.rs", &["--approval", "full"]);
    assert_exit(&output, 0);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let first = messages(&bodies[0]);
    assert_eq!(first[1]["content"], "Review src/a.rs for bugs.");
    assert_eq!(tool_names(&bodies[0]), ["grep", "read_file"]);
    assert!(!h.ws.join("made").exists(), "shell ran");
    let second = messages(&bodies[1]);
    let result = second.last().unwrap()["content"].as_str().unwrap();
    assert!(
        result.contains(
            "`shell` is not available now: the command /review allows only the tools in its \
             allowed-tools. Use one of: `grep`, `read_file`."
        ),
        "{result}"
    );
}

#[test]
fn the_model_a_command_names_is_the_one_asked() {
    let h = Harness::new(Script::new().chat(reply().text("Hi. [TASK_COMPLETE]").done()));
    h.write(
        ".lathe/commands/quick.md",
        "---\nmodel: tiny:1b\n---\nSay hi to $1.\n",
    );
    let output = h.exec("/quick Ada Lovelace", &[]);
    assert_exit(&output, 0);
    let bodies = h.bodies();
    assert_eq!(bodies[0]["model"], "tiny:1b", "{:?}", bodies[0]);
    assert_eq!(messages(&bodies[0])[1]["content"], "Say hi to Ada.");
}

#[test]
fn a_slash_name_that_is_no_command_is_refused_and_a_path_is_a_task() {
    let h = Harness::new(Script::new().chat(reply().text("It is a file. [TASK_COMPLETE]").done()));
    h.write(".lathe/commands/review.md", "Review.\n");
    let output = h.exec("/reveiw src", &[]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let err = stderr(&output);
    assert!(
        err.contains(
            "no project command /reveiw: the commands are /review; to send a task that starts \
             with `/`, start it with a space"
        ),
        "{err}"
    );
    assert!(h.bodies().is_empty(), "nothing was sent");

    let output = h.exec("/etc/hostname: what is it?", &[]);
    assert_exit(&output, 0);
    assert_eq!(
        messages(&h.bodies()[0])[1]["content"],
        "/etc/hostname: what is it?"
    );
}

#[test]
fn a_project_command_in_chat_is_listed_run_narrowed_for_its_turn_and_then_lifted() {
    use crate::pty::Terminal;
    let h = Harness::new(
        Script::new()
            .chat(reply().text("Looked at it.").done())
            .chat(reply().text("Plain answer.").done()),
    );
    h.write(
        ".lathe/commands/review.md",
        "---\ndescription: Review a file for bugs\nargument-hint: FILE\nallowed-tools: \
         read_file\n---\nReview $ARGUMENTS for bugs.\n",
    );
    let mut term = Terminal::start(&h, &["--approval", "read-only"]);
    term.wait_for("> ");
    term.type_line("/help");
    term.wait_for("/review FILE     Review a file for bugs (workspace command)");
    term.type_line("/review src/main.rs");
    term.wait_for("Looked at it.");
    term.type_line("and now without it");
    term.wait_for("Plain answer.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    let first = messages(&bodies[0]);
    assert_eq!(
        first.last().unwrap()["content"],
        "Review src/main.rs for bugs."
    );
    assert_eq!(tool_names(&bodies[0]), ["read_file"]);
    // The next turn has every tool back.
    let after = tool_names(&bodies[1]);
    assert!(
        after.contains(&"grep".to_owned()) && after.len() > 1,
        "{after:?}"
    );
}
