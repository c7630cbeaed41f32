//! `read_document`: a PDF, Word, OpenDocument, EPUB, PowerPoint or Excel file as Markdown, a
//! selection of pages at a time, paged by lines like `read_file`. The conversion is
//! `lathe-documents`' (in its worker process when the binary configured one) and is cached in
//! the session's state directory.

use std::io::Read;
use std::sync::Arc;

use lathe_documents::{Cache, Converter, DEFAULT_MAX_INPUT, Document, Error, Format, Selection};
use nix::fcntl::OFlag;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio_util::sync::CancellationToken;

use lathe_runtime::paging::{Pager, page_text};
use lathe_runtime::session::Session;
use lathe_runtime::text::{self, human_size};
use lathe_runtime::tool::{
    Effect, ResultExt, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult,
};
use lathe_runtime::workspace::Access;

/// Read a document as Markdown: PDF, DOCX, DOC, ODT, RTF, EPUB, PPTX, PPT, ODP, XLSX, XLS, ODS
/// or CSV. Use read_file for source code and other text.
///
/// `pages` selects PDF pages, PPTX slides or visible XLSX sheets ("1-3,7"); other formats have
/// no fixed pages, so their text is cut into numbered chunks that `pages` selects the same way.
/// A PDF page without a text layer (scanned) is shown as a gap: there is no OCR. Lines are
/// numbered and paged like read_file: when only part is shown, a last note says which offset
/// reads on.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadDocumentInput {
    /// The document, relative to the workspace root.
    pub path: String,
    /// Pages, slides, sheets or chunks to read, like "1-3,7". Default: all.
    pub pages: Option<String>,
    /// The first line of the converted text to show, counting from 1. Default: 1.
    pub offset: Option<i64>,
    /// The most lines to show. Default: 2000.
    pub limit: Option<i64>,
}

/// The `read_document` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReadDocumentTool;

impl Tool for ReadDocumentTool {
    const NAME: &'static str = "read_document";
    // Few tasks need it: behind `more_tools` in the compact profile (small windows).
    const ON_DEMAND: bool = true;
    const ALIASES: &'static [&'static str] = &["read_pdf", "read_docx"];
    type Input = ReadDocumentInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Read {
            path: input.path.clone(),
        }]
    }

    fn title(&self, input: &Self::Input) -> String {
        match input.pages.as_deref().map(str::trim) {
            Some(pages) if !pages.is_empty() => {
                text::title(Self::NAME, &format!("{} (pages {pages})", input.path))
            }
            _ => text::title(Self::NAME, &input.path),
        }
    }

    async fn run(&self, input: ReadDocumentInput, ctx: ToolContext) -> ToolResult {
        let session = Arc::clone(&ctx.session);
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || read(&session, &input, &cancel))
            .await
            .or_model(|err| format!("read_document stopped unexpectedly: {err}"))?
    }
}

/// What `read_document` answers for the whole document at `path` (in the workspace or a read
/// root, such as the session's state directory): for a tool that holds a document of its own
/// (`web_fetch` on a PDF). Blocking.
pub fn read_path(session: &Session, path: &str, cancel: &CancellationToken) -> ToolResult {
    let input = ReadDocumentInput {
        path: path.to_owned(),
        pages: None,
        offset: None,
        limit: None,
    };
    read(session, &input, cancel)
}

fn read(session: &Session, input: &ReadDocumentInput, cancel: &CancellationToken) -> ToolResult {
    let selection: Selection = input
        .pages
        .as_deref()
        .unwrap_or("")
        .parse()
        .or_model(|err: lathe_documents::SelectionError| err.0)?;
    let workspace = session.workspace();
    let resolved = workspace
        .resolve(&input.path, Access::Read)
        .or_model(|err| err.to_string())?;
    let shown = resolved.shown().to_owned();
    let failed = |err: Error| {
        ToolError::new(format!("could not read {shown}: {err}")).with_path(shown.clone())
    };
    let mut file = match workspace.open(&resolved, OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0) {
        Ok(file) => file,
        Err(err) => {
            return Err(ToolError::new(format!("cannot open {shown}: {err}")).with_path(shown));
        }
    };
    let len = match file.metadata() {
        Ok(meta) if meta.is_file() => meta.len(),
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(format!(
                "{shown} is a directory, not a document; use list_files with path=\"{shown}\""
            ))
            .with_path(shown));
        }
        Ok(_) => {
            return Err(ToolError::new(format!("{shown} is not a regular file")).with_path(shown));
        }
        Err(err) => return Err(ToolError::new(format!("cannot read {shown}: {err}"))),
    };
    // Refused before reading: a huge file is never pulled into memory.
    if len > DEFAULT_MAX_INPUT {
        return Err(failed(Error::TooLarge {
            bytes: len,
            limit: DEFAULT_MAX_INPUT,
        }));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    if let Err(err) = file
        .by_ref()
        .take(DEFAULT_MAX_INPUT + 1)
        .read_to_end(&mut bytes)
    {
        return Err(ToolError::new(format!("cannot read {shown}: {err}")).with_path(shown));
    }
    if Format::detect(&shown, &bytes).is_none() {
        return Err(failed(Error::UnknownFormat));
    }
    let cache = Cache::new(session.state_dir().join("documents"));
    let (document, cached) = match cache.get(&bytes, &selection) {
        Some(document) => (document, true),
        None => {
            let converted =
                Converter::new().convert(&bytes, &shown, &selection, &|| cancel.is_cancelled());
            match converted {
                Ok(document) => {
                    if let Err(err) = cache.put(&bytes, &selection, &document) {
                        tracing::warn!("cannot cache the conversion of {shown}: {err}");
                    }
                    (document, false)
                }
                Err(err) => return Err(failed(err)),
            }
        }
    };
    render(&shown, &document, &selection, input, cached)
}

fn render(
    shown: &str,
    document: &Document,
    selection: &Selection,
    input: &ReadDocumentInput,
    cached: bool,
) -> ToolResult {
    let noun = document.kind.noun();
    let part = if selection.is_all() {
        "the document".to_owned()
    } else {
        let plural = if document.units.len() == 1 { "" } else { "s" };
        format!("{noun}{plural} {}", document.selected())
    };
    let pager = Pager {
        tool: ReadDocumentTool::NAME,
        what: &part,
    };
    let paged = page_text(
        &document.to_markdown(),
        shown,
        pager,
        input.offset,
        input.limit,
    )
    .map_err(|err| err.with_path(shown))?;
    // read_file's note, told which part it pages and that the same `pages` reads on.
    let read_on = "; to read on, call read_document with offset=";
    let body = if selection.is_all() {
        paged.text.replacen(
            read_on,
            " of the document; to read on, call read_document with offset=",
            1,
        )
    } else {
        paged.text.replacen(
            read_on,
            &format!(
                " in {part}; to read on, call read_document with pages=\"{selection}\" offset="
            ),
            1,
        )
    };
    let text = format!("{shown}: {}\n\n{body}", document.summary());
    Ok(ToolOutput::ok(text)
        .with_path(shown)
        .with_meta("format", document.format.name())
        .with_meta("unit", noun)
        .with_meta("units_total", document.total)
        .with_meta("units_shown", document.units.len())
        .with_meta("units_with_text", document.units_with_text())
        .with_meta("cached", cached))
}

/// For `read_file` on a document: the result that points at this tool, or `None` when the file
/// is not a document this tool reads, or is one read_file shows well as text (CSV, RTF). A
/// document is known by its content (`prefix`, the start of the file), or by its extension
/// when the content is binary.
pub(crate) fn pointer(shown: &str, prefix: &[u8], len: u64) -> Option<ToolOutput> {
    let format = Format::from_content(prefix)
        .or_else(|| text::binary_kind(prefix).and_then(|_| Format::from_path(shown)))?;
    if matches!(format, Format::Csv | Format::Rtf) {
        return None;
    }
    Some(
        ToolOutput::ok(format!(
            "{shown} is a {} document ({}); read_file shows text only. Use read_document with \
             path=\"{shown}\" to read it as Markdown (pages=\"1-3\" selects {}s).",
            format.name(),
            human_size(len),
            format.unit_kind().noun(),
        ))
        .with_path(shown)
        .with_meta("binary", true)
        .with_meta("document", format.name())
        .with_meta("bytes", len),
    )
}
