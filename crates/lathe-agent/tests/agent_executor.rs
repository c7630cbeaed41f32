//! The executor against the scripted model server over real HTTP, with small tools of the
//! test's own and a real SQLite store.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::events::{Event, RunStatus};
use lathe_agent::executor::{ExecutorConfig, NUDGE};
use lathe_agent::provider::ToolProtocol;
use lathe_agent::sink::stored_history;
use lathe_runtime::{Profile, Registry};
use lathe_store::SessionStatus;
use lathe_testkit::Script;

use crate::common::tools::cat_and_put;
use crate::common::{Harness, Run, reply};

fn start(script: Script, configure: impl FnOnce(&mut ExecutorConfig)) -> Run {
    start_with(script, |_| {}, configure)
}

/// An agent with `cat`, `put` and the tools `tools` adds, in `auto` mode, over a workspace
/// holding `notes.txt`; on the full profile whatever the window, as these tests were written.
pub(crate) fn start_with(
    script: Script,
    tools: impl FnOnce(&mut Registry),
    configure: impl FnOnce(&mut ExecutorConfig),
) -> Run {
    let mut registry = cat_and_put();
    tools(&mut registry);
    Harness::new()
        .script(script)
        .tools(registry)
        .file("notes.txt", "hello\n")
        .profile(Profile::Full)
        .config(configure)
        .start()
}

#[tokio::test]
async fn reads_writes_and_finishes_with_a_faithful_history() {
    let script = Script::new()
        .chat(
            reply()
                .thinking("look first")
                .tool_call("cat", json!({"path": "notes.txt"}))
                .done(),
        )
        .chat(
            reply()
                .tool_call_with_id(
                    "c7",
                    "put",
                    json!({"path": "out.txt", "content": "HELLO\n"}),
                )
                .done(),
        )
        .chat(reply().text("Done: wrote out.txt. [TASK_COMPLETE]").done());
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run(
            "create out.txt with notes.txt in capitals",
            &CancellationToken::new(),
        )
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.turns, 3);
    assert_eq!(outcome.answer, "Done: wrote out.txt.");
    assert_eq!(
        std::fs::read_to_string(run.root.join("out.txt")).unwrap(),
        "HELLO\n"
    );

    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(&run.root.canonicalize().unwrap().display().to_string()),
        "{system}"
    );
    assert_eq!(
        bodies[0]["messages"][1],
        json!({"role": "user", "content": "create out.txt with notes.txt in capitals"})
    );
    assert_eq!(bodies[0]["tools"].as_array().unwrap().len(), 2);
    // The second request carries the assistant turn as received and the result by name.
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(second[2]["thinking"], "look first");
    assert_eq!(
        second[2]["tool_calls"][0]["function"]["arguments"],
        json!({"path": "notes.txt"})
    );
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["tool_name"], "cat");
    assert_eq!(second[3]["content"], "hello\n");
    // The third: the id given by the model goes back with its result.
    let third = bodies[2]["messages"].as_array().unwrap();
    assert_eq!(third[5]["tool_call_id"], "c7");
    assert_eq!(third[5]["content"], "wrote out.txt");

    // The store holds the same history and every event shown, in order.
    let stored = stored_history(&run.store, &run.session).unwrap();
    assert_eq!(stored, run.history());
    let stored_events: Vec<Value> = run
        .store
        .events(&run.session)
        .unwrap()
        .into_iter()
        .map(|e| e.payload)
        .collect();
    let shown: Vec<Value> = run
        .events
        .lock()
        .unwrap()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(stored_events, shown);
    assert_eq!(
        run.store.session(run.session.as_str()).unwrap().status,
        SessionStatus::Completed
    );
    let events = run.events.lock().unwrap();
    assert!(matches!(
        &events[events.len() - 2],
        Event::RunFinished {
            status: RunStatus::Finished,
            turns: 3,
            ..
        }
    ));
    let Some(Event::RunResult(report)) = events.last() else {
        panic!("the last event is the report: {:?}", events.last())
    };
    assert_eq!(report.turns, 3);
    assert_eq!(report.session_id.as_deref(), Some(run.session.as_str()));
}

/// Issue 14: a completion marker written next to a call did not wait for the call's result.
#[tokio::test]
async fn a_marker_next_to_a_call_waits_for_the_result() {
    let script = Script::new()
        .chat(
            reply()
                .text("Tests pass. [TASK_COMPLETE]")
                .tool_call("cat", json!({"path": "notes.txt"}))
                .done(),
        )
        .chat(
            reply()
                .text("Checked again. [TASK_COMPLETE]")
                .tool_call("cat", json!({"path": "missing.txt"}))
                .done(),
        )
        .chat(
            reply()
                .text("notes.txt says hello; missing.txt does not exist. [TASK_COMPLETE]")
                .done(),
        );
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("what do the notes say?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.turns, 3);
    assert_eq!(
        outcome.answer,
        "notes.txt says hello; missing.txt does not exist."
    );
    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    // Each later turn carries the result of the call made next to the marker.
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(second.last().unwrap()["role"], "tool");
    assert_eq!(second.last().unwrap()["content"], "hello\n");
    let third = bodies[2]["messages"].as_array().unwrap();
    let result = third.last().unwrap()["content"].as_str().unwrap();
    assert!(result.contains("cannot read missing.txt"), "{result}");
    // The marker never reaches the user nor the history.
    assert_eq!(third[2]["content"], "Tests pass.");
    let shown = run.shown();
    assert!(!shown.contains("TASK_COMPLETE"), "{shown}");
    let stored = stored_history(&run.store, &run.session).unwrap();
    // (The system prompt names the marker; what the model wrote holds it nowhere.)
    assert!(
        stored[1..]
            .iter()
            .all(|m| !m.content().contains("TASK_COMPLETE"))
    );
}

/// Issue 14: in the text protocol, an invented result and the answer built on it were shown
/// and kept, and with the marker they became the final answer.
#[tokio::test]
async fn an_invented_result_never_reaches_the_user_nor_the_history() {
    let script = Script::new()
        .chat(
            reply()
                .text(
                    "Reading.\n<tool_call>\n{\"name\": \"cat\", \"arguments\": {\"path\": \"notes.txt\"}}\n</tool_call>\n\
                     <tool_result name=\"cat\">\nGOODBYE\n</tool_result>\nThe notes say GOODBYE. [TASK_COMPLETE]",
                )
                .done()
                .rechunk(7),
        )
        .chat(reply().text("The notes say hello.").done());
    let mut run = start(script, |c| c.tool_protocol = ToolProtocol::Text);
    let outcome = run
        .agent
        .run("what do the notes say?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.answer, "The notes say hello.");
    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(
        bodies[0]["options"]["stop"],
        json!(["</tool_call>", "<tool_result"])
    );
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(
        second[2]["content"],
        "Reading.\n\n<tool_call>\n{\"name\":\"cat\",\"arguments\":{\"path\":\"notes.txt\"}}\n</tool_call>"
    );
    assert_eq!(
        second[3]["content"],
        "<tool_result name=\"cat\">\nhello\n\n</tool_result>"
    );
    let shown = run.shown();
    assert_eq!(shown, "Reading.\nThe notes say hello.");
    let stored = stored_history(&run.store, &run.session).unwrap();
    assert_eq!(stored, run.history());
    for message in &stored[1..] {
        assert!(!message.content().contains("GOODBYE"), "{message:?}");
        assert!(!message.content().contains("<tool_result"), "{message:?}");
    }
}

#[tokio::test]
async fn the_turn_limit_ends_the_run_and_says_so() {
    let mut script = Script::new();
    for i in 0..5 {
        script = script.chat(
            reply()
                .tool_call("cat", json!({"path": format!("f{i}")}))
                .done(),
        );
    }
    let mut run = start(script, |c| c.max_turns = 2);
    let outcome = run
        .agent
        .run("look around", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::MaxTurns);
    assert_eq!(outcome.turns, 2);
    assert!(outcome.message.unwrap().contains("limit (2) was hit"));
    assert_eq!(run.server.chat_bodies().len(), 2);
    assert_eq!(
        run.store.session(run.session.as_str()).unwrap().status,
        SessionStatus::MaxTurns
    );
}

#[tokio::test]
async fn a_repeated_call_is_refused_in_band_then_the_run_stops() {
    let mut script = Script::new();
    for _ in 0..4 {
        script = script.chat(
            reply()
                .tool_call("put", json!({"path": "n.txt", "content": "x"}))
                .done(),
        );
    }
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("write n.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Failed, "{outcome:?}");
    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 4);
    let last = bodies[3]["messages"].as_array().unwrap();
    let third_result = last.last().unwrap()["content"].as_str().unwrap();
    assert!(third_result.contains("3 times in a row"), "{third_result}");
    assert!(outcome.message.unwrap().contains("4 times in a row"));
}

#[tokio::test]
async fn a_change_task_that_wrote_nothing_is_nudged_once() {
    let script = Script::new()
        .chat(reply().text("Done, I've fixed the typo.").done())
        .chat(reply().text("Really, nothing to change.").done());
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("fix the typo in notes.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished);
    assert_eq!(outcome.turns, 2);
    let bodies = run.server.chat_bodies();
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(
        second.last().unwrap(),
        &json!({"role": "user", "content": NUDGE})
    );
}

#[tokio::test]
async fn a_question_is_not_nudged() {
    let script = Script::new().chat(reply().text("It says hello.").done());
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("what does notes.txt say?", &CancellationToken::new())
        .await;
    assert_eq!((outcome.status, outcome.turns), (RunStatus::Finished, 1));
}

#[tokio::test]
async fn old_results_are_shortened_near_the_window() {
    let mut script = Script::new();
    let big = "line of text for the context test\n".repeat(200);
    for i in 0..6 {
        script = script.chat(
            reply()
                .tool_call("cat", json!({"path": format!("big{i}.txt")}))
                .done(),
        );
    }
    script = script.chat(reply().text("read them all").done());
    let mut run = start(script, |c| c.context_window = Some(8_000));
    for i in 0..6 {
        std::fs::write(run.root.join(format!("big{i}.txt")), &big).unwrap();
    }
    let outcome = run
        .agent
        .run("read the big files", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished);
    let bodies = run.server.chat_bodies();
    let last = bodies.last().unwrap()["messages"].as_array().unwrap();
    let results: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(results.len(), 6);
    assert!(
        results[0].starts_with("[shortened to save context: cat path=big0.txt;"),
        "{}",
        results[0]
    );
    assert_eq!(*results.last().unwrap(), big, "the newest result is whole");
    // The store keeps the original.
    let stored = stored_history(&run.store, &run.session).unwrap();
    assert!(
        stored
            .iter()
            .filter(|m| matches!(m, lathe_agent::message::Message::Tool(_)))
            .all(|m| m.content() == big)
    );
}

#[tokio::test]
async fn a_server_error_fails_the_run_with_its_message() {
    // Nothing is scripted for the chat: the server answers 500 naming the missing route.
    let mut run = start(Script::new(), |_| {});
    let outcome = run.agent.run("hi", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Failed);
    let message = outcome.message.unwrap();
    assert!(message.contains("500"), "{message}");
    assert!(
        run.events
            .lock()
            .unwrap()
            .iter()
            .any(|e| matches!(e, Event::Error { message: m } if *m == message))
    );
    assert_eq!(
        run.store.session(run.session.as_str()).unwrap().status,
        SessionStatus::Failed
    );
}

#[tokio::test]
async fn resuming_answers_calls_left_without_a_result() {
    use lathe_agent::message::{AssistantMessage, Message, ToolCall};
    let script = Script::new().chat(reply().text("Picking up.").done());
    let mut run = start(script, |_| {});
    let call = ToolCall {
        id: Some("k1".into()),
        name: "cat".into(),
        arguments: json!({"path": "x"}),
    };
    run.agent.resume(vec![
        Message::system("old prompt"),
        Message::user("first task"),
        Message::Assistant(AssistantMessage {
            tool_calls: vec![call.clone()],
            ..AssistantMessage::default()
        }),
    ]);
    let outcome = run.agent.run("go on", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished);
    let body = &run.server.chat_bodies()[0];
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.iter().filter(|m| m["role"] == "system").count(), 1);
    assert_ne!(messages[0]["content"], "old prompt");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "k1");
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("interrupted")
    );
    assert_eq!(messages[4], json!({"role": "user", "content": "go on"}));
}
