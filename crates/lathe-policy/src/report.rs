//! What a decision looks like: for the agent, for `lathe policy check`, as JSON and as text.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::severity::Severity;

/// Whether Lathe may go ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// Go ahead without asking.
    Allow,
    /// Ask the person first.
    Ask,
    /// Refuse; the reasons say how to allow it.
    Deny,
}

impl Decision {
    /// The lowercase name.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The decision for one part of an action: a simple command, a file, a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartReport {
    /// What the part is: a command's normalised text, a path, a tool name.
    pub subject: String,
    /// Its severity.
    pub severity: Severity,
    /// Its decision.
    pub decision: Decision,
    /// Why: what it does, then which rule or mode decided.
    pub reasons: Vec<String>,
}

/// The decision for an action, with everything that led to it.
///
/// As JSON (`lathe policy check --json`):
/// `{"decision": "ask", "severity": "critical", "commands": ["rm -rf /"], "reasons": [...],
/// "parts": [...]}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionReport {
    /// The worst decision of every part (deny over ask over allow).
    pub decision: Decision,
    /// The worst severity of every part.
    pub severity: Severity,
    /// The normalised text of each simple command (empty for file and tool actions).
    pub commands: Vec<String>,
    /// Every reason, each prefixed with the part it concerns.
    pub reasons: Vec<String>,
    /// The decision for each part.
    pub parts: Vec<PartReport>,
}

impl DecisionReport {
    /// Builds the summary from the parts.
    pub(crate) fn from_parts(
        commands: Vec<String>,
        parts: Vec<PartReport>,
        extra: Vec<String>,
    ) -> Self {
        let decision = parts
            .iter()
            .map(|p| p.decision)
            .max()
            .unwrap_or(Decision::Allow);
        let severity = parts
            .iter()
            .map(|p| p.severity)
            .max()
            .unwrap_or(Severity::Safe);
        let mut reasons = Vec::new();
        for p in &parts {
            for r in &p.reasons {
                let line = if p.subject.is_empty() {
                    r.clone()
                } else {
                    format!("{}: {r}", p.subject)
                };
                if !reasons.contains(&line) {
                    reasons.push(line);
                }
            }
        }
        reasons.extend(extra);
        DecisionReport {
            decision,
            severity,
            commands,
            reasons,
            parts,
        }
    }

    /// The JSON form, one line.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The JSON form as `lathe policy check --json` prints it: one line, with the approval
    /// `mode` and the `command` line checked.
    pub fn to_json_line(&self, mode: &str, command: &str) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let Some(object) = value.as_object_mut() {
            object.insert("mode".into(), mode.into());
            object.insert("command".into(), command.into());
        }
        format!("{value}\n")
    }

    /// The report for people, as `lathe policy check` prints it: decision, severity and the
    /// approval `mode`, each command checked with its own decision and severity, then every
    /// reason.
    pub fn for_people(&self, mode: &str) -> String {
        let mut out = format!(
            "decision: {}\nseverity: {}\nmode:     {mode}\n",
            self.decision, self.severity
        );
        if self.parts.is_empty() {
            out.push_str("commands: none\n");
        } else {
            out.push_str("commands:\n");
            for part in &self.parts {
                out.push_str(&format!(
                    "  {:<5}  {:<9}  {}\n",
                    part.decision.as_str(),
                    part.severity.as_str(),
                    part.subject
                ));
            }
        }
        if !self.reasons.is_empty() {
            out.push_str("reasons:\n");
            for reason in &self.reasons {
                out.push_str(&format!("  - {reason}\n"));
            }
        }
        out
    }

    /// Whether the action may go ahead without asking.
    pub fn is_allowed(&self) -> bool {
        self.decision == Decision::Allow
    }
}

impl fmt::Display for DecisionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "decision: {}", self.decision)?;
        writeln!(f, "severity: {}", self.severity)?;
        if !self.parts.is_empty() {
            writeln!(f, "checked:")?;
            for p in &self.parts {
                writeln!(
                    f,
                    "  {:<5} {:<9} {}",
                    p.decision.as_str(),
                    p.severity.as_str(),
                    p.subject
                )?;
            }
        }
        if !self.reasons.is_empty() {
            writeln!(f, "reasons:")?;
            for r in &self.reasons {
                writeln!(f, "  - {r}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape_and_text() {
        let part = PartReport {
            subject: "rm -rf /".into(),
            severity: Severity::Critical,
            decision: Decision::Ask,
            reasons: vec!["deletes everything".into()],
        };
        let r = DecisionReport::from_parts(vec!["rm -rf /".into()], vec![part], vec![]);
        let v: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap_or_default();
        assert_eq!(v["decision"], "ask");
        assert_eq!(v["severity"], "critical");
        assert_eq!(v["commands"][0], "rm -rf /");
        assert_eq!(v["reasons"][0], "rm -rf /: deletes everything");
        let text = r.to_string();
        assert!(
            text.contains("decision: ask")
                && text.contains("severity: critical")
                && text.contains("- rm -rf /: deletes everything"),
            "{text}"
        );
        assert!(Decision::Allow < Decision::Ask && Decision::Ask < Decision::Deny);
    }
}
