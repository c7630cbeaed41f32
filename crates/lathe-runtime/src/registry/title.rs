//! The one line people see for a call: its tool's title, or a generic one.

use std::panic::AssertUnwindSafe;

use serde_json::Value;

use super::{Registry, shown_name};

impl Registry {
    /// The title of a call as its tool gives it (`read_file src/main.rs`), without a session:
    /// for showing calls made earlier. A call that does not prepare (an unknown tool, arguments
    /// that do not fit) gets [`generic_title`].
    pub fn title(&self, name: &str, arguments: &Value) -> String {
        let Ok(resolved) = self.resolve_name(name) else {
            return generic_title(name, arguments);
        };
        let index = self.by_name[resolved];
        let Ok(normalised) = self.normalise(index, arguments.clone()) else {
            return generic_title(name, arguments);
        };
        let title = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.entries[index]
                .bind(&normalised)
                .ok()
                .map(|bound| bound.title())
        }));
        match title {
            Ok(Some(title)) => shown_title(resolved, title, &normalised),
            _ => generic_title(resolved, &normalised),
        }
    }
}

/// Longest title, in characters.
const TITLE_CHARS: usize = 160;

/// Longest rendering of the arguments in a generic title, in characters.
const ARGUMENT_CHARS: usize = 100;

/// The line shown for a call whose tool titled it `title`: one line, or the generic title when
/// the tool gave no title of its own (the default, its bare name).
pub(super) fn shown_title(name: &str, title: String, arguments: &Value) -> String {
    if title == name {
        generic_title(name, arguments)
    } else {
        crate::text::one_line(&title, TITLE_CHARS)
    }
}

/// The title of a call whose tool gives none, or that could not be prepared (an unknown tool):
/// the name as written and its arguments, `name key=value ...`, on one line.
pub fn generic_title(name: &str, arguments: &Value) -> String {
    use crate::text::one_line;
    let scalar = |value: &Value| match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let rendered = match arguments.as_object() {
        Some(map) => map
            .iter()
            .map(|(key, value)| format!("{key}={}", one_line(&scalar(value), ARGUMENT_CHARS)))
            .collect::<Vec<_>>()
            .join(" "),
        None if arguments.is_null() => String::new(),
        None => one_line(&arguments.to_string(), ARGUMENT_CHARS),
    };
    let name = one_line(&shown_name(name), ARGUMENT_CHARS);
    let rendered = one_line(&rendered, ARGUMENT_CHARS);
    if rendered.is_empty() {
        name
    } else {
        format!("{name} {rendered}")
    }
}
