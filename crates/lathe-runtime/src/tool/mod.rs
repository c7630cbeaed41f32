//! The typed tool contract.
//!
//! A tool is a struct implementing [`Tool`]: a fixed name, an input type whose JSON Schema (and
//! its doc comments) is what the model reads, and an async `run` that returns a [`ToolResult`].
//! The [`Registry`](crate::Registry) erases tools once, so the agent and the MCP server serve the
//! very same definitions.
//!
//! The parts: what a tool does to the world ([`ToolKind`], [`ToolHints`], [`Effect`]), what a
//! call returns ([`ToolOutput`], or a [`ToolError`] the model can fix), what a call may use
//! ([`ToolContext`]) and what a call that changes files would change ([`Plan`]).

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

mod context;
mod error;
mod kind;
mod output;
mod plan;

pub use crate::meta::{CommandMeta, CommandState, FileChange, LineRange, Metadata};
use crate::session::Session;
pub use context::{ProgressSink, ToolContext, ToolProgress};
pub use error::{OptionExt, ResultExt, ToolError, ToolResult};
pub use kind::{Effect, ToolHints, ToolKind, hints_for};
pub use output::{ToolImage, ToolOutput};
pub use plan::{Plan, PlannedWrite, current_stamp};

/// A typed tool. Implement this; the registry does the rest.
///
/// Everything a caller needs to know about a call is answered by the tool from its typed input,
/// deserialised once: what the policy judges ([`Tool::effects`]), the line people see
/// ([`Tool::title`]), what it would change ([`Tool::plan`]). Adding a built-in tool is one file
/// in `lathe-tools` and one line in its `builtin_tools!` list (`crates/lathe-tools/src/lib.rs`);
/// an embedder's tool is added with [`Registry::register`](crate::Registry::register). See
/// `CONTRIBUTING.md`.
pub trait Tool: Send + Sync + 'static {
    /// The model-facing name (snake_case, unique in a registry).
    const NAME: &'static str;
    /// Other names a model may call the tool by (`bash` for `shell`): resolved to this tool.
    /// Unique across a registry, like names.
    const ALIASES: &'static [&'static str] = &[];
    /// The input: its doc comment is the tool's description, its fields' doc comments describe
    /// the parameters.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;

    /// String parameters (by name, at any depth) the argument layer passes through as given,
    /// without the double-escape repair: the tool interprets their escapes itself (`edit_file`
    /// matches `old_string` literally first, so a `\n` the file really holds is found).
    const RAW_STRINGS: &'static [&'static str] = &[];

    /// The description the compact profile ([`Profile::Compact`](crate::Profile), for small
    /// windows) sends instead of the input's doc comment: shorter, keeping every rule the model
    /// needs to call the tool right. By default, `None`: the full description.
    const COMPACT_DESCRIPTION: Option<&'static str> = None;

    /// The parameters the compact profile advertises, each with its short description (`""`
    /// for none), in the schema's order. Parameters left out are rarely needed: they stay
    /// accepted, exactly as in the full profile, they are only not listed. By default, `None`:
    /// every parameter, with its full description.
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = None;

    /// Whether the compact profile offers the tool on demand only (behind `more_tools`, see
    /// [`Registry::defer`](crate::Registry::defer)): a tool few tasks need. By default, false.
    const ON_DEMAND: bool = false;

    /// What the tool does to the world, in general (scheduling: reads run concurrently).
    fn kind(&self) -> ToolKind;

    /// Hints for MCP clients; derived from [`Tool::kind`] unless a tool knows better.
    fn hints(&self) -> ToolHints {
        hints_for(self.kind())
    }

    /// Whether the tool is offered to the model in `session` now (listed in the definitions a
    /// request sends). By default, always; `resolve` only while an action is pending. A tool
    /// that is not offered can still be called by name.
    fn offered(&self, session: &Session) -> bool {
        let _ = session;
        true
    }

    /// What a call with `input` would do, as the approval policy judges it. The default is
    /// [`Effect::Unknown`], which asks (and is refused in `read-only`): a tool is judged to only
    /// read when it says so for this input.
    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = (input, session);
        vec![Effect::Unknown {
            what: format!("`{}` did not say what it does", Self::NAME),
        }]
    }

    /// One line for people: the tool and what it works on (`read_file src/main.rs`).
    fn title(&self, input: &Self::Input) -> String {
        let _ = input;
        Self::NAME.to_owned()
    }

    /// For tools that change files: works out what the call would change, without changing
    /// anything. `None` (the default) for tools that do not plan; `Some(Err)` is the mistake the
    /// model reads when the call cannot be done (the text to replace is not in the file).
    ///
    /// Called on a blocking thread. A tool that plans gets its [`Plan`] applied by the caller
    /// instead of [`Tool::run`]; its `run` should plan and apply too ([`run_planned`]), for
    /// callers that run tools directly.
    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolError>> {
        let _ = (input, session);
        None
    }

    /// Runs one call.
    ///
    /// The rule for failures: `Ok` is a call that worked, and every call that failed in a way
    /// the model should read and fix is `Err(`[`ToolError`]`)`, whether it is a line of text
    /// (`ToolError::new`) or carries what the call found out (a failed command's metadata, a
    /// plan that did not apply: `ToolError::from(output)`, or [`ToolOutput::into_result`] for an
    /// output whose [`ToolOutput::is_error`] was worked out elsewhere). Library errors become
    /// model-facing ones in one step with [`ResultExt::or_model`] and
    /// [`OptionExt::or_model`], so `?` works. The registry turns an `Err` into the error
    /// result the model reads; a fault of the runtime is never a `ToolError`.
    fn run(&self, input: Self::Input, ctx: ToolContext) -> impl Future<Output = ToolResult> + Send;
}

/// [`Tool::run`] for a tool that plans: plans on a blocking thread and applies the plan.
pub async fn run_planned<T: Tool + Clone>(
    tool: &T,
    input: T::Input,
    ctx: ToolContext,
) -> ToolResult {
    let tool = tool.clone();
    let session = Arc::clone(&ctx.session);
    tokio::task::spawn_blocking(move || match tool.plan(&input, &session) {
        Some(Ok(plan)) => plan.apply(&session).into_result(),
        Some(Err(error)) => Err(error),
        None => Err(ToolError::new(format!(
            "internal error: `{}` made no plan",
            T::NAME
        ))),
    })
    .await
    .unwrap_or_else(|err| {
        Err(ToolError::new(format!(
            "{} stopped unexpectedly: {err}",
            T::NAME
        )))
    })
}
