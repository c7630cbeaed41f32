//! Fixtures (written by fixtures/generate.py) and the converters the tests use.

use lathe_documents::{Converter, Document, Error, Selection};

/// The bytes of fixture `name`.
pub fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The converter with this crate's worker binary, the isolated path.
pub fn isolated() -> Converter {
    Converter::new().worker(env!("CARGO_BIN_EXE_lathe-document-worker"), vec![])
}

/// Converts fixture `name`, selecting `pages`, in the worker.
pub fn read(name: &str, pages: &str) -> Result<Document, Error> {
    let selection: Selection = pages.parse().unwrap();
    isolated().convert(&fixture(name), name, &selection, &|| false)
}
