//! Errors of the policy crate.

/// What can go wrong when building a policy from configuration.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum PolicyError {
    /// A permission rule that is not `shell(..)`, `read(..)`, `edit(..)`, `write(..)`,
    /// `tool(..)` or a bare tool name.
    #[error(
        "invalid permission rule '{rule}': {problem}; expected shell(PATTERN), read(GLOB), \
         edit(GLOB), write(GLOB), tool(NAME) or a bare tool name"
    )]
    InvalidRule {
        /// The rule as written.
        rule: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A path pattern that is not valid gitignore-style glob syntax.
    #[error("invalid path pattern '{pattern}': {problem}")]
    InvalidPattern {
        /// The pattern as written.
        pattern: String,
        /// What is wrong with it.
        problem: String,
    },
    /// An approval mode name that is not one of the four modes.
    #[error("unknown approval mode '{0}': expected read-only, ask, auto or full")]
    UnknownMode(String),
    /// A severity name that is not one of the four severities.
    #[error("unknown severity '{0}': expected safe, normal, dangerous or critical")]
    UnknownSeverity(String),
}
