//! `web_fetch` against a real HTTP server on 127.0.0.1: conversion, charsets, redirects, limits,
//! paging, and the address guard. The server is on loopback, so these tests allow it by rule
//! (`fetch(127.0.0.1)`), and `the_same_url_is_refused_without_the_rule` shows that they must.

use lathe_runtime::dispatch::CallStatus;
use lathe_testkit::{Framing, Response, Script, ScriptedServer};
use lathe_web::WebConfig;
use serde_json::json;

use crate::support::Fixture;

const SERVER: &[&str] = &["fetch(127.0.0.1)"];

fn html(body: &str) -> Response {
    Response::new(200)
        .header("content-type", "text/html; charset=utf-8")
        .text(body)
        .framing(Framing::Length)
}

const ARTICLE: &str = r#"<!doctype html><html><head><title>Borrowing in depth</title></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/blog">Blog index</a></li><li>Sign in to comment</li></ul></nav>
<header><div class="site-banner">Subscribe to the newsletter</div></header>
<article>
<h1>Borrowing in depth</h1>
<p>A reference borrows a value without taking ownership of it. The borrow checker makes sure
that no reference outlives the value it points to, and that a value is either shared or
changed, never both at once.</p>
<p>Mutable references are exclusive: while one exists, no other reference to the same value
can be used. This rule prevents data races at compile time, which is why Rust can promise
thread safety without a garbage collector.</p>
<p>Lifetimes name how long a reference is valid. Most of the time the compiler infers them,
and you write them only where a function returns a reference tied to one of its inputs.</p>
<pre><code>fn longest&lt;'a&gt;(a: &amp;'a str, b: &amp;'a str) -&gt; &amp;'a str { if a.len() &gt; b.len() { a } else { b } }</code></pre>
</article>
<footer>Copyright 2026 Example Corp. All rights reserved. Privacy policy.</footer>
</body></html>"#;

#[tokio::test]
async fn html_becomes_the_article_as_markdown_without_navigation() {
    let server = ScriptedServer::start(Script::new().always("/post", html(ARTICLE))).unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/post", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let text = &out.output.text;
    assert!(text.contains("Borrowing in depth"), "{text}");
    assert!(text.contains("Mutable references are exclusive"), "{text}");
    assert!(text.contains("fn longest<'a>"), "{text}");
    assert!(text.contains("the article, as Markdown"), "{text}");
    for chrome in [
        "Blog index",
        "Sign in to comment",
        "newsletter",
        "Copyright 2026",
    ] {
        assert!(!text.contains(chrome), "{chrome} left in: {text}");
    }
    assert!(!text.contains("<p>"), "{text}");
}

#[tokio::test]
async fn the_same_url_is_refused_without_the_rule() {
    let server = ScriptedServer::start(Script::new().always("/post", html(ARTICLE))).unwrap();
    let f = Fixture::new(&[], WebConfig::default());
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/post", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Error);
    let text = &out.output.text;
    assert!(text.contains("127.0.0.1 is a loopback address"), "{text}");
    assert!(text.contains("`fetch(127.0.0.1)`"), "{text}");
    assert!(server.requests().is_empty(), "the server was reached");
    // A rule that names every host (`fetch(*)`) is not one that names this one.
    let wide = Fixture::new(&["fetch(*)"], WebConfig::default());
    let out = wide
        .call(
            "web_fetch",
            json!({"url": format!("{}/post", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Error, "{}", out.output.text);
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused_unless_a_rule_names_it() {
    let server = ScriptedServer::start(Script::new().always("/", html(ARTICLE))).unwrap();
    let url = format!("http://localhost:{}/", server.port());
    let f = Fixture::new(&[], WebConfig::default());
    let out = f.call("web_fetch", json!({"url": url})).await;
    assert_eq!(out.status, CallStatus::Error);
    let text = &out.output.text;
    assert!(text.contains("localhost resolves to"), "{text}");
    assert!(text.contains("a loopback address"), "{text}");
    assert!(server.requests().is_empty());
    // Naming the host, or the address it resolves to, lets it through.
    for rule in ["fetch(localhost)", "fetch(127.0.0.1)"] {
        let allowed = Fixture::new(&[rule], WebConfig::default());
        let out = allowed.call("web_fetch", json!({"url": url})).await;
        assert_eq!(out.status, CallStatus::Ok, "{rule}: {}", out.output.text);
    }
}

#[tokio::test]
async fn addresses_in_other_forms_are_refused_too() {
    let f = Fixture::new(&[], WebConfig::default());
    // Nothing listens on these: the refusal comes before any connection.
    for (url, range) in [
        ("http://[::ffff:127.0.0.1]:9/", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
        ("http://[fd00:ec2::254]/", "cloud metadata"),
        ("http://10.0.0.1/", "private"),
        ("http://0.0.0.0:9/", "unspecified"),
        ("http://2130706433/", "loopback"),
    ] {
        let out = f.call("web_fetch", json!({"url": url})).await;
        assert_eq!(out.status, CallStatus::Error, "{url}");
        assert!(
            out.output.text.contains(range),
            "{url}: {}",
            out.output.text
        );
    }
}

#[tokio::test]
async fn redirects_on_the_same_host_are_followed() {
    let server = ScriptedServer::start(
        Script::new()
            .always("/old", Response::new(301).header("location", "/moved"))
            .always("/moved", Response::new(302).header("location", "new?x=1"))
            .always(
                "/new",
                html("<html><body><p>the new place</p></body></html>"),
            ),
    )
    .unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call("web_fetch", json!({"url": format!("{}/old", server.url())}))
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let text = &out.output.text;
    assert!(text.contains("the new place"), "{text}");
    assert!(text.contains("redirected 2 times"), "{text}");
    assert!(text.contains("/new?x=1"), "the final URL is shown: {text}");
}

#[tokio::test]
async fn the_redirect_limit_stops_a_loop() {
    let server = ScriptedServer::start(
        Script::new().always("/loop", Response::new(302).header("location", "/loop")),
    )
    .unwrap();
    let config = WebConfig {
        max_redirects: 3,
        ..WebConfig::default()
    };
    let f = Fixture::new(SERVER, config);
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/loop", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(
        out.output.text.contains("redirected more than 3 times"),
        "{}",
        out.output.text
    );
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_redirect_to_a_loopback_address_is_refused() {
    let server = ScriptedServer::start(Script::new()).unwrap();
    // The first host is allowed; the one it redirects to is loopback too, and no rule names it
    // (`localhost` would be let through: it resolves to 127.0.0.1, which the rule names).
    for target in [
        format!("http://127.0.0.2:{}/admin", server.port()),
        "http://[::1]/admin".to_owned(),
    ] {
        server.add(lathe_testkit::Route::once(
            lathe_testkit::PathMatch::Exact("/go".into()),
            Response::new(302).header("location", &target),
        ));
        let f = Fixture::new(SERVER, WebConfig::default());
        let out = f
            .call("web_fetch", json!({"url": format!("{}/go", server.url())}))
            .await;
        assert_eq!(
            out.status,
            CallStatus::Error,
            "{target}: {}",
            out.output.text
        );
        let text = &out.output.text;
        assert!(text.contains("not fetched"), "{text}");
        assert!(text.contains("loopback address"), "{text}");
    }
    assert!(server.requests().iter().all(|r| r.path == "/go"));
}

#[tokio::test]
async fn a_redirect_to_another_host_is_left_to_a_call_of_its_own() {
    let server = ScriptedServer::start(Script::new().always(
        "/docs",
        Response::new(301).header("location", "https://docs.example.org/start"),
    ))
    .unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/docs", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let text = &out.output.text;
    assert!(text.contains("https://docs.example.org/start"), "{text}");
    assert!(text.contains("call web_fetch with that URL"), "{text}");
}

#[tokio::test]
async fn a_body_over_the_size_limit_is_cut_and_says_so() {
    let server = ScriptedServer::start(
        Script::new().always(
            "/big",
            Response::new(200)
                .header("content-type", "text/plain")
                .repeat("0123456789abcdef\n", 8 << 20),
        ),
    )
    .unwrap();
    let config = WebConfig {
        max_bytes: 64 * 1024,
        ..WebConfig::default()
    };
    let f = Fixture::new(SERVER, config);
    let out = f
        .call("web_fetch", json!({"url": format!("{}/big", server.url())}))
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    let text = &out.output.text;
    assert!(text.contains("larger than the limit of 64.0 KB"), "{text}");
    assert_eq!(out.output.metadata.extra["cut"], json!(true));
    // 64 KiB of 17-byte lines.
    assert!(text.contains("of 3856"), "{text}");
}

#[tokio::test]
async fn the_declared_charset_is_decoded() {
    let server = ScriptedServer::start(
        Script::new()
            .always(
                "/latin",
                Response::new(200)
                    .header("content-type", "text/plain; charset=ISO-8859-1")
                    .bytes(b"caf\xe9 cr\xe8me br\xfbl\xe9e\n".to_vec())
                    .framing(Framing::Length),
            )
            .always(
                "/meta",
                Response::new(200)
                    .header("content-type", "text/html")
                    .bytes(
                        b"<html><head><meta charset=\"iso-8859-1\"><title>Men\xfc</title></head>\
                          <body><p>Gr\xfc\xdfe aus K\xf6ln</p></body></html>"
                            .to_vec(),
                    )
                    .framing(Framing::Length),
            ),
    )
    .unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/latin", server.url())}),
        )
        .await;
    assert!(
        out.output.text.contains("café crème brûlée"),
        "{}",
        out.output.text
    );
    assert!(
        out.output.text.contains("decoded from windows-1252"),
        "{}",
        out.output.text
    );
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/meta", server.url())}),
        )
        .await;
    assert!(
        out.output.text.contains("Grüße aus Köln"),
        "{}",
        out.output.text
    );
}

#[tokio::test]
async fn json_is_pretty_printed_and_text_kept() {
    let server = ScriptedServer::start(
        Script::new()
            .always(
                "/api",
                Response::json(
                    200,
                    &json!({"name": "serde", "versions": ["1.0.0", "1.0.1"]}),
                ),
            )
            .always(
                "/readme",
                Response::new(200)
                    .header("content-type", "text/markdown")
                    .text("# Title\n\n  indented   text  \n")
                    .framing(Framing::Length),
            ),
    )
    .unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call("web_fetch", json!({"url": format!("{}/api", server.url())}))
        .await;
    let text = &out.output.text;
    assert!(text.contains("JSON, pretty-printed"), "{text}");
    assert!(text.contains("\t  \"name\": \"serde\","), "{text}");
    assert!(text.contains("\t    \"1.0.0\","), "{text}");
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/readme", server.url())}),
        )
        .await;
    assert!(
        out.output.text.contains("\t  indented   text"),
        "{}",
        out.output.text
    );
}

#[tokio::test]
async fn a_long_page_is_paged_from_the_copy_kept_in_the_session() {
    let lines: String = (1..=400).map(|n| format!("line number {n}\n")).collect();
    let server = ScriptedServer::start(
        Script::new().always(
            "/long",
            Response::new(200)
                .header("content-type", "text/plain")
                .text(lines)
                .framing(Framing::Length),
        ),
    )
    .unwrap();
    let f = Fixture::with_budget(SERVER, WebConfig::default(), 2_000);
    let url = format!("{}/long", server.url());
    let first = f.call("web_fetch", json!({"url": url})).await;
    let text = &first.output.text;
    assert!(text.contains("line number 1\n"), "{text}");
    assert!(!text.contains("line number 400"), "{text}");
    let next: u64 = text
        .split("with offset=")
        .nth(1)
        .and_then(|rest| {
            rest.trim_end_matches(|c: char| !c.is_ascii_digit())
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no offset to read on: {text}"));
    let second = f
        .call(
            "web_fetch",
            json!({"url": url, "offset": next, "limit": 500}),
        )
        .await;
    let text = &second.output.text;
    assert!(text.contains(&format!("line number {next}\n")), "{text}");
    assert!(text.contains("line number 400"), "{text}");
    assert!(text.contains("from the copy fetched earlier"), "{text}");
    assert_eq!(server.requests().len(), 1, "paging fetched again");
}

#[tokio::test]
async fn a_pdf_is_saved_and_named_where_no_document_reader_is_built_in_and_binaries_are_not_shown()
{
    let pdf = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../lathe-documents/tests/fixtures/pages.pdf"),
    )
    .unwrap();
    let server = ScriptedServer::start(
        Script::new()
            .always(
                "/paper.pdf",
                Response::new(200)
                    .header("content-type", "application/pdf")
                    .bytes(pdf.clone())
                    .framing(Framing::Length),
            )
            .always(
                "/logo.png",
                Response::new(200)
                    .header("content-type", "image/png")
                    .bytes(vec![0x89, b'P', b'N', b'G', 0, 0])
                    .framing(Framing::Length),
            ),
    )
    .unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/paper.pdf", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Ok, "{}", out.output.text);
    // lathe-web alone converts no documents: the PDF is kept, and the model is told where.
    let text = &out.output.text;
    assert!(text.contains("read_document reads it again"), "{text}");
    assert!(
        text.contains("no document reader is built into this runtime"),
        "{text}"
    );
    let saved = out.output.metadata.path.clone().unwrap();
    assert_eq!(std::fs::read(&saved).unwrap(), pdf);
    assert!(saved.starts_with(f.dir.path().join("state").to_str().unwrap()));
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/logo.png", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Error);
    assert!(out.output.text.contains("image/png"), "{}", out.output.text);
}

#[tokio::test]
async fn an_error_status_and_a_bad_url_say_what_happened() {
    let server = ScriptedServer::start(Script::new().always(
        "/gone",
        html("<html><body><p>No such page here.</p></body></html>").framing(Framing::Length),
    ))
    .unwrap();
    let f = Fixture::new(SERVER, WebConfig::default());
    let out = f
        .call(
            "web_fetch",
            json!({"url": format!("{}/missing", server.url())}),
        )
        .await;
    assert_eq!(out.status, CallStatus::Error);
    // The scripted server answers an unknown path with 500.
    assert!(
        out.output.text.starts_with("HTTP 500"),
        "{}",
        out.output.text
    );
    for (args, says) in [
        (json!({"url": server.url(), "offset": -1}), "offset must be"),
        (json!({"url": server.url(), "limit": 0}), "limit must be"),
    ] {
        let out = f.call("web_fetch", args).await;
        assert!(out.output.text.starts_with(says), "{}", out.output.text);
    }
    assert_eq!(
        server.requests().len(),
        1,
        "fetched with wrong paging arguments"
    );
    for (url, says) in [
        ("docs.rs/serde", "not a URL"),
        ("ftp://example.com/x", "only http:// and https://"),
        ("file:///etc/passwd", "use read_file"),
    ] {
        let out = f.call("web_fetch", json!({"url": url})).await;
        assert_eq!(out.status, CallStatus::Error, "{url}");
        assert!(out.output.text.contains(says), "{url}: {}", out.output.text);
    }
}
