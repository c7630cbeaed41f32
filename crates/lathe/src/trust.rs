//! Trust in a workspace's own configuration (`.lathe/config.toml`).
//!
//! A repository can ship that file, and a command run in the workspace can write it, so its
//! settings that weaken safety (the sandbox off, more write paths, the network, secrets passed
//! to commands, allow rules, a looser approval mode, another model server) apply only after the
//! user trusts that exact file: a record in the store keyed by the workspace's canonical path
//! and the SHA-256 of the file's bytes. A changed byte makes it untrusted again. Settings that
//! tighten safety (deny and ask rules, more sensitive paths, the sandbox on, a stricter mode)
//! and the neutral ones (limits, the model's name, output sizes) always apply.
//!
//! `lathe trust [DIR]` shows what the file would grant and records it.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use lathe_policy::ApprovalMode;
use lathe_tools::tools::shell::UnavailableMode;

use crate::EXIT_FAILURE;
use crate::config::Config;

/// The workspace's configuration file, relative to its root.
pub const WORKSPACE_FILE: &str = ".lathe/config.toml";

/// One setting of a workspace file that weakens safety compared with what applies without the
/// file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Weakening {
    /// `section.key`, e.g. `shell.sandbox`.
    pub key: String,
    /// The value as written in the file (TOML).
    pub value: String,
    /// What it would let happen.
    pub effect: String,
}

impl Weakening {
    fn line(&self) -> String {
        format!("{} = {} ({})", self.key, self.value, self.effect)
    }
}

/// Whether the user trusts the workspace file as it is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrustState {
    /// A record matches the file's hash.
    Trusted,
    /// No record for this workspace.
    Untrusted,
    /// A record exists for another version of the file.
    Changed,
}

/// What the workspace's configuration file holds and whether it is trusted.
#[derive(Debug, Clone)]
pub struct WorkspaceFile {
    /// The file.
    pub path: PathBuf,
    /// The workspace's canonical path (the key of the trust record).
    pub workspace: PathBuf,
    /// The SHA-256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// Settings that weaken safety, applied only when trusted.
    pub weakening: Vec<Weakening>,
    /// Settings that tighten safety, always applied (`section.key`).
    pub tightening: Vec<String>,
    /// The trust state.
    pub state: TrustState,
}

impl WorkspaceFile {
    /// Whether weakening settings were left out of the configuration.
    pub fn withheld(&self) -> bool {
        self.state != TrustState::Trusted && !self.weakening.is_empty()
    }

    /// The notice for a file whose weakening settings were left out: which keys, and the exact
    /// command that trusts the file. `None` when nothing was left out.
    pub fn notice(&self) -> Option<String> {
        if !self.withheld() {
            return None;
        }
        let why = match self.state {
            TrustState::Changed => "has changed since you trusted it",
            _ => "is not trusted",
        };
        let keys: Vec<&str> = self.weakening.iter().map(|w| w.key.as_str()).collect();
        Some(format!(
            "the workspace configuration {} {why}, so its settings that weaken safety are \
             ignored: {}. Settings that tighten safety apply. To trust this exact file, review it \
             and run: {}",
            self.path.display(),
            keys.join(", "),
            trust_command(&self.workspace)
        ))
    }

    /// The lines that show what trusting the file grants.
    pub fn grant_lines(&self) -> Vec<String> {
        self.weakening.iter().map(Weakening::line).collect()
    }
}

/// `lathe trust DIR`, quoted for a shell where needed.
pub fn trust_command(workspace: &Path) -> String {
    let shown = workspace.to_string_lossy();
    let plain = shown
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+,:@%".contains(c));
    if plain {
        format!("lathe trust {shown}")
    } else {
        format!("lathe trust '{}'", shown.replace('\'', r"'\''"))
    }
}

/// The SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The workspace file split by what it does to safety.
#[derive(Debug, Default)]
pub struct Split {
    /// The table to merge when the file is trusted: all of it (permission lists added to the
    /// base's rather than replacing them).
    pub trusted: toml::Table,
    /// The table to merge when it is not: the neutral and tightening settings only.
    pub safe: toml::Table,
    /// What was left out of `safe`.
    pub weakening: Vec<Weakening>,
    /// Tightening keys.
    pub tightening: Vec<String>,
}

/// Lists of strings as written, for comparisons with what `base` already has.
fn strings(value: &toml::Value) -> Vec<String> {
    match value {
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        other => vec![other.to_string()],
    }
}

fn path_strings(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// How careful an approval mode is: lower is more careful.
fn rank(mode: ApprovalMode) -> usize {
    ApprovalMode::ALL
        .iter()
        .position(|m| *m == mode)
        .unwrap_or(usize::MAX)
}

/// What one key does, compared with `base`.
enum Effect {
    Neutral,
    Tightens,
    Weakens(String),
}

/// Rates `section.key = value` of a workspace file against `base` (the configuration without
/// the file). Keys not listed here weaken: a setting added later is withheld until someone
/// decides what it does.
fn rate(section: &str, key: &str, value: &toml::Value, base: &Config) -> Effect {
    let new_entries = |have: Vec<String>| {
        strings(value)
            .into_iter()
            .filter(|entry| !have.contains(entry))
            .collect::<Vec<_>>()
    };
    match (section, key) {
        ("tools", "result_budget") => Effect::Neutral,
        ("tools", "read_roots") => {
            if new_entries(path_strings(&base.tools.read_roots)).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens("the file tools may read these directories".into())
            }
        }
        ("model", "base_url") => {
            if value.as_str() == base.model.base_url.as_deref() {
                Effect::Neutral
            } else {
                Effect::Weakens(
                    "the conversation, your code and any API key go to this server".into(),
                )
            }
        }
        (
            "model",
            "provider" | "name" | "api_key" | "context_window" | "keep_alive" | "think"
            | "temperature" | "max_tokens" | "tool_protocol",
        ) => Effect::Neutral,
        ("agent", "max_turns") => Effect::Neutral,
        ("agent", "approval") => {
            let have = base.agent.approval.unwrap_or_default();
            match value.as_str().and_then(|v| v.parse::<ApprovalMode>().ok()) {
                Some(mode) if rank(mode) > rank(have) => Effect::Weakens(format!(
                    "more runs without asking than in the mode '{have}' that applies without the file"
                )),
                Some(mode) if rank(mode) < rank(have) => Effect::Tightens,
                Some(_) => Effect::Neutral,
                None => Effect::Weakens("an approval mode Lathe cannot rate".into()),
            }
        }
        ("permissions", "allow") => {
            if new_entries(base.permissions.allow.clone()).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens("calls matching these rules run without asking".into())
            }
        }
        ("permissions", "ask" | "deny") => {
            if strings(value).is_empty() {
                Effect::Neutral
            } else {
                Effect::Tightens
            }
        }
        // Split by the caller: exemptions (`!pattern`) weaken, patterns tighten.
        ("permissions", "sensitive_paths") => Effect::Tightens,
        ("shell", "sandbox") => match (value.as_bool(), base.shell.sandbox) {
            (Some(false), true) => Effect::Weakens("commands run without the sandbox".into()),
            (Some(true), false) => Effect::Tightens,
            _ => Effect::Neutral,
        },
        ("shell", "sandbox_network") => match (value.as_bool(), base.shell.sandbox_network) {
            (Some(true), false) => Effect::Weakens("sandboxed commands may use the network".into()),
            (Some(false), true) => Effect::Tightens,
            _ => Effect::Neutral,
        },
        ("shell", "sandbox_unavailable") => {
            let have = base.shell.sandbox_unavailable;
            match (value.as_str(), have) {
                (Some("run"), UnavailableMode::Ask) => Effect::Weakens(
                    "where Landlock is missing, commands run unsandboxed without asking".into(),
                ),
                (Some("ask"), UnavailableMode::Run) => Effect::Tightens,
                _ => Effect::Neutral,
            }
        }
        ("shell", "sandbox_write_paths") => {
            if new_entries(path_strings(&base.shell.sandbox_write_paths)).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens("sandboxed commands may write there".into())
            }
        }
        ("shell", "keep_env") => {
            if new_entries(base.shell.keep_env.clone()).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens(
                    "commands get these variables (secrets, daemon sockets) that Lathe removes"
                        .into(),
                )
            }
        }
        (
            "shell",
            "command_timeout"
            | "command_timeout_exempt"
            | "preview"
            | "artifact_cap"
            | "max_running",
        ) => Effect::Neutral,
        _ => Effect::Weakens("a setting Lathe does not rate; it applies only when trusted".into()),
    }
}

/// Permission lists of the workspace file are added to what the user's configuration has, so
/// that the file cannot drop the user's rules by replacing a list.
const ADDED_LISTS: &[&str] = &["allow", "ask", "deny", "sensitive_paths"];

fn base_list(base: &Config, key: &str) -> Vec<String> {
    match key {
        "allow" => base.permissions.allow.clone(),
        "ask" => base.permissions.ask.clone(),
        "deny" => base.permissions.deny.clone(),
        "sensitive_paths" => base.permissions.sensitive_paths.clone(),
        _ => Vec::new(),
    }
}

fn string_array(items: impl IntoIterator<Item = String>) -> toml::Value {
    toml::Value::Array(items.into_iter().map(toml::Value::String).collect())
}

/// Splits a workspace file (already checked to be a valid configuration) into what applies
/// when trusted, what applies when not, and the weakening settings left out.
pub fn split(file: &toml::Table, base: &Config) -> Split {
    let mut out = Split::default();
    for (section, value) in file {
        let toml::Value::Table(keys) = value else {
            // Not a section: the configuration has none such; keep it so that it is reported.
            out.trusted.insert(section.clone(), value.clone());
            out.safe.insert(section.clone(), value.clone());
            continue;
        };
        let mut trusted = toml::Table::new();
        let mut safe = toml::Table::new();
        for (key, value) in keys {
            let name = format!("{section}.{key}");
            let shown = value.to_string();
            if section == "permissions" && ADDED_LISTS.contains(&key.as_str()) {
                let have = base_list(base, key);
                let entries = strings(value);
                trusted.insert(
                    key.clone(),
                    string_array(have.iter().cloned().chain(entries.iter().cloned())),
                );
                let (kept, left): (Vec<String>, Vec<String>) = match key.as_str() {
                    "sensitive_paths" => entries.into_iter().partition(|e| !e.starts_with('!')),
                    _ => match rate(section, key, value, base) {
                        Effect::Weakens(_) => (Vec::new(), entries),
                        _ => (entries, Vec::new()),
                    },
                };
                let new_left: Vec<String> =
                    left.into_iter().filter(|e| !have.contains(e)).collect();
                if !new_left.is_empty() {
                    let effect = if key == "sensitive_paths" {
                        "these paths stop being sensitive: reading or changing them no longer asks"
                            .to_owned()
                    } else {
                        "calls matching these rules run without asking".to_owned()
                    };
                    out.weakening.push(Weakening {
                        key: name.clone(),
                        value: string_array(new_left).to_string(),
                        effect,
                    });
                }
                if !kept.is_empty() {
                    if key != "allow" {
                        out.tightening.push(name);
                    }
                    safe.insert(key.clone(), string_array(have.into_iter().chain(kept)));
                }
                continue;
            }
            trusted.insert(key.clone(), value.clone());
            match rate(section, key, value, base) {
                Effect::Neutral => {
                    safe.insert(key.clone(), value.clone());
                }
                Effect::Tightens => {
                    out.tightening.push(name);
                    safe.insert(key.clone(), value.clone());
                }
                Effect::Weakens(effect) => out.weakening.push(Weakening {
                    key: name,
                    value: shown,
                    effect,
                }),
            }
        }
        out.trusted
            .insert(section.clone(), toml::Value::Table(trusted));
        out.safe.insert(section.clone(), toml::Value::Table(safe));
    }
    out
}

/// The workspace's canonical path, the key of its trust record.
pub fn canonical(workspace: &Path) -> PathBuf {
    std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// The trust state of `workspace`'s file with hash `sha256`. A store that cannot be opened
/// counts as no record (untrusted), with a warning.
pub fn state(workspace: &Path, sha256: &str) -> TrustState {
    let store = match crate::sessions_cmd::open_store() {
        Ok(store) => store,
        Err(err) => {
            tracing::warn!("cannot read trust records: {err:#}");
            return TrustState::Untrusted;
        }
    };
    match store.trust_record(workspace) {
        Ok(Some(record)) if record.sha256 == sha256 => TrustState::Trusted,
        Ok(Some(_)) => TrustState::Changed,
        Ok(None) => TrustState::Untrusted,
        Err(err) => {
            tracing::warn!("cannot read trust records: {err}");
            TrustState::Untrusted
        }
    }
}

/// Records that the user trusts the file as it is now.
pub fn record(file: &WorkspaceFile) -> anyhow::Result<()> {
    let store = crate::sessions_cmd::open_store()?;
    store
        .trust_config(&file.workspace, &file.sha256)
        .context("cannot record the trust")?;
    Ok(())
}

/// `lathe trust`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  lathe trust            show what ./.lathe/config.toml grants, then ask\n  lathe trust ~/src/app --yes\n  lathe trust --list\n  lathe trust --revoke ~/src/app"
)]
pub struct TrustArgs {
    /// The workspace (default: --workspace, else the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Record without asking (needed when stdin is not a terminal).
    #[arg(long, short = 'y', conflicts_with_all = ["list", "revoke"])]
    pub yes: bool,
    /// List the trusted workspaces and whether their files still match.
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Remove the trust record of the workspace.
    #[arg(long)]
    pub revoke: bool,
}

/// Runs `lathe trust`: 0 recorded (or listed, revoked), 1 declined, 2 usage errors (no file, an
/// unreadable or invalid one).
pub fn run(common: &crate::cli::CommonArgs, args: TrustArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.list {
        let store = crate::sessions_cmd::open_store()?;
        let records = store.trust_records()?;
        if records.is_empty() {
            writeln!(out, "no trusted workspace configurations")?;
        }
        for record in records {
            let now = std::fs::read(record.workspace.join(WORKSPACE_FILE))
                .map(|bytes| sha256_hex(&bytes));
            let matches = match &now {
                Ok(hash) if *hash == record.sha256 => "matches",
                Ok(_) => "changed since (untrusted)",
                Err(_) => "file missing",
            };
            writeln!(
                out,
                "{}  sha256 {}  trusted {}  {matches}",
                record.workspace.display(),
                &record.sha256[..record.sha256.len().min(12)],
                record.trusted_at
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dir = match args.dir.as_ref().or(common.workspace.as_ref()) {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if !dir.is_dir() {
        anyhow::bail!("workspace {} is not a directory", dir.display());
    }
    let workspace = canonical(&dir);
    if args.revoke {
        let store = crate::sessions_cmd::open_store()?;
        if store.revoke_trust(&workspace)? {
            writeln!(
                out,
                "{}: trust revoked; its weakening settings no longer apply",
                workspace.display()
            )?;
        } else {
            writeln!(out, "{}: was not trusted", workspace.display())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let Some(file) = crate::config::inspect_workspace(&workspace)? else {
        anyhow::bail!(
            "{} has no {WORKSPACE_FILE}: there is nothing to trust",
            workspace.display()
        );
    };
    writeln!(
        out,
        "{} (sha256 {})",
        file.path.display(),
        &file.sha256[..12]
    )?;
    if file.weakening.is_empty() {
        writeln!(out, "It grants nothing that weakens safety.")?;
    } else {
        writeln!(out, "Trusting it grants:")?;
        for line in file.grant_lines() {
            writeln!(out, "  {line}")?;
        }
    }
    if !file.tightening.is_empty() {
        writeln!(
            out,
            "These tighten safety and apply whether it is trusted or not: {}",
            file.tightening.join(", ")
        )?;
    }
    if file.state == TrustState::Trusted {
        writeln!(out, "It is already trusted as it is.")?;
        return Ok(ExitCode::SUCCESS);
    }
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            writeln!(out, "Not recorded.")?;
            anyhow::bail!("stdin is not a terminal: pass --yes to trust the file without asking");
        }
        write!(out, "Trust this file? [y/N] ")?;
        out.flush()?;
        if !read_yes() {
            writeln!(out, "Not trusted.")?;
            return Ok(ExitCode::from(EXIT_FAILURE));
        }
    }
    record(&file)?;
    writeln!(
        out,
        "Trusted. Its settings apply from the next start; a change to the file makes it untrusted again."
    )?;
    Ok(ExitCode::SUCCESS)
}

/// Reads one answer line from stdin: `y` or `yes` (any case) is yes.
pub fn read_yes() -> bool {
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Checks that `table` is a valid configuration on its own (unknown keys, wrong types).
pub fn check_valid(table: &toml::Table, path: &Path) -> anyhow::Result<Config> {
    Config::deserialize(toml::Value::Table(table.clone()))
        .with_context(|| format!("invalid config file {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    fn keys(split: &Split) -> Vec<&str> {
        split.weakening.iter().map(|w| w.key.as_str()).collect()
    }

    #[test]
    fn weakening_settings_are_left_out_and_tightening_ones_kept() {
        let file = table(
            "[shell]\nsandbox = false\nsandbox_network = true\nsandbox_unavailable = \"run\"\n\
             sandbox_write_paths = [\"/opt\"]\nkeep_env = [\"SSH_AUTH_SOCK\"]\nmax_running = 3\n\
             [permissions]\nallow = [\"shell(*)\"]\ndeny = [\"shell(rm *)\"]\n\
             sensitive_paths = [\"prod/**\", \"!.env\"]\n\
             [agent]\napproval = \"full\"\nmax_turns = 5\n\
             [model]\nbase_url = \"http://203.0.113.9/\"\nname = \"m\"\n\
             [tools]\nread_roots = [\"/home\"]\nresult_budget = 100\n",
        );
        let split = split(&file, &Config::default());
        assert_eq!(
            keys(&split),
            [
                "agent.approval",
                "model.base_url",
                "permissions.allow",
                "permissions.sensitive_paths",
                "shell.keep_env",
                "shell.sandbox",
                "shell.sandbox_network",
                "shell.sandbox_unavailable",
                "shell.sandbox_write_paths",
                "tools.read_roots",
            ]
        );
        let safe = toml::Value::Table(split.safe.clone());
        assert_eq!(safe["shell"].as_table().unwrap().len(), 1, "{safe}");
        assert_eq!(safe["shell"]["max_running"].as_integer(), Some(3));
        assert_eq!(safe["permissions"]["deny"].to_string(), "[\"shell(rm *)\"]");
        assert_eq!(
            safe["permissions"]["sensitive_paths"].to_string(),
            "[\"prod/**\"]"
        );
        assert!(safe["permissions"].get("allow").is_none());
        assert!(safe["agent"].get("approval").is_none());
        assert_eq!(safe["agent"]["max_turns"].as_integer(), Some(5));
        assert_eq!(safe["model"]["name"].as_str(), Some("m"));
        assert!(safe["model"].get("base_url").is_none());
        assert_eq!(
            split.tightening,
            ["permissions.deny", "permissions.sensitive_paths"]
        );
        let trusted = toml::Value::Table(split.trusted);
        assert_eq!(trusted["shell"]["sandbox"].as_bool(), Some(false));
        assert_eq!(trusted["agent"]["approval"].as_str(), Some("full"));
    }

    #[test]
    fn the_comparison_is_with_what_applies_without_the_file() {
        let base = check_valid(
            &table(
                "[shell]\nsandbox = false\nsandbox_write_paths = [\"/opt\"]\n\
                 [agent]\napproval = \"auto\"\n[permissions]\nallow = [\"shell(make *)\"]\n\
                 deny = [\"shell(sudo *)\"]\n",
            ),
            Path::new("user"),
        )
        .unwrap();
        // What the user already has is no grant; a stricter mode and the sandbox on tighten.
        let file = table(
            "[shell]\nsandbox = false\nsandbox_write_paths = [\"/opt\"]\n\
             [agent]\napproval = \"ask\"\n[permissions]\nallow = [\"shell(make *)\"]\n\
             deny = [\"shell(rm *)\"]\n",
        );
        let out = split(&file, &base);
        assert!(out.weakening.is_empty(), "{:?}", out.weakening);
        assert_eq!(out.tightening, ["agent.approval", "permissions.deny"]);
        // The user's deny rules stay: the file's are added, not put in their place.
        let safe = toml::Value::Table(out.safe);
        assert_eq!(
            safe["permissions"]["deny"].to_string(),
            "[\"shell(sudo *)\", \"shell(rm *)\"]"
        );
        let out = split(&table("[shell]\nsandbox = true\n"), &base);
        assert_eq!(out.tightening, ["shell.sandbox"]);
        let out = split(&table("[agent]\napproval = \"full\"\n"), &base);
        assert_eq!(keys(&out), ["agent.approval"]);
        assert!(
            out.weakening[0].effect.contains("'auto'"),
            "{:?}",
            out.weakening
        );
    }

    #[test]
    fn the_notice_names_the_keys_and_the_command() {
        let file = WorkspaceFile {
            path: PathBuf::from("/w s/.lathe/config.toml"),
            workspace: PathBuf::from("/w s"),
            sha256: sha256_hex(b"x"),
            weakening: vec![Weakening {
                key: "shell.sandbox".into(),
                value: "false".into(),
                effect: "e".into(),
            }],
            tightening: Vec::new(),
            state: TrustState::Changed,
        };
        let notice = file.notice().unwrap();
        assert!(
            notice.contains("has changed since you trusted it"),
            "{notice}"
        );
        assert!(notice.contains("ignored: shell.sandbox."), "{notice}");
        assert!(notice.ends_with("run: lathe trust '/w s'"), "{notice}");
        let trusted = WorkspaceFile {
            state: TrustState::Trusted,
            ..file
        };
        assert_eq!(trusted.notice(), None);
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
