//! An MCP server's elicitation request put to the user in `lathe chat`: its message, then one
//! question per field of its form.

use std::io::Write;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::chat::input::{Input, Purpose, Read};
use crate::render::{Renderer, sanitize};
use lathe_mcp::client::{Elicit, Elicitation};

/// Asks on the chat's terminal; an empty answer to a required field, Ctrl-C or the end of
/// input declines.
pub fn terminal(input: Arc<Input>, renderer: Arc<Renderer>) -> Elicit {
    Arc::new(move |request: Elicitation| {
        let input = Arc::clone(&input);
        let renderer = Arc::clone(&renderer);
        Box::pin(async move {
            renderer.pause();
            input.discard_typed_ahead().await;
            let style = *renderer.style();
            {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(
                    out,
                    "{}",
                    style.yellow(&format!(
                        "The MCP server `{}` asks: {}",
                        sanitize(&request.server),
                        sanitize(&request.message)
                    ))
                );
                let _ = writeln!(
                    out,
                    "  {}",
                    style.dim("answer each field (Enter skips an optional one; Ctrl-C declines)")
                );
                let _ = out.flush();
            }
            let required: Vec<&str> = request.schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let mut content = Map::new();
            let empty = Map::new();
            let fields = request.schema["properties"].as_object().unwrap_or(&empty);
            for (name, field) in fields {
                let must = required.contains(&name.as_str());
                let kind = field["type"].as_str().unwrap_or("string");
                let choices: Vec<String> = field["enum"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect();
                let about = field["title"]
                    .as_str()
                    .or(field["description"].as_str())
                    .unwrap_or(name);
                let hint = match (kind, choices.is_empty()) {
                    (_, false) => choices.join("/"),
                    ("boolean", _) => "y/n".to_owned(),
                    (other, _) => other.to_owned(),
                };
                let prompt = format!(
                    "  {}{} [{hint}]: ",
                    sanitize(about),
                    if must { "" } else { " (optional)" }
                );
                loop {
                    let answer = match input.read(&prompt, Purpose::Answer).await {
                        Read::Line(line) => line.trim().to_owned(),
                        Read::Interrupted { .. } | Read::Eof => return None,
                    };
                    if answer.is_empty() {
                        if must {
                            return None;
                        }
                        break;
                    }
                    match value(kind, &choices, &answer) {
                        Some(value) => {
                            content.insert(name.clone(), value);
                            break;
                        }
                        None => {
                            let mut out = std::io::stdout().lock();
                            let _ = writeln!(out, "  {}", style.dim(&format!("give {hint}")));
                        }
                    }
                }
            }
            Some(Value::Object(content))
        })
    })
}

/// `answer` as a value of the field's type, or `None` when it is not one.
fn value(kind: &str, choices: &[String], answer: &str) -> Option<Value> {
    if !choices.is_empty() {
        return choices
            .iter()
            .any(|c| c == answer)
            .then(|| Value::String(answer.to_owned()));
    }
    match kind {
        "integer" => answer.parse::<i64>().ok().map(Value::from),
        "number" => answer.parse::<f64>().ok().map(Value::from),
        "boolean" => match answer.to_ascii_lowercase().as_str() {
            "y" | "yes" | "true" => Some(Value::Bool(true)),
            "n" | "no" | "false" => Some(Value::Bool(false)),
            _ => None,
        },
        _ => Some(Value::String(answer.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_take_the_fields_type() {
        assert_eq!(value("integer", &[], "42"), Some(Value::from(42)));
        assert_eq!(value("integer", &[], "4.2"), None);
        assert_eq!(value("boolean", &[], "Yes"), Some(Value::Bool(true)));
        assert_eq!(value("string", &[], "x y"), Some(Value::from("x y")));
        let pets = ["cat".to_owned(), "dog".to_owned()];
        assert_eq!(value("string", &pets, "dog"), Some(Value::from("dog")));
        assert_eq!(value("string", &pets, "cow"), None);
    }
}
