//! The session's command supervisor: one `lathe-exec` supervisor per session, built on first use
//! from the `[shell]` configuration, and the session's sandbox (`sandbox`). The `shell`,
//! `command_output`, `list_commands` and `kill_command` tools share it; `lathe mcp` lists its
//! commands as resources; the gate asks the sandbox whether a command would run outside it.

mod sandbox;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use lathe_exec::{PreviewBudget, Supervisor};
use serde::{Deserialize, Serialize};

use crate::session::Session;

pub use sandbox::{
    FORCE_UNAVAILABLE_ENV, SandboxStatus, SessionSandbox, UnavailableMode,
    outside_sandbox_unchosen, runs_outside_sandbox_unchosen, sandbox_active, sandbox_status,
    session_sandbox,
};

/// Configuration of command execution, for the `[shell]` part of the configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShellConfig {
    /// Hard limit in seconds after which a command is killed. By default, none.
    pub command_timeout: Option<u64>,
    /// Command prefixes (whole words, e.g. `cargo build`) exempt from the hard limit.
    pub command_timeout_exempt: Vec<String>,
    /// How much output a result shows: `small`, `medium` (about 10 KB, the default), `large`.
    pub preview: PreviewBudget,
    /// Bytes kept per command artifact; past it bytes are counted, not kept. By default, 1 GiB.
    pub artifact_cap: u64,
    /// Commands running at once. By default, 16.
    pub max_running: usize,
    /// Environment variables to pass anyway, by exact name: secret-looking ones (`*KEY*`,
    /// `*TOKEN*`, a URL with a password, ...) and, to sandboxed commands, daemon-control ones
    /// (`SSH_AUTH_SOCK`, `TMUX`, ...; see `lathe_exec::env`).
    pub keep_env: Vec<String>,
    /// Run commands in the Landlock sandbox: writes only inside the workspace, the session's
    /// state (temporary) directory, `/tmp`, `/var/tmp`, `/dev/shm` and `/dev/null` plus
    /// `sandbox_write_paths`; reads unrestricted. By default, on.
    pub sandbox: bool,
    /// Extra absolute paths (directories or files) sandboxed commands may write. By default,
    /// none.
    pub sandbox_write_paths: Vec<PathBuf>,
    /// Whether sandboxed commands may use the network (TCP, and UDP from Landlock ABI 10). By
    /// default, no.
    pub sandbox_network: bool,
    /// What commands do when the sandbox is on but Landlock is missing: `ask` (every command
    /// needs the user's approval) or `run` (they run unsandboxed). By default, `ask`.
    pub sandbox_unavailable: UnavailableMode,
    /// When the guard that kills the commands if Lathe is SIGKILLed starts: with the first
    /// command (`None`, the default), or that long after it (one-shot `lathe tool` calls).
    /// Not a configuration key: set by the program.
    #[serde(skip)]
    pub guard_delay: Option<Duration>,
}

impl Default for ShellConfig {
    fn default() -> Self {
        ShellConfig {
            command_timeout: None,
            command_timeout_exempt: Vec::new(),
            preview: PreviewBudget::default(),
            artifact_cap: lathe_exec::DEFAULT_ARTIFACT_CAP,
            max_running: lathe_exec::DEFAULT_MAX_RUNNING,
            keep_env: Vec::new(),
            sandbox: true,
            sandbox_write_paths: Vec::new(),
            sandbox_network: false,
            sandbox_unavailable: UnavailableMode::default(),
            guard_delay: None,
        }
    }
}

/// The session's commands: one supervisor per session, created on first use.
pub struct Commands {
    supervisor: Result<Supervisor, String>,
    hooked: AtomicBool,
}

impl Commands {
    fn new(session: &Session, config: &ShellConfig) -> Self {
        let supervisor = Supervisor::builder(session.state_dir())
            .preview_budget(config.preview)
            .artifact_cap(config.artifact_cap)
            .command_timeout(config.command_timeout.map(Duration::from_secs))
            .timeout_exempt(config.command_timeout_exempt.clone())
            .max_running(config.max_running)
            .keep_env(config.keep_env.clone())
            .guard_delay(config.guard_delay)
            .build()
            .map_err(|e| e.to_string());
        Commands {
            supervisor,
            hooked: AtomicBool::new(false),
        }
    }

    /// The supervisor, or why it could not be created (the model-facing text).
    pub fn supervisor(&self) -> Result<&Supervisor, String> {
        self.supervisor
            .as_ref()
            .map_err(|e| format!("commands cannot run in this session: {e}"))
    }
}

/// The `[shell]` configuration a session was given.
struct Settings(ShellConfig);

/// Sets the configuration of command execution (and of the sandbox) for `session`; what it
/// sets up is built on first use. Returns `false` (and changes nothing) when the session was
/// already configured or already used the default configuration.
pub fn configure(session: &Session, config: ShellConfig) -> bool {
    if session.existing_extension::<Commands>().is_some()
        || session.existing_extension::<SessionSandbox>().is_some()
    {
        return false;
    }
    let mut applied = false;
    session.extension(|| {
        applied = true;
        Settings(config)
    });
    applied
}

/// The session's configuration: what `configure` set, else the defaults.
fn settings(session: &Session) -> ShellConfig {
    session
        .existing_extension::<Settings>()
        .map(|settings| settings.0.clone())
        .unwrap_or_default()
}

/// The session's commands, created from its configuration on first use.
pub fn commands(session: &Session) -> Arc<Commands> {
    let commands = match session.existing_extension::<Commands>() {
        Some(commands) => commands,
        None => {
            let config = settings(session);
            session.extension(|| Commands::new(session, &config))
        }
    };
    hook_shutdown(session, &commands);
    commands
}

/// Kills every command of the session when it ends.
fn hook_shutdown(session: &Session, commands: &Arc<Commands>) {
    if commands.hooked.swap(true, Ordering::SeqCst) {
        return;
    }
    let weak: Weak<Commands> = Arc::downgrade(commands);
    session.on_shutdown(move || {
        if let Some(commands) = weak.upgrade()
            && let Ok(supervisor) = &commands.supervisor
        {
            supervisor.shutdown_blocking();
        }
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn config_reads_from_toml_shapes() {
        let config: ShellConfig = serde_json::from_value(json!({
            "command_timeout": 600,
            "command_timeout_exempt": ["cargo build"],
            "preview": "large",
            "keep_env": ["GITHUB_TOKEN"]
        }))
        .unwrap();
        assert_eq!(config.command_timeout, Some(600));
        assert_eq!(config.preview, PreviewBudget::Large);
        assert_eq!(config.max_running, 16);
        assert!(serde_json::from_value::<ShellConfig>(json!({"comand_timeout": 1})).is_err());
    }
}
