//! Building a [`Supervisor`]: settings, the shell, the environment.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::config::{Config, PreviewBudget};
use crate::error::ExecError;
use crate::procfs;
use crate::supervisor::Supervisor;
use crate::tree;

/// Builds a [`Supervisor`].
#[derive(Debug, Clone)]
pub struct SupervisorBuilder {
    config: Config,
}

impl SupervisorBuilder {
    /// A supervisor keeping its artifacts (`cmd-<id>`) in `state_dir`, created if missing.
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        SupervisorBuilder {
            config: Config::new(state_dir.into()),
        }
    }

    /// How much output the result shows. By default, medium (about 10 KB).
    pub fn preview_budget(mut self, budget: PreviewBudget) -> Self {
        self.config.budget = budget;
        self
    }

    /// The most bytes kept per artifact; past it bytes are counted, not kept. By default, 1 GiB.
    pub fn artifact_cap(mut self, bytes: u64) -> Self {
        self.config.artifact_cap = bytes;
        self
    }

    /// The hard limit after which a command is killed. By default, none.
    pub fn command_timeout(mut self, limit: Option<Duration>) -> Self {
        self.config.command_timeout = limit;
        self
    }

    /// Command prefixes (whole words) exempt from the hard limit. By default, none.
    pub fn timeout_exempt(mut self, prefixes: Vec<String>) -> Self {
        self.config.timeout_exempt = prefixes;
        self
    }

    /// The most commands running at once. By default, 16.
    pub fn max_running(mut self, limit: usize) -> Self {
        self.config.max_running = limit.max(1);
        self
    }

    /// Secret-looking variables to pass to commands anyway (exact names). By default, none.
    pub fn keep_env(mut self, names: Vec<String>) -> Self {
        self.config.keep_env = names;
        self
    }

    /// When the guard (the process that kills the commands if this process is SIGKILLed)
    /// starts. By default (`None`), before the first command runs (a fork that never execs:
    /// cheap, once per supervisor). A delay instead means a session that ends sooner starts no
    /// guard, at the price of commands unguarded for that long.
    pub fn guard_delay(mut self, delay: Option<Duration>) -> Self {
        self.config.guard_delay = delay;
        self
    }

    /// Time between SIGTERM and SIGKILL. By default, 2 s.
    pub fn kill_grace(mut self, grace: Duration) -> Self {
        self.config.kill_grace = grace;
        self
    }

    /// The environment commands start from (secrets are still removed and the agent settings
    /// still applied). By default, this process's environment when the supervisor is built.
    pub fn base_env(mut self, vars: Vec<(OsString, OsString)>) -> Self {
        self.config.base_env = Some(vars);
        self
    }

    /// The shell run as `SHELL -c COMMAND`. By default, `bash` from `PATH`, or `sh` where bash
    /// is missing.
    pub fn shell(mut self, shell: impl Into<PathBuf>) -> Self {
        self.config.shell = Some(shell.into());
        self
    }

    /// Creates the state directory and the supervisor. Makes this process a child subreaper
    /// (see the `tree` module) so no descendant of a command can escape.
    pub fn build(self) -> Result<Supervisor, ExecError> {
        let config = self.config;
        let state_error = |source| ExecError::StateDir {
            path: config.state_dir.clone(),
            source,
        };
        std::fs::create_dir_all(&config.state_dir).map_err(state_error)?;
        // Ids continue after artifacts already there (a resumed session), never overwriting.
        let last_id = std::fs::read_dir(&config.state_dir)
            .map_err(state_error)?
            .filter_map(|e| {
                e.ok()?
                    .file_name()
                    .to_str()?
                    .strip_prefix("cmd-")?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        tree::ensure_subreaper();
        tree::supervisor_started();
        let shell = config.shell.clone().unwrap_or_else(|| {
            find_shell(&std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        });
        let base_env = match &config.base_env {
            Some(vars) => vars.clone(),
            None => std::env::vars_os().collect(),
        };
        let env = crate::env::prepare_env(base_env, &config.keep_env);
        Ok(Supervisor {
            shell,
            env,
            tag_name: format!("LATHE_CMD_{:016x}", nonce()),
            not_before: procfs::self_starttime(),
            commands: Mutex::new(BTreeMap::new()),
            next_id: AtomicU64::new(last_id + 1),
            guard: Mutex::new(None),
            shut_down: AtomicBool::new(false),
            piped_started: AtomicBool::new(false),
            config,
        })
    }
}

/// `bash` from `path`, else `sh`, else `/bin/sh`.
fn find_shell(path: &std::ffi::OsStr) -> PathBuf {
    let find = |name: &str| {
        std::env::split_paths(path)
            .map(|dir| dir.join(name))
            .find(|candidate| {
                use std::os::unix::fs::PermissionsExt;
                std::fs::metadata(candidate)
                    .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
    };
    find("bash")
        .or_else(|| find("sh"))
        .unwrap_or_else(|| PathBuf::from("/bin/sh"))
}

fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn shell_is_bash_else_sh() {
        let dir = tempfile::tempdir().unwrap();
        let with_bash = dir.path().join("a");
        let only_sh = dir.path().join("b");
        for (folder, names) in [(&with_bash, &["bash", "sh"][..]), (&only_sh, &["sh"][..])] {
            std::fs::create_dir(folder).unwrap();
            for name in names {
                let file = folder.join(name);
                std::fs::write(&file, "").unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        // A non-executable bash is skipped.
        std::fs::write(only_sh.join("bash"), "").unwrap();
        let path = std::env::join_paths([&only_sh, &with_bash]).unwrap();
        assert_eq!(find_shell(&path), with_bash.join("bash"));
        assert_eq!(find_shell(only_sh.as_os_str()), only_sh.join("sh"));
        assert_eq!(
            find_shell(std::ffi::OsStr::new("/nonexistent")),
            PathBuf::from("/bin/sh")
        );
    }
}
