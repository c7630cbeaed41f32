//! The conversions themselves, in this process: pdf-inspector for PDF pages, anydoc for the
//! rest, the OOXML manifest filtered for slides and sheets.

use crate::{Document, Error, Format, Selection, Unit, UnitKind, ooxml};

/// A reflowable text is cut into chunks of about this many characters, at blank lines where
/// it can: a chunk fits one tool result (20,000 characters by default) with room for notes.
pub const CHUNK_CHARS: usize = 16_000;

/// Converts `bytes` (in `format`) in this process, with no isolation: a hostile file can panic,
/// loop or exhaust memory here. [`Converter`](crate::Converter) is the safe way in.
pub fn convert_in_process(
    bytes: &[u8],
    format: Format,
    selection: &Selection,
) -> Result<Document, Error> {
    #[cfg(feature = "test-hooks")]
    test_hooks::run(bytes);
    match format {
        Format::Pdf => pdf(bytes, selection),
        Format::Pptx => ooxml::slides(bytes, selection),
        Format::Xlsx => ooxml::sheets(bytes, selection),
        _ => reflowable(bytes, format, selection),
    }
}

fn pdf(bytes: &[u8], selection: &Selection) -> Result<Document, Error> {
    let (total, wanted) = if selection.is_all() {
        (None, None)
    } else {
        let total = pdf_inspector::detect_pdf_mem(bytes)
            .map_err(pdf_error)?
            .page_count;
        let wanted: Vec<u32> = selection
            .resolve(total, "page")
            .map_err(|e| Error::Selection(e.0))?
            .into_iter()
            .map(|n| n - 1)
            .collect();
        (Some(total), Some(wanted))
    };
    let extracted =
        pdf_inspector::extract_pages_markdown_mem(bytes, wanted.as_deref()).map_err(pdf_error)?;
    let total = total.unwrap_or(extracted.pages.len() as u32);
    let units = extracted
        .pages
        .into_iter()
        .map(|page| {
            let text = page.markdown.trim();
            Unit {
                number: page.page + 1,
                name: None,
                // Garbled text on a flagged page is still shown: it may be partly readable.
                text: (!text.is_empty()).then(|| format!("{text}\n")),
            }
        })
        .collect();
    Ok(Document {
        format: Format::Pdf,
        kind: UnitKind::Page,
        total,
        units,
    })
}

pub(crate) fn pdf_error(error: pdf_inspector::PdfError) -> Error {
    use pdf_inspector::PdfError;
    match error {
        PdfError::Encrypted => Error::Encrypted {
            format: "PDF".into(),
        },
        other => Error::Malformed {
            format: "PDF".into(),
            detail: other.to_string(),
        },
    }
}

pub(crate) fn anydoc_error(format: Format, error: anydoc::ConvertError) -> Error {
    match error {
        anydoc::ConvertError::Encrypted => Error::Encrypted {
            format: format.name().into(),
        },
        other => Error::Malformed {
            format: format.name().into(),
            detail: other.to_string(),
        },
    }
}

fn reflowable(bytes: &[u8], format: Format, selection: &Selection) -> Result<Document, Error> {
    let markdown = anydoc::to_markdown_bytes(bytes, format.to_anydoc())
        .map_err(|e| anydoc_error(format, e))?;
    let chunks = chunk(&markdown, CHUNK_CHARS);
    let total = chunks.len() as u32;
    let wanted = selection
        .resolve(total, "chunk")
        .map_err(|e| Error::Selection(e.0))?;
    let units = wanted
        .into_iter()
        .map(|n| Unit {
            number: n,
            name: None,
            text: Some(chunks[n as usize - 1].clone()),
        })
        .collect();
    Ok(Document {
        format,
        kind: UnitKind::Chunk,
        total,
        units,
    })
}

/// Cuts `text` into pieces of about `max` characters: at blank lines when a paragraph ends in
/// reach, else at a line end, else (one enormous line) at a character boundary. Never empty:
/// an empty text is one empty chunk.
pub(crate) fn chunk(text: &str, max: usize) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while rest.len() > max {
        let mut end = max;
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let window = &rest[..end];
        let cut = window
            .rfind("\n\n")
            .filter(|&i| i >= max / 4)
            .map(|i| i + 2)
            .or_else(|| window.rfind('\n').filter(|&i| i >= max / 4).map(|i| i + 1))
            .unwrap_or(end);
        chunks.push(rest[..cut].to_owned());
        rest = &rest[cut..];
    }
    if !rest.is_empty() || chunks.is_empty() {
        chunks.push(rest.to_owned());
    }
    chunks
}

#[cfg(feature = "test-hooks")]
mod test_hooks {
    /// Inputs starting with this run a hook instead of a parser.
    const PREFIX: &[u8] = b"LATHE-TEST-HOOK:";

    #[expect(
        clippy::disallowed_methods,
        reason = "a test hook that hangs a worker process on purpose"
    )]
    pub(super) fn run(bytes: &[u8]) {
        let Some(hook) = bytes.strip_prefix(PREFIX) else {
            return;
        };
        if hook.starts_with(b"panic") {
            panic!("test hook: the parser panics");
        } else if hook.starts_with(b"loop") {
            loop {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        } else if hook.starts_with(b"alloc") {
            // Address space only, never touched: the worker's RLIMIT_AS stops it without the
            // machine lending real memory (a test must not take a gigabyte from its neighbours).
            let mut hog: Vec<Vec<u8>> = Vec::new();
            loop {
                hog.push(Vec::with_capacity(64 << 20));
                std::hint::black_box(&hog);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::chunk;

    #[test]
    fn chunks_cut_at_paragraphs_and_keep_every_character() {
        let text = "para one line\n\n".repeat(100);
        let chunks = chunk(&text, 100);
        assert!(chunks.len() > 10);
        assert!(chunks.iter().all(|c| c.len() <= 100 && c.ends_with("\n\n")));
        assert_eq!(chunks.concat(), text);
        let long = "é".repeat(500);
        let chunks = chunk(&long, 101);
        assert_eq!(chunks.concat(), long);
        assert_eq!(chunk("", 10), vec![String::new()]);
    }
}
