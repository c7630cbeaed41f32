//! A turn through the real dispatcher and real tools, undone and redone exactly; files changed
//! since are never overwritten unasked.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use lathe_checkpoint::{Force, Nothing, StepKind, UndoTarget};

use crate::support::Fixture;

fn mode(f: &Fixture, path: &str) -> u32 {
    std::fs::metadata(f.path(path))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

#[tokio::test]
async fn a_turn_of_edit_rm_create_and_chmod_is_undone_and_redone_byte_for_byte() {
    let f = Fixture::new(&[
        // The user's attributes would turn CRLF into LF in a snapshot: they must not apply.
        (".gitattributes", "* text=auto eol=lf\n"),
        ("src/edit.txt", "one\r\ntwo\r\nthree\r\n"),
        ("gone.bin", "\u{0}\u{1}binary\u{ff}"),
        ("run.sh", "#!/bin/sh\necho hi\n"),
    ]);
    // Git records the exec bit only; the other bits of a file that stays are kept as they are.
    std::fs::set_permissions(
        f.path("src/edit.txt"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let user_git = f.user_git();
    let checkpoints = f.checkpoints("s1");
    let agent = f.agent(checkpoints.clone());
    let before = f.tree();

    agent.hook.begin_turn(1);
    // Reads first: no snapshot yet (and none at all if the turn only reads).
    agent
        .call("read_file", json!({"path": "src/edit.txt"}))
        .await;
    agent
        .call("shell", json!({"command": "ls -la && cat run.sh"}))
        .await;
    agent
        .call(
            "edit_file",
            json!({"path": "src/edit.txt", "old_string": "two", "new_string": "TWO"}),
        )
        .await;
    agent
        .call(
            "shell",
            json!({"command": "rm gone.bin && mkdir -p new/dir && printf 'made\\n' > new/dir/made.txt && chmod +x run.sh"}),
        )
        .await;
    let stat = agent
        .hook
        .end_turn()
        .unwrap()
        .expect("the turn changed files");
    assert_eq!(stat.files, 4, "{stat:?}");
    let after = f.tree();
    assert_eq!(f.read("src/edit.txt"), b"one\r\nTWO\r\nthree\r\n");
    assert!(!f.path("gone.bin").exists());
    assert_eq!(mode(&f, "run.sh") & 0o111, 0o111);

    let steps = checkpoints.steps().unwrap();
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].turn, &steps[0].kind), (1, &StepKind::Turn));

    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.turns, [1]);
    assert!(
        undone.conflicts.is_empty() && undone.failed.is_empty(),
        "{undone:?}"
    );
    assert_eq!(undone.restored.len(), 4, "{undone:?}");
    assert_eq!(
        f.tree(),
        before,
        "undo restores bytes and modes, and removes new directories"
    );
    assert!(!f.path("new").exists());

    let redone = checkpoints.redo(Force::No).unwrap().unwrap();
    assert_eq!(redone.restored.len(), 4, "{redone:?}");
    assert_eq!(f.tree(), after, "redo re-applies the turn exactly");
    assert_eq!(checkpoints.redo(Force::No).unwrap(), Err(Nothing::ToRedo));

    // Undo after redo takes the turn back again; then there is nothing left.
    checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(f.tree(), before);
    assert_eq!(
        checkpoints.undo(UndoTarget::Last, Force::No).unwrap(),
        Err(Nothing::ToUndo)
    );

    // The user's repository was never touched: index, HEAD, refs, objects, config.
    assert_eq!(f.user_git(), user_git);
}

#[tokio::test]
async fn a_turn_that_only_reads_records_nothing() {
    let f = Fixture::new(&[("a.txt", "a\n")]);
    let checkpoints = f.checkpoints("s1");
    let agent = f.agent(checkpoints.clone());
    agent.hook.begin_turn(1);
    agent.call("grep", json!({"pattern": "a"})).await;
    agent
        .call("shell", json!({"command": "cat a.txt | wc -l"}))
        .await;
    assert_eq!(agent.hook.end_turn().unwrap(), None);
    // A turn whose writes leave the tree as it was records nothing either.
    agent.hook.begin_turn(2);
    agent
        .call("write_file", json!({"path": "a.txt", "content": "a\n"}))
        .await;
    assert_eq!(agent.hook.end_turn().unwrap(), None);
    assert_eq!(checkpoints.steps().unwrap(), []);
    assert_eq!(
        checkpoints.undo(UndoTarget::Last, Force::No).unwrap(),
        Err(Nothing::ToUndo)
    );
}

#[tokio::test]
async fn a_file_changed_after_the_turn_is_left_alone_unless_forced() {
    let f = Fixture::new(&[("mine.txt", "base\n"), ("other.txt", "base\n")]);
    let checkpoints = f.checkpoints("s1");
    let agent = f.agent(checkpoints.clone());
    agent.hook.begin_turn(1);
    agent
        .call(
            "write_file",
            json!({"path": "mine.txt", "content": "agent\n"}),
        )
        .await;
    agent
        .call(
            "write_file",
            json!({"path": "other.txt", "content": "agent\n"}),
        )
        .await;
    agent.hook.end_turn().unwrap().unwrap();
    // The user edits one of the files afterwards.
    std::fs::write(f.path("mine.txt"), "user\n").unwrap();

    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.conflicts, [std::path::PathBuf::from("mine.txt")]);
    assert_eq!(undone.restored, [std::path::PathBuf::from("other.txt")]);
    assert_eq!(f.read("mine.txt"), b"user\n", "the user's change is kept");
    assert_eq!(f.read("other.txt"), b"base\n");

    // Without force there is nothing more to undo; with force, the same undo finishes the turn.
    assert_eq!(
        checkpoints.undo(UndoTarget::Last, Force::No).unwrap(),
        Err(Nothing::ToUndo)
    );
    let forced = checkpoints
        .undo(UndoTarget::Last, Force::Yes)
        .unwrap()
        .unwrap();
    assert_eq!(
        forced.restored,
        [std::path::PathBuf::from("mine.txt")],
        "{forced:?}"
    );
    assert_eq!(f.read("mine.txt"), b"base\n");
    // Each undo is its own step: two redos put back the agent's files, the user's last.
    checkpoints.redo(Force::No).unwrap().unwrap();
    assert_eq!(f.read("mine.txt"), b"user\n");
    checkpoints.redo(Force::No).unwrap().unwrap();
    assert_eq!(f.read("other.txt"), b"agent\n");
    assert_eq!(
        f.read("mine.txt"),
        b"user\n",
        "the user's version stays: it was not the turn's"
    );
}

#[tokio::test]
async fn undo_since_a_turn_takes_back_every_later_turn_and_the_diff_shows_each() {
    let f = Fixture::new(&[("a.txt", "1\n")]);
    let checkpoints = f.checkpoints("s1");
    let agent = f.agent(checkpoints.clone());
    for (turn, content) in [(1, "2\n"), (2, "3\n"), (3, "4\n")] {
        agent.hook.begin_turn(turn);
        agent
            .call("write_file", json!({"path": "a.txt", "content": content}))
            .await;
        agent
            .call(
                "shell",
                json!({"command": format!("echo {turn} > t{turn}.txt")}),
            )
            .await;
        agent.hook.end_turn().unwrap().unwrap();
    }
    let diff = checkpoints.diff(Some(2)).unwrap().unwrap();
    assert!(diff.contains("-2\n+3\n"), "{diff}");
    assert!(diff.contains("+++ b/t2.txt"), "{diff}");
    assert!(
        !diff.contains("t1.txt") && !diff.contains("t3.txt"),
        "{diff}"
    );
    let stat = checkpoints.diff_stat(None).unwrap().unwrap();
    assert!(stat.contains("4 files changed"), "{stat}");
    assert_eq!(checkpoints.diff(Some(9)).unwrap(), None);

    let undone = checkpoints
        .undo(UndoTarget::Since(2), Force::No)
        .unwrap()
        .unwrap();
    assert_eq!(undone.turns, [2, 3]);
    assert_eq!(f.read("a.txt"), b"2\n");
    assert!(f.path("t1.txt").exists() && !f.path("t2.txt").exists() && !f.path("t3.txt").exists());
    // A new turn after the undo: redo would mix the two, so it says why not.
    agent.hook.begin_turn(4);
    agent
        .call("shell", json!({"command": "echo 4 > t4.txt"}))
        .await;
    agent.hook.end_turn().unwrap().unwrap();
    assert_eq!(
        checkpoints.redo(Force::No).unwrap(),
        Err(Nothing::RedoAfterTurn { turn: 4 })
    );
}

#[tokio::test]
async fn a_turn_whose_process_died_is_ended_and_undone_by_the_next_process() {
    let f = Fixture::new(&[("a.txt", "a\n")]);
    {
        let checkpoints = f.checkpoints("s1");
        let agent = f.agent(checkpoints);
        agent.hook.begin_turn(1);
        agent
            .call(
                "shell",
                json!({"command": "echo changed > a.txt && echo new > b.txt"}),
            )
            .await;
        // The process dies here: the turn never ends.
    }
    let later = f.checkpoints("s1");
    let undone = later.undo(UndoTarget::Last, Force::No).unwrap().unwrap();
    assert_eq!(undone.turns, [1]);
    assert_eq!(f.read("a.txt"), b"a\n");
    assert!(!f.path("b.txt").exists());
}

#[test]
fn the_shadow_repository_is_packed_after_enough_steps() {
    let f = Fixture::new(&[("a.txt", "a\n")]);
    // git estimates the loose objects from one of its 256 directories (`objects/17`): a
    // thousand files (fixed contents, so fixed ids) put some there.
    std::fs::create_dir(f.path("many")).unwrap();
    for i in 0..1000 {
        std::fs::write(f.path(&format!("many/{i}")), format!("{i}\n")).unwrap();
    }
    let checkpoints = lathe_checkpoint::Checkpoints::builder(&f.data, &f.root, "s1")
        .gc(2, 1)
        .build()
        .unwrap();
    for turn in 1..=2 {
        checkpoints.before_change(turn).unwrap();
        std::fs::write(f.path("a.txt"), format!("turn {turn}\n")).unwrap();
        checkpoints.after_turn(turn).unwrap().expect("a step");
    }
    let packs = || {
        let Ok(repos) = std::fs::read_dir(f.data.join("checkpoints")) else {
            return 0;
        };
        repos
            .flatten()
            .filter_map(|repo| std::fs::read_dir(repo.path().join("git/objects/pack")).ok())
            .flatten()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
            .count()
    };
    // `git gc --auto` detaches itself: wait for its pack.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while packs() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no pack after two steps with gc every 2 steps"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // The history is whole after it.
    assert_eq!(checkpoints.steps().unwrap().len(), 2);
}
