//! The HTTP side shared by both providers: one reqwest client, retries before the first byte,
//! and turning a response body into a stream of [`Chunk`]s through a wire decoder.

use super::error::{ProviderError, error_message};
use super::retry::RetryPolicy;
use super::{Chunk, ChunkStream, ProviderConfig};
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

pub(crate) struct HttpClient {
    client: reqwest::Client,
    base_url: String,
    retry: RetryPolicy,
    api_key: Option<String>,
}

impl HttpClient {
    pub(crate) fn new(config: &ProviderConfig, base_url: String) -> Result<Self, ProviderError> {
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
            retry: config.retry,
            api_key: config.api_key.clone(),
        })
    }

    pub(crate) fn base_url(&self) -> &str {
        &self.base_url
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
        let response = builder.send().await.map_err(|e| self.send_error(&e))?;
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
        Err(ProviderError::Http {
            status: status.as_u16(),
            body: error_message(&body),
            retry_after,
        })
    }

    fn send_error(&self, e: &reqwest::Error) -> ProviderError {
        if e.is_connect() {
            ProviderError::NoServer {
                url: self.base_url.clone(),
            }
        } else {
            ProviderError::Transport {
                url: self.base_url.clone(),
                message: describe(e),
            }
        }
    }

    /// POSTs `body` and waits for the first bytes of the response body. Everything up to that
    /// point is retried; after it, nothing is.
    pub(crate) async fn open_stream(
        &self,
        path: &str,
        body: &Value,
    ) -> Result<(Bytes, BodyStream), ProviderError> {
        self.with_retries(|| async {
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
        })
        .await
    }

    /// GETs `path` and parses the JSON answer.
    pub(crate) async fn get_json(&self, path: &str) -> Result<Value, ProviderError> {
        self.with_retries(|| self.json_of(self.request(reqwest::Method::GET, path)))
            .await
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
