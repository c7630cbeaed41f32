//! The executor's side of sub-agents: background results into the history before each
//! request, and no child left running when a run ends.

use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::Executor;
use crate::events::Event;
use crate::message::{AssistantMessage, Message, ToolCall};
use crate::runner::tally::RunTally;
use crate::subagent::{SUB_AGENT_RESULT, SubAgents};

/// What waiting for background sub-agents at the model's final answer came to.
pub(super) enum Waited {
    /// None was running and no result waits: the run can end.
    Nothing,
    /// Results wait: the model reads them in one more turn.
    Results,
    /// The user stopped the run while it waited.
    Cancelled,
}

impl Executor {
    /// Lets the model start sub-agents (`spawn_agent`, `read_sub_agent` must be in the
    /// registry already: [`SubAgents::register`]).
    pub fn set_sub_agents(&mut self, agents: Option<SubAgents>) {
        if let Some(agents) = &agents {
            agents.set_window(self.context.window());
        }
        self.sub_agents = agents;
    }

    /// The sub-agents, when the model may start them.
    pub fn sub_agents(&self) -> Option<&SubAgents> {
        self.sub_agents.as_ref()
    }

    /// Adds each background result that arrived as a `sub_agent_result` call and its result,
    /// pushed together so that no call is ever left without its result.
    pub(super) fn deliver_sub_agent_results(&mut self) {
        let Some(agents) = &self.sub_agents else {
            return;
        };
        for result in agents.take_results() {
            // Unique in the stored session (a resumed one included): numbered by the message
            // it is stored as.
            let seq = self.sink.recorded_messages() + 1;
            let call = ToolCall {
                id: Some(format!(
                    "{SUB_AGENT_RESULT}_{seq}_{}",
                    result.id.replace('-', "_")
                )),
                name: SUB_AGENT_RESULT.to_owned(),
                arguments: json!({ "id": result.id }),
            };
            self.push(Message::Assistant(AssistantMessage {
                tool_calls: vec![call.clone()],
                ..AssistantMessage::default()
            }));
            self.push(Message::tool_result(&call, result.text));
        }
    }

    /// At the model's final answer: waits for background sub-agents still running (the user
    /// can stop it), so that their results are read rather than lost.
    pub(super) async fn await_sub_agents(&mut self, cancel: &CancellationToken) -> Waited {
        let Some(agents) = self.sub_agents.clone() else {
            return Waited::Nothing;
        };
        let active = agents.active();
        if active > 0 {
            self.sink.emit(Event::Notice {
                message: format!(
                    "waiting for {active} background sub-agent{} to finish (Ctrl-C stops {})",
                    if active == 1 { "" } else { "s" },
                    if active == 1 { "it" } else { "them" },
                ),
            });
            if !agents.wait(cancel).await {
                return Waited::Cancelled;
            }
        }
        if agents.has_results() {
            Waited::Results
        } else {
            Waited::Nothing
        }
    }

    /// Counts what children changed since the last time in the run's report, labelled with
    /// each child.
    pub(super) fn fold_sub_agent_changes(&self, tally: &mut RunTally) {
        if let Some(agents) = &self.sub_agents {
            tally.sub_agent_files(agents.take_changes());
        }
    }

    /// Stops the sub-agents still running when a run ends (stopped, failed, out of turns).
    pub(super) async fn stop_sub_agents(&self) {
        if let Some(agents) = &self.sub_agents {
            agents.stop().await;
        }
    }
}
