//! Why a document could not be read. Each message is a clause that follows "could not read
//! FILE: " and says what to do next where something can be done.

use serde::{Deserialize, Serialize};

/// A conversion that produced nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Neither the content nor the extension names a format this crate reads.
    #[error(
        "not a document format read_document knows (PDF, DOCX, DOC, ODT, RTF, EPUB, PPTX, PPT, ODP, XLSX, XLS, ODS, CSV); for a text file use read_file"
    )]
    UnknownFormat,
    /// The input is larger than the converter's size limit.
    #[error(
        "the file is {} and documents are read up to {}; convert or split it with another tool first",
        size(*bytes),
        size(*limit)
    )]
    TooLarge {
        /// The input's size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// The selection does not fit the document.
    #[error("{0}")]
    Selection(String),
    /// The document is encrypted or password-protected.
    #[error("the {format} is encrypted or password-protected; read_document cannot decrypt it")]
    Encrypted {
        /// The format's name.
        format: String,
    },
    /// The parser refused the content.
    #[error("the {format} parser could not read it ({detail}); the file may be damaged")]
    Malformed {
        /// The format's name.
        format: String,
        /// What the parser said.
        detail: String,
    },
    /// The parser went over the time limit.
    #[error("the {format} parser gave up after {secs} s; the file may be damaged or too complex")]
    TimedOut {
        /// The format's name.
        format: String,
        /// The limit, in seconds.
        secs: u64,
    },
    /// The parser panicked or its process died.
    #[error("the {format} parser crashed ({detail}); the file may be damaged")]
    Crashed {
        /// The format's name.
        format: String,
        /// The panic message or how the process ended.
        detail: String,
    },
    /// The parser went over the memory limit.
    #[error(
        "the {format} parser ran out of its {} memory limit; the file may be damaged or too large",
        size(*limit)
    )]
    OutOfMemory {
        /// The format's name.
        format: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// The conversion was cancelled.
    #[error("reading was cancelled")]
    Cancelled,
    /// The worker process could not be started or answered nonsense: a fault of the set-up.
    #[error("the document worker failed: {0}")]
    Worker(String),
}

pub(crate) fn size(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    const GIB: u64 = 1024 * MIB;
    if bytes >= GIB {
        format!("{:.1} GiB", bytes as f64 / GIB as f64)
    } else if bytes >= MIB {
        format!("{:.1} MiB", bytes as f64 / MIB as f64)
    } else if bytes >= 1024 {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    } else {
        format!("{bytes} bytes")
    }
}
