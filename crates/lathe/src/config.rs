//! Configuration: `.lathe/config.toml` in the workspace over `~/.config/lathe/config.toml` over
//! the defaults, and a `--config FILE` over both. Environment variables and flags are applied on
//! top by the commands that read them.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use lathe_tools::ToolConfig;
use lathe_tools::tools::shell::ShellConfig;

/// The error for `[permissions]` rules or sensitive-path patterns that do not parse, the same
/// wherever the configuration is turned into a policy or a gate.
pub fn invalid_permissions(err: lathe_policy::PolicyError) -> anyhow::Error {
    anyhow::anyhow!("invalid [permissions] in the configuration: {err}")
}

/// The whole configuration file.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The tool runtime.
    pub tools: ToolConfig,
    /// The model server and model (`lathe exec`, `lathe chat`).
    pub model: crate::agent_setup::ModelConfig,
    /// The agent loop: approval mode, turn limit.
    pub agent: crate::agent_setup::AgentConfig,
    /// Permission rules and sensitive paths (`allow`, `ask`, `deny`, `sensitive_paths`).
    pub permissions: lathe_policy::PermissionsConfig,
    /// Command execution and its sandbox. Keys, with their defaults:
    /// `sandbox = true` (Landlock: writes only inside the workspace, the session's temporary
    /// directory, `/tmp`, `/var/tmp`, `/dev/shm` and `/dev/null`), `sandbox_write_paths = []`
    /// (extra absolute paths
    /// commands may write; `~/` is the home directory), `sandbox_network = false` (`true` lets
    /// sandboxed commands use the network), `sandbox_unavailable = "ask"` (where Landlock is
    /// missing every command asks; `"run"` runs them unsandboxed), `command_timeout` (none),
    /// `command_timeout_exempt = []`, `preview = "medium"`, `max_running = 16`, `keep_env = []`.
    pub shell: ShellConfig,
    /// `lathe mcp`: `session_timeout` (seconds without traffic before an idle HTTP session
    /// ends; 0 never; `--session-timeout` overrides it).
    pub mcp: crate::mcp::McpConfig,
}

impl Config {
    /// Checks what the types cannot: `sandbox_write_paths` must be absolute (`~/` expands to
    /// the home directory).
    fn resolve(mut self) -> anyhow::Result<Config> {
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from);
        for path in &mut self.shell.sandbox_write_paths {
            if let (Ok(rest), Some(home)) = (path.strip_prefix("~"), &home) {
                *path = home.join(rest);
            }
            if !path.is_absolute() {
                anyhow::bail!(
                    "invalid configuration: [shell] sandbox_write_paths entry '{}' is not absolute (give a full path such as /opt/cache or ~/.cache)",
                    path.display()
                );
            }
        }
        Ok(self)
    }
}

/// The files read, lowest precedence first.
pub fn files(workspace: &Path, explicit: Option<&Path>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    if let Some(dir) = crate::state::config_dir() {
        files.push(dir.join("config.toml"));
    }
    files.push(workspace.join(".lathe").join("config.toml"));
    if let Some(explicit) = explicit {
        files.push(explicit.to_path_buf());
    }
    files
}

/// Loads and merges the configuration files for `workspace`.
pub fn load(workspace: &Path, explicit: Option<&Path>) -> anyhow::Result<Config> {
    let mut merged = toml::Table::new();
    for path in files(workspace, explicit) {
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err)
                if err.kind() == std::io::ErrorKind::NotFound
                    && Some(path.as_path()) != explicit =>
            {
                continue;
            }
            Err(err) => {
                return Err(err)
                    .with_context(|| format!("cannot read config file {}", path.display()));
            }
        };
        let table: toml::Table = toml::from_str(&text)
            .with_context(|| format!("invalid config file {}", path.display()))?;
        merge(&mut merged, table);
    }
    Config::deserialize(toml::Value::Table(merged))
        .context("invalid configuration")?
        .resolve()
}

/// Merges `over` into `base`: tables merge key by key, anything else replaces.
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base_table)), toml::Value::Table(over_table)) => {
                merge(base_table, over_table);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_files_win_and_tables_merge() {
        let mut base: toml::Table =
            toml::from_str("[tools]\nresult_budget = 10\nread_roots = [\"/a\"]\n").unwrap();
        merge(
            &mut base,
            toml::from_str("[tools]\nresult_budget = 20\n").unwrap(),
        );
        let config = Config::deserialize(toml::Value::Table(base)).unwrap();
        assert_eq!(config.tools.result_budget, 20);
        assert_eq!(config.tools.read_roots, vec![PathBuf::from("/a")]);
    }

    #[test]
    fn the_shell_section_reads_its_keys_and_wants_absolute_write_paths() {
        let table: toml::Table = toml::from_str(
            "[shell]\nsandbox = false\nsandbox_network = true\nsandbox_unavailable = \"run\"\nsandbox_write_paths = [\"/opt/cache\"]\n",
        )
        .unwrap();
        let config = Config::deserialize(toml::Value::Table(table))
            .unwrap()
            .resolve()
            .unwrap();
        assert!(!config.shell.sandbox);
        assert!(config.shell.sandbox_network);
        assert_eq!(
            config.shell.sandbox_unavailable,
            lathe_tools::tools::shell::UnavailableMode::Run
        );
        assert_eq!(
            config.shell.sandbox_write_paths,
            vec![PathBuf::from("/opt/cache")]
        );
        assert!(Config::default().shell.sandbox, "on by default");
        let table: toml::Table =
            toml::from_str("[shell]\nsandbox_write_paths = [\"cache\"]\n").unwrap();
        let err = Config::deserialize(toml::Value::Table(table))
            .unwrap()
            .resolve()
            .unwrap_err();
        assert!(err.to_string().contains("'cache' is not absolute"), "{err}");
        let table: toml::Table =
            toml::from_str("[shell]\nsandbox_unavailable = \"maybe\"\n").unwrap();
        assert!(Config::deserialize(toml::Value::Table(table)).is_err());
    }

    #[test]
    fn unknown_keys_are_errors() {
        let table: toml::Table = toml::from_str("[tools]\nresult_budjet = 10\n").unwrap();
        let err = Config::deserialize(toml::Value::Table(table)).unwrap_err();
        assert!(err.to_string().contains("result_budjet"), "{err}");
    }
}
