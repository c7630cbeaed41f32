//! The document worker alone, for embedders whose own binary cannot host the hidden
//! subcommand: `Converter::new().worker("/path/to/lathe-document-worker", vec![])`.

fn main() -> std::process::ExitCode {
    lathe_documents::worker::serve()
}
