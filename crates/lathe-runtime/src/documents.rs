//! The document reader other tools hand a saved document to (`web_fetch` with a PDF it fetched):
//! `read_document`'s conversion, provided by `lathe-tools` when it registers its built-in tools
//! ([`provide_reader`]), so that a crate of tools can read documents without depending on the
//! crate that converts them. Without one, such a tool says where the document was saved and
//! which tool reads it.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

use crate::session::Session;
use crate::tool::ToolResult;

/// Reads the document at a path (as a tool call would name it) in a session: the first part of
/// its text as Markdown, paged like `read_document`, or why it cannot be read.
pub type Reader = fn(&Session, &str, &CancellationToken) -> ToolResult;

static READER: OnceLock<Reader> = OnceLock::new();

/// Makes `reader` the process's document reader; the first one provided stays.
pub fn provide_reader(reader: Reader) {
    let _ = READER.set(reader);
}

/// The process's document reader, when one was provided.
pub fn reader() -> Option<Reader> {
    READER.get().copied()
}
