//! Just enough HTTP/1.1 to read one request and write one scripted response, byte for byte.

use crate::script::{Framing, Part, Response};
use serde::{Deserialize, Serialize};
use std::io;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// A request head over this size is refused: no client of ours sends one.
const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Request bodies over this size are refused (a long agent history is a few MB at most).
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// One request as the server received it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RecordedRequest {
    /// Method, upper case.
    pub method: String,
    /// Path without the query string.
    pub path: String,
    /// Query string, without `?`, when present.
    pub query: Option<String>,
    /// Headers in order, names lower-cased.
    pub headers: Vec<(String, String)>,
    /// The body bytes.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The body parsed as JSON, when it is JSON.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Reads one request. `Ok(None)` when the client closed before sending anything.
pub(crate) async fn read_request<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> io::Result<Option<RecordedRequest>> {
    let mut buf = Vec::with_capacity(4096);
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD_BYTES {
            return Err(invalid("request head too large"));
        }
        let mut chunk = [0u8; 4096];
        let n = reader.read(&mut chunk).await?;
        if n == 0 {
            if buf.is_empty() {
                return Ok(None);
            }
            return Err(invalid("connection closed inside the request head"));
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head =
        std::str::from_utf8(&buf[..head_end]).map_err(|_| invalid("request head is not utf-8"))?;
    let mut lines = head.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut fields = request_line.split(' ');
    let method = fields.next().unwrap_or_default().to_ascii_uppercase();
    let target = fields
        .next()
        .ok_or_else(|| invalid("request line has no target"))?;
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), Some(q.to_string())),
        None => (target.to_string(), None),
    };
    let mut headers = Vec::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let mut rest = buf[head_end + 4..].to_vec();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        read_chunked(reader, rest).await?
    } else {
        let len: usize = match header("content-length") {
            Some(v) => v.parse().map_err(|_| invalid("bad content-length"))?,
            None => 0,
        };
        if len > MAX_BODY_BYTES {
            return Err(invalid("request body too large"));
        }
        while rest.len() < len {
            let mut chunk = vec![0u8; (len - rest.len()).min(64 * 1024)];
            let n = reader.read(&mut chunk).await?;
            if n == 0 {
                return Err(invalid("connection closed inside the request body"));
            }
            rest.extend_from_slice(&chunk[..n]);
        }
        rest.truncate(len);
        rest
    };
    Ok(Some(RecordedRequest {
        method,
        path,
        query,
        headers,
        body,
    }))
}

async fn read_chunked<R: AsyncRead + Unpin>(
    reader: &mut R,
    mut buf: Vec<u8>,
) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(pos) = find(&buf, b"\r\n") {
                break pos;
            }
            fill(reader, &mut buf).await?;
        };
        let size_text =
            std::str::from_utf8(&buf[..line_end]).map_err(|_| invalid("bad chunk size"))?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| invalid("bad chunk size"))?;
        buf.drain(..line_end + 2);
        if size == 0 {
            return Ok(body);
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(invalid("request body too large"));
        }
        while buf.len() < size + 2 {
            fill(reader, &mut buf).await?;
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
    }
}

async fn fill<R: AsyncRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    let n = reader.read(&mut chunk).await?;
    if n == 0 {
        return Err(invalid("connection closed inside a chunked body"));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// Writes `response`. Returns without finishing the body when the response says to drop the
/// connection; the caller then closes the socket.
pub(crate) async fn write_response<W: AsyncWrite + Unpin>(
    writer: &mut W,
    response: &Response,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        reason(response.status)
    );
    for (k, v) in &response.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    match response.framing {
        Framing::Chunked => head.push_str("transfer-encoding: chunked\r\n"),
        Framing::Length => head.push_str(&format!(
            "content-length: {}\r\n",
            response.body_bytes().len()
        )),
        Framing::Close => {}
    }
    head.push_str("connection: close\r\n\r\n");
    writer.write_all(head.as_bytes()).await?;
    writer.flush().await?;
    for part in &response.parts {
        if let Part::DelayMs(ms) = part {
            tokio::time::sleep(Duration::from_millis(*ms)).await;
            continue;
        }
        for bytes in part.pieces() {
            if bytes.is_empty() {
                // An empty chunk would end a chunked body early.
                continue;
            }
            if response.framing == Framing::Chunked {
                writer
                    .write_all(format!("{:x}\r\n", bytes.len()).as_bytes())
                    .await?;
                writer.write_all(bytes).await?;
                writer.write_all(b"\r\n").await?;
            } else {
                writer.write_all(bytes).await?;
            }
            writer.flush().await?;
        }
    }
    if response.drop_connection {
        return Ok(());
    }
    if response.framing == Framing::Chunked {
        writer.write_all(b"0\r\n\r\n").await?;
    }
    writer.flush().await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Scripted",
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_content_length_and_chunked_bodies() {
        let raw = b"POST /api/chat?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
            .to_vec();
        let req = read_request(&mut raw.as_slice()).await.unwrap().unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/api/chat");
        assert_eq!(req.query.as_deref(), Some("x=1"));
        assert_eq!(req.header("HOST"), Some("a"));
        assert_eq!(req.json().unwrap()["a"], 1);

        let raw = b"POST /x HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext\r\nde\r\n0\r\n\r\n".to_vec();
        let req = read_request(&mut raw.as_slice()).await.unwrap().unwrap();
        assert_eq!(req.body, b"abcde");
    }

    #[tokio::test]
    async fn closed_connection_is_none() {
        assert!(read_request(&mut b"".as_slice()).await.unwrap().is_none());
        assert!(read_request(&mut b"GET / HT".as_slice()).await.is_err());
    }

    #[tokio::test]
    async fn writes_chunked_parts_and_skips_empty_ones() {
        let response = Response::new(200).text("ab").text("").bytes(vec![0xC3]);
        let mut out = Vec::new();
        write_response(&mut out, &response).await.unwrap();
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(out.ends_with(b"2\r\nab\r\n1\r\n\xC3\r\n0\r\n\r\n"));
    }

    #[tokio::test]
    async fn dropped_response_has_no_terminator() {
        let response = Response::new(200).text("ab").then_drop_connection();
        let mut out = Vec::new();
        write_response(&mut out, &response).await.unwrap();
        assert!(out.ends_with(b"2\r\nab\r\n"));
    }
}
