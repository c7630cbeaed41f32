//! A session's status, as stored and serialized.

use std::fmt;
use std::str::FromStr;

use rusqlite::types::{FromSql, FromSqlError, FromSqlResult, ToSql, ToSqlOutput, ValueRef};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Where a session stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// The agent is working on it (or its process died without saying otherwise).
    Running,
    /// The model finished the task.
    Completed,
    /// An unrecoverable error ended it.
    Failed,
    /// The user stopped it.
    Interrupted,
    /// It reached the turn limit.
    MaxTurns,
}

impl SessionStatus {
    /// Every status, in declaration order.
    pub const ALL: [SessionStatus; 5] = [
        SessionStatus::Running,
        SessionStatus::Completed,
        SessionStatus::Failed,
        SessionStatus::Interrupted,
        SessionStatus::MaxTurns,
    ];

    /// The stored (and serialized) name: `running`, `completed`, `failed`, `interrupted`,
    /// `max_turns`.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Running => "running",
            SessionStatus::Completed => "completed",
            SessionStatus::Failed => "failed",
            SessionStatus::Interrupted => "interrupted",
            SessionStatus::MaxTurns => "max_turns",
        }
    }
}

impl fmt::Display for SessionStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SessionStatus {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        SessionStatus::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| Error::UnknownStatus(s.to_owned()))
    }
}

impl ToSql for SessionStatus {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::from(self.as_str()))
    }
}

impl FromSql for SessionStatus {
    fn column_result(value: ValueRef<'_>) -> FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e| FromSqlError::Other(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn status_names_round_trip() {
        for status in SessionStatus::ALL {
            assert_eq!(status.as_str().parse::<SessionStatus>().unwrap(), status);
            let json = serde_json::to_value(status).unwrap();
            assert_eq!(json, json!(status.as_str()));
        }
        let err = "done".parse::<SessionStatus>().unwrap_err();
        assert_eq!(err.to_string(), "unknown session status 'done'");
    }
}
