//! Fetching is a permission: the real gate judges `web_fetch`'s host in each mode, with
//! `fetch(HOST)` rules and "always for this host".

use std::sync::Arc;

use lathe_policy::ApprovalMode;
use lathe_runtime::ToolContext;
use lathe_runtime::dispatch::{ApprovalDecision, CallStatus};
use lathe_testkit::{Framing, Response, Script, ScriptedServer};
use lathe_web::WebConfig;
use serde_json::json;

use crate::support::{Answers, Fixture};

fn server() -> ScriptedServer {
    ScriptedServer::start(
        Script::new().always(
            "/page",
            Response::new(200)
                .header("content-type", "text/plain")
                .text("hello from the page\n")
                .framing(Framing::Length),
        ),
    )
    .unwrap()
}

#[tokio::test]
async fn read_only_refuses_a_fetch_unless_a_rule_allows_the_host() {
    let server = server();
    let url = format!("{}/page", server.url());
    // The guard would let 127.0.0.1 through (a rule names it for the test server), but the
    // gate's read-only mode refuses before anything is fetched: the rule `tool(grep)` is not one
    // for this host.
    let f = Fixture::new(&["tool(grep)"], WebConfig::default());
    let guard_only = Fixture::new(&["fetch(127.0.0.1)"], WebConfig::default());
    let out = f
        .call_in(ApprovalMode::ReadOnly, "web_fetch", json!({"url": url}))
        .await;
    assert_eq!(out.status, CallStatus::Denied, "{}", out.output.text);
    let text = &out.output.text;
    assert!(text.contains("read-only"), "{text}");
    assert!(
        text.contains("`fetch(127.0.0.1)`"),
        "names the rule that allows it: {text}"
    );
    assert!(server.requests().is_empty());
    // With the rule, read-only fetches from that host.
    let out = guard_only
        .call_in(ApprovalMode::ReadOnly, "web_fetch", json!({"url": url}))
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    assert!(out.output.text.contains("hello from the page"));
}

#[tokio::test]
async fn ask_mode_asks_and_always_is_for_this_host() {
    let server = server();
    let url = format!("{}/page", server.url());
    // The test server is on loopback, so the web tools are told the rule that names it; the
    // gate has no rule, and judges the host as it would any public one.
    let f = Fixture::new(&["fetch(127.0.0.1)"], WebConfig::default());
    let gate = lathe_runtime::dispatch::Gate::new(ApprovalMode::Ask, f.session.workspace().root());
    let dispatcher =
        lathe_runtime::dispatch::Dispatcher::new(Arc::new(Fixture::registry()), Arc::new(gate));
    let ctx = || ToolContext::new(Arc::clone(&f.session));
    // A "no" fetches nothing.
    let no = Answers::new(ApprovalDecision::Deny { message: None });
    let out = dispatcher
        .call("web_fetch", json!({"url": url}), &no, ctx())
        .await;
    assert_eq!(out.status, CallStatus::Denied, "{}", out.output.text);
    assert_eq!(no.requests().len(), 1);
    assert!(server.requests().is_empty());
    // "Always" is offered for the host, and remembered for it.
    let always = Answers::new(ApprovalDecision::AllowSession);
    let out = dispatcher
        .call("web_fetch", json!({"url": url}), &always, ctx())
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let request = &always.requests()[0];
    assert_eq!(request.rules, ["fetch(127.0.0.1)"]);
    assert_eq!(request.scope, "the host 127.0.0.1 (fetch(127.0.0.1))");
    assert!(
        request
            .reasons
            .iter()
            .any(|r| r.contains("web_fetch fetches from 127.0.0.1")),
        "{:?}",
        request.reasons
    );
    let again = dispatcher
        .call(
            "web_fetch",
            json!({"url": format!("{}/page?second", server.url())}),
            &always,
            ctx(),
        )
        .await;
    assert_eq!(again.status, CallStatus::Ok, "{}", again.output.text);
    assert_eq!(always.requests().len(), 1, "asked again for the same host");
    // Another host is asked about on its own.
    let other = dispatcher
        .call(
            "web_fetch",
            json!({"url": format!("http://localhost:{}/page", server.port())}),
            &no,
            ctx(),
        )
        .await;
    assert_eq!(other.status, CallStatus::Denied);
    assert_eq!(no.requests().len(), 2);
}

#[tokio::test]
async fn auto_mode_asks_before_fetching_and_a_deny_rule_refuses() {
    let server = server();
    let url = format!("{}/page", server.url());
    let f = Fixture::new(&["fetch(127.0.0.1)"], WebConfig::default());
    let gate = lathe_runtime::dispatch::Gate::new(ApprovalMode::Auto, f.session.workspace().root());
    let dispatcher =
        lathe_runtime::dispatch::Dispatcher::new(Arc::new(Fixture::registry()), Arc::new(gate));
    let once = Answers::new(ApprovalDecision::AllowOnce);
    let out = dispatcher
        .call(
            "web_fetch",
            json!({"url": url}),
            &once,
            ToolContext::new(Arc::clone(&f.session)),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    assert_eq!(once.requests().len(), 1);
    let denying = lathe_policy::PermissionsConfig {
        deny: vec!["fetch(127.0.0.*)".into()],
        ..f.permissions.clone()
    };
    let gate = lathe_runtime::dispatch::Gate::with_permissions(
        &denying,
        ApprovalMode::Full,
        f.session.workspace().root(),
        false,
    )
    .unwrap();
    let dispatcher =
        lathe_runtime::dispatch::Dispatcher::new(Arc::new(Fixture::registry()), Arc::new(gate));
    let out = dispatcher
        .call(
            "web_fetch",
            json!({"url": url}),
            &once,
            ToolContext::new(Arc::clone(&f.session)),
        )
        .await;
    assert_eq!(out.status, CallStatus::Denied, "{}", out.output.text);
    assert!(
        out.output.text.contains("fetch(127.0.0.*)"),
        "{}",
        out.output.text
    );
    assert_eq!(server.requests().len(), 1);
}
