//! Configuration: `.lathe/config.toml` in the workspace over `~/.config/lathe/config.toml` over
//! the defaults, and a `--config FILE` over both. Environment variables and flags are applied on
//! top by the commands that read them. The workspace's file is the repository's, not the user's:
//! its settings that weaken safety apply only once the user trusts it (`crate::trust`), and its
//! permission lists add to the user's instead of replacing them.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;

use lathe_runtime::ToolConfig;

use crate::trust::{TrustState, WORKSPACE_FILE, WorkspaceFile};
use lathe_runtime::commands::ShellConfig;

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
    /// The project's memory: `path` (relative to the workspace; by default
    /// `.lathe/memory.md`). From a workspace's own file only once it is trusted.
    pub memory: lathe_runtime::memory::MemoryConfig,
    /// Commands run at points of a session (`SessionStart`, `UserPromptSubmit`, `PreToolUse`,
    /// `PostToolUse`, `Stop`), see `crate::hooks`. From a workspace's own file only once it is
    /// trusted; its entries are added to the user's.
    pub hooks: lathe_runtime::hooks::HooksConfig,
    /// MCP servers whose tools the agent may call (`[mcp_servers.NAME]`, see
    /// `lathe_mcp::client`). From a workspace's own file only once it is trusted, and never
    /// its `trusted` key.
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::ServerConfig>,
    /// `web_fetch` and `web_search`: `timeout = 30` (seconds), `max_bytes = 5242880`,
    /// `max_redirects = 5`, `search_url` (a SearXNG endpoint; without it `web_search` is not
    /// offered).
    pub web: lathe_web::WebConfig,
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
        self.memory
            .check()
            .map_err(|err| anyhow::anyhow!("invalid configuration: {err}"))?;
        crate::mcp::check(&self.mcp_servers)
            .map_err(|err| anyhow::anyhow!("invalid configuration: {err}"))?;
        Ok(self)
    }
}

/// A timeout in the configuration: whole seconds (`600`), or a duration string of a number
/// and a unit (`"90s"`, `"10m"`, `"1h"`); `0` means never.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeout(pub Option<std::time::Duration>);

impl Timeout {
    fn parse(text: &str) -> Option<Timeout> {
        let text = text.trim();
        let split = text
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: u64 = number.parse().ok()?;
        let scale = match unit.trim() {
            "" | "s" | "sec" | "secs" => 1,
            "m" | "min" | "mins" => 60,
            "h" => 3600,
            _ => return None,
        };
        Some(Timeout::seconds(number.checked_mul(scale)?))
    }

    fn seconds(seconds: u64) -> Timeout {
        Timeout((seconds > 0).then(|| std::time::Duration::from_secs(seconds)))
    }
}

impl<'de> Deserialize<'de> for Timeout {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        const EXPECTED: &str =
            "seconds (600), or a number and a unit such as \"90s\", \"10m\" or \"1h\"; 0 never";
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Timeout;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Timeout, E> {
                Ok(Timeout::seconds(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Timeout, E> {
                u64::try_from(v)
                    .map(Timeout::seconds)
                    .map_err(|_| E::custom(format!("a negative timeout ({v}): give {EXPECTED}")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Timeout, E> {
                Timeout::parse(v)
                    .ok_or_else(|| E::custom(format!("'{v}' is not a timeout: give {EXPECTED}")))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The user's own configuration file.
pub fn user_file() -> Option<PathBuf> {
    crate::state::config_dir().map(|dir| dir.join("config.toml"))
}

/// A loaded configuration, and what became of the workspace's own file.
#[derive(Debug)]
pub struct Loaded {
    /// The merged configuration.
    pub config: Config,
    /// The workspace's `.lathe/config.toml`, when there is one.
    pub workspace_file: Option<WorkspaceFile>,
}

/// Reads a configuration file as a TOML table; `None` when it does not exist and `required`
/// is false.
fn read_table(path: &Path, required: bool) -> anyhow::Result<Option<(toml::Table, Vec<u8>)>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound && !required => return Ok(None),
        Err(err) => {
            return Err(err).with_context(|| format!("cannot read config file {}", path.display()));
        }
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| anyhow::anyhow!("invalid config file {}: not UTF-8", path.display()))?;
    let table: toml::Table =
        toml::from_str(text).with_context(|| format!("invalid config file {}", path.display()))?;
    Ok(Some((table, bytes)))
}

/// The user's configuration alone (over the defaults): what applies without the workspace's
/// file, and what that file is compared with.
fn user_table() -> anyhow::Result<toml::Table> {
    Ok(match user_file() {
        Some(path) => read_table(&path, false)?
            .map(|(t, _)| t)
            .unwrap_or_default(),
        None => toml::Table::new(),
    })
}

/// The workspace's file split by what it does to safety, with its trust state, and the table
/// to merge. `None` when there is no file.
fn workspace_part(
    workspace: &Path,
    base: &toml::Table,
) -> anyhow::Result<Option<(WorkspaceFile, toml::Table)>> {
    let path = workspace.join(WORKSPACE_FILE);
    let Some((table, bytes)) = read_table(&path, false)? else {
        return Ok(None);
    };
    let own = crate::trust::check_valid(&table, &path)?.resolve()?;
    // Rules are checked even when they will be left out: a typo is an error, not a notice.
    let home = std::env::var_os("HOME").unwrap_or_else(|| "/".into());
    lathe_policy::Policy::new(
        &own.permissions,
        lathe_policy::ApprovalMode::Ask,
        lathe_policy::AnalysisContext::new(workspace, home),
    )
    .map_err(|err| anyhow::anyhow!("invalid [permissions] in {}: {err}", path.display()))?;
    let base =
        Config::deserialize(toml::Value::Table(base.clone())).context("invalid configuration")?;
    let split = crate::trust::split(&table, &base);
    let canonical = crate::trust::canonical(workspace);
    let sha256 = crate::trust::sha256_hex(&bytes);
    let state = if split.weakening.is_empty() {
        // Nothing to withhold: the store need not be opened.
        TrustState::Untrusted
    } else {
        crate::trust::state(&canonical, &sha256)
    };
    let file = WorkspaceFile {
        path: canonical.join(WORKSPACE_FILE),
        workspace: canonical,
        sha256,
        weakening: split.weakening,
        tightening: split.tightening,
        state,
    };
    let mut part = if state == TrustState::Trusted {
        split.trusted
    } else {
        split.safe
    };
    // Whether a server's read-only hints are believed is the user's word, never the
    // repository's.
    if let Some(toml::Value::Table(servers)) = part.get_mut("mcp_servers") {
        for (_, server) in servers.iter_mut() {
            if let toml::Value::Table(server) = server {
                server.remove("trusted");
            }
        }
    }
    Ok(Some((file, part)))
}

/// What the workspace's file at `workspace` grants, and whether it is trusted (for `lathe
/// trust`). `None` when there is no file.
pub fn inspect_workspace(workspace: &Path) -> anyhow::Result<Option<WorkspaceFile>> {
    let base = user_table()?;
    let Some((mut file, _)) = workspace_part(workspace, &base)? else {
        return Ok(None);
    };
    if file.weakening.is_empty() {
        file.state = crate::trust::state(&file.workspace, &file.sha256);
    }
    Ok(Some(file))
}

/// Loads and merges the configuration files for `workspace`: the user's, the workspace's (its
/// settings that weaken safety only when the user trusts the file, see [`crate::trust`]), and
/// `explicit`, which is the user's and always applies.
pub fn load(workspace: &Path, explicit: Option<&Path>) -> anyhow::Result<Loaded> {
    let mut merged = user_table()?;
    let workspace_file = match workspace_part(workspace, &merged)? {
        Some((file, part)) => {
            merge(&mut merged, part);
            Some(file)
        }
        None => None,
    };
    if let Some(explicit) = explicit
        && let Some((table, _)) = read_table(explicit, true)?
    {
        merge(&mut merged, table);
    }
    let config = Config::deserialize(toml::Value::Table(merged))
        .context("invalid configuration")?
        .resolve()?;
    Ok(Loaded {
        config,
        workspace_file,
    })
}

/// Merges `over` into `base`: tables merge key by key, anything else replaces; except that the
/// lists of `[hooks]` add up, so a workspace's hooks run besides the user's.
fn merge(base: &mut toml::Table, mut over: toml::Table) {
    if let (Some(toml::Value::Table(have)), Some(toml::Value::Table(more))) =
        (base.get_mut("hooks"), over.get_mut("hooks"))
    {
        for (event, value) in std::mem::take(more) {
            match (have.get_mut(&event), value) {
                (Some(toml::Value::Array(list)), toml::Value::Array(added)) => list.extend(added),
                (_, value) => {
                    have.insert(event, value);
                }
            }
        }
        over.remove("hooks");
    }
    merge_tables(base, over);
}

fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(base_table)), toml::Value::Table(over_table)) => {
                merge_tables(base_table, over_table);
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
            lathe_runtime::commands::UnavailableMode::Run
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
    fn timeouts_are_seconds_or_a_duration_string() {
        let parse = |text: &str| {
            toml::from_str::<toml::Table>(&format!("t = {text}")).unwrap()["t"]
                .clone()
                .try_into::<Timeout>()
        };
        let secs = |n| Timeout(Some(std::time::Duration::from_secs(n)));
        assert_eq!(parse("600").unwrap(), secs(600));
        assert_eq!(parse("\"90s\"").unwrap(), secs(90));
        assert_eq!(parse("\"10m\"").unwrap(), secs(600));
        assert_eq!(parse("\"1h\"").unwrap(), secs(3600));
        assert_eq!(parse("0").unwrap(), Timeout(None));
        assert_eq!(parse("\"0s\"").unwrap(), Timeout(None));
        let err = parse("\"ten minutes\"").unwrap_err().to_string();
        assert!(
            err.contains("'ten minutes' is not a timeout: give seconds"),
            "{err}"
        );
        assert!(parse("-5").unwrap_err().to_string().contains("negative"));
    }

    #[test]
    fn the_memory_path_is_read_and_must_stay_in_the_workspace() {
        let config = |text: &str| {
            let table: toml::Table = toml::from_str(text).unwrap();
            Config::deserialize(toml::Value::Table(table))
                .unwrap()
                .resolve()
        };
        assert_eq!(
            config("[memory]\npath = \"docs/memory.md\"\n")
                .unwrap()
                .memory
                .path(),
            "docs/memory.md"
        );
        assert_eq!(config("").unwrap().memory.path(), ".lathe/memory.md");
        let err = config("[memory]\npath = \"../elsewhere.md\"\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("[memory] path '../elsewhere.md' leads out of the workspace"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        let table: toml::Table = toml::from_str("[tools]\nresult_budjet = 10\n").unwrap();
        let err = Config::deserialize(toml::Value::Table(table)).unwrap_err();
        assert!(err.to_string().contains("result_budjet"), "{err}");
    }
}
