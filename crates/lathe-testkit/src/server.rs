//! The scripted server: a real HTTP/1.1 server on loopback, on its own thread and runtime so it
//! serves sync tests, async tests and child processes alike.

use crate::http::{RecordedRequest, read_request, write_response};
use crate::script::{Repeat, Reply, Response, Route, Script};
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// Path at which the server lists the requests it recorded, as a JSON array (for tests that
/// drive the server in another process). Requests to it are not recorded.
pub const REQUESTS_PATH: &str = "/__scripted/requests";

#[derive(Default)]
struct State {
    routes: Vec<Route>,
    used: Vec<bool>,
    requests: Vec<RecordedRequest>,
    bytes_sent: u64,
    hang_ups: u64,
}

/// Counts what is written through it into the server's state.
struct Counting<'a> {
    stream: &'a mut TcpStream,
    state: &'a Mutex<State>,
}

impl tokio::io::AsyncWrite for Counting<'_> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<io::Result<usize>> {
        let this = &mut *self;
        let poll = std::pin::Pin::new(&mut *this.stream).poll_write(cx, buf);
        if let std::task::Poll::Ready(Ok(n)) = &poll {
            lock(this.state).bytes_sent += *n as u64;
        }
        poll
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut *self.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        std::pin::Pin::new(&mut *self.stream).poll_shutdown(cx)
    }
}

/// A scripted model server on `127.0.0.1`, stopped when dropped.
///
/// ```
/// use lathe_testkit::{ScriptedServer, Script, ollama};
/// let server = ScriptedServer::start(
///     Script::new().chat(ollama::turn("m").text("hi").done()),
/// ).unwrap();
/// assert!(server.url().starts_with("http://127.0.0.1:"));
/// ```
pub struct ScriptedServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    shutdown: Option<oneshot::Sender<()>>,
}

impl ScriptedServer {
    /// Binds a free port on loopback and starts serving `script` on a background thread.
    pub fn start(script: Script) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let used = vec![false; script.routes.len()];
        let state = Arc::new(Mutex::new(State {
            routes: script.routes,
            used,
            requests: Vec::new(),
            bytes_sent: 0,
            hang_ups: 0,
        }));
        let (shutdown, stopped) = oneshot::channel();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let serve_state = Arc::clone(&state);
        std::thread::Builder::new()
            .name(format!("scripted-server-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("scripted server: cannot listen: {e}");
                            return;
                        }
                    };
                    serve(listener, serve_state, stopped).await;
                });
            })?;
        Ok(ScriptedServer {
            addr,
            state,
            shutdown: Some(shutdown),
        })
    }

    /// `http://127.0.0.1:PORT`, with no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state).requests.clone()
    }

    /// The requests to chat endpoints, in arrival order.
    pub fn chat_requests(&self) -> Vec<RecordedRequest> {
        lock(&self.state)
            .requests
            .iter()
            .filter(|r| crate::script::PathMatch::Chat.matches(&r.path))
            .cloned()
            .collect()
    }

    /// The JSON bodies of the chat requests, in arrival order.
    pub fn chat_bodies(&self) -> Vec<serde_json::Value> {
        self.chat_requests()
            .iter()
            .filter_map(RecordedRequest::json)
            .collect()
    }

    /// Adds a route while running.
    pub fn add(&self, route: Route) {
        let mut state = lock(&self.state);
        state.routes.push(route);
        state.used.push(false);
    }

    /// The bytes written to clients so far (heads and bodies; the request listing aside). A
    /// test can tell from it that a client stopped reading an endless reply
    /// ([`Part::Repeat`](crate::Part::Repeat)) early, without timing anything.
    pub fn bytes_sent(&self) -> u64 {
        lock(&self.state).bytes_sent
    }

    /// How many responses the client hung up on before their end (the connection closed or
    /// reset under a write).
    pub fn hang_ups(&self) -> u64 {
        lock(&self.state).hang_ups
    }

    /// How many once-routes have not been used yet.
    pub fn unused_once_routes(&self) -> usize {
        let state = lock(&self.state);
        state
            .routes
            .iter()
            .zip(&state.used)
            .filter(|(r, used)| r.repeat == Repeat::Once && !**used)
            .count()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic while holding the lock leaves the data consistent (plain pushes); keep serving.
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Serves until `stopped` fires (or its sender is dropped).
async fn serve(
    listener: TcpListener,
    state: Arc<Mutex<State>>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let state = Arc::clone(&state);
                tokio::spawn(async move {
                    if let Err(e) = handle(stream, state).await {
                        // The client going away mid-response is part of several scripts.
                        if e.kind() != io::ErrorKind::BrokenPipe && e.kind() != io::ErrorKind::ConnectionReset {
                            eprintln!("scripted server: {e}");
                        }
                    }
                });
            }
        }
    }
}

async fn handle(mut stream: TcpStream, state: Arc<Mutex<State>>) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let Some(request) = read_request(&mut stream).await? else {
        return Ok(());
    };
    if request.path == REQUESTS_PATH {
        let body = {
            let state = lock(&state);
            serde_json::to_value(&state.requests).unwrap_or_default()
        };
        return write_response(&mut stream, &Response::json(200, &body)).await;
    }
    let reply = {
        let mut state = lock(&state);
        state.requests.push(request.clone());
        choose(&mut state, &request)
    };
    match reply {
        Reply::Reset => {
            // SO_LINGER 0: closing sends RST, like a server process that died.
            stream.set_zero_linger()?;
            drop(stream);
            Ok(())
        }
        Reply::Respond(response) => {
            let written = write_response(
                &mut Counting {
                    stream: &mut stream,
                    state: &state,
                },
                &response,
            )
            .await;
            if let Err(e) = &written
                && matches!(
                    e.kind(),
                    io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
                )
            {
                lock(&state).hang_ups += 1;
            }
            written?;
            if response.drop_connection {
                stream.set_zero_linger()?;
            }
            Ok(())
        }
    }
}

fn choose(state: &mut State, request: &RecordedRequest) -> Reply {
    let matches = |route: &Route| {
        route.path.matches(&request.path)
            && route
                .method
                .as_deref()
                .is_none_or(|m| m.eq_ignore_ascii_case(&request.method))
            && route
                .body_contains
                .as_deref()
                .is_none_or(|text| request.body_text().contains(text))
    };
    let once = state
        .routes
        .iter()
        .enumerate()
        .position(|(i, r)| r.repeat == Repeat::Once && !state.used[i] && matches(r));
    if let Some(i) = once {
        state.used[i] = true;
        return state.routes[i].reply.clone();
    }
    if let Some(route) = state
        .routes
        .iter()
        .find(|r| r.repeat == Repeat::Always && matches(r))
    {
        return route.reply.clone();
    }
    let message = format!(
        "scripted server: no scripted reply left for {} {}",
        request.method, request.path
    );
    Reply::Respond(Response::json(
        500,
        &serde_json::json!({ "error": message }),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Framing;
    use std::io::{Read, Write};

    fn raw_request(server: &ScriptedServer, request: &str) -> Vec<u8> {
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = stream.read_to_end(&mut out);
        out
    }

    #[test]
    fn once_routes_come_before_always_routes_and_are_used_up() {
        let server = ScriptedServer::start(
            Script::new()
                .always(
                    "/a",
                    Response::new(200).text("always").framing(Framing::Length),
                )
                .once(
                    "/a",
                    Response::new(200).text("once").framing(Framing::Length),
                ),
        )
        .unwrap();
        let first = raw_request(&server, "GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
        let second = raw_request(&server, "GET /a HTTP/1.1\r\nhost: x\r\n\r\n");
        assert!(
            first.ends_with(b"once"),
            "{}",
            String::from_utf8_lossy(&first)
        );
        assert!(second.ends_with(b"always"));
        assert_eq!(server.unused_once_routes(), 0);
        assert_eq!(server.requests().len(), 2);
    }

    #[test]
    fn unscripted_request_gets_a_500_naming_it() {
        let server = ScriptedServer::start(Script::new()).unwrap();
        let out = raw_request(
            &server,
            "POST /nope HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}",
        );
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 500"));
        assert!(text.contains("POST /nope"));
        assert_eq!(server.requests()[0].json(), Some(serde_json::json!({})));
    }

    #[test]
    fn method_restricted_route() {
        let server = ScriptedServer::start(Script::new().route(
            Route::always(crate::PathMatch::Exact("/m".into()), Response::new(204)).method("post"),
        ))
        .unwrap();
        assert!(raw_request(&server, "GET /m HTTP/1.1\r\n\r\n").starts_with(b"HTTP/1.1 500"));
        assert!(raw_request(&server, "POST /m HTTP/1.1\r\n\r\n").starts_with(b"HTTP/1.1 204"));
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a synchronous test")]
    fn an_endless_reply_stops_when_the_client_hangs_up_and_is_counted() {
        let server = ScriptedServer::start(
            Script::new().chat(
                Response::new(200)
                    .text("start\n")
                    .repeat("again\n", 1 << 30)
                    .text("end\n"),
            ),
        )
        .unwrap();
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream
            .write_all(b"POST /api/chat HTTP/1.1\r\ncontent-length: 0\r\n\r\n")
            .unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while seen.len() < 100_000 {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "the reply ended early");
            seen.extend_from_slice(&buf[..n]);
        }
        drop(stream);
        while server.hang_ups() == 0 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(server.bytes_sent() >= 100_000);
        assert!(
            server.bytes_sent() < 1 << 30,
            "it stopped when the client left"
        );
        assert!(String::from_utf8_lossy(&seen).contains("start\n"));
        // The same part ends on its own at its limit, and what follows is sent.
        let r = Response::new(200).repeat("ab", 5).text("!");
        assert_eq!(r.body_bytes(), b"ababab!");
    }

    #[test]
    fn reset_sends_nothing() {
        let server = ScriptedServer::start(Script::new().chat(Reply::Reset)).unwrap();
        let out = raw_request(&server, "POST /api/chat HTTP/1.1\r\n\r\n");
        assert!(out.is_empty());
        assert_eq!(server.chat_requests().len(), 1);
    }

    #[test]
    fn recorded_requests_are_served_as_json() {
        let server = ScriptedServer::start(Script::new()).unwrap();
        raw_request(
            &server,
            "POST /api/chat HTTP/1.1\r\ncontent-length: 8\r\n\r\n{\"x\":1}\n",
        );
        let out = raw_request(&server, &format!("GET {REQUESTS_PATH} HTTP/1.1\r\n\r\n"));
        let text = String::from_utf8_lossy(&out);
        let body = &text[text.find("\r\n\r\n").unwrap() + 4..];
        let list: Vec<RecordedRequest> = serde_json::from_str(body).unwrap();
        assert_eq!(list.len(), 1);
        assert_eq!(list[0].path, "/api/chat");
        assert_eq!(
            server.requests().len(),
            1,
            "the listing itself is not recorded"
        );
    }
}
