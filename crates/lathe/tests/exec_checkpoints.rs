//! `lathe exec` keeps checkpoints: a turn that edits a file with `edit_file`, and removes one
//! and creates one through `shell`, is recorded (the `checkpoint_created` event, `run_result`'s
//! `checkpoints`), and `lathe undo` / `lathe redo` take all three back and put them back, bytes
//! and modes. Two sessions on one workspace each undo only their own.

use std::os::unix::fs::PermissionsExt;
use std::process::{Output, Stdio};

use serde_json::json;

use lathe_testkit::{Script, ScriptedServer};

use crate::agent_harness::*;

fn mode(path: &std::path::Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn run(h: &Harness, args: &[&str]) -> Output {
    h.lathe().args(args).stdin(Stdio::null()).output().unwrap()
}

fn three_changes() -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call(
                    "edit_file",
                    json!({"path": "notes.txt", "old_string": "old line", "new_string": "new line\nand one more"}),
                )
                .tool_call(
                    "shell",
                    json!({"command": "rm tool.sh && printf 'made\\n' > made.sh && chmod 755 made.sh"}),
                )
                .done(),
        )
        .chat(reply().text("Edited notes, removed tool.sh, made made.sh.").done())
}

#[test]
fn a_turn_of_edit_rm_and_create_is_undone_and_redone_exactly() {
    let h = Harness::new(three_changes());
    h.write("notes.txt", "first\nold line\nlast\n");
    h.write("tool.sh", "#!/bin/sh\necho tool\n");
    std::fs::set_permissions(h.ws.join("tool.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = h.exec("tidy up", &["--approval", "full", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(h.read("notes.txt"), "first\nnew line\nand one more\nlast\n");
    assert!(!h.ws.join("tool.sh").exists());

    let events = json_lines(&output);
    let created = of_type(&events, "checkpoint_created");
    assert_eq!(created.len(), 1, "{events:#?}");
    let checkpoint = created[0];
    assert_eq!(checkpoint["turn"], 1);
    let step = checkpoint["step"].as_str().unwrap();
    assert!(!step.is_empty());
    let files: Vec<(String, u64, u64, bool, bool)> = checkpoint["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["added"].as_u64().unwrap(),
                f["removed"].as_u64().unwrap(),
                f["created"].as_bool().unwrap(),
                f["deleted"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        files,
        [
            ("made.sh".to_owned(), 1, 0, true, false),
            ("notes.txt".to_owned(), 2, 1, false, false),
            ("tool.sh".to_owned(), 0, 2, false, true),
        ]
    );
    assert_eq!(
        (checkpoint["added"].clone(), checkpoint["removed"].clone()),
        (json!(3), json!(3))
    );
    let result = events.last().unwrap();
    assert_eq!(result["type"], "run_result");
    assert_eq!(result["checkpoints"], json!([step]));
    // Stored as shown.
    let stored = h.stored_events();
    assert!(stored.iter().any(|e| e == checkpoint), "{stored:#?}");

    let session = h.newest_session();
    let undo = run(&h, &["undo", "--session", session.id.as_str()]);
    assert_exit(&undo, 0);
    assert_eq!(h.read("notes.txt"), "first\nold line\nlast\n");
    assert_eq!(h.read("tool.sh"), "#!/bin/sh\necho tool\n");
    assert_eq!(mode(&h.ws.join("tool.sh")), 0o755);
    assert!(!h.ws.join("made.sh").exists());

    let redo = run(&h, &["redo", "--session", session.id.as_str()]);
    assert_exit(&redo, 0);
    assert_eq!(h.read("notes.txt"), "first\nnew line\nand one more\nlast\n");
    assert!(!h.ws.join("tool.sh").exists());
    assert_eq!(h.read("made.sh"), "made\n");
    assert_eq!(mode(&h.ws.join("made.sh")), 0o755);
}

#[test]
fn the_human_end_line_names_lathe_undo_only_when_files_changed() {
    let h = Harness::new(three_changes());
    h.write("notes.txt", "old line\n");
    h.write("tool.sh", "x\n");
    let output = h.exec("tidy up", &["--approval", "full"]);
    assert_exit(&output, 0);
    let session = h.newest_session();
    let hint = format!("undo: lathe undo --session {}", session.id);
    assert!(stdout(&output).contains(&hint), "{}", stdout(&output));

    let h = Harness::new(Script::new().chat(reply().text("Nothing to do.").done()));
    let output = h.exec("say hi", &["--approval", "full"]);
    assert_exit(&output, 0);
    assert!(
        !stdout(&output).contains("lathe undo"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn checkpoints_can_be_turned_off() {
    let h = Harness::new(three_changes());
    h.write(".lathe/config.toml", "[agent]\ncheckpoints = false\n");
    // Turning a safety net off is a workspace setting that applies once trusted.
    h.trust();
    h.write("notes.txt", "old line\n");
    h.write("tool.sh", "x\n");
    let output = h.exec("tidy up", &["--approval", "full", "--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    assert!(of_type(&events, "checkpoint_created").is_empty());
    assert_eq!(events.last().unwrap()["checkpoints"], json!([]));
}

fn writes(path: &str) -> Script {
    Script::new()
        .chat(
            reply()
                .tool_call(
                    "write_file",
                    json!({"path": path, "content": format!("{path} by its session\n")}),
                )
                .done(),
        )
        .chat(reply().text("Written.").done())
}

#[test]
fn two_concurrent_sessions_each_undo_only_their_own() {
    let h = Harness::new(writes("a.txt"));
    let other =
        ScriptedServer::start(writes("b.txt").ollama_models(&[MODEL], &["completion", "tools"]))
            .unwrap();
    h.write("shared.txt", "untouched\n");
    let spawn = |url: String| {
        h.lathe()
            .args([
                "exec",
                "write your file",
                "--model",
                MODEL,
                "--base-url",
                &url,
            ])
            .args(["--approval", "auto", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let a = spawn(h.server.url());
    let b = spawn(other.url());
    let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
    assert_exit(&a, 0);
    assert_exit(&b, 0);
    let session_of = |out: &Output| {
        json_lines(out)[0]["session_id"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let (sa, sb) = (session_of(&a), session_of(&b));
    assert_ne!(sa, sb);

    for out in [&a, &b] {
        assert!(stderr(out).is_empty(), "{}", stderr(out));
    }
    let undo = run(&h, &["undo", "--session", &sa]);
    assert_exit(&undo, 0);
    assert!(!h.ws.join("a.txt").exists(), "session A's file is undone");
    assert_eq!(h.read("b.txt"), "b.txt by its session\n", "B's file is B's");

    let undo = run(&h, &["undo", "--session", &sb]);
    assert_exit(&undo, 0);
    assert!(!h.ws.join("b.txt").exists());
    assert_eq!(h.read("shared.txt"), "untouched\n");
}

/// `git ARGS` in the workspace, as the user's own repository; its output.
fn git(h: &Harness, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(&h.ws)
        .env("HOME", h.dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn repository(h: &Harness) {
    git(h, &["init", "-q", "-b", "main"]);
    h.write("README", "hello\n");
    git(h, &["add", "README"]);
    git(h, &["commit", "-q", "-m", "first"]);
}

#[test]
fn branch_on_a_clean_repository_switches_before_the_first_change() {
    let h = Harness::new(writes("a.txt"));
    repository(&h);
    let output = h.exec("write your file", &["--approval", "auto", "--branch"]);
    assert_exit(&output, 0);
    let session = h.newest_session();
    let branch = format!("lathe/{}", session.id);
    assert_eq!(git(&h, &["rev-parse", "--abbrev-ref", "HEAD"]), branch);
    assert!(
        stdout(&output).contains(&format!("switched to a new branch {branch}")),
        "{}",
        stdout(&output)
    );
    assert_eq!(h.read("a.txt"), "a.txt by its session\n");
    // The checkpoints never touched the user's repository: its history is the user's.
    assert_eq!(git(&h, &["log", "--format=%s", "--all"]), "first");
}

#[test]
fn branch_on_a_dirty_tree_or_outside_a_repository_says_why_not() {
    let h = Harness::new(writes("a.txt"));
    repository(&h);
    h.write("README", "changed by the user\n");
    h.write(".lathe/config.toml", "[agent]\ngit_branch = true\n");
    h.trust();
    let output = h.exec("write your file", &["--approval", "auto"]);
    assert_exit(&output, 0);
    assert_eq!(git(&h, &["rev-parse", "--abbrev-ref", "HEAD"]), "main");
    assert!(
        stdout(&output).contains("the working tree has uncommitted changes"),
        "{}",
        stdout(&output)
    );

    let h = Harness::new(writes("a.txt"));
    let output = h.exec("write your file", &["--approval", "auto", "--branch"]);
    assert_exit(&output, 0);
    assert!(
        stdout(&output).contains("the workspace is not a git repository"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        h.read("a.txt"),
        "a.txt by its session\n",
        "the change is made anyway"
    );
}

#[test]
fn branch_on_a_detached_head_says_so() {
    let h = Harness::new(writes("a.txt"));
    repository(&h);
    git(&h, &["checkout", "-q", "--detach"]);
    let output = h.exec("write your file", &["--approval", "auto", "--branch"]);
    assert_exit(&output, 0);
    assert!(
        stdout(&output).contains("HEAD is detached"),
        "{}",
        stdout(&output)
    );
}

/// Sessions that start at once on a workspace nobody has checkpointed yet all get checkpoints:
/// the shared shadow repository is made once, not half by each (`git init` of one directory by
/// two processes fails in one of them).
#[test]
fn sessions_starting_at_once_on_a_new_workspace_all_get_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let data = dir.path().join("data");
    let openers = 8;
    let barrier = std::sync::Barrier::new(openers);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..openers)
            .map(|n| {
                let (barrier, ws, data) = (&barrier, &ws, &data);
                scope.spawn(move || {
                    barrier.wait();
                    lathe_checkpoint::Checkpoints::builder(data, ws, format!("s{n}"))
                        .build()
                        .map(|_| ())
                        .map_err(|e| e.to_string())
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap().unwrap();
        }
    });
}
