//! A file's bytes as text that can be edited and written back byte for byte: the UTF-8 BOM is
//! set aside, bytes that are not UTF-8 are carried through as private-use characters, and the
//! text is matched in a view with `\r\n` shown as `\n`, while replacements are spliced into the
//! original so untouched lines keep their exact endings.

use lathe_runtime::text::UTF8_BOM;

/// Bytes that are not UTF-8 become `U+10FF00 + byte` (Supplementary Private Use Area-B), so an
/// edit elsewhere in the file writes them back unchanged.
const RAW_BYTE_BASE: u32 = 0x10FF00;

/// A decoded file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The file started with a UTF-8 BOM.
    pub bom: bool,
    /// Some bytes were not UTF-8 (and are carried as private-use characters).
    pub raw_bytes: bool,
    /// The text after the BOM, line endings as in the file.
    pub text: String,
}

impl Document {
    /// Decodes `bytes`, or says why the file cannot be edited losslessly.
    pub fn decode(bytes: &[u8]) -> Result<Document, String> {
        let (bom, body) = match bytes.strip_prefix(UTF8_BOM) {
            Some(body) => (true, body),
            None => (false, bytes),
        };
        if let Ok(text) = std::str::from_utf8(body) {
            return Ok(Document {
                bom,
                raw_bytes: false,
                text: text.to_owned(),
            });
        }
        let mut text = String::with_capacity(body.len());
        for chunk in body.utf8_chunks() {
            if chunk.valid().chars().any(is_raw_byte) {
                return Err(
                    "it mixes bytes that are not UTF-8 with characters from the private-use range \
                     U+10FF00-U+10FFFF, so edit_file cannot keep every byte; use the shell instead"
                        .to_owned(),
                );
            }
            text.push_str(chunk.valid());
            for &b in chunk.invalid() {
                text.push(char::from_u32(RAW_BYTE_BASE + u32::from(b)).expect("valid scalar"));
            }
        }
        Ok(Document {
            bom,
            raw_bytes: true,
            text,
        })
    }

    /// The bytes of `text` written as this document was read (BOM, raw bytes).
    pub fn encode(&self, text: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len() + 3);
        if self.bom {
            out.extend_from_slice(UTF8_BOM);
        }
        if self.raw_bytes {
            for c in text.chars() {
                if is_raw_byte(c) {
                    out.push((u32::from(c) - RAW_BYTE_BASE) as u8);
                } else {
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
        } else {
            out.extend_from_slice(text.as_bytes());
        }
        out
    }
}

fn is_raw_byte(c: char) -> bool {
    (RAW_BYTE_BASE..=RAW_BYTE_BASE + 0xFF).contains(&u32::from(c))
}

/// Text as the matcher sees it: `\r\n` -> `\n`, with what is needed to map positions back.
#[derive(Debug, Clone)]
pub struct View {
    /// The text with each `\r` before a `\n` removed.
    pub text: String,
    /// View positions of the `\n`s that had a `\r` before them, ascending.
    crlf_at: Vec<usize>,
    /// More lines end with `\r\n` than with a bare `\n`.
    pub mostly_crlf: bool,
}

impl View {
    /// The view of `raw`.
    pub fn of(raw: &str) -> View {
        let mut text = String::with_capacity(raw.len());
        let mut crlf_at = Vec::new();
        let mut rest = raw;
        while let Some(i) = rest.find("\r\n") {
            text.push_str(&rest[..i]);
            crlf_at.push(text.len());
            text.push('\n');
            rest = &rest[i + 2..];
        }
        text.push_str(rest);
        let lf = text.bytes().filter(|&b| b == b'\n').count();
        View {
            mostly_crlf: crlf_at.len() * 2 > lf,
            text,
            crlf_at,
        }
    }

    /// The position in the raw text of view position `at` (a `\r\n` at `at` starts at its `\r`).
    pub fn raw_pos(&self, at: usize) -> usize {
        at + self.crlf_at.partition_point(|&p| p < at)
    }

    /// The endings of the `\n`s in view range `start..end`, in order: true for `\r\n`.
    fn endings(&self, start: usize, end: usize) -> Vec<bool> {
        self.text[start..end]
            .match_indices('\n')
            .map(|(i, _)| self.crlf_at.binary_search(&(start + i)).is_ok())
            .collect()
    }

    /// `replacement` (with `\n` endings) as raw text for the view range `start..end`: its n-th
    /// line ending is the n-th ending of the range it replaces, and the file's usual ending
    /// after those run out.
    pub fn raw_replacement(&self, start: usize, end: usize, replacement: &str) -> String {
        let endings = self.endings(start, end);
        let mut out = String::with_capacity(replacement.len() + replacement.len() / 16);
        for (i, piece) in replacement.split('\n').enumerate() {
            if i > 0 {
                let crlf = endings.get(i - 1).copied().unwrap_or(self.mostly_crlf);
                out.push_str(if crlf { "\r\n" } else { "\n" });
            }
            out.push_str(piece);
        }
        out
    }
}

/// Brings a model's string to the view's form: `\r\n` -> `\n` and no leading BOM character.
pub fn normalize_input(text: &str) -> String {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    lathe_runtime::text::crlf_to_lf(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_encode_round_trips_bom_and_raw_bytes() {
        for bytes in [
            &b"plain\n"[..],
            b"\xEF\xBB\xBFwith bom\r\n",
            b"latin-1 caf\xE9\r\nand \xFF\xFE\n",
            b"",
        ] {
            let doc = Document::decode(bytes).unwrap();
            assert_eq!(doc.encode(&doc.text), bytes, "{bytes:?}");
        }
        let doc = Document::decode(b"\xEF\xBB\xBFx").unwrap();
        assert!(doc.bom);
        assert_eq!(doc.text, "x");
        let mixed = "\u{10FF41}"
            .as_bytes()
            .iter()
            .chain(b"\xFF")
            .copied()
            .collect::<Vec<u8>>();
        assert!(Document::decode(&mixed).is_err());
    }

    #[test]
    fn view_maps_positions_back_to_raw() {
        let raw = "a\r\nb\nc\r\n";
        let view = View::of(raw);
        assert_eq!(view.text, "a\nb\nc\n");
        assert!(view.mostly_crlf);
        assert_eq!(view.raw_pos(0), 0);
        assert_eq!(view.raw_pos(1), 1, "a CRLF starts at its CR");
        assert_eq!(view.raw_pos(2), 3);
        assert_eq!(view.raw_pos(4), 5);
        assert_eq!(view.raw_pos(6), 8);
        assert_eq!(view.raw_pos(view.text.len()), raw.len());
    }

    #[test]
    fn replacement_reuses_the_endings_it_replaces() {
        let view = View::of("x\r\ny\nz\r\n");
        // Replacing "y\nz\r\n" (view 2..6): its endings are LF then CRLF.
        assert_eq!(view.raw_replacement(2, 6, "1\n2\n3\n"), "1\n2\r\n3\r\n");
        let lf = View::of("a\nb\n");
        assert_eq!(lf.raw_replacement(0, 2, "p\nq\n"), "p\nq\n");
    }

    #[test]
    fn inputs_are_normalised() {
        assert_eq!(normalize_input("\u{FEFF}a\r\nb"), "a\nb");
    }
}
