//! The repeat guard in the executor loop, with the built-in tools running real commands and
//! reading real files: polling a running command is progress, a call that keeps getting the
//! same answer is refused, and so is a round of calls that does.

use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::events::RunStatus;
use lathe_agent::executor::RunOutcome;
use lathe_testkit::{Part, Response, Script, ollama};

use crate::common::{Harness, MODEL, Run};

/// Words every refusal of the guard uses.
const NOT_RUN: &str = "was not run again";

/// An agent with every built-in tool, in a workspace holding `a.txt` and `b.txt`.
fn start(script: Script) -> Run {
    Harness::new()
        .script(script)
        .file("a.txt", "alpha\n")
        .file("b.txt", "beta\n")
        .start()
}

/// A turn that makes one call.
fn call(name: &str, arguments: Value) -> Response {
    ollama::turn(MODEL).tool_call(name, arguments).done()
}

/// The same turn, sent after the model "thought" for `pause`: the command runs meanwhile.
fn call_after(pause: Duration, name: &str, arguments: Value) -> Response {
    let mut response = call(name, arguments);
    response
        .parts
        .insert(0, Part::DelayMs(u64::try_from(pause.as_millis()).unwrap()));
    response
}

fn answer(text: &str) -> Response {
    ollama::turn(MODEL).text(text).done()
}

/// The tool results the model was sent, in order, read from the last request.
fn results(run: &Run) -> Vec<String> {
    let bodies = run.server.chat_bodies();
    let messages = bodies.last().unwrap()["messages"]
        .as_array()
        .unwrap()
        .clone();
    messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect()
}

async fn run_task(run: &mut Run, task: &str) -> RunOutcome {
    run.agent.run(task, &CancellationToken::new()).await
}

#[tokio::test]
async fn polling_a_running_command_is_never_refused_while_its_output_changes() {
    // Six lines, one every 0.3 s; the model reads the whole output every 0.35 s, then once
    // more after the command has ended, always with the same arguments, as the tool's hint
    // says.
    let poll = json!({"id": 1});
    let mut script = Script::new().chat(call(
        "shell",
        json!({
            "command": "for i in 1 2 3 4 5 6; do echo $i; sleep 0.3; done",
            "background": true,
        }),
    ));
    for _ in 0..4 {
        script = script.chat(call_after(
            Duration::from_millis(350),
            "command_output",
            poll.clone(),
        ));
    }
    script = script
        .chat(call_after(
            Duration::from_millis(2500),
            "command_output",
            poll.clone(),
        ))
        .chat(answer("It counted to six."));
    let mut run = start(script);
    let outcome = run_task(&mut run, "run the counter and tell me what it printed").await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.turns, 7);
    let results = results(&run);
    assert_eq!(results.len(), 6, "{results:#?}");
    assert!(results.iter().all(|r| !r.contains(NOT_RUN)), "{results:#?}");
    let last = results.last().unwrap();
    assert!(
        last.contains('6') && !last.contains("still running"),
        "{last}"
    );
}

#[tokio::test]
async fn reading_a_finished_command_again_and_again_is_refused_then_stopped() {
    let poll = json!({"id": 1});
    let mut script = Script::new().chat(call("shell", json!({"command": "echo done"})));
    for _ in 0..4 {
        script = script.chat(call("command_output", poll.clone()));
    }
    let mut run = start(script);
    let outcome = run_task(&mut run, "run it").await;
    assert_eq!(outcome.status, RunStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.turns, 5);
    let results = results(&run);
    let polls = &results[1..];
    assert!(polls[..2].iter().all(|r| r.contains("done")), "{polls:#?}");
    assert!(polls[2].contains("3 times in a row"), "{}", polls[2]);
    assert!(outcome.message.unwrap().contains("4 times in a row"));
}

#[tokio::test]
async fn an_alternation_of_two_reads_is_stopped_long_before_the_turn_limit() {
    let mut script = Script::new();
    for path in ["a.txt", "b.txt"].iter().cycle().take(50) {
        script = script.chat(call("read_file", json!({ "path": path })));
    }
    let mut run = start(script);
    let outcome = run_task(&mut run, "compare a.txt and b.txt").await;
    assert_eq!(outcome.status, RunStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.turns, 8);
    let message = outcome.message.unwrap();
    assert!(message.contains("same 2 calls"), "{message}");
    let results = results(&run);
    assert!(
        results[..5].iter().all(|r| !r.contains(NOT_RUN)),
        "{results:#?}"
    );
    let refusal = &results[5];
    assert!(refusal.contains(NOT_RUN), "{refusal}");
    assert!(
        refusal.contains(r#"`read_file` {"path":"a.txt"}, then `read_file` {"path":"b.txt"}"#),
        "{refusal}"
    );
    assert!(
        refusal.contains("Use the results you already have"),
        "{refusal}"
    );
}
