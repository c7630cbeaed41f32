//! Real documents through the worker: page, slide and sheet selection, chunks, gaps, bad files.

use lathe_documents::{Error, UnitKind};

use crate::support::read;

#[test]
fn pdf_pages_are_selected_and_a_page_without_text_is_an_explicit_gap() {
    let document = read("pages.pdf", "2-4").unwrap();
    assert_eq!(document.kind, UnitKind::Page);
    assert_eq!(document.total, 4);
    let numbers: Vec<u32> = document.units.iter().map(|u| u.number).collect();
    assert_eq!(numbers, [2, 3, 4]);
    assert_eq!(document.units[1].text, None, "page 3 holds only an image");
    let markdown = document.to_markdown();
    // pdf-inspector may make a page's lone line a heading; the text is what matters.
    let page_2 = markdown.split("## Page 3").next().unwrap();
    assert!(page_2.starts_with("## Page 2\n"), "{markdown}");
    assert!(page_2.contains("Page two says bravo."), "{markdown}");
    assert!(
        markdown.contains("## Page 3\n\n(page 3: no text layer (scanned?); OCR is not available)"),
        "{markdown}"
    );
    assert!(markdown.contains("Page four says delta."), "{markdown}");
    assert!(
        !markdown.contains("alpha"),
        "page 1 was not selected: {markdown}"
    );
    let summary = document.summary();
    assert!(summary.contains("pages 2-4 of 4"), "{summary}");
    assert!(summary.contains("2 of 3 pages had text"), "{summary}");
    assert!(summary.contains("no text layer on page 3"), "{summary}");
}

#[test]
fn a_whole_pdf_counts_its_pages_with_text() {
    let document = read("pages.pdf", "").unwrap();
    assert_eq!(document.units.len(), 4);
    assert!(
        document
            .summary()
            .contains("all 4 pages; 3 of 4 pages had text")
    );
}

#[test]
fn pages_past_the_end_say_how_many_there_are() {
    let err = read("pages.pdf", "3-9").unwrap_err();
    assert!(matches!(err, Error::Selection(_)), "{err:?}");
    assert!(
        err.to_string().contains("the document has 4 pages"),
        "{err}"
    );
}

#[test]
fn pptx_slides_are_selected_by_number() {
    let document = read("deck.pptx", "2").unwrap();
    assert_eq!((document.kind, document.total), (UnitKind::Slide, 3));
    let markdown = document.to_markdown();
    assert!(markdown.starts_with("## Slide 2\n"), "{markdown}");
    assert!(markdown.contains("Slide title two"), "{markdown}");
    assert!(markdown.contains("SLIDE-MARK-2"), "{markdown}");
    assert!(
        !markdown.contains("SLIDE-MARK-1") && !markdown.contains("SLIDE-MARK-3"),
        "{markdown}"
    );
    let all = read("deck.pptx", "1,3").unwrap().to_markdown();
    assert!(
        all.contains("SLIDE-MARK-1") && all.contains("SLIDE-MARK-3"),
        "{all}"
    );
    assert!(!all.contains("SLIDE-MARK-2"), "{all}");
}

#[test]
fn xlsx_sheets_count_only_visible_ones() {
    let document = read("book.xlsx", "").unwrap();
    assert_eq!((document.kind, document.total), (UnitKind::Sheet, 2));
    let markdown = document.to_markdown();
    assert!(markdown.contains("## Sheet 1: Alpha"), "{markdown}");
    assert!(markdown.contains("## Sheet 2: Gamma"), "{markdown}");
    assert!(
        !markdown.contains("SECRET-CELL"),
        "a hidden sheet is not shown: {markdown}"
    );
    let second = read("book.xlsx", "2").unwrap().to_markdown();
    assert!(
        second.contains("Lyon") && !second.contains("apples"),
        "{second}"
    );
}

#[test]
fn reflowable_text_is_cut_into_chunks_labelled_as_chunks() {
    let document = read("report.docx", "").unwrap();
    assert_eq!(document.kind, UnitKind::Chunk);
    assert!(document.total >= 2, "{} chunks", document.total);
    let total = document.total;
    let markdown = document.to_markdown();
    assert!(
        markdown.contains(&format!("## Chunk 1 of {total}")),
        "{markdown}"
    );
    assert!(
        !markdown.contains("## Page"),
        "chunks are never called pages"
    );
    for n in 1..=160 {
        assert!(
            markdown.contains(&format!("PARAGRAPH-{n:04}")),
            "paragraph {n} lost"
        );
    }
    assert!(
        document.summary().contains("not printed pages"),
        "{}",
        document.summary()
    );
    let second = read("report.docx", "2").unwrap();
    assert_eq!(second.units.len(), 1);
    let text = second.units[0].text.as_deref().unwrap();
    assert!(!text.contains("PARAGRAPH-0001"), "chunk 2 starts later");
    assert!(
        second
            .to_markdown()
            .starts_with(&format!("## Chunk 2 of {total}"))
    );
}

#[test]
fn corrupt_files_say_the_file_may_be_damaged() {
    for name in ["corrupt.pdf", "corrupt.docx"] {
        let err = read(name, "").unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{name}: {err:?}");
        assert!(
            err.to_string().contains("the file may be damaged"),
            "{name}: {err}"
        );
    }
}

#[test]
fn unknown_formats_name_the_ones_read() {
    let err = lathe_documents::Converter::new()
        .in_process()
        .convert(b"just text", "notes.txt", &Default::default(), &|| false)
        .unwrap_err();
    assert_eq!(err, Error::UnknownFormat);
    assert!(err.to_string().contains("PDF, DOCX"), "{err}");
}
