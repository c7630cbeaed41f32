//! The session's sandbox: built once from the `[shell]` configuration, shared by every command of
//! the session and read by the approval gate, which must know when a command would run outside
//! it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use lathe_exec::sandbox::{PreparedSandbox, SandboxError, SandboxPolicy, SandboxSupport, probe};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ShellConfig, settings};
use crate::session::Session;

/// Setting this environment variable to `1` makes Lathe behave as if Landlock were missing, so
/// the fallback (`sandbox_unavailable`) can be exercised on a machine that has Landlock.
pub const FORCE_UNAVAILABLE_ENV: &str = "LATHE_SANDBOX_FORCE_UNAVAILABLE";

/// What commands do when the sandbox is on but Landlock is missing (`sandbox_unavailable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UnavailableMode {
    /// Every command needs the user's approval, as if it asked for `sandbox: false` (the
    /// default).
    #[default]
    Ask,
    /// Commands run unsandboxed without asking; their header says "not sandboxed".
    Run,
}

/// How the session's commands relate to the sandbox.
#[derive(Debug, Clone)]
pub enum SandboxStatus {
    /// Commands run in this sandbox unless a call asks for `sandbox: false`.
    Active(PreparedSandbox),
    /// The configuration turns the sandbox off (`sandbox = false`).
    Off,
    /// The sandbox is on but Landlock cannot be used here.
    Unavailable {
        /// Why, for the person.
        message: String,
        /// What commands do about it.
        mode: UnavailableMode,
    },
    /// Landlock works but the ruleset could not be built; sandboxed commands refuse to run.
    Failed(String),
}

/// The session's sandbox and whether its notice was given.
pub struct SessionSandbox {
    /// How the session's commands relate to the sandbox.
    pub status: SandboxStatus,
    /// Said once, with the first command result, then never again in the session.
    notice: Option<String>,
    noticed: AtomicBool,
}

impl SessionSandbox {
    fn new(session: &Session, config: &ShellConfig) -> Self {
        if !config.sandbox {
            return SessionSandbox::with(SandboxStatus::Off, None);
        }
        if std::env::var_os(FORCE_UNAVAILABLE_ENV).is_some_and(|v| v == "1") {
            let forced = format!(" ({FORCE_UNAVAILABLE_ENV}=1)");
            return SessionSandbox::build(session, config, SandboxSupport::NotImplemented, &forced);
        }
        SessionSandbox::build(session, config, probe(), "")
    }

    /// The sandbox for `config` on a system with `support`; `cause` is appended to the message
    /// when Landlock is unavailable.
    fn build(
        session: &Session,
        config: &ShellConfig,
        support: SandboxSupport,
        cause: &str,
    ) -> Self {
        let mut policy = SandboxPolicy::new(session.workspace().root(), session.state_dir());
        for path in &config.sandbox_write_paths {
            policy = policy.with_write_path(path);
        }
        policy.network = config.sandbox_network;
        policy.keep_env = config.keep_env.clone();
        let prepared = if support.is_available() {
            PreparedSandbox::prepare(&policy)
        } else {
            Err(SandboxError::Unavailable(support))
        };
        match prepared {
            Ok(sandbox) => {
                let mut notes = Vec::new();
                if !sandbox.enforcement().is_complete()
                    && let Some(message) = support.message()
                {
                    notes.push(message);
                }
                for skipped in sandbox.skipped_paths() {
                    notes.push(format!(
                        "sandbox write path '{}' is left out ({}): writes there are denied",
                        skipped.path.display(),
                        skipped.reason
                    ));
                }
                let notice = (!notes.is_empty()).then(|| notes.join("; "));
                SessionSandbox::with(SandboxStatus::Active(sandbox), notice)
            }
            Err(SandboxError::Unavailable(support)) => {
                let mut message = support
                    .message()
                    .unwrap_or_else(|| "landlock is unavailable".to_owned());
                message.push_str(cause);
                let notice = match config.sandbox_unavailable {
                    UnavailableMode::Ask => format!(
                        "{message}; every command needs the user's approval while the sandbox is \
                         unavailable (`sandbox_unavailable = \"run\"` in [shell] runs them unsandboxed)"
                    ),
                    UnavailableMode::Run => format!(
                        "{message}; commands run unsandboxed (`sandbox_unavailable = \"run\"` in [shell])"
                    ),
                };
                SessionSandbox::with(
                    SandboxStatus::Unavailable {
                        message,
                        mode: config.sandbox_unavailable,
                    },
                    Some(notice),
                )
            }
            Err(error) => SessionSandbox::with(SandboxStatus::Failed(error.to_string()), None),
        }
    }

    /// The person hears of a notice as soon as the sandbox is set up (the first command or the
    /// first approval check of the session), the model with its first command result.
    fn with(status: SandboxStatus, notice: Option<String>) -> Self {
        if let Some(notice) = &notice {
            tracing::warn!("{notice}");
        }
        SessionSandbox {
            status,
            notice,
            noticed: AtomicBool::new(false),
        }
    }

    /// The notice about the sandbox the first time it is asked for in the session; `None`
    /// afterwards or when there is nothing to say.
    pub fn take_notice(&self) -> Option<&str> {
        let notice = self.notice.as_deref()?;
        if self.noticed.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(notice)
    }
}

/// The session's sandbox, built from its `[shell]` configuration on first use.
pub fn session_sandbox(session: &Session) -> Arc<SessionSandbox> {
    if let Some(sandbox) = session.existing_extension::<SessionSandbox>() {
        return sandbox;
    }
    let config = settings(session);
    session.extension(|| SessionSandbox::new(session, &config))
}

/// How the session's commands relate to the sandbox.
pub fn sandbox_status(session: &Session) -> SandboxStatus {
    session_sandbox(session).status.clone()
}

/// Whether commands of the session run in the sandbox by default (a call may still ask for
/// `sandbox: false`).
pub fn sandbox_active(session: &Session) -> bool {
    matches!(session_sandbox(session).status, SandboxStatus::Active(_))
}

/// Whether a `shell` call with these (normalised) arguments would run outside the sandbox
/// without the configuration having chosen that: it asks for `sandbox: false` while the sandbox
/// is on, or the sandbox is unavailable and `sandbox_unavailable` is `ask`. Such a call always
/// needs the user's approval. A sandbox turned off in the configuration, or `run` when it is
/// unavailable, is the user's choice and needs nothing more.
pub fn runs_outside_sandbox_unchosen(session: &Session, arguments: &Value) -> bool {
    let opted_out = arguments.get("sandbox").and_then(Value::as_bool) == Some(false);
    outside_sandbox_unchosen(session, !opted_out)
}

/// [`runs_outside_sandbox_unchosen`] for a call that asked for the sandbox (`sandbox: true`,
/// the default) or not.
pub fn outside_sandbox_unchosen(session: &Session, sandbox_requested: bool) -> bool {
    let opted_out = !sandbox_requested;
    match &session_sandbox(session).status {
        SandboxStatus::Active(_) | SandboxStatus::Failed(_) => opted_out,
        SandboxStatus::Off => false,
        SandboxStatus::Unavailable { mode, .. } => *mode == UnavailableMode::Ask,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolConfig, Workspace};
    use serde_json::json;

    fn session() -> (tempfile::TempDir, Arc<Session>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let session = Session::new(
            Workspace::new(dir.path().join("ws")).unwrap(),
            ToolConfig::default(),
            dir.path().join("state"),
        )
        .unwrap();
        (dir, session)
    }

    #[test]
    fn unavailable_landlock_is_said_once_and_asks_or_runs_as_configured() {
        let (_dir, session) = session();
        let ask = SessionSandbox::build(
            &session,
            &ShellConfig::default(),
            SandboxSupport::NotEnabled,
            "",
        );
        let SandboxStatus::Unavailable { message, mode } = &ask.status else {
            panic!("{:?}", ask.status);
        };
        assert_eq!(*mode, UnavailableMode::Ask);
        assert!(message.contains("lsm="), "{message}");
        let notice = ask.take_notice().unwrap();
        assert!(notice.contains("needs the user's approval"), "{notice}");
        assert_eq!(ask.take_notice(), None, "said once");
        let run = SessionSandbox::build(
            &session,
            &ShellConfig {
                sandbox_unavailable: UnavailableMode::Run,
                ..ShellConfig::default()
            },
            SandboxSupport::Denied { errno: libc::EPERM },
            "",
        );
        assert!(run.take_notice().unwrap().contains("run unsandboxed"));
    }

    #[test]
    fn calls_outside_the_sandbox_are_flagged_unless_the_configuration_chose_it() {
        let (_dir, session) = session();
        if !probe().is_available() {
            eprintln!("skipping: landlock is not available here");
            return;
        }
        assert!(sandbox_active(&session));
        assert!(runs_outside_sandbox_unchosen(
            &session,
            &json!({"command": "ls", "sandbox": false})
        ));
        assert!(!runs_outside_sandbox_unchosen(
            &session,
            &json!({"command": "ls"})
        ));
        let (_dir2, off) = self::session();
        assert!(super::super::configure(
            &off,
            ShellConfig {
                sandbox: false,
                ..ShellConfig::default()
            }
        ));
        assert!(!sandbox_active(&off));
        assert!(!runs_outside_sandbox_unchosen(
            &off,
            &json!({"command": "ls", "sandbox": false})
        ));
    }

    #[test]
    fn a_session_without_landlock_in_ask_mode_flags_every_call() {
        let (_dir, session) = session();
        session.extension(|| {
            SessionSandbox::build(
                &session,
                &ShellConfig::default(),
                SandboxSupport::NotImplemented,
                "",
            )
        });
        assert!(!sandbox_active(&session));
        assert!(runs_outside_sandbox_unchosen(
            &session,
            &json!({"command": "ls"})
        ));
    }
}
