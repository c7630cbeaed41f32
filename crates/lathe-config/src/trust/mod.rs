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

mod command;
mod rate;

use std::io::BufRead;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::config::Config;

pub use command::{TrustArgs, run};
pub use rate::split;

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

/// The workspace's canonical path, the key of its trust record.
pub fn canonical(workspace: &Path) -> PathBuf {
    std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf())
}

/// The trust state of `workspace`'s file with hash `sha256`. A store that cannot be opened
/// counts as no record (untrusted), with a warning.
pub fn state(workspace: &Path, sha256: &str) -> TrustState {
    let store = match crate::state::open_store() {
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
    let store = crate::state::open_store()?;
    store
        .trust_config(&file.workspace, &file.sha256)
        .context("cannot record the trust")?;
    Ok(())
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
