//! Running a prepared call: its plan applied or its tool run, the result fitted to the budget.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::metadata::bound_metadata;
use super::{PreparedCall, Registry};
use crate::budget;
use crate::dispatch::{CallStatus, Outcome};
use crate::session::Session;
use crate::tool::{Plan, ToolContext, ToolOutput};

impl Registry {
    /// Runs a call without asking anybody: resolves, binds, plans or runs, and fits the result
    /// to the budget. For callers that have authorized the call themselves (tests, embedders);
    /// the agent, `lathe mcp` and `lathe tool` go through the [`Dispatcher`](crate::Dispatcher).
    pub async fn call(&self, name: &str, arguments: Value, ctx: ToolContext) -> ToolOutput {
        let call = match self.prepare(name, arguments, &ctx.session) {
            Ok(call) => call,
            Err(output) => return output,
        };
        match plan_off_thread(call, Arc::clone(&ctx.session)).await {
            Ok((_, Some(Err(output)))) => output,
            Ok((call, plan)) => {
                self.run_prepared(call, plan.and_then(Result::ok), ctx)
                    .await
            }
            Err(outcome) => outcome.output,
        }
    }

    /// Runs a prepared call: applies `plan` when one was made, runs the tool otherwise; then
    /// fits the result to the budget and reports what changed in the workspace's hooks and
    /// configuration.
    pub async fn run_prepared(
        &self,
        call: PreparedCall,
        plan: Option<Plan>,
        ctx: ToolContext,
    ) -> ToolOutput {
        let session = Arc::clone(&ctx.session);
        let name = call.name.clone();
        crate::watch::before_call(&session, call.kind);
        let future: BoxFuture<'static, ToolOutput> = match plan {
            Some(plan) => {
                let session = Arc::clone(&session);
                Box::pin(async move {
                    tokio::task::spawn_blocking(move || plan.apply(&session))
                        .await
                        .unwrap_or_else(|err| {
                            ToolOutput::error(format!("writing stopped unexpectedly: {err}"))
                        })
                })
            }
            None => call.bound.run(ctx),
        };
        let mut output = match AssertUnwindSafe(future).catch_unwind().await {
            Ok(output) => output,
            Err(panic) => internal_error(&name, &*panic),
        };
        bound_metadata(&mut output.metadata);
        let budget_chars = session.result_budget();
        let (text, saved) = budget::fit(std::mem::take(&mut output.text), budget_chars, &session);
        output.text = text;
        if let Some(saved) = saved {
            output.metadata.full_result = Some(saved.display().to_string());
        }
        // After the budget: what changed in git's hooks or `.lathe/` is never cut from view.
        crate::watch::after_call(&session, &mut output);
        output
    }
}

/// Plans `call` on a blocking thread (plans read files), handing the call back with the plan.
///
/// A plan that panics is a failed plan (`Some(Err)`, the result the model reads), like a run
/// that panics. `Err` is the end of a call whose planning thread never ran (the runtime is
/// shutting down): the call is lost with it, and nothing ran.
pub async fn plan_off_thread(
    call: PreparedCall,
    session: Arc<Session>,
) -> Result<(PreparedCall, Option<Result<Plan, ToolOutput>>), Outcome> {
    let name = call.name.clone();
    tokio::task::spawn_blocking(move || {
        let plan = std::panic::catch_unwind(AssertUnwindSafe(|| call.plan(&session)))
            .unwrap_or_else(|panic| Some(Err(internal_error(&call.name, &*panic))));
        (call, plan)
    })
    .await
    .map_err(|err| {
        Outcome::ended(
            CallStatus::Cancelled,
            format!("planning `{name}` stopped before it began ({err}); nothing ran"),
        )
    })
}

/// The result the model reads for a tool that panicked.
pub(super) fn internal_error(name: &str, panic: &(dyn std::any::Any + Send)) -> ToolOutput {
    let what = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    ToolOutput::error(format!(
        "internal error in `{name}`: {what}. This is a bug in Lathe, not in the call; try \
         another way"
    ))
}
