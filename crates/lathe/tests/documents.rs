//! `lathe tool read_document` end to end: the real binary, which converts in its own worker
//! subcommand (`lathe __document-worker`) under limits, on the fixtures of lathe-documents.

use std::path::Path;
use std::process::{Command, Stdio};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../lathe-documents/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn lathe_tool(dir: &Path, name: &str, args: &str) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lathe"))
        .arg("--workspace")
        .arg(dir.join("ws"))
        .env("LATHE_DATA_DIR", dir.join("data"))
        .env("LATHE_CONFIG_DIR", dir.join("data/config"))
        .stdin(Stdio::null())
        .args(["tool", name, args])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn workspace(files: &[(&str, Vec<u8>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join("ws").join(name), bytes).unwrap();
    }
    dir
}

#[test]
fn read_document_selects_pages_and_shows_the_gap() {
    let dir = workspace(&[("pages.pdf", fixture("pages.pdf"))]);
    let (code, out, err) = lathe_tool(
        dir.path(),
        "read_document",
        r#"{"path": "pages.pdf", "pages": "2-3"}"#,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("pages.pdf: PDF, pages 2-3 of 4; 1 of 2 pages had text"),
        "{out}"
    );
    assert!(out.contains("Page two says bravo."), "{out}");
    assert!(
        out.contains("(page 3: no text layer (scanned?); OCR is not available)"),
        "{out}"
    );
}

#[test]
fn a_hostile_file_meets_the_workers_limits_and_lathe_answers() {
    // The hook reserves address space without end: only the worker's memory limit stops it,
    // so this answer proves the conversion ran in the limited child, not in lathe itself.
    let dir = workspace(&[
        ("hostile.pdf", b"LATHE-TEST-HOOK:alloc".to_vec()),
        ("crash.docx", b"LATHE-TEST-HOOK:panic".to_vec()),
    ]);
    let (code, out, err) = lathe_tool(dir.path(), "read_document", r#"{"path": "hostile.pdf"}"#);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "could not read hostile.pdf: the PDF parser ran out of its 1.0 GiB memory limit"
        ),
        "{out}{err}"
    );
    let (code, out, err) = lathe_tool(dir.path(), "read_document", r#"{"path": "crash.docx"}"#);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("could not read crash.docx: the DOCX parser crashed (it panicked"),
        "{out}{err}"
    );
}

#[test]
fn read_file_on_a_docx_points_at_read_document() {
    let dir = workspace(&[("report.docx", fixture("report.docx"))]);
    let (code, out, err) = lathe_tool(dir.path(), "read_file", r#"{"path": "report.docx"}"#);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Use read_document with path=\"report.docx\""),
        "{out}"
    );
    let (code, out, err) = lathe_tool(
        dir.path(),
        "read_document",
        r#"{"path": "report.docx", "pages": "1", "limit": 3}"#,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("## Chunk 1 of "), "{out}");
    assert!(
        out.contains("in chunk 1; to read on, call read_document with pages=\"1\" offset=4)"),
        "{out}"
    );
}
