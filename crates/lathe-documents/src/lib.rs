//! Documents to Markdown, offline: PDF, DOCX, ODT, RTF, EPUB, PPTX, XLSX/ODS and CSV become
//! GitHub-flavoured Markdown, a selection of their parts at a time.
//!
//! A document is read as numbered **units**: the original pages of a PDF, the slides of a
//! PPTX, the visible sheets of an XLSX, and for reflowable formats (DOCX, ODT, RTF, EPUB, CSV,
//! ODS, ...) chunks that this crate cuts from the text and labels as chunks, never as printed
//! pages. A [`Selection`] (`"1-3,7"`) picks units; a PDF page without a text layer stays in the
//! result as an explicit gap ([`Unit::text`] is `None`), so nothing is dropped silently.
//!
//! Document parsers panic, loop and exhaust memory on hostile files. A [`Converter`] runs them
//! in a child process with an input size limit, a time limit and a memory limit when it knows a
//! worker program (an embedder's binary that calls [`worker::serve`] for a hidden subcommand, or
//! the `lathe-document-worker` binary of this crate); without one it converts in process, with
//! panics contained and a time limit on the wait (a looping parser then keeps its thread).
//!
//! ```no_run
//! use lathe_documents::{Converter, Selection};
//!
//! let bytes = std::fs::read("report.pdf")?;
//! let selection: Selection = "1-3,7".parse()?;
//! let document = Converter::new().convert(&bytes, "report.pdf", &selection, &|| false)?;
//! println!("{}", document.to_markdown());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod cache;
mod error;
mod extract;
mod isolate;
mod ooxml;
mod render;
mod select;
pub mod worker;

use serde::{Deserialize, Serialize};

pub use cache::Cache;
pub use error::Error;
pub use extract::convert_in_process;
pub use isolate::{
    Converter, DEFAULT_MAX_INPUT, DEFAULT_MEMORY_LIMIT, DEFAULT_TIME_LIMIT, set_default_worker,
};
pub use select::{Selection, SelectionError};

/// The formats read, as detected from content (and the extension where content cannot say).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// PDF: original pages.
    Pdf,
    /// Word (`.docx`, `.docm`): chunks.
    Docx,
    /// Word 97-2003 (`.doc`): chunks.
    Doc,
    /// OpenDocument text (`.odt`): chunks.
    Odt,
    /// Rich Text Format (`.rtf`): chunks.
    Rtf,
    /// EPUB 2 and 3: chunks.
    Epub,
    /// PowerPoint (`.pptx`): slides.
    Pptx,
    /// PowerPoint 97-2003 (`.ppt`): chunks.
    Ppt,
    /// OpenDocument presentation (`.odp`): chunks.
    Odp,
    /// Excel (`.xlsx`, `.xlsm`): visible sheets.
    Xlsx,
    /// Excel binary or 97-2003 (`.xlsb`, `.xls`): chunks.
    Xls,
    /// OpenDocument spreadsheet (`.ods`): chunks.
    Ods,
    /// Comma-separated values: chunks.
    Csv,
}

impl Format {
    /// The format of `bytes`, named `path`: from the content's signature first, from the
    /// extension for formats without one (CSV) or containers the content does not name.
    pub fn detect(path: &str, bytes: &[u8]) -> Option<Format> {
        let by_ext = Format::from_path(path);
        let by_content = anydoc::Format::from_bytes(bytes).map(Format::from_anydoc);
        match (by_content, by_ext) {
            // An .xlsb and an .xlsx are both "Excel" to the signature check.
            (Some(Format::Xlsx), Some(Format::Xls)) => Some(Format::Xls),
            (Some(Format::Xls), Some(Format::Xlsx)) if bytes.starts_with(b"PK") => {
                Some(Format::Xlsx)
            }
            (Some(format), _) => Some(format),
            (None, ext) => ext,
        }
    }

    /// The format `bytes` show by their signature alone (`None` for CSV, which has none).
    pub fn from_content(bytes: &[u8]) -> Option<Format> {
        anydoc::Format::from_bytes(bytes).map(Format::from_anydoc)
    }

    /// The format a path's extension names (case-insensitive).
    pub fn from_path(path: &str) -> Option<Format> {
        let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match ext.as_str() {
            "pdf" => Format::Pdf,
            "docx" | "docm" => Format::Docx,
            "doc" => Format::Doc,
            "odt" => Format::Odt,
            "rtf" => Format::Rtf,
            "epub" => Format::Epub,
            "pptx" | "pptm" | "ppsx" | "ppsm" => Format::Pptx,
            "ppt" | "pps" | "pot" => Format::Ppt,
            "odp" => Format::Odp,
            "xlsx" | "xlsm" => Format::Xlsx,
            "xlsb" | "xls" => Format::Xls,
            "ods" => Format::Ods,
            "csv" => Format::Csv,
            _ => return None,
        })
    }

    fn from_anydoc(format: anydoc::Format) -> Format {
        match format {
            anydoc::Format::Pdf => Format::Pdf,
            anydoc::Format::Docx => Format::Docx,
            anydoc::Format::Doc => Format::Doc,
            anydoc::Format::Odt => Format::Odt,
            anydoc::Format::Rtf => Format::Rtf,
            anydoc::Format::Epub => Format::Epub,
            anydoc::Format::Pptx => Format::Pptx,
            anydoc::Format::Ppt => Format::Ppt,
            anydoc::Format::Odp => Format::Odp,
            anydoc::Format::Excel => Format::Xlsx,
            anydoc::Format::Ods => Format::Ods,
            anydoc::Format::Csv => Format::Csv,
        }
    }

    pub(crate) fn to_anydoc(self) -> anydoc::Format {
        match self {
            Format::Pdf => anydoc::Format::Pdf,
            Format::Docx => anydoc::Format::Docx,
            Format::Doc => anydoc::Format::Doc,
            Format::Odt => anydoc::Format::Odt,
            Format::Rtf => anydoc::Format::Rtf,
            Format::Epub => anydoc::Format::Epub,
            Format::Pptx => anydoc::Format::Pptx,
            Format::Ppt => anydoc::Format::Ppt,
            Format::Odp => anydoc::Format::Odp,
            Format::Xlsx | Format::Xls => anydoc::Format::Excel,
            Format::Ods => anydoc::Format::Ods,
            Format::Csv => anydoc::Format::Csv,
        }
    }

    /// The name people know the format by (`PDF`, `DOCX`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Pdf => "PDF",
            Format::Docx => "DOCX",
            Format::Doc => "DOC",
            Format::Odt => "ODT",
            Format::Rtf => "RTF",
            Format::Epub => "EPUB",
            Format::Pptx => "PPTX",
            Format::Ppt => "PPT",
            Format::Odp => "ODP",
            Format::Xlsx => "XLSX",
            Format::Xls => "XLS",
            Format::Ods => "ODS",
            Format::Csv => "CSV",
        }
    }

    /// What this format's units are.
    pub fn unit_kind(self) -> UnitKind {
        match self {
            Format::Pdf => UnitKind::Page,
            Format::Pptx => UnitKind::Slide,
            Format::Xlsx => UnitKind::Sheet,
            _ => UnitKind::Chunk,
        }
    }
}

/// What a document's numbered units are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnitKind {
    /// Original PDF pages.
    Page,
    /// PPTX slides, in presentation order.
    Slide,
    /// Visible XLSX sheets, in workbook order (hidden sheets are not counted).
    Sheet,
    /// Pieces of a reflowable text cut by this crate: not printed pages.
    Chunk,
}

impl UnitKind {
    /// The unit's name, singular and lowercase (`page`).
    pub fn noun(self) -> &'static str {
        match self {
            UnitKind::Page => "page",
            UnitKind::Slide => "slide",
            UnitKind::Sheet => "sheet",
            UnitKind::Chunk => "chunk",
        }
    }
}

/// The selected units of a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The format it was read as.
    pub format: Format,
    /// What its units are.
    pub kind: UnitKind,
    /// How many units the whole document has.
    pub total: u32,
    /// The selected units, in document order.
    pub units: Vec<Unit>,
}

/// One page, slide, sheet or chunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unit {
    /// Its number, from 1.
    pub number: u32,
    /// A sheet's name.
    pub name: Option<String>,
    /// Its Markdown; `None` for a PDF page without a text layer (scanned, or only images).
    pub text: Option<String>,
}

impl Document {
    /// How many of the selected units have text.
    pub fn units_with_text(&self) -> usize {
        self.units.iter().filter(|u| u.text.is_some()).count()
    }
}
