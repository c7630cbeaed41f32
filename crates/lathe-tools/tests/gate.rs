//! The gate's verdicts on the built-in tools' calls: approval modes against actions, rules,
//! the sandbox, memory.

use lathe_runtime::commands::{self as shell, ShellConfig, UnavailableMode};
use lathe_runtime::{
    ApprovalMode, Gate, PermissionsConfig, PreparedCall, Session, ToolKind, Verdict,
};
use serde_json::{Value, json};

struct Fixture {
    _dir: tempfile::TempDir,
    session: std::sync::Arc<Session>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    std::fs::create_dir_all(&root).unwrap();
    let workspace = lathe_runtime::Workspace::new(&root).unwrap();
    let session = Session::new(workspace, Default::default(), dir.path().join("state")).unwrap();
    // The sandbox as by default, but a machine without Landlock runs commands instead of
    // asking for each: these tests are about the policy, `sandbox_false_...` about that.
    shell::configure(
        &session,
        ShellConfig {
            sandbox_unavailable: UnavailableMode::Run,
            ..ShellConfig::default()
        },
    );
    Fixture { _dir: dir, session }
}

#[test]
fn sandbox_false_always_asks_and_is_never_remembered() {
    let f = fixture();
    if !shell::sandbox_active(&f.session) {
        eprintln!("skipping: landlock is not available here");
        return;
    }
    let root = f.session.workspace().root().to_path_buf();
    let args = json!({"command": "ls -la", "sandbox": false});
    for mode in [ApprovalMode::Ask, ApprovalMode::Auto, ApprovalMode::Full] {
        let gate = Gate::new(mode, &root);
        let one = call(&f.session, "shell", args.clone());
        let Verdict::Ask { reasons, rules } = gate.check(&one, &f.session) else {
            panic!("{mode}: sandbox: false must ask");
        };
        assert!(rules.is_empty(), "{mode}: {rules:?}");
        assert!(
            reasons.iter().any(|r| r.contains("outside the sandbox")),
            "{reasons:?}"
        );
        assert_eq!(
            verdict(
                &gate,
                &f,
                "shell",
                ToolKind::Execute,
                json!({"command": "ls -la"})
            ),
            'a'
        );
    }
    let skip = Gate::with_permissions(
        &PermissionsConfig::default(),
        ApprovalMode::Full,
        &root,
        true,
    )
    .unwrap();
    assert_eq!(
        verdict(&skip, &f, "shell", ToolKind::Execute, args.clone()),
        'a'
    );
    // Turned off in the configuration: the call changes nothing and asks nothing more.
    let off = fixture();
    let off_session = Session::new(
        lathe_runtime::Workspace::new(off.session.workspace().root()).unwrap(),
        Default::default(),
        off._dir.path().join("state-off"),
    )
    .unwrap();
    shell::configure(
        &off_session,
        ShellConfig {
            sandbox: false,
            ..ShellConfig::default()
        },
    );
    let gate = Gate::new(ApprovalMode::Full, &root);
    // The tool names its effects when the call is prepared, in the session it runs in.
    let call = call(&off_session, "shell", args);
    assert_eq!(gate.check(&call, &off_session), Verdict::Allow);
}

fn call(session: &Session, name: &str, arguments: Value) -> PreparedCall {
    lathe_tools::builtin()
        .prepare(name, arguments, session)
        .unwrap_or_else(|out| panic!("{name}: {}", out.text))
}

fn verdict(gate: &Gate, f: &Fixture, name: &str, _kind: ToolKind, arguments: Value) -> char {
    let call = call(&f.session, name, arguments);
    match gate.check(&call, &f.session) {
        Verdict::Allow => 'a',
        Verdict::Ask { .. } => 'q',
        Verdict::Deny { .. } => 'd',
    }
}

#[test]
fn modes_against_actions() {
    use ApprovalMode::*;
    let f = fixture();
    let root = f.session.workspace().root().to_path_buf();
    let read = ("read_file", ToolKind::Read, json!({"path": "a.rs"}));
    let edit = ("edit_file", ToolKind::Edit, json!({"path": "a.rs"}));
    let safe = ("shell", ToolKind::Execute, json!({"command": "ls -la"}));
    let normal = ("shell", ToolKind::Execute, json!({"command": "cargo test"}));
    let dangerous = (
        "shell",
        ToolKind::Execute,
        json!({"command": "git push --force"}),
    );
    let critical = (
        "shell",
        ToolKind::Execute,
        json!({"command": "sudo rm -rf /"}),
    );
    // (mode, action, expected: 'a'llow, 'q'uestion, 'd'eny)
    let table = [
        (ReadOnly, &read, 'a'),
        (ReadOnly, &edit, 'd'),
        (ReadOnly, &normal, 'd'),
        (Ask, &read, 'a'),
        (Ask, &safe, 'a'),
        (Ask, &edit, 'q'),
        (Ask, &normal, 'q'),
        (Auto, &edit, 'a'),
        (Auto, &safe, 'a'),
        (Auto, &normal, 'a'),
        (Auto, &dangerous, 'q'),
        (Auto, &critical, 'q'),
        (Full, &dangerous, 'a'),
        (Full, &critical, 'q'),
    ];
    for (mode, (name, kind, args), expected) in table {
        let gate = Gate::new(mode, &root);
        assert_eq!(
            verdict(&gate, &f, name, *kind, args.clone()),
            expected,
            "{mode} {args}"
        );
    }
}

#[test]
fn always_remembers_program_and_subcommand() {
    let f = fixture();
    let gate = Gate::new(ApprovalMode::Ask, f.session.workspace().root());
    let test = call(
        &f.session,
        "shell",
        json!({"command": "npm run test -- --watch"}),
    );
    let Verdict::Ask { rules, .. } = gate.check(&test, &f.session) else {
        panic!()
    };
    assert_eq!(rules, ["shell(npm run test *)"]);
    gate.allow_for_session(&rules);
    assert_eq!(gate.check(&test, &f.session), Verdict::Allow);
    let other = call(&f.session, "shell", json!({"command": "npm publish"}));
    assert!(matches!(
        gate.check(&other, &f.session),
        Verdict::Ask { .. }
    ));
}

#[test]
fn critical_commands_cannot_be_remembered_and_sensitive_files_ask() {
    let f = fixture();
    let gate = Gate::new(ApprovalMode::Full, f.session.workspace().root());
    let critical = call(&f.session, "shell", json!({"command": "cat ~/.ssh/id_rsa"}));
    let Verdict::Ask { rules, .. } = gate.check(&critical, &f.session) else {
        panic!()
    };
    assert!(rules.is_empty());
    let auto = Gate::new(ApprovalMode::Auto, f.session.workspace().root());
    assert_eq!(
        verdict(
            &auto,
            &f,
            "read_file",
            ToolKind::Read,
            json!({"path": ".env"})
        ),
        'q'
    );
}

#[test]
fn read_only_refusal_says_how_to_switch_and_modes_switch() {
    let f = fixture();
    let gate = Gate::new(ApprovalMode::ReadOnly, f.session.workspace().root());
    let edit = call(
        &f.session,
        "write_file",
        json!({"path": "a", "content": ""}),
    );
    let Verdict::Deny { reason } = gate.check(&edit, &f.session) else {
        panic!()
    };
    assert!(reason.contains("read-only"), "{reason}");
    gate.set_mode(ApprovalMode::Auto);
    assert_eq!(gate.mode(), ApprovalMode::Auto);
    assert_eq!(gate.check(&edit, &f.session), Verdict::Allow);
}

#[test]
fn permission_rules_apply() {
    let f = fixture();
    let permissions = PermissionsConfig {
        deny: vec!["shell(git push *)".into()],
        allow: vec!["shell(make *)".into()],
        ..PermissionsConfig::default()
    };
    let gate = Gate::with_permissions(
        &permissions,
        ApprovalMode::Ask,
        f.session.workspace().root(),
        false,
    )
    .unwrap();
    assert_eq!(
        verdict(
            &gate,
            &f,
            "shell",
            ToolKind::Execute,
            json!({"command": "make all"})
        ),
        'a'
    );
    assert_eq!(
        verdict(
            &gate,
            &f,
            "shell",
            ToolKind::Execute,
            json!({"command": "git push"})
        ),
        'd'
    );
    let bad = PermissionsConfig {
        allow: vec!["shell(".into()],
        ..PermissionsConfig::default()
    };
    assert!(
        Gate::with_permissions(&bad, ApprovalMode::Ask, f.session.workspace().root(), false)
            .is_err()
    );
}

#[test]
fn issue_12_symlinks_inside_the_workspace_are_judged_where_they_lead() {
    let f = fixture();
    let root = f.session.workspace().root().to_path_buf();
    std::fs::create_dir_all(root.join(".lathe")).unwrap();
    std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join(".env"), "TOKEN=x\n").unwrap();
    std::fs::write(root.join("src/a.rs"), "fn a() {}\n").unwrap();
    let link = |target: &str, name: &str| std::os::unix::fs::symlink(target, root.join(name));
    link(".env", "notenv").unwrap();
    link(".lathe", "cfg").unwrap();
    link(".git", "repo").unwrap();
    link("src", "code").unwrap();
    let gate = Gate::new(ApprovalMode::Auto, &root);
    let rows = [
        ("read_file", ToolKind::Read, json!({"path": "notenv"}), 'q'),
        (
            "read_file",
            ToolKind::Read,
            json!({"path": "./notenv"}),
            'q',
        ),
        (
            "write_file",
            ToolKind::Edit,
            json!({"path": "cfg/config.toml", "content": "x"}),
            'q',
        ),
        (
            "edit_file",
            ToolKind::Edit,
            json!({"path": "cfg/config.toml"}),
            'q',
        ),
        (
            "write_file",
            ToolKind::Edit,
            json!({"path": "repo/hooks/pre-commit", "content": "x"}),
            'q',
        ),
        ("list_files", ToolKind::Read, json!({"path": "repo"}), 'q'),
        (
            "grep",
            ToolKind::Read,
            json!({"pattern": "x", "path": "repo"}),
            'q',
        ),
        (
            "glob",
            ToolKind::Read,
            json!({"pattern": "*", "path": "cfg"}),
            'q',
        ),
        (
            "shell",
            ToolKind::Execute,
            json!({"command": "cat notenv"}),
            'q',
        ),
        (
            "shell",
            ToolKind::Execute,
            json!({"command": "echo x > cfg/config.toml"}),
            'q',
        ),
        // links to ordinary files change nothing
        (
            "read_file",
            ToolKind::Read,
            json!({"path": "code/a.rs"}),
            'a',
        ),
        (
            "write_file",
            ToolKind::Edit,
            json!({"path": "code/b.rs", "content": "x"}),
            'a',
        ),
        (
            "shell",
            ToolKind::Execute,
            json!({"command": "cat code/a.rs"}),
            'a',
        ),
    ];
    for (name, kind, args, expected) in rows {
        assert_eq!(
            verdict(&gate, &f, name, kind, args.clone()),
            expected,
            "{name} {args}"
        );
    }
    // "Always" remembers the file the link leads to as well, so the same call is allowed
    // next time; the alias alone would not have been enough.
    let write = call(
        &f.session,
        "write_file",
        json!({"path": "cfg/config.toml", "content": "x"}),
    );
    let Verdict::Ask { rules, reasons } = gate.check(&write, &f.session) else {
        panic!("writing through cfg -> .lathe must ask")
    };
    assert_eq!(rules, ["edit(cfg/config.toml)", "edit(.lathe/config.toml)"]);
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("resolves through a symlink")),
        "{reasons:?}"
    );
    gate.allow_for_session(&rules);
    assert_eq!(gate.check(&write, &f.session), Verdict::Allow);
}
