//! Two sessions on one workspace keep their own histories and never undo each other's changes.

use std::path::PathBuf;

use serde_json::json;

use lathe_checkpoint::{Force, UndoTarget};

use crate::support::Fixture;

#[tokio::test]
async fn two_sessions_keep_separate_histories() {
    let f = Fixture::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let one = f.checkpoints("one");
    let two = f.checkpoints("two");
    let agent_one = f.agent(one.clone());
    let agent_two = f.agent(two.clone());

    agent_one.hook.begin_turn(1);
    agent_one
        .call("write_file", json!({"path": "a.txt", "content": "one\n"}))
        .await;
    agent_one.hook.end_turn().unwrap().unwrap();
    agent_two.hook.begin_turn(1);
    agent_two
        .call("shell", json!({"command": "echo two > b.txt"}))
        .await;
    agent_two.hook.end_turn().unwrap().unwrap();

    assert_eq!(one.steps().unwrap().len(), 1);
    assert_eq!(two.steps().unwrap().len(), 1);
    let undone = one.undo(UndoTarget::Last, Force::No).unwrap().unwrap();
    assert_eq!(undone.restored, [PathBuf::from("a.txt")]);
    assert_eq!(std::fs::read(f.path("a.txt")).unwrap(), b"a\n");
    assert_eq!(
        std::fs::read(f.path("b.txt")).unwrap(),
        b"two\n",
        "session two's change stays"
    );
    let undone = two.undo(UndoTarget::Last, Force::No).unwrap().unwrap();
    assert_eq!(undone.restored, [PathBuf::from("b.txt")]);
    assert_eq!(std::fs::read(f.path("b.txt")).unwrap(), b"b\n");
}

#[tokio::test]
async fn overlapping_turns_of_two_sessions_undo_only_their_own_files() {
    let f = Fixture::new(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    let one = f.checkpoints("one");
    let two = f.checkpoints("two");
    let agent_one = f.agent(one.clone());
    let agent_two = f.agent(two.clone());

    // Both turns run at once: each snapshot sees the other's change too.
    agent_one.hook.begin_turn(1);
    agent_two.hook.begin_turn(1);
    let (_, _) = tokio::join!(
        agent_one.call("write_file", json!({"path": "a.txt", "content": "one\n"})),
        agent_two.call("write_file", json!({"path": "b.txt", "content": "two\n"})),
    );
    agent_one.hook.end_turn().unwrap().unwrap();
    agent_two.hook.end_turn().unwrap().unwrap();

    let undone = one.undo(UndoTarget::Last, Force::No).unwrap().unwrap();
    assert_eq!(undone.restored, [PathBuf::from("a.txt")], "{undone:?}");
    assert_eq!(
        std::fs::read(f.path("b.txt")).unwrap(),
        b"two\n",
        "session two's change stays"
    );
    let undone = two.undo(UndoTarget::Last, Force::No).unwrap().unwrap();
    assert_eq!(undone.restored, [PathBuf::from("b.txt")], "{undone:?}");
    assert_eq!(std::fs::read(f.path("a.txt")).unwrap(), b"a\n");
}
