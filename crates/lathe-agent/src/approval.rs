//! Approvals: who says yes to a call that changes things.
//!
//! The pipeline's parts live in [`lathe_runtime::dispatch`], shared by every front end; they are
//! re-exported here for the agent's users. The [`Gate`] decides, for each prepared call,
//! whether it runs, is refused, or needs somebody to say yes; an [`Approver`] is that somebody:
//! a terminal prompt in `lathe chat`, a refusal where nobody can answer ([`NonInteractive`],
//! [`Refuse`]), a fixed answer in tests.

pub use lathe_runtime::dispatch::{
    ApprovalDecision, ApprovalRequest, Approver, FixedAnswer, Gate, NonInteractive, Refuse,
    Verdict, analysis_home, denial_text,
};

/// How much runs without asking: `read-only`, `ask` (the default), `auto`, `full`. The same
/// modes `lathe policy check` and `lathe mcp` use.
pub use lathe_policy::ApprovalMode;
