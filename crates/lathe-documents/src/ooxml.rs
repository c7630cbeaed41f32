//! Slides and sheets by number: the package's manifest (the presentation's slide list, the
//! workbook's sheet list) is filtered to one entry and the package converted as a whole, so
//! layouts, masters, shared strings and styles stay where the parser looks for them. Slides
//! are never guessed from headings.

use std::io::{Cursor, Read, Write};
use std::sync::LazyLock;

use regex::Regex;
use zip::ZipArchive;
use zip::write::{SimpleFileOptions, ZipWriter};

use crate::extract::anydoc_error;
use crate::{Document, Error, Format, Selection, Unit, UnitKind};

/// A slide-list entry (`<p:sldId id=".." r:id=".."/>`), empty or with children.
static SLIDE_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<(?:[\w.-]+:)?sldId\b[^>]*?(?:/>|>.*?</(?:[\w.-]+:)?sldId>)").unwrap()
});
/// A sheet-list entry (`<sheet name=".." sheetId=".." r:id=".."/>`).
static SHEET_ENTRY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<(?:[\w.-]+:)?sheet\b[^>]*?(?:/>|>.*?</(?:[\w.-]+:)?sheet>)").unwrap()
});
static RELATIONSHIP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<(?:[\w.-]+:)?Relationship\b[^>]*>").unwrap());

/// The slides of a PPTX.
pub(crate) fn slides(bytes: &[u8], selection: &Selection) -> Result<Document, Error> {
    let format = Format::Pptx;
    let package = Package::open(bytes, format)?;
    let part = package.main_part("ppt/presentation.xml")?;
    let manifest = package.text(&part)?;
    let entries: Vec<_> = SLIDE_ENTRY
        .find_iter(&manifest)
        .map(|m| m.range())
        .collect();
    let units = selected(entries.len(), selection, "slide")?
        .into_iter()
        .map(|n| {
            let keep = entries[n as usize - 1].clone();
            let filtered = without_entries(&manifest, &entries, &keep);
            let markdown = package.convert_with(&part, &filtered)?;
            Ok(Unit {
                number: n,
                name: None,
                text: Some(markdown),
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(Document {
        format,
        kind: UnitKind::Slide,
        total: entries.len() as u32,
        units,
    })
}

/// The visible sheets of an XLSX; hidden ones are neither counted nor shown.
pub(crate) fn sheets(bytes: &[u8], selection: &Selection) -> Result<Document, Error> {
    let format = Format::Xlsx;
    let package = Package::open(bytes, format)?;
    let part = package.main_part("xl/workbook.xml")?;
    let manifest = package.text(&part)?;
    let all: Vec<_> = SHEET_ENTRY.find_iter(&manifest).collect();
    let visible: Vec<_> = all
        .iter()
        .filter(|m| {
            !matches!(
                attribute(m.as_str(), "state").as_deref(),
                Some("hidden" | "veryHidden")
            )
        })
        .collect();
    let entries: Vec<_> = all.iter().map(|m| m.range()).collect();
    let units = selected(visible.len(), selection, "sheet")?
        .into_iter()
        .map(|n| {
            let entry = visible[n as usize - 1];
            let filtered = without_entries(&manifest, &entries, &entry.range());
            let markdown = package.convert_with(&part, &filtered)?;
            Ok(Unit {
                number: n,
                name: attribute(entry.as_str(), "name"),
                text: Some(markdown),
            })
        })
        .collect::<Result<_, Error>>()?;
    Ok(Document {
        format,
        kind: UnitKind::Sheet,
        total: visible.len() as u32,
        units,
    })
}

fn selected(total: usize, selection: &Selection, noun: &str) -> Result<Vec<u32>, Error> {
    selection
        .resolve(total as u32, noun)
        .map_err(|e| Error::Selection(e.0))
}

/// `manifest` without the `entries` other than `keep`.
fn without_entries(
    manifest: &str,
    entries: &[std::ops::Range<usize>],
    keep: &std::ops::Range<usize>,
) -> String {
    let mut out = String::with_capacity(manifest.len());
    let mut at = 0;
    for entry in entries.iter().filter(|e| *e != keep) {
        out.push_str(&manifest[at..entry.start]);
        at = entry.end;
    }
    out.push_str(&manifest[at..]);
    out
}

/// The value of attribute `name` (unqualified) in one element's text, unescaped.
fn attribute(element: &str, name: &str) -> Option<String> {
    let pattern = Regex::new(&format!(
        r#"\s{}\s*=\s*(?:"([^"]*)"|'([^']*)')"#,
        regex::escape(name)
    ))
    .ok()?;
    let caps = pattern.captures(element)?;
    let raw = caps.get(1).or_else(|| caps.get(2))?.as_str();
    Some(
        raw.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

struct Package<'a> {
    bytes: &'a [u8],
    format: Format,
}

impl<'a> Package<'a> {
    fn open(bytes: &'a [u8], format: Format) -> Result<Self, Error> {
        let package = Package { bytes, format };
        package.archive()?;
        Ok(package)
    }

    fn archive(&self) -> Result<ZipArchive<Cursor<&'a [u8]>>, Error> {
        ZipArchive::new(Cursor::new(self.bytes)).map_err(|e| self.malformed(e))
    }

    fn malformed(&self, detail: impl std::fmt::Display) -> Error {
        Error::Malformed {
            format: self.format.name().into(),
            detail: detail.to_string(),
        }
    }

    /// The part the package's root relationship names as the main document, or `fallback`.
    fn main_part(&self, fallback: &str) -> Result<String, Error> {
        let Ok(rels) = self.text("_rels/.rels") else {
            return Ok(fallback.to_owned());
        };
        let main = RELATIONSHIP
            .find_iter(&rels)
            .filter(|m| {
                attribute(m.as_str(), "Type").is_some_and(|t| t.ends_with("/officeDocument"))
            })
            .find_map(|m| attribute(m.as_str(), "Target"));
        Ok(main.map_or_else(
            || fallback.to_owned(),
            |target| target.trim_start_matches('/').to_owned(),
        ))
    }

    /// The text of part `name`.
    fn text(&self, name: &str) -> Result<String, Error> {
        let mut archive = self.archive()?;
        let mut file = archive
            .by_name(name)
            .map_err(|e| self.malformed(format!("{name}: {e}")))?;
        // The manifest is small; a "manifest" that inflates past this is a zip bomb.
        const MAX_MANIFEST: u64 = 16 << 20;
        let mut text = String::new();
        file.by_ref()
            .take(MAX_MANIFEST)
            .read_to_string(&mut text)
            .map_err(|e| self.malformed(format!("{name}: {e}")))?;
        Ok(text)
    }

    /// Converts the package with part `name` replaced by `content`.
    fn convert_with(&self, name: &str, content: &str) -> Result<String, Error> {
        let mut archive = self.archive()?;
        let mut writer = ZipWriter::new(Cursor::new(Vec::with_capacity(self.bytes.len())));
        for index in 0..archive.len() {
            let file = archive.by_index_raw(index).map_err(|e| self.malformed(e))?;
            if file.name() == name {
                let options =
                    SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
                writer
                    .start_file(name, options)
                    .map_err(|e| self.malformed(e))?;
                writer
                    .write_all(content.as_bytes())
                    .map_err(|e| self.malformed(e))?;
            } else {
                writer.raw_copy_file(file).map_err(|e| self.malformed(e))?;
            }
        }
        let package = writer.finish().map_err(|e| self.malformed(e))?.into_inner();
        let markdown = anydoc::to_markdown_bytes(&package, self.format.to_anydoc())
            .map_err(|e| anydoc_error(self.format, e))?;
        Ok(markdown.trim().to_owned())
    }
}
