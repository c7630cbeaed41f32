//! `grep` on awkward text: CRLF line ends, huge single lines, invalid UTF-8 in names and
//! content, UTF-16 with a byte-order mark; and progress while searching.

use serde_json::json;

use crate::search_support::Tree;

#[tokio::test]
async fn crlf_files_show_no_carriage_returns() {
    let tree = Tree::new();
    tree.write("w.txt", "first\r\nneedle end\r\nlast\r\n");
    let text = tree.grep_ok(json!({"pattern": "end$", "context": 1})).await;
    assert_eq!(text, "w.txt-1- first\nw.txt:2: needle end\nw.txt-3- last\n");
    assert!(!text.contains('\r'));
}

#[tokio::test]
async fn huge_single_line_is_cut_around_the_match() {
    let tree = Tree::new();
    let mut line = "a".repeat(3_000_000);
    line.push_str("NEEDLE");
    line.push_str(&"b".repeat(3_000_000));
    tree.write("min.js", &line);
    let out = tree.grep(json!({"pattern": "NEEDLE"})).await;
    assert!(!out.is_error, "{}", out.text);
    assert_eq!(out.text.lines().count(), 1);
    assert!(
        out.text
            .starts_with("min.js:1: [... 2,999,900 chars cut ...] aaaa"),
        "{}",
        &out.text[..200]
    );
    assert!(out.text.contains("NEEDLE"));
    assert!(
        out.text
            .trim_end()
            .ends_with("bbbb [... 2,999,606 chars cut ...]"),
        "{}",
        out.text
    );
    assert!(out.text.len() < 700, "{}", out.text.len());
    let out = tree
        .grep(json!({"pattern": "NEEDLE", "output_mode": "count"}))
        .await;
    assert_eq!(out.text, "min.js:1\n");
}

#[tokio::test]
async fn non_utf8_names_and_content_are_shown_lossily() {
    let tree = Tree::new();
    tree.write_raw_name("dir", b"caf\xe9.txt", b"needle \xff\xfe here\n");
    tree.write("latin.txt", b"na\xefve needle\n");
    let text = tree.grep_ok(json!({"pattern": "needle"})).await;
    assert_eq!(
        text,
        "dir/caf\u{fffd}.txt:1: needle \u{fffd}\u{fffd} here\nlatin.txt:1: na\u{fffd}ve needle\n"
    );
    let text = tree
        .grep_ok(json!({"pattern": "needle", "output_mode": "files_with_matches"}))
        .await;
    assert_eq!(text, "dir/caf\u{fffd}.txt\nlatin.txt\n");
}

#[tokio::test]
async fn utf16_with_bom_is_searched_as_text() {
    let tree = Tree::new();
    let mut bytes = vec![0xFF, 0xFE];
    for unit in "hello needle\n".encode_utf16() {
        bytes.extend_from_slice(&unit.to_le_bytes());
    }
    tree.write("wide.txt", bytes);
    assert_eq!(
        tree.grep_ok(json!({"pattern": "needle"})).await,
        "wide.txt:1: hello needle\n"
    );
}

#[tokio::test]
async fn progress_is_reported_while_searching() {
    let tree = Tree::new();
    for i in 0..2_100 {
        tree.write(format!("d{}/f{i}.txt", i % 10), "x\n");
    }
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut ctx = tree.ctx();
    let sink = std::sync::Arc::clone(&seen);
    ctx.progress = Some(std::sync::Arc::new(move |p| sink.lock().unwrap().push(p)));
    let out = tree
        .registry
        .call(
            "grep",
            json!({"pattern": "x", "output_mode": "count", "limit": 1}),
            ctx,
        )
        .await;
    assert!(!out.is_error);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(
        format!("{:?}", seen[1]).contains("searched 2,000 files"),
        "{seen:?}"
    );
}
