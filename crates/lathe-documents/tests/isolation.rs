//! Hostile inputs: a parser that panics, loops or eats memory ends in a clear error, and the
//! caller goes on. The hooks (`LATHE-TEST-HOOK:`) exist only in test builds.

use std::time::Duration;

use lathe_documents::{Converter, Error, Selection};

use crate::support::{fixture, isolated};

fn convert(converter: &Converter, hook: &str) -> Error {
    let bytes = format!("LATHE-TEST-HOOK:{hook}");
    converter
        .convert(bytes.as_bytes(), "hostile.pdf", &Selection::all(), &|| {
            false
        })
        .unwrap_err()
}

#[test]
fn a_panicking_parser_is_a_crash_message_in_the_worker_and_in_process() {
    for converter in [isolated(), Converter::new().in_process()] {
        let err = convert(&converter, "panic");
        assert!(matches!(err, Error::Crashed { .. }), "{err:?}");
        let text = err.to_string();
        assert!(
            text.contains("the PDF parser crashed (it panicked"),
            "{text}"
        );
        assert!(text.contains("the file may be damaged"), "{text}");
    }
}

#[test]
fn a_looping_parser_is_stopped_at_the_time_limit() {
    for converter in [isolated(), Converter::new().in_process()] {
        let err = convert(&converter.time_limit(Duration::from_secs(1)), "loop");
        assert_eq!(
            err.to_string(),
            "the PDF parser gave up after 1 s; the file may be damaged or too complex"
        );
    }
}

#[test]
fn a_parser_that_eats_memory_meets_the_workers_limit() {
    let err = convert(&isolated().memory_limit(256 << 20), "alloc");
    assert!(matches!(err, Error::OutOfMemory { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("ran out of its 256.0 MiB memory limit"),
        "{err}"
    );
}

#[test]
fn a_cancelled_conversion_stops_the_worker() {
    let bytes = b"LATHE-TEST-HOOK:loop";
    let err = isolated()
        .convert(bytes, "hostile.pdf", &Selection::all(), &|| true)
        .unwrap_err();
    assert_eq!(err, Error::Cancelled);
}

#[test]
fn an_input_over_the_size_limit_is_refused_before_parsing() {
    let bytes = fixture("pages.pdf");
    let err = isolated()
        .max_input_bytes(1024)
        .convert(&bytes, "pages.pdf", &Selection::all(), &|| false)
        .unwrap_err();
    assert_eq!(
        err,
        Error::TooLarge {
            bytes: bytes.len() as u64,
            limit: 1024
        }
    );
    assert!(
        err.to_string().contains("documents are read up to 1.0 KiB"),
        "{err}"
    );
}

#[test]
fn a_worker_that_cannot_start_is_a_set_up_fault() {
    let err = Converter::new()
        .worker("/nonexistent/lathe-document-worker", vec![])
        .convert(
            &fixture("pages.pdf"),
            "pages.pdf",
            &Selection::all(),
            &|| false,
        )
        .unwrap_err();
    assert!(matches!(err, Error::Worker(_)), "{err:?}");
}
