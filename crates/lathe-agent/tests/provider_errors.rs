//! Errors a user can act on, against the scripted server and real dead ports: retries that say
//! they are waiting, a refused key that names the key setting, a host that does not resolve,
//! the advice for a server that is not running, and a server that speaks the other protocol.

use std::time::Duration;

use lathe_agent::message::Message;
use lathe_agent::provider::{
    ChatRequest, ProviderConfig, ProviderError, ProviderKind, RetryPolicy, connect,
};
use lathe_testkit::{Response, Script, ScriptedServer, ollama, openai};

use crate::common::{Failure, dead_url, notices, provider, tools, try_turn, turn};

const MODEL: &str = "qwen3:8b";

fn request() -> ChatRequest {
    ChatRequest::new(MODEL, vec![Message::user("hi")], tools())
}

/// Retries without a backoff of their own, but honouring the server's `Retry-After`.
fn after_only(retries: u32) -> RetryPolicy {
    RetryPolicy {
        retries,
        initial_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
        max_retry_after: Duration::from_secs(30),
    }
}

#[tokio::test]
async fn each_retry_says_why_and_how_long_it_waits() {
    let server = ScriptedServer::start(
        Script::new()
            .ollama_models(&[MODEL], &["completion", "tools"])
            .chat(ollama::error(503, "server busy, please try again"))
            .chat(ollama::error(429, "slow down").header("retry-after", "1"))
            .chat(ollama::turn(MODEL).text("finally").done()),
    )
    .unwrap();
    let p = connect(
        ProviderKind::Ollama,
        ProviderConfig::new(server.url()).retry(after_only(3)),
    )
    .unwrap();
    let (turn, events) = turn(p.as_ref(), &request()).await;
    assert_eq!(turn.content, "finally");
    assert_eq!(
        notices(&events),
        [
            "model server busy (503): retrying in 0 s (attempt 1 of 3)",
            // The server's Retry-After, not the (zero) backoff.
            "model server rate-limited the request (429): retrying in 1 s (attempt 2 of 3)",
        ]
    );
    assert_eq!(server.chat_requests().len(), 3);
}

#[tokio::test]
async fn retries_that_run_out_end_with_the_last_error_after_saying_so() {
    let server = ScriptedServer::start(
        Script::new().always("/v1/chat/completions", openai::error(503, "overloaded")),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let failure = try_turn(p.as_ref(), &request()).await.unwrap_err();
    let Failure::Stream(failure) = failure else {
        panic!("the retries are told in the stream: {failure:?}");
    };
    assert!(
        matches!(&failure.error, ProviderError::Http { status: 503, body, .. } if body == "overloaded"),
        "{:?}",
        failure.error
    );
    assert_eq!(
        failure.partial.notices,
        (1..=3)
            .map(|n| format!("model server busy (503): retrying in 0 s (attempt {n} of 3)"))
            .collect::<Vec<_>>()
    );
    assert_eq!(server.chat_requests().len(), 4);
}

#[tokio::test]
async fn a_refused_key_names_the_key_setting() {
    let server = ScriptedServer::start(Script::new().always(
        "/v1/chat/completions",
        openai::error(401, "Incorrect API key provided"),
    ))
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let failure = try_turn(p.as_ref(), &request()).await.unwrap_err();
    assert_eq!(
        failure.error().to_string(),
        format!(
            "the model server at {}/v1 refused the API key (http 401: Incorrect API key provided); set OPENAI_API_KEY, or api_key under [model] in the configuration",
            server.url()
        )
    );
    assert_eq!(server.chat_requests().len(), 1, "a 401 is not retried");

    // No key at all: say that none was sent. (Ollama behind a proxy that wants one.)
    let server = ScriptedServer::start(Script::new().always(
        "/api/show",
        Response::json(403, &serde_json::json!({"error": "forbidden"})),
    ))
    .unwrap();
    let p = connect(
        ProviderKind::Ollama,
        ProviderConfig::new(server.url()).retry(RetryPolicy::none()),
    )
    .unwrap();
    let failure = try_turn(p.as_ref(), &request()).await.unwrap_err();
    let message = failure.error().to_string();
    assert!(
        message.contains("needs an API key and none was sent (http 403: forbidden)")
            && message.contains("OPENAI_API_KEY"),
        "{message}"
    );
}

#[tokio::test]
async fn a_host_that_does_not_resolve_is_not_a_server_that_is_down() {
    // RFC 2606: `.invalid` never resolves.
    for kind in [ProviderKind::Ollama, ProviderKind::OpenAi] {
        let url = "http://lathe-model-server.invalid:11434/v1";
        let p = provider(kind, url);
        let failure = try_turn(p.as_ref(), &request()).await.unwrap_err();
        assert!(
            matches!(failure.error(), ProviderError::UnknownHost { host, .. } if host == "lathe-model-server.invalid"),
            "{kind:?}: {:?}",
            failure.error()
        );
        let message = failure.error().to_string();
        assert!(
            message.starts_with("cannot resolve the host name 'lathe-model-server.invalid' of the model server at http://lathe-model-server.invalid:11434/v1"),
            "{message}"
        );
        assert!(!message.contains("no model server"), "{message}");
    }
}

#[tokio::test]
async fn nothing_listening_gets_advice_for_the_protocol_asked_for() {
    let url = dead_url();
    let p = provider(ProviderKind::OpenAi, &format!("{url}/v1"));
    let message = try_turn(p.as_ref(), &request())
        .await
        .unwrap_err()
        .error()
        .to_string();
    assert_eq!(
        message,
        format!(
            "no model server at {url}/v1: start an OpenAI-compatible server there (llama-server -m MODEL.gguf --port 8080, vllm serve MODEL), or pass --base-url with the address of a running one"
        )
    );
    assert!(!message.contains("ollama"), "{message}");
    let p = provider(ProviderKind::Ollama, &url);
    let message = try_turn(p.as_ref(), &request())
        .await
        .unwrap_err()
        .error()
        .to_string();
    assert_eq!(
        message,
        format!(
            "no model server at {url}: start Ollama (ollama serve), or pass --base-url with the address of a running server"
        )
    );
}

/// What Go's router (Ollama) and most servers answer for a path they do not have.
fn not_found() -> Response {
    Response::new(404)
        .header("content-type", "text/plain")
        .text("404 page not found")
        .framing(lathe_testkit::Framing::Length)
}

#[tokio::test]
async fn the_ollama_provider_at_an_openai_url_suggests_the_openai_provider() {
    // Ollama's own `/v1`: everything under /v1/api/ is unknown.
    let server = ScriptedServer::start(
        Script::new()
            .openai_models(&[MODEL])
            .always("/v1/api/show", not_found())
            .always("/v1/api/tags", not_found())
            .always("/v1/api/chat", not_found()),
    )
    .unwrap();
    let url = format!("{}/v1", server.url());
    let p = provider(ProviderKind::Ollama, &url);
    let message = try_turn(p.as_ref(), &request())
        .await
        .unwrap_err()
        .error()
        .to_string();
    assert_eq!(
        message,
        format!(
            "the server at {url} does not answer Ollama's API (/api/...) but answers the OpenAI-compatible one: pass --provider openai, or drop the /v1 from the URL to use Ollama's own API"
        )
    );

    // llama.cpp's server at its root: no /api/, but /v1/models.
    let server = ScriptedServer::start(
        Script::new()
            .openai_models(&[MODEL])
            .always("/api/show", not_found())
            .always("/api/tags", not_found())
            .always("/api/chat", not_found()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    let failure = try_turn(p.as_ref(), &request()).await.unwrap_err();
    assert!(
        matches!(failure.error(), ProviderError::WrongProtocol { url } if *url == server.url()),
        "{:?}",
        failure.error()
    );
    assert!(
        failure
            .error()
            .to_string()
            .ends_with("pass --provider openai"),
        "{}",
        failure.error()
    );
}

#[tokio::test]
async fn capabilities_assumed_while_the_server_was_busy_are_asked_again() {
    let busy = || ollama::error(503, "busy");
    let server = ScriptedServer::start(
        Script::new()
            // One try and three retries, all busy: assumed for now, and asked again when the
            // chat request needs them (the wrapper asked first).
            .once("/api/show", busy())
            .once("/api/show", busy())
            .once("/api/show", busy())
            .once("/api/show", busy())
            .ollama_models(&[MODEL], &["completion", "tools", "thinking"])
            .chat(ollama::turn(MODEL).text("a").done())
            .chat(ollama::turn(MODEL).text("b").done()),
    )
    .unwrap();
    let p = provider(ProviderKind::Ollama, &server.url());
    turn(p.as_ref(), &request()).await;
    turn(p.as_ref(), &request()).await;
    let bodies = server.chat_bodies();
    for body in &bodies {
        assert_eq!(
            body["think"], true,
            "the busy answer was not kept as what the model can do: {body}"
        );
    }
    let shows = server
        .requests()
        .iter()
        .filter(|r| r.path == "/api/show")
        .count();
    assert_eq!(shows, 5, "asked until it answered, then cached");
}

#[tokio::test]
async fn a_refusal_of_tools_after_a_retry_still_switches_to_the_text_protocol() {
    // llama.cpp's server while it loads the model, then without --jinja.
    let server = ScriptedServer::start(
        Script::new()
            .chat(openai::error(503, "Loading model"))
            .chat(openai::error(400, "tools param requires --jinja flag"))
            .chat(
                openai::turn(MODEL)
                    .text("Plain answer.")
                    .finish("stop")
                    .done(),
            ),
    )
    .unwrap();
    let p = provider(ProviderKind::OpenAi, &server.url());
    let (turn, events) = turn(p.as_ref(), &request()).await;
    assert_eq!(turn.content, "Plain answer.");
    assert_eq!(
        notices(&events),
        [
            "model server busy (503): retrying in 0 s (attempt 1 of 3)".to_string(),
            format!(
                "the model server refused native tool calls for {MODEL}; switched to the text tool protocol for this model"
            ),
        ]
    );
    let bodies = server.chat_bodies();
    assert_eq!(bodies.len(), 3);
    assert!(bodies[2].get("tools").is_none(), "{}", bodies[2]);
    // Remembered: the next request goes out in the text protocol at once, without a notice.
    assert!(!p.capabilities(MODEL).await.unwrap().tools);
}
