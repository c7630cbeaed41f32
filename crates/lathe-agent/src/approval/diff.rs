//! What an edit would do, worked out before it runs, so that the person approving it sees a diff.
//!
//! This is a preview only: the tool itself applies the edit (with its tolerant matching), so a
//! preview that cannot be worked out exactly falls back to the replaced fragments.

use std::io::Read;

use serde_json::Value;
use similar::TextDiff;

use lathe_tools::{Access, Workspace};

/// Files larger than this are not read for a preview: the diff would be unreadable anyway.
const MAX_PREVIEW_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Lines of context around each change in a preview.
const CONTEXT_LINES: usize = 3;

/// An edit's preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditPreview {
    /// The path, as shown to the model (relative to the workspace root).
    pub path: String,
    /// A unified diff.
    pub diff: String,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// The preview of an edit call (`write_file`, `edit_file`), when it can be worked out. Other
/// tools, and calls whose path is refused, have none.
pub fn preview_edit(tool: &str, arguments: &Value, workspace: &Workspace) -> Option<EditPreview> {
    if !matches!(tool, "write_file" | "edit_file") {
        return None;
    }
    let input_path = arguments.get("path")?.as_str()?;
    let resolved = workspace.resolve(input_path, Access::Write).ok()?;
    let shown = resolved.shown().to_owned();
    let current = read_text(workspace, &resolved);
    match tool {
        "write_file" => {
            let content = arguments.get("content")?.as_str()?;
            Some(diff_of(&shown, current.as_deref().unwrap_or(""), content))
        }
        "edit_file" => {
            let edits = edits_of(arguments);
            if edits.is_empty() {
                return None;
            }
            if let Some(mut text) = current {
                let original = text.clone();
                let mut exact = true;
                for edit in &edits {
                    if edit.old.is_empty() || !text.contains(edit.old) {
                        exact = false;
                        break;
                    }
                    text = if edit.all {
                        text.replace(edit.old, edit.new)
                    } else {
                        text.replacen(edit.old, edit.new, 1)
                    };
                }
                if exact {
                    return Some(diff_of(&shown, &original, &text));
                }
            }
            let old: Vec<&str> = edits.iter().map(|e| e.old).collect();
            let new: Vec<&str> = edits.iter().map(|e| e.new).collect();
            Some(diff_of(
                &shown,
                &with_newline(&old.join("\n")),
                &with_newline(&new.join("\n")),
            ))
        }
        _ => None,
    }
}

struct Edit<'a> {
    old: &'a str,
    new: &'a str,
    all: bool,
}

fn edits_of(arguments: &Value) -> Vec<Edit<'_>> {
    fn to_edit(v: &Value) -> Option<Edit<'_>> {
        let old = v.get("old_string")?.as_str()?;
        let new = v.get("new_string")?.as_str()?;
        let all = v
            .get("replace_all")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Some(Edit { old, new, all })
    }
    if let Some(list) = arguments.get("edits").and_then(Value::as_array) {
        return list.iter().filter_map(to_edit).collect();
    }
    to_edit(arguments).into_iter().collect()
}

fn read_text(workspace: &Workspace, path: &lathe_tools::ResolvedPath) -> Option<String> {
    let file = workspace.open_read(path).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_PREVIEW_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_PREVIEW_FILE_BYTES {
        return None;
    }
    String::from_utf8(bytes).ok()
}

fn with_newline(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') {
        text.to_owned()
    } else {
        format!("{text}\n")
    }
}

fn diff_of(path: &str, old: &str, new: &str) -> EditPreview {
    let diff = TextDiff::from_lines(old, new);
    let mut added = 0;
    let mut removed = 0;
    for change in diff.iter_all_changes() {
        match change.tag() {
            similar::ChangeTag::Insert => added += 1,
            similar::ChangeTag::Delete => removed += 1,
            similar::ChangeTag::Equal => {}
        }
    }
    let text = diff
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    EditPreview {
        path: path.to_owned(),
        diff: text,
        added,
        removed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.rs"), "fn main() {\n    old();\n}\n").unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn write_file_diffs_against_the_current_content() {
        let (_dir, ws) = workspace();
        let args = json!({"path": "a.rs", "content": "fn main() {\n    new();\n}\n"});
        let preview = preview_edit("write_file", &args, &ws).unwrap();
        assert_eq!(preview.path, "a.rs");
        assert_eq!((preview.added, preview.removed), (1, 1));
        assert!(
            preview.diff.contains("-    old();\n+    new();\n"),
            "{}",
            preview.diff
        );
        assert!(preview.diff.contains("+++ b/a.rs"), "{}", preview.diff);
    }

    #[test]
    fn write_file_of_a_new_file_is_all_additions() {
        let (_dir, ws) = workspace();
        let args = json!({"path": "new/b.txt", "content": "one\ntwo\n"});
        let preview = preview_edit("write_file", &args, &ws).unwrap();
        assert_eq!((preview.added, preview.removed), (2, 0));
    }

    #[test]
    fn edit_file_applies_the_replacement() {
        let (_dir, ws) = workspace();
        let args = json!({"path": "a.rs", "old_string": "old()", "new_string": "new()"});
        let preview = preview_edit("edit_file", &args, &ws).unwrap();
        assert!(
            preview.diff.contains("-    old();\n+    new();\n"),
            "{}",
            preview.diff
        );
        let many = json!({"path": "a.rs", "edits": [
            {"old_string": "old()", "new_string": "mid()"},
            {"old_string": "mid()", "new_string": "new();\n    more()"}
        ]});
        let preview = preview_edit("edit_file", &many, &ws).unwrap();
        assert_eq!((preview.added, preview.removed), (2, 1));
    }

    #[test]
    fn edit_file_without_an_exact_match_shows_the_fragments() {
        let (_dir, ws) = workspace();
        let args = json!({"path": "a.rs", "old_string": "nowhere", "new_string": "here"});
        let preview = preview_edit("edit_file", &args, &ws).unwrap();
        assert!(
            preview.diff.contains("-nowhere\n+here\n"),
            "{}",
            preview.diff
        );
    }

    #[test]
    fn no_preview_outside_the_workspace_or_for_other_tools() {
        let (_dir, ws) = workspace();
        let outside = json!({"path": "/etc/passwd", "content": "x"});
        assert!(preview_edit("write_file", &outside, &ws).is_none());
        assert!(preview_edit("shell", &json!({"command": "ls"}), &ws).is_none());
        assert!(preview_edit("write_file", &json!({"path": "a.rs"}), &ws).is_none());
    }
}
