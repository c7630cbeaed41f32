//! Issue 12, class 8: a directory swapped for a symlink to an outside tree while `grep`, `glob`
//! and `list_files` walk must never show what the outside tree holds, neither its content nor
//! its names.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use serde_json::json;

use crate::search_support::Tree;

/// In the outside tree only: in its files' content and in their names.
const MARKER: &str = "OUTSIDEMARK";

/// Calls of each kind made while the swapping runs.
const ROUNDS: usize = 60;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_12_a_directory_swapped_for_a_symlink_never_leaks_outside_content() {
    let tree = Tree::new();
    let outside = tempfile::tempdir().unwrap();
    for dir in ["", "a", "a/b", "c"] {
        let inside = tree.root().join("sub").join(dir);
        std::fs::create_dir_all(&inside).unwrap();
        std::fs::create_dir_all(outside.path().join(dir)).unwrap();
        for n in 0..4 {
            std::fs::write(inside.join(format!("f{n}.txt")), "needle inside\n").unwrap();
            std::fs::write(
                outside.path().join(dir).join(format!("f{n}.txt")),
                format!("needle {MARKER}\n"),
            )
            .unwrap();
            std::fs::write(
                outside.path().join(dir).join(format!("{MARKER}{n}.txt")),
                format!("needle {MARKER}\n"),
            )
            .unwrap();
        }
    }
    // `sub` and `swap` trade places atomically, over and over: `sub` is by turns the real
    // directory and a symlink to the outside tree.
    tree.symlink(outside.path(), "swap");
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (stop, swaps) = (Arc::clone(&stop), Arc::clone(&swaps));
        let (sub, swap) = (tree.root().join("sub"), tree.root().join("swap"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                renameat2(
                    AT_FDCWD,
                    &sub,
                    AT_FDCWD,
                    &swap,
                    RenameFlags::RENAME_EXCHANGE,
                )
                .expect("exchange sub and swap");
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let calls = [
        ("grep", json!({"pattern": "needle", "limit": 0})),
        (
            "grep",
            json!({"pattern": "needle", "output_mode": "files_with_matches", "limit": 0}),
        ),
        (
            "grep",
            json!({"pattern": "needle", "path": "sub", "limit": 0}),
        ),
        ("glob", json!({"pattern": "**/*.txt", "limit": 0})),
        ("glob", json!({"pattern": "sub/**", "limit": 0})),
        ("list_files", json!({"depth": 5, "limit": 1000})),
    ];
    let mut leaks = Vec::new();
    let mut inside_seen = 0usize;
    for round in 0..ROUNDS {
        for (tool, args) in &calls {
            let out = tree.call(tool, args.clone()).await;
            let whole = serde_json::to_string(&out).unwrap();
            if whole.contains(MARKER) {
                leaks.push(format!("round {round}, {tool} {args}:\n{}", out.text));
            }
            if out.text.contains("needle inside") || out.text.contains("f0.txt") {
                inside_seen += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(
        leaks.is_empty(),
        "{} of {} calls showed the outside tree ({} swaps):\n{}",
        leaks.len(),
        ROUNDS * calls.len(),
        swaps.load(Ordering::Relaxed),
        leaks.iter().take(3).cloned().collect::<Vec<_>>().join("\n")
    );
    // The calls did search the workspace meanwhile.
    assert!(inside_seen > 0);
}
