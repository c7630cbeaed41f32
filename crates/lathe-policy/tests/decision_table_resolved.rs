//! Issue 12, class 7: paths judged as they resolve through symlinks as well as by their text.
//! (mode, rules, action) -> decision, one row per case; the stricter judgment must win.
//!
//! The workspace is `/home/u/proj`. The caller's resolution is played by a fixed table of
//! symlinks (the policy does no I/O: Lathe's workspace resolves, these rows say what it found).

use lathe_policy::{
    Action, AnalysisContext, ApprovalMode, Decision, FileTarget, PathResolver, PermissionsConfig,
    Policy, Sandbox,
};

use ApprovalMode::{Ask as AskMode, Auto, Full, ReadOnly};
use Decision::{Allow, Ask, Deny};

/// Symlinks in the test machine: link -> target (absolute).
const LINKS: &[(&str, &str)] = &[
    ("/home/u/proj/notenv", "/home/u/proj/.env"),
    ("/home/u/proj/cfg", "/home/u/proj/.lathe"),
    ("/home/u/proj/keys", "/home/u/.ssh"),
    ("/home/u/proj/hooks", "/home/u/proj/.git/hooks"),
    ("/home/u/proj/docs/notes", "/home/u/proj/src/notes"),
    ("/home/u/proj/crontab", "/etc/cron.d"),
];

/// Resolves `abs` through [`LINKS`] as the kernel would (the longest link that is a prefix).
fn resolve(abs: &str) -> String {
    LINKS
        .iter()
        .filter(|(link, _)| abs == *link || abs.starts_with(&format!("{link}/")))
        .max_by_key(|(link, _)| link.len())
        .map(|(link, target)| format!("{target}{}", &abs[link.len()..]))
        .unwrap_or_else(|| abs.to_owned())
}

fn absolute(given: &str) -> String {
    if given.starts_with('/') {
        given.to_owned()
    } else {
        format!("/home/u/proj/{given}")
    }
}

#[derive(Debug, Clone, Copy)]
enum Act {
    /// A file tool's read, its path resolved by the caller.
    Read(&'static str),
    /// write_file; inside the workspace when the resolved path is.
    Write(&'static str),
    /// edit_file.
    Edit(&'static str),
    /// A shell command, with the resolver in the context.
    Sh(&'static str),
    /// A shell command with no resolver: judged by its text alone (what resolution adds).
    ShLexical(&'static str),
}

type Row = (
    ApprovalMode,
    &'static [&'static str],
    &'static [&'static str],
    Act,
    Decision,
);

const NONE: &[&str] = &[];

#[rustfmt::skip]
const ROWS: &[Row] = &[
    // (mode, allow rules, deny rules, action, expected)
    // a symlink to a sensitive file: the target is judged
    (Auto, NONE, NONE, Act::Read("notenv"), Ask),
    (AskMode, NONE, NONE, Act::Read("notenv"), Ask),
    (ReadOnly, NONE, NONE, Act::Read("notenv"), Ask),
    (Auto, NONE, NONE, Act::Write("cfg/config.toml"), Ask),
    (Auto, NONE, NONE, Act::Edit("cfg/config.toml"), Ask),
    (Full, NONE, NONE, Act::Write("cfg/config.toml"), Ask),
    (Auto, NONE, NONE, Act::Write("hooks/pre-commit"), Ask),
    (Auto, NONE, NONE, Act::Read("hooks"), Ask),
    // a missing file below a symlinked directory resolves through it too
    (Auto, NONE, NONE, Act::Write("cfg/new/deeper.toml"), Ask),
    // a symlink to a credential outside the workspace is critical
    (Auto, NONE, NONE, Act::Read("keys/id_rsa"), Ask),
    (Full, NONE, NONE, Act::Read("keys/id_ed25519"), Ask),
    (Full, NONE, NONE, Act::Write("keys/authorized_keys"), Ask),
    (Full, NONE, NONE, Act::Write("crontab/job"), Ask),
    // an allow rule for the name as written does not allow the target; one for the target does
    (Auto, &["read(notenv)"], NONE, Act::Read("notenv"), Ask),
    (Auto, &["read(.env)"], NONE, Act::Read("notenv"), Allow),
    (Auto, &["edit(cfg/**)"], NONE, Act::Write("cfg/config.toml"), Ask),
    (Auto, &["edit(.lathe/**)"], NONE, Act::Write("cfg/config.toml"), Allow),
    // a deny rule for the target denies the alias
    (Full, NONE, &["edit(.lathe/**)"], Act::Write("cfg/config.toml"), Deny),
    (Full, NONE, &["read(.env)"], Act::Read("notenv"), Deny),
    // and one for the alias still denies
    (Full, NONE, &["edit(cfg/**)"], Act::Write("cfg/config.toml"), Deny),
    // symlinks to ordinary files change nothing
    (Auto, NONE, NONE, Act::Read("docs/notes/todo.md"), Allow),
    (Auto, NONE, NONE, Act::Write("docs/notes/todo.md"), Allow),
    (Auto, NONE, NONE, Act::Write("src/main.rs"), Allow),
    (ReadOnly, NONE, NONE, Act::Read("src/main.rs"), Allow),
    // shell commands: arguments and redirection targets, with the caller's resolver
    (Auto, NONE, NONE, Act::ShLexical("cat notenv"), Allow),
    (Auto, NONE, NONE, Act::Sh("cat notenv"), Ask),
    (Auto, NONE, NONE, Act::Sh("head -n 3 notenv | grep KEY"), Ask),
    (Auto, NONE, NONE, Act::Sh("echo 'sandbox = false' > cfg/config.toml"), Ask),
    (Auto, NONE, NONE, Act::Sh("cp x.sh hooks/pre-commit"), Ask),
    (Auto, NONE, NONE, Act::Sh("cat keys/id_rsa"), Ask),
    (Full, NONE, NONE, Act::Sh("cat keys/id_rsa"), Ask),
    (ReadOnly, NONE, NONE, Act::Sh("cat keys/id_rsa"), Deny),
    (Auto, &["shell(cat *)"], NONE, Act::Sh("cat notenv"), Ask),
    (Auto, &["read(.env)"], NONE, Act::Sh("cat notenv"), Allow),
    (Auto, NONE, NONE, Act::Sh("cat docs/notes/todo.md"), Allow),
    (Auto, NONE, NONE, Act::Sh("ls -la cfg"), Allow),
];

fn decide(
    mode: ApprovalMode,
    allow: &[&str],
    deny: &[&str],
    act: Act,
) -> lathe_policy::DecisionReport {
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let config = PermissionsConfig {
        allow: list(allow),
        deny: list(deny),
        ..PermissionsConfig::default()
    };
    let lexical = AnalysisContext::new("/home/u/proj", "/home/u");
    let resolving = lexical
        .clone()
        .with_resolver(PathResolver::new(|abs| Some(resolve(abs))));
    let ctx = if matches!(act, Act::ShLexical(_)) {
        lexical
    } else {
        resolving
    };
    let policy = Policy::new(&config, mode, ctx).unwrap_or_else(|e| panic!("{e}"));
    let target = |p: &str| FileTarget::resolved(p, resolve(&absolute(p)));
    let inside = |p: &str| resolve(&absolute(p)).starts_with("/home/u/proj/");
    match act {
        Act::Read(p) => policy.decide_for_tool("read_file", &Action::Read { path: target(p) }),
        Act::Write(p) => policy.decide_for_tool(
            "write_file",
            &Action::Write {
                path: target(p),
                inside_workspace: inside(p),
            },
        ),
        Act::Edit(p) => policy.decide_for_tool(
            "edit_file",
            &Action::Edit {
                path: target(p),
                inside_workspace: inside(p),
            },
        ),
        Act::Sh(c) | Act::ShLexical(c) => policy.decide(&Action::Shell {
            analysis: policy.analyze(c),
            sandbox: Sandbox::Enabled,
        }),
    }
}

#[test]
fn issue_12_resolved_paths_matrix() {
    let wrong: Vec<String> = ROWS
        .iter()
        .filter_map(|&(mode, allow, deny, act, expected)| {
            let report = decide(mode, allow, deny, act);
            (report.decision != expected).then(|| {
                format!(
                    "{mode} allow={allow:?} deny={deny:?} {act:?}: expected {expected}, got {}\n    {:?}",
                    report.decision, report.reasons
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} rows wrong:\n{}",
        wrong.len(),
        ROWS.len(),
        wrong.join("\n")
    );
}

#[test]
fn the_reasons_name_the_symlink_and_its_target() {
    let report = decide(Auto, NONE, NONE, Act::Write("cfg/config.toml"));
    let text = report.to_string();
    assert!(
        text.contains("`cfg/config.toml` resolves through a symlink to `.lathe/config.toml`"),
        "{text}"
    );
    assert!(text.contains("sensitive path"), "{text}");
    let report = decide(Auto, NONE, NONE, Act::Sh("cat keys/id_rsa"));
    let text = report.to_string();
    assert!(
        text.contains("keys/id_rsa (resolves to /home/u/.ssh/id_rsa)"),
        "{text}"
    );
    assert!(text.contains("SSH keys"), "{text}");
}
