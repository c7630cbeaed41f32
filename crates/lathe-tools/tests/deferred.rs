//! Tools offered on demand (`Registry::defer`) and `more_tools`, through the real call pipeline:
//! what a request lists before and after the model enables a tool, the catalog's listing and
//! search, mistakes the model can fix, clones and `retain`.

use std::time::Duration;

use lathe_policy::ApprovalMode::{Ask, ReadOnly};
use lathe_runtime::{CallStatus, NonInteractive, Outcome, Registry, Session};
use serde_json::{Value, json};

use crate::dispatch_support::Fixture;

fn offered(registry: &Registry, session: &Session) -> Vec<String> {
    registry.offered(session).map(|d| d.name.clone()).collect()
}

fn deferring(names: &[&str]) -> Registry {
    let mut registry = lathe_tools::builtin();
    for name in names {
        assert!(registry.defer(name), "{name} is a built-in");
    }
    registry
}

async fn call(f: &Fixture, registry: &Registry, name: &str, args: Value) -> Outcome {
    // `read-only` and `ask` both let it run unasked: it changes only which definitions the
    // session's requests carry.
    let dispatcher = f.dispatcher_with(ReadOnly, registry.clone());
    tokio::time::timeout(
        Duration::from_secs(20),
        dispatcher.call(name, args, &NonInteractive, f.ctx()),
    )
    .await
    .expect("the call did not end")
}

#[tokio::test]
async fn a_deferred_tool_is_listed_by_more_tools_and_offered_once_enabled() {
    let f = Fixture::new();
    let registry = deferring(&["grep", "glob"]);
    let before = offered(&registry, &f.session);
    assert!(!before.contains(&"grep".to_owned()) && !before.contains(&"glob".to_owned()));
    assert!(before.contains(&"more_tools".to_owned()), "{before:?}");
    assert!(before.contains(&"read_file".to_owned()));
    assert!(registry.is_deferred("grep") && !registry.is_deferred("read_file"));

    let listed = call(&f, &registry, "more_tools", json!({})).await;
    assert_eq!(listed.status, CallStatus::Ok, "{:?}", listed.output);
    let text = &listed.output.text;
    assert!(text.starts_with("2 more tools can be enabled:\n"), "{text}");
    assert!(
        text.contains("\n- grep: ") && text.contains("\n- glob: "),
        "{text}"
    );
    assert!(text.ends_with("Call more_tools with enable: [\"NAME\"] to use one."));

    let enabled = call(&f, &registry, "more_tools", json!({"enable": ["grep"]})).await;
    assert!(!enabled.output.is_error, "{}", enabled.output.text);
    let text = &enabled.output.text;
    assert!(
        text.starts_with("Enabled 1 tool; it is offered from now on"),
        "{text}"
    );
    // The full description and the schema, so the model can call it at once.
    let grep = registry.definition("grep").unwrap();
    assert!(text.contains(grep.description.trim()), "{text}");
    assert!(text.contains(&grep.parameters.to_string()), "{text}");

    let after = offered(&registry, &f.session);
    assert!(after.contains(&"grep".to_owned()) && !after.contains(&"glob".to_owned()));
    assert!(
        after.contains(&"more_tools".to_owned()),
        "glob is still to enable"
    );
    assert!(registry.is_offered("grep", &f.session));

    call(&f, &registry, "more_tools", json!({"enable": ["Glob"]})).await;
    let all = offered(&registry, &f.session);
    assert!(
        all.contains(&"glob".to_owned()),
        "a folded name enables the tool: {all:?}"
    );
    assert!(
        !all.contains(&"more_tools".to_owned()),
        "nothing left to enable: {all:?}"
    );
}

#[tokio::test]
async fn a_deferred_tool_stays_callable_by_name_and_other_sessions_do_not_see_it_enabled() {
    let f = Fixture::new();
    let registry = deferring(&["grep"]);
    let found = call(&f, &registry, "grep", json!({"pattern": "TODO"})).await;
    assert_eq!(found.status, CallStatus::Ok, "{:?}", found.output);
    assert!(
        found.output.text.contains("src/lib.rs"),
        "{}",
        found.output.text
    );

    call(&f, &registry, "more_tools", json!({"enable": ["grep"]})).await;
    let other = Fixture::new();
    assert!(!registry.is_offered("grep", &other.session));
    assert!(registry.is_offered("grep", &f.session));
}

#[tokio::test]
async fn queries_narrow_the_list_and_unknown_names_say_what_can_be_enabled() {
    let f = Fixture::new();
    let registry = deferring(&["grep", "glob", "shell"]);
    let narrowed = call(&f, &registry, "more_tools", json!({"query": "GLOB"})).await;
    let text = &narrowed.output.text;
    assert!(text.starts_with("1 tool matches:\n- glob: "), "{text}");

    let none = call(&f, &registry, "more_tools", json!({"query": "kubernetes"})).await;
    assert!(!none.output.is_error);
    assert_eq!(
        none.output.text,
        "No tool matches `kubernetes`. The tools you can enable: `grep`, `glob`, `shell`."
    );

    let wrong = call(&f, &registry, "more_tools", json!({"enable": ["nope"]})).await;
    assert!(wrong.output.is_error);
    assert_eq!(
        wrong.output.text,
        "Not a tool to enable: `nope`. The tools you can enable: `grep`, `glob`, `shell`."
    );
    let mixed = call(
        &f,
        &registry,
        "more_tools",
        json!({"enable": ["nope", "shell"]}),
    )
    .await;
    assert!(!mixed.output.is_error, "one was enabled");
    assert!(mixed.output.text.contains("Not a tool to enable: `nope`."));
    assert!(registry.is_offered("shell", &f.session));
}

#[tokio::test]
async fn enabling_is_never_asked_about_and_listing_changes_nothing() {
    let f = Fixture::new();
    let registry = deferring(&["shell"]);
    let dispatcher = f.dispatcher_with(Ask, registry.clone());
    // `NonInteractive` refuses whatever is asked: enabling must not be asked.
    let outcome = dispatcher
        .call(
            "more_tools",
            json!({"enable": ["shell"]}),
            &NonInteractive,
            f.ctx(),
        )
        .await;
    assert_eq!(outcome.status, CallStatus::Ok, "{:?}", outcome.output);
}

#[test]
fn defer_refuses_unknown_names_and_more_tools_itself() {
    let mut registry = lathe_tools::builtin();
    assert!(!registry.defer("no_such_tool"));
    assert!(
        registry.definition("more_tools").is_none(),
        "only with a deferred tool"
    );
    assert!(registry.defer("grep"));
    assert!(!registry.defer("more_tools"));
    assert!(registry.defer("grep"), "deferring twice is fine");
    assert_eq!(registry.deferred().count(), 1);
}

#[tokio::test]
async fn clones_keep_their_own_catalog_and_retain_drops_more_tools_with_the_last_deferred_tool() {
    let f = Fixture::new();
    let parent = deferring(&["grep"]);
    let mut child = parent.clone();
    child.defer("glob");
    let listed = call(&f, &parent, "more_tools", json!({})).await;
    assert!(
        !listed.output.text.contains("glob"),
        "{}",
        listed.output.text
    );
    let listed = call(&f, &child, "more_tools", json!({})).await;
    assert!(
        listed.output.text.contains("- glob: "),
        "{}",
        listed.output.text
    );

    // A read-only sub-agent keeps `more_tools` while a deferred tool remains...
    child.retain(|d| d.name != "glob" && d.name != "shell");
    let listed = call(&f, &child, "more_tools", json!({})).await;
    assert!(
        listed
            .output
            .text
            .starts_with("1 more tool can be enabled:\n- grep")
    );
    // ...and loses it with the last one.
    child.retain(|d| d.name != "grep");
    assert!(child.definition("more_tools").is_none());
    assert!(!child.is_deferred("grep"));
    assert!(parent.definition("more_tools").is_some());
}

#[tokio::test]
async fn allow_only_narrows_what_is_offered_and_refuses_the_rest_until_lifted() {
    let f = Fixture::new();
    let registry = lathe_tools::builtin();
    f.session.allow_only(Some((
        vec!["read_file".to_owned(), "grep".to_owned()],
        "the command /review allows only these".to_owned(),
    )));
    assert_eq!(offered(&registry, &f.session), ["grep", "read_file"]);
    let dispatcher = f.dispatcher_with(lathe_policy::ApprovalMode::Full, registry.clone());
    let refused = dispatcher
        .call(
            "shell",
            json!({"command": "touch made"}),
            &NonInteractive,
            f.ctx(),
        )
        .await;
    assert_eq!(refused.status, CallStatus::Refused);
    assert_eq!(
        refused.output.text,
        "`shell` is not available now: the command /review allows only these. Use one of: \
         `grep`, `read_file`."
    );
    assert!(!f.path("made").exists(), "nothing ran");
    let read = call(&f, &registry, "read_file", json!({"path": "src/lib.rs"})).await;
    assert_eq!(read.status, CallStatus::Ok, "{:?}", read.output);

    f.session.allow_only(None);
    assert!(offered(&registry, &f.session).contains(&"shell".to_owned()));
}
