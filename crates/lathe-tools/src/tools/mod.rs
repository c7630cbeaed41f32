//! The built-in tools, one file each. Registering a tool is one line in [`register_builtin`],
//! and that list feeds the agent, `lathe tool` and the MCP server alike.

pub mod command_output;
pub mod edit_file;
pub mod glob;
pub mod grep;
pub mod kill_command;
pub mod list_commands;
pub mod list_files;
pub mod read_file;
mod search_walk;
pub mod shell;
pub mod suggest;
pub mod text;
pub mod write_file;

use crate::Registry;

/// Registers every built-in tool.
pub fn register_builtin(registry: &mut Registry) {
    registry.register(grep::GrepTool);
    registry.register(glob::GlobTool);
    registry.register(read_file::ReadFileTool);
    registry.register(write_file::WriteFileTool);
    registry.register(edit_file::EditFileTool);
    registry.register(list_files::ListFilesTool);
    registry.register(shell::ShellTool);
    registry.register(command_output::CommandOutputTool);
    registry.register(list_commands::ListCommandsTool);
    registry.register(kill_command::KillCommandTool);
    let _ = registry;
}
