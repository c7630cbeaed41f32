//! The built-in tools, one file each. Registering a tool is one line in the `builtin_tools!`
//! list below (a unit struct implementing [`Tool`](crate::Tool)), and that list feeds the
//! agent, `lathe tool` and the MCP server alike.

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
pub mod update_plan;
pub mod write_file;

use crate::Registry;

/// The built-in tools, each once: `register_builtin` adds them in this order, and the list
/// fails to compile when two tools share a name or an alias.
macro_rules! builtin_tools {
    ($($tool:path),* $(,)?) => {
        /// The names of the built-in tools, in registration order.
        pub const BUILTIN_NAMES: &[&str] = &[$(<$tool as crate::Tool>::NAME),*];

        const _: () = assert!(
            crate::registry::names_are_unique(&[
                $(&[<$tool as crate::Tool>::NAME], <$tool as crate::Tool>::ALIASES),*
            ]),
            "two built-in tools share a name or an alias"
        );

        /// Registers every built-in tool.
        pub fn register_builtin(registry: &mut Registry) {
            $(registry.register($tool);)*
        }
    };
}

builtin_tools! {
    grep::GrepTool,
    glob::GlobTool,
    read_file::ReadFileTool,
    write_file::WriteFileTool,
    edit_file::EditFileTool,
    list_files::ListFilesTool,
    shell::ShellTool,
    command_output::CommandOutputTool,
    list_commands::ListCommandsTool,
    kill_command::KillCommandTool,
    update_plan::UpdatePlanTool,
}
