//! One model turn against faults of the stream, over real HTTP to the scripted model server: a
//! connection lost mid-answer, a server that goes silent, a model that repeats itself for
//! ever, a reply longer than the window, Ctrl-C mid-answer; and the history's shape after each
//! (never two user or two assistant messages in a row, never a half turn).

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;

use lathe_agent::events::{Event, RunStatus};
use lathe_agent::executor::ExecutorConfig;
use lathe_agent::message::{AssistantMessage, Message};
use lathe_agent::sink::stored_history;
use lathe_runtime::Profile;
use lathe_testkit::{Response, Script};

use crate::common::tools::cat;
use crate::common::{Run, reply};

/// An agent with `cat` over a workspace holding `notes.txt` (on the full profile whatever the
/// window, as these tests were written) against `script`, retrying cut answers at once;
/// `on_event` also sees each event as it is shown.
fn start_with(
    script: Script,
    configure: impl FnOnce(&mut ExecutorConfig),
    on_event: impl Fn(&Event) + Send + Sync + 'static,
) -> Run {
    crate::common::Harness::new()
        .script(script)
        .tools(cat())
        .file("notes.txt", "hello\n")
        .profile(Profile::Full)
        .config(|c| c.stream_retry_delay = Duration::from_millis(1))
        .config(configure)
        .on_event(on_event)
        .start()
}

fn start(script: Script, configure: impl FnOnce(&mut ExecutorConfig)) -> Run {
    start_with(script, configure, |_| {})
}

/// A reply that shows some text, then loses its connection.
fn cut_reply(text: &str) -> Response {
    reply().text(text).unfinished().then_drop_connection()
}

/// No two user or two assistant messages in a row, in memory and as stored, read back.
fn assert_alternates(run: &Run) {
    let roles = |history: &[Message]| -> Vec<&'static str> {
        history
            .iter()
            .map(|m| match m {
                Message::System { .. } => "system",
                Message::User { .. } => "user",
                Message::Assistant(_) => "assistant",
                Message::Tool(_) => "tool",
            })
            .collect()
    };
    let mut resumed = run.again().detached().start();
    resumed
        .agent
        .resume(stored_history(&run.store, &run.session).unwrap());
    for history in [run.history(), resumed.history()] {
        let roles = roles(history);
        for pair in roles.windows(2) {
            assert!(
                !(pair[0] == pair[1] && matches!(pair[0], "user" | "assistant")),
                "{roles:?}"
            );
        }
    }
    assert_eq!(resumed.history()[1..], run.history()[1..]);
}

fn restarts(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::AnswerRestarted { message, .. } => Some(message.clone()),
            _ => None,
        })
        .collect()
}

/// Issue 14: a connection lost mid-answer failed the run and kept the half answer.
#[tokio::test]
async fn an_answer_cut_before_any_call_is_asked_for_again_and_its_half_is_dropped() {
    let script = Script::new()
        .chat(cut_reply("The notes say hel"))
        .chat(reply().text("The notes say hello.").done());
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("what do the notes say?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.answer, "The notes say hello.");
    assert_eq!(
        restarts(&run.events()),
        ["connection to the model lost mid-answer; retrying (1 of 2)"]
    );
    // The same request again: the half answer never went into the history.
    assert_eq!(run.messages(0), run.messages(1));
    let history = run.history();
    assert_eq!(history.len(), 3, "{history:?}");
    assert_eq!(history[2], Message::assistant("The notes say hello."));
    assert_alternates(&run);
}

/// Issue 14: when the retries run out the run fails plainly, the history holds no half turn,
/// and the next task's message is merged with the failed one (no two user messages in a row).
#[tokio::test]
async fn when_the_retries_run_out_the_run_fails_and_the_next_task_merges() {
    let script = Script::new()
        .chat(cut_reply("one"))
        .chat(cut_reply("two"))
        .chat(cut_reply("three"))
        .chat(reply().text("Hello.").done());
    let mut run = start(script, |_| {});
    let outcome = run.agent.run("first task", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Failed, "{outcome:?}");
    let message = outcome.message.unwrap();
    assert!(
        message.starts_with("connection to the model lost mid-answer"),
        "{message}"
    );
    assert!(message.contains("gave up after 3 tries"), "{message}");
    assert_eq!(
        restarts(&run.events()),
        [
            "connection to the model lost mid-answer; retrying (1 of 2)",
            "connection to the model lost mid-answer; retrying (2 of 2)"
        ]
    );
    assert_eq!(run.history().last(), Some(&Message::user("first task")));
    assert_alternates(&run);

    let outcome = run
        .agent
        .run("second task", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let messages = run.messages(3);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "first task\n\nsecond task"})
    );
    assert_alternates(&run);
}

/// Issue 14: an answer cut after a complete call keeps the call (it runs, once) and drops the
/// cut rest.
#[tokio::test]
async fn an_answer_cut_after_a_complete_call_runs_that_call() {
    let script = Script::new()
        .chat(
            reply()
                .text("Reading.")
                .tool_call("cat", json!({"path": "notes.txt"}))
                .text("And then I will")
                .unfinished()
                .then_drop_connection(),
        )
        .chat(reply().text("They say hello.").done());
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("what do the notes say?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(run.server.chat_bodies().len(), 2);
    assert!(restarts(&run.events()).is_empty());
    let notices = run.notices();
    assert!(
        notices.iter().any(|n| n
            == "connection to the model lost mid-answer; running the 1 complete tool call it had sent (the rest of the answer is lost)"),
        "{notices:?}"
    );
    let second = run.messages(1);
    assert_eq!(second[2]["content"], "Reading.");
    assert_eq!(second[2]["tool_calls"][0]["function"]["name"], "cat");
    assert_eq!(second[3]["role"], "tool");
    assert_eq!(second[3]["content"], "hello\n");
    assert_alternates(&run);
}

/// Issue 14: a stalled stream was silent for 600 s, then failed. Now silence is reported while
/// it lasts, and the idle timeout counts as a cut answer.
#[tokio::test]
async fn silence_is_reported_and_the_idle_timeout_asks_again() {
    let script = Script::new()
        .chat(
            reply()
                .text("Let me see")
                .unfinished()
                .delay(Duration::from_secs(120))
                .text("never sent"),
        )
        .chat(reply().text("Hello.").done());
    let mut run = start(script, |config| {
        config.idle_timeout = Some(Duration::from_secs(3));
        config.waiting_every = Duration::from_secs(1);
    });
    let outcome = run.agent.run("say hello", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.answer, "Hello.");
    let events = run.events();
    let waited: Vec<u64> = events
        .iter()
        .filter_map(|e| match e {
            Event::Waiting { seconds } => Some(*seconds),
            _ => None,
        })
        .collect();
    assert_eq!(waited, [1, 2], "{events:?}");
    assert_eq!(
        restarts(&events),
        ["the model sent nothing for 3 s, the idle timeout; retrying (1 of 2)"]
    );
    assert_eq!(run.messages(0), run.messages(1));
    assert_alternates(&run);
}

/// Issue 14: with no retries left, the idle timeout fails the run with a message that names
/// the setting, also while waiting for the first byte.
#[tokio::test]
async fn the_idle_timeout_before_the_first_token_names_its_setting() {
    let script = Script::new().chat(
        Response::new(200)
            .delay(Duration::from_secs(120))
            .text("{}\n"),
    );
    let mut run = start(script, |config| {
        config.idle_timeout = Some(Duration::from_secs(1));
        config.stream_retries = 0;
    });
    let outcome = run.agent.run("say hello", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Failed, "{outcome:?}");
    let message = outcome.message.unwrap();
    assert!(
        message.starts_with(
            "the model sent nothing for 1 s, the idle timeout (raise [model] idle_timeout"
        ),
        "{message}"
    );
    assert!(message.contains("gave up after 1 try"), "{message}");
    assert_eq!(run.history().last(), Some(&Message::user("say hello")));
}

/// Issue 14: a tiny model repeated itself for nine minutes. The loop is stopped early (the
/// server sees the client hang up), cut from the history, and the model is told.
#[tokio::test]
async fn a_reply_caught_in_a_loop_is_stopped_and_the_model_told() {
    const ENDLESS: u64 = 16 << 20;
    let script = Script::new()
        .chat(
            reply()
                .text("Let me look.\n")
                .repeating("I will read the file.\n", ENDLESS),
        )
        .chat(reply().text("The notes say hello.").done());
    let mut run = start(script, |_| {});
    let outcome = run
        .agent
        .run("what do the notes say?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.answer, "The notes say hello.");
    // The client hung up long before the end of the endless reply (the server notices at its
    // next write).
    assert!(
        run.server.bytes_sent() < ENDLESS,
        "{}",
        run.server.bytes_sent()
    );
    for _ in 0..3_000 {
        if run.server.hang_ups() > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // At least the endless reply was hung up on; the client may also close the next, finished
    // reply's connection while the server writes its last bytes (seen under load).
    assert!(run.server.hang_ups() >= 1, "{}", run.server.hang_ups());
    let notices = run.notices();
    assert!(
        notices.iter().any(|n| n
            == "the model was repeating itself (\"I will read the file.\" over and over); its reply was stopped"),
        "{notices:?}"
    );
    let second = run.messages(1);
    assert_eq!(second.len(), 4, "{second:?}");
    let kept = second[2]["content"].as_str().unwrap();
    assert!(
        kept.starts_with("Let me look.\nI will read the file.\n"),
        "{kept}"
    );
    assert!(
        kept.contains("the reply was stopped here for repeating itself"),
        "{kept}"
    );
    assert!(kept.len() < 300, "{kept}");
    assert_eq!(
        second[3],
        json!({"role": "user", "content": "Your reply was stopped: it repeated \"I will read the file.\" over and over. Say it once and continue."})
    );
    assert_alternates(&run);
}

/// Issue 14: no output cap was sent unless configured.
#[tokio::test]
async fn a_default_output_cap_is_sent_and_a_configured_one_wins() {
    let script = Script::new()
        .chat(reply().text("one").done())
        .chat(reply().text("two").done());
    let mut run = start(script, |config| config.context_window = Some(8_192));
    run.agent.run("a", &CancellationToken::new()).await;
    let mut configured = start(Script::new().chat(reply().text("x").done()), |config| {
        config.options.max_tokens = Some(100)
    });
    configured.agent.run("a", &CancellationToken::new()).await;
    assert_eq!(run.server.chat_bodies()[0]["options"]["num_predict"], 2_048);
    assert_eq!(
        configured.server.chat_bodies()[0]["options"]["num_predict"],
        100
    );
}

/// Issue 14: a reply longer than the window went back whole as history.
#[tokio::test]
async fn a_reply_longer_than_the_window_is_kept_shortened() {
    let long: String = (0..3_000).map(|i| format!("step {i} done. ")).collect();
    let script = Script::new()
        .chat(
            reply()
                .text(&format!("BEGIN {long} END"))
                .tool_call("cat", json!({"path": "notes.txt"}))
                .done(),
        )
        .chat(reply().text("ok").done());
    let mut run = start(script, |config| {
        config.context_window = Some(4_000);
        config.options.max_tokens = Some(1_000);
    });
    let outcome = run.agent.run("go", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let second = run.messages(1);
    let kept = second[2]["content"].as_str().unwrap();
    assert!(kept.starts_with("BEGIN step 0 done."), "{kept}");
    assert!(kept.ends_with("step 2999 done.  END"), "{kept}");
    assert!(kept.contains("characters cut here"), "{kept}");
    assert!(kept.len() < 8_000, "{}", kept.len());
    assert_eq!(second[3]["content"], "hello\n");
}

/// Issue 14: an answer stopped by the user is kept marked as interrupted, so the model knows.
#[tokio::test]
async fn an_answer_stopped_by_the_user_is_kept_marked_as_interrupted() {
    let cancel = CancellationToken::new();
    let stop = cancel.clone();
    let script = Script::new()
        .chat(
            reply()
                .text("Half of my ans")
                .unfinished()
                .delay(Duration::from_secs(120))
                .text("never"),
        )
        .chat(reply().text("Sure.").done());
    let mut run = start_with(
        script,
        |_| {},
        move |e| {
            if matches!(e, Event::TextDelta { .. }) {
                stop.cancel();
            }
        },
    );
    let outcome = run.agent.run("explain", &cancel).await;
    assert_eq!(outcome.status, RunStatus::Stopped, "{outcome:?}");
    let outcome = run.agent.run("go on", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let messages = run.messages(1);
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Half of my ans\n\n[interrupted by the user]"})
    );
    assert_eq!(messages[3], json!({"role": "user", "content": "go on"}));
    assert_alternates(&run);
}

/// Issue 14: a session stored with two user messages in a row (a failed turn, before they were
/// merged) resumes with them merged.
#[tokio::test]
async fn resuming_merges_messages_of_one_role_in_a_row() {
    let script = Script::new().chat(reply().text("Picking up.").done());
    let mut run = start(script, |_| {});
    run.agent.resume(vec![
        Message::system("old prompt"),
        Message::user("first task"),
        Message::user("first task, again"),
        Message::assistant("Partial"),
        Message::Assistant(AssistantMessage {
            content: "rest".into(),
            ..AssistantMessage::default()
        }),
        Message::user("a third"),
    ]);
    let outcome = run.agent.run("go on", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let messages = run.messages(0);
    assert_eq!(messages.len(), 4, "{messages:?}");
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "first task\n\nfirst task, again"})
    );
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Partial\n\nrest"})
    );
    assert_eq!(
        messages[3],
        json!({"role": "user", "content": "a third\n\ngo on"})
    );
}
