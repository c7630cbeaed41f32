//! The plan the model keeps (`update_plan`) in the agent loop: shown as an event, kept whole
//! when old results are shortened, read back on resume, and a "done" with open steps questioned
//! once. Against the scripted model server over real HTTP.

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::agent_executor::start_with;
use crate::common::reply;
use lathe_agent::events::{Event, RunStatus};
use lathe_agent::sink::stored_history_seqs;
use lathe_runtime::checklist::{self, ChecklistStep, StepStatus};
use lathe_testkit::Script;
use lathe_tools::update_plan::UpdatePlanTool;

fn plan(rows: &[(&str, &str)]) -> Value {
    json!({
        "plan": rows
            .iter()
            .map(|(step, status)| json!({"step": step, "status": status}))
            .collect::<Vec<_>>()
    })
}

fn step(text: &str, status: StepStatus) -> ChecklistStep {
    ChecklistStep {
        step: text.into(),
        status,
    }
}

#[tokio::test]
async fn done_with_open_steps_is_questioned_once_and_the_plan_is_an_event() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "update_plan",
                    plan(&[
                        ("Read notes", "completed"),
                        ("Write the summary", "pending"),
                    ]),
                )
                .done(),
        )
        .chat(reply().text("All done.").done())
        .chat(
            reply()
                .text("Truly done; the summary was not needed.")
                .done(),
        );
    let mut run = start_with(script, |r| r.register(UpdatePlanTool), |_| {});
    let outcome = run
        .agent
        .run("summarise notes.txt", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    assert_eq!(outcome.turns, 3, "questioned once, not twice");
    assert_eq!(outcome.answer, "Truly done; the summary was not needed.");

    let bodies = run.server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    let third = bodies[2]["messages"].as_array().unwrap();
    let reminder = third.last().unwrap();
    assert_eq!(reminder["role"], "user");
    let text = reminder["content"].as_str().unwrap();
    assert!(
        text.starts_with("Your plan still has 1 open step(s):\n[ ] Write the summary\n"),
        "{text}"
    );
    assert!(!text.contains("Read notes"), "{text}");

    let events = run.events.lock().unwrap();
    let plans: Vec<&Vec<ChecklistStep>> = events
        .iter()
        .filter_map(|e| match e {
            Event::PlanUpdated { steps } => Some(steps),
            _ => None,
        })
        .collect();
    assert_eq!(
        plans,
        [&vec![
            step("Read notes", StepStatus::Completed),
            step("Write the summary", StepStatus::Pending)
        ]]
    );
}

#[tokio::test]
async fn a_finished_plan_is_not_questioned() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call("update_plan", plan(&[("Read notes", "completed")]))
                .done(),
        )
        .chat(reply().text("Done.").done());
    let mut run = start_with(script, |r| r.register(UpdatePlanTool), |_| {});
    let outcome = run
        .agent
        .run("what does notes.txt say?", &CancellationToken::new())
        .await;
    assert_eq!((outcome.status, outcome.turns), (RunStatus::Finished, 2));
}

#[tokio::test]
async fn the_plan_survives_when_old_results_are_shortened() {
    let big = "line of text for the context test\n".repeat(200);
    // A long plan (over 2,000 characters: what the last pass of shortening cuts).
    let steps: Vec<(String, &str)> = (0..15)
        .map(|i| {
            let status = if i == 0 { "in_progress" } else { "pending" };
            (
                format!("Step {i:02}: {}", "read and check one big file ".repeat(5)),
                status,
            )
        })
        .collect();
    let rows: Vec<(&str, &str)> = steps.iter().map(|(s, st)| (s.as_str(), *st)).collect();
    let mut script = Script::new().chat(reply().tool_call("update_plan", plan(&rows)).done());
    for i in 0..6 {
        script = script.chat(
            reply()
                .tool_call("cat", json!({"path": format!("big{i}.txt")}))
                .done(),
        );
    }
    // (The open steps get the run one more turn.)
    script = script
        .chat(reply().text("read them all").done())
        .chat(reply().text("stopping here").done());
    let mut run = start_with(
        script,
        |r| r.register(UpdatePlanTool),
        |c| c.context_window = Some(8_000),
    );
    for i in 0..6 {
        std::fs::write(run.root.join(format!("big{i}.txt")), &big).unwrap();
    }
    let outcome = run
        .agent
        .run("read the big files", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    let bodies = run.server.chat_bodies();
    let request = bodies.last().unwrap()["messages"].as_array().unwrap();
    let results: Vec<&str> = request
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(
        results[1].starts_with("[shortened to save context: cat"),
        "nothing was shortened: the test does not test anything: {}",
        results[1]
    );
    let plan_result = results[0];
    assert!(plan_result.len() > 2_000, "{}", plan_result.len());
    assert!(
        plan_result.starts_with("Plan updated (0/15 done):\n[>] Step 00:"),
        "{plan_result}"
    );
    assert!(plan_result.contains("[ ] Step 14:"), "{plan_result}");
}

#[tokio::test]
async fn a_resumed_session_goes_on_with_its_plan() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "update_plan",
                    plan(&[("Old step", "completed"), ("Open step", "in_progress")]),
                )
                .done(),
        )
        .chat(reply().text("Paused.").done())
        .chat(reply().text("Nothing left.").done());
    let mut first = start_with(script, |r| r.register(UpdatePlanTool), |_| {});
    // "Paused." with a step open is questioned once; "Nothing left." ends the run.
    let outcome = first
        .agent
        .run("first task", &CancellationToken::new())
        .await;
    assert_eq!(outcome.status, RunStatus::Finished, "{outcome:?}");
    // Another process: a new tool session, the conversation and the plan read back from the
    // store (the plan from its stored event, not from the result's text).
    let mut run = first.again().new_tool_session("resumed").start();
    run.agent
        .resume_stored(stored_history_seqs(&run.store, &run.session).unwrap());
    assert!(checklist::current(run.runner().session()).is_empty());
    let events = run.store.events(&run.session).unwrap();
    run.agent
        .restore_plan(lathe_agent::stored::last_plan(&events).unwrap());
    let session = run.runner().session();
    assert_eq!(
        checklist::current(session),
        [
            step("Old step", StepStatus::Completed),
            step("Open step", StepStatus::InProgress)
        ]
    );
}
