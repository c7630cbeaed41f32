//! The command tools end to end through the registry, with real processes: `shell`,
//! `command_output`, `list_commands`, `kill_command`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lathe_runtime::commands::{ShellConfig, configure};
use lathe_runtime::{
    CommandState, Metadata, Registry, Session, ToolConfig, ToolContext, ToolOutput, ToolProgress,
    Workspace,
};
use serde_json::{Value, json};

struct Fixture {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    session: Arc<Session>,
    registry: Registry,
}

impl Fixture {
    fn new() -> Self {
        let workspace = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        std::fs::create_dir(workspace.path().join("sub")).unwrap();
        std::fs::write(workspace.path().join("file.txt"), "x").unwrap();
        let session = Session::new(
            Workspace::new(workspace.path()).unwrap(),
            ToolConfig::default(),
            state.path().to_path_buf(),
        )
        .unwrap();
        Fixture {
            _dirs: (workspace, state),
            session,
            registry: lathe_tools::builtin(),
        }
    }

    fn ctx(&self) -> ToolContext {
        ToolContext::new(Arc::clone(&self.session))
    }

    async fn call(&self, name: &str, args: Value) -> ToolOutput {
        self.registry.call(name, args, self.ctx()).await
    }

    fn artifact(&self, id: u64) -> Vec<u8> {
        std::fs::read(self.session.state_dir().join(format!("cmd-{id}"))).unwrap()
    }
}

fn id_of(output: &ToolOutput) -> u64 {
    output.metadata.to_json()["command_id"]
        .as_u64()
        .expect("command_id")
}

fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "1000.{}{:03}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn sleeps_with(marker: &str) -> usize {
    lathe_testkit::processes_with(marker)
        .iter()
        .filter(|(_, cmdline)| cmdline.starts_with("sleep "))
        .count()
}

async fn wait_until(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_four_tools_are_registered_with_their_parameters() {
    let registry = lathe_tools::builtin();
    for (name, params) in [
        (
            "shell",
            &["command", "cwd", "timeout", "background", "sandbox"][..],
        ),
        ("command_output", &["id", "search", "offset", "limit"][..]),
        ("list_commands", &[][..]),
        ("kill_command", &["id"][..]),
    ] {
        let definition = registry
            .definition(name)
            .unwrap_or_else(|| panic!("{name}"));
        let properties = definition.parameters["properties"].as_object().unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(names, params, "{name}");
        assert!(!definition.description.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_runs_in_the_workspace_and_reports_a_header() {
    let fx = Fixture::new();
    let out = fx
        .call("shell", json!({"command": "pwd; echo err >&2; exit 3"}))
        .await;
    assert!(!out.is_error, "{}", out.text);
    let header = out.text.lines().next().unwrap();
    assert!(header.starts_with("exit code 3 | "), "{header}");
    assert!(header.contains("bytes, 2 lines"), "{header}");
    let root = fx.session.workspace().root().display().to_string();
    assert!(out.text.contains(&format!("{root}\nerr")), "{}", out.text);
    assert_eq!(out.metadata.to_json()["status"]["exit_code"], 3);
    // The sandbox is on by default wherever Landlock works.
    assert_eq!(
        out.metadata.to_json()["sandboxed"],
        lathe_exec::sandbox::probe().is_available()
    );
    let sub = fx
        .call("shell", json!({"command": "pwd", "cwd": "sub"}))
        .await;
    assert!(sub.text.contains(&format!("{root}/sub")), "{}", sub.text);
    // Lenient arguments: a stringly timeout and background flag.
    let lenient = fx
        .call(
            "shell",
            json!({"command": "echo ok", "timeout": "30", "background": "false"}),
        )
        .await;
    assert!(lenient.text.contains("\nok"), "{}", lenient.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_refuses_what_the_model_can_fix() {
    let fx = Fixture::new();
    for (args, needle) in [
        (json!({"command": "   "}), "empty"),
        (
            json!({"command": "ls", "cwd": "../"}),
            "outside the workspace",
        ),
        (
            json!({"command": "ls", "cwd": "/etc"}),
            "outside the workspace",
        ),
        (json!({"command": "ls", "cwd": "missing"}), "does not exist"),
        (
            json!({"command": "ls", "cwd": "file.txt"}),
            "not a directory",
        ),
        (json!({"command": "ls", "timeout": -1}), "positive number"),
        // Over the kernel's limit for one argument: said plainly, not "Argument list too long"
        // with the whole command echoed back.
        (
            json!({"command": format!("echo {}", "a".repeat(200_000))}),
            "the command is 200005 bytes long",
        ),
        (json!({"command": "echo a\u{0}b"}), "NUL character"),
    ] {
        let out = fx.call("shell", args.clone()).await;
        assert!(out.is_error, "{args}: {}", out.text);
        assert!(out.text.contains(needle), "{args}: {}", out.text);
        assert!(out.text.len() < 1000, "{}", out.text);
    }
    // Just under the limit still runs.
    let out = fx
        .call(
            "shell",
            json!({"command": format!("printf %s {} | wc -c", "a".repeat(131_000))}),
        )
        .await;
    assert!(!out.is_error, "{}", &out.text[..200]);
    assert!(out.text.contains("131000"), "{}", &out.text[..200]);
    // A timeout too large for any clock means "wait": the command runs (it panicked once).
    let out = fx
        .call("shell", json!({"command": "echo hi", "timeout": 1e308}))
        .await;
    assert!(
        !out.is_error && out.text.contains("exit code 0"),
        "{}",
        out.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_output_is_cut_and_paging_reproduces_the_artifact() {
    let fx = Fixture::new();
    let out = fx
        .call(
            "shell",
            json!({"command": "seq 1 200000; printf 'tail without newline'"}),
        )
        .await;
    assert!(out.text.contains("bytes omitted (lines "), "{}", out.text);
    assert!(out.text.contains("command_output"), "{}", out.text);
    assert_eq!(out.metadata.to_json()["truncated"], true);
    let id = id_of(&out);
    let artifact = fx.artifact(id);
    assert!(artifact.ends_with(b"200000\ntail without newline"));
    for limit in [None, Some(7777usize)] {
        let mut rebuilt = Vec::new();
        let mut offset = 0u64;
        loop {
            let mut args = json!({"id": id, "offset": offset});
            if let Some(limit) = limit {
                args["limit"] = json!(limit);
            }
            let page = fx.call("command_output", args).await;
            assert!(!page.is_error, "{}", page.text);
            let (start, end) = (
                page.metadata.to_json()["offset"].as_u64().unwrap(),
                page.metadata.to_json()["end"].as_u64().unwrap(),
            );
            assert_eq!(start, offset);
            let header_end = page.text.find('\n').unwrap();
            let header = &page.text[..header_end];
            let expected_line = artifact[..start as usize]
                .iter()
                .filter(|&&b| b == b'\n')
                .count()
                + 1;
            assert!(
                header.contains(&format!(
                    "bytes {start}-{end} of {}, lines {expected_line}-",
                    artifact.len()
                )),
                "{header}"
            );
            let body = &page.text.as_bytes()[header_end + 1..];
            rebuilt.extend_from_slice(&body[..(end - start) as usize]);
            offset = end;
            if page.metadata.to_json()["more"] == false {
                assert!(page.text.ends_with("[end of output]"), "{}", page.text);
                break;
            }
            assert_eq!(page.metadata.to_json()["next_offset"], end);
            assert!(page.text.contains(&format!("\"offset\": {end}")));
        }
        assert!(rebuilt == artifact, "paging did not reproduce the artifact");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_numbers_lines_like_grep_n() {
    let fx = Fixture::new();
    let out = fx
        .call(
            "shell",
            json!({"command": "for i in $(seq 1 3000); do if [ $((i % 7)) = 0 ]; then echo \"ERROR at $i\"; else echo \"ok $i\"; fi; done"}),
        )
        .await;
    let id = id_of(&out);
    let artifact_path = fx.session.state_dir().join(format!("cmd-{id}"));
    let grep = std::process::Command::new("grep")
        .args(["-n", "-i", "error"])
        .arg(&artifact_path)
        .output()
        .unwrap();
    let expected = String::from_utf8(grep.stdout).unwrap();
    let expected_lines: Vec<&str> = expected.lines().collect();
    let result = fx
        .call(
            "command_output",
            json!({"id": id.to_string(), "search": "error", "limit": 10000}),
        )
        .await;
    assert!(!result.is_error, "{}", result.text);
    let shown: Vec<&str> = result
        .text
        .lines()
        .filter(|l| l.contains(":ERROR at"))
        .collect();
    assert_eq!(
        result.metadata.to_json()["total_matches"],
        expected_lines.len()
    );
    assert!(!shown.is_empty());
    assert_eq!(
        shown,
        expected_lines[..shown.len()],
        "numbered like grep -n"
    );
    if shown.len() < expected_lines.len() {
        let next = result.metadata.to_json()["next_offset"]
            .as_u64()
            .expect("next offset");
        let more = fx
            .call(
                "command_output",
                json!({"id": id, "search": "error", "offset": next, "limit": 10000}),
            )
            .await;
        let first = more.text.lines().find(|l| l.contains(":ERROR at")).unwrap();
        assert_eq!(first, expected_lines[shown.len()]);
    }
    let literal = fx
        .call(
            "command_output",
            json!({"id": format!("cmd-{id}"), "search": "at 7("}),
        )
        .await;
    assert!(
        literal.text.contains("not a valid regex"),
        "{}",
        literal.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_are_checked_against_the_session() {
    let fx = Fixture::new();
    for id in [
        json!(1),
        json!("7"),
        json!("../../etc/passwd"),
        json!("cmd-1/../x"),
    ] {
        let out = fx.call("command_output", json!({"id": id})).await;
        assert!(out.is_error, "{id}: {}", out.text);
        assert!(out.text.contains("list_commands"), "{id}: {}", out.text);
        let out = fx.call("kill_command", json!({"id": id})).await;
        assert!(out.is_error, "{id}: {}", out.text);
    }
    let listing = fx.call("list_commands", json!({})).await;
    assert!(listing.text.contains("no commands"), "{}", listing.text);
}

/// `limit: 0` is refused with what the limit means and its default, as `read_file` does,
/// rather than quietly read as one byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_limit_is_refused_with_the_default() {
    let fx = Fixture::new();
    let id = id_of(&fx.call("shell", json!({"command": "echo hello"})).await);
    let out = fx
        .call("command_output", json!({"id": id, "limit": 0}))
        .await;
    assert!(out.is_error);
    assert_eq!(
        out.text,
        "limit must be 1 or more (the most bytes to show; default 40960), got 0"
    );
    let out = fx
        .call(
            "command_output",
            json!({"id": id, "search": "h", "limit": 0}),
        )
        .await;
    assert!(
        out.text
            .contains("the most matching lines to show; default 100"),
        "{}",
        out.text
    );
    let out = fx
        .call("command_output", json!({"id": id, "limit": 1}))
        .await;
    assert!(
        !out.is_error && out.text.contains("bytes 0-1 of 6"),
        "{}",
        out.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_timeout_backgrounds_then_list_read_and_kill() {
    let fx = Fixture::new();
    let m = marker();
    let out = fx
        .call(
            "shell",
            json!({"command": format!("echo first; sleep {m}"), "timeout": 0.5}),
        )
        .await;
    assert!(!out.is_error, "{}", out.text);
    assert!(
        out.text.contains("moved to the background as command"),
        "{}",
        out.text
    );
    assert!(out.text.contains("first"), "{}", out.text);
    let id = id_of(&out);
    let listing = fx.call("list_commands", json!({})).await;
    assert!(
        listing.text.contains(&format!("{id} | running |")),
        "{}",
        listing.text
    );
    let read = fx.call("command_output", json!({"id": id})).await;
    assert!(read.text.contains("first\n"), "{}", read.text);
    assert!(read.text.contains("still"), "{}", read.text);
    let killed = fx.call("kill_command", json!({"id": id})).await;
    assert!(!killed.is_error, "{}", killed.text);
    assert!(
        killed.text.starts_with(&format!("killed command {id}")),
        "{}",
        killed.text
    );
    assert_eq!(sleeps_with(&m), 0);
    let listing = fx.call("list_commands", json!({})).await;
    assert!(
        listing.text.contains(&format!("{id} | killed |")),
        "{}",
        listing.text
    );
    let again = fx.call("kill_command", json!({"id": id})).await;
    assert!(again.text.contains("already finished"), "{}", again.text);
}

/// The command a result is about is typed (Metadata.command), says the same in the JSON the
/// first cut wrote, and reads back from it, for each state the command tools report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn command_metadata_is_typed_and_round_trips_through_json() {
    let fx = Fixture::new();
    let m = marker();
    let exited = fx.call("shell", json!({"command": "exit 3"})).await;
    let running = fx
        .call(
            "shell",
            json!({"command": format!("sleep {m}"), "background": true}),
        )
        .await;
    let id = id_of(&running);
    let read = fx.call("command_output", json!({"id": id})).await;
    let killed = fx.call("kill_command", json!({"id": id})).await;
    let cases = [
        (
            &exited,
            CommandState::Exited { exit_code: 3 },
            json!({"state": "exited", "exit_code": 3}),
        ),
        (&running, CommandState::Running, json!({"state": "running"})),
        (&read, CommandState::Running, json!({"state": "running"})),
        (
            &killed,
            CommandState::Killed {
                label: "killed".into(),
            },
            json!({"state": "killed", "label": "killed"}),
        ),
    ];
    for (out, state, shape) in cases {
        assert!(!out.is_error, "{}", out.text);
        let command = out.metadata.command.as_ref().expect("a command");
        assert_eq!(command.status, state, "{}", out.text);
        let json = out.metadata.to_json();
        assert_eq!(json["command_id"], command.id);
        assert_eq!(json["status"], shape);
        assert_eq!(Metadata::from_json(json), out.metadata);
    }
    assert_eq!(running.metadata.command.as_ref().unwrap().id, id);
    assert_eq!(sleeps_with(&m), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_returns_at_once_and_session_end_kills_it() {
    let fx = Fixture::new();
    let m = marker();
    let out = fx
        .call("shell", json!({"command": format!("nohup sleep {m} & setsid sleep {m} & sleep {m}"), "background": true}))
        .await;
    assert!(
        out.text.starts_with("started in the background as command"),
        "{}",
        out.text
    );
    assert!(wait_until(|| sleeps_with(&m) == 3).await);
    fx.session.shutdown();
    assert_eq!(
        sleeps_with(&m),
        0,
        "processes survived the end of the session"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_aborts_and_kills() {
    let fx = Fixture::new();
    let m = marker();
    let ctx = fx.ctx();
    let cancel = ctx.cancel.clone();
    let watched = m.clone();
    tokio::spawn(async move {
        wait_until(|| sleeps_with(&watched) == 1).await;
        cancel.cancel();
    });
    let out = fx
        .registry
        .call(
            "shell",
            json!({"command": format!("echo before; sleep {m}")}),
            ctx,
        )
        .await;
    assert!(out.text.starts_with("aborted by user"), "{}", out.text);
    assert!(out.text.contains("before"), "{}", out.text);
    assert_eq!(sleeps_with(&m), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_listeners_see_the_output_live() {
    let fx = Fixture::new();
    let seen = Arc::new(Mutex::new(String::new()));
    let sink_seen = Arc::clone(&seen);
    let mut ctx = fx.ctx();
    ctx.progress = Some(Arc::new(move |p| {
        if let ToolProgress::Output { text } = p {
            sink_seen.lock().unwrap().push_str(&text);
        }
    }));
    let out = fx
        .registry
        .call("shell", json!({"command": "echo one; echo two"}), ctx)
        .await;
    assert!(!out.is_error);
    assert_eq!(*seen.lock().unwrap(), "one\ntwo\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configuration_limits_running_commands_and_hard_timeout() {
    let fx = Fixture::new();
    let applied = configure(
        &fx.session,
        ShellConfig {
            max_running: 1,
            command_timeout: Some(1),
            ..ShellConfig::default()
        },
    );
    assert!(applied);
    let m = marker();
    let first = fx
        .call(
            "shell",
            json!({"command": format!("sleep {m}"), "background": true}),
        )
        .await;
    let refused = fx.call("shell", json!({"command": "echo second"})).await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(refused.text.contains("already running"), "{}", refused.text);
    let id = id_of(&first);
    // The hard limit kills it after a second; then the slot is free again.
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut listing = fx.call("list_commands", json!({})).await;
    while !listing.text.contains(&format!("{id} | timed out |")) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
        listing = fx.call("list_commands", json!({})).await;
    }
    assert!(
        listing.text.contains(&format!("{id} | timed out |")),
        "{}",
        listing.text
    );
    assert_eq!(sleeps_with(&m), 0);
    let second = fx.call("shell", json!({"command": "echo second"})).await;
    assert!(second.text.contains("\nsecond"), "{}", second.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_commands_say_so_and_cannot_write_outside() {
    if !lathe_exec::sandbox::probe().is_available() {
        eprintln!("skipping: landlock is not available here");
        return;
    }
    let fx = Fixture::new();
    configure(
        &fx.session,
        ShellConfig {
            sandbox: true,
            ..ShellConfig::default()
        },
    );
    // Outside the workspace, the state directory and /tmp: the home directory.
    let home = std::env::var_os("HOME").map_or_else(|| "/root".into(), std::path::PathBuf::from);
    let Ok(outside) = tempfile::tempdir_in(&home) else {
        eprintln!("skipping: cannot create a directory in {}", home.display());
        return;
    };
    let target = outside.path().join("escape.txt");
    let out = fx
        .call(
            "shell",
            json!({"command": format!("echo inside > inside.txt && echo out > '{}'; echo done", target.display())}),
        )
        .await;
    assert!(
        out.text.lines().next().unwrap().contains("sandboxed"),
        "{}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["sandboxed"], true);
    assert!(fx.session.workspace().root().join("inside.txt").exists());
    assert!(!target.exists(), "the sandbox let a write outside through");
    assert!(out.text.contains("done"), "{}", out.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_false_runs_outside_the_sandbox_and_the_header_says_so() {
    if !lathe_exec::sandbox::probe().is_available() {
        eprintln!("skipping: landlock is not available here");
        return;
    }
    let fx = Fixture::new();
    let outside = lathe_testkit::outside_scratch_dir(env!("CARGO_TARGET_TMPDIR"));
    let target = outside.path().join("escape.txt");
    let write = format!("echo out > '{}'", target.display());
    let fenced = fx.call("shell", json!({"command": write})).await;
    let header = fenced.text.lines().next().unwrap().to_owned();
    assert!(header.contains("| sandboxed (landlock abi"), "{header}");
    assert!(
        !target.exists(),
        "the default sandbox let a write outside through"
    );
    let free = fx
        .call("shell", json!({"command": write, "sandbox": "false"}))
        .await;
    let header = free.text.lines().next().unwrap().to_owned();
    assert!(header.starts_with("exit code 0 | "), "{}", free.text);
    assert!(
        header.ends_with("| not sandboxed (sandbox: false)"),
        "{header}"
    );
    assert_eq!(free.metadata.to_json()["sandboxed"], false);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "out\n");
}
