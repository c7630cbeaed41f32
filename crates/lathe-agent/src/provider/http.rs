//! The HTTP side shared by both providers: one reqwest client, retries before the first byte
//! (each one told to the user as a [`Chunk::Notice`] while it waits), and turning a response body
//! into a stream of [`Chunk`]s through a wire decoder.

use super::error::{ProviderError, context_overflow, error_message};
use super::retry::RetryPolicy;
use super::{Chunk, ChunkStream, ProviderConfig, ProviderKind};
use crate::text::cut;
use bytes::Bytes;
use futures::{Stream, StreamExt};
use serde_json::Value;
use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

pub(crate) type BodyStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Turns raw body bytes into chunks. Implementations push items into `out`; an `Err` ends the
/// stream.
pub(crate) trait WireDecoder: Send + 'static {
    fn feed(&mut self, bytes: &[u8], out: &mut VecDeque<Result<Chunk, ProviderError>>);
    /// The body ended.
    fn finish(&mut self, out: &mut VecDeque<Result<Chunk, ProviderError>>);
    /// The protocol's own end was seen (`done: true`, `[DONE]`): stop reading.
    fn is_finished(&self) -> bool;
}

#[derive(Clone)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    base_url: String,
    kind: ProviderKind,
    retry: RetryPolicy,
    api_key: Option<String>,
}

impl HttpClient {
    pub(crate) fn new(
        config: &ProviderConfig,
        base_url: String,
        kind: ProviderKind,
    ) -> Result<Self, ProviderError> {
        let url = reqwest::Url::parse(&base_url).map_err(|e| {
            ProviderError::Config(format!("base url '{base_url}' does not parse: {e}"))
        })?;
        let mut builder = reqwest::Client::builder().connect_timeout(config.connect_timeout);
        if let Some(timeout) = config.read_timeout {
            builder = builder.read_timeout(timeout);
        }
        // A proxy from the environment must not sit between us and a model on this machine.
        if matches!(
            url.host_str(),
            Some("localhost" | "127.0.0.1" | "::1" | "[::1]")
        ) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| ProviderError::Config(format!("http client: {e}")))?;
        Ok(HttpClient {
            client,
            base_url,
            kind,
            retry: config.retry,
            api_key: config.api_key.clone(),
        })
    }

    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
    }

    pub(crate) fn retry_policy(&self) -> RetryPolicy {
        self.retry
    }

    fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base_url));
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        request
    }

    /// Runs `attempt` until it succeeds, fails for good, or the retries run out.
    async fn with_retries<T, F, Fut>(&self, mut attempt: F) -> Result<T, ProviderError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, ProviderError>>,
    {
        let mut retry = 0;
        loop {
            match attempt().await {
                Err(e) if e.is_transient() && retry < self.retry.retries => {
                    retry += 1;
                    let after = match &e {
                        ProviderError::Http { retry_after, .. } => *retry_after,
                        _ => None,
                    };
                    let delay = self.retry.delay(retry, after);
                    tracing::debug!(error = %e, retry, ?delay, "retrying model request");
                    tokio::time::sleep(delay).await;
                }
                other => return other,
            }
        }
    }

    /// Sends one request and checks the status; an error status becomes [`ProviderError::Http`].
    async fn send(
        &self,
        builder: reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, ProviderError> {
        let response = match builder.send().await {
            Ok(response) => response,
            Err(e) => return Err(self.send_error(&e).await),
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let body = response.text().await.unwrap_or_default();
        if matches!(status.as_u16(), 401 | 403) {
            return Err(ProviderError::Unauthorized {
                status: status.as_u16(),
                url: self.base_url.clone(),
                body: error_message(&body),
                key_sent: self.api_key.is_some(),
            });
        }
        if let Some((prompt_tokens, window)) = context_overflow(status.as_u16(), &body) {
            return Err(ProviderError::ContextOverflow {
                status: status.as_u16(),
                prompt_tokens,
                window,
                body: error_message(&body),
            });
        }
        Err(ProviderError::Http {
            status: status.as_u16(),
            body: error_message(&body),
            retry_after,
        })
    }

    /// A request that got no response. A connection that could not be made is told apart by
    /// resolving the host again: a name that does not resolve is a typo or a network without
    /// DNS, which "no server running" would misdescribe.
    async fn send_error(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_connect() {
            if let Some(host) = self.unresolvable_host().await {
                return ProviderError::UnknownHost {
                    host,
                    url: self.base_url.clone(),
                };
            }
            ProviderError::NoServer {
                url: self.base_url.clone(),
                kind: self.kind,
            }
        } else {
            ProviderError::Transport {
                url: self.base_url.clone(),
                message: describe(e),
            }
        }
    }

    /// The base URL's host when it is a name that does not resolve (IP literals always do).
    async fn unresolvable_host(&self) -> Option<String> {
        let url = reqwest::Url::parse(&self.base_url).ok()?;
        let host = url.host_str()?.to_string();
        let literal = host.trim_start_matches('[').trim_end_matches(']');
        if literal.parse::<std::net::IpAddr>().is_ok() {
            return None;
        }
        let port = url.port_or_known_default().unwrap_or(80);
        let resolves = match tokio::net::lookup_host((host.as_str(), port)).await {
            Ok(mut addrs) => addrs.next().is_some(),
            Err(_) => false,
        };
        (!resolves).then_some(host)
    }

    /// POSTs `body` once and waits for the first bytes of the response body; see [`retrying`]
    /// for the retries up to that point (after it, nothing is retried).
    pub(crate) async fn open_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<(Bytes, BodyStream), ProviderError> {
        {
            let response = self
                .send(self.request(reqwest::Method::POST, path).json(body))
                .await?;
            let mut stream: BodyStream = Box::pin(response.bytes_stream());
            loop {
                match stream.next().await {
                    Some(Ok(bytes)) if bytes.is_empty() => continue,
                    Some(Ok(bytes)) => return Ok((bytes, stream)),
                    Some(Err(e)) => {
                        return Err(ProviderError::Transport {
                            url: self.base_url.clone(),
                            message: describe(&e),
                        });
                    }
                    None => {
                        return Err(ProviderError::Transport {
                            url: self.base_url.clone(),
                            message: "the server closed the response without a body".into(),
                        });
                    }
                }
            }
        }
    }

    /// GETs `path` and parses the JSON answer.
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, ProviderError> {
        self.with_retries(|| self.json_of(self.request(reqwest::Method::GET, path)))
            .await
    }

    /// GETs the absolute `url` once (no retries) and parses the JSON answer; `None` for any
    /// failure: for asking a server what it may not know (its window, see
    /// [`super::window`]).
    pub(crate) async fn probe_json(&self, url: &str) -> Option<Value> {
        let mut request = self.client.get(url);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        match self.json_of(request).await {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::debug!(%url, %error, "no answer to a probe");
                None
            }
        }
    }

    /// POSTs `body` to `path` and parses the JSON answer.
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Result<Value, ProviderError> {
        self.with_retries(|| self.json_of(self.request(reqwest::Method::POST, path).json(body)))
            .await
    }

    async fn json_of(&self, builder: reqwest::RequestBuilder) -> Result<Value, ProviderError> {
        let response = self.send(builder).await?;
        let text = response
            .text()
            .await
            .map_err(|e| ProviderError::Transport {
                url: self.base_url.clone(),
                message: describe(&e),
            })?;
        serde_json::from_str(&text)
            .map_err(|e| ProviderError::Protocol(format!("{e} in response '{}'", cut(&text, 200))))
    }
}

/// The wait a server asked for, when the error carries one.
fn retry_after(error: &ProviderError) -> Option<Duration> {
    match error {
        ProviderError::Http { retry_after, .. } => *retry_after,
        _ => None,
    }
}

/// Where a retried streamed request is.
enum Attempts<F> {
    /// The last attempt failed with `error`; `told` once the user was told about the wait.
    Waiting {
        attempt: F,
        retry: u32,
        error: ProviderError,
        told: bool,
    },
    Streaming(ChunkStream),
    Ended,
}

/// Opens a streamed answer with `attempt` (one whole request, its errors already explained),
/// retrying transient failures before the first byte of the answer.
///
/// The first attempt is awaited here, so an error that is not transient (a refusal of tools, an
/// unknown model) is this function's `Err`, as callers branch on it. After a transient one, the
/// answer is a stream that first says what happened and how long it waits
/// ([`Chunk::Notice`]: `model server busy (503): retrying in 2 s (attempt 1 of 3)`), waits
/// (honouring `Retry-After`), tries again, and then yields the answer's chunks, or the last
/// error when the retries ran out. Waiting inside the stream is what lets the user see the
/// notice while it lasts; dropping the stream stops the waiting.
pub(crate) async fn retrying<F, Fut>(
    policy: RetryPolicy,
    mut attempt: F,
) -> Result<ChunkStream, ProviderError>
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: Future<Output = Result<ChunkStream, ProviderError>> + Send + 'static,
{
    let error = match attempt().await {
        Err(e) if e.is_transient() && policy.retries > 0 => e,
        other => return other,
    };
    let state = Attempts::Waiting {
        attempt,
        retry: 1,
        error,
        told: false,
    };
    Ok(Box::pin(futures::stream::unfold(
        state,
        move |mut state| async move {
            loop {
                match state {
                    Attempts::Ended => return None,
                    Attempts::Streaming(mut stream) => {
                        let item = stream.next().await?;
                        return Some((item, Attempts::Streaming(stream)));
                    }
                    Attempts::Waiting {
                        mut attempt,
                        retry,
                        error,
                        told,
                    } => {
                        let delay = policy.delay(retry, retry_after(&error));
                        if !told {
                            let notice = error.retry_notice(delay, retry, policy.retries);
                            tracing::debug!(%error, retry, ?delay, "retrying model request");
                            let state = Attempts::Waiting {
                                attempt,
                                retry,
                                error,
                                told: true,
                            };
                            return Some((Ok(Chunk::Notice(notice)), state));
                        }
                        tokio::time::sleep(delay).await;
                        state = match attempt().await {
                            Ok(stream) => Attempts::Streaming(stream),
                            Err(e) if e.is_transient() && retry < policy.retries => {
                                Attempts::Waiting {
                                    attempt,
                                    retry: retry + 1,
                                    error: e,
                                    told: false,
                                }
                            }
                            Err(e) => return Some((Err(e), Attempts::Ended)),
                        };
                    }
                }
            }
        },
    )))
}

/// A reqwest error with its causes, which is where the useful part ("connection reset by
/// peer") is.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
}

struct BodyState<D> {
    body: BodyStream,
    decoder: D,
    out: VecDeque<Result<Chunk, ProviderError>>,
    ended: bool,
}

/// The chunks of a response body, starting with `first` (already read while retrying).
pub(crate) fn chunk_stream<D: WireDecoder>(
    first: Bytes,
    body: BodyStream,
    mut decoder: D,
) -> ChunkStream {
    let mut out = VecDeque::new();
    decoder.feed(&first, &mut out);
    let state = BodyState {
        body,
        decoder,
        out,
        ended: false,
    };
    Box::pin(futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.out.pop_front() {
                if item.is_err() {
                    st.out.clear();
                    st.ended = true;
                }
                return Some((item, st));
            }
            if st.ended {
                return None;
            }
            if st.decoder.is_finished() {
                st.ended = true;
                continue;
            }
            match st.body.next().await {
                Some(Ok(bytes)) => st.decoder.feed(&bytes, &mut st.out),
                Some(Err(e)) => {
                    st.out
                        .push_back(Err(ProviderError::ConnectionLost(describe(&e))));
                    st.ended = true;
                }
                None => {
                    st.decoder.finish(&mut st.out);
                    st.ended = true;
                }
            }
        }
    }))
}
