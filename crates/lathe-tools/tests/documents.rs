//! read_document through the registry on the fixtures of lathe-documents (written by its
//! tests/fixtures/generate.py), and read_file pointing at it. The conversion runs in process
//! here (no worker is configured in this test binary); `lathe tool read_document` runs it in
//! the worker (crates/lathe/tests/documents.rs).

use serde_json::json;

use crate::file_support::{Ws, numbered};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../lathe-documents/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn with_fixtures(names: &[&str]) -> Ws {
    let ws = Ws::new();
    for name in names {
        ws.write(name, fixture(name));
    }
    ws
}

#[test]
fn pages_are_selected_with_the_gap_and_the_count_of_pages_with_text() {
    let ws = with_fixtures(&["pages.pdf"]);
    let out = ws.ok(
        "read_document",
        json!({"path": "pages.pdf", "pages": "2-3"}),
    );
    assert!(
        out.text
            .starts_with("pages.pdf: PDF, pages 2-3 of 4; 1 of 2 pages had text"),
        "{}",
        out.text
    );
    let lines: Vec<String> = numbered(&out.text).into_iter().map(|(_, l)| l).collect();
    assert_eq!(lines[0], "## Page 2");
    assert!(
        lines.iter().any(|l| l.contains("Page two says bravo.")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l == "(page 3: no text layer (scanned?); OCR is not available)"),
        "{lines:?}"
    );
    let meta = out.metadata.to_json();
    assert_eq!(meta["units_total"], 4);
    assert_eq!(meta["units_with_text"], 1);
}

#[test]
fn offset_and_limit_page_within_the_selection_with_read_files_note() {
    let ws = with_fixtures(&["pages.pdf"]);
    let out = ws.ok(
        "read_document",
        json!({"path": "pages.pdf", "pages": "2-4", "limit": 2}),
    );
    assert_eq!(numbered(&out.text).len(), 2);
    let note = out.text.lines().last().unwrap();
    assert!(
        note.starts_with("(showing lines 1-2 of ")
            && note.ends_with(
                " in pages 2-4; to read on, call read_document with pages=\"2-4\" offset=3)"
            ),
        "{note}"
    );
    let total: u64 = note["(showing lines 1-2 of ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let last = ws.ok(
        "read_document",
        json!({"path": "pages.pdf", "pages": "2-4", "offset": total}),
    );
    assert!(
        last.text.contains(&format!(
            "showing lines {total}-{total} of {total}; this is the end of pages 2-4"
        )),
        "{}",
        last.text
    );
}

#[test]
fn slides_sheets_and_chunks_are_labelled_as_what_they_are() {
    let ws = with_fixtures(&["deck.pptx", "book.xlsx", "report.docx"]);
    let deck = ws.ok("read_document", json!({"path": "deck.pptx", "pages": "3"}));
    assert!(deck.text.contains("PPTX, slide 3 of 3"), "{}", deck.text);
    assert!(deck.text.contains("SLIDE-MARK-3") && !deck.text.contains("SLIDE-MARK-1"));
    let book = ws.ok("read_document", json!({"path": "book.xlsx", "pages": "2"}));
    assert!(book.text.contains("## Sheet 2: Gamma"), "{}", book.text);
    let report = ws.ok(
        "read_document",
        json!({"path": "report.docx", "pages": "1"}),
    );
    assert!(report.text.contains("## Chunk 1 of "), "{}", report.text);
    assert!(
        report.text.contains("(not printed pages)"),
        "{}",
        report.text
    );
}

#[test]
fn a_second_call_reads_the_cache_instead_of_parsing_again() {
    let ws = with_fixtures(&["pages.pdf"]);
    let first = ws.ok(
        "read_document",
        json!({"path": "pages.pdf", "pages": "1,2"}),
    );
    assert_eq!(first.metadata.to_json()["cached"], false);
    let cache = lathe_documents::Cache::new(ws.session.state_dir().join("documents"));
    let entry = cache.entry(&fixture("pages.pdf"), &"1-2".parse().unwrap());
    let stored = std::fs::read_to_string(&entry).expect("the conversion is cached");
    // Doctor the entry: the second call can only show this if it did not parse the PDF.
    std::fs::write(
        &entry,
        stored.replace("Page one says alpha.", "FROM THE CACHE"),
    )
    .unwrap();
    let second = ws.ok(
        "read_document",
        json!({"path": "pages.pdf", "pages": "2, 1"}),
    );
    assert_eq!(second.metadata.to_json()["cached"], true);
    assert!(second.text.contains("FROM THE CACHE"), "{}", second.text);
    // Another selection is another entry: parsed afresh.
    let other = ws.ok("read_document", json!({"path": "pages.pdf", "pages": "1"}));
    assert!(
        other.text.contains("Page one says alpha."),
        "{}",
        other.text
    );
}

#[test]
fn bad_files_and_bad_selections_say_what_to_do() {
    let ws = with_fixtures(&["corrupt.pdf", "pages.pdf"]);
    let out = ws.err("read_document", json!({"path": "corrupt.pdf"}));
    assert!(
        out.text
            .starts_with("could not read corrupt.pdf: the PDF parser could not read it"),
        "{}",
        out.text
    );
    assert!(
        out.text.ends_with("the file may be damaged"),
        "{}",
        out.text
    );
    let out = ws.err("read_document", json!({"path": "pages.pdf", "pages": "5"}));
    assert_eq!(
        out.text,
        "could not read pages.pdf: page 5 is past the end: the document has 4 pages; use pages from 1 to 4"
    );
    let out = ws.err(
        "read_document",
        json!({"path": "pages.pdf", "pages": "two"}),
    );
    assert!(out.text.contains("like \"1-3,7\""), "{}", out.text);
    ws.write("notes.txt", "plain text\n");
    let out = ws.err("read_document", json!({"path": "notes.txt"}));
    assert!(
        out.text
            .starts_with("could not read notes.txt: not a document format"),
        "{}",
        out.text
    );
    assert!(
        out.text.ends_with("for a text file use read_file"),
        "{}",
        out.text
    );
}

#[test]
fn a_file_over_the_size_limit_is_refused_without_reading_it() {
    let ws = Ws::new();
    let path = ws.write("huge.pdf", "%PDF-1.7\n");
    // Sparse: 64 MiB and one byte, never written out.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(lathe_documents::DEFAULT_MAX_INPUT + 1)
        .unwrap();
    let out = ws.err("read_document", json!({"path": "huge.pdf"}));
    assert_eq!(
        out.text,
        "could not read huge.pdf: the file is 64.0 MiB and documents are read up to 64.0 MiB; \
         convert or split it with another tool first"
    );
}

#[test]
fn a_parser_that_panics_is_a_message_and_the_session_goes_on() {
    let ws = with_fixtures(&["pages.pdf"]);
    ws.write("hostile.pdf", "LATHE-TEST-HOOK:panic");
    let out = ws.err("read_document", json!({"path": "hostile.pdf"}));
    assert!(
        out.text
            .starts_with("could not read hostile.pdf: the PDF parser crashed (it panicked"),
        "{}",
        out.text
    );
    let after = ws.ok("read_document", json!({"path": "pages.pdf", "pages": "1"}));
    assert!(after.text.contains("alpha"), "{}", after.text);
}

#[test]
fn read_file_on_a_document_points_at_read_document() {
    let ws = with_fixtures(&["pages.pdf", "report.docx", "deck.pptx"]);
    for (name, format) in [
        ("pages.pdf", "PDF"),
        ("report.docx", "DOCX"),
        ("deck.pptx", "PPTX"),
    ] {
        let out = ws.ok("read_file", json!({"path": name}));
        assert!(
            out.text
                .starts_with(&format!("{name} is a {format} document (")),
            "{}",
            out.text
        );
        assert!(
            out.text.contains(&format!(
                "Use read_document with path=\"{name}\" to read it as Markdown"
            )),
            "{}",
            out.text
        );
    }
    ws.write("data.csv", "a,b\n1,2\n");
    let csv = ws.ok("read_file", json!({"path": "data.csv"}));
    assert!(
        csv.text.contains("a,b"),
        "CSV stays text for read_file: {}",
        csv.text
    );
}
