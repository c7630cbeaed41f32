//! `lathe mcp --listen ADDR`: the same server over MCP's streamable HTTP transport, at `/mcp`.
//!
//! Loopback only unless `--allow-remote`: whoever reaches the port can run commands in the
//! workspace with the server's rights (the README states the trust model).

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, OnceLock};

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::classify::{Incoming as Classified, classify};
use super::handler::{LatheServer, LazySession, Scope, Shared};
use super::sessions::{Links, Sessions};
use super::wire::MAX_MESSAGE_BYTES;

/// The path the MCP endpoint is served at.
pub const ENDPOINT: &str = "/mcp";

/// Where to listen, as `--listen` gave it: `PORT`, `:PORT`, `HOST:PORT` or `[V6]:PORT`.
/// A bare port means the loopback address.
pub async fn resolve(addr: &str) -> anyhow::Result<Vec<SocketAddr>> {
    let addr = addr.trim();
    let port_only = addr.strip_prefix(':').unwrap_or(addr);
    if let Ok(port) = port_only.parse::<u16>() {
        return Ok(vec![SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)]);
    }
    if let Ok(socket) = addr.parse::<SocketAddr>() {
        return Ok(vec![socket]);
    }
    let found: Vec<SocketAddr> = tokio::net::lookup_host(addr)
        .await
        .with_context(|| {
            format!("cannot resolve --listen address `{addr}`; give PORT or HOST:PORT, e.g. 127.0.0.1:8765")
        })?
        .collect();
    if found.is_empty() {
        anyhow::bail!("--listen address `{addr}` resolves to nothing");
    }
    Ok(found)
}

/// Refuses addresses other machines could reach unless `allow_remote`.
pub fn check_reach(addrs: &[SocketAddr], allow_remote: bool) -> anyhow::Result<()> {
    if allow_remote {
        return Ok(());
    }
    if let Some(open) = addrs.iter().find(|a| !a.ip().is_loopback()) {
        anyhow::bail!(
            "refusing to listen on {open}: it is not a loopback address, and anyone who reaches \
             it can read files and run commands in the workspace. Listen on 127.0.0.1, or pass \
             --allow-remote after reading the trust model in the README"
        );
    }
    Ok(())
}

/// Browser origins accepted by a loopback server: pages served from this machine, any port.
const LOOPBACK_ORIGINS: [&str; 6] = [
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];

/// Serves until SIGINT, SIGTERM or SIGHUP, and returns that signal's number. Sessions end
/// after `idle` without traffic (`None`: never), unless something runs or a stream is open.
pub async fn serve(
    shared: Arc<Shared>,
    addr: &str,
    allow_remote: bool,
    idle: Option<std::time::Duration>,
) -> anyhow::Result<Option<i32>> {
    let addrs = resolve(addr).await?;
    check_reach(&addrs, allow_remote)?;
    let listener = tokio::net::TcpListener::bind(addrs.as_slice())
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;

    let stop = CancellationToken::new();
    let host = Arc::new(LazySession::new(&shared));
    let links = Arc::new(Links::default());
    // No `retry` hint: resumption is not offered (see `sessions.rs`).
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop.clone())
        .with_sse_retry(None);
    if allow_remote && !local.ip().is_loopback() {
        // Remote clients name this host however they reach it; DNS rebinding is a browser
        // attack on loopback servers, which this one is not.
        config = config.disable_allowed_hosts();
    } else {
        // A web page the user visits may post to a loopback port; the MCP spec has servers
        // check `Origin`. Only pages served from this machine pass; clients that are not
        // browsers send no `Origin` and are not affected.
        config = config.with_allowed_origins(LOOPBACK_ORIGINS);
    }
    let factory = {
        let shared = Arc::clone(&shared);
        let host = Arc::clone(&host);
        let links = Arc::clone(&links);
        let stop = stop.clone();
        move || {
            Ok(LatheServer::new(
                Arc::clone(&shared),
                Scope::Http {
                    own: OnceLock::new(),
                    host: Arc::clone(&host),
                    links: Arc::clone(&links),
                },
                stop.child_token(),
            ))
        }
    };
    // Whole files travel in `write_file` arguments: the same limit as over stdio.
    let config = config.with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    let sessions = Sessions::new(idle, links);
    let service = Arc::new(StreamableHttpService::new(
        factory,
        Arc::clone(&sessions),
        config,
    ));

    // Listening for signals starts before the address is announced: a client that stops the
    // server right after it appeared must get the orderly stop, not the default action.
    let signals = termination_signals();
    // Tests and scripts read the bound address (useful with port 0) from stderr.
    eprintln!("lathe mcp: listening on http://{local}{ENDPOINT}");
    tracing::info!(%local, "listening");

    let signal = tokio::spawn(wait_for_signal(signals, stop.clone()));
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    tracing::warn!("accept failed: {err}");
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        tracing::debug!(%peer, "connection");
        let service = Arc::clone(&service);
        let sessions = Arc::clone(&sessions);
        let stop = stop.clone();
        tokio::spawn(async move {
            let routed = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = Arc::clone(&service);
                let sessions = Arc::clone(&sessions);
                async move { route(&service, &sessions, request).await }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), routed);
            tokio::pin!(connection);
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(err) = result {
                        tracing::debug!(%peer, "connection error: {err}");
                    }
                }
                () = stop.cancelled() => connection.as_mut().graceful_shutdown(),
            }
        });
    }
    // Only the signal task stops the loop: it has its number.
    let number = signal.await.ok();
    host.shutdown();
    Ok(number)
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn route(
    service: &StreamableHttpService<LatheServer, Sessions>,
    sessions: &Sessions,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    if request.uri().path() != ENDPOINT {
        let text = format!("not found: the MCP endpoint is {ENDPOINT}\n");
        return Ok(plain(StatusCode::NOT_FOUND, text));
    }
    if request.method() == Method::DELETE {
        return Ok(delete(service, sessions, request).await);
    }
    if request.method() != Method::POST {
        return Ok(service.handle(request).await);
    }
    let json = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    // A JSON body that is not a JSON-RPC message gets a JSON-RPC error (400), as over stdio,
    // rather than the SDK's plain-text 415; everything else goes to the SDK as it came.
    let (parts, body) = request.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_MESSAGE_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(err) => {
            let too_large = err
                .downcast_ref::<http_body_util::LengthLimitError>()
                .is_some();
            return Ok(if too_large {
                plain(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the request body is over {MAX_MESSAGE_BYTES} bytes\n"),
                )
            } else {
                plain(
                    StatusCode::BAD_REQUEST,
                    format!("cannot read the body: {err}\n"),
                )
            });
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        let reply = super::classify::error_reply(
            serde_json::Value::Null,
            -32700,
            "parse error: the request body is empty; POST one JSON-RPC 2.0 message as JSON".into(),
        );
        return Ok(json_error(&reply));
    }
    if !json {
        return Ok(service
            .handle(Request::from_parts(parts, Full::new(bytes)))
            .await);
    }
    if let Classified::Reply(reply) = classify(&bytes, super::classify::Framing::Http) {
        let mut response = json_error(&reply);
        // A well-formed request for a method this server lacks is answered, not refused.
        if reply["error"]["code"] == -32601 {
            *response.status_mut() = StatusCode::OK;
        }
        return Ok(response);
    }
    Ok(service
        .handle(Request::from_parts(parts, Full::new(bytes)))
        .await)
}

/// DELETE of a session: 200 when it was closed, 404 when no such session exists (rmcp answers
/// 202 for both).
async fn delete(
    service: &StreamableHttpService<LatheServer, Sessions>,
    sessions: &Sessions,
    request: Request<Incoming>,
) -> Response<Body> {
    let id = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = &id
        && !sessions.exists(id).await
    {
        return plain(
            StatusCode::NOT_FOUND,
            format!("no session `{id}`: it was closed or it expired\n"),
        );
    }
    let mut response = service.handle(request).await;
    if response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::OK;
    }
    response
}

fn json_error(reply: &serde_json::Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(reply.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

/// SIGTERM, SIGINT and SIGHUP, listened for from now on.
fn termination_signals() -> lathe_config::signals::Listener {
    use tokio::signal::unix::SignalKind;
    lathe_config::signals::listen(&[
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ])
}

async fn wait_for_signal(signals: lathe_config::signals::Listener, stop: CancellationToken) -> i32 {
    let number = signals.recv().await;
    stop.cancel();
    number
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_bare_port_means_loopback() {
        for given in ["8765", ":8765"] {
            let addrs = resolve(given).await.unwrap();
            assert_eq!(addrs, vec!["127.0.0.1:8765".parse().unwrap()]);
        }
        let addrs = resolve("[::1]:9").await.unwrap();
        assert!(addrs[0].ip().is_loopback());
    }

    #[test]
    fn non_loopback_needs_allow_remote() {
        let open: Vec<SocketAddr> = vec!["0.0.0.0:8765".parse().unwrap()];
        let err = check_reach(&open, false).unwrap_err().to_string();
        assert!(err.contains("--allow-remote"), "{err}");
        assert!(check_reach(&open, true).is_ok());
        let lan: Vec<SocketAddr> = vec!["192.168.1.5:80".parse().unwrap()];
        assert!(check_reach(&lan, false).is_err());
        let local: Vec<SocketAddr> =
            vec!["127.0.0.1:1".parse().unwrap(), "[::1]:1".parse().unwrap()];
        assert!(check_reach(&local, false).is_ok());
    }
}
