//! Newline-delimited JSON, split on bytes.
//!
//! Lines are cut at `\n` in the raw bytes, before any UTF-8 decoding, so a network chunk that
//! ends inside a multi-byte character loses nothing: the partial character waits in the buffer
//! with the rest of its line.

/// Splits a byte stream into lines.
#[derive(Debug, Default)]
pub struct NdjsonDecoder {
    /// Bytes of the current, unfinished line.
    partial: Vec<u8>,
}

impl NdjsonDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds the next bytes; calls `on_line` for every complete line, without its `\n` or
    /// `\r\n`. Blank lines are skipped.
    pub fn feed(&mut self, mut bytes: &[u8], mut on_line: impl FnMut(&[u8])) {
        while let Some(nl) = bytes.iter().position(|&b| b == b'\n') {
            if self.partial.is_empty() {
                emit(&bytes[..nl], &mut on_line);
            } else {
                self.partial.extend_from_slice(&bytes[..nl]);
                let line = std::mem::take(&mut self.partial);
                emit(&line, &mut on_line);
                // Keep the allocation for the next partial line.
                self.partial = line;
                self.partial.clear();
            }
            bytes = &bytes[nl + 1..];
        }
        self.partial.extend_from_slice(bytes);
    }

    /// Ends the stream: a last line without a newline is still a line.
    pub fn finish(&mut self, mut on_line: impl FnMut(&[u8])) {
        let line = std::mem::take(&mut self.partial);
        emit(&line, &mut on_line);
    }

    /// Bytes waiting for the end of their line.
    pub fn buffered(&self) -> usize {
        self.partial.len()
    }
}

fn emit(line: &[u8], on_line: &mut impl FnMut(&[u8])) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if !line.iter().all(u8::is_ascii_whitespace) {
        on_line(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(chunks: &[&[u8]]) -> Vec<String> {
        let mut d = NdjsonDecoder::new();
        let mut out = Vec::new();
        for c in chunks {
            d.feed(c, |l| out.push(String::from_utf8(l.to_vec()).unwrap()));
        }
        d.finish(|l| out.push(String::from_utf8(l.to_vec()).unwrap()));
        out
    }

    #[test]
    fn every_split_point_gives_the_same_lines() {
        let text = "{\"a\":\"héllo €\"}\n\n{\"b\":\"日本\"}\r\n{\"c\":1}";
        let bytes = text.as_bytes();
        let whole = lines_of(&[bytes]);
        assert_eq!(
            whole,
            vec!["{\"a\":\"héllo €\"}", "{\"b\":\"日本\"}", "{\"c\":1}"]
        );
        for i in 0..=bytes.len() {
            for j in i..=bytes.len() {
                assert_eq!(
                    lines_of(&[&bytes[..i], &bytes[i..j], &bytes[j..]]),
                    whole,
                    "split at {i},{j}"
                );
            }
        }
    }

    #[test]
    fn byte_at_a_time() {
        let text = "{\"x\":\"✓\"}\n{\"y\":2}\n".as_bytes();
        let chunks: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(lines_of(&chunks), vec!["{\"x\":\"✓\"}", "{\"y\":2}"]);
    }

    #[test]
    fn buffered_counts_the_partial_line() {
        let mut d = NdjsonDecoder::new();
        d.feed(b"{\"a\":1}\n{\"b", |_| {});
        assert_eq!(d.buffered(), 3);
    }
}
