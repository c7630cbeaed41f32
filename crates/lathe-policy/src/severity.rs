//! How much harm an action can do.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;

/// How much harm a command or action can do, from least to most.
///
/// The order matters: a compound command is as severe as its worst part, which is the
/// maximum under this ordering.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Only reads: lists, prints, searches, inspects.
    #[default]
    Safe,
    /// Changes things inside the workspace: builds, tests, formatters, `git commit`.
    Normal,
    /// Destroys, publishes, installs, downloads, or writes outside the workspace.
    Dangerous,
    /// Can wreck the machine or leak secrets: `rm -rf /`, `sudo`, `curl | sh`, reading `~/.ssh`.
    Critical,
}

impl Severity {
    /// The lowercase name used in configuration, JSON and the terminal.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Safe => "safe",
            Severity::Normal => "normal",
            Severity::Dangerous => "dangerous",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Severity {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "safe" => Ok(Severity::Safe),
            "normal" => Ok(Severity::Normal),
            "dangerous" => Ok(Severity::Dangerous),
            "critical" => Ok(Severity::Critical),
            _ => Err(PolicyError::UnknownSeverity(s.to_string())),
        }
    }
}

/// A severity with the reasons that led to it; raising keeps the worst severity and every
/// reason in the order it was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Assessment {
    pub severity: Severity,
    pub reasons: Vec<String>,
}

impl Assessment {
    /// Records a finding; the severity becomes the worse of the two.
    pub fn raise(&mut self, severity: Severity, reason: impl Into<String>) {
        self.severity = self.severity.max(severity);
        let reason = reason.into();
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
    }

    /// Takes over every finding of `other`.
    pub fn absorb(&mut self, other: Assessment) {
        self.severity = self.severity.max(other.severity);
        for reason in other.reasons {
            if !self.reasons.contains(&reason) {
                self.reasons.push(reason);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_runs_from_safe_to_critical() {
        assert!(Severity::Safe < Severity::Normal);
        assert!(Severity::Normal < Severity::Dangerous);
        assert!(Severity::Dangerous < Severity::Critical);
    }

    #[test]
    fn names_round_trip() {
        for s in [
            Severity::Safe,
            Severity::Normal,
            Severity::Dangerous,
            Severity::Critical,
        ] {
            assert_eq!(s.as_str().parse::<Severity>().ok(), Some(s));
            let json = serde_json::to_string(&s).unwrap_or_default();
            assert_eq!(json, format!("\"{s}\""));
        }
        assert!("loud".parse::<Severity>().is_err());
    }

    #[test]
    fn raise_keeps_worst_and_all_reasons() {
        let mut a = Assessment::default();
        a.raise(Severity::Dangerous, "one");
        a.raise(Severity::Normal, "two");
        a.raise(Severity::Normal, "two");
        assert_eq!(a.severity, Severity::Dangerous);
        assert_eq!(a.reasons, vec!["one".to_string(), "two".to_string()]);
    }
}
