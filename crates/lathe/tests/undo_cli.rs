//! `lathe undo`, `lathe redo` and `lathe diff` as a user runs them: the real binary, a session
//! in the real database, a turn recorded by the real checkpoints around a real shell command.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use lathe_checkpoint::Checkpoints;
use lathe_store::{NewSession, Store};

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    data: PathBuf,
    session: String,
}

fn fixture(files: &[(&str, &str)]) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&ws).unwrap();
    for (path, content) in files {
        std::fs::write(ws.join(path), content).unwrap();
    }
    let ws = ws.canonicalize().unwrap();
    let store = Store::open(lathe_store::default_database_path(&data)).unwrap();
    let session = store
        .create_session(NewSession {
            workspace: ws.clone(),
            provider: "ollama".into(),
            model: "m".into(),
            approval: "auto".into(),
            ..NewSession::default()
        })
        .unwrap();
    Fixture {
        _dir: dir,
        ws,
        data,
        session: session.as_str().to_owned(),
    }
}

impl Fixture {
    /// Turn `turn`: `script` run by `sh` in the workspace, between the checkpoints.
    fn turn(&self, turn: u32, script: &str) {
        let checkpoints = Checkpoints::builder(&self.data, &self.ws, &self.session)
            .build()
            .unwrap();
        checkpoints.before_change(turn).unwrap();
        let status = Command::new("sh")
            .args(["-c", script])
            .current_dir(&self.ws)
            .status()
            .unwrap();
        assert!(status.success());
        checkpoints.after_turn(turn).unwrap().unwrap();
    }

    fn lathe(&self, args: &[&str]) -> (i32, String, String) {
        self.lathe_with_path(args, &std::env::var_os("PATH").unwrap())
    }

    fn lathe_with_path(&self, args: &[&str], path: &std::ffi::OsStr) -> (i32, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_lathe"))
            .arg("--workspace")
            .arg(&self.ws)
            .args(args)
            .env("LATHE_DATA_DIR", &self.data)
            .env("LATHE_CONFIG_DIR", self.data.join("config"))
            .env("PATH", path)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.ws.join(path)).unwrap_or_else(|_| "(absent)".into())
    }
}

fn exists(ws: &Path, path: &str) -> bool {
    ws.join(path).exists()
}

#[test]
fn undo_redo_and_diff_of_the_newest_session_in_the_workspace() {
    let f = fixture(&[
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        (".gitignore", "*.log\n"),
    ]);
    f.turn(
        1,
        "echo A > a.txt && rm b.txt && echo c > c.txt && echo log > x.log",
    );

    let (code, out, err) = f.lathe(&["diff", "--stat"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("a.txt") && out.contains("b.txt") && out.contains("c.txt"),
        "{out}"
    );
    assert!(out.contains("3 files changed"), "{out}");
    let (code, out, _) = f.lathe(&["diff", "--turn", "1"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("-a\n+A\n") && out.contains("+++ b/c.txt"),
        "{out}"
    );
    let (code, _, err) = f.lathe(&["diff", "--turn", "7"]);
    assert_eq!(code, 1);
    assert!(err.contains("no changes recorded for turn 7"), "{err}");

    let (code, out, err) = f.lathe(&["undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("undid turn 1 of session"), "{out}");
    assert!(out.contains("3 files put back"), "{out}");
    assert!(out.contains("not covered by undo: ignored: x.log"), "{out}");
    assert_eq!(
        (f.read("a.txt"), f.read("b.txt")),
        ("a\n".into(), "b\n".into())
    );
    assert!(!exists(&f.ws, "c.txt"));

    let (code, out, _) = f.lathe(&["undo"]);
    assert_eq!(code, 1);
    assert!(out.starts_with("nothing to undo"), "{out}");
    let (code, out, _) = f.lathe(&["diff"]);
    assert_eq!(code, 0);
    assert!(out.contains("add up to nothing now"), "{out}");

    let (code, out, _) = f.lathe(&["redo", "--session", &f.session[..8]]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("redid turn 1"), "{out}");
    assert_eq!(f.read("a.txt"), "A\n");
    assert!(!exists(&f.ws, "b.txt") && exists(&f.ws, "c.txt"));
}

#[test]
fn undo_lists_files_changed_since_and_force_overwrites_them() {
    let f = fixture(&[("a.txt", "a\n"), ("b.txt", "b\n")]);
    f.turn(1, "echo agent > a.txt && echo agent > b.txt");
    std::fs::write(f.ws.join("a.txt"), "user\n").unwrap();

    let (code, out, _) = f.lathe(&["undo"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("1 file put back\n  b.txt\n"), "{out}");
    assert!(
        out.contains("left alone, changed since by someone else (run again with --force to overwrite them):\n  a.txt\n"),
        "{out}"
    );
    assert_eq!(f.read("a.txt"), "user\n");
    let (code, out, _) = f.lathe(&["undo", "--force"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(f.read("a.txt"), "a\n");
}

#[test]
fn without_git_undo_says_what_is_not_covered() {
    let f = fixture(&[("a.txt", "a\n")]);
    let empty = f.ws.parent().unwrap().join("no-git");
    std::fs::create_dir(&empty).unwrap();
    let (code, out, err) = f.lathe_with_path(&["undo"], empty.as_os_str());
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("git is not installed (not found on PATH)")
            && err.contains("changes made by shell commands are not covered"),
        "{err}"
    );
    assert!(out.starts_with("nothing to undo"), "{out}");
    assert!(
        out.contains("without git only the file tools' changes are recorded"),
        "{out}"
    );
}

#[test]
fn undo_in_a_workspace_without_sessions_says_how_to_name_one() {
    let f = fixture(&[]);
    let other = f.ws.parent().unwrap().join("elsewhere");
    std::fs::create_dir(&other).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_lathe"))
        .arg("--workspace")
        .arg(&other)
        .arg("undo")
        .env("LATHE_DATA_DIR", &f.data)
        .env("LATHE_CONFIG_DIR", f.data.join("config"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no session has run in") && err.contains("--session ID"),
        "{err}"
    );
}

#[test]
fn a_lathe_tool_change_is_taken_back_by_lathe_undo() {
    let f = fixture(&[("notes.txt", "before\n")]);
    let (code, _, err) = f.lathe(&[
        "tool",
        "write_file",
        r#"{"path": "notes.txt", "content": "after\n"}"#,
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("notes.txt")).unwrap(),
        "after\n"
    );
    // A run that only reads records nothing: the newest session is still the write's.
    let (code, _, err) = f.lathe(&["tool", "read_file", r#"{"path": "notes.txt"}"#]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = f.lathe(&["undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("notes.txt")).unwrap(),
        "before\n"
    );
}

#[test]
fn each_changing_call_of_a_lathe_tool_batch_is_a_turn_undo_takes_back_one_at_a_time() {
    let f = fixture(&[("notes.txt", "before\n")]);
    let lines = concat!(
        r#"{"name": "write_file", "arguments": {"path": "notes.txt", "content": "after\n"}}"#,
        "\n",
        r#"{"name": "grep", "arguments": {"pattern": "after"}}"#,
        "\n",
        r#"{"name": "shell", "arguments": {"command": "echo made > made.txt"}}"#,
        "\n",
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_lathe"))
        .arg("--workspace")
        .arg(&f.ws)
        .args(["tool", "--batch"])
        .env("LATHE_DATA_DIR", &f.data)
        .env("LATHE_CONFIG_DIR", f.data.join("config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(f.ws.join("made.txt").exists());
    // The shell command's file first, then the write.
    let (code, out, err) = f.lathe(&["undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(!f.ws.join("made.txt").exists(), "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("notes.txt")).unwrap(),
        "after\n"
    );
    let (code, out, err) = f.lathe(&["undo"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        std::fs::read_to_string(f.ws.join("notes.txt")).unwrap(),
        "before\n"
    );
}
