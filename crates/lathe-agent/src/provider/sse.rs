//! A small server-sent events decoder (the WHATWG event stream format).
//!
//! Lines end with `\r\n`, `\n` or `\r`, and a `\r\n` may be split across chunks; `data:` lines
//! of one event are joined with `\n`; comment lines (`:`) and unknown fields are ignored; a
//! blank line dispatches the event. Lines are cut on bytes before decoding, so a chunk boundary
//! inside a UTF-8 character loses nothing.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when there was one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Turns bytes into events.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` at the start of the next one belongs to it.
    skip_lf: bool,
    started: bool,
    data: String,
    event: Option<String>,
}

impl SseDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes; calls `on_event` for every complete event.
    pub fn feed(&mut self, mut bytes: &[u8], mut on_event: impl FnMut(SseEvent)) {
        if !self.started && !bytes.is_empty() {
            self.started = true;
            bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        }
        if self.skip_lf && !bytes.is_empty() {
            self.skip_lf = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|&b| b == b'\n' || b == b'\r') {
            let is_cr = bytes[end] == b'\r';
            if self.line.is_empty() {
                self.process_line(&bytes[..end], &mut on_event);
            } else {
                self.line.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, &mut on_event);
                self.line = line;
                self.line.clear();
            }
            bytes = &bytes[end + 1..];
            if is_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
        }
        self.line.extend_from_slice(bytes);
    }

    /// Ends the stream. Unlike a browser, an event not followed by a blank line is still
    /// dispatched: some servers close right after their last `data:` line.
    pub fn finish(&mut self, mut on_event: impl FnMut(SseEvent)) {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut on_event);
        }
        self.dispatch(&mut on_event);
    }

    fn process_line(&mut self, line: &[u8], on_event: &mut impl FnMut(SseEvent)) {
        if line.is_empty() {
            self.dispatch(on_event);
            return;
        }
        if line[0] == b':' {
            return;
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                self.data.push_str(&String::from_utf8_lossy(value));
                self.data.push('\n');
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {}
        }
    }

    fn dispatch(&mut self, on_event: &mut impl FnMut(SseEvent)) {
        let event = self.event.take();
        if self.data.is_empty() {
            return;
        }
        let mut data = std::mem::take(&mut self.data);
        data.pop();
        on_event(SseEvent { event, data });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, |e| out.push(e));
        }
        d.finish(|e| out.push(e));
        out
    }

    fn data(text: &str) -> SseEvent {
        SseEvent {
            event: None,
            data: text.to_string(),
        }
    }

    #[test]
    fn line_endings_comments_and_multi_line_data() {
        let text = ": keep-alive\n\ndata: a\r\ndata:b\r\n\r\nevent: error\rdata: {\"x\":\"é\"}\r\rdata: [DONE]\n\n";
        let want = vec![
            data("a\nb"),
            SseEvent {
                event: Some("error".into()),
                data: "{\"x\":\"é\"}".into(),
            },
            data("[DONE]"),
        ];
        let bytes = text.as_bytes();
        assert_eq!(events_of(&[bytes]), want);
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                assert_eq!(
                    events_of(&[&bytes[..i], &bytes[i..j], &bytes[j..]]),
                    want,
                    "split at {i},{j}"
                );
            }
        }
    }

    #[test]
    fn crlf_split_between_chunks_is_one_line_end() {
        // "\r" then "\n" must not produce an extra blank line (which would dispatch early).
        assert_eq!(
            events_of(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]),
            vec![data("a\nb")]
        );
        // A lone "\n" chunk after "\r" is the rest of that line end, and only that.
        assert_eq!(
            events_of(&[b"data: a\r", b"\n", b"\ndata: b\n\n"]),
            vec![data("a"), data("b")]
        );
    }

    #[test]
    fn unknown_fields_and_empty_data() {
        assert_eq!(
            events_of(&[b"id: 7\nretry: 10\nfoo\ndata\n\n"]),
            vec![data("")]
        );
        assert_eq!(events_of(&[b"event: ping\n\n"]), vec![]);
    }

    #[test]
    fn last_event_without_blank_line_is_dispatched() {
        assert_eq!(events_of(&[b"data: [DONE]"]), vec![data("[DONE]")]);
    }

    #[test]
    fn bom_is_skipped() {
        assert_eq!(
            events_of(&["\u{feff}data: x\n\n".as_bytes()]),
            vec![data("x")]
        );
    }

    #[test]
    fn utf8_split_byte_by_byte() {
        let text = "data: 日本語 ✓\n\n".as_bytes();
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(events_of(&chunks), vec![data("日本語 ✓")]);
    }
}
