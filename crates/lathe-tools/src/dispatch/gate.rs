//! The gate: for each call, run it, refuse it, or ask — decided by `lathe_policy` from the
//! approval mode, the `[permissions]` rules, sensitive paths and command analysis, plus what the
//! user allowed for the rest of the session. The gate judges the effects the tool itself named
//! for this input ([`Tool::effects`](crate::Tool::effects)); it knows no tool by name.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use lathe_policy::{
    Action, AnalysisContext, ApprovalMode, Decision, DecisionReport, FileTarget, PermissionsConfig,
    Policy, PolicyError, Sandbox, Severity, remember_rule,
};

use crate::registry::PreparedCall;
use crate::session::Session;
use crate::tool::Effect;
use crate::workspace::Access;

/// What the gate says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the approver.
    Ask {
        /// Why it asks, for the person answering.
        reasons: Vec<String>,
        /// The permission rules "always" would remember for the session
        /// (`shell(npm run test *)`); empty when the call cannot be remembered (a critical
        /// command, a command outside the sandbox).
        rules: Vec<String>,
    },
    /// Do not run it; the model reads `reason`.
    Deny {
        /// What to tell the model, including how the user could allow it.
        reason: String,
    },
}

struct State {
    permissions: PermissionsConfig,
    remembered: Vec<String>,
    mode: ApprovalMode,
    skip_approvals: bool,
    ctx: AnalysisContext,
    policy: Policy,
}

impl State {
    fn rebuild(&mut self) -> Result<(), PolicyError> {
        let mut permissions = self.permissions.clone();
        permissions.allow.extend(self.remembered.iter().cloned());
        self.policy = Policy::new(&permissions, self.mode, self.ctx.clone())?
            .dangerously_skip_approvals(self.skip_approvals);
        Ok(())
    }
}

/// Decides which calls run. Shared by the runner and whoever switches modes (`/approval`).
pub struct Gate {
    state: Mutex<State>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Gate")
            .field("mode", &state.mode)
            .field("remembered", &state.remembered)
            .finish_non_exhaustive()
    }
}

/// The home directory the command analysis compares paths with (`$HOME`, or `/` when it is
/// unset or empty). `lathe policy check` uses it too, so that it decides as the gate does.
pub fn analysis_home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

impl Gate {
    /// A gate in `mode` for the workspace at `root`, with no permission rules beyond the
    /// defaults (sensitive paths).
    pub fn new(mode: ApprovalMode, root: &Path) -> Self {
        Gate::with_permissions(&PermissionsConfig::default(), mode, root, false)
            .expect("the default permissions are valid")
    }

    /// A gate with the `[permissions]` rules of the configuration. With `skip_approvals`
    /// (`--dangerously-skip-approvals`), nothing asks; deny rules and read-only still deny.
    ///
    /// Fails on a rule or sensitive-path pattern that does not parse.
    pub fn with_permissions(
        permissions: &PermissionsConfig,
        mode: ApprovalMode,
        root: &Path,
        skip_approvals: bool,
    ) -> Result<Self, PolicyError> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        // Paths commands name are judged where they lead as well as by their text.
        let ctx = AnalysisContext::new(root, analysis_home())
            .with_resolver(crate::workspace::link_resolver());
        let policy =
            Policy::new(permissions, mode, ctx.clone())?.dangerously_skip_approvals(skip_approvals);
        Ok(Gate {
            state: Mutex::new(State {
                permissions: permissions.clone(),
                remembered: Vec::new(),
                mode,
                skip_approvals,
                ctx,
                policy,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current mode.
    pub fn mode(&self) -> ApprovalMode {
        self.lock().mode
    }

    /// Switches the mode (`/approval MODE` in chat). What was allowed for the session stays.
    pub fn set_mode(&self, mode: ApprovalMode) {
        let mut state = self.lock();
        let previous = state.mode;
        state.mode = mode;
        if let Err(err) = state.rebuild() {
            tracing::warn!("cannot switch to {mode}: {err}");
            state.mode = previous;
        }
    }

    /// A new gate with this one's permission rules and what was allowed for the session so
    /// far, in `mode` (a sub-agent's gate: read-only for one that only explores). Later
    /// changes to either gate do not reach the other.
    pub fn with_mode(&self, mode: ApprovalMode) -> Gate {
        let state = self.lock();
        let mut copy = State {
            permissions: state.permissions.clone(),
            remembered: state.remembered.clone(),
            mode,
            skip_approvals: state.skip_approvals,
            ctx: state.ctx.clone(),
            policy: state.policy.clone(),
        };
        if let Err(err) = copy.rebuild() {
            // The rules parsed once; a failure here keeps the copy in the original's mode.
            tracing::warn!("cannot make a gate in {mode}: {err}");
            copy.mode = state.mode;
        }
        Gate {
            state: Mutex::new(copy),
        }
    }

    /// Remembers "always" answers: `rules` are allowed for the rest of the session.
    pub fn allow_for_session(&self, rules: &[String]) {
        let mut state = self.lock();
        let before = state.remembered.len();
        for rule in rules {
            if !state.remembered.contains(rule) {
                state.remembered.push(rule.clone());
            }
        }
        if let Err(err) = state.rebuild() {
            tracing::warn!("cannot remember {rules:?}: {err}");
            state.remembered.truncate(before);
        }
    }

    /// The verdict on `call` in `session`: every effect is judged; any denial denies, else
    /// any question asks (with the rules "always" would remember for all of them), else the
    /// call runs. A call that names no effect is judged as unknown.
    ///
    /// "Always" is offered only when the rules it would remember cover no more than what was
    /// asked: never for a critical effect or a command outside the sandbox, and not for a
    /// `tool(NAME)` rule (the network, an unknown effect) of a call that also reads, writes or
    /// runs something, since that rule would allow all of the tool's reads, writes and commands
    /// from then on, sensitive paths included.
    pub fn check(&self, call: &PreparedCall, session: &Session) -> Verdict {
        let state = self.lock();
        let unknown = [Effect::Unknown {
            what: format!("`{}` named no effect", call.name),
        }];
        let effects = if call.effects.is_empty() {
            &unknown[..]
        } else {
            &call.effects[..]
        };
        let concrete = effects.iter().any(|e| {
            matches!(
                e,
                Effect::Read { .. }
                    | Effect::Write { .. }
                    | Effect::Edit { .. }
                    | Effect::Command { .. }
            )
        });
        let mut asks: Vec<String> = Vec::new();
        let mut rules: Vec<String> = Vec::new();
        let mut rememberable = true;
        for effect in effects {
            let action = action(&call.name, effect, session, &state.ctx);
            let report = state.policy.decide_for_tool(&call.name, &action);
            match report.decision {
                Decision::Allow => {}
                Decision::Deny => {
                    return Verdict::Deny {
                        reason: reasons(&report, Decision::Deny).join("; "),
                    };
                }
                Decision::Ask => {
                    for reason in reasons(&report, Decision::Ask) {
                        if !asks.contains(&reason) {
                            asks.push(reason);
                        }
                    }
                    if report.severity == Severity::Critical {
                        rememberable = false;
                    }
                    for rule in session_rules(&call.name, &action, &state.ctx) {
                        if !rules.contains(&rule) {
                            rules.push(rule);
                        }
                    }
                    match action {
                        // Each memory change is asked about on its own.
                        Action::Memory { .. } => rememberable = false,
                        // A command outside the sandbox is never remembered.
                        Action::Shell {
                            sandbox: Sandbox::Disabled,
                            ..
                        } => rememberable = false,
                        // `tool(NAME)` would also allow the concrete effects it was not asked
                        // about.
                        Action::Tool { .. } | Action::Network { .. } | Action::Unknown { .. }
                            if concrete =>
                        {
                            rememberable = false;
                        }
                        _ => {}
                    }
                }
            }
        }
        if asks.is_empty() {
            return Verdict::Allow;
        }
        Verdict::Ask {
            reasons: asks,
            rules: if rememberable { rules } else { Vec::new() },
        }
    }

    /// Whether `call` changes the project's memory (`update_memory`, or a write of the memory
    /// file): when nobody can be asked, the model reads how the user can change the memory.
    pub fn changes_memory(&self, call: &PreparedCall, session: &Session) -> bool {
        call.effects.iter().any(|effect| match effect {
            Effect::Memory { .. } => true,
            Effect::Write { path } | Effect::Edit { path } => is_memory_file(path, session),
            _ => false,
        })
    }

    /// Whether a command only reads (is `safe`), as the analysis judges it in this workspace.
    pub fn command_only_reads(&self, command: &str) -> bool {
        let state = self.lock();
        lathe_policy::analyze(command, &state.ctx).severity == Severity::Safe
    }
}

/// The reasons of a report's parts that came to `wanted` (or the report's own reasons).
fn reasons(report: &DecisionReport, wanted: Decision) -> Vec<String> {
    let lines: Vec<String> = report
        .parts
        .iter()
        .filter(|p| p.decision == wanted)
        .flat_map(|p| p.reasons.iter().map(move |r| format!("{}: {r}", p.subject)))
        .collect();
    if lines.is_empty() {
        report.reasons.clone()
    } else {
        lines
    }
}

/// One effect of a call by `tool`, as the policy judges it.
fn action(tool: &str, effect: &Effect, session: &Session, ctx: &AnalysisContext) -> Action {
    // File paths reach the policy only through the workspace's resolution: judged as given
    // and as they resolve through symlinks (`cfg/config.toml` with `cfg -> .lathe`).
    let change = |path: &str| {
        (
            session.workspace().target(path),
            session.workspace().resolve(path, Access::Write).is_ok(),
        )
    };
    // The memory file changes only when the user says so, whichever tool writes it.
    if let Effect::Write { path } | Effect::Edit { path } = effect
        && is_memory_file(path, session)
    {
        return Action::Memory {
            path: session.workspace().target(path),
        };
    }
    match effect {
        Effect::Read { path } => Action::Read {
            path: session.workspace().target(path),
        },
        Effect::Write { path } => {
            let (path, inside_workspace) = change(path);
            Action::Write {
                path,
                inside_workspace,
            }
        }
        Effect::Edit { path } => {
            let (path, inside_workspace) = change(path);
            Action::Edit {
                path,
                inside_workspace,
            }
        }
        Effect::Command {
            command,
            cwd,
            outside_sandbox,
        } => {
            let mut ctx = ctx.clone().with_writable_root(session.state_dir());
            if let Some(cwd) = cwd.as_deref().filter(|c| !c.trim().is_empty()) {
                ctx = ctx.with_cwd(cwd);
            }
            // Outside the sandbox without the configuration having chosen it: always asks.
            Action::Shell {
                analysis: lathe_policy::analyze(command, &ctx),
                sandbox: if *outside_sandbox {
                    Sandbox::Disabled
                } else {
                    Sandbox::Enabled
                },
            }
        }
        Effect::Network { host } => Action::Network {
            tool: tool.to_owned(),
            host: host.clone(),
        },
        Effect::Fetch { host } => Action::Fetch {
            tool: tool.to_owned(),
            host: host.clone(),
        },
        // The session's own state (its commands, its plan): the tool said so for this input.
        Effect::OwnState { .. } => Action::Tool {
            name: tool.to_owned(),
            read_only: true,
        },
        Effect::Memory { path } => Action::Memory {
            path: session.workspace().target(path),
        },
        Effect::Unknown { what } => Action::Unknown {
            tool: tool.to_owned(),
            what: what.clone(),
        },
    }
}

/// Whether `path` is the session's memory file (where both resolve to).
fn is_memory_file(path: &str, session: &Session) -> bool {
    let workspace = session.workspace();
    let memory = crate::tools::update_memory::memory_path(session);
    match (
        workspace.resolve(path, Access::Write),
        workspace.resolve(&memory, Access::Write),
    ) {
        (Ok(given), Ok(memory)) => given.abs() == memory.abs(),
        _ => false,
    }
}

/// The rules "always" remembers: program and subcommand of each command of a command line, the
/// file of a read or change (and the file a symlink leads to), the tool otherwise.
fn session_rules(tool: &str, action: &Action, ctx: &AnalysisContext) -> Vec<String> {
    let file = |verb: &str, target: &FileTarget| -> Vec<String> {
        std::iter::once(target.given().to_owned())
            .chain(target.redirected(ctx))
            .map(|path| format!("{verb}({path})"))
            .collect()
    };
    match action {
        Action::Shell { analysis, .. } => {
            let mut rules: Vec<String> = Vec::new();
            for rule in analysis.commands.iter().map(remember_rule) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            rules
        }
        Action::Read { path } => file("read", path),
        Action::Write { path, .. } | Action::Edit { path, .. } => file("edit", path),
        Action::Tool { .. } | Action::Network { .. } | Action::Unknown { .. } => {
            vec![format!("tool({tool})")]
        }
        // "Always for this host".
        Action::Fetch { host, .. } => vec![format!("fetch({host})")],
        // Never remembered: every memory change asks.
        Action::Memory { .. } => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ToolKind;
    use crate::tools::shell::{self, ShellConfig, UnavailableMode};
    use serde_json::{Value, json};

    struct Fixture {
        _dir: tempfile::TempDir,
        session: std::sync::Arc<Session>,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let workspace = crate::Workspace::new(&root).unwrap();
        let session =
            Session::new(workspace, Default::default(), dir.path().join("state")).unwrap();
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
            crate::Workspace::new(off.session.workspace().root()).unwrap(),
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
        crate::Registry::builtin()
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
}
