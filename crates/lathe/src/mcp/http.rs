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
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::classify::{Incoming as Classified, classify};
use super::server::{LatheServer, Scope, Shared};
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

/// Serves until SIGINT, SIGTERM or SIGHUP.
pub async fn serve(shared: Arc<Shared>, addr: &str, allow_remote: bool) -> anyhow::Result<()> {
    let addrs = resolve(addr).await?;
    check_reach(&addrs, allow_remote)?;
    let listener = tokio::net::TcpListener::bind(addrs.as_slice())
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;

    let stop = CancellationToken::new();
    let host = shared.session()?;
    let mut config = StreamableHttpServerConfig::default().with_cancellation_token(stop.clone());
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
        let stop = stop.clone();
        move || {
            Ok(LatheServer::new(
                Arc::clone(&shared),
                Scope::Http {
                    own: OnceLock::new(),
                    host: Arc::clone(&host),
                },
                stop.child_token(),
            ))
        }
    };
    // Whole files travel in `write_file` arguments: the same limit as over stdio.
    let config = config.with_max_request_body_bytes(MAX_MESSAGE_BYTES);
    let service = Arc::new(StreamableHttpService::new(
        factory,
        Arc::new(LocalSessionManager::default()),
        config,
    ));

    // Tests and scripts read the bound address (useful with port 0) from stderr.
    eprintln!("lathe mcp: listening on http://{local}{ENDPOINT}");
    tracing::info!(%local, "listening");

    let signal = tokio::spawn(wait_for_signal(stop.clone()));
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
        let stop = stop.clone();
        tokio::spawn(async move {
            let routed = hyper::service::service_fn(move |request: Request<Incoming>| {
                let service = Arc::clone(&service);
                async move { route(&service, request).await }
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
    signal.abort();
    host.shutdown();
    Ok(())
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn route(
    service: &StreamableHttpService<LatheServer, LocalSessionManager>,
    request: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    if request.uri().path() != ENDPOINT {
        let text = format!("not found: the MCP endpoint is {ENDPOINT}\n");
        return Ok(plain(StatusCode::NOT_FOUND, text));
    }
    let json_post = request.method() == Method::POST
        && request
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if !json_post {
        return Ok(service.handle(request).await);
    }
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
    if let Classified::Reply(reply) = classify(&bytes) {
        let mut response = Response::new(Full::new(Bytes::from(reply.to_string())).boxed());
        *response.status_mut() = StatusCode::BAD_REQUEST;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        return Ok(response);
    }
    Ok(service
        .handle(Request::from_parts(parts, Full::new(bytes)))
        .await)
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(text)).boxed());
    *response.status_mut() = status;
    response
}

async fn wait_for_signal(stop: CancellationToken) {
    use tokio::signal::unix::SignalKind;
    let kinds = [
        SignalKind::terminate(),
        SignalKind::interrupt(),
        SignalKind::hangup(),
    ];
    crate::signals::listen(&kinds).recv().await;
    stop.cancel();
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
