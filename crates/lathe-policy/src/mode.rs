//! Approval modes: how much Lathe may do without asking.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;

/// How much Lathe may do without asking, chosen with `--approval`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Only reading: anything else is denied.
    ReadOnly,
    /// Reading is allowed, everything else asks.
    #[default]
    Ask,
    /// File changes inside the workspace and safe or normal commands are allowed; dangerous
    /// commands and writes outside the workspace ask.
    Auto,
    /// Everything is allowed except critical commands, which ask.
    Full,
}

impl ApprovalMode {
    /// Every mode, from the most to the least careful.
    pub const ALL: [ApprovalMode; 4] = [
        ApprovalMode::ReadOnly,
        ApprovalMode::Ask,
        ApprovalMode::Auto,
        ApprovalMode::Full,
    ];

    /// The name used on the command line and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalMode::ReadOnly => "read-only",
            ApprovalMode::Ask => "ask",
            ApprovalMode::Auto => "auto",
            ApprovalMode::Full => "full",
        }
    }
}

impl fmt::Display for ApprovalMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ApprovalMode {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "read-only" | "readonly" | "ro" => Ok(ApprovalMode::ReadOnly),
            "ask" => Ok(ApprovalMode::Ask),
            "auto" => Ok(ApprovalMode::Auto),
            "full" => Ok(ApprovalMode::Full),
            _ => Err(PolicyError::UnknownMode(s.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in ApprovalMode::ALL {
            assert_eq!(m.as_str().parse::<ApprovalMode>().ok(), Some(m));
            assert_eq!(
                serde_json::to_string(&m).unwrap_or_default(),
                format!("\"{m}\"")
            );
            let back: Option<ApprovalMode> = serde_json::from_str(&format!("\"{m}\"")).ok();
            assert_eq!(back, Some(m));
        }
        assert_eq!(
            "read_only".parse::<ApprovalMode>().ok(),
            Some(ApprovalMode::ReadOnly)
        );
        let err = "yolo"
            .parse::<ApprovalMode>()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("yolo") && err.contains("read-only"), "{err}");
    }
}
