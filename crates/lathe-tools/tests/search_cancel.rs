//! Cancellation: a long search stops promptly once its call is cancelled, and says so.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use lathe_runtime::ToolProgress;
use serde_json::json;

use crate::search_support::Tree;

const FILES: usize = 6_000;

fn large_tree() -> Tree {
    let tree = Tree::new();
    let body: String = (0..50)
        .map(|i| format!("line {i} with some words and needle {i}\n"))
        .collect();
    for i in 0..FILES {
        tree.write(format!("d{}/e{}/f{i}.txt", i % 20, i % 7), &body);
    }
    tree
}

/// The number in "after searching N files".
fn searched(text: &str) -> usize {
    let rest = text
        .split("after searching ")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    rest.split(' ')
        .next()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grep_stops_soon_after_cancel() {
    let tree = large_tree();
    let mut ctx = tree.ctx();
    let cancel = ctx.cancel.clone();
    let reports = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&reports);
    // Cancel from inside the search, at its first progress report (after 1,000 files): no
    // timing involved.
    ctx.progress = Some(Arc::new(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
        cancel.cancel();
    }));
    let out = tree
        .registry
        .call("grep", json!({"pattern": "needle"}), ctx)
        .await;
    assert!(out.is_error, "{}", out.text);
    assert!(
        out.text.starts_with("grep was cancelled after searching "),
        "{}",
        out.text
    );
    let n = searched(&out.text);
    assert!(
        (1_000..FILES / 2).contains(&n),
        "searched {n} of {FILES} files: {}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["cancelled"], true);
    assert_eq!(
        reports.load(Ordering::SeqCst),
        1,
        "no progress after the cancel"
    );
}

#[tokio::test]
async fn grep_cancelled_before_it_starts_searches_nothing() {
    let tree = large_tree();
    let ctx = tree.ctx();
    ctx.cancel.cancel();
    let out = tree
        .registry
        .call("grep", json!({"pattern": "needle"}), ctx)
        .await;
    assert!(out.is_error);
    assert!(
        out.text.starts_with("grep was cancelled after searching "),
        "{}",
        out.text
    );
    assert!(searched(&out.text) < 10, "{}", out.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_from_outside_returns_promptly() {
    let tree = large_tree();
    let ctx = tree.ctx();
    let cancel = ctx.cancel.clone();
    let started = Arc::new(Mutex::new(false));
    let mut ctx = ctx;
    let flag = Arc::clone(&started);
    ctx.progress = Some(Arc::new(move |p: ToolProgress| {
        if matches!(p, ToolProgress::Status { .. }) {
            *flag.lock().unwrap() = true;
        }
    }));
    let call = tree
        .registry
        .call("grep", json!({"pattern": "needle", "context": 2}), ctx);
    let canceller = async {
        // Wait (generously) until the search is under way, then cancel from outside.
        for _ in 0..3_000 {
            if *started.lock().unwrap() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        cancel.cancel();
    };
    let (out, ()) = tokio::join!(call, canceller);
    // Either it was cancelled mid-way, or (on a very fast machine) it had already finished.
    if out.is_error {
        assert!(out.text.contains("cancelled"), "{}", out.text);
    } else {
        assert!(out.text.contains("matching lines"), "{}", out.text);
    }
}

#[tokio::test]
async fn glob_cancelled_says_so() {
    let tree = large_tree();
    let ctx = tree.ctx();
    ctx.cancel.cancel();
    let out = tree
        .registry
        .call("glob", json!({"pattern": "**/*.txt"}), ctx)
        .await;
    assert!(
        out.is_error && out.text.contains("cancelled"),
        "{}",
        out.text
    );
}
