//! `lathe trust`: show what a workspace file grants, then record it; list and revoke records.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::{TrustState, WORKSPACE_FILE, canonical, read_yes, record, sha256_hex};
use crate::EXIT_FAILURE;

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
pub fn run(common: &crate::CommonArgs, args: TrustArgs) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    if args.list {
        let store = crate::state::open_store()?;
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
        None => crate::setup::default_workspace()?,
    };
    if !dir.is_dir() {
        anyhow::bail!("workspace {} is not a directory", dir.display());
    }
    let workspace = canonical(&dir);
    if args.revoke {
        let store = crate::state::open_store()?;
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
