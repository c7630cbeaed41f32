//! What can be read of a native tool call before it is whole: its name, and the file it works
//! on once a `path` (or `file_path`) argument has streamed in. A large `write_file` takes a
//! model tens of seconds to generate; this is what lets the terminal say `Writing notes.md…`
//! meanwhile instead of `Thinking…`.

use serde_json::Value;

/// A native tool call being generated (see [`Chunk::PartialCall`](super::Chunk::PartialCall)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialCall {
    /// Position of the call in the answer, from 0.
    pub index: usize,
    /// The tool name as the model wrote it.
    pub name: String,
    /// The file the call works on, once it can be read from the arguments so far.
    pub path: Option<String>,
}

/// Argument names that hold the file a call works on, in the spellings models use.
const PATH_KEYS: &[&str] = &["path", "file_path", "filePath"];

/// A path longer than this is not a path (or not one worth showing).
const MAX_PATH: usize = 4096;

/// The path of `arguments` when the whole call is known (an object, or a JSON string).
pub(crate) fn path_of(arguments: &Value) -> Option<String> {
    match arguments {
        Value::Object(map) => PATH_KEYS
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str))
            .filter(|p| !p.trim().is_empty())
            .map(str::to_string),
        Value::String(text) => {
            let mut scan = PathScan::default();
            scan.feed(text)
        }
        _ => None,
    }
}

/// Finds the first top-level `"path": "..."` in JSON arguments fed in pieces, reading each byte
/// once (the content of a large file streams past without being kept).
#[derive(Debug, Default)]
pub(crate) struct PathScan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The string being read is a top-level key, or the value of a path key: kept.
    keeping: bool,
    string: String,
    /// The last top-level key, while its value is awaited.
    key: Option<String>,
    after_colon: bool,
    found: bool,
}

impl PathScan {
    /// Feeds the next piece of the arguments; returns the path the first time it is complete.
    pub(crate) fn feed(&mut self, piece: &str) -> Option<String> {
        if self.found {
            return None;
        }
        for c in piece.chars() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    self.keep(c);
                } else if c == '\\' {
                    self.escaped = true;
                    self.keep(c);
                } else if c == '"' {
                    self.in_string = false;
                    if let Some(path) = self.end_string() {
                        self.found = true;
                        return Some(path);
                    }
                } else {
                    self.keep(c);
                }
                continue;
            }
            match c {
                '"' => {
                    self.in_string = true;
                    self.string.clear();
                    let is_key = self.depth == 1 && !self.after_colon;
                    let is_path_value = self.depth == 1
                        && self.after_colon
                        && self.key.as_deref().is_some_and(|k| PATH_KEYS.contains(&k));
                    self.keeping = is_key || is_path_value;
                }
                '{' | '[' => self.depth += 1,
                '}' | ']' => self.depth = self.depth.saturating_sub(1),
                ':' if self.depth == 1 => self.after_colon = true,
                ',' if self.depth == 1 => {
                    self.after_colon = false;
                    self.key = None;
                }
                _ => {}
            }
        }
        None
    }

    fn keep(&mut self, c: char) {
        if self.keeping && self.string.len() < MAX_PATH {
            self.string.push(c);
        }
    }

    /// A string ended: a key is remembered; a path key's value is the answer.
    fn end_string(&mut self) -> Option<String> {
        if !self.keeping {
            return None;
        }
        self.keeping = false;
        let text: String = serde_json::from_str(&format!("\"{}\"", self.string)).ok()?;
        if self.after_colon {
            Some(text).filter(|p| !p.trim().is_empty())
        } else {
            self.key = Some(text);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan_in_pieces(text: &str, size: usize) -> Option<String> {
        let mut scan = PathScan::default();
        let chars: Vec<char> = text.chars().collect();
        let mut found = None;
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            if let Some(path) = scan.feed(&piece) {
                assert!(found.is_none(), "told twice");
                found = Some(path);
            }
        }
        found
    }

    #[test]
    fn the_path_is_found_at_any_split_and_only_once() {
        let cases = [
            (
                r#"{"path": "src/main.rs", "content": "fn main() {}"}"#,
                Some("src/main.rs"),
            ),
            (
                r#"{"content": "say \"path\": \"no\"", "file_path": "a b/é.txt"}"#,
                Some("a b/é.txt"),
            ),
            (
                r#"{"edits": [{"path": "inner"}], "filePath": "C:\\new\\x.md"}"#,
                Some("C:\\new\\x.md"),
            ),
            (r#"{"command": "ls", "cwd": "x"}"#, None),
            (r#"{"path": 3}"#, None),
            (r#"{"path": ""}"#, None),
        ];
        for (text, want) in cases {
            for size in 1..=text.len() {
                assert_eq!(
                    scan_in_pieces(text, size).as_deref(),
                    want,
                    "{text} by {size}"
                );
            }
        }
    }

    #[test]
    fn a_path_that_is_still_streaming_is_not_shown_cut() {
        let mut scan = PathScan::default();
        assert_eq!(scan.feed(r#"{"path": "src/ma"#), None);
        assert_eq!(scan.feed(r#"in.rs""#).as_deref(), Some("src/main.rs"));
    }

    #[test]
    fn whole_arguments() {
        assert_eq!(path_of(&json!({"file_path": "a"})).as_deref(), Some("a"));
        assert_eq!(path_of(&json!("{\"path\": \"b\"}")).as_deref(), Some("b"));
        assert_eq!(path_of(&json!({"pattern": "x"})), None);
    }
}
