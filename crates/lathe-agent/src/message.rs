//! Provider-neutral conversation history.
//!
//! Each provider writes these in its own wire format (see `provider::ollama` and
//! `provider::openai`); the history itself stays faithful to what the model produced: an
//! assistant turn keeps its thinking, text and tool calls, and each tool result names the call
//! it answers.

pub use lathe_runtime::ToolImage as Image;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The text.
        content: String,
    },
    /// What the user said.
    User {
        /// The text.
        content: String,
        /// Images for a model that can see (`lathe chat`'s `@shot.png`), sent after the text.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Image>,
    },
    /// What the model answered.
    Assistant(AssistantMessage),
    /// The result of one tool call.
    Tool(ToolResult),
}

/// An assistant turn as the model produced it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// The text the model wrote, with recovered tool calls and the completion marker removed.
    pub content: String,
    /// The model's thinking, when it sent any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Tool calls, native or recovered from text, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
}

/// The result of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers, when the call had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The name of the tool that was called.
    pub tool_name: String,
    /// What the model reads.
    pub content: String,
    /// Images the tool produced (an image `read_file` read), kept in the history with their
    /// data so that a resumed session sends them again. Tool messages cannot carry images in
    /// every API: each provider sends them in a user message after the results.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// The result is state the model keeps (its checklist: the tool said so,
    /// [`Metadata::pinned`](lathe_runtime::Metadata::pinned)): the newest pinned result is
    /// kept whole when older results are shortened. Stored with the message, so a resumed
    /// session keeps it too.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the server gave, when it gave one (Ollama often does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments, normally a JSON object.
    pub arguments: Value,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
            images: Vec::new(),
        }
    }

    /// A user message with images.
    pub fn user_with_images(content: impl Into<String>, images: Vec<Image>) -> Self {
        Message::User {
            content: content.into(),
            images,
        }
    }

    /// An assistant message with text only.
    pub fn assistant(content: impl Into<String>) -> Self {
        Message::Assistant(AssistantMessage {
            content: content.into(),
            ..AssistantMessage::default()
        })
    }

    /// The result of `call`, carrying its id and name.
    pub fn tool_result(call: &ToolCall, content: impl Into<String>) -> Self {
        Message::Tool(ToolResult {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: content.into(),
            images: Vec::new(),
            pinned: false,
        })
    }

    /// The images the message carries (a user's, a tool result's).
    pub fn images(&self) -> &[Image] {
        match self {
            Message::User { images, .. } => images,
            Message::Tool(t) => &t.images,
            Message::System { .. } | Message::Assistant(_) => &[],
        }
    }

    /// The text of the message (an assistant's content, a tool's output).
    pub fn content(&self) -> &str {
        match self {
            Message::System { content } | Message::User { content, .. } => content,
            Message::Assistant(a) => &a.content,
            Message::Tool(t) => &t.content,
        }
    }
}

/// What an assistant message says when the user stopped it: appended to the partial answer
/// (or alone, when nothing had come yet), so the model knows its reply was cut.
pub const INTERRUPTED_BY_USER: &str = "[interrupted by the user]";

/// Appends `message` to `history`, merging it into the last message when both are from the
/// user, or both from the assistant: chat templates that require the roles to alternate
/// (Gemma's, Mistral's) refuse two in a row. User texts are joined by a blank line; assistant
/// turns join their texts and thinking and keep all their calls, in order. Returns whether it
/// merged.
pub fn push_merged(history: &mut Vec<Message>, message: Message) -> bool {
    match (history.last_mut(), message) {
        (
            Some(Message::User { content, images }),
            Message::User {
                content: more,
                images: more_images,
            },
        ) => {
            join_text(content, &more);
            images.extend(more_images);
            true
        }
        (Some(Message::Assistant(last)), Message::Assistant(more)) => {
            join_text(&mut last.content, &more.content);
            match (&mut last.thinking, more.thinking) {
                (Some(thinking), Some(extra)) => join_text(thinking, &extra),
                (thinking @ None, extra) => *thinking = extra,
                (Some(_), None) => {}
            }
            last.tool_calls.extend(more.tool_calls);
            true
        }
        (_, message) => {
            history.push(message);
            false
        }
    }
}

/// `messages` with every run of user messages, and of assistant messages, merged into one
/// (see [`push_merged`]): for histories stored before the merging, or by another program.
pub fn merged(messages: impl IntoIterator<Item = Message>) -> Vec<Message> {
    let mut out = Vec::new();
    for message in messages {
        push_merged(&mut out, message);
    }
    out
}

fn join_text(text: &mut String, more: &str) {
    let more = more.trim();
    if more.is_empty() {
        return;
    }
    if !text.trim().is_empty() {
        text.push_str("\n\n");
    } else {
        text.clear();
    }
    text.push_str(more);
}

impl ToolCall {
    /// A call without an id.
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: None,
            name: name.into(),
            arguments,
        }
    }

    /// The arguments as an object: an object as is, a string holding a JSON object parsed, and
    /// anything else (null, a broken string) as an empty object. For wire formats that require
    /// an object.
    pub fn arguments_object(&self) -> serde_json::Map<String, Value> {
        match &self.arguments {
            Value::Object(map) => map.clone(),
            Value::String(s) => match serde_json::from_str::<Value>(s) {
                Ok(Value::Object(map)) => map,
                _ => serde_json::Map::new(),
            },
            _ => serde_json::Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_serialise_with_a_role_tag() {
        let call = ToolCall {
            id: Some("c1".into()),
            name: "read_file".into(),
            arguments: json!({"path": "a"}),
        };
        let history = vec![
            Message::system("s"),
            Message::user("u"),
            Message::Assistant(AssistantMessage {
                content: String::new(),
                thinking: Some("t".into()),
                tool_calls: vec![call.clone()],
            }),
            Message::tool_result(&call, "out"),
        ];
        let value = serde_json::to_value(&history).unwrap();
        assert_eq!(value[0], json!({"role": "system", "content": "s"}));
        assert_eq!(value[2]["role"], "assistant");
        assert_eq!(value[2]["tool_calls"][0]["arguments"]["path"], "a");
        assert_eq!(
            value[3],
            json!({"role": "tool", "tool_call_id": "c1", "tool_name": "read_file", "content": "out"})
        );
        let back: Vec<Message> = serde_json::from_value(value).unwrap();
        assert_eq!(back, history);
    }

    #[test]
    fn consecutive_messages_of_one_role_merge() {
        let call = ToolCall::new("read_file", json!({"path": "a"}));
        let history = merged([
            Message::system("s"),
            Message::user("first task"),
            Message::user("  "),
            Message::user("a malformed call: write it again"),
            Message::Assistant(AssistantMessage {
                content: "Reading.".into(),
                thinking: None,
                tool_calls: vec![call.clone()],
            }),
            Message::Assistant(AssistantMessage {
                content: String::new(),
                thinking: Some("then b".into()),
                tool_calls: vec![ToolCall::new("read_file", json!({"path": "b"}))],
            }),
            Message::tool_result(&call, "a"),
            Message::user("next"),
        ]);
        assert_eq!(history.len(), 5, "{history:#?}");
        assert_eq!(
            history[1],
            Message::user("first task\n\na malformed call: write it again")
        );
        let Message::Assistant(turn) = &history[2] else {
            panic!("{history:?}")
        };
        assert_eq!(turn.content, "Reading.");
        assert_eq!(turn.thinking.as_deref(), Some("then b"));
        assert_eq!(turn.tool_calls.len(), 2);
        // A system message or a result between two user messages keeps them apart.
        assert_eq!(history[4], Message::user("next"));
        let mut h = vec![Message::user("")];
        assert!(push_merged(&mut h, Message::user("b")));
        assert_eq!(h, [Message::user("b")]);
    }

    #[test]
    fn arguments_object_accepts_strings_and_tolerates_junk() {
        assert_eq!(
            ToolCall::new("x", json!("{\"a\":1}")).arguments_object()["a"],
            1
        );
        assert!(
            ToolCall::new("x", json!("{broken"))
                .arguments_object()
                .is_empty()
        );
        assert!(
            ToolCall::new("x", Value::Null)
                .arguments_object()
                .is_empty()
        );
    }
}
