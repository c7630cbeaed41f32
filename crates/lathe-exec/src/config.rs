//! How a [`Supervisor`](crate::Supervisor) is configured.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// Default cap on one command's artifact: past it, bytes are counted but not kept.
pub const DEFAULT_ARTIFACT_CAP: u64 = 1 << 30;
/// Default limit on commands running at once in one session.
pub const DEFAULT_MAX_RUNNING: usize = 16;
/// Default time between SIGTERM and SIGKILL when a command is killed: long enough for a program
/// to remove its temporary files, short enough that the person does not wait noticeably.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(2);

/// How much of a command's output the model sees in the result (the rest stays in the artifact).
/// In configuration: `"small"`, `"medium"` or `"large"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreviewBudget {
    /// About 4 KB.
    Small,
    /// About 10 KB. The default.
    #[default]
    Medium,
    /// About 32 KB.
    Large,
}

impl PreviewBudget {
    /// The budget in bytes of raw output (head and tail halves together).
    pub fn bytes(self) -> usize {
        match self {
            PreviewBudget::Small => 4 * 1024,
            PreviewBudget::Medium => 10 * 1024,
            PreviewBudget::Large => 32 * 1024,
        }
    }
}

impl fmt::Display for PreviewBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PreviewBudget::Small => "small",
            PreviewBudget::Medium => "medium",
            PreviewBudget::Large => "large",
        })
    }
}

/// The error of parsing a [`PreviewBudget`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown preview size '{0}': expected small, medium or large")]
pub struct ParseBudgetError(pub String);

impl FromStr for PreviewBudget {
    type Err = ParseBudgetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "small" => Ok(PreviewBudget::Small),
            "medium" => Ok(PreviewBudget::Medium),
            "large" => Ok(PreviewBudget::Large),
            _ => Err(ParseBudgetError(s.to_owned())),
        }
    }
}

/// The settings of one supervisor; built by [`SupervisorBuilder`](crate::SupervisorBuilder).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    pub(crate) state_dir: PathBuf,
    pub(crate) budget: PreviewBudget,
    pub(crate) artifact_cap: u64,
    pub(crate) command_timeout: Option<Duration>,
    pub(crate) timeout_exempt: Vec<String>,
    pub(crate) max_running: usize,
    pub(crate) keep_env: Vec<String>,
    pub(crate) kill_grace: Duration,
    /// When the guard starts: with the first command (`None`), or that long after it.
    pub(crate) guard_delay: Option<Duration>,
    pub(crate) shell: Option<PathBuf>,
    pub(crate) base_env: Option<Vec<(OsString, OsString)>>,
}

impl Config {
    pub(crate) fn new(state_dir: PathBuf) -> Self {
        Config {
            state_dir,
            budget: PreviewBudget::default(),
            artifact_cap: DEFAULT_ARTIFACT_CAP,
            command_timeout: None,
            timeout_exempt: Vec::new(),
            max_running: DEFAULT_MAX_RUNNING,
            keep_env: Vec::new(),
            kill_grace: DEFAULT_KILL_GRACE,
            guard_delay: None,
            shell: None,
            base_env: None,
        }
    }

    /// The hard time limit for `command`, unless an exempt prefix matches it. A prefix matches
    /// whole words: `cargo build` exempts `cargo build --release` but not `cargo buildx`.
    pub(crate) fn hard_timeout_for(&self, command: &str) -> Option<Duration> {
        let limit = self.command_timeout?;
        let command = command.trim_start();
        let exempt = self.timeout_exempt.iter().any(|prefix| {
            let prefix = prefix.trim();
            !prefix.is_empty()
                && command.starts_with(prefix)
                && command[prefix.len()..]
                    .chars()
                    .next()
                    .is_none_or(char::is_whitespace)
        });
        (!exempt).then_some(limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_parses_and_orders() {
        assert_eq!("Medium".parse::<PreviewBudget>(), Ok(PreviewBudget::Medium));
        assert_eq!(" small ".parse::<PreviewBudget>(), Ok(PreviewBudget::Small));
        let err = "huge".parse::<PreviewBudget>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown preview size 'huge': expected small, medium or large"
        );
        assert!(PreviewBudget::Small.bytes() < PreviewBudget::Medium.bytes());
        assert!(PreviewBudget::Medium.bytes() < PreviewBudget::Large.bytes());
        assert_eq!(PreviewBudget::default(), PreviewBudget::Medium);
    }

    #[test]
    fn exempt_prefixes_match_whole_words() {
        let mut config = Config::new(PathBuf::from("/tmp"));
        assert_eq!(config.hard_timeout_for("sleep 5"), None);
        config.command_timeout = Some(Duration::from_secs(5));
        config.timeout_exempt = vec!["cargo build".into(), "  make ".into(), String::new()];
        for (command, limited) in [
            ("cargo build --release", false),
            ("  cargo build", false),
            ("cargo buildx", true),
            ("cargo test", true),
            ("make", false),
            ("make -j4", false),
            ("makefoo", true),
            ("sleep 5", true),
        ] {
            assert_eq!(
                config.hard_timeout_for(command).is_some(),
                limited,
                "{command}"
            );
        }
    }
}
