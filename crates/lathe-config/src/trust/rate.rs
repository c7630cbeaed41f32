//! Which settings of a workspace file weaken safety, compared with what applies without it.

use std::path::PathBuf;

use lathe_policy::ApprovalMode;
use lathe_runtime::commands::UnavailableMode;

use super::Weakening;
use crate::config::Config;

/// The workspace file split by what it does to safety.
#[derive(Debug, Default)]
pub struct Split {
    /// The table to merge when the file is trusted: all of it (permission lists added to the
    /// base's rather than replacing them).
    pub trusted: toml::Table,
    /// The table to merge when it is not: the neutral and tightening settings only.
    pub safe: toml::Table,
    /// What was left out of `safe`.
    pub weakening: Vec<Weakening>,
    /// Tightening keys.
    pub tightening: Vec<String>,
}

/// Lists of strings as written, for comparisons with what `base` already has.
fn strings(value: &toml::Value) -> Vec<String> {
    match value {
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        other => vec![other.to_string()],
    }
}

fn path_strings(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect()
}

/// How careful an approval mode is: lower is more careful.
fn rank(mode: ApprovalMode) -> usize {
    ApprovalMode::ALL
        .iter()
        .position(|m| *m == mode)
        .unwrap_or(usize::MAX)
}

/// What one key does, compared with `base`.
enum Effect {
    Neutral,
    Tightens,
    Weakens(String),
}

/// Rates `section.key = value` of a workspace file against `base` (the configuration without
/// the file). Keys not listed here weaken: a setting added later is withheld until someone
/// decides what it does.
fn rate(section: &str, key: &str, value: &toml::Value, base: &Config) -> Effect {
    let new_entries = |have: Vec<String>| {
        strings(value)
            .into_iter()
            .filter(|entry| !have.contains(entry))
            .collect::<Vec<_>>()
    };
    match (section, key) {
        ("tools", "result_budget") => Effect::Neutral,
        ("tools", "read_roots") => {
            if new_entries(path_strings(&base.tools.read_roots)).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens("the file tools may read these directories".into())
            }
        }
        ("model", "base_url") => {
            if value.as_str() == base.model.base_url.as_deref() {
                Effect::Neutral
            } else {
                Effect::Weakens(
                    "the conversation, your code and any API key go to this server".into(),
                )
            }
        }
        (
            "model",
            "provider" | "name" | "api_key" | "context_window" | "keep_alive" | "think"
            | "temperature" | "max_tokens" | "tool_protocol" | "idle_timeout" | "prompt_profile",
        ) => Effect::Neutral,
        ("agent", "max_turns") => Effect::Neutral,
        // how long an idle `lathe mcp` session lives widens nothing it may do
        ("mcp", "session_timeout") => Effect::Neutral,
        // how many MCP tools are offered at once
        ("mcp", "defer_tools_over" | "defer_chars_over") => Effect::Neutral,
        ("mcp_servers", _) => Effect::Weakens(
            "Lathe starts this MCP server (its command runs as you, unsandboxed) or connects to it, and offers its tools to the model".into(),
        ),
        ("agent", "approval") => {
            let have = base.agent.approval.unwrap_or_default();
            match value.as_str().and_then(|v| v.parse::<ApprovalMode>().ok()) {
                Some(mode) if rank(mode) > rank(have) => Effect::Weakens(format!(
                    "more runs without asking than in the mode '{have}' that applies without the file"
                )),
                Some(mode) if rank(mode) < rank(have) => Effect::Tightens,
                Some(_) => Effect::Neutral,
                None => Effect::Weakens("an approval mode Lathe cannot rate".into()),
            }
        }
        ("permissions", "allow") => {
            if new_entries(base.permissions.allow.clone()).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens("calls matching these rules run without asking".into())
            }
        }
        ("permissions", "ask" | "deny") => {
            if strings(value).is_empty() {
                Effect::Neutral
            } else {
                Effect::Tightens
            }
        }
        // Split by the caller: exemptions (`!pattern`) weaken, patterns tighten.
        ("permissions", "sensitive_paths") => Effect::Tightens,
        ("shell", "sandbox") => match (value.as_bool(), base.shell.sandbox) {
            (Some(false), true) => Effect::Weakens("commands run without the sandbox".into()),
            (Some(true), false) => Effect::Tightens,
            _ => Effect::Neutral,
        },
        ("shell", "sandbox_network") => match (value.as_bool(), base.shell.sandbox_network) {
            (Some(true), false) => Effect::Weakens("sandboxed commands may use the network".into()),
            (Some(false), true) => Effect::Tightens,
            _ => Effect::Neutral,
        },
        ("shell", "sandbox_unavailable") => {
            let have = base.shell.sandbox_unavailable;
            match (value.as_str(), have) {
                (Some("run"), UnavailableMode::Ask) => Effect::Weakens(
                    "where Landlock is missing, commands run unsandboxed without asking".into(),
                ),
                (Some("ask"), UnavailableMode::Run) => Effect::Tightens,
                _ => Effect::Neutral,
            }
        }
        ("shell", "sandbox_write_paths") => {
            if new_entries(path_strings(&base.shell.sandbox_write_paths)).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens("sandboxed commands may write there".into())
            }
        }
        ("shell", "keep_env") => {
            if new_entries(base.shell.keep_env.clone()).is_empty() {
                Effect::Neutral
            } else {
                Effect::Weakens(
                    "commands get these variables (secrets, daemon sockets) that Lathe removes"
                        .into(),
                )
            }
        }
        (
            "shell",
            "command_timeout"
            | "command_timeout_exempt"
            | "preview"
            | "artifact_cap"
            | "max_running",
        ) => Effect::Neutral,
        // Limits of a fetch; `search_url` is left to trust (its host is reached even on a
        // private address).
        ("web", "timeout" | "max_bytes" | "max_redirects") => Effect::Neutral,
        ("memory", "path") => {
            if value.as_str() == Some(base.memory.path()) {
                Effect::Neutral
            } else {
                Effect::Weakens(
                    "every session's system prompt holds this file, and update_memory writes it"
                        .into(),
                )
            }
        }
        ("hooks", _) => Effect::Weakens(
            "runs these commands on your machine, unsandboxed, at these points of a session".into(),
        ),
        _ => Effect::Weakens("a setting Lathe does not rate; it applies only when trusted".into()),
    }
}

/// Permission lists of the workspace file are added to what the user's configuration has, so
/// that the file cannot drop the user's rules by replacing a list.
const ADDED_LISTS: &[&str] = &["allow", "ask", "deny", "sensitive_paths"];

fn base_list(base: &Config, key: &str) -> Vec<String> {
    match key {
        "allow" => base.permissions.allow.clone(),
        "ask" => base.permissions.ask.clone(),
        "deny" => base.permissions.deny.clone(),
        "sensitive_paths" => base.permissions.sensitive_paths.clone(),
        _ => Vec::new(),
    }
}

fn string_array(items: impl IntoIterator<Item = String>) -> toml::Value {
    toml::Value::Array(items.into_iter().map(toml::Value::String).collect())
}

/// Splits a workspace file (already checked to be a valid configuration) into what applies
/// when trusted, what applies when not, and the weakening settings left out.
pub fn split(file: &toml::Table, base: &Config) -> Split {
    let mut out = Split::default();
    for (section, value) in file {
        let toml::Value::Table(keys) = value else {
            // Not a section: the configuration has none such; keep it so that it is reported.
            out.trusted.insert(section.clone(), value.clone());
            out.safe.insert(section.clone(), value.clone());
            continue;
        };
        let mut trusted = toml::Table::new();
        let mut safe = toml::Table::new();
        for (key, value) in keys {
            let name = format!("{section}.{key}");
            let shown = value.to_string();
            if section == "permissions" && ADDED_LISTS.contains(&key.as_str()) {
                let have = base_list(base, key);
                let entries = strings(value);
                trusted.insert(
                    key.clone(),
                    string_array(have.iter().cloned().chain(entries.iter().cloned())),
                );
                let (kept, left): (Vec<String>, Vec<String>) = match key.as_str() {
                    "sensitive_paths" => entries.into_iter().partition(|e| !e.starts_with('!')),
                    _ => match rate(section, key, value, base) {
                        Effect::Weakens(_) => (Vec::new(), entries),
                        _ => (entries, Vec::new()),
                    },
                };
                let new_left: Vec<String> =
                    left.into_iter().filter(|e| !have.contains(e)).collect();
                if !new_left.is_empty() {
                    let effect = if key == "sensitive_paths" {
                        "these paths stop being sensitive: reading or changing them no longer asks"
                            .to_owned()
                    } else {
                        "calls matching these rules run without asking".to_owned()
                    };
                    out.weakening.push(Weakening {
                        key: name.clone(),
                        value: string_array(new_left).to_string(),
                        effect,
                    });
                }
                if !kept.is_empty() {
                    if key != "allow" {
                        out.tightening.push(name);
                    }
                    safe.insert(key.clone(), string_array(have.into_iter().chain(kept)));
                }
                continue;
            }
            trusted.insert(key.clone(), value.clone());
            match rate(section, key, value, base) {
                Effect::Neutral => {
                    safe.insert(key.clone(), value.clone());
                }
                Effect::Tightens => {
                    out.tightening.push(name);
                    safe.insert(key.clone(), value.clone());
                }
                Effect::Weakens(effect) => out.weakening.push(Weakening {
                    key: name,
                    value: shown,
                    effect,
                }),
            }
        }
        out.trusted
            .insert(section.clone(), toml::Value::Table(trusted));
        out.safe.insert(section.clone(), toml::Value::Table(safe));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trust::check_valid;
    use std::path::Path;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    fn keys(split: &Split) -> Vec<&str> {
        split.weakening.iter().map(|w| w.key.as_str()).collect()
    }

    #[test]
    fn weakening_settings_are_left_out_and_tightening_ones_kept() {
        let file = table(
            "[shell]\nsandbox = false\nsandbox_network = true\nsandbox_unavailable = \"run\"\n\
             sandbox_write_paths = [\"/opt\"]\nkeep_env = [\"SSH_AUTH_SOCK\"]\nmax_running = 3\n\
             [permissions]\nallow = [\"shell(*)\"]\ndeny = [\"shell(rm *)\"]\n\
             sensitive_paths = [\"prod/**\", \"!.env\"]\n\
             [agent]\napproval = \"full\"\nmax_turns = 5\n\
             [model]\nbase_url = \"http://203.0.113.9/\"\nname = \"m\"\n\
             [tools]\nread_roots = [\"/home\"]\nresult_budget = 100\n\
             [mcp]\nsession_timeout = 5\n",
        );
        let split = split(&file, &Config::default());
        assert_eq!(
            keys(&split),
            [
                "agent.approval",
                "model.base_url",
                "permissions.allow",
                "permissions.sensitive_paths",
                "shell.keep_env",
                "shell.sandbox",
                "shell.sandbox_network",
                "shell.sandbox_unavailable",
                "shell.sandbox_write_paths",
                "tools.read_roots",
            ]
        );
        let safe = toml::Value::Table(split.safe.clone());
        assert_eq!(safe["shell"].as_table().unwrap().len(), 1, "{safe}");
        assert_eq!(safe["shell"]["max_running"].as_integer(), Some(3));
        assert_eq!(safe["permissions"]["deny"].to_string(), "[\"shell(rm *)\"]");
        assert_eq!(
            safe["permissions"]["sensitive_paths"].to_string(),
            "[\"prod/**\"]"
        );
        assert!(safe["permissions"].get("allow").is_none());
        assert!(safe["agent"].get("approval").is_none());
        assert_eq!(safe["agent"]["max_turns"].as_integer(), Some(5));
        assert_eq!(safe["model"]["name"].as_str(), Some("m"));
        assert!(safe["model"].get("base_url").is_none());
        assert_eq!(safe["mcp"]["session_timeout"].as_integer(), Some(5));
        assert_eq!(
            split.tightening,
            ["permissions.deny", "permissions.sensitive_paths"]
        );
        let trusted = toml::Value::Table(split.trusted);
        assert_eq!(trusted["shell"]["sandbox"].as_bool(), Some(false));
        assert_eq!(trusted["agent"]["approval"].as_str(), Some("full"));
    }

    #[test]
    fn the_comparison_is_with_what_applies_without_the_file() {
        let base = check_valid(
            &table(
                "[shell]\nsandbox = false\nsandbox_write_paths = [\"/opt\"]\n\
                 [agent]\napproval = \"auto\"\n[permissions]\nallow = [\"shell(make *)\"]\n\
                 deny = [\"shell(sudo *)\"]\n",
            ),
            Path::new("user"),
        )
        .unwrap();
        // What the user already has is no grant; a stricter mode and the sandbox on tighten.
        let file = table(
            "[shell]\nsandbox = false\nsandbox_write_paths = [\"/opt\"]\n\
             [agent]\napproval = \"ask\"\n[permissions]\nallow = [\"shell(make *)\"]\n\
             deny = [\"shell(rm *)\"]\n",
        );
        let out = split(&file, &base);
        assert!(out.weakening.is_empty(), "{:?}", out.weakening);
        assert_eq!(out.tightening, ["agent.approval", "permissions.deny"]);
        // The user's deny rules stay: the file's are added, not put in their place.
        let safe = toml::Value::Table(out.safe);
        assert_eq!(
            safe["permissions"]["deny"].to_string(),
            "[\"shell(sudo *)\", \"shell(rm *)\"]"
        );
        let out = split(&table("[shell]\nsandbox = true\n"), &base);
        assert_eq!(out.tightening, ["shell.sandbox"]);
        let out = split(&table("[agent]\napproval = \"full\"\n"), &base);
        assert_eq!(keys(&out), ["agent.approval"]);
        assert!(
            out.weakening[0].effect.contains("'auto'"),
            "{:?}",
            out.weakening
        );
    }
}
