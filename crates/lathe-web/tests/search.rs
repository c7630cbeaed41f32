//! `web_search` against a scripted SearXNG server: offered only with a backend, results as
//! title, URL and snippet, the query sent as SearXNG takes it.

use lathe_runtime::dispatch::CallStatus;
use lathe_testkit::{Response, Script, ScriptedServer};
use lathe_web::WebConfig;
use serde_json::json;

use crate::support::Fixture;

fn searxng() -> ScriptedServer {
    let results = json!({
        "query": "serde flatten",
        "number_of_results": 3,
        "results": [
            {"title": "Struct flattening · Serde", "url": "https://serde.rs/attr-flatten.html",
             "content": "The flatten attribute inlines keys from a field into the containing struct.",
             "engine": "duckduckgo"},
            {"title": "Field attributes", "url": "https://serde.rs/field-attrs.html",
             "content": "#[serde(flatten)] Flatten the contents of this field into the container\n it is defined in."},
            {"title": "serde - Rust", "url": "https://docs.rs/serde", "content": ""}
        ],
        "answers": [], "suggestions": []
    });
    ScriptedServer::start(Script::new().always("/search", Response::json(200, &results))).unwrap()
}

#[tokio::test]
async fn results_come_as_title_url_and_snippet() {
    let server = searxng();
    let config = WebConfig {
        search_url: Some(format!("{}/search", server.url())),
        ..WebConfig::default()
    };
    // The configured backend is reached although it is on loopback: the configuration names it.
    let f = Fixture::new(&[], config);
    let out = f
        .call("web_search", json!({"query": "serde flatten", "limit": 2}))
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let text = &out.output.text;
    assert!(text.contains("1. Struct flattening · Serde\n   https://serde.rs/attr-flatten.html\n   The flatten attribute"), "{text}");
    assert!(
        text.contains("Flatten the contents of this field into the container it is defined in."),
        "snippets on one line: {text}"
    );
    assert!(!text.contains("docs.rs"), "limit 2: {text}");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/search");
    assert_eq!(
        request.query.as_deref(),
        Some("q=serde+flatten&format=json")
    );
}

#[tokio::test]
async fn without_a_backend_the_tool_is_not_offered() {
    let f = Fixture::new(&[], WebConfig::default());
    let registry = Fixture::registry();
    assert!(!registry.is_offered("web_search", &f.session));
    assert!(registry.is_offered("web_fetch", &f.session));
    // Called by name anyway, it says what to do.
    let out = f.call("web_search", json!({"query": "x"})).await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(
        out.output.text.contains("[web] search_url"),
        "{}",
        out.output.text
    );
    let server = searxng();
    let with = Fixture::new(
        &[],
        WebConfig {
            search_url: Some(format!("{}/search", server.url())),
            ..WebConfig::default()
        },
    );
    assert!(registry.is_offered("web_search", &with.session));
}

#[tokio::test]
async fn a_backend_that_refuses_json_says_how_to_fix_it() {
    let server = ScriptedServer::start(
        Script::new().always("/search", Response::new(403).text("Forbidden")),
    )
    .unwrap();
    let f = Fixture::new(
        &[],
        WebConfig {
            search_url: Some(format!("{}/search", server.url())),
            ..WebConfig::default()
        },
    );
    let out = f.call("web_search", json!({"query": "x"})).await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(
        out.output.text.contains("search.formats"),
        "{}",
        out.output.text
    );
}

#[test]
fn fetches_and_searches_only_read() {
    // Read-only calls run concurrently in the agent and take no checkpoint.
    let f = Fixture::new(
        &[],
        WebConfig {
            search_url: Some("http://127.0.0.1:9/search".into()),
            ..WebConfig::default()
        },
    );
    let registry = Fixture::registry();
    for (name, args) in [
        ("web_fetch", json!({"url": "https://docs.rs/serde"})),
        ("web_search", json!({"query": "serde"})),
    ] {
        let call = registry.prepare(name, args, &f.session).unwrap();
        assert!(call.only_reads(), "{name}");
        assert_eq!(
            call.effects,
            [lathe_runtime::Effect::Fetch {
                host: if name == "web_fetch" {
                    "docs.rs"
                } else {
                    "127.0.0.1"
                }
                .into()
            }]
        );
    }
}
