//! The sessions of `lathe mcp --listen` (the handshake lifecycle, `Mcp-Session-Id`): rmcp's
//! local session manager, with Lathe's rules for when a session ends and what a closed stream
//! means.
//!
//! - A session expires after `--session-timeout` without traffic, and never while it has an
//!   open stream (a call in flight holds its POST stream open; a client listening holds its GET
//!   stream) or a running command. rmcp's own keep-alive counts only messages, so it is off.
//! - Streams carry no event ids and no `retry` hint: resumption is not offered, since a response
//!   that completes while the client is away could not be delivered later.
//! - A POST stream closed before its response went out is that call's cancellation: the
//!   session is sent `notifications/cancelled` for the request, as if the client had sent it.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::Stream;
use lathe_runtime::Session;
use lathe_runtime::commands::Commands;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use serde_json::json;

/// The idle timeout of a session when `--session-timeout` is not given.
pub const DEFAULT_SESSION_TIMEOUT: Duration = Duration::from_secs(300);

/// Lathe sessions of the MCP sessions, registered by the handler on first use: whether one
/// has running commands keeps its MCP session alive.
#[derive(Default)]
pub struct Links {
    sessions: Mutex<HashMap<String, Weak<Session>>>,
}

impl Links {
    /// Records that the MCP session `id` runs its calls in `session`.
    pub fn link(&self, id: &str, session: &Arc<Session>) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|_, s| s.strong_count() > 0);
        sessions.insert(id.to_owned(), Arc::downgrade(session));
    }

    fn running(&self, id: &str) -> bool {
        let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .get(id)
            .and_then(Weak::upgrade)
            .and_then(|session| session.existing_extension::<Commands>())
            .is_some_and(|commands| {
                commands
                    .supervisor()
                    .is_ok_and(|supervisor| supervisor.running() > 0)
            })
    }

    fn forget(&self, id: &str) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.remove(id);
    }
}

#[derive(Debug)]
struct Activity {
    last: Instant,
    open_streams: usize,
}

#[derive(Default)]
struct Tracker {
    sessions: Mutex<HashMap<SessionId, Activity>>,
}

impl Tracker {
    fn touch(&self, id: &SessionId) {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(activity) = sessions.get_mut(id) {
            activity.last = Instant::now();
        }
    }

    fn opened(self: &Arc<Self>, id: &SessionId) -> StreamGuard {
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(activity) = sessions.get_mut(id) {
            activity.open_streams += 1;
            activity.last = Instant::now();
        }
        StreamGuard {
            tracker: Arc::clone(self),
            id: id.clone(),
        }
    }
}

/// Counts one open stream of a session while it lives.
struct StreamGuard {
    tracker: Arc<Tracker>,
    id: SessionId,
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        let mut sessions = self
            .tracker
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(activity) = sessions.get_mut(&self.id) {
            activity.open_streams = activity.open_streams.saturating_sub(1);
            activity.last = Instant::now();
        }
    }
}

/// The session manager of `lathe mcp --listen`.
pub struct Sessions {
    inner: Arc<LocalSessionManager>,
    tracker: Arc<Tracker>,
    links: Arc<Links>,
}

impl Sessions {
    /// Sessions that expire after `idle` without traffic (`None`: never), kept alive by what
    /// `links` says runs in them. Starts the task that ends expired sessions.
    pub fn new(idle: Option<Duration>, links: Arc<Links>) -> Arc<Sessions> {
        let mut config = SessionConfig::default();
        config.keep_alive = None;
        config.sse_retry = None;
        let mut inner = LocalSessionManager::default();
        inner.session_config = config;
        let sessions = Arc::new(Sessions {
            inner: Arc::new(inner),
            tracker: Arc::new(Tracker::default()),
            links,
        });
        if let Some(idle) = idle {
            tokio::spawn(expire(Arc::downgrade(&sessions), idle));
        }
        sessions
    }

    /// Whether `id` names a live session.
    pub async fn exists(&self, id: &str) -> bool {
        self.inner
            .has_session(&SessionId::from(id))
            .await
            .unwrap_or(false)
    }

    fn expired(&self, idle: Duration) -> Vec<SessionId> {
        let sessions = self
            .tracker
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        sessions
            .iter()
            .filter(|(id, activity)| {
                activity.open_streams == 0
                    && activity.last.elapsed() >= idle
                    && !self.links.running(id)
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    fn forget(&self, id: &SessionId) {
        self.tracker
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        self.links.forget(id);
    }
}

/// Ends sessions idle for `idle` with nothing open or running, until the manager is gone.
async fn expire(sessions: Weak<Sessions>, idle: Duration) {
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(5));
    loop {
        tokio::time::sleep(tick).await;
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        for id in sessions.expired(idle) {
            tracing::info!(session = %id, ?idle, "session expired");
            sessions.forget(&id);
            if let Err(err) = sessions.inner.close_session(&id).await {
                tracing::warn!(session = %id, "cannot close the expired session: {err}");
            }
        }
    }
}

/// A stream to the client: without event ids or `retry` hints, counted as open while it
/// lives, and, for a request's stream, cancelling the request if it ends before the response.
struct ClientStream<S> {
    inner: Pin<Box<S>>,
    _open: StreamGuard,
    /// The request this stream answers and how to cancel it, until its response went out.
    pending: Option<(RequestId, SessionId, Arc<LocalSessionManager>)>,
}

impl<S: Stream<Item = ServerSseMessage>> Stream for ClientStream<S> {
    type Item = ServerSseMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            let polled = self.inner.as_mut().poll_next(cx);
            let Poll::Ready(Some(mut event)) = polled else {
                if let Poll::Ready(None) = polled {
                    self.pending = None;
                }
                return polled;
            };
            let Some(message) = &event.message else {
                // A priming event: it only offers resumption.
                continue;
            };
            if let Some((id, _, _)) = &self.pending {
                let answered = match message.as_ref() {
                    ServerJsonRpcMessage::Response(response) => &response.id == id,
                    ServerJsonRpcMessage::Error(error) => error.id.as_ref() == Some(id),
                    _ => false,
                };
                if answered {
                    self.pending = None;
                }
            }
            event.event_id = None;
            event.retry = None;
            return Poll::Ready(Some(event));
        }
    }
}

impl<S> Drop for ClientStream<S> {
    fn drop(&mut self) {
        let Some((request, session, manager)) = self.pending.take() else {
            return;
        };
        tracing::info!(%session, %request, "the client closed the stream of a running call: cancelling it");
        let Ok(cancel) = serde_json::from_value::<ClientJsonRpcMessage>(json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request, "reason": "the client closed the response stream"},
        })) else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = manager.accept_message(&session, cancel).await;
            });
        }
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        self.tracker
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                id.clone(),
                Activity {
                    last: Instant::now(),
                    open_streams: 0,
                },
            );
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.tracker.touch(id);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.forget(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let request = match &message {
            ClientJsonRpcMessage::Request(request) => Some(request.id.clone()),
            _ => None,
        };
        let open = self.tracker.opened(id);
        let stream = self.inner.create_stream(id, message).await?;
        Ok(ClientStream {
            inner: Box::pin(stream),
            _open: open,
            pending: request.map(|r| (r, id.clone(), Arc::clone(&self.inner))),
        })
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.tracker.touch(id);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = self.tracker.opened(id);
        let stream = self.inner.create_standalone_stream(id).await?;
        Ok(ClientStream {
            inner: Box::pin(stream),
            _open: open,
            pending: None,
        })
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = self.tracker.opened(id);
        let stream = self.inner.resume(id, last_event_id).await?;
        Ok(ClientStream {
            inner: Box::pin(stream),
            _open: open,
            pending: None,
        })
    }
}
