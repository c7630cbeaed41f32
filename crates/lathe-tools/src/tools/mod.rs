//! The built-in tools, one file each. Registering a tool is one line in the `builtin_tools!`
//! list below (a unit struct implementing [`Tool`](crate::Tool)), and that list feeds the
//! agent, `lathe tool` and the MCP server alike.

pub mod apply_patch;
pub mod ast_edit;
pub mod command_output;
pub mod edit_file;
pub mod glob;
pub mod grep;
pub mod kill_command;
pub mod list_commands;
pub mod list_files;
pub mod more_tools;
#[cfg(feature = "documents")]
pub mod read_document;
pub mod read_file;
pub mod resolve;
mod search_walk;
pub mod shell;
pub mod suggest;
pub mod text;
pub mod update_memory;
pub mod update_plan;
pub mod write_file;

use crate::Registry;

/// The built-in tools, each once: `register_builtin` adds them in this order, and the list
/// fails to compile when two tools share a name or an alias.
macro_rules! builtin_tools {
    ($($(#[$cfg:meta])* $tool:path),* $(,)?) => {
        /// The names of the built-in tools, in registration order.
        pub const BUILTIN_NAMES: &[&str] = &[$($(#[$cfg])* <$tool as crate::Tool>::NAME),*];

        const _: () = assert!(
            crate::registry::names_are_unique(&[
                $($(#[$cfg])* &[<$tool as crate::Tool>::NAME], $(#[$cfg])* <$tool as crate::Tool>::ALIASES),*
            ]),
            "two built-in tools share a name or an alias"
        );

        /// Registers every built-in tool.
        pub fn register_builtin(registry: &mut Registry) {
            $($(#[$cfg])* registry.register($tool);)*
        }
    };
}

builtin_tools! {
    grep::GrepTool,
    glob::GlobTool,
    read_file::ReadFileTool,
    // The document parsers are the heaviest dependency: embedders can leave them out.
    #[cfg(feature = "documents")]
    read_document::ReadDocumentTool,
    write_file::WriteFileTool,
    edit_file::EditFileTool,
    apply_patch::ApplyPatchTool,
    list_files::ListFilesTool,
    shell::ShellTool,
    command_output::CommandOutputTool,
    list_commands::ListCommandsTool,
    kill_command::KillCommandTool,
    update_plan::UpdatePlanTool,
    update_memory::UpdateMemoryTool,
    resolve::ResolveTool,
    ast_edit::AstEditTool,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::{Registry, Session, ToolConfig, Workspace};

    /// One row per tool (and per case a tool words differently): the call, then its title.
    #[test]
    fn titles_name_the_tool_and_what_the_call_works_on() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let session =
            Session::new(workspace, ToolConfig::default(), dir.path().join(".state")).unwrap();
        let registry = Registry::builtin();
        let long = "x".repeat(300);
        let rows = [
            (
                "read_file",
                json!({"path": "src/main.rs"}),
                "read_file src/main.rs",
            ),
            (
                "read_file",
                json!({"path": "src/main.rs", "offset": 40}),
                "read_file src/main.rs (from line 40)",
            ),
            (
                "read_file",
                json!({"path": "a.rs", "offset": 1}),
                "read_file a.rs",
            ),
            ("cat", json!({"path": "a.rs"}), "read_file a.rs"),
            (
                "write_file",
                json!({"path": "a.txt", "content": "x\ny\n"}),
                "write_file a.txt",
            ),
            (
                "edit_file",
                json!({"path": "src/a.rs", "old_string": "x", "new_string": "y"}),
                "edit_file src/a.rs",
            ),
            ("list_files", json!({}), "list_files"),
            (
                "list_files",
                json!({"path": "src", "depth": 3}),
                "list_files src",
            ),
            (
                "shell",
                json!({"command": "cargo test"}),
                "shell cargo test",
            ),
            (
                "shell",
                json!({"command": "make\nmake install"}),
                "shell make …",
            ),
            (
                "grep",
                json!({"pattern": "fn main", "path": "src"}),
                "grep \"fn main\" in src",
            ),
            (
                "grep",
                json!({"pattern": "a\nb", "path": "."}),
                "grep \"a\\nb\"",
            ),
            (
                "glob",
                json!({"pattern": "*.rs", "path": "src"}),
                "glob *.rs in src",
            ),
            ("glob", json!({"pattern": "**/*.md"}), "glob **/*.md"),
            ("command_output", json!({"id": "3"}), "command_output 3"),
            ("command_output", json!({"id": 3}), "command_output 3"),
            ("kill_command", json!({"id": "cmd-3"}), "kill_command cmd-3"),
            ("list_commands", json!({}), "list_commands"),
            (
                "update_memory",
                json!({"action": "add", "entry": "Use tabs.\nAlways."}),
                "update_memory add Use tabs. Always.",
            ),
            (
                "update_memory",
                json!({"action": "remove", "entry": "3"}),
                "update_memory remove 3",
            ),
        ];
        for (name, arguments, title) in rows {
            let call = registry
                .prepare(name, arguments.clone(), &session)
                .unwrap_or_else(|out| panic!("{name} {arguments}: {}", out.text));
            assert_eq!(call.title, title, "{name} {arguments}");
        }
        let call = registry
            .prepare("shell", json!({ "command": long }), &session)
            .unwrap();
        assert!(call.title.chars().count() < 120, "{}", call.title);
        assert!(call.title.ends_with('…'), "{}", call.title);
    }
}
