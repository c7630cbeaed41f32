//! The built-in tools, one file each. Registering a tool is one line in [`register_builtin`],
//! and that list feeds the agent, `lathe tool` and the MCP server alike.

pub mod glob;
pub mod grep;
mod search_walk;
pub mod read_file;
pub mod suggest;
pub mod text;

use crate::Registry;

/// Registers every built-in tool.
pub fn register_builtin(registry: &mut Registry) {
    registry.register(grep::GrepTool);
    registry.register(glob::GlobTool);
    registry.register(read_file::ReadFileTool);
    let _ = registry;
}
