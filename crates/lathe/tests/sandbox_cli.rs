//! The Landlock sandbox through `lathe tool shell`: the real binary, real processes, real
//! Landlock. Writes outside the workspace go to a directory under the target directory, not
//! `/tmp` (which the sandbox allows).

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
    ws: PathBuf,
    data: PathBuf,
    /// A directory outside the workspace and outside /tmp.
    outside: PathBuf,
}

fn landlock() -> bool {
    let available = lathe_exec::sandbox::probe().is_available();
    if !available {
        eprintln!("skipping: landlock is not available here");
    }
    available
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&ws).unwrap();
    let outside = lathe_testkit::outside_scratch_dir(env!("CARGO_TARGET_TMPDIR"));
    Fixture {
        ws: ws.canonicalize().unwrap(),
        data,
        outside: outside.path().canonicalize().unwrap(),
        _dir: dir,
        _outside: outside,
    }
}

impl Fixture {
    /// Writes the workspace's configuration and trusts it (these tests are about what the
    /// settings do; tests/trust.rs is about when they apply). An invalid file stays untrusted.
    fn config(&self, text: &str) {
        std::fs::create_dir_all(self.ws.join(".lathe")).unwrap();
        std::fs::write(self.ws.join(".lathe/config.toml"), text).unwrap();
        let _ = self
            .lathe()
            .args(["trust", "--yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
    }

    fn lathe(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lathe"));
        cmd.arg("--workspace")
            .arg(&self.ws)
            .env("LATHE_DATA_DIR", &self.data)
            .env("LATHE_CONFIG_DIR", self.data.join("config"))
            .env_remove("LATHE_SANDBOX_FORCE_UNAVAILABLE")
            .env_remove("LATHE_LOG");
        cmd
    }

    /// `lathe tool shell ARGS --json`: the result.
    fn shell(&self, args: Value) -> Value {
        self.shell_with(self.lathe(), args)
    }

    fn shell_with(&self, mut cmd: Command, args: Value) -> Value {
        let out = cmd
            .args(["tool", "shell", &args.to_string(), "--json"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "{out:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }

    /// `lathe tool --batch` with these shell calls.
    fn batch(&self, mut cmd: Command, calls: &[Value]) -> (Vec<Value>, String) {
        let mut child = cmd
            .args(["tool", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        {
            let mut stdin = child.stdin.take().unwrap();
            for args in calls {
                writeln!(stdin, "{}", json!({"name": "shell", "arguments": args})).unwrap();
            }
        }
        let out: Output = child.wait_with_output().unwrap();
        let results = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        (results, String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn text(result: &Value) -> &str {
    result["text"].as_str().unwrap()
}

fn header(result: &Value) -> &str {
    text(result).lines().next().unwrap()
}

fn write_to(path: &Path) -> String {
    format!("echo written > '{}'; echo after-write", path.display())
}

#[test]
fn by_default_writes_outside_the_workspace_fail_and_inside_succeed() {
    if !landlock() {
        return;
    }
    let f = fixture();
    let target = f.outside.join("escape.txt");
    let result = f.shell(json!({"command": write_to(&target)}));
    assert!(
        header(&result).contains("| sandboxed (landlock abi"),
        "{}",
        text(&result)
    );
    assert_eq!(result["metadata"]["sandboxed"], true);
    assert!(text(&result).contains("after-write"), "{}", text(&result));
    assert!(!target.exists(), "the sandbox let a write outside through");
    // Also not by moving a file out, nor from a child process started in the background.
    std::fs::write(f.ws.join("keep.txt"), "keep").unwrap();
    let moved = f.outside.join("moved.txt");
    let child = f.outside.join("child.txt");
    f.shell(json!({"command": format!(
        "mv keep.txt '{}'; (sh -c 'echo x > \"{}\"' &); wait; sleep 0.2",
        moved.display(),
        child.display()
    )}));
    assert!(f.ws.join("keep.txt").exists());
    assert!(!moved.exists() && !child.exists());
    // Inside the workspace and in /tmp: allowed.
    let result = f.shell(json!({"command": "mkdir -p out && echo in > out/inside.txt && echo ok"}));
    assert!(text(&result).contains("\nok"), "{}", text(&result));
    assert_eq!(
        std::fs::read_to_string(f.ws.join("out/inside.txt")).unwrap(),
        "in\n"
    );
}

#[test]
fn the_configuration_turns_the_sandbox_off() {
    if !landlock() {
        return;
    }
    let f = fixture();
    f.config("[shell]\nsandbox = false\n");
    let target = f.outside.join("allowed.txt");
    let result = f.shell(json!({"command": write_to(&target)}));
    let head = header(&result);
    assert!(
        head.ends_with("| not sandboxed (turned off in the configuration)"),
        "{head}"
    );
    assert!(!head.contains("| sandboxed"), "{head}");
    assert_eq!(result["metadata"]["sandboxed"], false);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written\n");
}

#[test]
fn configured_write_paths_are_writable() {
    if !landlock() {
        return;
    }
    let f = fixture();
    let extra = f.outside.join("cache");
    std::fs::create_dir(&extra).unwrap();
    f.config(&format!(
        "[shell]\nsandbox_write_paths = [\"{}\"]\n",
        extra.display()
    ));
    f.shell(json!({"command": write_to(&extra.join("ok.txt"))}));
    f.shell(json!({"command": write_to(&f.outside.join("no.txt"))}));
    assert!(extra.join("ok.txt").exists());
    assert!(!f.outside.join("no.txt").exists());
    f.config("[shell]\nsandbox_write_paths = [\"relative/dir\"]\n");
    let out = f
        .lathe()
        .args(["tool", "shell", r#"{"command": "true"}"#])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("'relative/dir' is not absolute"),
        "{stderr}"
    );
}

/// A shell line that connects to `port` on loopback and says whether it could.
fn connect(port: u16) -> String {
    format!(
        "if (echo hello > /dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo CONNECTED; else echo REFUSED; fi"
    )
}

#[test]
fn the_network_is_off_by_default_and_configurable_on() {
    if !landlock() {
        return;
    }
    if lathe_exec::sandbox::probe().abi() < Some(4) {
        eprintln!("skipping: this kernel's landlock cannot restrict the network");
        return;
    }
    let f = fixture();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let off = f.shell(json!({"command": connect(port)}));
    assert!(text(&off).contains("REFUSED"), "{}", text(&off));
    assert!(header(&off).contains("network off"), "{}", header(&off));
    assert!(listener.accept().is_err(), "a connection got through");

    f.config("[shell]\nsandbox_network = true\n");
    let on = f.shell(json!({"command": connect(port)}));
    assert!(text(&on).contains("CONNECTED"), "{}", text(&on));
    assert!(
        header(&on).contains("| sandboxed (landlock abi"),
        "{}",
        header(&on)
    );
    assert!(header(&on).contains("network on"), "{}", header(&on));
    assert!(listener.accept().is_ok(), "the listener saw no connection");
}

#[test]
fn sandbox_false_runs_unsandboxed_when_the_user_runs_the_tool_directly() {
    if !landlock() {
        return;
    }
    let f = fixture();
    let target = f.outside.join("direct.txt");
    let result = f.shell(json!({"command": write_to(&target), "sandbox": false}));
    let head = header(&result);
    assert!(head.ends_with("| not sandboxed (sandbox: false)"), "{head}");
    assert_eq!(result["metadata"]["sandboxed"], false);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written\n");
}

#[test]
fn without_landlock_lathe_says_so_once_and_runs_unsandboxed_in_both_modes() {
    let f = fixture();
    for (config, says) in [
        ("", "needs the user's approval"),
        (
            "[shell]\nsandbox_unavailable = \"run\"\n",
            "run unsandboxed",
        ),
    ] {
        f.config(config);
        let target = f.outside.join("fallback.txt");
        let _ = std::fs::remove_file(&target);
        let mut cmd = f.lathe();
        cmd.env("LATHE_SANDBOX_FORCE_UNAVAILABLE", "1");
        let (results, stderr) = f.batch(
            cmd,
            &[
                json!({"command": "echo one"}),
                json!({"command": write_to(&target)}),
            ],
        );
        assert_eq!(results.len(), 2, "{results:?}\n{stderr}");
        let first = text(&results[0]);
        assert!(
            header(&results[0]).ends_with("| not sandboxed (landlock unavailable)"),
            "{first}"
        );
        assert!(
            first.contains("[note: landlock is not available"),
            "{first}"
        );
        assert!(
            first.contains("LATHE_SANDBOX_FORCE_UNAVAILABLE=1"),
            "{first}"
        );
        assert!(first.contains(says), "{first}");
        let second = text(&results[1]);
        assert!(!second.contains("[note:"), "said once: {second}");
        assert!(
            header(&results[1]).ends_with("| not sandboxed (landlock unavailable)"),
            "{second}"
        );
        // Nobody to ask under `lathe tool`: the user ran it, so it runs.
        assert!(target.exists());
        assert_eq!(
            stderr.matches("landlock is not available").count(),
            1,
            "warned once: {stderr}"
        );
    }
}
