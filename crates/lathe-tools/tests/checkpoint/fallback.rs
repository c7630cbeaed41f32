//! Without git on PATH: copies of the file tools' changes in the sessions database, and a
//! plain word that shell commands' changes are not covered.

use std::sync::Arc;

use serde_json::json;

use lathe_checkpoint::{Checkpoints, Coverage, Force, Nothing, UndoTarget};
use lathe_store::{NewSession, Store};

use crate::support::Fixture;

#[tokio::test]
async fn without_git_the_file_tools_changes_are_undone_and_shell_changes_are_said_not_covered() {
    let f = Fixture::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let store = Store::open(f.dir.path().join("sessions.db")).unwrap();
    let session = store.create_session(NewSession::default()).unwrap();
    // A PATH where no git can be found (the shell tool finds bash by its own absolute path).
    let empty = f.dir.path().join("no-git-here");
    std::fs::create_dir(&empty).unwrap();
    let checkpoints = Arc::new(
        Checkpoints::builder(&f.data, &f.root, session.as_str())
            .search_path(&empty)
            .store(store.clone())
            .build()
            .unwrap(),
    );
    assert_eq!(checkpoints.coverage(), Coverage::FileTools);
    let note = checkpoints.coverage().note();
    assert!(note.contains("git is not installed"), "{note}");
    assert!(
        note.contains("changes made by shell commands are not covered"),
        "{note}"
    );

    let agent = f.agent(checkpoints.clone());
    agent.hook.begin_turn(1);
    agent
        .call(
            "edit_file",
            json!({"path": "a.txt", "old_string": "a", "new_string": "A"}),
        )
        .await;
    agent
        .call("write_file", json!({"path": "new.txt", "content": "new\n"}))
        .await;
    agent
        .call("shell", json!({"command": "echo shell > b.txt"}))
        .await;
    let stat = agent.hook.end_turn().unwrap().unwrap();
    assert_eq!(stat.files, 2, "{stat:?}");
    assert!(
        !f.data.join("checkpoints").exists(),
        "no shadow repository without git"
    );

    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.restored.len(), 2, "{undone:?}");
    assert_eq!(f.read("a.txt"), b"a\n");
    assert!(!f.path("new.txt").exists());
    assert_eq!(
        f.read("b.txt"),
        b"shell\n",
        "the shell's change is not covered"
    );

    checkpoints.redo(Force::No).unwrap().unwrap();
    assert_eq!(f.read("a.txt"), b"A\n");
    assert_eq!(f.read("new.txt"), b"new\n");

    // A file changed since is left alone here too.
    std::fs::write(f.path("a.txt"), "user\n").unwrap();
    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.conflicts, [std::path::PathBuf::from("a.txt")]);
    assert_eq!(f.read("a.txt"), b"user\n");
    assert!(!f.path("new.txt").exists());
    assert_eq!(
        checkpoints.undo(UndoTarget::Last, Force::No).unwrap(),
        Err(Nothing::ToUndo)
    );
}

#[test]
fn without_git_and_without_a_store_there_are_no_checkpoints() {
    let f = Fixture::new(&[("a.txt", "a\n")]);
    let empty = f.dir.path().join("no-git-here");
    std::fs::create_dir(&empty).unwrap();
    let err = Checkpoints::builder(&f.data, &f.root, "s1")
        .search_path(&empty)
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("git is not installed"), "{err}");
}

#[test]
fn without_git_modes_come_back_and_a_forced_undo_finishes_a_partial_one() {
    use std::os::unix::fs::PermissionsExt;
    let f = Fixture::new(&[("run.sh", "echo a\n"), ("c.txt", "c\n")]);
    let mode = |p: &str| std::fs::metadata(f.path(p)).unwrap().permissions().mode() & 0o7777;
    let chmod = |p: &str, m: u32| {
        std::fs::set_permissions(f.path(p), std::fs::Permissions::from_mode(m)).unwrap()
    };
    chmod("run.sh", 0o755);
    let store = Store::open(f.dir.path().join("sessions.db")).unwrap();
    let session = store.create_session(NewSession::default()).unwrap();
    let empty = f.dir.path().join("no-git-here");
    std::fs::create_dir(&empty).unwrap();
    let checkpoints = Checkpoints::builder(&f.data, &f.root, session.as_str())
        .search_path(&empty)
        .store(store)
        .build()
        .unwrap();
    checkpoints
        .before_file_change(1, std::path::Path::new("run.sh"))
        .unwrap();
    checkpoints
        .before_file_change(1, std::path::Path::new("c.txt"))
        .unwrap();
    std::fs::write(f.path("run.sh"), "echo b\n").unwrap();
    chmod("run.sh", 0o600);
    std::fs::write(f.path("c.txt"), "turn 1\n").unwrap();
    checkpoints
        .after_turn(1)
        .unwrap()
        .expect("turn 1 changed files");

    // The user changes c.txt: the undo leaves it alone and puts run.sh back, mode and all.
    std::fs::write(f.path("c.txt"), "the user's\n").unwrap();
    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.conflicts, vec![std::path::PathBuf::from("c.txt")]);
    assert_eq!(
        std::fs::read_to_string(f.path("run.sh")).unwrap(),
        "echo a\n"
    );
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(
        std::fs::read_to_string(f.path("c.txt")).unwrap(),
        "the user's\n"
    );

    // Forced, the same undo is finished: c.txt comes back too.
    let forced = checkpoints
        .undo(UndoTarget::Last, Force::Yes)
        .unwrap()
        .expect("the partial undo can be finished");
    assert_eq!(forced.restored, vec![std::path::PathBuf::from("c.txt")]);
    assert_eq!(std::fs::read_to_string(f.path("c.txt")).unwrap(), "c\n");
    // Finished, nothing is left to undo.
    assert_eq!(
        checkpoints.undo(UndoTarget::Last, Force::Yes).unwrap(),
        Err(Nothing::ToUndo)
    );
}
