//! The agent with checkpoints: each model turn's calls run between the hook's begin and end,
//! turns are numbered across the session's tasks (and on from a resumed session's), a turn
//! that changed files is announced with its checkpoint, and rewind cuts the conversation back
//! to before a turn. Real files, the real shadow git repository, the scripted model server.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use lathe_agent::approval::ApprovalMode;
use lathe_agent::events::{Checkpoint, Event};
use lathe_agent::message::Message;
use lathe_checkpoint::{Force, UndoTarget};
use lathe_testkit::{Response, Script, ollama};

use crate::common::{Harness, MODEL, Run};

/// The harness of these tests: the built-in tools in `full` mode, a sink that stores nothing.
fn harness(script: Script) -> Harness {
    Harness::new()
        .script(script)
        .approval(ApprovalMode::Full)
        .detached()
}

/// The checkpoints the run announced.
fn created(run: &Run) -> Vec<Checkpoint> {
    run.events()
        .into_iter()
        .filter_map(|e| match e {
            Event::CheckpointCreated(c) => Some(c),
            _ => None,
        })
        .collect()
}

fn write(path: &str, content: &str) -> ollama::OllamaTurn {
    ollama::turn(MODEL).tool_call("write_file", json!({"path": path, "content": content}))
}

/// Two tasks of two turns each: a write, then a word.
fn two_tasks() -> Script {
    Script::new()
        .chat(write("a.txt", "one\n").done())
        .chat(ollama::turn(MODEL).text("Wrote a.").done())
        .chat(write("b.txt", "two\nlines\n").done())
        .chat(ollama::turn(MODEL).text("Wrote b.").done())
}

#[tokio::test]
async fn turns_are_numbered_across_the_tasks_of_a_session() {
    let mut s = harness(two_tasks()).checkpoints().start();
    let first = s.agent.run("write a", &CancellationToken::new()).await;
    let second = s.agent.run("write b", &CancellationToken::new()).await;
    let created = created(&s);
    let turns: Vec<u32> = created.iter().map(|c| c.turn).collect();
    assert_eq!(
        turns,
        [1, 3],
        "the second task's first turn is the session's third"
    );
    assert_eq!(created[1].files.len(), 1);
    assert_eq!(created[1].files[0].path, "b.txt");
    assert_eq!((created[1].added, created[1].removed), (2, 0));
    assert_eq!(first.report.checkpoints, [created[0].step.clone()]);
    assert_eq!(second.report.checkpoints, [created[1].step.clone()]);
    assert_eq!(s.agent.executor().session_turns(), 4);
    // The steps the checkpoints recorded are the ones announced.
    let steps: Vec<(String, u32)> = s
        .checkpoints()
        .steps()
        .unwrap()
        .into_iter()
        .map(|st| (st.id, st.turn))
        .collect();
    assert_eq!(
        steps,
        [(created[0].step.clone(), 1), (created[1].step.clone(), 3)]
    );
    // Undoing the newest turn takes back the second task's file only.
    s.checkpoints()
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(s.read("b.txt"), None);
    assert_eq!(s.read("a.txt").as_deref(), Some("one\n"));
}

#[tokio::test]
async fn a_resumed_session_numbers_on() {
    let mut s = harness(
        Script::new()
            .chat(write("a.txt", "x\n").done())
            .chat(ollama::turn(MODEL).text("Done.").done()),
    )
    .checkpoints()
    .turns_before(5)
    .start();
    s.agent.run("write a", &CancellationToken::new()).await;
    assert_eq!(created(&s)[0].turn, 6);
}

#[tokio::test]
async fn without_checkpoints_nothing_is_recorded() {
    let mut s = harness(
        Script::new()
            .chat(write("a.txt", "x\n").done())
            .chat(ollama::turn(MODEL).text("Done.").done()),
    )
    .start();
    let outcome = s.agent.run("write a", &CancellationToken::new()).await;
    assert_eq!(s.read("a.txt").as_deref(), Some("x\n"));
    assert!(created(&s).is_empty());
    assert!(outcome.report.checkpoints.is_empty());
    assert!(s.checkpoints().steps().unwrap().is_empty());
}

#[tokio::test]
async fn rewind_cuts_the_conversation_back_to_before_a_task() {
    let mut s = harness(two_tasks().chat(ollama::turn(MODEL).text("Fresh.").done()))
        .checkpoints()
        .start();
    s.agent.run("write a", &CancellationToken::new()).await;
    let after_first = s.agent.executor().history().to_vec();
    s.agent.run("write b", &CancellationToken::new()).await;
    let cut = s.agent.rewind(3).expect("turn 3 ran here");
    assert!(
        matches!(&cut[0], Message::User { content, .. } if content == "write b"),
        "{cut:?}"
    );
    assert_eq!(s.agent.executor().history(), after_first.as_slice());
    assert!(
        s.agent.rewind(3).is_none(),
        "turn 3 is gone from the conversation"
    );
    s.agent
        .run("something else", &CancellationToken::new())
        .await;
    let bodies = s.server.chat_bodies();
    let last = bodies.last().unwrap().to_string();
    assert!(!last.contains("write b"), "{last}");
    assert!(
        last.contains("something else") && last.contains("write a"),
        "{last}"
    );
    // Numbers are not reused: the new task's turn is the fifth.
    assert_eq!(s.agent.executor().session_turns(), 5);
}

#[tokio::test]
async fn rewinding_a_task_merged_into_a_failed_one_gives_that_message_back() {
    // The first task's only answer is a refusal: the run fails, and the history ends with its
    // message; the next task joins that message.
    let script = Script::new()
        .chat(Response::json(400, &json!({"error": "bad request"})))
        .chat(write("a.txt", "x\n").done())
        .chat(ollama::turn(MODEL).text("Done.").done());
    let mut s = harness(script).checkpoints().start();
    s.agent.run("first", &CancellationToken::new()).await;
    let after_failure = s.agent.executor().history().to_vec();
    assert!(
        matches!(after_failure.last(), Some(Message::User { content, .. }) if content == "first"),
        "{after_failure:?}"
    );
    s.agent.run("second", &CancellationToken::new()).await;
    let turn = created(&s)[0].turn;
    s.agent
        .rewind(turn)
        .expect("the second task's turn ran here");
    assert_eq!(s.agent.executor().history(), after_failure.as_slice());
}
