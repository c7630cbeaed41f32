//! The text tool protocol, for models without native tool calling: tools are described in the
//! system prompt, the model writes `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`,
//! and results come back as `<tool_result>` blocks in a user message.

use super::ChatRequest;
use crate::message::{AssistantMessage, Message};
use serde_json::{Value, json};

/// Where a text-protocol answer should end: after the first complete call, or where the model
/// starts to invent its result. OpenAI's API takes at most four stop strings.
///
/// Some servers (llama.cpp, vLLM) leave the stop string out of the text, so an answer may end
/// with a call whose closing tag is missing: the parser reads a complete call without it.
pub const TEXT_PROTOCOL_STOP: [&str; 2] = ["</tool_call>", "<tool_result"];

/// The system prompt section that teaches the text protocol for `tools` (definitions in the
/// function-calling shape).
pub fn text_protocol_instructions(tools: &[Value]) -> String {
    let example = tools
        .iter()
        .find_map(|t| t["function"]["name"].as_str())
        .unwrap_or("read_file");
    let mut out = String::from(
        "# Tools\n\n\
         Call tools by writing a JSON object inside <tool_call> tags in your reply, exactly like this:\n\n",
    );
    out.push_str(&format!(
        "<tool_call>\n{{\"name\": \"{example}\", \"arguments\": {{\"parameter\": \"value\"}}}}\n</tool_call>\n\n"
    ));
    out.push_str(
        "Rules:\n\
         - One call per reply, in one <tool_call> block.\n\
         - \"arguments\" is a JSON object holding the tool's parameters. Strings are JSON strings: \
         write a newline as \\n and a quote as \\\".\n\
         - After </tool_call>, stop and wait: the result comes back in a <tool_result> block. \
         Never write a <tool_result> yourself.\n\
         - Only call the tools listed below. When the task is done, answer without a call.\n\n\
         Available tools:\n",
    );
    for tool in tools {
        let function = &tool["function"];
        let Some(name) = function["name"].as_str() else {
            continue;
        };
        out.push_str(&format!("\n## {name}\n"));
        if let Some(description) = function["description"]
            .as_str()
            .filter(|d| !d.trim().is_empty())
        {
            out.push_str(description.trim());
            out.push('\n');
        }
        let parameters = function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object"}));
        out.push_str(&format!("Parameters (JSON Schema): {parameters}\n"));
    }
    out
}

/// `request` rewritten for the text protocol: no `tools`; the instructions appended to the
/// system prompt (or added as one); past assistant calls written back as `<tool_call>` blocks in
/// their text; tool results turned into a user message of `<tool_result>` blocks, since chat
/// templates without tool support drop the `tool` role; [`TEXT_PROTOCOL_STOP`] added to the stop
/// strings, so the model does not go on to invent the result; no forced tool choice (the text
/// protocol has none: the executor's reminder in the request is what asks for the call).
pub fn to_text_protocol(request: &ChatRequest) -> ChatRequest {
    let instructions = text_protocol_instructions(&request.tools);
    let mut messages: Vec<Message> = Vec::with_capacity(request.messages.len() + 1);
    if !matches!(request.messages.first(), Some(Message::System { .. })) {
        messages.push(Message::system(instructions.clone()));
    }
    for (i, message) in request.messages.iter().enumerate() {
        match message {
            Message::System { content } if i == 0 => {
                messages.push(Message::system(format!(
                    "{}\n\n{instructions}",
                    content.trim_end()
                )));
            }
            Message::Assistant(a) if !a.tool_calls.is_empty() => {
                let mut content = a.content.trim_end().to_string();
                for call in &a.tool_calls {
                    if !content.is_empty() {
                        content.push_str("\n\n");
                    }
                    let block = json!({"name": call.name, "arguments": Value::Object(call.arguments_object())});
                    content.push_str(&format!("<tool_call>\n{block}\n</tool_call>"));
                }
                messages.push(Message::Assistant(AssistantMessage {
                    content,
                    thinking: a.thinking.clone(),
                    tool_calls: Vec::new(),
                }));
            }
            Message::Tool(t) => {
                let block = format!(
                    "<tool_result name=\"{}\">\n{}\n</tool_result>",
                    t.tool_name, t.content
                );
                // Results of one turn go back together, as one user message.
                match (
                    messages.last_mut(),
                    matches!(
                        request.messages.get(i.wrapping_sub(1)),
                        Some(Message::Tool(_))
                    ),
                ) {
                    (Some(Message::User { content, images }), true) => {
                        content.push_str("\n\n");
                        content.push_str(&block);
                        images.extend(t.images.iter().cloned());
                    }
                    _ => messages.push(Message::user_with_images(block, t.images.clone())),
                }
            }
            other => messages.push(other.clone()),
        }
    }
    let mut options = request.options.clone();
    for stop in TEXT_PROTOCOL_STOP {
        if !options.stop.iter().any(|s| s == stop) {
            options.stop.push(stop.to_string());
        }
    }
    ChatRequest {
        messages,
        tools: Vec::new(),
        options,
        tool_choice: None,
        ..request.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn tools() -> Vec<Value> {
        vec![
            json!({"type": "function", "function": {"name": "read_file", "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}),
        ]
    }

    #[test]
    fn instructions_name_the_real_tools() {
        let text = text_protocol_instructions(&tools());
        assert!(text.contains("<tool_call>\n{\"name\": \"read_file\""));
        assert!(text.contains(
            "## read_file\nRead a file.\nParameters (JSON Schema): {\"type\":\"object\""
        ));
    }

    #[test]
    fn history_is_rewritten_for_models_without_tools() {
        let a = ToolCall::new("read_file", json!({"path": "a"}));
        let b = ToolCall::new("read_file", json!({"path": "b"}));
        let request = ChatRequest::new(
            "m",
            vec![
                Message::system("You are Lathe."),
                Message::user("go"),
                Message::Assistant(AssistantMessage {
                    content: "Reading.".into(),
                    thinking: Some("t".into()),
                    tool_calls: vec![a.clone(), b.clone()],
                }),
                Message::tool_result(&a, "A"),
                Message::tool_result(&b, "B"),
                Message::user("more"),
            ],
            tools(),
        );
        let mut request = request;
        request.tool_choice = Some("read_file".into());
        let out = to_text_protocol(&request);
        assert!(out.tools.is_empty());
        assert_eq!(out.tool_choice, None);
        assert_eq!(out.options.stop, TEXT_PROTOCOL_STOP);
        assert_eq!(out.messages.len(), 5);
        assert!(
            out.messages[0]
                .content()
                .starts_with("You are Lathe.\n\n# Tools")
        );
        let Message::Assistant(assistant) = &out.messages[2] else {
            panic!("not assistant")
        };
        assert!(assistant.tool_calls.is_empty());
        assert_eq!(assistant.thinking.as_deref(), Some("t"));
        assert_eq!(
            assistant.content,
            "Reading.\n\n<tool_call>\n{\"name\":\"read_file\",\"arguments\":{\"path\":\"a\"}}\n</tool_call>\n\n\
             <tool_call>\n{\"name\":\"read_file\",\"arguments\":{\"path\":\"b\"}}\n</tool_call>"
        );
        assert_eq!(
            out.messages[3],
            Message::user(
                "<tool_result name=\"read_file\">\nA\n</tool_result>\n\n<tool_result name=\"read_file\">\nB\n</tool_result>"
            )
        );
        assert_eq!(out.messages[4], Message::user("more"));
    }

    #[test]
    fn a_system_prompt_is_added_when_missing() {
        let out = to_text_protocol(&ChatRequest::new("m", vec![Message::user("hi")], tools()));
        assert!(
            matches!(&out.messages[0], Message::System { content } if content.starts_with("# Tools"))
        );
        assert_eq!(out.messages[1], Message::user("hi"));
    }
}
