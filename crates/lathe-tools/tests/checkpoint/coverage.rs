//! What snapshots leave out is reported, and never touched by undo.

use std::path::PathBuf;

use serde_json::json;

use lathe_checkpoint::{Checkpoints, Coverage, Force, Uncovered, UndoTarget};

use crate::support::Fixture;

#[tokio::test]
async fn large_and_ignored_files_are_reported_and_not_snapshotted() {
    let f = Fixture::new(&[
        (".gitignore", "*.log\n"),
        (".ignore", "scratch/\n"),
        ("keep.txt", "keep\n"),
        ("app.log", "old log\n"),
        ("big.bin", "small at first\n"),
    ]);
    std::fs::create_dir(f.path("scratch")).unwrap();
    std::fs::write(f.path("scratch/notes"), "mine\n").unwrap();
    let checkpoints = std::sync::Arc::new(
        Checkpoints::builder(&f.data, &f.root, "s1")
            .max_file_size(1024)
            .build()
            .unwrap(),
    );
    assert_eq!(checkpoints.coverage(), Coverage::Workspace);
    let agent = f.agent(checkpoints.clone());
    agent.hook.begin_turn(1);
    agent
        .call(
            "shell",
            json!({"command": "echo changed > keep.txt && echo new > app.log && head -c 4096 /dev/zero > big.bin && echo x > scratch/notes"}),
        )
        .await;
    agent.hook.end_turn().unwrap().unwrap();

    let uncovered = checkpoints.uncovered().unwrap();
    assert!(
        uncovered.contains(&Uncovered::TooLarge {
            path: PathBuf::from("big.bin"),
            size: 4096
        }),
        "{uncovered:?}"
    );
    assert!(
        uncovered.contains(&Uncovered::Ignored(PathBuf::from("app.log"))),
        "{uncovered:?}"
    );
    assert!(
        uncovered.contains(&Uncovered::Ignored(PathBuf::from("scratch"))),
        "{uncovered:?}"
    );
    let diff = checkpoints.diff(None).unwrap().unwrap();
    assert!(diff.contains("keep.txt"), "{diff}");
    for absent in ["app.log", "scratch/notes"] {
        assert!(
            !diff.contains(absent),
            "{absent} is not snapshotted: {diff}"
        );
    }

    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    // big.bin was snapshotted while small; grown over the limit it is left out, so the undo
    // puts back only what it covers and leaves the rest as the turn left it.
    assert_eq!(std::fs::read(f.path("keep.txt")).unwrap(), b"keep\n");
    assert_eq!(std::fs::read(f.path("app.log")).unwrap(), b"new\n");
    assert_eq!(std::fs::read(f.path("scratch/notes")).unwrap(), b"x\n");
    assert!(
        !undone.restored.contains(&PathBuf::from("app.log")),
        "{undone:?}"
    );
}

#[tokio::test]
async fn the_users_exclude_file_is_honoured() {
    let f = Fixture::new(&[("a.txt", "a\n")]);
    std::fs::write(f.path(".git/info/exclude"), "private/\n").unwrap();
    std::fs::create_dir(f.path("private")).unwrap();
    std::fs::write(f.path("private/x"), "x\n").unwrap();
    let checkpoints = f.checkpoints("s1");
    checkpoints.before_change(1).unwrap();
    std::fs::write(f.path("private/x"), "changed\n").unwrap();
    std::fs::write(f.path("a.txt"), "b\n").unwrap();
    checkpoints.after_turn(1).unwrap().unwrap();
    let diff = checkpoints.diff(Some(1)).unwrap().unwrap();
    assert!(
        diff.contains("a.txt") && !diff.contains("private"),
        "{diff}"
    );
}

#[tokio::test]
async fn ignore_files_below_the_root_are_honoured_as_ripgrep_does() {
    let f = Fixture::new(&[("a.txt", "a\n"), ("sub/keep.txt", "k\n")]);
    let checkpoints = f.checkpoints("s1");
    checkpoints.before_change(1).unwrap();
    std::fs::write(f.path("sub/.ignore"), "*.log\n/build/\n").unwrap();
    std::fs::create_dir_all(f.path("sub/deep")).unwrap();
    std::fs::create_dir_all(f.path("sub/build")).unwrap();
    std::fs::write(f.path("sub/x.log"), "x\n").unwrap();
    std::fs::write(f.path("sub/deep/y.log"), "y\n").unwrap();
    std::fs::write(f.path("sub/build/z"), "z\n").unwrap();
    std::fs::write(f.path("x.log"), "root's own\n").unwrap();
    std::fs::write(f.path("sub/keep.txt"), "changed\n").unwrap();
    checkpoints.after_turn(1).unwrap().unwrap();
    let diff = checkpoints.diff_stat(Some(1)).unwrap().unwrap();
    assert!(diff.contains("sub/keep.txt"), "{diff}");
    assert!(diff.contains("sub/.ignore"), "{diff}");
    // The .ignore of sub/ speaks of sub/ only.
    assert!(diff.contains(" x.log"), "{diff}");
    for ignored in ["sub/x.log", "sub/deep/y.log", "sub/build"] {
        assert!(!diff.contains(ignored), "{ignored} in {diff}");
    }
    let uncovered = checkpoints.uncovered().unwrap();
    assert!(
        uncovered.contains(&Uncovered::Ignored(PathBuf::from("sub/x.log"))),
        "{uncovered:?}"
    );

    // A later .ignore's patterns take out what an earlier snapshot held, as ripgrep would.
    checkpoints.before_change(2).unwrap();
    std::fs::write(f.path("sub/.ignore"), "*.log\n/build/\nkeep.txt\n").unwrap();
    std::fs::write(f.path("sub/keep.txt"), "changed again\n").unwrap();
    checkpoints.after_turn(2).unwrap().unwrap();
    let diff = checkpoints.diff_stat(Some(2)).unwrap().unwrap();
    assert!(diff.contains("sub/keep.txt"), "{diff}");
    assert!(diff.contains("sub/.ignore"), "{diff}");
}

/// A file tool's write under way in another session (its temporary file beside the target)
/// is never part of a snapshot: an undo would otherwise bring a stray temporary file back
/// (seen on CI, with two sessions' turns overlapping).
#[tokio::test]
async fn a_write_under_way_is_not_snapshotted() {
    let f = Fixture::new(&[("a.txt", "a\n")]);
    // As another session's atomic write leaves it until its rename.
    let temp = ".a.txt.lathe-4242-0.tmp";
    std::fs::write(f.path(temp), "half\n").unwrap();
    let checkpoints = std::sync::Arc::new(
        Checkpoints::builder(&f.data, &f.root, "s1")
            .build()
            .unwrap(),
    );
    let agent = f.agent(checkpoints.clone());
    agent.hook.begin_turn(1);
    agent
        .call(
            "shell",
            json!({"command": format!("rm {temp} && echo b > b.txt")}),
        )
        .await;
    agent.hook.end_turn().unwrap().unwrap();
    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.restored, [PathBuf::from("b.txt")], "{undone:?}");
    assert!(!f.path(temp).exists(), "the temporary file came back");
}

/// A directory a turn wrote into, replaced since by a link out of the workspace: undo writes
/// nothing through it, forced or not, with git (which refuses such paths itself) and without.
#[tokio::test]
async fn undo_never_writes_through_a_link_out_of_the_workspace() {
    for with_git in [true, false] {
        let f = Fixture::new(&[("d/a.txt", "a\n")]);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("a.txt"), "theirs\n").unwrap();
        let store = lathe_store::Store::open(f.dir.path().join("sessions.db")).unwrap();
        let session = store
            .create_session(lathe_store::NewSession::default())
            .unwrap();
        let empty = f.dir.path().join("no-git-here");
        std::fs::create_dir(&empty).unwrap();
        let mut builder = Checkpoints::builder(&f.data, &f.root, session.as_str()).store(store);
        if !with_git {
            builder = builder.search_path(&empty);
        }
        let checkpoints = std::sync::Arc::new(builder.build().unwrap());
        let agent = f.agent(checkpoints.clone());
        agent.hook.begin_turn(1);
        agent
            .call("write_file", json!({"path": "d/a.txt", "content": "one\n"}))
            .await;
        agent.hook.end_turn().unwrap().unwrap();
        std::fs::remove_dir_all(f.path("d")).unwrap();
        std::os::unix::fs::symlink(outside.path(), f.path("d")).unwrap();
        match checkpoints.undo(UndoTarget::Last, Force::Yes) {
            Ok(Ok(undone)) => {
                assert!(undone.restored.is_empty(), "{with_git}: {undone:?}");
                assert!(
                    undone
                        .failed
                        .iter()
                        .any(|(_, why)| why.contains("symbolic link")),
                    "{with_git}: {undone:?}"
                );
            }
            other => assert!(with_git, "without git: {other:?}"),
        }
        assert_eq!(
            std::fs::read(outside.path().join("a.txt")).unwrap(),
            b"theirs\n",
            "{with_git}: written through the link"
        );
    }
}
