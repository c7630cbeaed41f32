//! `spawn_agent` and `read_sub_agent` over MCP, when a model is configured (`lathe mcp
//! --model`, `LATHE_MODEL` or `[model] name`, resolved as `lathe exec` resolves them).
//!
//! The client is the parent: each MCP session gets its own sub-agents (made at its first
//! `spawn_agent` call), children run by the agent's executor against the model over the
//! session's workspace, under the session's gate (an `explore` child read-only, a `general` one
//! the session's own mode, rules and remembered answers) and the `[agent]` limits. A child's
//! approval requests go to the client by elicitation, labelled with the child's id and task; a
//! client that cannot be asked that way gets a refusal that says how to allow the call. A
//! foreground child's steps are the call's progress notifications; `notifications/cancelled`
//! (or the session's end) stops it and kills its commands.

use std::sync::{Arc, Mutex, Weak};

use futures::future::BoxFuture;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RequestContext, RoleServer};

use lathe_agent::approval::{ApprovalDecision, ApprovalRequest, Approver};
use lathe_agent::executor::ExecutorConfig;
use lathe_agent::provider::Provider;
use lathe_agent::sink::EventSink;
use lathe_agent::subagent::{
    Parent, SerializedApprover, SpawnAgentTool, SubAgentConfig, SubAgents,
};
use lathe_runtime::{Registry, Session, Tool as _};

use super::approve::ElicitationApprover;
use super::gate::{self, GateConfig};
use lathe_config::agent_setup::{self, ModelArgs};
use lathe_config::setup::Setup;

/// The model and limits every session's sub-agents use.
pub struct SubAgentSetup {
    provider: Arc<dyn Provider>,
    config: ExecutorConfig,
    limits: SubAgentConfig,
    gates: GateConfig,
    /// The tools of a `general` child: the built-ins.
    registry: Arc<Registry>,
}

impl SubAgentSetup {
    /// The setup when a model is configured and sub-agents are not turned off
    /// (`[agent] max_sub_agents = 0`); `None` otherwise.
    pub fn resolve(
        setup: &Setup,
        args: &ModelArgs,
        gates: &GateConfig,
    ) -> anyhow::Result<Option<Arc<SubAgentSetup>>> {
        let resolved = agent_setup::resolve(setup, args, agent_setup::process_env)?;
        let (Some(model), Some(limits)) = (resolved.model.clone(), resolved.sub_agents) else {
            return Ok(None);
        };
        let provider = agent_setup::provider(&resolved)?;
        let mut config = ExecutorConfig::new(model);
        config.options = resolved.options.clone();
        config.tool_protocol = resolved.tool_protocol;
        config.idle_timeout = resolved.idle_timeout;
        Ok(Some(Arc::new(SubAgentSetup {
            provider,
            config,
            limits,
            gates: gates.clone(),
            registry: Arc::new(lathe_tools::builtin()),
        })))
    }

    /// Readies `session` for sub-agents (made at its first `spawn_agent` call).
    pub fn install(self: &Arc<Self>, session: &Arc<Session>) {
        let setup = Arc::clone(self);
        let weak = Arc::downgrade(session);
        session.extension(move || Slot {
            setup,
            relay: Arc::new(Relay {
                session: weak,
                asking: Mutex::new(None),
            }),
        });
    }
}

/// A session's sub-agent setup, kept in it.
struct Slot {
    setup: Arc<SubAgentSetup>,
    relay: Arc<Relay>,
}

/// Called before each call of an MCP session: a `spawn_agent` call becomes the one its
/// children's approval requests are asked through, and the session gets its sub-agents.
pub fn enter(
    session: &Arc<Session>,
    name: &str,
    context: &RequestContext<RoleServer>,
    request: &CallToolRequestParams,
) {
    if name != SpawnAgentTool::NAME {
        return;
    }
    let Some(slot) = session.existing_extension::<Slot>() else {
        return;
    };
    *slot.relay.asking.lock().unwrap_or_else(|e| e.into_inner()) =
        Some((context.clone(), request.clone()));
    if SubAgents::of_session(session).is_some() {
        return;
    }
    let Some(gate) = gate::of(session) else {
        return;
    };
    let setup = &slot.setup;
    let approver: Arc<dyn Approver> = Arc::new(SerializedApprover::new(
        Arc::clone(&slot.relay) as Arc<dyn Approver>
    ));
    let agents = SubAgents::new(
        setup.limits,
        Parent {
            provider: Arc::clone(&setup.provider),
            config: setup.config.clone(),
            // The children's own pipeline: the built-in tools and the session's gate.
            host: lathe_runtime::Host::builder(Arc::clone(&setup.registry), gate).build(),
            approver,
            session: Arc::clone(session),
            // Not stored: an MCP session is not a stored session; the transcripts stay
            // readable with read_sub_agent while the session lasts.
            sink: EventSink::detached(Arc::new(|_: &lathe_agent::events::Event| {})),
        },
    );
    agents.attach(session);
}

/// Asks the client about a child's call, through the latest `spawn_agent` request of the
/// session.
struct Relay {
    session: Weak<Session>,
    asking: Mutex<Option<(RequestContext<RoleServer>, CallToolRequestParams)>>,
}

impl Approver for Relay {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            let asking = self
                .asking
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone();
            let (Some((context, call)), Some(session)) = (asking, self.session.upgrade()) else {
                return ApprovalDecision::Refused {
                    message: "the session that started this sub-agent has ended".to_owned(),
                };
            };
            let Some(slot) = session.existing_extension::<Slot>() else {
                return ApprovalDecision::Refused {
                    message: "the session has no sub-agents".to_owned(),
                };
            };
            // The question the client shows names the child (its id and task) first.
            let mut labelled = request.clone();
            labelled.reasons = vec![format!(
                "{}: {}",
                request.description,
                request.reasons.join("; ")
            )];
            let approver = ElicitationApprover::new(
                &context,
                &call,
                &session,
                &slot.setup.registry,
                &slot.setup.gates,
                // An "always" answer is not offered for a sub-agent's call.
                None,
            );
            let decision = approver.approve(&labelled).await;
            if approver.take_input_required().is_some() {
                // A 2026-07-28 client answers by retrying the call; a child's call is not the
                // client's to retry.
                return ApprovalDecision::Refused {
                    message: format!(
                        "this call needs approval ({}), and this MCP client answers approvals by \
                         retrying its own call, which a sub-agent's call is not; it was not run. \
                         The user can allow it with an allow rule under [permissions] in \
                         .lathe/config.toml, or the client can do this step itself",
                        request.reasons.join("; ")
                    ),
                };
            }
            decision
        })
    }
}
