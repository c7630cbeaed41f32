//! One integration test binary for lathe-documents, a module per file.

mod cache;
mod convert;
mod isolation;
mod support;
