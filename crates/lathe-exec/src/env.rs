//! The environment a command runs in: the parent's, minus secrets, plus settings that keep
//! programs from waiting for a terminal or a person.

use std::ffi::{OsStr, OsString};

/// Set for every command: no pager, no colour, no prompts, no interactive installers.
pub const AGENT_ENV: [(&str, &str); 6] = [
    ("TERM", "dumb"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("NO_COLOR", "1"),
];

/// Name fragments that mark a variable as secret (compared case-insensitively).
const SECRET_MARKERS: [&str; 4] = ["KEY", "SECRET", "TOKEN", "PASSWORD"];

/// Whether a variable's name looks like it holds a secret (`*KEY*`, `*SECRET*`, `*TOKEN*`,
/// `*PASSWORD*`, any case).
pub fn is_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
}

/// The environment for a command: `base` without secret-looking variables (unless `keep` names
/// them exactly), with [`AGENT_ENV`] set over it.
pub fn prepare_env(
    base: impl IntoIterator<Item = (OsString, OsString)>,
    keep: &[String],
) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = base
        .into_iter()
        .filter(|(name, _)| {
            !is_secret_name(name) || keep.iter().any(|kept| OsStr::new(kept) == name)
        })
        .filter(|(name, _)| !AGENT_ENV.iter().any(|(fixed, _)| OsStr::new(fixed) == name))
        .collect();
    env.extend(
        AGENT_ENV
            .iter()
            .map(|(name, value)| (OsString::from(name), OsString::from(value))),
    );
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn secrets_are_removed_unless_kept_and_agent_settings_win() {
        let base = pairs(&[
            ("PATH", "/usr/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("aws_secret_access_key", "x"),
            ("GITHUB_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("MY_Secret", "s"),
            ("KEEP_ME_TOKEN", "kept"),
            ("TERM", "xterm-256color"),
            ("PAGER", "less"),
            ("HOME", "/root"),
        ]);
        let env = prepare_env(base, &["KEEP_ME_TOKEN".to_owned()]);
        let get = |name: &str| {
            env.iter()
                .filter(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        for gone in [
            "OPENAI_API_KEY",
            "aws_secret_access_key",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "MY_Secret",
        ] {
            assert!(get(gone).is_empty(), "{gone} should be removed");
        }
        assert_eq!(get("KEEP_ME_TOKEN"), ["kept"]);
        assert_eq!(get("PATH"), ["/usr/bin"]);
        assert_eq!(get("HOME"), ["/root"]);
        assert_eq!(get("TERM"), ["dumb"]);
        assert_eq!(get("PAGER"), ["cat"]);
        for (name, value) in AGENT_ENV {
            assert_eq!(get(name), [value], "{name}");
        }
    }
}
