//! Typed result metadata: what a call did, for people and programs (never for the model, which
//! reads [`ToolOutput::text`](crate::ToolOutput::text)).
//!
//! The fields every front end needs are typed: the files a call changed (with their diffs), the
//! lines a read showed, the background command a call started or touched, where a cut result
//! was saved. Whatever else a tool reports goes into the open [`Metadata::extra`] map. The whole
//! serialises to one flat JSON object (MCP `structuredContent`, `lathe tool` output), the shape
//! the first cut produced: a single file change appears as top-level `path`, `created`, `added`,
//! `removed` and `diff`, and every change, single or not, under `changes`.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One file a call changed (or, in a plan, would change).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// The path as shown to the model: relative to the workspace root when inside it.
    pub path: String,
    /// The file did not exist before.
    #[serde(default)]
    pub created: bool,
    /// The file no longer exists after.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleted: bool,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// The unified diff (labelled `a/PATH`, `b/PATH`), cut with a note past
    /// [`MAX_CHANGE_DIFF_LINES`]; empty when the content is not text or too large to diff.
    #[serde(default)]
    pub diff: String,
}

impl FileChange {
    /// A change to an existing file known only by its line counts (no diff): for tools that
    /// change files without planning.
    pub fn counted(path: impl Into<String>, added: u64, removed: u64) -> Self {
        FileChange {
            path: path.into(),
            created: false,
            deleted: false,
            added,
            removed,
            diff: String::new(),
        }
    }
}

/// Longest diff, in lines, a [`FileChange`] keeps: the approval prompt, the stored event and the
/// terminal all show this same diff.
pub const MAX_CHANGE_DIFF_LINES: usize = 2000;

/// The lines of a file a call showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineRange {
    /// First line shown (1-based).
    pub first: u64,
    /// Last line shown (inclusive).
    pub last: u64,
    /// Lines in the file, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// How a command stands, as a call last saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CommandState {
    /// Still running (in the background).
    Running,
    /// Exited with a code.
    Exited {
        /// The exit code.
        exit_code: i32,
    },
    /// Killed by a signal it was not sent by the supervisor.
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// Stopped by the supervisor (on request, or when the session ended).
    Killed {
        /// Why, for people (`killed (aborted by user)`).
        label: String,
    },
    /// Stopped because it ran past its time limit.
    TimedOut {
        /// The limit it ran past.
        #[serde(rename = "limit_seconds", with = "seconds")]
        limit: Duration,
    },
    /// Ended in another way, described for people (`killed on request`).
    Other {
        /// What happened.
        label: String,
    },
}

/// A duration as seconds (`1.5`), the unit the first cut's JSON used for time limits.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(duration.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let seconds = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(seconds).map_err(serde::de::Error::custom)
    }
}

/// The background-capable command a call ran or touched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandMeta {
    /// The session's number for the command.
    #[serde(rename = "command_id")]
    pub id: u64,
    /// How it stands.
    pub status: CommandState,
}

/// A result's metadata. Build it with the `with_*` methods of [`ToolOutput`](crate::ToolOutput).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metadata {
    /// The files the call changed, in the order it changed them.
    pub changes: Vec<FileChange>,
    /// The file or directory the call worked on, as shown to the model (also set by calls that
    /// failed, so a front end can say which file an error is about).
    pub path: Option<String>,
    /// The lines of a file the call showed.
    pub lines: Option<LineRange>,
    /// The command the call ran or touched.
    pub command: Option<CommandMeta>,
    /// Where the whole result was saved when the text the model reads was cut to the budget.
    pub full_result: Option<String>,
    /// What a search or listing found, in a few words for people (`12 matches`, `1 entry`).
    pub found: Option<String>,
    /// Everything else a tool reports (counts, flags), by key.
    pub extra: Map<String, Value>,
    /// The result is state the model keeps and steers by (the session's checklist, from
    /// `update_plan`): the agent keeps its newest pinned result whole when it shortens older
    /// results to fit the window. Set with [`ToolOutput::pinned`](crate::ToolOutput::pinned);
    /// not part of the JSON form.
    pub pinned: bool,
}

/// The keys the typed fields take in the JSON form; [`Metadata::extra`] keys of these names
/// are overwritten by the typed values.
const TYPED_KEYS: &[&str] = &[
    "changes",
    "path",
    "created",
    "deleted",
    "added",
    "removed",
    "diff",
    "shown_lines",
    "command_id",
    "status",
    "full_result",
    "found",
];

impl Metadata {
    /// True when nothing is recorded.
    pub fn is_empty(&self) -> bool {
        *self == Metadata::default()
    }

    /// The flat JSON object (MCP `structuredContent`, `lathe tool` output): the typed fields
    /// first, then the tool's own, in the order the tool added them (the first cut's order).
    pub fn to_json(&self) -> Map<String, Value> {
        let mut map = Map::new();
        if let Some(path) = &self.path {
            map.insert("path".into(), Value::String(path.clone()));
        }
        if let [change] = self.changes.as_slice() {
            map.insert("path".into(), Value::String(change.path.clone()));
            map.insert("created".into(), Value::Bool(change.created));
            if change.deleted {
                map.insert("deleted".into(), Value::Bool(true));
            }
            map.insert("added".into(), change.added.into());
            map.insert("removed".into(), change.removed.into());
            map.insert("diff".into(), Value::String(change.diff.clone()));
        }
        if !self.changes.is_empty() {
            map.insert("changes".into(), to_value(&self.changes));
        }
        if let Some(lines) = &self.lines {
            map.insert("shown_lines".into(), to_value(lines));
        }
        if let Some(command) = &self.command {
            map.insert("command_id".into(), command.id.into());
            map.insert("status".into(), to_value(&command.status));
        }
        if let Some(saved) = &self.full_result {
            map.insert("full_result".into(), Value::String(saved.clone()));
        }
        if let Some(found) = &self.found {
            map.insert("found".into(), Value::String(found.clone()));
        }
        for (key, value) in &self.extra {
            if !map.contains_key(key) {
                map.insert(key.clone(), value.clone());
            }
        }
        map
    }

    /// Reads the JSON form back (what [`Metadata::to_json`] wrote; unknown keys land in
    /// [`Metadata::extra`], typed keys whose values do not parse too).
    pub fn from_json(mut map: Map<String, Value>) -> Metadata {
        let mut take = |key: &str| map.remove(key);
        let mut meta = Metadata::default();
        let mut back: Vec<(&str, Value)> = Vec::new();
        if let Some(changes) = take("changes") {
            match serde_json::from_value(changes.clone()) {
                Ok(changes) => meta.changes = changes,
                Err(_) => back.push(("changes", changes)),
            }
        }
        // A single change's flat copy is the change itself; a lone `path` is the subject.
        let single = meta.changes.len() == 1;
        for key in ["created", "deleted", "added", "removed", "diff"] {
            if let Some(value) = take(key)
                && !single
            {
                back.push((key, value));
            }
        }
        if let Some(path) = take("path") {
            match path {
                Value::String(path) if !single => meta.path = Some(path),
                Value::String(_) => {}
                other => back.push(("path", other)),
            }
        }
        if let Some(lines) = take("shown_lines") {
            match serde_json::from_value(lines.clone()) {
                Ok(lines) => meta.lines = Some(lines),
                Err(_) => back.push(("shown_lines", lines)),
            }
        }
        match (take("command_id"), take("status")) {
            (Some(id), Some(status)) => {
                match (id.as_u64(), serde_json::from_value(status.clone())) {
                    (Some(id), Ok(status)) => meta.command = Some(CommandMeta { id, status }),
                    _ => back.extend([("command_id", id), ("status", status)]),
                }
            }
            (Some(id), None) => back.push(("command_id", id)),
            (None, Some(status)) => back.push(("status", status)),
            (None, None) => {}
        }
        if let Some(saved) = take("full_result") {
            match saved {
                Value::String(saved) => meta.full_result = Some(saved),
                other => back.push(("full_result", other)),
            }
        }
        if let Some(found) = take("found") {
            match found {
                Value::String(found) => meta.found = Some(found),
                other => back.push(("found", other)),
            }
        }
        meta.extra = map;
        for (key, value) in back {
            meta.extra.insert(key.to_owned(), value);
        }
        meta
    }

    /// An extra value by key (for tools' own fields; the typed fields have their own names).
    pub fn extra(&self, key: &str) -> Option<&Value> {
        self.extra.get(key)
    }

    /// Lines added and removed over all changes.
    pub fn line_counts(&self) -> Option<(u64, u64)> {
        if self.changes.is_empty() {
            return None;
        }
        Some(
            self.changes
                .iter()
                .fold((0, 0), |(added, removed), change| {
                    (added + change.added, removed + change.removed)
                }),
        )
    }

    /// Whether `key` is one of the keys the typed fields write.
    pub fn is_typed_key(key: &str) -> bool {
        TYPED_KEYS.contains(&key)
    }
}

impl Serialize for Metadata {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::<String, Value>::deserialize(deserializer).map(Metadata::from_json)
    }
}

fn to_value(value: &impl Serialize) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(path: &str) -> FileChange {
        FileChange {
            path: path.into(),
            created: false,
            deleted: false,
            added: 2,
            removed: 1,
            diff: format!("--- a/{path}\n+++ b/{path}\n"),
        }
    }

    #[test]
    fn one_change_serialises_flat_as_before_and_round_trips() {
        let mut meta = Metadata {
            changes: vec![change("src/a.rs")],
            ..Metadata::default()
        };
        meta.extra.insert("replacements".into(), json!(1));
        let json = Value::Object(meta.to_json());
        assert_eq!(json["path"], "src/a.rs");
        assert_eq!(json["added"], 2);
        assert_eq!(json["removed"], 1);
        assert_eq!(json["created"], false);
        assert!(json.get("deleted").is_none());
        assert_eq!(json["replacements"], 1);
        assert_eq!(json["changes"][0]["path"], "src/a.rs");
        let back: Metadata = serde_json::from_value(json).unwrap();
        assert_eq!(back, meta);
    }

    #[test]
    fn commands_lines_and_saved_results_round_trip() {
        let meta = Metadata {
            changes: vec![change("a"), change("b")],
            path: Some("dir".into()),
            lines: Some(LineRange {
                first: 1,
                last: 20,
                total: Some(300),
            }),
            command: Some(CommandMeta {
                id: 3,
                status: CommandState::Exited { exit_code: 1 },
            }),
            full_result: Some("/tmp/x/result-1.txt".into()),
            found: Some("3 matches".into()),
            extra: Map::new(),
            pinned: false,
        };
        let json = serde_json::to_value(&meta).unwrap();
        assert_eq!(json["command_id"], 3);
        assert_eq!(json["status"], json!({"state": "exited", "exit_code": 1}));
        assert_eq!(
            json["shown_lines"],
            json!({"first": 1, "last": 20, "total": 300})
        );
        // Several changes: no flat copy, `path` is the subject.
        assert_eq!(json["path"], "dir");
        assert!(json.get("added").is_none());
        assert_eq!(serde_json::from_value::<Metadata>(json).unwrap(), meta);
    }

    #[test]
    fn command_states_keep_the_first_cuts_shape() {
        let cases = [
            (CommandState::Running, json!({"state": "running"})),
            (
                CommandState::Signaled { signal: 9 },
                json!({"state": "signaled", "signal": 9}),
            ),
            (
                CommandState::Killed {
                    label: "killed (aborted by user)".into(),
                },
                json!({"state": "killed", "label": "killed (aborted by user)"}),
            ),
            (
                CommandState::TimedOut {
                    limit: Duration::from_millis(1500),
                },
                json!({"state": "timed_out", "limit_seconds": 1.5}),
            ),
        ];
        for (state, expected) in cases {
            assert_eq!(serde_json::to_value(&state).unwrap(), expected);
            assert_eq!(
                serde_json::from_value::<CommandState>(expected).unwrap(),
                state
            );
        }
    }

    #[test]
    fn values_that_do_not_parse_are_kept_as_extra() {
        let json = json!({"status": "weird", "command_id": "x", "path": 3, "other": true});
        let meta: Metadata = serde_json::from_value(json.clone()).unwrap();
        assert!(meta.command.is_none() && meta.path.is_none());
        assert_eq!(Value::Object(meta.to_json()), json);
    }
}
