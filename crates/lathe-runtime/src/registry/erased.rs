//! Tools erased once: the trait objects the registry holds ([`DynTool`]), one call bound to its
//! input ([`BoundCall`]), and a call made ready to authorize and run ([`PreparedCall`]).
//!
//! This is where a typed tool's [`ToolError`](crate::tool::ToolError) becomes the error result
//! the model reads: everything above the registry handles [`ToolOutput`]s only.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::ToolDefinition;
use crate::dispatch::Judgement;
use crate::session::Session;
use crate::tool::{Effect, Plan, Tool, ToolContext, ToolKind, ToolOutput};

/// A tool behind a trait object, as the registry holds it.
///
/// Typed tools get this from [`Registry::register`](super::Registry::register). Tools known only at run time (from another
/// MCP server, an embedder's own) implement it directly and are added with
/// [`Registry::add`](super::Registry::add); their calls answer the same questions as a typed tool's ([`BoundCall`]).
pub trait DynTool: Send + Sync {
    /// The definition: name, schema, kind, hints.
    fn definition(&self) -> &ToolDefinition;

    /// Binds normalised arguments to the tool's input, or says why they do not fit (the
    /// registry turns that into a message naming the parameter to fix).
    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String>;

    /// Whether the tool is offered to the model in `session` now ([`Tool::offered`]). By
    /// default, always.
    fn offered(&self, session: &Session) -> bool {
        let _ = session;
        true
    }
}

/// One call with its input bound (typed, for a typed tool): what callers ask of a call before
/// and while it runs.
///
/// The defaults are the safe ones, as for [`Tool`]: a call that does not say what it does is
/// [`Effect::Unknown`] (asked about, refused in `read-only`), and it makes no plan.
pub trait BoundCall: Send {
    /// What the call would do, for the policy ([`Tool::effects`]). By default, one
    /// [`Effect::Unknown`].
    fn effects(&self, session: &Session) -> Vec<Effect> {
        let _ = session;
        vec![Effect::Unknown {
            what: "a tool added at run time that did not say what it does".to_owned(),
        }]
    }

    /// One line for people ([`Tool::title`]).
    fn title(&self) -> String;

    /// What the call would change, when the tool plans ([`Tool::plan`]). Blocking. By default,
    /// `None`: the call is run with [`BoundCall::run`].
    fn plan(&self, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        let _ = session;
        None
    }

    /// Runs the call (for tools that do not plan, or when no plan was made).
    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// A typed tool behind [`DynTool`], with its definition in one profile's form.
pub(super) struct Typed<T: Tool> {
    pub(super) tool: Arc<T>,
    pub(super) definition: ToolDefinition,
}

impl<T: Tool> DynTool for Typed<T> {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    fn bind(&self, arguments: &Value) -> Result<Box<dyn BoundCall>, String> {
        let input = T::Input::deserialize(arguments).map_err(|err| err.to_string())?;
        Ok(Box::new(Bound {
            tool: Arc::clone(&self.tool),
            input,
        }))
    }

    fn offered(&self, session: &Session) -> bool {
        self.tool.offered(session)
    }
}

/// A typed tool's call, its input deserialised.
struct Bound<T: Tool> {
    tool: Arc<T>,
    input: T::Input,
}

impl<T: Tool> BoundCall for Bound<T> {
    fn effects(&self, session: &Session) -> Vec<Effect> {
        self.tool.effects(&self.input, session)
    }

    fn title(&self) -> String {
        self.tool.title(&self.input)
    }

    fn plan(&self, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        // Erased here: above the registry a failed plan is the error result the model reads.
        self.tool
            .plan(&self.input, session)
            .map(|plan| plan.map_err(ToolOutput::from))
    }

    fn run(self: Box<Self>, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let Bound { tool, input } = *self;
        Box::pin(async move { tool.run(input, ctx).await.unwrap_or_else(ToolOutput::from) })
    }
}

/// A call whose tool name was resolved, whose arguments were normalised and bound to the
/// tool's input, and whose effects were worked out.
pub struct PreparedCall {
    /// The registered name the call resolved to.
    pub name: String,
    /// The normalised arguments.
    pub arguments: Value,
    /// What the tool does to the world, in general.
    pub kind: ToolKind,
    /// What this call would do, for the policy.
    pub effects: Vec<Effect>,
    /// One line for people.
    pub title: String,
    pub(super) judgement: Option<Judgement>,
    pub(super) bound: Box<dyn BoundCall>,
}

impl std::fmt::Debug for PreparedCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedCall")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .field("kind", &self.kind)
            .field("effects", &self.effects)
            .field("title", &self.title)
            .field("judgement", &self.judgement)
            .finish_non_exhaustive()
    }
}

impl PreparedCall {
    /// True when every effect of the call only reads: such calls run concurrently.
    pub fn only_reads(&self) -> bool {
        !self.effects.is_empty() && self.effects.iter().all(Effect::only_reads)
    }

    /// Works out what the call would change (blocking; see [`Tool::plan`]).
    pub fn plan(&self, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        self.bound.plan(session)
    }

    /// What the gate worked out about the call, once it has
    /// ([`Dispatcher::judge`](crate::Dispatcher::judge)).
    pub fn judgement(&self) -> Option<&Judgement> {
        self.judgement.as_ref()
    }

    pub(crate) fn set_judgement(&mut self, judgement: Judgement) {
        self.judgement = Some(judgement);
    }
}
