//! The loop's two guards: the repeat guard (a model that makes the same call again and again)
//! and the nudge (a task that asked for a change, finished with nothing written).

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// The third identical call in a row is not run...
pub const REFUSE_AT: u32 = 3;
/// ...and the run ends when the model makes it once more after being told.
pub const STOP_AT: u32 = 4;

/// What the repeat guard says about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repeat {
    /// Run it.
    Fresh,
    /// Do not run it; the model reads this.
    Refuse(String),
    /// Do not run it, and end the run: the model was told and did it again.
    Stop(String),
}

/// Counts identical calls (same tool, same arguments) in a row, across turns.
#[derive(Debug, Default, Clone)]
pub struct RepeatGuard {
    last: Option<String>,
    count: u32,
}

impl RepeatGuard {
    /// Checks the next call the model made.
    pub fn check(&mut self, name: &str, arguments: &Value) -> Repeat {
        let key = format!("{name}\u{0}{}", canonical(arguments));
        if self.last.as_deref() == Some(key.as_str()) {
            self.count += 1;
        } else {
            self.last = Some(key);
            self.count = 1;
        }
        if self.count >= STOP_AT {
            Repeat::Stop(format!(
                "the model made the same `{name}` call {} times in a row after being told it \
                 would not run again; the run was stopped",
                self.count
            ))
        } else if self.count >= REFUSE_AT {
            Repeat::Refuse(format!(
                "you made this exact `{name}` call, with the same arguments, {} times in a row, \
                 so it was not run again: the result would not change. Use the result you \
                 already have, try something different, or finish with your answer. Making the \
                 same call again ends the run.",
                self.count
            ))
        } else {
            Repeat::Fresh
        }
    }
}

/// JSON with object keys sorted at every level, so that key order does not make two calls
/// differ.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

/// What the model reads when it said it was done, was asked for a change, and changed nothing.
pub const NUDGE: &str = "You were asked to change files, but nothing has been written yet. If the \
task needs changes, make them now with the tools (edit_file, write_file, or shell). If it truly \
needs no change, say so and why, then finish.";

/// Whether a task asks for a change to files: it has a verb of change ("create", "fix",
/// "rename", "add", ...) and is not only a question about one.
pub fn asks_for_change(task: &str) -> bool {
    static CHANGE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?i)\b(create|creating|fix|fixes|fixing|rename|renaming|add|adding|write|writing|implement|implementing|change|update|updating|edit|modify|refactor|remove|delete|replace|move|insert|append|generate|patch|convert|rewrite|correct|make|bump|upgrade|translate|format|scaffold|set up|setup|introduce)\b",
        )
        .expect("the change pattern is valid")
    });
    static ONLY_ASKING: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(do not|don't|dont|without) (change|modify|edit|write|touch)")
            .expect("the question pattern is valid")
    });
    CHANGE.is_match(task) && !ONLY_ASKING.is_match(task)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_identical_call_is_refused_fourth_stops() {
        let mut guard = RepeatGuard::default();
        let args = json!({"path": "a.rs", "offset": 1});
        assert_eq!(guard.check("read_file", &args), Repeat::Fresh);
        assert_eq!(
            guard.check("read_file", &json!({"offset": 1, "path": "a.rs"})),
            Repeat::Fresh
        );
        let Repeat::Refuse(text) = guard.check("read_file", &args) else {
            panic!()
        };
        assert!(text.contains("3 times in a row"), "{text}");
        assert!(matches!(guard.check("read_file", &args), Repeat::Stop(_)));
    }

    #[test]
    fn a_different_call_resets_the_count() {
        let mut guard = RepeatGuard::default();
        let a = json!({"path": "a.rs"});
        let b = json!({"path": "b.rs"});
        for _ in 0..3 {
            assert_eq!(guard.check("read_file", &a), Repeat::Fresh);
            assert_eq!(guard.check("read_file", &b), Repeat::Fresh);
        }
        assert_eq!(guard.check("grep", &a), Repeat::Fresh);
        assert_eq!(guard.check("read_file", &a), Repeat::Fresh);
    }

    #[test]
    fn change_requests_are_recognised() {
        for task in [
            "Create a file hello.txt",
            "fix the failing test",
            "Rename foo to bar",
            "add a --verbose flag",
            "Please implement the parser",
        ] {
            assert!(asks_for_change(task), "{task}");
        }
        for task in [
            "What does src/main.rs do?",
            "explain the build",
            "Find where errors are handled, but do not change anything",
            "prefix matching in the address book",
        ] {
            assert!(!asks_for_change(task), "{task}");
        }
    }
}
