//! lathe-policy: what a shell command would do, and whether Lathe may do it without asking.
//!
//! Pure logic, no I/O: the workspace root and home directory come in as plain values.
//!
//! * [`analyze`] parses a command line with tree-sitter-bash into every simple command it
//!   would run (across `;`, `&&`, `||`, pipes, subshells, `$(...)`, here-documents, and the
//!   scripts inside `bash -c` and `eval`), looks through wrappers (`sudo`, `env`, `timeout`,
//!   `xargs`, `find -exec`, ...) and classifies each into a [`Severity`] with reasons.
//! * [`Policy`] combines an [`ApprovalMode`], the `[permissions]` rules of the configuration
//!   ([`PermissionsConfig`]) and sensitive-path patterns into a [`Decision`] for an
//!   [`Action`].
//! * [`remember_scope`] gives the rule an "always allow" answer should store.
//!
//! ```
//! use lathe_policy::{analyze, AnalysisContext, Severity};
//!
//! let ctx = AnalysisContext::new("/home/me/project", "/home/me");
//! let analysis = analyze("git status && r\"\"m -rf ~", &ctx);
//! assert_eq!(analysis.severity, Severity::Critical);
//! assert_eq!(analysis.texts(), vec!["git status", "rm -rf /home/me"]);
//! assert_eq!(analysis.commands[0].severity, Severity::Safe);
//! ```
#![deny(missing_docs)]

mod action;
mod analysis;
mod classify;
mod context;
mod decision;
mod dispatch;
mod error;
mod judge;
mod mode;
mod paths;
mod redirect;
mod report;
mod resolve;
mod rules;
mod scope;
mod sensitive;
mod severity;
mod walk;
mod word;
mod wrappers;

pub use action::{Action, Sandbox};
pub use analysis::{Access, CommandAnalysis, Finding, PathRef, Redirect, SimpleCommand};
pub use context::AnalysisContext;
pub use decision::Policy;
pub use error::PolicyError;
pub use mode::ApprovalMode;
pub use paths::{Location, normalize};
pub use report::{Decision, DecisionReport, PartReport};
pub use rules::{PermissionsConfig, Rule, RuleSet};
pub use scope::{remember_rule, remember_scope};
pub use sensitive::{DEFAULT_SENSITIVE_PATHS, SensitivePaths};
pub use severity::Severity;

/// Analyses a command line: every simple command it would run, each with a severity and
/// reasons. Never panics; input that does not parse is at least [`Severity::Dangerous`].
pub fn analyze(command: &str, ctx: &AnalysisContext) -> CommandAnalysis {
    let mut out = walk::Output::default();
    let mut scope = walk::Scope::new(ctx);
    walk::analyze_script(
        ctx,
        command,
        &mut scope,
        0,
        walk::Frame::default(),
        &mut out,
    );
    CommandAnalysis::new(command, out.commands, out.findings, out.parse_error)
}
