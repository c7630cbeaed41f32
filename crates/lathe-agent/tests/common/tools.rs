//! Small tools of the tests' own, shared by the agent test files: `cat` reads a workspace file,
//! `put` writes one.

use schemars::JsonSchema;
use serde::Deserialize;

use lathe_runtime::tool::ResultExt;
use lathe_runtime::{
    Effect, FileChange, Registry, Session, Tool, ToolContext, ToolKind, ToolOutput, ToolResult,
};

/// Reads a file of the workspace.
#[derive(Deserialize, JsonSchema)]
pub struct CatInput {
    /// The file.
    path: String,
}

/// `cat PATH`: the file's text, or an error naming it.
pub struct Cat;

impl Tool for Cat {
    const NAME: &'static str = "cat";
    type Input = CatInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Read
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![Effect::Read {
            path: input.path.clone(),
        }]
    }
    async fn run(&self, input: CatInput, ctx: ToolContext) -> ToolResult {
        let text = std::fs::read_to_string(ctx.session.workspace().root().join(&input.path))
            .or_model(|err| format!("cannot read {}: {err}", input.path))?;
        Ok(ToolOutput::ok(text))
    }
}

/// Writes a file of the workspace.
#[derive(Deserialize, JsonSchema)]
pub struct PutInput {
    /// The file.
    path: String,
    /// Its new content.
    content: String,
}

/// `put PATH CONTENT`: writes the file, reporting one line added.
pub struct Put;

impl Tool for Put {
    const NAME: &'static str = "put";
    type Input = PutInput;
    fn kind(&self) -> ToolKind {
        ToolKind::Edit
    }
    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![Effect::Write {
            path: input.path.clone(),
        }]
    }
    async fn run(&self, input: PutInput, ctx: ToolContext) -> ToolResult {
        std::fs::write(
            ctx.session.workspace().root().join(&input.path),
            &input.content,
        )
        .unwrap();
        Ok(ToolOutput::ok(format!("wrote {}", input.path))
            .with_change(FileChange::counted(input.path, 1, 0)))
    }
}

/// A registry of `cat` alone.
pub fn cat() -> Registry {
    let mut registry = Registry::new();
    registry.register(Cat);
    registry
}

/// A registry of `cat` and `put`.
pub fn cat_and_put() -> Registry {
    let mut registry = cat();
    registry.register(Put);
    registry
}
