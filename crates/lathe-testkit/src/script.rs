//! What the scripted server answers: routes, replies and the raw byte parts of each reply.
//!
//! A script is plain data (serde), so the same script can drive the in-process
//! [`ScriptedServer`](crate::ScriptedServer) or the `scripted-model-server` binary from a JSON file.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A whole script: routes tried in order for every request.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Script {
    /// The routes; see [`Route`] for how one is chosen.
    #[serde(default)]
    pub routes: Vec<Route>,
}

impl Script {
    /// An empty script: every request gets a 500 naming the missing route.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route.
    pub fn route(mut self, route: Route) -> Self {
        self.routes.push(route);
        self
    }

    /// Queues the reply for the next chat request (`/api/chat`, `/v1/chat/completions` or
    /// `/chat/completions`). Chat replies are consumed in the order they were queued.
    pub fn chat(self, reply: impl Into<Reply>) -> Self {
        self.route(Route::once(PathMatch::Chat, reply))
    }

    /// Queues the reply for the next chat request whose body contains `text`; such routes are
    /// tried in order with the others, so queue them before the unconditional ones they
    /// should win over.
    pub fn chat_when(self, text: &str, reply: impl Into<Reply>) -> Self {
        self.route(Route::once(PathMatch::Chat, reply).when_body_contains(text))
    }

    /// Answers every request to `path` (any method) with `reply`.
    pub fn always(self, path: &str, reply: impl Into<Reply>) -> Self {
        self.route(Route::always(PathMatch::Exact(path.to_string()), reply))
    }

    /// Answers the next request to `path` with `reply`, once.
    pub fn once(self, path: &str, reply: impl Into<Reply>) -> Self {
        self.route(Route::once(PathMatch::Exact(path.to_string()), reply))
    }

    /// An Ollama server that has `models`, each reporting `capabilities` from `/api/show`
    /// (for example `&["completion", "tools", "thinking"]`).
    pub fn ollama_models(self, models: &[&str], capabilities: &[&str]) -> Self {
        self.always("/api/tags", crate::ollama::tags(models))
            .always("/api/show", crate::ollama::show(capabilities, Some(32768)))
    }

    /// An OpenAI-compatible server listing `models` at `/v1/models`.
    pub fn openai_models(self, models: &[&str]) -> Self {
        self.always("/v1/models", crate::openai::models(models))
    }
}

/// Which request paths a route answers.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", content = "path", rename_all = "snake_case")]
pub enum PathMatch {
    /// Exactly this path (the query string is ignored).
    Exact(String),
    /// Any chat endpoint: `/api/chat`, or a path ending in `/chat/completions`.
    Chat,
}

impl PathMatch {
    /// Whether `path` (without its query) is matched.
    pub fn matches(&self, path: &str) -> bool {
        match self {
            PathMatch::Exact(p) => p == path,
            PathMatch::Chat => path == "/api/chat" || path.ends_with("/chat/completions"),
        }
    }
}

/// How often a route answers.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Repeat {
    /// Answers one request, then is used up. Once-routes are tried before always-routes.
    #[default]
    Once,
    /// Answers every matching request for which no once-route is left.
    Always,
}

/// One route: a path, an optional method, and the reply.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Route {
    /// Method to match (`"POST"`); any method when absent.
    #[serde(default)]
    pub method: Option<String>,
    /// Path to match.
    pub path: PathMatch,
    /// Once or always.
    #[serde(default)]
    pub repeat: Repeat,
    /// When set, the route answers only requests whose body contains this text (to tell
    /// apart two agents sharing one server: a parent and its sub-agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_contains: Option<String>,
    /// What to answer.
    pub reply: Reply,
}

impl Route {
    /// A route used once.
    pub fn once(path: PathMatch, reply: impl Into<Reply>) -> Self {
        Route {
            method: None,
            path,
            repeat: Repeat::Once,
            body_contains: None,
            reply: reply.into(),
        }
    }

    /// A route used for every matching request.
    pub fn always(path: PathMatch, reply: impl Into<Reply>) -> Self {
        Route {
            method: None,
            path,
            repeat: Repeat::Always,
            body_contains: None,
            reply: reply.into(),
        }
    }

    /// Restricts the route to requests whose body contains `text`.
    pub fn when_body_contains(mut self, text: &str) -> Self {
        self.body_contains = Some(text.to_owned());
        self
    }

    /// Restricts the route to one method.
    pub fn method(mut self, method: &str) -> Self {
        self.method = Some(method.to_ascii_uppercase());
        self
    }
}

/// The server's answer to one request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    /// An HTTP response.
    Respond(Response),
    /// Reads the request, then resets the connection without a response: what a client sees
    /// when a server dies before the first byte.
    Reset,
}

impl From<Response> for Reply {
    fn from(response: Response) -> Self {
        Reply::Respond(response)
    }
}

/// How the response body is delimited.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Framing {
    /// `Transfer-Encoding: chunked`, one HTTP chunk per part: the client sees the part
    /// boundaries (streaming replies).
    #[default]
    Chunked,
    /// `Content-Length` of all parts together.
    Length,
    /// No length: the body ends when the connection closes.
    Close,
}

/// One piece of a response body.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// UTF-8 text, sent as is.
    Text(String),
    /// Raw bytes (may split a UTF-8 character).
    Bytes(Vec<u8>),
    /// A pause before the next part, in milliseconds.
    DelayMs(u64),
    /// `text` sent again and again, one piece after another, until `max_bytes` of it were sent
    /// or the client hangs up: a model that never stops. The server counts what it sent
    /// ([`ScriptedServer::bytes_sent`](crate::ScriptedServer::bytes_sent)) and the clients that
    /// hung up ([`ScriptedServer::hang_ups`](crate::ScriptedServer::hang_ups)).
    Repeat {
        /// One piece.
        text: String,
        /// Where the server stops on its own (then the following parts are sent).
        max_bytes: u64,
    },
}

impl Part {
    /// The pieces this part sends, in order (a `Repeat` as many as fit in its `max_bytes`).
    pub(crate) fn pieces(&self) -> Box<dyn Iterator<Item = &[u8]> + Send + '_> {
        match self {
            Part::Text(t) => Box::new(std::iter::once(t.as_bytes())),
            Part::Bytes(b) => Box::new(std::iter::once(b.as_slice())),
            Part::DelayMs(_) => Box::new(std::iter::empty()),
            Part::Repeat { text, max_bytes } => {
                let piece = text.as_bytes();
                let times = if piece.is_empty() {
                    0
                } else {
                    (*max_bytes as usize).div_ceil(piece.len())
                };
                Box::new(std::iter::repeat_n(piece, times))
            }
        }
    }
}

/// An HTTP response: status, headers and the body in parts.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Extra headers (framing and `Connection: close` are added by the server).
    #[serde(default)]
    pub headers: Vec<(String, String)>,
    /// Body parts, in order.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Body framing. By default, chunked.
    #[serde(default)]
    pub framing: Framing,
    /// When true, the connection is dropped after the parts without ending the body: with
    /// chunked or length framing the client sees a truncated stream. By default, false.
    #[serde(default)]
    pub drop_connection: bool,
}

impl Response {
    /// An empty response with `status`.
    pub fn new(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            parts: Vec::new(),
            framing: Framing::Chunked,
            drop_connection: false,
        }
    }

    /// A JSON body with `Content-Length`.
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Response::new(status)
            .header("content-type", "application/json")
            .text(value.to_string())
            .framing(Framing::Length)
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// Appends a text part.
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    /// Appends a raw byte part.
    pub fn bytes(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.parts.push(Part::Bytes(bytes.into()));
        self
    }

    /// Appends a pause.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.parts.push(Part::DelayMs(delay.as_millis() as u64));
        self
    }

    /// Sets the framing.
    pub fn framing(mut self, framing: Framing) -> Self {
        self.framing = framing;
        self
    }

    /// Drops the connection after the parts, leaving the body unfinished.
    pub fn then_drop_connection(mut self) -> Self {
        self.drop_connection = true;
        self
    }

    /// Appends `text` sent over and over until `max_bytes` of it were sent or the client hangs
    /// up (see [`Part::Repeat`]).
    pub fn repeat(mut self, text: impl Into<String>, max_bytes: u64) -> Self {
        self.parts.push(Part::Repeat {
            text: text.into(),
            max_bytes,
        });
        self
    }

    /// All body bytes, delays ignored (a repeated part as often as it would be sent).
    pub fn body_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for part in &self.parts {
            for piece in part.pieces() {
                out.extend_from_slice(piece);
            }
        }
        out
    }

    /// Re-cuts the body into parts of `size` bytes each (the last may be shorter), ignoring
    /// where lines and UTF-8 characters end: the awkward boundaries a real network produces.
    /// Delays are dropped. A `size` of 0 is treated as 1.
    pub fn rechunk(mut self, size: usize) -> Self {
        let body = self.body_bytes();
        self.parts = body
            .chunks(size.max(1))
            .map(|c| Part::Bytes(c.to_vec()))
            .collect();
        self
    }

    /// Re-cuts the body at the given byte offsets (out-of-range or unordered offsets are
    /// ignored). Delays are dropped.
    pub fn split_at(mut self, offsets: &[usize]) -> Self {
        let body = self.body_bytes();
        let mut parts = Vec::new();
        let mut start = 0;
        for &offset in offsets {
            if offset > start && offset < body.len() {
                parts.push(Part::Bytes(body[start..offset].to_vec()));
                start = offset;
            }
        }
        parts.push(Part::Bytes(body[start..].to_vec()));
        self.parts = parts;
        self
    }

    /// Keeps only the first `len` body bytes and drops the connection there: a stream cut off
    /// mid-way.
    pub fn truncate_and_drop(mut self, len: usize) -> Self {
        let body = self.body_bytes();
        let len = len.min(body.len());
        self.parts = vec![Part::Bytes(body[..len].to_vec())];
        self.drop_connection = true;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_round_trips_through_json() {
        let script = Script::new()
            .chat(
                Response::new(200)
                    .text("a")
                    .bytes(vec![0xE2, 0x82])
                    .delay(Duration::from_millis(3)),
            )
            .chat(Reply::Reset)
            .always(
                "/api/tags",
                Response::json(200, &serde_json::json!({"models": []})),
            );
        let text = serde_json::to_string(&script).unwrap();
        let back: Script = serde_json::from_str(&text).unwrap();
        assert_eq!(back, script);
    }

    #[test]
    fn rechunk_splits_inside_utf8() {
        let r = Response::new(200).text("é€").rechunk(1);
        assert_eq!(r.parts.len(), 5);
        assert_eq!(r.body_bytes(), "é€".as_bytes());
    }

    #[test]
    fn split_at_ignores_bad_offsets() {
        let r = Response::new(200).text("abcdef").split_at(&[2, 1, 4, 99]);
        assert_eq!(
            r.parts,
            vec![
                Part::Bytes(b"ab".to_vec()),
                Part::Bytes(b"cd".to_vec()),
                Part::Bytes(b"ef".to_vec())
            ]
        );
    }

    #[test]
    fn chat_path_matches_both_protocols() {
        assert!(PathMatch::Chat.matches("/api/chat"));
        assert!(PathMatch::Chat.matches("/v1/chat/completions"));
        assert!(PathMatch::Chat.matches("/chat/completions"));
        assert!(!PathMatch::Chat.matches("/api/show"));
    }
}
