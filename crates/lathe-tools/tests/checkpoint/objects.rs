//! What a snapshot writes in-process (blobs, trees, the session's index) is what git writes:
//! the same ids as `git add -A` and `git write-tree` of the same work tree in the user's own
//! repository, a shadow repository `git fsck --strict` passes (the index's checksum included),
//! an index whose stat data and entries `git diff-files` and `git diff-index` agree with. And
//! what it leaves to git: an index holding a submodule's commit.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

use lathe_checkpoint::Checkpoints;

use crate::snapshot::{Logged, checkpoints, fixture, git_on_index, shadow, write, writers};
use crate::support::Fixture;

/// Runs the real git in the user's repository (the fixture's own `.git`).
fn user_git(f: &Fixture, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(&f.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The tree git itself makes of the work tree: everything added to the user's index, written.
fn gits_tree(f: &Fixture) -> String {
    user_git(f, &["add", "-A"]);
    user_git(f, &["write-tree"])
}

/// Runs the real git on the shadow repository with the session's index.
fn shadow_git(f: &Fixture, args: &[&str]) -> Output {
    let (git_dir, index) = shadow(f, "s1");
    Command::new("git")
        .args(args)
        .env("GIT_DIR", git_dir)
        .env("GIT_INDEX_FILE", index)
        .env("GIT_WORK_TREE", &f.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(&f.root)
        .output()
        .unwrap()
}

/// Everything git checks of what the snapshot wrote, with `tree` the snapshot's.
fn git_agrees(f: &Fixture, tree: &str, when: &str) {
    let fsck = shadow_git(f, &["fsck", "--strict", "--no-progress"]);
    let said = String::from_utf8_lossy(&fsck.stderr);
    assert!(fsck.status.success(), "{when}: fsck: {fsck:?}");
    for bad in ["error", "warning", "corrupt", "bad", "missing"] {
        assert!(!said.contains(bad), "{when}: fsck: {said}");
    }
    // The index's stat data is what git records (else diff-files lists the entry), and its
    // entries are the snapshot's tree.
    let files = shadow_git(f, &["diff-files", "--quiet"]);
    assert!(files.status.success(), "{when}: diff-files: {files:?}");
    let cached = shadow_git(f, &["diff-index", "--cached", "--quiet", tree]);
    assert!(cached.status.success(), "{when}: diff-index: {cached:?}");
    // And git, reading that index (its cache of tree ids included), writes the same tree.
    let written = shadow_git(f, &["write-tree"]);
    assert_eq!(
        String::from_utf8_lossy(&written.stdout).trim(),
        tree,
        "{when}: {written:?}"
    );
}

#[test]
fn blobs_trees_and_the_index_are_the_ones_git_writes() {
    // Names whose index order and tree order must agree ("a-b" < "a.txt" < "a/" < "a0").
    let f = fixture(&[
        ("a.txt", "a\n"),
        ("a-b", "dash\n"),
        ("a0", "zero\n"),
        ("a/x.rs", "1\n"),
        ("a/b/c/d.txt", "deep\n"),
        ("a/b/c/other.txt", "other\n"),
        ("b/keep.txt", "k\n"),
        ("run.sh", "#!/bin/sh\n"),
    ]);
    let checkpoints = f.checkpoints("s1");
    checkpoints.before_change(1).unwrap();
    write(&f, "a/b/c/d.txt", "deeper\n");
    write(&f, "a/b/new/e.txt", "e\n");
    write(&f, "with space.txt", "s\n");
    write(&f, "empty", "");
    std::fs::write(f.path("bin.dat"), [0u8, 159, 146, 150, 255, 0, 10]).unwrap();
    std::os::unix::fs::symlink("a.txt", f.path("link")).unwrap();
    std::os::unix::fs::symlink("nowhere/at/all", f.path("dangling")).unwrap();
    std::fs::set_permissions(f.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_dir_all(f.path("b")).unwrap();
    checkpoints.after_turn(1).unwrap().expect("files changed");
    let step = checkpoints.steps().unwrap().pop().unwrap();
    assert_eq!(
        step.before,
        user_git(&f, &["rev-parse", "HEAD^{tree}"]),
        "the first snapshot: the user's commit"
    );
    assert_eq!(step.after, gits_tree(&f), "turn 1");
    git_agrees(&f, &step.after, "turn 1");

    checkpoints.before_change(2).unwrap();
    // A file becomes a directory and a directory a file; a file is touched, not changed.
    std::fs::remove_file(f.path("a0")).unwrap();
    write(&f, "a0/inner", "inside\n");
    std::fs::remove_dir_all(f.path("a/b")).unwrap();
    write(&f, "a/b", "a file now\n");
    let touched = std::fs::File::options()
        .write(true)
        .open(f.path("a.txt"))
        .unwrap();
    touched.set_modified(std::time::SystemTime::now()).unwrap();
    checkpoints.after_turn(2).unwrap().expect("files changed");
    let step = checkpoints.steps().unwrap().pop().unwrap();
    assert_eq!(step.after, gits_tree(&f), "turn 2");
    git_agrees(&f, &step.after, "turn 2");
    let files: Vec<_> = checkpoints
        .files(&step)
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    assert!(!files.contains(&"a.txt".into()), "{files:?}");

    // Undo reads the objects back through git: the bytes and modes of turn 1's end.
    checkpoints
        .undo(
            lathe_checkpoint::UndoTarget::Last,
            lathe_checkpoint::Force::No,
        )
        .unwrap()
        .unwrap();
    assert_eq!(f.read("a/b/c/d.txt"), b"deeper\n");
    assert_eq!(f.read("a0"), b"zero\n");
    assert_eq!(f.read("bin.dat"), [0u8, 159, 146, 150, 255, 0, 10]);
    assert_eq!(
        std::fs::read_link(f.path("dangling")).unwrap(),
        Path::new("nowhere/at/all")
    );
}

#[test]
fn a_first_snapshot_of_many_files_is_hashed_on_threads_and_is_gits() {
    let f = fixture(&[("a.txt", "a\n")]);
    for i in 0..300 {
        write(&f, &format!("d{}/f{i}.txt", i % 7), &format!("{i}\n"));
    }
    user_git(&f, &["add", "-A"]);
    user_git(
        &f,
        &[
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@x",
            "commit",
            "-q",
            "-m",
            "more",
        ],
    );
    let checkpoints = f.checkpoints("s1");
    checkpoints.before_change(1).unwrap();
    write(&f, "d3/f3.txt", "changed\n");
    checkpoints.after_turn(1).unwrap().expect("a change");
    let step = checkpoints.steps().unwrap().pop().unwrap();
    assert_eq!(step.before, user_git(&f, &["rev-parse", "HEAD^{tree}"]));
    assert_eq!(step.after, gits_tree(&f));
    git_agrees(&f, &step.after, "after");
}

/// A submodule's commit in the index (a gitlink) is not written in-process: that snapshot is
/// git's (`update-index`, `write-tree`), and the next, with the gitlink gone (its directory
/// is not a file of the walk), is in-process again.
#[test]
fn an_index_holding_a_submodules_commit_is_left_to_git() {
    let f = fixture(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    checkpoints.before_change(1).unwrap();
    assert_eq!(checkpoints.after_turn(1).unwrap(), None);
    git_on_index(
        &f,
        "s1",
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            "160000,1111111111111111111111111111111111111111,sub",
        ],
    );
    git.take();
    write(&f, "a.txt", "changed\n");
    checkpoints.before_change(2).unwrap();
    let commands = git.commands();
    assert!(
        commands.contains(&"update-index".to_owned()),
        "{commands:?}"
    );
    assert!(commands.contains(&"write-tree".to_owned()), "{commands:?}");
    write(&f, "b.txt", "changed\n");
    checkpoints.after_turn(2).unwrap().expect("b.txt changed");
    let commands = git.commands();
    assert_eq!(writers(&commands), Vec::<&String>::new(), "{commands:?}");
    let step = checkpoints.steps().unwrap().pop().unwrap();
    assert_eq!(step.before, {
        let mut f2 = user_git(&f, &["add", "a.txt"]);
        f2.push_str(&user_git(&f, &["write-tree"]));
        f2
    });
    assert_eq!(step.after, gits_tree(&f));
    git_agrees(&f, &step.after, "after the fallback");
}

/// The session's index is written under `<index>.lock`, as git writes it: a lock left by a
/// killed process stops the snapshot with a message that says which file and what to do.
#[test]
fn a_lock_left_on_the_index_is_named_and_the_snapshot_waits_for_it() {
    let f = fixture(&[("a.txt", "a\n")]);
    let checkpoints: std::sync::Arc<Checkpoints> = f.checkpoints("s1");
    checkpoints.before_change(1).unwrap();
    let (_, index) = shadow(&f, "s1");
    let lock = index.with_file_name("index-s1.lock");
    std::fs::write(&lock, "").unwrap();
    write(&f, "a.txt", "changed\n");
    let err = checkpoints.after_turn(1).unwrap_err().to_string();
    assert!(err.contains(&lock.display().to_string()), "{err}");
    assert!(err.contains("remove this lock file"), "{err}");
    assert!(lock.exists(), "another's lock is not taken away");
    std::fs::remove_file(&lock).unwrap();
    checkpoints.before_change(2).unwrap();
    assert!(!lock.exists());
}
