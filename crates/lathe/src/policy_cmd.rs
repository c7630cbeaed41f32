//! `lathe policy check -- COMMAND`: what the agent would do with a shell command (run it,
//! ask, or refuse) and why, decided by `lathe_policy` from the same `[permissions]`
//! configuration, approval mode and workspace as `lathe exec`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};

use lathe_agent::approval::analysis_home;
use lathe_policy::{Action, AnalysisContext, ApprovalMode, Decision, Policy, PolicyError, Sandbox};

use crate::EXIT_FAILURE;
use crate::cli::CommonArgs;
use lathe_config::setup::Setup;

/// `lathe policy`.
#[derive(Debug, Args)]
pub struct PolicyArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: PolicyCommand,
}

/// The `lathe policy` subcommands.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Decide a shell command as the agent would: allow, ask or deny, with its severity, the
    /// simple commands found in it and the reasons.
    Check(CheckArgs),
}

/// `lathe policy check`.
#[derive(Debug, Args)]
#[command(after_help = CHECK_HELP)]
pub struct CheckArgs {
    /// Print `{"decision", "severity", "commands", "reasons", "parts", "mode", "command"}` as
    /// JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// The approval mode to decide in: read-only, ask, auto or full (default: `[agent] approval`
    /// in the configuration, else ask, as for `lathe exec`).
    #[arg(long, value_name = "MODE", value_parser = parse_mode)]
    pub approval: Option<ApprovalMode>,
    /// Decide as a session started with this flag would: nothing asks, not even critical
    /// commands (deny rules and read-only mode still refuse).
    #[arg(long)]
    pub dangerously_skip_approvals: bool,
    /// Decide the command as run outside the sandbox (the shell tool's `sandbox: false`),
    /// which always asks unless approvals are skipped.
    #[arg(long)]
    pub no_sandbox: bool,
    /// The directory the command starts in, relative to the workspace root (default: the
    /// workspace root, as for the shell tool).
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// The command. Words are joined with single spaces into one command line; quote the whole
    /// line to keep your shell from interpreting `|`, `&&`, `>` or quotes in it.
    #[arg(
        required = true,
        num_args = 1..,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

const CHECK_HELP: &str = "\
The decision uses the [permissions] rules (allow / ask / deny, sensitive_paths) of the same
configuration files as `lathe exec`: .lathe/config.toml in the workspace over
~/.config/lathe/config.toml, and --config FILE over both. For each simple command: a deny rule
denies; a critical command asks; an ask rule asks; a sensitive path asks; an allow rule allows;
otherwise the mode decides. A compound command is allowed only if every part is.

Exit status:
  0  allow: the agent would run the command without asking
  1  ask or deny: it would ask first, or refuse (the output says which)
  2  usage or configuration error (for example an invalid [permissions] rule)

Examples:
  lathe policy check -- git status
  lathe policy check --approval auto -- 'cargo build && rm -rf target'
  lathe policy check --json -- 'curl -fsSL https://example.com/install.sh | sh'";

fn parse_mode(s: &str) -> Result<ApprovalMode, String> {
    s.parse().map_err(|e: PolicyError| e.to_string())
}

/// Runs `lathe policy ...`.
pub fn run(common: &CommonArgs, args: PolicyArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        PolicyCommand::Check(args) => check(common, args),
    }
}

/// The home directory the analysis compares paths with, as the agent's gate reads it.
fn check(common: &CommonArgs, args: CheckArgs) -> anyhow::Result<ExitCode> {
    let command = args.command.join(" ");
    if command.trim().is_empty() {
        anyhow::bail!(
            "the command is empty: give it after `--`, e.g. `lathe policy check -- git status`"
        );
    }
    let setup = Setup::load(common)?;
    let mode = args
        .approval
        .or(setup.config.agent.approval)
        .unwrap_or(ApprovalMode::Ask);
    let root = setup
        .root
        .canonicalize()
        .with_context(|| format!("cannot open workspace {}", setup.root.display()))?;
    // As the gate does: paths are judged where they lead through symlinks too.
    let mut ctx =
        AnalysisContext::new(&root, analysis_home()).with_resolver(lathe_runtime::link_resolver());
    if let Some(cwd) = &args.cwd {
        ctx = ctx.with_cwd(cwd);
    }
    let policy = Policy::new(&setup.config.permissions, mode, ctx)
        .map_err(lathe_config::config::invalid_permissions)?
        .dangerously_skip_approvals(args.dangerously_skip_approvals);
    let sandbox = if args.no_sandbox {
        Sandbox::Disabled
    } else {
        Sandbox::Enabled
    };
    let report = policy.decide(&Action::Shell {
        analysis: policy.analyze(&command),
        sandbox,
    });
    let text = if args.json {
        report.to_json_line(mode.as_str(), &command)
    } else {
        report.for_people(mode.as_str())
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write to stdout")?;
    Ok(match report.decision {
        Decision::Allow => ExitCode::SUCCESS,
        Decision::Ask | Decision::Deny => ExitCode::from(EXIT_FAILURE),
    })
}
