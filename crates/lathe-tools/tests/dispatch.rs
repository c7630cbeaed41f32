//! The call pipeline end to end: real files in a temporary workspace, the real built-in tools,
//! the real gate; approvers and hooks that record what they were given.

use std::sync::Arc;
use std::time::Duration;

use lathe_policy::ApprovalMode::{self, Ask, Auto, Full, ReadOnly};
use serde_json::{Value, json};

use crate::dispatch_support::{Fixture, Fragile, Probe, Recording, Remote, Silent, exists};
use lathe_runtime::dispatch::{STOPPED_BEFORE_RUNNING, denial_text};
use lathe_runtime::{
    ApprovalDecision, CallStatus, Effect, FixedAnswer, NonInteractive, Registry, RegistryError,
    Verdict,
};

const ALLOW_ONCE: ApprovalDecision = ApprovalDecision::AllowOnce;

fn deny(message: &str) -> ApprovalDecision {
    ApprovalDecision::Deny {
        message: Some(message.to_owned()),
    }
}

/// Waits at most a few seconds: a pipeline that hangs fails instead.
async fn soon<F: std::future::Future>(future: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), future)
        .await
        .expect("the call did not end")
}

// The pipeline, whole and step by step.

#[tokio::test]
async fn a_read_runs_through_the_whole_pipeline_without_asking() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Ask);
    let approver = Recording::new(NonInteractive);
    let outcome = soon(dispatcher.call(
        "grep",
        json!({"pattern": "TODO", "path": "src"}),
        &approver,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert!(
        outcome.output.text.contains("src/lib.rs"),
        "{}",
        outcome.output.text
    );
    assert_eq!(approver.asked(), 0);
}

#[tokio::test]
async fn prepare_authorize_run_apply_the_change_that_was_approved() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Ask);
    let call = dispatcher
        .prepare(
            "append_line",
            json!({"path": "notes.txt", "line": "second"}),
            &f.session,
        )
        .unwrap();
    assert_eq!(call.name, "append_line");
    assert_eq!(call.title, "append_line notes.txt");
    assert_eq!(
        call.effects,
        [Effect::Edit {
            path: "notes.txt".into()
        }]
    );
    let approver = Recording::new(FixedAnswer(ALLOW_ONCE));
    let authorized =
        soon(dispatcher.authorize(call, "call-1", &approver, &f.session, &Default::default()))
            .await
            .unwrap();
    // Asked once, with the plan's change; nothing written yet.
    let requests = approver.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.call_id, "call-1");
    assert_eq!(request.tool, "append_line");
    assert_eq!(request.description, "append_line notes.txt (+1 -0)");
    assert_eq!(request.scope, "edit(notes.txt)");
    assert_eq!(request.changes, authorized.changes());
    assert_eq!(
        request.diff.as_deref(),
        Some(request.changes[0].diff.as_str())
    );
    assert!(request.diff.as_deref().unwrap().contains("+second"));
    assert_eq!(f.read("notes.txt"), "first\n");
    let outcome = soon(dispatcher.run(authorized, f.ctx())).await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(f.read("notes.txt"), "first\nsecond\n");
    // The change reported is the change approved, diff and all.
    assert_eq!(outcome.output.metadata.changes, request.changes);
}

#[tokio::test]
async fn a_file_changed_after_approval_is_not_overwritten() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Auto);
    let call = dispatcher
        .prepare(
            "append_line",
            json!({"path": "notes.txt", "line": "second"}),
            &f.session,
        )
        .unwrap();
    let authorized =
        soon(dispatcher.authorize(call, "c", &NonInteractive, &f.session, &Default::default()))
            .await
            .unwrap();
    std::fs::write(f.path("notes.txt"), "someone else\n").unwrap();
    let outcome = soon(dispatcher.run(authorized, f.ctx())).await;
    assert_eq!(outcome.status, CallStatus::Error);
    assert!(
        outcome
            .output
            .text
            .contains("changed on disk after this change was worked out"),
        "{}",
        outcome.output.text
    );
    assert_eq!(f.read("notes.txt"), "someone else\n");
}

// Calls refused before anything runs.

#[tokio::test]
async fn an_unknown_tool_is_refused_with_the_closest_names() {
    let f = Fixture::new();
    let approver = Recording::new(FixedAnswer(ALLOW_ONCE));
    let outcome = soon(
        f.dispatcher(Full)
            .call("raed_file", json!({}), &approver, f.ctx()),
    )
    .await;
    assert_eq!(outcome.status, CallStatus::Refused);
    let text = &outcome.output.text;
    assert!(text.starts_with("unknown tool `raed_file`."), "{text}");
    assert!(text.contains("Did you mean `read_file`"), "{text}");
    assert!(
        text.contains("update_plan"),
        "the list names every tool: {text}"
    );
    assert_eq!(approver.asked(), 0);
}

#[tokio::test]
async fn a_bad_argument_is_refused_naming_the_parameter() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Full);
    let cases = [
        (
            "grep",
            json!({"pattern": "x", "context": "lots"}),
            "context",
        ),
        ("read_file", json!({"offset": 3}), "path"),
        ("weather", json!({"days": 2}), "city"),
        // The tool refused the value; the registry names the parameter it refused.
        ("weather", json!({"city": ""}), "parameter `city`"),
    ];
    let mut registry = f.registry();
    registry.add(Arc::new(Remote::weather())).unwrap();
    let dispatcher_with_weather = f.dispatcher_with(Full, registry);
    for (name, arguments, parameter) in cases {
        let dispatcher = if name == "weather" {
            &dispatcher_with_weather
        } else {
            &dispatcher
        };
        let outcome =
            soon(dispatcher.call(name, arguments.clone(), &NonInteractive, f.ctx())).await;
        assert_eq!(outcome.status, CallStatus::Refused, "{name} {arguments}");
        let text = &outcome.output.text;
        assert!(
            text.starts_with(&format!("invalid arguments for `{name}`: ")),
            "{text}"
        );
        assert!(text.contains(parameter), "{name} {arguments}: {text}");
    }
}

#[tokio::test]
async fn read_only_denies_a_change_without_asking() {
    let f = Fixture::new();
    let approver = Recording::new(FixedAnswer(ALLOW_ONCE));
    let outcome = soon(f.dispatcher(ReadOnly).call(
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
        &approver,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Denied);
    let text = &outcome.output.text;
    // The policy refused it, nobody was asked: the text says so, and how to allow it.
    assert!(text.starts_with("denied by Lathe's policy: "), "{text}");
    assert!(
        text.contains("read-only") && text.contains("--approval"),
        "{text}"
    );
    assert!(!text.contains("the user"), "{text}");
    assert_eq!(approver.asked(), 0);
    assert!(!exists(&f.root, "new.txt"));
}

#[tokio::test]
async fn a_denial_is_denied_with_the_users_words() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Ask);
    let approver = Recording::new(FixedAnswer(deny("use notes.txt instead")));
    let outcome = soon(dispatcher.call(
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
        &approver,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Denied);
    assert_eq!(
        outcome.output.text,
        "the user denied this: use notes.txt instead"
    );
    assert_eq!(approver.asked(), 1);
    assert_eq!(approver.requests()[0].tool, "write_file");
    assert!(!exists(&f.root, "new.txt"));
    // Without words, the model is told not to retry.
    let silent = FixedAnswer(ApprovalDecision::Deny { message: None });
    let outcome = soon(dispatcher.call(
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
        &silent,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.output.text, denial_text(None));
    assert!(outcome.output.text.contains("Do not retry"));
}

#[tokio::test]
async fn allow_session_is_remembered_for_the_same_kind_of_call() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Ask);
    let always = Recording::new(FixedAnswer(ApprovalDecision::AllowSession));
    let append = |line: &str| json!({"path": "notes.txt", "line": line});
    let first = soon(dispatcher.call("append_line", append("2"), &always, f.ctx())).await;
    assert_eq!(first.status, CallStatus::Ok, "{}", first.output.text);
    assert_eq!(always.requests()[0].scope, "edit(notes.txt)");
    // The same file again: not asked (a refusing approver would have refused).
    let refuse = Recording::new(FixedAnswer(deny("no")));
    let second = soon(dispatcher.call("append_line", append("3"), &refuse, f.ctx())).await;
    assert_eq!(second.status, CallStatus::Ok, "{}", second.output.text);
    assert_eq!(refuse.asked(), 0);
    assert_eq!(f.read("notes.txt"), "first\n2\n3\n");
    // Another file still asks.
    let other = soon(dispatcher.call(
        "append_line",
        json!({"path": "other.txt", "line": "x"}),
        &refuse,
        f.ctx(),
    ))
    .await;
    assert_eq!(other.status, CallStatus::Denied);
    assert_eq!(refuse.asked(), 1);
    // Allow once is not remembered.
    let once = Recording::new(FixedAnswer(ALLOW_ONCE));
    let grep_env = json!({"pattern": "TOKEN", "path": ".env"});
    let read = soon(dispatcher.call("grep", grep_env.clone(), &once, f.ctx())).await;
    assert_eq!(read.status, CallStatus::Ok, "{}", read.output.text);
    let again = soon(dispatcher.call("grep", grep_env, &once, f.ctx())).await;
    assert_eq!(again.status, CallStatus::Ok);
    assert_eq!(once.asked(), 2, "a sensitive path asks each time");
}

// Hooks.

#[tokio::test]
async fn a_hook_refuses_before_the_gate_and_the_call_does_not_run() {
    let f = Fixture::new();
    let hook = Arc::new(Probe {
        refuse_before: Some("checkpoints are full; free some first".into()),
        ..Probe::default()
    });
    let dispatcher = f.dispatcher(Full).with_hook(hook.clone());
    let approver = Recording::new(FixedAnswer(ALLOW_ONCE));
    let outcome = soon(dispatcher.call(
        "append_line",
        json!({"path": "notes.txt", "line": "x"}),
        &approver,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Refused);
    assert_eq!(outcome.output.text, "checkpoints are full; free some first");
    assert_eq!(hook.seen(), ["before append_line"]);
    assert_eq!(f.read("notes.txt"), "first\n");
    // The hook saw the call as resolved: the registered name, the tool's title and effects.
    let mut ctx = f.ctx();
    ctx.call_id = Some("c7".into());
    soon(dispatcher.call("Read-File", json!({"path": "notes.txt"}), &approver, ctx)).await;
    let infos = hook.infos.lock().unwrap();
    let info = infos.last().unwrap();
    assert_eq!(info.call_id, "c7");
    assert_eq!(info.name, "read_file");
    assert_eq!(
        info.effects,
        [Effect::Read {
            path: "notes.txt".into()
        }]
    );
}

#[tokio::test]
async fn a_hook_stops_a_call_before_it_runs_and_sees_its_planned_change() {
    let f = Fixture::new();
    let hook = Arc::new(Probe {
        stop_before_run: Some("no checkpoint could be made".into()),
        ..Probe::default()
    });
    let dispatcher = f.dispatcher(Auto).with_hook(hook.clone());
    let outcome = soon(dispatcher.call(
        "append_line",
        json!({"path": "notes.txt", "line": "x"}),
        &NonInteractive,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Refused);
    assert_eq!(outcome.output.text, "no checkpoint could be made");
    assert_eq!(
        hook.seen(),
        ["before append_line", "before_run append_line +1 -0"]
    );
    assert!(hook.changes.lock().unwrap()[0].diff.contains("+x"));
    assert_eq!(f.read("notes.txt"), "first\n");
}

#[tokio::test]
async fn hooks_add_to_the_result_after_the_call_in_the_order_they_were_added() {
    let f = Fixture::new();
    let first = Arc::new(Probe {
        append_after: Some("\n[checkpoint 1]".into()),
        ..Probe::default()
    });
    let second = Arc::new(Probe {
        append_after: Some("\n[audited]".into()),
        ..Probe::default()
    });
    let dispatcher = f
        .dispatcher(Auto)
        .with_hook(first.clone())
        .with_hook(second.clone());
    let outcome = soon(dispatcher.call(
        "append_line",
        json!({"path": "notes.txt", "line": "x"}),
        &NonInteractive,
        f.ctx(),
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Ok);
    assert!(
        outcome
            .output
            .text
            .ends_with("Appended a line to notes.txt.\n[checkpoint 1]\n[audited]"),
        "{}",
        outcome.output.text
    );
    assert_eq!(
        second.seen(),
        [
            "before append_line",
            "before_run append_line +1 -0",
            "after append_line Ok"
        ]
    );
}

// Cancellation.

#[tokio::test]
async fn a_call_stopped_before_authorize_asks_nobody_and_runs_nothing() {
    let f = Fixture::new();
    let hook = Arc::new(Probe::default());
    let dispatcher = f.dispatcher(Ask).with_hook(hook.clone());
    let approver = Recording::new(FixedAnswer(ALLOW_ONCE));
    let ctx = f.ctx();
    ctx.cancel.cancel();
    let outcome = soon(dispatcher.call(
        "append_line",
        json!({"path": "notes.txt", "line": "x"}),
        &approver,
        ctx,
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Cancelled);
    assert_eq!(outcome.output.text, STOPPED_BEFORE_RUNNING);
    assert_eq!(approver.asked(), 0);
    assert!(hook.seen().is_empty());
    assert_eq!(f.read("notes.txt"), "first\n");
}

#[tokio::test]
async fn a_call_stopped_while_the_approver_waits_ends_cancelled() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Ask);
    let ctx = f.ctx();
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        cancel.cancel();
    });
    let outcome = soon(dispatcher.call(
        "append_line",
        json!({"path": "notes.txt", "line": "x"}),
        &Silent,
        ctx,
    ))
    .await;
    assert_eq!(outcome.status, CallStatus::Cancelled);
    assert_eq!(f.read("notes.txt"), "first\n");
}

#[tokio::test]
async fn a_call_stopped_after_authorize_is_not_applied() {
    let f = Fixture::new();
    let dispatcher = f.dispatcher(Auto);
    let call = dispatcher
        .prepare(
            "append_line",
            json!({"path": "notes.txt", "line": "x"}),
            &f.session,
        )
        .unwrap();
    let ctx = f.ctx();
    let authorized =
        soon(dispatcher.authorize(call, "c", &NonInteractive, &f.session, &ctx.cancel))
            .await
            .unwrap();
    ctx.cancel.cancel();
    let outcome = soon(dispatcher.run(authorized, ctx)).await;
    assert_eq!(outcome.status, CallStatus::Cancelled);
    assert_eq!(outcome.output.text, STOPPED_BEFORE_RUNNING);
    assert_eq!(f.read("notes.txt"), "first\n");
}

// Tools added at run time.

#[tokio::test]
async fn a_run_time_tool_is_called_through_the_dispatcher() {
    let f = Fixture::new();
    let mut registry = f.registry();
    registry.add(Arc::new(Remote::weather())).unwrap();
    let definition = registry.definition("weather").unwrap();
    assert_eq!(definition.parameters["required"], json!(["city"]));
    assert!(
        registry
            .function_definitions()
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["function"]["name"] == "weather")
    );
    // It says nothing of what it does, so it is asked about; "always" remembers the tool.
    let dispatcher = f.dispatcher_with(Ask, registry);
    let always = Recording::new(FixedAnswer(ApprovalDecision::AllowSession));
    let outcome = soon(dispatcher.call("weather", json!({"city": "Oslo"}), &always, f.ctx())).await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(outcome.output.text, "sunny in Oslo");
    let request = &always.requests()[0];
    assert_eq!(request.description, "weather Oslo");
    assert_eq!(request.scope, "tool(weather)");
    assert!(
        request
            .reasons
            .iter()
            .any(|r| r.contains("what it does is not known")),
        "{:?}",
        request.reasons
    );
    // By its alias, folded, and remembered: not asked again.
    let refuse = Recording::new(FixedAnswer(deny("no")));
    let outcome =
        soon(dispatcher.call("Forecast", json!({"city": "Bergen"}), &refuse, f.ctx())).await;
    assert_eq!(outcome.status, CallStatus::Ok, "{}", outcome.output.text);
    assert_eq!(refuse.asked(), 0);
}

#[tokio::test]
async fn a_run_time_tool_that_panics_ends_as_an_outcome() {
    let f = Fixture::new();
    let mut registry = f.registry();
    registry.add(Arc::new(Fragile::new())).unwrap();
    let dispatcher = f.dispatcher_with(Full, registry);
    let cases = [
        ("bind", CallStatus::Refused),
        ("effects", CallStatus::Refused),
        ("title", CallStatus::Refused),
        ("plan", CallStatus::Error),
        ("run", CallStatus::Error),
    ];
    for (at, status) in cases {
        let outcome =
            soon(dispatcher.call("fragile", json!({"panic_in": at}), &NonInteractive, f.ctx()))
                .await;
        assert_eq!(outcome.status, status, "{at}: {}", outcome.output.text);
        assert!(
            outcome.output.text.starts_with(&format!(
                "internal error in `fragile`: fragile broke in {at}"
            )),
            "{at}: {}",
            outcome.output.text
        );
    }
    let fine = soon(dispatcher.call("fragile", json!({}), &NonInteractive, f.ctx())).await;
    assert_eq!(fine.status, CallStatus::Ok);
    // The registry's own path (no dispatcher) survives a panicking plan too.
    let mut registry = Registry::new();
    registry.add(Arc::new(Fragile::new())).unwrap();
    let output = soon(registry.call("fragile", json!({"panic_in": "plan"}), f.ctx())).await;
    assert!(output.is_error && output.text.contains("fragile broke in plan"));
}

#[test]
fn a_run_time_tool_cannot_take_a_name_or_alias_already_taken() {
    let mut registry = lathe_tools::builtin();
    registry.add(Arc::new(Remote::weather())).unwrap();
    let before = registry.names().len();
    let taken = |name: &str, by: &str| RegistryError::NameTaken {
        name: name.to_owned(),
        taken_by: by.to_owned(),
    };
    let cases = [
        (
            Remote::named("read_file", &[]),
            taken("read_file", "read_file"),
        ),
        // After folding case, `_`, `-` and `.`, as a model's call would be resolved.
        (
            Remote::named("Read-File", &[]),
            taken("Read-File", "read_file"),
        ),
        (
            Remote::named("readfile", &[]),
            taken("readfile", "read_file"),
        ),
        (
            Remote::named("UPDATE.PLAN", &[]),
            taken("UPDATE.PLAN", "update_plan"),
        ),
        // A built-in's alias, as a name or as an alias.
        (Remote::named("bash", &[]), taken("bash", "shell")),
        (Remote::named("my_shell", &["Bash"]), taken("Bash", "shell")),
        // Another run-time tool's name or alias.
        (Remote::named("weather", &[]), taken("weather", "weather")),
        (
            Remote::named("climate", &["fore_cast"]),
            taken("fore_cast", "weather"),
        ),
    ];
    for (tool, expected) in cases {
        assert_eq!(registry.add(Arc::new(tool)), Err(expected));
    }
    for (name, aliases) in [
        ("", &[][..]),
        ("__", &[]),
        ("ok_name", &["-"]),
        ("ok_name", &[""]),
    ] {
        assert!(
            matches!(
                registry.add(Arc::new(Remote::named(name, aliases))),
                Err(RegistryError::BadName(_))
            ),
            "{name:?} {aliases:?}"
        );
    }
    let long = "x".repeat(200);
    assert!(matches!(
        registry.add(Arc::new(Remote::named("ok_name", &[&long]))),
        Err(RegistryError::BadName(_))
    ));
    // Nothing of a refused tool was kept.
    assert_eq!(registry.names().len(), before);
    assert!(registry.resolve_name("my_shell").is_err());
    assert_eq!(registry.resolve_name("bash"), Ok("shell"));
    assert_eq!(registry.resolve_name("ok_name").ok(), None);
    // A name that is new, even close to one taken, is fine.
    registry
        .add(Arc::new(Remote::named("read_files_remote", &[])))
        .unwrap();
    let message = registry
        .add(Arc::new(Remote::named("Read-File", &[])))
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "tool name `Read-File` is already taken by `read_file`"
    );
}

#[test]
fn aliases_and_folded_names_resolve_also_after_retain() {
    let f = Fixture::new();
    let mut registry = f.registry();
    registry.add(Arc::new(Remote::weather())).unwrap();
    for (given, resolved) in [
        ("bash", "shell"),
        ("Read-File", "read_file"),
        ("READ_FILE", "read_file"),
        ("cat", "read_file"),
        ("update-plan", "update_plan"),
        ("forecast", "weather"),
    ] {
        assert_eq!(registry.resolve_name(given), Ok(resolved), "{given}");
    }
    let call = registry
        .prepare("bash", json!({"command": "ls"}), &f.session)
        .unwrap();
    assert_eq!(call.name, "shell");
    assert!(matches!(&call.effects[..], [Effect::Command { command, .. }] if command == "ls"));
    // Dropping tools renumbers the rest: every name and alias still leads to its own tool.
    registry.retain(|d| d.name != "shell" && d.name != "grep");
    assert!(registry.resolve_name("bash").is_err());
    assert!(registry.resolve_name("rg").is_err());
    let names = registry.names();
    assert!(!names.contains(&"shell") && !names.contains(&"grep"));
    for (given, resolved, arguments) in [
        ("cat", "read_file", json!({"path": "notes.txt"})),
        ("Forecast", "weather", json!({"city": "Oslo"})),
        ("ls", "list_files", json!({})),
        ("update_plan", "update_plan", json!({"plan": []})),
    ] {
        let call = registry
            .prepare(given, arguments, &f.session)
            .unwrap_or_else(|out| panic!("{given}: {}", out.text));
        assert_eq!(call.name, resolved, "{given}");
        assert_eq!(registry.definition(resolved).unwrap().name, resolved);
    }
    let unknown = registry.prepare("bash", json!({}), &f.session).unwrap_err();
    assert!(!unknown.text.contains("`shell`"), "{}", unknown.text);
}

// Safe defaults, and how several effects combine.

/// The gate's verdict on one call: 'a'llow, 'q'uestion, 'd'eny.
fn verdict(f: &Fixture, registry: &Registry, mode: ApprovalMode, name: &str, args: &Value) -> char {
    let call = registry
        .prepare(name, args.clone(), &f.session)
        .unwrap_or_else(|out| panic!("{name}: {}", out.text));
    match lathe_runtime::Gate::new(mode, &f.root).check(&call, &f.session) {
        Verdict::Allow => 'a',
        Verdict::Ask { .. } => 'q',
        Verdict::Deny { .. } => 'd',
    }
}

#[test]
fn a_tool_that_does_not_say_what_it_does_is_asked_about() {
    let f = Fixture::new();
    let mut registry = f.registry();
    registry.add(Arc::new(Remote::weather())).unwrap();
    registry.add(Arc::new(Remote::fetch())).unwrap();
    let nothing = json!({});
    let oslo = json!({"city": "Oslo"});
    let host = json!({"host": "example.com"});
    let kill = json!({"id": 1});
    let plan = json!({"plan": [{"step": "a", "status": "pending"}]});
    let memory = json!({"action": "add", "entry": "Use tabs."});
    // (tool, arguments, read-only, ask, auto, full)
    let table = [
        // A session tool with default hints and effects: unknown, not read-only.
        ("bare", &nothing, ['d', 'q', 'q', 'a']),
        // A Read-kind tool that names no path is not judged as reading `.`.
        ("peek", &nothing, ['d', 'q', 'q', 'a']),
        // A run-time tool that says nothing (BoundCall's default).
        ("weather", &oslo, ['d', 'q', 'q', 'a']),
        // The network asks in auto.
        ("fetch", &host, ['d', 'q', 'q', 'a']),
        // The session's own state, changed: runs in every mode.
        ("kill_command", &kill, ['a', 'a', 'a', 'a']),
        ("update_plan", &plan, ['a', 'a', 'a', 'a']),
        ("list_commands", &nothing, ['a', 'a', 'a', 'a']),
        // The project's memory: asked about in every mode, never run unasked.
        ("update_memory", &memory, ['d', 'q', 'q', 'q']),
    ];
    let mut wrong = Vec::new();
    for (name, args, expected) in table {
        for (mode, want) in [ReadOnly, Ask, Auto, Full].into_iter().zip(expected) {
            let got = verdict(&f, &registry, mode, name, args);
            if got != want {
                wrong.push(format!("{name} in {mode}: expected {want}, got {got}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    let call = registry.prepare("bare", json!({}), &f.session).unwrap();
    assert!(matches!(&call.effects[..], [Effect::Unknown { .. }]));
    assert!(!call.only_reads());
}

#[tokio::test]
async fn unknown_effects_through_the_dispatcher() {
    let f = Fixture::new();
    let approver = Recording::new(FixedAnswer(ALLOW_ONCE));
    let denied = soon(
        f.dispatcher(ReadOnly)
            .call("peek", json!({}), &approver, f.ctx()),
    )
    .await;
    assert_eq!(denied.status, CallStatus::Denied);
    assert!(
        denied.output.text.contains("cannot judge"),
        "{}",
        denied.output.text
    );
    assert!(
        denied.output.text.contains("`tool(peek)`"),
        "{}",
        denied.output.text
    );
    let ran = soon(
        f.dispatcher(Full)
            .call("bare", json!({}), &approver, f.ctx()),
    )
    .await;
    assert_eq!(ran.output.text, "bare ran");
    assert_eq!(approver.asked(), 0);
    // The plan tool runs unasked in read-only.
    let plan = json!({"plan": [{"step": "look", "status": "in_progress"}]});
    let planned = soon(
        f.dispatcher(ReadOnly)
            .call("update_plan", plan, &approver, f.ctx()),
    )
    .await;
    assert_eq!(planned.status, CallStatus::Ok, "{}", planned.output.text);
    assert_eq!(approver.asked(), 0);
}

#[test]
fn several_effects_are_judged_together() {
    let f = Fixture::new();
    let mut registry = Registry::new();
    registry.add(Arc::new(Remote::effects())).unwrap();
    let read = json!({"read": "src/lib.rs"});
    let edit = json!({"edit": "notes.txt"});
    let secret = json!({"read": ".env"});
    let env = json!({"write": ".env"});
    let unknown = json!({"unknown": "a remote tool"});
    let net = json!({"network": "example.com"});
    let get = json!({"fetch": "docs.rs"});
    let ls = json!({"command": "ls"});
    let critical = json!({"command": "sudo rm -rf /"});
    // (mode, effects, verdict, the rules "always" would remember)
    let rows: Vec<(ApprovalMode, Vec<&Value>, char, Vec<&str>)> = vec![
        (Auto, vec![&read, &edit], 'a', vec![]),
        (ReadOnly, vec![&read, &edit], 'd', vec![]),
        // One question is enough to ask; only what asks is remembered.
        (Auto, vec![&read, &env], 'q', vec!["edit(.env)"]),
        (
            Ask,
            vec![&secret, &edit, &ls],
            'q',
            vec!["read(.env)", "edit(notes.txt)"],
        ),
        // Any denial denies, even after a question.
        (ReadOnly, vec![&secret, &edit], 'd', vec![]),
        (ReadOnly, vec![&read, &unknown], 'd', vec![]),
        // An opaque effect alone is remembered as the tool...
        (Auto, vec![&unknown], 'q', vec!["tool(effects)"]),
        (Auto, vec![&net], 'q', vec!["tool(effects)"]),
        // ...but not next to reads and writes, which tool(effects) would allow as well.
        (Auto, vec![&unknown, &read], 'q', vec![]),
        (Ask, vec![&net, &edit], 'q', vec![]),
        // A fetch is remembered as its host, even next to other effects: `fetch(docs.rs)`
        // allows nothing else.
        (Auto, vec![&get], 'q', vec!["fetch(docs.rs)"]),
        (ReadOnly, vec![&get], 'd', vec![]),
        (Full, vec![&get], 'a', vec![]),
        (
            Ask,
            vec![&get, &edit],
            'q',
            vec!["fetch(docs.rs)", "edit(notes.txt)"],
        ),
        // Critical is never remembered, whatever comes with it.
        (Full, vec![&critical, &read], 'q', vec![]),
        // No effect at all is an unknown one.
        (Auto, vec![], 'q', vec!["tool(effects)"]),
        (Full, vec![], 'a', vec![]),
    ];
    let mut wrong = Vec::new();
    for (mode, effects, want, want_rules) in rows {
        let args = json!({ "effects": effects });
        let call = registry
            .prepare("effects", args.clone(), &f.session)
            .unwrap();
        let got = lathe_runtime::Gate::new(mode, &f.root).check(&call, &f.session);
        let (letter, rules) = match &got {
            Verdict::Allow => ('a', vec![]),
            Verdict::Ask { rules, .. } => ('q', rules.clone()),
            Verdict::Deny { .. } => ('d', vec![]),
        };
        if letter != want || rules != want_rules {
            wrong.push(format!(
                "{mode} {args}: expected {want} {want_rules:?}, got {got:?}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_network_says_which_host_it_reaches() {
    let f = Fixture::new();
    let mut registry = Registry::new();
    registry.add(Arc::new(Remote::fetch())).unwrap();
    let call = registry
        .prepare("fetch", json!({"host": "example.com"}), &f.session)
        .unwrap();
    let Verdict::Ask { reasons, .. } =
        lathe_runtime::Gate::new(Auto, &f.root).check(&call, &f.session)
    else {
        panic!("the network must ask in auto");
    };
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("reaches example.com over the network")),
        "{reasons:?}"
    );
}
