//! Sub-agents (`spawn_agent`, `read_sub_agent`) in the agent loop, against the scripted model
//! server over real HTTP: a parent and its children share one server, and each child's requests
//! are told apart by the words it is opened with ("You are sub-agent sub-N").

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use lathe_agent::approval::{ApprovalDecision, ApprovalMode, ApprovalRequest, Approver};
use lathe_agent::events::{Event, RunStatus, SubAgentState};
use lathe_agent::provider::{ProviderKind, ToolProtocol};
use lathe_agent::sink::stored_history;
use lathe_agent::subagent::{SubAgentConfig, transcript};
use lathe_runtime::{Dispatcher, Gate, Session, ToolContext};
use lathe_testkit::{Part, Script, ScriptedServer, processes_with};

use crate::common::{Events, Harness, Run, call, calls, text};

/// The wire format a test's server speaks.
type Wire = ProviderKind;

/// What a child's requests hold, and its parent's never do.
fn child(n: u32) -> String {
    format!("You are sub-agent sub-{n},")
}

/// A person at the parent's terminal: says no, with a reason, and remembers what was asked.
#[derive(Default)]
struct Person {
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Approver for Person {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        self.asked.lock().unwrap().push(request.clone());
        Box::pin(async {
            ApprovalDecision::Deny {
                message: Some("not that file".into()),
            }
        })
    }
}

fn start(
    wire: Wire,
    script: Script,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    config: SubAgentConfig,
) -> Run {
    start_seeing(wire, script, mode, approver, config, Arc::default())
}

/// The parent, with the built-in tools and `config`'s sub-agents, in `mode` over a workspace
/// holding `notes.txt`, its events going to `events`.
fn start_seeing(
    wire: Wire,
    script: Script,
    mode: ApprovalMode,
    approver: Option<Arc<dyn Approver>>,
    config: SubAgentConfig,
    events: Events,
) -> Run {
    let mut harness = harness(wire, script)
        .file("notes.txt", "hello\n")
        .approval(mode)
        .sub_agents(config)
        .events(events);
    if let Some(approver) = approver {
        harness = harness.approver(approver);
    }
    harness.start()
}

/// The harness of these tests: `wire`'s server playing `script`, native tool calls.
fn harness(wire: Wire, script: Script) -> Harness {
    Harness::new()
        .kind(wire)
        .script(script)
        .config(|c| c.tool_protocol = ToolProtocol::Native)
}

/// Whether a request is a child's: its task opens with who it is.
fn is_child(body: &Value) -> bool {
    body["messages"][1]["content"]
        .as_str()
        .is_some_and(|c| c.starts_with("You are sub-agent sub-"))
}

/// The parent's chat requests (the children's left out), as sent.
fn parent_bodies(server: &ScriptedServer) -> Vec<Value> {
    server
        .chat_bodies()
        .into_iter()
        .filter(|b| !is_child(b))
        .collect()
}

/// The end of `run`; a run left waiting on a child nothing stopped fails the test (after a
/// generous bound, so that it does not hang) rather than passing.
async fn ended<T>(run: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the run never ended: its child was not stopped")
}

/// `reply`, after a pause before its first byte.
fn slow(mut reply: lathe_testkit::Response) -> lathe_testkit::Response {
    reply.parts.insert(0, Part::DelayMs(500));
    reply
}

/// The content of the first tool result in `body` that starts with `start`.
fn tool_result_starting(body: &Value, start: &str) -> Option<String> {
    body["messages"].as_array()?.iter().find_map(|m| {
        let content = m["content"].as_str()?;
        (m["role"] == "tool" && content.starts_with(start)).then(|| content.to_owned())
    })
}

fn sub_agent_events(events: &[Event]) -> Vec<(String, SubAgentState, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::SubAgent(update) => Some((update.id.clone(), update.state, update.line.clone())),
            _ => None,
        })
        .collect()
}

/// Checks the `sub_agent_result` pair for `id` in `messages`: an assistant message whose one
/// call is `sub_agent_result {"id": id}`, then at once the tool result holding `text`, in the
/// wire's own shape. Returns whether the pair was there.
fn has_pair(wire: Wire, messages: &[Value], id: &str, text: &str) -> bool {
    let Some(at) = messages.iter().position(|m| {
        m["role"] == "assistant"
            && m["tool_calls"].as_array().is_some_and(|calls| {
                calls.iter().any(|c| {
                    c["function"]["name"] == "sub_agent_result"
                        && match wire {
                            // Ollama: arguments as an object; OpenAI: as a JSON string.
                            Wire::Ollama => c["function"]["arguments"] == json!({"id": id}),
                            Wire::OpenAi => {
                                c["function"]["arguments"]
                                    .as_str()
                                    .and_then(|s| serde_json::from_str::<Value>(s).ok())
                                    == Some(json!({"id": id}))
                            }
                        }
                })
            })
    }) else {
        return false;
    };
    let call = &messages[at]["tool_calls"].as_array().unwrap()[0];
    assert_eq!(
        messages[at]["tool_calls"].as_array().unwrap().len(),
        1,
        "one synthetic call per message: {:?}",
        messages[at]
    );
    let result = &messages[at + 1];
    assert_eq!(
        result["role"], "tool",
        "the result follows its call at once"
    );
    assert!(
        result["content"].as_str().unwrap().contains(text),
        "{result}"
    );
    if let Wire::OpenAi = wire {
        assert_eq!(result["tool_call_id"], call["id"], "matched by id");
        assert!(call["id"].as_str().is_some_and(|id| !id.is_empty()));
    } else {
        assert_eq!(result["tool_name"], "sub_agent_result");
    }
    true
}

async fn a_background_result_arrives_as_a_pair(wire: Wire) {
    let script = Script::new()
        .chat_when(&child(1), text(wire, "There is one note: hello."))
        .chat(call(
            wire,
            "call_spawn",
            "spawn_agent",
            json!({"task": "count the notes", "background": true}),
        ))
        .chat(text(wire, "Waiting for the helper."))
        .chat(text(wire, "The helper found one note."));
    let mut run = start(
        wire,
        script,
        ApprovalMode::Auto,
        None,
        SubAgentConfig::default(),
    );
    let outcome = run
        .agent
        .run("how many notes are there?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");

    let bodies = parent_bodies(&run.server);
    // The spawn call's own result says it started, with the id.
    assert!(
        tool_result_starting(&bodies[1], "sub-agent sub-1 started in the background").is_some(),
        "{:#?}",
        bodies[1]
    );
    // The pair is in the first request sent after the child ended, and in every later one,
    // and the run ended only after the model read it.
    let first = bodies
        .iter()
        .position(|b| {
            has_pair(
                wire,
                b["messages"].as_array().unwrap(),
                "sub-1",
                "one note: hello",
            )
        })
        .expect("no request carried the sub_agent_result pair");
    for body in &bodies[first..] {
        assert!(has_pair(
            wire,
            body["messages"].as_array().unwrap(),
            "sub-1",
            "one note: hello"
        ));
    }
    assert!(first >= 1, "the pair came before the spawn call's result");
    // The result is never a dangling message: nothing after the last request waits.
    assert!(
        run.agent
            .executor()
            .sub_agents()
            .unwrap()
            .take_results()
            .is_empty()
    );
    // The child was stored as a session of its own, whose parent is this one.
    let children = run.store.children(&run.session).unwrap();
    assert_eq!(children.len(), 1);
    assert!(
        children[0]
            .title
            .as_deref()
            .unwrap()
            .contains("count the notes")
    );
}

#[tokio::test]
async fn a_background_result_arrives_as_a_pair_ollama() {
    a_background_result_arrives_as_a_pair(Wire::Ollama).await;
}

#[tokio::test]
async fn a_background_result_arrives_as_a_pair_openai() {
    a_background_result_arrives_as_a_pair(Wire::OpenAi).await;
}

#[tokio::test]
async fn a_foreground_child_answers_in_the_call_and_its_transcript_pages_like_read_file() {
    let wire = Wire::Ollama;
    let script = Script::new()
        .chat_when("1\\thello", text(wire, "notes.txt says hello (line 1)."))
        .chat_when(
            &child(1),
            call(wire, "c1", "read_file", json!({"path": "notes.txt"})),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "what do the notes say?"}),
        ))
        .chat(call(
            wire,
            "p2",
            "read_sub_agent",
            json!({"id": "sub-1", "offset": 2, "limit": 3}),
        ))
        .chat(text(wire, "The notes say hello."));
    let mut run = start(
        wire,
        script,
        ApprovalMode::Auto,
        None,
        SubAgentConfig::default(),
    );
    let outcome = run
        .agent
        .run("summarise the notes", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.answer, "The notes say hello.");

    let bodies = parent_bodies(&run.server);
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    let messages = bodies[1]["messages"].as_array().unwrap();
    let answer = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        answer.starts_with("notes.txt says hello (line 1).\n\n(sub-agent sub-1, finished;"),
        "{answer}"
    );
    assert!(
        answer.contains("read_sub_agent with id=\"sub-1\""),
        "{answer}"
    );
    // An explore child had the read-only tools only, and no spawn_agent.
    let child_body = run.server.chat_bodies().into_iter().find(is_child).unwrap();
    let mut names: Vec<String> = child_body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["glob", "grep", "list_files", "read_file", "shell"]);

    // read_sub_agent pages with read_file's rules: the same lines, numbers and note as
    // read_file gives for a file holding the transcript.
    let paged = bodies[2]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let children = run.store.children(&run.session).unwrap();
    let text = transcript(&stored_history(&run.store, &children[0].id).unwrap());
    std::fs::write(run.root.join("transcript.txt"), &text).unwrap();
    let dispatcher = Dispatcher::new(
        Arc::new(lathe_tools::builtin()),
        Arc::new(Gate::new(ApprovalMode::Auto, &run.root)),
    );
    let read = |args: Value| {
        let ctx = ToolContext::new(Arc::clone(&run.tools));
        let dispatcher = &dispatcher;
        async move {
            dispatcher
                .call(
                    "read_file",
                    args,
                    &lathe_agent::approval::NonInteractive,
                    ctx,
                )
                .await
                .output
                .text
        }
    };
    let from_file = read(json!({"path": "transcript.txt", "offset": 2, "limit": 3})).await;
    assert!(
        from_file.contains("call read_file with offset=5"),
        "{from_file}"
    );
    assert_eq!(
        paged,
        from_file.replace("call read_file", "call read_sub_agent")
    );
    // Past the end: the same error, naming the transcript.
    let past = read(json!({"path": "transcript.txt", "offset": 500})).await;
    assert!(past.contains("is past the end of transcript.txt"), "{past}");

    // Its progress reached the parent's events, one id throughout, ending finished.
    let events = sub_agent_events(&run.events.lock().unwrap());
    assert!(events.iter().all(|(id, _, _)| id == "sub-1"), "{events:?}");
    assert!(
        events
            .iter()
            .any(|(_, _, line)| line == "read_file notes.txt"),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap().1, SubAgentState::Finished);
}

#[tokio::test]
async fn a_childs_approval_goes_to_the_parents_approver_labelled_and_a_denial_reaches_it() {
    let wire = Wire::OpenAi;
    let script = Script::new()
        .chat_when(
            "the user denied this: not that file",
            text(wire, "I was not allowed to write it."),
        )
        .chat_when(
            &child(1),
            call(
                wire,
                "c1",
                "write_file",
                json!({"path": "out.txt", "content": "x\n"}),
            ),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "write out.txt", "profile": "general"}),
        ))
        .chat(text(wire, "The helper was not allowed."));
    let person = Arc::new(Person::default());
    let mut run = start(
        wire,
        script,
        ApprovalMode::Ask,
        Some(Arc::clone(&person) as Arc<dyn Approver>),
        SubAgentConfig::default(),
    );
    let outcome = run
        .agent
        .run("make out.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let asked = person.asked.lock().unwrap();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].tool, "write_file");
    assert!(
        asked[0]
            .description
            .starts_with("[sub-agent sub-1: write out.txt] write_file out.txt"),
        "{}",
        asked[0].description
    );
    assert!(!run.root.join("out.txt").exists());
    // The child read the denial, and its answer reached the parent.
    let bodies = parent_bodies(&run.server);
    let last = bodies.last().unwrap()["messages"].as_array().unwrap();
    let answer = last.last().unwrap()["content"].as_str().unwrap();
    assert!(
        answer.starts_with("I was not allowed to write it."),
        "{answer}"
    );
}

#[tokio::test]
async fn at_most_one_runs_at_once_and_the_others_queue() {
    let wire = Wire::Ollama;
    let script = Script::new()
        // Slow enough that sub-2 is spawned while sub-1 still runs.
        .chat_when(&child(1), slow(text(wire, "first done")))
        .chat_when(&child(2), text(wire, "second done"))
        .chat(calls(
            wire,
            &[
                (
                    "p1",
                    "spawn_agent",
                    json!({"task": "look at a", "background": true}),
                ),
                (
                    "p2",
                    "spawn_agent",
                    json!({"task": "look at b", "background": true}),
                ),
            ],
        ))
        .chat(text(wire, "Waiting."))
        .chat(text(wire, "Both are done."));
    let mut run = start(
        wire,
        script,
        ApprovalMode::Auto,
        None,
        SubAgentConfig::default(),
    );
    let outcome = run
        .agent
        .run("look at a and b", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let bodies = parent_bodies(&run.server);
    assert!(
        tool_result_starting(
            &bodies[1],
            "sub-agent sub-2 is queued behind sub-1 (at most 1 sub-agent run at once)"
        )
        .is_some(),
        "{:#?}",
        bodies[1]
    );
    let last = bodies.last().unwrap()["messages"].as_array().unwrap();
    assert!(has_pair(wire, last, "sub-1", "first done"));
    assert!(has_pair(wire, last, "sub-2", "second done"));
    // sub-2 ran only once sub-1 had finished.
    let events = sub_agent_events(&run.events.lock().unwrap());
    let first_done = events
        .iter()
        .position(|(id, state, _)| id == "sub-1" && *state == SubAgentState::Finished)
        .unwrap();
    let second_runs = events
        .iter()
        .position(|(id, state, _)| id == "sub-2" && *state == SubAgentState::Running)
        .unwrap();
    assert!(first_done < second_runs, "{events:?}");
    assert_eq!(
        events
            .iter()
            .find(|(id, _, _)| id == "sub-2")
            .map(|(_, state, _)| *state),
        Some(SubAgentState::Queued)
    );
}

#[tokio::test]
async fn cancelling_the_parent_kills_the_childs_running_command() {
    let wire = Wire::Ollama;
    let marker = format!("sleep 1000.{}", std::process::id());
    let script = Script::new()
        .chat_when(
            &child(1),
            call(
                wire,
                "c1",
                "shell",
                json!({"command": marker, "timeout": 3600}),
            ),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "wait a long time", "profile": "general"}),
        ));
    let mut run = start(
        wire,
        script,
        ApprovalMode::Full,
        None,
        SubAgentConfig::default(),
    );
    let cancel = CancellationToken::new();
    let stopper = cancel.clone();
    let watched = marker.clone();
    let watcher = tokio::spawn(async move {
        // Stop the parent once the child's command runs.
        for _ in 0..600 {
            if !processes_with(&watched).is_empty() {
                stopper.cancel();
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stopper.cancel();
        false
    });
    let outcome = ended(run.agent.run("wait", &cancel)).await;
    assert!(watcher.await.unwrap(), "the child's command never started");
    assert_eq!(outcome.status, RunStatus::Stopped, "{outcome:?}");
    let mut left = processes_with(&marker);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = processes_with(&marker);
    }
    assert!(left.is_empty(), "left running: {left:?}");
    let events = sub_agent_events(&run.events.lock().unwrap());
    assert_eq!(
        events.last().unwrap().1,
        SubAgentState::Stopped,
        "{events:?}"
    );
    drop(run.dir);
}

/// A person who answers only once the parent has ended its turn `turn` (they were away), then
/// says no.
struct Away {
    events: Arc<Mutex<Vec<Event>>>,
    turn: u32,
}

impl Approver for Away {
    fn approve<'a>(&'a self, _request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            loop {
                let done =
                    self.events.lock().unwrap().iter().any(
                        |e| matches!(e, Event::TurnFinished { turn, .. } if *turn == self.turn),
                    );
                if done {
                    return ApprovalDecision::Deny { message: None };
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    }
}

#[tokio::test]
async fn a_parent_that_answers_while_a_child_runs_waits_and_reads_its_result_in_one_more_turn() {
    let wire = Wire::Ollama;
    let script = Script::new()
        .chat_when("the user denied this", text(wire, "Not allowed; one note."))
        .chat_when(
            &child(1),
            call(
                wire,
                "c1",
                "write_file",
                json!({"path": "count.txt", "content": "1\n"}),
            ),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "count the notes", "profile": "general", "background": true}),
        ))
        .chat(text(wire, "Waiting for the helper."))
        .chat(text(wire, "The helper found one note."));
    let events: Arc<Mutex<Vec<Event>>> = Arc::default();
    // The child's question is answered only after the parent's second turn (its "final"
    // answer): the parent is certain to answer while the child still runs.
    let away = Arc::new(Away {
        events: Arc::clone(&events),
        turn: 2,
    });
    let mut run = start_seeing(
        wire,
        script,
        ApprovalMode::Ask,
        Some(away as Arc<dyn Approver>),
        SubAgentConfig::default(),
        Arc::clone(&events),
    );
    let outcome = run
        .agent
        .run("how many notes?", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.turns, 3, "one more turn for the result");
    assert_eq!(outcome.answer, "The helper found one note.");
    let bodies = parent_bodies(&run.server);
    assert_eq!(bodies.len(), 3);
    assert!(!has_pair(
        wire,
        bodies[1]["messages"].as_array().unwrap(),
        "sub-1",
        ""
    ));
    assert!(has_pair(
        wire,
        bodies[2]["messages"].as_array().unwrap(),
        "sub-1",
        "Not allowed; one note."
    ));
    let events = run.events.lock().unwrap();
    assert!(
        events.iter().any(|e| matches!(e, Event::Notice { message }
            if message.starts_with("waiting for 1 background sub-agent to finish"))),
        "{events:?}"
    );
}

#[tokio::test]
async fn a_child_at_its_turn_limit_says_it_did_not_finish() {
    let wire = Wire::Ollama;
    let script = Script::new()
        .chat_when(
            &child(1),
            call(wire, "c1", "read_file", json!({"path": "notes.txt"})),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "read the notes"}),
        ))
        .chat(text(wire, "The helper ran out of turns."));
    let config = SubAgentConfig {
        max_turns: 1,
        ..SubAgentConfig::default()
    };
    let mut run = start(wire, script, ApprovalMode::Auto, None, config);
    let outcome = run.agent.run("notes?", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let bodies = parent_bodies(&run.server);
    let result = bodies[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.starts_with("sub-agent sub-1 did not finish: it reached its limit of 1 turns."),
        "{result}"
    );
    let events = sub_agent_events(&run.events.lock().unwrap());
    assert_eq!(events.last().unwrap().1, SubAgentState::Failed);
}

#[tokio::test]
async fn a_resumed_session_numbers_children_on_and_reads_the_earlier_ones_from_the_store() {
    let wire = Wire::Ollama;
    let script = Script::new()
        .chat_when(&child(1), text(wire, "first helper's answer"))
        .chat_when(&child(2), text(wire, "second helper's answer"))
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "first task"}),
        ))
        .chat(text(wire, "First done."))
        // The resumed session.
        .chat(calls(
            wire,
            &[
                ("p2", "spawn_agent", json!({"task": "second task"})),
                ("p3", "read_sub_agent", json!({"id": "sub-1"})),
            ],
        ))
        .chat(text(wire, "Second done."));
    let mut run = start(
        wire,
        script,
        ApprovalMode::Auto,
        None,
        SubAgentConfig::default(),
    );
    let first = run.agent.run("one", &CancellationToken::new()).await;
    assert_eq!(first.status, RunStatus::Finished, "{first:?}");
    let again = run.again();
    drop(run.agent);

    // Another process goes on with the stored session.
    let mut agent = again.start().agent;
    agent.resume(stored_history(&run.store, &run.session).unwrap());
    let second = agent.run("two", &CancellationToken::new()).await;
    assert_eq!(second.status, RunStatus::Finished, "{second:?}");
    let bodies = parent_bodies(&run.server);
    let last = bodies.last().unwrap();
    let spawned = tool_result_starting(last, "second helper's answer").unwrap();
    assert!(spawned.contains("(sub-agent sub-2, finished;"), "{spawned}");
    let earlier = tool_result_starting(last, "     1\t## user").unwrap();
    assert!(earlier.contains("first helper's answer"), "{earlier}");
    assert_eq!(run.store.children(&run.session).unwrap().len(), 2);
}

#[tokio::test]
async fn an_explore_child_runs_commands_that_read_and_is_refused_those_that_write() {
    let wire = Wire::Ollama;
    let script = Script::new()
        .chat_when(
            "denied by Lathe's policy",
            text(wire, "I could read but not write."),
        )
        .chat_when(
            &child(1),
            calls(
                wire,
                &[
                    ("c1", "shell", json!({"command": "cat notes.txt"})),
                    ("c2", "shell", json!({"command": "touch made.txt"})),
                ],
            ),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "look around"}),
        ))
        .chat(text(wire, "Done."));
    // The parent may do anything; its explore child still only reads.
    let mut run = start(
        wire,
        script,
        ApprovalMode::Full,
        None,
        SubAgentConfig::default(),
    );
    let outcome = run.agent.run("look", &CancellationToken::new()).await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert!(!run.root.join("made.txt").exists());
    let child_second = run
        .server
        .chat_bodies()
        .into_iter()
        .filter(is_child)
        .nth(1)
        .unwrap();
    let results: Vec<String> = child_second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("hello"), "{results:?}");
    assert!(
        results[1].starts_with("denied by Lathe's policy"),
        "{results:?}"
    );
}

#[tokio::test]
async fn the_parents_session_ending_stops_a_background_child_and_kills_its_command() {
    let wire = Wire::Ollama;
    let marker = format!("sleep 1000.{}1", std::process::id());
    let script = Script::new()
        .chat_when(
            &child(1),
            call(
                wire,
                "c1",
                "shell",
                json!({"command": marker, "timeout": 3600}),
            ),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "wait a long time", "profile": "general", "background": true}),
        ))
        .chat(text(wire, "Waiting for the helper."))
        .chat(text(wire, "The helper was stopped."));
    let mut run = start(
        wire,
        script,
        ApprovalMode::Full,
        None,
        SubAgentConfig::default(),
    );
    let tools = Arc::clone(&run.tools);
    let watched = marker.clone();
    let ender = tokio::spawn(async move {
        for _ in 0..600 {
            if !processes_with(&watched).is_empty() {
                // The session ends (what exec does on SIGTERM, an MCP session closing).
                tokio::task::spawn_blocking(move || tools.shutdown())
                    .await
                    .unwrap();
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    });
    let outcome = ended(run.agent.run("wait", &CancellationToken::new())).await;
    assert!(ender.await.unwrap(), "the child's command never started");
    let mut left = processes_with(&marker);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = processes_with(&marker);
    }
    assert!(left.is_empty(), "left running: {left:?}");
    // The parent read that its child was stopped, as a sub_agent_result.
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let bodies = parent_bodies(&run.server);
    assert!(has_pair(
        wire,
        bodies.last().unwrap()["messages"].as_array().unwrap(),
        "sub-1",
        "sub-agent sub-1 was stopped before it finished"
    ));
}

/// An audit log of the calls that ran, as a project's hook keeps one.
#[derive(Default)]
struct Audit {
    titles: Mutex<Vec<String>>,
}

impl lathe_runtime::Hook for Audit {
    fn after(
        &self,
        call: &lathe_runtime::CallInfo,
        _outcome: &mut lathe_runtime::Outcome,
        _session: &Session,
    ) {
        self.titles.lock().unwrap().push(call.title.clone());
    }
}

#[tokio::test]
async fn a_general_childs_calls_pass_the_parents_hooks_and_its_changes_are_in_its_checkpoint() {
    let wire = Wire::Ollama;
    let script = Script::new()
        .chat_when("\"tool_name\":\"write_file\"", text(wire, "Wrote out.txt."))
        .chat_when(
            &child(1),
            call(
                wire,
                "c1",
                "write_file",
                json!({"path": "out.txt", "content": "from the child\n"}),
            ),
        )
        .chat(call(
            wire,
            "p1",
            "spawn_agent",
            json!({"task": "write out.txt", "profile": "general"}),
        ))
        .chat(text(wire, "The helper wrote it."));
    let audit = Arc::new(Audit::default());
    let mut run = harness(wire, script)
        .checkpoints()
        .hook(Arc::clone(&audit) as Arc<dyn lathe_runtime::Hook>)
        .sub_agents(SubAgentConfig::default())
        .detached()
        .start();
    let outcome = run
        .agent
        .run("make out.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(
        std::fs::read_to_string(run.root.join("out.txt")).unwrap(),
        "from the child\n"
    );
    assert_eq!(outcome.report.checkpoints.len(), 1, "{:?}", outcome.report);
    let created: Vec<_> = run
        .events()
        .iter()
        .filter_map(|e| match e {
            Event::CheckpointCreated(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 1);
    assert_eq!(created[0].files[0].path, "out.txt");
    // The child's call went through the parent's hooks, then the parent's own call ended.
    let titles = audit.titles.lock().unwrap();
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(titles[0].starts_with("write_file out.txt"), "{titles:?}");
    assert!(titles[1].starts_with("spawn_agent"), "{titles:?}");
}
