//! Lathe's built-in tools, one module each, on the runtime of `lathe-runtime` (the contract, the
//! registry, the dispatcher and the session services they use). Registering a tool is one line
//! in the `builtin_tools!` list below (a unit struct implementing [`Tool`]), and that list feeds
//! the agent, `lathe tool` and the MCP server alike through [`builtin`].
//!
//! # Example
//!
//! One front end's worth: a registry, a gate in `ask` mode, and an approver of its own.
//!
//! ```
//! use std::sync::Arc;
//!
//! use futures::future::BoxFuture;
//! use lathe_runtime::{
//!     ApprovalDecision, ApprovalMode, ApprovalRequest, Approver, CallStatus, Dispatcher, Gate,
//!     Session, ToolConfig, ToolContext, Workspace,
//! };
//! use serde_json::json;
//!
//! /// Says no to every question, and tells the model why.
//! struct Reviewer;
//!
//! impl Approver for Reviewer {
//!     fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
//!         // What a person would be shown: the call's title, why it asks, the planned diff.
//!         assert!(request.description.starts_with("write_file"));
//!         assert!(!request.reasons.is_empty());
//!         Box::pin(async {
//!             ApprovalDecision::Deny {
//!                 message: Some("not today".into()),
//!             }
//!         })
//!     }
//! }
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let root = dir.path().join("project");
//! # std::fs::create_dir(&root).unwrap();
//! # std::fs::write(root.join("notes.txt"), "TODO: one\n").unwrap();
//! let workspace = Workspace::new(&root).unwrap();
//! let session = Session::new(workspace, ToolConfig::default(), dir.path().join("state")).unwrap();
//! let dispatcher = Dispatcher::new(
//!     Arc::new(lathe_tools::builtin()),
//!     Arc::new(Gate::new(ApprovalMode::Ask, &root)),
//! );
//! let runtime = tokio::runtime::Runtime::new().unwrap();
//! let ctx = || ToolContext::new(Arc::clone(&session));
//!
//! // A read runs unasked in `ask` mode...
//! let arguments = json!({"pattern": "TODO"});
//! let found = runtime.block_on(dispatcher.call("grep", arguments, &Reviewer, ctx()));
//! assert_eq!(found.status, CallStatus::Ok);
//! assert!(found.output.text.contains("notes.txt"));
//!
//! // ...a change asks, and the answer is what the model reads.
//! let arguments = json!({"path": "notes.txt", "content": "done\n"});
//! let write = runtime.block_on(dispatcher.call("write_file", arguments, &Reviewer, ctx()));
//! assert_eq!(write.status, CallStatus::Denied);
//! assert_eq!(write.output.text, "the user denied this: not today");
//!
//! // A name the model made up is refused, with the names it may have meant.
//! let unknown = runtime.block_on(dispatcher.call("raed_file", json!({}), &Reviewer, ctx()));
//! assert_eq!(unknown.status, CallStatus::Refused);
//! assert!(unknown.output.text.contains("`read_file`"));
//! ```
//!
//! Adding a tool: `CONTRIBUTING.md` at the repository root.
#![deny(missing_docs)]

pub mod apply_patch;
pub mod ast_edit;
pub mod command_output;
pub mod edit_file;
pub mod glob;
pub mod grep;
pub mod kill_command;
pub mod list_commands;
pub mod list_files;
#[cfg(feature = "documents")]
pub mod read_document;
pub mod read_file;
pub mod resolve;
mod search_walk;
pub mod shell;
pub mod suggest;
pub mod update_memory;
pub mod update_plan;
pub mod write_file;

use lathe_runtime::{Registry, Tool};

/// The built-in tools, each once: `register_builtin` adds them in this order, and the list
/// fails to compile when two tools share a name or an alias.
macro_rules! builtin_tools {
    ($($(#[$cfg:meta])* $tool:path),* $(,)?) => {
        /// The names of the built-in tools, in registration order.
        pub const BUILTIN_NAMES: &[&str] = &[$($(#[$cfg])* <$tool as Tool>::NAME),*];

        const _: () = assert!(
            lathe_runtime::registry::names_are_unique(&[
                $($(#[$cfg])* &[<$tool as Tool>::NAME], $(#[$cfg])* <$tool as Tool>::ALIASES),*
            ]),
            "two built-in tools share a name or an alias"
        );

        /// Registers every built-in tool (and, with them, the document reader other tools
        /// hand saved documents to).
        pub fn register_builtin(registry: &mut Registry) {
            #[cfg(feature = "documents")]
            lathe_runtime::documents::provide_reader(read_document::read_path);
            $($(#[$cfg])* registry.register($tool);)*
        }
    };
}

/// A registry with every built-in tool.
pub fn builtin() -> Registry {
    let mut registry = Registry::new();
    register_builtin(&mut registry);
    registry
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

    use lathe_runtime::{Session, ToolConfig, Workspace};

    /// One row per tool (and per case a tool words differently): the call, then its title.
    #[test]
    fn titles_name_the_tool_and_what_the_call_works_on() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = Workspace::new(dir.path()).unwrap();
        let session =
            Session::new(workspace, ToolConfig::default(), dir.path().join(".state")).unwrap();
        let registry = super::builtin();
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
