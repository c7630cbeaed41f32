//! The safety layer of the MCP server: the dispatcher's gate (`lathe_runtime::dispatch::Gate`,
//! deciding with `lathe_policy` from the mode, the `[permissions]` rules, sensitive paths and
//! command analysis), one per session, so an "allow for the rest of this session" answer
//! stays with the connection that gave it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lathe_policy::{ApprovalMode, PermissionsConfig};
use lathe_runtime::dispatch::{Gate, Verdict};
use lathe_runtime::{PreparedCall, Session};

use super::approve::Advice;

/// How every session's gate is made.
#[derive(Debug, Clone)]
pub struct GateConfig {
    permissions: PermissionsConfig,
    mode: ApprovalMode,
    root: PathBuf,
    skip_approvals: bool,
}

/// A session's gate, kept in the session.
struct SessionGate(Arc<Gate>);

impl GateConfig {
    /// The configuration, checked: a rule that does not parse is an error now rather than at
    /// the first call.
    pub fn new(
        permissions: PermissionsConfig,
        mode: ApprovalMode,
        root: &Path,
        skip_approvals: bool,
    ) -> anyhow::Result<GateConfig> {
        let config = GateConfig {
            permissions,
            mode,
            root: root.to_path_buf(),
            skip_approvals,
        };
        config.build()?;
        Ok(config)
    }

    /// The approval mode.
    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    fn build(&self) -> anyhow::Result<Gate> {
        Gate::with_permissions(
            &self.permissions,
            self.mode,
            &self.root,
            self.skip_approvals,
        )
        .map_err(lathe_config::config::invalid_permissions)
    }

    /// Gives `session` its own gate.
    pub fn install(&self, session: &Session) -> anyhow::Result<()> {
        let gate = Arc::new(self.build()?);
        let installed = session.extension(move || SessionGate(gate));
        drop(installed);
        Ok(())
    }
}

impl GateConfig {
    /// What would let `call` run without asking: adding `rules` to the allow rules, or a
    /// less careful mode (`auto`, then `full`), each tried on its own.
    pub fn advice(&self, call: &PreparedCall, session: &Session, rules: &[String]) -> Advice {
        let allows = |permissions: &PermissionsConfig, mode: ApprovalMode| {
            Gate::with_permissions(permissions, mode, &self.root, self.skip_approvals)
                .is_ok_and(|gate| gate.check(call, session) == Verdict::Allow)
        };
        let with_rules = !rules.is_empty() && {
            let mut permissions = self.permissions.clone();
            permissions.allow.extend(rules.iter().cloned());
            allows(&permissions, self.mode)
        };
        let mode = [ApprovalMode::Auto, ApprovalMode::Full]
            .into_iter()
            .filter(|m| less_careful(*m, self.mode))
            .find(|m| allows(&self.permissions, *m));
        Advice {
            rules: with_rules,
            mode,
        }
    }
}

fn less_careful(candidate: ApprovalMode, current: ApprovalMode) -> bool {
    let rank = |m: ApprovalMode| ApprovalMode::ALL.iter().position(|x| *x == m);
    rank(candidate) > rank(current)
}

/// The gate of `session`, if [`GateConfig::install`] gave it one.
pub fn of(session: &Session) -> Option<Arc<Gate>> {
    session
        .existing_extension::<SessionGate>()
        .map(|g| Arc::clone(&g.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::{Value, json};

    fn session(dir: &Path) -> Arc<Session> {
        let root = dir.join("ws");
        std::fs::create_dir_all(&root).unwrap();
        let workspace = lathe_runtime::Workspace::new(&root).unwrap();
        Session::new(workspace, Default::default(), dir.join("state")).unwrap()
    }

    fn call(session: &Session, name: &str, arguments: Value) -> PreparedCall {
        lathe_tools::builtin()
            .prepare(name, arguments, session)
            .unwrap_or_else(|out| panic!("{name}: {}", out.text))
    }

    fn shell(session: &Session, command: &str) -> PreparedCall {
        call(session, "shell", json!({"command": command}))
    }

    #[test]
    fn each_session_remembers_its_own_answers() {
        let dir = tempfile::tempdir().unwrap();
        let one = session(&dir.path().join("one"));
        let two = session(&dir.path().join("two"));
        let config = GateConfig::new(
            PermissionsConfig::default(),
            ApprovalMode::Ask,
            one.workspace().root(),
            false,
        )
        .unwrap();
        config.install(&one).unwrap();
        config.install(&two).unwrap();
        let Verdict::Ask { rules, .. } = of(&one)
            .unwrap()
            .check(&shell(&one, "cargo test -p x"), &one)
        else {
            panic!("ask mode asks before a command");
        };
        of(&one).unwrap().allow_for_session(&rules);
        assert_eq!(
            of(&one)
                .unwrap()
                .check(&shell(&one, "cargo test -p x"), &one),
            Verdict::Allow
        );
        assert!(matches!(
            of(&two)
                .unwrap()
                .check(&shell(&two, "cargo test -p x"), &two),
            Verdict::Ask { .. }
        ));
    }

    #[test]
    fn deny_rules_deny_and_bad_rules_fail_early() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let permissions = PermissionsConfig {
            deny: vec!["shell(curl *)".into()],
            ..PermissionsConfig::default()
        };
        let config =
            GateConfig::new(permissions, ApprovalMode::Full, s.workspace().root(), false).unwrap();
        config.install(&s).unwrap();
        assert!(matches!(
            of(&s)
                .unwrap()
                .check(&shell(&s, "ls && curl https://example.invalid"), &s),
            Verdict::Deny { .. }
        ));
        let broken = PermissionsConfig {
            allow: vec!["shell(".into()],
            ..PermissionsConfig::default()
        };
        assert!(GateConfig::new(broken, ApprovalMode::Auto, s.workspace().root(), false).is_err());
    }

    #[test]
    fn advice_only_suggests_what_would_help() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let config = GateConfig::new(
            PermissionsConfig::default(),
            ApprovalMode::Auto,
            s.workspace().root(),
            false,
        )
        .unwrap();
        let advise = |command: &str| {
            let call = shell(&s, command);
            let rules = match of_config(&config, &s).check(&call, &s) {
                Verdict::Ask { rules, .. } => rules,
                other => panic!("{command} should ask, got {other:?}"),
            };
            config.advice(&call, &s, &rules)
        };
        let push = advise("git push --force origin main");
        assert!(push.rules, "{push:?}");
        assert_eq!(push.mode, Some(ApprovalMode::Full));
        let critical = advise("rm -rf ~");
        assert_eq!(
            critical,
            Advice {
                rules: false,
                mode: None
            }
        );
    }

    #[test]
    fn issue_12_a_symlink_to_a_sensitive_path_asks_over_mcp_too() {
        let dir = tempfile::tempdir().unwrap();
        let s = session(dir.path());
        let root = s.workspace().root().to_path_buf();
        std::fs::create_dir_all(root.join(".lathe")).unwrap();
        std::fs::write(root.join(".env"), "TOKEN=x\n").unwrap();
        std::os::unix::fs::symlink(".lathe", root.join("cfg")).unwrap();
        std::os::unix::fs::symlink(".env", root.join("notenv")).unwrap();
        let config = GateConfig::new(
            PermissionsConfig::default(),
            ApprovalMode::Auto,
            &root,
            false,
        )
        .unwrap();
        let gate = of_config(&config, &s);
        for call in [
            call(
                &s,
                "write_file",
                json!({"path": "cfg/config.toml", "content": "x"}),
            ),
            call(&s, "read_file", json!({"path": "notenv"})),
            shell(&s, "cat notenv"),
        ] {
            assert!(
                matches!(gate.check(&call, &s), Verdict::Ask { .. }),
                "{} {}",
                call.name,
                call.arguments
            );
        }
    }

    fn of_config(config: &GateConfig, session: &Session) -> Arc<Gate> {
        config.install(session).unwrap();
        of(session).unwrap()
    }
}
