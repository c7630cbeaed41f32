//! Every request fits the window: the executor against the scripted model server (Ollama and
//! OpenAI-compatible wire formats) with small windows, big results, a model that answers the
//! summary request, and each server family's context-overflow answer.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::Agent;
use lathe_agent::events::{Event, RunStatus};
use lathe_agent::executor::{COMPACT_SYSTEM, SUMMARY_HEAD};
use lathe_agent::message::Message;
use lathe_agent::provider::ProviderKind;
use lathe_agent::sink::{stored_history, stored_history_seqs};
use lathe_runtime::Profile;
use lathe_testkit::{Response, Script, ScriptedServer, ollama, openai};

use crate::common::tools::cat as cat_tool;
use crate::common::{Events, Harness, MODEL, Run, call, prompt_tokens, reply, reply_cap, text};

/// An agent with `cat` for a `window`-token window against a server speaking `kind`'s
/// protocol; on the full profile whatever the window, as these tests were written.
fn start(kind: ProviderKind, script: Script, window: u64) -> Run {
    Harness::new()
        .kind(kind)
        .script(script)
        .tools(cat_tool())
        .window(window)
        .profile(Profile::Full)
        .start()
}

/// A recorded request's prompt tokens as Lathe estimates them, and the reply cap it was sent
/// with.
fn request_tokens(body: &Value) -> (u64, u64) {
    let cap = reply_cap(body).expect("every request carries a reply cap");
    (prompt_tokens(body), cap)
}

fn cat(path: &str) -> Response {
    reply().tool_call("cat", json!({"path": path})).done()
}

fn says(text: &str) -> Response {
    reply().text(text).done()
}

#[tokio::test]
async fn a_2k_window_never_receives_more_than_fits() {
    // The case: a 20,000-character result and `context_window = 2048`.
    let mut script = Script::new();
    for i in 0..4 {
        script = script.chat(cat(&format!("big{i}.txt")));
    }
    let script = script.chat(says("All four read."));
    let mut run = start(ProviderKind::Ollama, script, 2_048);
    let big = "0123456789 abcdefghijklmnopqrstuvwxyz\n".repeat(530);
    assert!(big.len() > 20_000);
    for i in 0..4 {
        std::fs::write(
            run.root.join(format!("big{i}.txt")),
            format!("file {i}\n{big}"),
        )
        .unwrap();
    }
    let outcome = run
        .agent
        .run("read big0.txt to big3.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 5);
    for (i, body) in bodies.iter().enumerate() {
        let (prompt, cap) = request_tokens(body);
        assert!(
            prompt + cap <= 2_048,
            "request {i}: {prompt} prompt tokens + {cap} for the reply do not fit 2,048"
        );
        assert_eq!(body["options"]["num_ctx"], 2_048);
    }
    // The newest result was cut to a quarter of the window, saying where the whole one is.
    let last = bodies[4]["messages"].as_array().unwrap();
    let newest = last.last().unwrap()["content"].as_str().unwrap();
    assert!(newest.starts_with("file 3\n"), "{newest}");
    assert!(newest.chars().count() <= 1_792, "{}", newest.len());
    let saved = newest
        .split("the full result is saved at ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap_or_else(|| panic!("no saved-result note in {newest}"));
    assert_eq!(
        std::fs::read_to_string(saved).unwrap(),
        format!("file 3\n{big}"),
        "nothing is lost: the whole result is on disk"
    );
}

/// A run whose assistant turns are long texts the shortening does not cut (each under 2,000
/// characters), so only compaction can make the requests fit.
fn chatty_script(turns: usize) -> Script {
    let mut script = Script::new().chat_when(
        "You summarise a coding agent",
        says("Task: read the notes one by one. Done: read n0.txt to n3.txt; they list parser bugs. Files changed: none. Open: the rest of the notes. Plan: keep reading."),
    );
    for i in 0..turns {
        let thought = format!(
            "Reading note {i}. {}",
            "I think about what it says. ".repeat(60)
        );
        script = script.chat(
            ollama::turn(MODEL)
                .text(&thought)
                .tool_call("cat", json!({"path": format!("n{i}.txt")}))
                .done(),
        );
    }
    script.chat(says("Read every note."))
}

#[tokio::test]
async fn compaction_replaces_old_turns_with_a_summary_and_the_task_continues() {
    let turns = 8;
    let mut run = start(ProviderKind::Ollama, chatty_script(turns), 4_096);
    for i in 0..turns {
        std::fs::write(
            run.root.join(format!("n{i}.txt")),
            format!("note {i}: a parser bug\n"),
        )
        .unwrap();
    }
    let outcome = run
        .agent
        .run("read the notes n0.txt to n7.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    assert_eq!(outcome.answer, "Read every note.");
    let bodies = run.server.chat_bodies();
    let summary_requests: Vec<&Value> = bodies
        .iter()
        .filter(|b| b.to_string().contains("You summarise a coding agent"))
        .collect();
    assert_eq!(summary_requests.len(), 1, "one compaction");
    // The summary request itself fits, and offers no tools.
    let (prompt, cap) = request_tokens(summary_requests[0]);
    assert!(prompt + cap <= 4_096, "{prompt} + {cap}");
    assert!(
        summary_requests[0]["tools"]
            .as_array()
            .is_none_or(Vec::is_empty)
    );
    assert_eq!(
        summary_requests[0]["messages"][0]["content"],
        COMPACT_SYSTEM
    );
    // Every turn's request fits; the ones after the compaction start with the summary.
    let work: Vec<&Value> = bodies
        .iter()
        .filter(|b| !b.to_string().contains("You summarise a coding agent"))
        .collect();
    assert_eq!(work.len(), turns + 1);
    for body in &work {
        let (prompt, cap) = request_tokens(body);
        assert!(prompt + cap <= 4_096, "{prompt} + {cap}");
    }
    let last = work.last().unwrap()["messages"].as_array().unwrap();
    let summary = last[1]["content"].as_str().unwrap();
    assert!(summary.starts_with(SUMMARY_HEAD), "{summary}");
    assert!(summary.contains("Done: read n0.txt to n3.txt"), "{summary}");
    assert!(
        !last
            .iter()
            .any(|m| m["content"] == "note 0: a parser bug\n"),
        "the oldest results are gone from the request"
    );
    assert_eq!(
        last.last().unwrap()["content"],
        format!("note {}: a parser bug\n", turns - 1),
        "the newest turns are verbatim"
    );
    // The event, and the store: it keeps every message, and a resume reads the summary.
    let compacted = run
        .events()
        .into_iter()
        .find_map(|e| match e {
            Event::ContextCompacted {
                manual,
                messages,
                tokens_before,
                tokens_after,
                first_message,
                last_message,
                ..
            } => Some((
                manual,
                messages,
                tokens_before,
                tokens_after,
                first_message,
                last_message,
            )),
            _ => None,
        })
        .expect("a compaction event");
    let (manual, messages, before, after, first, last_seq) = compacted;
    assert!(!manual);
    assert!(messages >= 4 && after < before, "{compacted:?}");
    assert!(first == 1 && last_seq > 1, "{compacted:?}");
    let stored = run.store.messages(&run.session).unwrap();
    let results = stored
        .iter()
        .filter(|row| row.body["role"] == "tool")
        .count();
    assert_eq!(results, turns, "the store keeps every result");
    let resumed = stored_history(&run.store, &run.session).unwrap();
    let at = resumed
        .iter()
        .position(
            |m| matches!(m, Message::User { content, .. } if content.starts_with(SUMMARY_HEAD)),
        )
        .expect("the summary in the resumed history");
    assert!(
        !resumed[..at].iter().any(|m| matches!(m, Message::Tool(_))),
        "the replaced results are not read back before it"
    );
    assert!(
        resumed[at + 1..]
            .iter()
            .any(|m| m.content() == "note 7: a parser bug\n")
    );
}

#[tokio::test]
async fn a_manual_compact_summarises_and_the_next_task_goes_on_from_it() {
    let script = chatty_script(3);
    let mut run = start(ProviderKind::Ollama, script.chat(says("Noted.")), 32_768);
    for i in 0..3 {
        std::fs::write(run.root.join(format!("n{i}.txt")), format!("note {i}\n")).unwrap();
    }
    let cancel = CancellationToken::new();
    let outcome = run.agent.run("read n0.txt to n2.txt", &cancel).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    let done = run.agent.compact(&cancel).await.expect("compacted");
    assert!(done.messages >= 3 && done.after < done.before, "{done:?}");
    assert!(matches!(
        run.history()[1],
        Message::User { ref content, .. } if content.starts_with(SUMMARY_HEAD)
    ));
    let outcome = run.agent.run("and now?", &cancel).await;
    assert_eq!(outcome.answer, "Noted.");
    let bodies = run.server.chat_bodies();
    let last = bodies.last().unwrap()["messages"].as_array().unwrap();
    assert!(
        last[1]["content"]
            .as_str()
            .unwrap()
            .starts_with(SUMMARY_HEAD)
    );
    assert!(
        run.events()
            .iter()
            .any(|e| matches!(e, Event::ContextCompacted { manual: true, .. }))
    );
}

/// The overflow answer of each server family, and the provider that meets it.
fn families() -> Vec<(&'static str, ProviderKind, Response, Option<u64>)> {
    vec![
        (
            "ollama",
            ProviderKind::Ollama,
            ollama::context_overflow(),
            None,
        ),
        (
            "llama.cpp",
            ProviderKind::OpenAi,
            openai::llama_cpp_overflow(9_000, 4_096),
            Some(4_096),
        ),
        (
            "vllm",
            ProviderKind::OpenAi,
            openai::vllm_overflow(4_096, 9_000, 2_048),
            Some(4_096),
        ),
        (
            "lm studio",
            ProviderKind::OpenAi,
            openai::lmstudio_overflow(9_000, 4_096),
            Some(4_096),
        ),
    ]
}

fn reading(kind: ProviderKind, path: &str) -> Response {
    call(kind, "call_1", "cat", json!({"path": path}))
}

fn saying(kind: ProviderKind, says: &str) -> Response {
    text(kind, says)
}

#[tokio::test]
async fn each_servers_overflow_answer_shrinks_the_request_and_retries_once() {
    for (family, kind, overflow, served) in families() {
        let script = Script::new()
            .chat(reading(kind, "big.txt"))
            .chat(overflow)
            .chat(saying(kind, "Read it."));
        let mut run = start(kind, script, 16_384);
        std::fs::write(
            run.root.join("big.txt"),
            "a line of the big file\n".repeat(600),
        )
        .unwrap();
        let outcome = run
            .agent
            .run("read big.txt", &CancellationToken::new())
            .await;
        assert_eq!(
            outcome.status,
            RunStatus::Finished,
            "{family}: {:?}",
            outcome.message
        );
        assert_eq!(outcome.answer, "Read it.", "{family}");
        let bodies = run.server.chat_bodies();
        assert_eq!(bodies.len(), 3, "{family}: one retry");
        let refused = request_tokens(&bodies[1]).0;
        let retried = request_tokens(&bodies[2]).0;
        assert!(
            retried * 10 <= refused * 7,
            "{family}: the retry ({retried}) is at most 70% of the refused request ({refused})"
        );
        let notices = run.notices();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("longer than the model's context window")
                    && n.contains("asking again")),
            "{family}: {notices:?}"
        );
        // A server that names its window teaches it: the next requests fit it.
        match served {
            Some(window) => {
                assert_eq!(run.agent.executor().context_window(), window, "{family}");
                let (prompt, cap) = request_tokens(&bodies[2]);
                assert!(prompt + cap <= window, "{family}: {prompt} + {cap}");
                assert!(
                    notices
                        .iter()
                        .any(|n| n.contains(&format!("its window is {window} tokens"))),
                    "{family}: {notices:?}"
                );
            }
            None => assert_eq!(run.agent.executor().context_window(), 16_384, "{family}"),
        }
    }
}

#[tokio::test]
async fn a_second_overflow_fails_naming_the_window_and_the_setting() {
    for (family, kind, overflow, _) in families() {
        let script = Script::new()
            .chat(reading(kind, "big.txt"))
            .chat(overflow.clone())
            .chat(overflow);
        let mut run = start(kind, script, 16_384);
        std::fs::write(
            run.root.join("big.txt"),
            "a line of the big file\n".repeat(600),
        )
        .unwrap();
        let outcome = run
            .agent
            .run("read big.txt", &CancellationToken::new())
            .await;
        assert_eq!(outcome.status, RunStatus::Failed, "{family}");
        assert_eq!(
            run.server.chat_bodies().len(),
            3,
            "{family}: retried once only"
        );
        let message = outcome.message.unwrap();
        let window = run.agent.executor().context_window();
        assert!(
            message.contains("longer than the model's context window")
                && message.contains("refused again")
                && message.contains(&format!("within {window} tokens"))
                && message.contains("[model] context_window"),
            "{family}: {message}"
        );
        assert!(
            run.events()
                .iter()
                .any(|e| matches!(e, Event::Error { message: m } if *m == message)),
            "{family}"
        );
    }
}

#[tokio::test]
async fn without_a_summary_the_conversation_is_shortened_instead_and_still_fits() {
    // Every summary request fails; each turn's text is long enough to be cut.
    let turns = 8;
    let mut script = Script::new();
    for _ in 0..turns {
        script = script.chat_when(
            "You summarise a coding agent",
            ollama::error(500, "out of memory while summarising"),
        );
    }
    for i in 0..turns {
        let thought = format!(
            "Reading note {i}. {}",
            "I think about what it says. ".repeat(90)
        );
        script = script.chat(
            ollama::turn(MODEL)
                .text(&thought)
                .tool_call("cat", json!({"path": format!("n{i}.txt")}))
                .done(),
        );
    }
    let script = script.chat(says("Read every note."));
    let mut run = start(ProviderKind::Ollama, script, 4_096);
    for i in 0..turns {
        std::fs::write(run.root.join(format!("n{i}.txt")), format!("note {i}\n")).unwrap();
    }
    let outcome = run
        .agent
        .run("read the notes n0.txt to n7.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    let bodies = run.server.chat_bodies();
    let (summaries, work): (Vec<&Value>, Vec<&Value>) = bodies
        .iter()
        .partition(|b| b.to_string().contains("You summarise a coding agent"));
    assert_eq!(work.len(), turns + 1);
    assert!(!summaries.is_empty(), "a summary was asked for");
    for body in &work {
        let (prompt, cap) = request_tokens(body);
        assert!(prompt + cap <= 4_096, "{prompt} + {cap}");
    }
    let last = work.last().unwrap()["messages"].as_array().unwrap();
    assert!(
        !last[1]["content"]
            .as_str()
            .unwrap()
            .starts_with(SUMMARY_HEAD)
    );
    assert!(
        last.iter().any(|m| m["content"]
            .as_str()
            .unwrap_or("")
            .contains("removed to save context")),
        "old long texts were cut instead"
    );
    assert!(
        !run.events()
            .iter()
            .any(|e| matches!(e, Event::ContextCompacted { .. }))
    );
}

/// Whether a recorded message is a result shortened to its one line.
fn is_shortened(message: &Value) -> bool {
    message["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("[shortened to save context:"))
}

#[tokio::test]
async fn a_shortening_pass_shortens_every_seen_result_so_the_next_requests_keep_its_prefix() {
    // Twelve results of about 860 tokens each in an 8k window: the history outgrows the
    // prompt's room (8,192 less a quarter for the reply and 5% margin) after six or so. Every
    // request fits...
    let turns = 12;
    let mut script = Script::new();
    for i in 0..turns {
        script = script.chat(cat(&format!("f{i}.txt")));
    }
    let script = script.chat(says("Read them all."));
    let mut run = start(ProviderKind::Ollama, script, 8_192);
    for i in 0..turns {
        let line = format!("file {i}: a line of the file\n");
        std::fs::write(
            run.root.join(format!("f{i}.txt")),
            line.repeat(3_000 / line.len()),
        )
        .unwrap();
    }
    let outcome = run
        .agent
        .run("read f0.txt to f11.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), turns + 1);
    let mut passes = 0;
    for (i, body) in bodies.iter().enumerate() {
        let (prompt, cap) = request_tokens(body);
        assert!(prompt + cap <= 8_192, "request {i}: {prompt} + {cap}");
        let messages = body["messages"].as_array().unwrap();
        let seen = messages
            .iter()
            .rposition(|m| m["role"] == "assistant")
            .unwrap_or(0);
        // ...the newest result, which the model has not seen, is whole...
        assert!(!is_shortened(messages.last().unwrap()), "request {i}");
        if i == 0 {
            continue;
        }
        let before = bodies[i - 1]["messages"].as_array().unwrap();
        if messages.len() >= before.len() && messages[..before.len()] == before[..] {
            continue;
        }
        // ...and a request that rewrote the history (a shortening pass) has every result the
        // model had seen in one line, not only as many as the target needed.
        passes += 1;
        for (at, m) in messages[..seen].iter().enumerate() {
            assert!(
                m["role"] != "tool" || is_shortened(m),
                "request {i}: the seen result at {at} is still whole: {}",
                &m["content"].as_str().unwrap()[..40]
            );
        }
    }
    // So passes are few: every other request extends the one before it, message by message.
    assert!(passes >= 1, "the history outgrew the window");
    assert!(passes <= 2, "{passes} requests rewrote the history");
}

/// An agent for a `window`-token window going on with `run`'s stored session (as `lathe exec
/// --session` and `lathe chat --resume` do: another process reads the stored history back and
/// resumes it), against a new server playing `script`. Its events go to the returned list.
fn resume_in(
    run: &Run,
    script: Script,
    window: u64,
) -> (std::sync::Arc<ScriptedServer>, Agent, Events) {
    let mut resumed = run
        .again()
        .script(script)
        .window(window)
        .new_tool_session("state-resumed")
        .start();
    resumed
        .agent
        .resume_stored(stored_history_seqs(&run.store, &run.session).unwrap());
    (resumed.server, resumed.agent, resumed.events)
}

#[tokio::test]
async fn a_resumed_long_session_at_a_small_window_is_compacted_and_goes_on() {
    // A long session at 32k, stored...
    let turns = 8;
    let mut run = start(ProviderKind::Ollama, chatty_script(turns), 32_768);
    for i in 0..turns {
        std::fs::write(
            run.root.join(format!("n{i}.txt")),
            format!("note {i}: a parser bug\n"),
        )
        .unwrap();
    }
    let cancel = CancellationToken::new();
    let outcome = run
        .agent
        .run("read the notes n0.txt to n7.txt", &cancel)
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    assert!(run.server.chat_bodies().len() == turns + 1);
    // ...resumed in a 4k window, which its history alone (about 4,500 tokens of texts the
    // shortening does not cut) outgrows.
    let script = Script::new()
        .chat_when(
            "You summarise a coding agent",
            says("Task: read the notes. Done: read n0.txt to n7.txt; they list parser bugs. Files changed: none. Open: the report. Plan: write it."),
        )
        .chat(says("The notes list eight parser bugs."));
    let before = stored_history(&run.store, &run.session).unwrap();
    let (server, mut executor, events) = resume_in(&run, script, 4_096);
    let outcome = executor.run("now sum them up", &cancel).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    assert_eq!(outcome.answer, "The notes list eight parser bugs.");
    let bodies = server.chat_bodies();
    let (summaries, work): (Vec<&Value>, Vec<&Value>) = bodies
        .iter()
        .partition(|b| b.to_string().contains("You summarise a coding agent"));
    assert_eq!(summaries.len(), 1, "the resumed history was compacted");
    // The summary request shows the stored turns, and it and the task's request fit.
    assert!(
        summaries[0].to_string().contains("Reading note 0."),
        "{}",
        summaries[0]
    );
    for body in bodies.iter() {
        let (prompt, cap) = request_tokens(body);
        assert!(prompt + cap <= 4_096, "{prompt} + {cap}");
    }
    assert_eq!(work.len(), 1);
    let messages = work[0]["messages"].as_array().unwrap();
    assert!(
        messages[1]["content"]
            .as_str()
            .unwrap()
            .starts_with(SUMMARY_HEAD),
        "{:?}",
        messages[1]
    );
    assert!(
        messages.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .ends_with("now sum them up"),
        "the new task is whole: {:?}",
        messages.last()
    );
    // The compaction names the stored messages it replaced, so the next resume reads the
    // summary in their place instead of compacting them again.
    let replaced = events
        .lock()
        .unwrap()
        .iter()
        .find_map(|e| match e {
            Event::ContextCompacted {
                manual: false,
                first_message,
                last_message,
                ..
            } => Some((*first_message, *last_message)),
            _ => None,
        })
        .expect("a compaction event");
    assert_eq!(replaced.0, 1, "{replaced:?}");
    assert!(replaced.1 > 1, "{replaced:?}");
    executor.sink().flush().await;
    let again = stored_history(&run.store, &run.session).unwrap();
    assert!(
        matches!(&again[0], Message::User { content, .. } if content.starts_with(SUMMARY_HEAD)),
        "{:?}",
        again[0]
    );
    assert!(
        again.len() < before.len(),
        "{} / {}",
        again.len(),
        before.len()
    );
    assert!(
        !again
            .iter()
            .any(|m| format!("{m:?}").contains("Reading note 0.")),
        "the replaced turns are read as the summary"
    );
}

/// The definition of built-in tool `name` in `profile`, as a request carries it.
fn definition_in(profile: lathe_runtime::Profile, name: &str) -> Value {
    let mut registry = lathe_tools::builtin();
    registry.use_profile(profile);
    registry.definition(name).unwrap().to_function()
}

#[tokio::test]
async fn sub_agents_run_with_the_parents_profile_and_the_window_it_learned() {
    use lathe_agent::provider::{ChatOptions, ToolProtocol};
    use lathe_agent::subagent::SubAgentConfig;

    let text = |t: &str| openai::turn(MODEL).text(t).finish("stop").done();
    let spawn = |id: &str, task: &str, profile: &str| {
        let arguments = json!({"task": task, "profile": profile}).to_string();
        openai::turn(MODEL)
            .tool_call(0, id, "spawn_agent", &[&arguments])
            .finish("tool_calls")
            .done()
    };
    // A parent configured for 8k whose llama.cpp server was started with `-c 4096`: the
    // request after it read a big file is refused, and it learns the served window; then it
    // starts two children.
    let read = json!({"path": "big.txt"}).to_string();
    let script = Script::new()
        .chat_when("You are sub-agent sub-1,", text("There is one note."))
        .chat_when("You are sub-agent sub-2,", text("Counted: one note."))
        .chat(
            openai::turn(MODEL)
                .tool_call(0, "call_0", "read_file", &[&read])
                .finish("tool_calls")
                .done(),
        )
        .chat(openai::llama_cpp_overflow(4_200, 4_096))
        .chat(spawn("call_1", "find the notes", "explore"))
        .chat(spawn("call_2", "count the notes", "general"))
        .chat(text("One note."))
        .openai_models(&[MODEL]);
    let mut run = Harness::new()
        .kind(ProviderKind::OpenAi)
        .bare_script(script)
        .file("notes.txt", "hello\n")
        .file("big.txt", "a line of the big file\n".repeat(400))
        .config(|c| {
            c.tool_protocol = ToolProtocol::Native;
            c.options = ChatOptions {
                num_ctx: 8_192,
                ..ChatOptions::default()
            };
        })
        .sub_agents(SubAgentConfig::default())
        .detached()
        .start();
    let outcome = run
        .agent
        .run("how many notes are there?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{:?}", outcome.message);
    assert_eq!(outcome.answer, "One note.");
    assert_eq!(run.agent.executor().context_window(), 4_096);

    let children: Vec<Value> = run
        .server
        .chat_bodies()
        .into_iter()
        .filter(|b| b.to_string().contains("You are sub-agent sub-"))
        .collect();
    assert_eq!(children.len(), 2, "one request from each child");
    let compact = definition_in(Profile::Compact, "read_file");
    assert_ne!(compact, definition_in(Profile::Full, "read_file"));
    for body in &children {
        let tools = body["tools"].as_array().unwrap();
        // The compact definitions, as the parent's.
        let read_file = tools
            .iter()
            .find(|t| t["function"]["name"] == "read_file")
            .unwrap_or_else(|| panic!("no read_file in {tools:?}"));
        assert_eq!(read_file, &compact);
        // Fitted to the window the parent learned, not the 8k it was configured with: the
        // reply cap is a quarter of 4,096.
        let (prompt, cap) = request_tokens(body);
        assert_eq!(cap, 1_024, "{body}");
        assert!(prompt + cap <= 4_096, "{prompt} + {cap}");
    }
}
