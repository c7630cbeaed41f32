//! Native tool calls where the model has them, the text protocol where it does not.

use super::text_protocol::to_text_protocol;
use super::{
    Capabilities, ChatRequest, Chunk, ChunkStream, Provider, ProviderError, ProviderKind,
    ToolProtocol,
};
use futures::future::BoxFuture;
use futures::stream::{self, StreamExt};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Why a model uses the text protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextReason {
    /// The server says the model has no native tool calling.
    NoCapability,
    /// The server refused a request with tools.
    Refused,
}

#[derive(Debug, Default)]
struct ModelState {
    text: Option<TextReason>,
    told: bool,
}

/// Wraps a provider: a request with tools goes native when the model has tool calling, and
/// otherwise (or once the server refuses tools for the model) goes out in the text protocol,
/// see [`to_text_protocol`]. The switch is said once per model, as a [`Chunk::Notice`] at the
/// start of the stream, and [`Provider::capabilities`] reports `tools: false` from then on.
///
/// The executor always passes its tool definitions and never adds the text protocol itself.
pub struct AutoProtocol {
    inner: Arc<dyn Provider>,
    models: Arc<Models>,
}

type Models = Mutex<HashMap<String, ModelState>>;

fn with_state<T>(models: &Models, model: &str, f: impl FnOnce(&mut ModelState) -> T) -> T {
    let mut models = models.lock().unwrap_or_else(|p| p.into_inner());
    f(models.entry(model.to_string()).or_default())
}

/// Where a native answer that may still turn out to be a refusal is.
enum Native {
    /// Reading the native answer; nothing but notices has come yet.
    Waiting {
        stream: ChunkStream,
        inner: Arc<dyn Provider>,
        models: Arc<Models>,
        request: Box<ChatRequest>,
    },
    /// Output has started (or the text protocol took over): passed through.
    Passing(ChunkStream),
}

impl AutoProtocol {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Provider>) -> Self {
        AutoProtocol {
            inner,
            models: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn with_state<T>(&self, model: &str, f: impl FnOnce(&mut ModelState) -> T) -> T {
        with_state(&self.models, model, f)
    }

    /// `stream`, a native answer, or the text protocol's answer when the server refuses the
    /// tools only after a retry (llama.cpp's server answers 503 while it loads the model, then
    /// refuses tools without `--jinja`): the refusal then arrives in the stream rather than as
    /// the error of the first attempt.
    fn refusal_in_stream(&self, stream: ChunkStream, request: &ChatRequest) -> ChunkStream {
        let state = Native::Waiting {
            stream,
            inner: Arc::clone(&self.inner),
            models: Arc::clone(&self.models),
            request: Box::new(request.clone()),
        };
        Box::pin(stream::unfold(state, |state| async move {
            match state {
                Native::Passing(mut stream) => {
                    let item = stream.next().await?;
                    Some((item, Native::Passing(stream)))
                }
                Native::Waiting {
                    mut stream,
                    inner,
                    models,
                    request,
                } => match stream.next().await? {
                    Ok(Chunk::Notice(text)) => Some((
                        Ok(Chunk::Notice(text)),
                        Native::Waiting {
                            stream,
                            inner,
                            models,
                            request,
                        },
                    )),
                    Err(ProviderError::ToolsUnsupported { model, message }) => {
                        tracing::info!(%model, %message, "server refused tools after a retry; switching to the text protocol");
                        drop(stream);
                        with_state(&models, &request.model, |s| {
                            s.text = Some(TextReason::Refused);
                            s.told = true;
                        });
                        let told = Ok(Chunk::Notice(notice(&request.model, TextReason::Refused)));
                        let text = match inner.chat(&to_text_protocol(&request)).await {
                            Ok(text) => text,
                            Err(e) => Box::pin(stream::iter([Err(e)])),
                        };
                        Some((told, Native::Passing(text)))
                    }
                    other => Some((other, Native::Passing(stream))),
                },
            }
        }))
    }

    async fn open(&self, request: &ChatRequest) -> Result<ChunkStream, ProviderError> {
        if request.tools.is_empty() {
            return self.inner.chat(request).await;
        }
        let use_text = match request.tool_protocol {
            ToolProtocol::Native => false,
            ToolProtocol::Text => true,
            ToolProtocol::Auto => {
                if self.with_state(&request.model, |s| s.text.is_some()) {
                    true
                } else if !self.inner.capabilities(&request.model).await?.tools {
                    self.with_state(&request.model, |s| s.text = Some(TextReason::NoCapability));
                    true
                } else {
                    false
                }
            }
        };
        if !use_text {
            match self.inner.chat(request).await {
                Err(ProviderError::ToolsUnsupported { model, message })
                    if request.tool_protocol == ToolProtocol::Auto =>
                {
                    tracing::info!(%model, %message, "server refused tools; switching to the text protocol");
                    self.with_state(&request.model, |s| s.text = Some(TextReason::Refused));
                }
                Ok(stream) if request.tool_protocol == ToolProtocol::Auto => {
                    return Ok(self.refusal_in_stream(stream, request));
                }
                other => return other,
            }
        }
        let stream = self.inner.chat(&to_text_protocol(request)).await?;
        let notice = match request.tool_protocol {
            ToolProtocol::Auto => self.with_state(&request.model, |s| {
                let reason = s.text.filter(|_| !s.told)?;
                s.told = true;
                Some(notice(&request.model, reason))
            }),
            _ => None,
        };
        Ok(match notice {
            Some(text) => Box::pin(stream::iter([Ok(Chunk::Notice(text))]).chain(stream)),
            None => stream,
        })
    }
}

fn notice(model: &str, reason: TextReason) -> String {
    match reason {
        TextReason::NoCapability => {
            format!(
                "{model} has no native tool calling; using the text tool protocol (<tool_call> blocks)"
            )
        }
        TextReason::Refused => format!(
            "the model server refused native tool calls for {model}; switched to the text tool protocol for this model"
        ),
    }
}

impl Provider for AutoProtocol {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }

    fn base_url(&self) -> &str {
        self.inner.base_url()
    }

    fn capabilities<'a>(
        &'a self,
        model: &'a str,
    ) -> BoxFuture<'a, Result<Capabilities, ProviderError>> {
        Box::pin(async move {
            let capabilities = self.inner.capabilities(model).await?;
            let text = self.with_state(model, |s| s.text.is_some());
            Ok(Capabilities {
                tools: capabilities.tools && !text,
                ..capabilities
            })
        })
    }

    fn list_models(&self) -> BoxFuture<'_, Result<Vec<String>, ProviderError>> {
        self.inner.list_models()
    }

    fn served_window<'a>(&'a self, model: &'a str) -> BoxFuture<'a, Option<u32>> {
        self.inner.served_window(model)
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
    ) -> BoxFuture<'a, Result<ChunkStream, ProviderError>> {
        Box::pin(self.open(request))
    }
}
