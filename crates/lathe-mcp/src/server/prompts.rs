//! Project commands as MCP prompts: `prompts/list` names each `/NAME` template of the
//! workspace and the user, `prompts/get` fills it in with the `arguments` argument.

use std::path::Path;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, ListPromptsResult, Prompt,
    PromptArgument, PromptMessage, Role,
};

use lathe_config::project_commands::Commands;

/// The one argument every prompt takes: what follows `/NAME` in chat.
const ARGUMENTS: &str = "arguments";

/// The prompts of `workspace` (read again each time: a template added meanwhile is listed).
pub fn list(workspace: &Path) -> ListPromptsResult {
    let commands = Commands::load(workspace);
    let prompts = commands
        .all()
        .iter()
        .map(|command| {
            let hint = command
                .argument_hint
                .clone()
                .unwrap_or_else(|| "what follows the command's name in chat".to_owned());
            Prompt::new(
                command.name.clone(),
                command.description.clone(),
                Some(vec![
                    PromptArgument::new(ARGUMENTS)
                        .with_description(format!("Arguments: {hint}"))
                        .with_required(false),
                ]),
            )
        })
        .collect();
    ListPromptsResult::with_all_items(prompts)
}

/// The prompt `request.name` filled in with its `arguments` (a string; other JSON is used as
/// its text).
pub fn get(
    workspace: &Path,
    request: &GetPromptRequestParams,
) -> Result<GetPromptResponse, McpError> {
    let commands = Commands::load(workspace);
    let Some(command) = commands.get(&request.name) else {
        let known = if commands.is_empty() {
            "there are none".to_owned()
        } else {
            commands.names()
        };
        return Err(McpError::invalid_params(
            format!("no prompt `{}`; the prompts are: {known}", request.name),
            None,
        ));
    };
    let arguments = match request.arguments.as_ref().and_then(|a| a.get(ARGUMENTS)) {
        None | Some(serde_json::Value::Null) => String::new(),
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    };
    let mut result = GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        command.expand(&arguments),
    )]);
    if let Some(description) = &command.description {
        result = result.with_description(description.clone());
    }
    Ok(GetPromptResponse::Complete(result))
}
