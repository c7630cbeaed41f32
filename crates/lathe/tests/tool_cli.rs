//! `lathe tools` and `lathe tool`, driven as a user or a program would: the real binary on a
//! temporary workspace.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn lathe(workspace: &Path, data: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lathe"));
    cmd.arg("--workspace")
        .arg(workspace)
        .env("LATHE_DATA_DIR", data)
        .env("LATHE_CONFIG_DIR", data.join("config"))
        .stdin(Stdio::null());
    cmd
}

struct Fixture {
    _dir: tempfile::TempDir,
    ws: std::path::PathBuf,
    data: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("hello.txt"), "one\ntwo\nthree\n").unwrap();
    Fixture {
        _dir: dir,
        ws,
        data,
    }
}

fn run(f: &Fixture, args: &[&str]) -> (i32, String, String) {
    let out = lathe(&f.ws, &f.data).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn tools_json_is_the_function_calling_shape() {
    let f = fixture();
    let (code, out, _) = run(&f, &["tools", "--json"]);
    assert_eq!(code, 0);
    let defs: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = defs
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["type"], "function");
            assert_eq!(d["function"]["parameters"]["type"], "object");
            assert!(d["function"]["description"].as_str().unwrap().len() > 10);
            d["function"]["name"].as_str().unwrap()
        })
        .collect();
    for name in [
        "read_file",
        "read_document",
        "write_file",
        "edit_file",
        "apply_patch",
        "list_files",
        "grep",
        "glob",
        "shell",
        "command_output",
        "list_commands",
        "kill_command",
        "update_memory",
        "web_fetch",
        "web_search",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let (code, out, _) = run(&f, &["tools"]);
    assert_eq!(code, 0);
    assert!(out.contains("read_file"), "{out}");
}

#[test]
fn tool_prints_text_or_json_with_exit_codes() {
    let f = fixture();
    let (code, out, _) = run(&f, &["tool", "read_file", r#"{"path": "hello.txt"}"#]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("     1\tone\n     2\ttwo\n"), "{out}");

    let (code, out, _) = run(
        &f,
        &["tool", "read_file", r#"{"path": "missing.txt"}"#, "--json"],
    );
    assert_eq!(code, 1);
    let result: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["is_error"], true);
    assert!(result["text"].as_str().unwrap().contains("missing.txt"));
    assert!(result["metadata"].is_object());

    // Usage errors: unreadable JSON, unknown flags.
    let (code, _, err) = run(&f, &["tool", "read_file", "{nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("not valid JSON"), "{err}");
    let (code, _, _) = run(&f, &["tool", "read_file", "--frobnicate"]);
    assert_eq!(code, 2);

    // An unknown tool is the tool's error (exit 1), naming the closest.
    let (code, out, _) = run(&f, &["tool", "read_fil", "{}"]);
    assert_eq!(code, 1);
    assert!(out.contains("`read_file`"), "{out}");
}

/// Who approves a call of `lathe tool`: by default the person who ran it (what would ask runs;
/// deny rules still refuse), with `--approval MODE` nobody (what would ask is refused), as
/// the agent in that mode decides. One row per case: (flags, tool, arguments, status, a part
/// of the text).
#[test]
fn the_call_you_run_is_its_own_approval_and_deny_rules_still_refuse() {
    let f = fixture();
    std::fs::write(f.ws.join(".env"), "TOKEN=1\n").unwrap();
    std::fs::write(f.ws.join("locked.txt"), "keep\n").unwrap();
    let config = f.data.join("rules.toml");
    std::fs::create_dir_all(&f.data).unwrap();
    std::fs::write(&config, "[permissions]\ndeny = [\"edit(locked.txt)\"]\n").unwrap();
    let config = config.display().to_string();
    let write = |path: &str| json!({"path": path, "content": "changed\n"}).to_string();
    let env = json!({"path": ".env"}).to_string();
    let rows: [(&[&str], &str, String, &str, &str); 7] = [
        // a sensitive path would ask: you asked
        (&[], "read_file", env.clone(), "ok", "TOKEN=1"),
        (
            &[],
            "shell",
            json!({"command": "cat .env"}).to_string(),
            "ok",
            "TOKEN=1",
        ),
        // a deny rule refuses whoever calls
        (
            &[],
            "write_file",
            write("locked.txt"),
            "denied",
            "edit(locked.txt)",
        ),
        (
            &["--approval", "full"],
            "write_file",
            write("locked.txt"),
            "denied",
            "edit(locked.txt)",
        ),
        // a mode decides as the agent would, refusing what would ask
        (
            &["--approval", "auto"],
            "read_file",
            env,
            "denied",
            "lathe tool --approval auto",
        ),
        (
            &["--approval", "read-only"],
            "write_file",
            write("new.txt"),
            "denied",
            "read-only",
        ),
        (
            &["--approval", "auto"],
            "write_file",
            write("made.txt"),
            "ok",
            "made.txt",
        ),
    ];
    for (flags, tool, arguments, status, says) in rows {
        let mut args = vec!["--config", &config, "tool", "--json"];
        args.extend_from_slice(flags);
        args.extend([tool, &arguments]);
        let (code, out, err) = run(&f, &args);
        let what = format!("{flags:?} {tool} {arguments}");
        let result: Value =
            serde_json::from_str(&out).unwrap_or_else(|e| panic!("{what}: {e}: {out}{err}"));
        assert_eq!(result["status"], status, "{what}: {result}");
        assert_eq!(code, if status == "ok" { 0 } else { 1 }, "{what}: {result}");
        let text = result["text"].as_str().unwrap();
        assert!(text.contains(says), "{what}: {text}");
    }
    assert_eq!(
        std::fs::read_to_string(f.ws.join("locked.txt")).unwrap(),
        "keep\n"
    );
    assert!(!f.ws.join("new.txt").exists());
    assert!(f.ws.join("made.txt").exists());

    // A rule that does not parse is a configuration error, before anything runs.
    let bad = f.data.join("bad.toml");
    std::fs::write(&bad, "[permissions]\nallow = [\"shell(\"]\n").unwrap();
    let bad = bad.display().to_string();
    let (code, _, err) = run(
        &f,
        &[
            "--config",
            &bad,
            "tool",
            "read_file",
            r#"{"path": "hello.txt"}"#,
        ],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("[permissions]"), "{err}");
}

#[test]
fn tool_reads_arguments_from_stdin() {
    let f = fixture();
    let mut child = lathe(&f.ws, &f.data)
        .args(["tool", "write_file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"file_path": "new/dir/x.txt", "content": "hi\n"}"#)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(f.ws.join("new/dir/x.txt")).unwrap(),
        "hi\n"
    );
}

fn processes_with(marker: &str) -> Vec<i32> {
    lathe_testkit::processes_with(marker)
        .into_iter()
        .map(|(pid, _)| pid)
        .collect()
}

/// A program drives a whole background-command scenario through one `--batch` session,
/// using each answer (the command's id) in its next call.
#[test]
fn batch_drives_a_background_command_scenario() {
    let f = fixture();
    let marker = format!("{}.{}", 300, std::process::id());
    let mut child = batch_session(&f);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut call = |name: &str, arguments: Value| -> Value {
        let line = json!({"name": name, "arguments": arguments}).to_string();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut answer = String::new();
        stdout.read_line(&mut answer).unwrap();
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
    };

    let started = call(
        "shell",
        json!({"command": format!("echo started; sleep {marker}; echo never"), "background": true}),
    );
    assert_eq!(started["is_error"], false, "{started}");
    let id = started["metadata"]["command_id"].clone();
    assert!(id.is_u64(), "{started}");

    let listed = call("list_commands", json!({}));
    assert!(
        listed["text"].as_str().unwrap().contains("running"),
        "{listed}"
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let output = call("command_output", json!({"id": id}));
        if output["text"].as_str().unwrap().contains("started") {
            break;
        }
        assert!(Instant::now() < deadline, "no output: {output}");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!processes_with(&marker).is_empty());

    let killed = call("kill_command", json!({"id": id}));
    assert_eq!(killed["is_error"], false, "{killed}");
    let listed = call("list_commands", json!({}));
    assert!(
        listed["text"].as_str().unwrap().contains("killed"),
        "{listed}"
    );
    assert!(processes_with(&marker).is_empty());

    let again = call("kill_command", json!({"id": id}));
    assert!(
        again["text"].as_str().unwrap().contains("already"),
        "{again}"
    );

    // Unreadable lines are answered and the batch goes on.
    writeln!(stdin, "not json").unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    let bad: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(bad["is_error"], true);
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2));
}

/// A `lathe tool --batch` session that has started `command` in the background (its answer
/// read). The session ends when the returned stdin is dropped.
/// `lathe tool --batch` with its stdin and stdout piped to the test.
fn batch_session(f: &Fixture) -> std::process::Child {
    lathe(&f.ws, &f.data)
        .args(["tool", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap()
}

fn batch_with_background(
    f: &Fixture,
    command: &str,
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = batch_session(f);
    let mut stdin = child.stdin.take().unwrap();
    let line = json!({"name": "shell", "arguments": {"command": command, "background": true}});
    writeln!(stdin, "{line}").unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    assert!(answer.contains("background"), "{answer}");
    (child, stdin)
}

/// Fails, naming them, if processes carrying `marker` are still there.
fn assert_none_left(marker: &str) {
    let left = processes_with(marker);
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Waits (up to 30 s, else fails saying `what`) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ending the batch session ends what it started.
#[test]
fn batch_end_kills_background_commands() {
    let f = fixture();
    let marker = format!("{}.{}", 301, std::process::id());
    let command = format!("setsid sleep {marker} & nohup sleep {marker} & sleep {marker}");
    let (mut child, stdin) = batch_with_background(&f, &command);
    wait_until("the commands never started", || {
        processes_with(&marker).len() >= 3
    });
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_none_left(&marker);
}

/// A line that is not UTF-8 is answered as unreadable and the session goes on: the lines after
/// it still run (and see what the lines before it did).
#[test]
fn batch_answers_a_non_utf8_line_and_goes_on() {
    let f = fixture();
    let mut child = batch_session(&f);
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"name\":\"read_file\",\"arguments\":{\"path\":\"hello.txt\"}}\n")
        .unwrap();
    stdin.write_all(b"{\"name\":\"read_file\xff\"}\n").unwrap();
    stdin
        .write_all(
            b"{\"name\":\"write_file\",\"arguments\":{\"path\":\"hello.txt\",\"content\":\"new\\n\"}}\n",
        )
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(lines[0]["is_error"], json!(false));
    assert_eq!(lines[1]["is_error"], json!(true));
    let text = lines[1]["text"].as_str().unwrap();
    assert!(text.contains("not valid UTF-8"), "{text}");
    assert_eq!(lines[2]["is_error"], json!(false), "{}", lines[2]["text"]);
    assert_eq!(
        std::fs::read_to_string(f.ws.join("hello.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(out.status.code(), Some(2));
}

/// Sends `signal` to a child of this test.
fn signal(child: &std::process::Child, signal: i32) {
    // SAFETY: plain kill(2) on our own child, which has not been reaped yet.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
}

/// Waits until `count` processes carry `marker` (the command and what it started).
fn wait_for_processes(marker: &str, count: usize) {
    wait_until("the commands never started", || {
        processes_with(marker).len() >= count
    });
}

/// SIGTERM and SIGHUP (`timeout`, a closed terminal, a client stopping it) never reach the
/// commands, which run in their own sessions: `lathe tool` kills them itself, the whole tree
/// and also one that ignores SIGTERM, then exits as a process ended by that signal.
#[test]
fn termination_signals_kill_the_commands_and_exit_with_the_signal_code() {
    for (n, sig) in [(0, libc::SIGTERM), (1, libc::SIGHUP)] {
        let f = fixture();
        let marker = format!("{}.{}", 302 + n, std::process::id());
        let command = format!(
            "trap '' TERM; setsid sleep {marker} & nohup sleep {marker} & sleep {marker} & wait"
        );
        let child = lathe(&f.ws, &f.data)
            .args(["tool", "shell", &json!({ "command": command }).to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_for_processes(&marker, 4);
        signal(&child, sig);
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(128 + sig), "signal {sig}");
        assert_none_left(&marker);
    }
}

/// The same in a `--batch` session, for a command running in the background between calls.
#[test]
fn termination_signal_ends_a_batch_session_and_its_background_commands() {
    let f = fixture();
    let marker = format!("{}.{}", 304, std::process::id());
    let command = format!("setsid sleep {marker} & sleep {marker} & wait");
    let (mut child, stdin) = batch_with_background(&f, &command);
    wait_for_processes(&marker, 3);
    signal(&child, libc::SIGTERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert_none_left(&marker);
    drop(stdin);
}

/// Whether `pid` has a child that is Lathe's guard.
fn has_guard(pid: i32) -> bool {
    processes_with("lathe guard").into_iter().any(|guard| {
        let stat = std::fs::read_to_string(format!("/proc/{guard}/stat")).unwrap_or_default();
        // The parent's pid is the second field after the command name, which ends at ')'.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok())
            == Some(pid)
    })
}

/// SIGKILL cannot be caught: Lathe's guard process (started with the first command) sees it
/// die and kills every process of the session's commands, including ones that left the
/// command's session and process group.
#[test]
fn sigkill_of_lathe_leaves_no_command_behind() {
    let f = fixture();
    let marker = format!("{}.{}", 305, std::process::id());
    let command = format!(
        "setsid sleep {marker} & nohup sleep {marker} & (sleep {marker} &); sleep {marker} & wait"
    );
    let (mut child, stdin) = batch_with_background(&f, &command);
    wait_for_processes(&marker, 5);
    // The guard starts with the first command, on its own thread: wait until it is there.
    wait_until("no guard started", || has_guard(child.id() as i32));
    signal(&child, libc::SIGKILL);
    child.wait().unwrap();
    wait_until("the commands were left running", || {
        processes_with(&marker).is_empty()
    });
    drop(stdin);
}

/// Whether a `sleep` carrying `marker` runs.
fn sleep_runs(marker: &str) -> bool {
    lathe_testkit::processes_with(marker)
        .iter()
        .any(|(_, cmdline)| cmdline.starts_with("sleep "))
}

/// The guard is up before a one-shot call's command starts: a SIGKILL a few milliseconds
/// into `lathe tool shell` leaves neither the shell's last command nor what it started in the
/// background.
#[test]
fn sigkill_early_in_a_one_shot_call_leaves_nothing() {
    let f = fixture();
    // Rounds 0-20: killed 0, 1, ... 20 ms after the process started (Lathe's own start takes
    // a few of those, so some kills land before, some during and some after the command's);
    // rounds 21-26: 0-5 ms after the command is seen running.
    for round in 0..27u32 {
        let marker = format!("{}.{}{:02}", 306, std::process::id(), round);
        let command = format!("sleep {marker} & sleep {marker}");
        let mut child = lathe(&f.ws, &f.data)
            .args(["tool", "shell", &json!({ "command": command }).to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        if round > 20 {
            // From the command's start (scanning without pause: the window is short).
            let deadline = Instant::now() + Duration::from_secs(30);
            while !sleep_runs(&marker) {
                assert!(Instant::now() < deadline, "round {round}: never started");
            }
        }
        let delay = if round > 20 { (round - 21) % 6 } else { round };
        std::thread::sleep(Duration::from_millis(u64::from(delay)));
        signal(&child, libc::SIGKILL);
        child.wait().unwrap();
        wait_until(&format!("round {round}: commands left running"), || {
            !sleep_runs(&marker)
        });
    }
}

/// A `--batch` session's answer to one call.
fn call(
    stdin: &mut std::process::ChildStdin,
    stdout: &mut BufReader<std::process::ChildStdout>,
    name: &str,
    arguments: Value,
) -> Value {
    writeln!(stdin, "{}", json!({"name": name, "arguments": arguments})).unwrap();
    stdin.flush().unwrap();
    let mut answer = String::new();
    stdout.read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer:?}"))
}

/// Commands that clear their environment (no tag) and leave the command's session and the
/// process tree (their parent exits at once): found through the subreaper and their session.
fn escapees(marker: &str) -> [String; 3] {
    [
        format!("env -i setsid sh -c 'sleep {marker}'"),
        format!("env -i nohup setsid sleep {marker} >/dev/null 2>&1 &"),
        format!("env -i setsid sh -c '(sleep {marker} &)'"),
    ]
}

/// Ends a batch session in one of three ways; afterwards nothing the escapees started runs.
fn escapee_scenario(n: u32, end: &str) {
    let f = fixture();
    for i in 0..3u32 {
        let marker = format!("{}.{}{n}", 310 + i, std::process::id());
        let command = escapees(&marker)[i as usize].clone();
        let mut child = batch_session(&f);
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let started = call(
            &mut stdin,
            &mut stdout,
            "shell",
            json!({"command": command}),
        );
        assert_eq!(started["is_error"], false, "{started}");
        let id = started["metadata"]["command_id"].clone();
        wait_until(&format!("{command}: never started"), || {
            lathe_testkit::processes_with(&marker)
                .iter()
                .any(|(_, cmdline)| cmdline.starts_with("sleep "))
        });
        match end {
            "kill_command" => {
                let killed = call(&mut stdin, &mut stdout, "kill_command", json!({"id": id}));
                assert_eq!(killed["is_error"], false, "{killed}");
                let left = processes_with(&marker);
                assert!(left.is_empty(), "{command}: left behind: {left:?}");
                drop(stdin);
                child.wait().unwrap();
            }
            "session end" => {
                drop(stdin);
                child.wait().unwrap();
                let left = processes_with(&marker);
                assert!(left.is_empty(), "{command}: left behind: {left:?}");
            }
            _ => {
                // Any later call lets Lathe see where the escapee went; then it is killed.
                call(&mut stdin, &mut stdout, "shell", json!({"command": "true"}));
                signal(&child, libc::SIGKILL);
                child.wait().unwrap();
                wait_until(&format!("{command}: left running"), || {
                    processes_with(&marker).is_empty()
                });
                drop(stdin);
            }
        }
    }
}

#[test]
fn escapees_without_environment_die_with_kill_command() {
    escapee_scenario(0, "kill_command");
}

#[test]
fn escapees_without_environment_die_at_the_session_end() {
    escapee_scenario(1, "session end");
}

#[test]
fn escapees_without_environment_die_when_lathe_is_sigkilled() {
    escapee_scenario(2, "sigkill");
}

/// A result over the budget names where the whole result is saved and says to read it with
/// `read_file`; with one-shot calls that read is a later process, and it works (read-only).
#[test]
fn a_saved_result_is_readable_by_a_later_one_shot_call() {
    let f = fixture();
    let text: String = (1..=3000).map(|i| format!("line {i} NEEDLE\n")).collect();
    std::fs::write(f.ws.join("many.txt"), text).unwrap();
    let (code, out, err) = run(
        &f,
        &["tool", "grep", r#"{"pattern": "NEEDLE", "limit": 3000}"#],
    );
    assert_eq!(code, 0, "{err}");
    let saved = out
        .split("read_file path=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no saved result named: {out}"));
    let args = json!({"path": saved, "offset": 2999, "limit": 2}).to_string();
    let (code, page, err) = run(&f, &["tool", "read_file", &args]);
    assert_eq!(code, 0, "{page}{err}");
    assert!(page.contains("many.txt:2999: line 2999 NEEDLE"), "{page}");
    let args = json!({"path": saved, "content": "overwritten"}).to_string();
    let (code, refusal, _) = run(&f, &["tool", "write_file", &args]);
    assert_eq!(code, 1, "{refusal}");
    assert!(std::fs::read_to_string(saved).unwrap().contains("NEEDLE"));
}

/// Replacing a file by rename needs only the directory's permission; the file's own is checked
/// too: a user cannot overwrite a file whose mode denies them, and a file keeps its owner when
/// root edits it. Needs root (to act as another user and to give files away); skipped
/// otherwise, saying so.
#[test]
fn writes_respect_the_file_permissions_and_keep_its_owner() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !Path::new("/usr/bin/setpriv").exists() {
        eprintln!("SKIPPED: needs root and setpriv to act as another user");
        return;
    }
    let f = fixture();
    let nobody = 65534;
    for dir in [f.ws.parent().unwrap(), &f.ws] {
        std::os::unix::fs::chown(dir, Some(nobody), Some(nobody)).unwrap();
    }
    std::fs::create_dir_all(&f.data).unwrap();
    std::os::unix::fs::chown(&f.data, Some(nobody), Some(nobody)).unwrap();
    let ro = f.ws.join("ro.txt");
    std::fs::write(&ro, "keep me\n").unwrap();
    std::os::unix::fs::chown(&ro, Some(nobody), Some(nobody)).unwrap();
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_lathe"))
        .arg("--workspace")
        .arg(&f.ws)
        .args([
            "tool",
            "write_file",
            r#"{"path": "ro.txt", "content": "overwritten\n"}"#,
        ])
        .env("LATHE_DATA_DIR", &f.data)
        .env("LATHE_CONFIG_DIR", f.data.join("config"))
        .env("HOME", &f.data)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("not writable by this user (mode 444)"),
        "{text}"
    );
    assert_eq!(std::fs::read_to_string(&ro).unwrap(), "keep me\n");
    // Root edits a file owned by someone else: the owner stays.
    let owned = f.ws.join("owned.txt");
    std::fs::write(&owned, "old\n").unwrap();
    std::os::unix::fs::chown(&owned, Some(nobody), Some(nobody)).unwrap();
    let args = r#"{"path": "owned.txt", "content": "new\n"}"#;
    let (code, text, _) = run(&f, &["tool", "write_file", args]);
    assert_eq!(code, 0, "{text}");
    let meta = std::fs::metadata(&owned).unwrap();
    assert_eq!((meta.uid(), meta.gid()), (nobody, nobody));
    assert_eq!(std::fs::read_to_string(&owned).unwrap(), "new\n");
}

/// The peak resident memory of process `pid` in KiB (`VmHWM`), read from /proc.
fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/PID/status")
}

/// Writes a JSON line of `size` bytes (a `write_file` call with a huge content) in pieces.
fn write_huge_line(stdin: &mut impl Write, size: usize) {
    let head = br#"{"name":"write_file","arguments":{"path":"big.txt","content":""#;
    stdin.write_all(head).unwrap();
    let chunk = vec![b'a'; 1 << 20];
    let mut left = size - head.len() - 4;
    while left > 0 {
        let n = left.min(chunk.len());
        stdin.write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    stdin.write_all(b"\"}}\n").unwrap();
}

/// A batch line four times the 64 MiB limit is answered with an error naming the limit, the
/// session goes on, and Lathe's memory stays near the limit instead of growing with the line.
#[test]
fn batch_bounds_a_huge_line_and_its_memory() {
    let f = fixture();
    let mut child = batch_session(&f);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    write_huge_line(&mut stdin, 256 << 20);
    writeln!(
        stdin,
        "{}",
        json!({"name": "read_file", "arguments": {"path": "hello.txt"}})
    )
    .unwrap();
    let mut answers = Vec::new();
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        answers.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let peak_mib = peak_rss_kib(child.id()) / 1024;
    drop(stdin);
    let status = child.wait().unwrap();
    let text = answers[0]["text"].as_str().unwrap();
    assert_eq!(answers[0]["is_error"], json!(true), "{text}");
    assert!(
        text.contains("268435455 bytes") && text.contains("limit of 67108864 bytes"),
        "{text}"
    );
    assert_eq!(
        answers[1]["is_error"],
        json!(false),
        "{}",
        answers[1]["text"]
    );
    assert!(!f.ws.join("big.txt").exists());
    assert_eq!(status.code(), Some(2));
    assert!(peak_mib < 200, "peak RSS {peak_mib} MiB for a 256 MiB line");
}

/// Arguments on stdin over the limit are refused with the limit named, before any parsing.
#[test]
fn one_shot_arguments_on_stdin_are_bounded() {
    let f = fixture();
    let mut child = lathe(&f.ws, &f.data)
        .args(["tool", "write_file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    write_huge_line(&mut stdin, 80 << 20);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("limit of 67108864 bytes"), "{stderr}");
    assert!(!f.ws.join("big.txt").exists());
}
