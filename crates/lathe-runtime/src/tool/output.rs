//! The result of one tool call: the text the model reads, its metadata and images.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::meta::{CommandMeta, FileChange, LineRange, Metadata};

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The model-facing text.
    pub text: String,
    /// True when the call failed in a way the model should read and fix.
    pub is_error: bool,
    /// What the call did, for user interfaces and programs: files changed, lines shown, the
    /// command it ran, where a cut result was saved, and the tool's own fields.
    pub metadata: Metadata,
    /// Images for a model that can see (a screenshot `read_file` read, an MCP server's image
    /// result), in the order they were made. A front end that cannot pass them on says so in
    /// the text it sends instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
}

/// One image in a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolImage {
    /// The media type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The encoded image bytes, base64 (standard alphabet, padded): the form both Ollama's
    /// `images` and OpenAI's `data:` URLs take, and MCP's image content.
    pub data: String,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
            metadata: Metadata::default(),
            images: Vec::new(),
        }
    }

    /// A result the model should read as a mistake to fix: say what to do next in `text`.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
            metadata: Metadata::default(),
            images: Vec::new(),
        }
    }

    /// Adds an image for the model to see ([`ToolOutput::images`]).
    pub fn with_image(mut self, image: ToolImage) -> Self {
        self.images.push(image);
        self
    }

    /// Adds one of the tool's own metadata entries ([`Metadata::extra`]). The typed fields
    /// have their own setters: [`ToolOutput::with_path`], [`ToolOutput::with_change`],
    /// [`ToolOutput::with_lines`], [`ToolOutput::with_command`].
    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        debug_assert!(
            !Metadata::is_typed_key(key),
            "`{key}` is a typed metadata field; use its setter"
        );
        self.metadata.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Names the file or directory the call worked on.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.metadata.path = Some(path.into());
        self
    }

    /// Records a file the call changed.
    pub fn with_change(mut self, change: FileChange) -> Self {
        self.metadata.changes.push(change);
        self
    }

    /// Records the lines of a file the call showed.
    pub fn with_lines(mut self, lines: LineRange) -> Self {
        self.metadata.lines = Some(lines);
        self
    }

    /// Says what a search or listing found, for people (`12 matches`).
    pub fn with_found(mut self, found: impl Into<String>) -> Self {
        self.metadata.found = Some(found.into());
        self
    }

    /// Records the command the call ran or touched.
    pub fn with_command(mut self, command: CommandMeta) -> Self {
        self.metadata.command = Some(command);
        self
    }

    /// Marks the result as state the model keeps ([`Metadata::pinned`]).
    pub fn pinned(mut self) -> Self {
        self.metadata.pinned = true;
        self
    }
}
