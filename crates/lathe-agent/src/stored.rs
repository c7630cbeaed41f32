//! What a stored session says, read back: its history as the model goes on from it
//! (compactions read as their summaries, rewound messages left out), each turn's token counts
//! and the newest checklist, for `lathe sessions show` and a resumed session.

use lathe_runtime::FileChange;
use lathe_runtime::checklist::ChecklistStep;

use lathe_store::{SessionId, Store};

use crate::events::Event;
use crate::message::Message;
use crate::provider::Usage;

/// Each model turn's token counts, as the server gave them, from the stored `turn_finished`
/// events: numbered across the session (as `/diff N` numbers turns), turns without counts
/// left out.
pub fn turn_tokens(events: &[lathe_store::Event]) -> Vec<(u32, Usage)> {
    let mut turns = Vec::new();
    let mut turn = 0;
    for stored in events {
        if stored.kind != "turn_finished" {
            continue;
        }
        turn += 1;
        if let Ok(Event::TurnFinished {
            usage: Some(usage), ..
        }) = serde_json::from_value::<Event>(stored.payload.clone())
        {
            turns.push((turn, usage));
        }
    }
    turns
}

/// The session's newest plan, from its stored `plan_updated` events (`None`: it never had one),
/// leaving out the plans of turns a rewind cut (`conversation_rewound`): a resumed session goes
/// on with the plan its remaining conversation made.
pub fn last_plan(events: &[lathe_store::Event]) -> Option<Vec<ChecklistStep>> {
    // Turns are numbered across the session, as the rewind event numbers them.
    let mut turn = 0;
    let mut plans: Vec<(u32, Vec<ChecklistStep>)> = Vec::new();
    for stored in events {
        match stored.kind.as_str() {
            "turn_started" => turn += 1,
            "plan_updated" | "conversation_rewound" => {
                match serde_json::from_value::<Event>(stored.payload.clone()) {
                    Ok(Event::PlanUpdated { steps }) => plans.push((turn, steps)),
                    Ok(Event::ConversationRewound { turn: to, .. }) => {
                        plans.retain(|(made_in, _)| *made_in < to);
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    plans.pop().map(|(_, steps)| steps)
}

/// The tool calls of a session as its events recorded them, in order: the line shown for each
/// and the files it changed, with their diffs (the bytes the terminal showed).
#[derive(Debug, Default)]
pub struct Calls {
    /// Call ids, in the order the calls started.
    order: std::collections::VecDeque<String>,
    titles: std::collections::HashMap<String, String>,
    finished: std::collections::HashMap<String, (String, Vec<FileChange>)>,
}

impl Calls {
    /// Reads the calls from stored events (events that do not read back are skipped: a newer
    /// Lathe may have written them).
    pub fn from_events(events: &[lathe_store::Event]) -> Self {
        let mut calls = Calls::default();
        for stored in events {
            match serde_json::from_value::<Event>(stored.payload.clone()) {
                Ok(Event::ToolCallStarted {
                    call_id, summary, ..
                }) => {
                    calls.order.push_back(call_id.clone());
                    calls.titles.insert(call_id, summary);
                }
                Ok(Event::ToolCallFinished {
                    call_id,
                    summary,
                    changes,
                    ..
                }) => {
                    calls.finished.insert(call_id, (summary, changes));
                }
                _ => {}
            }
        }
        calls
    }

    /// The next call that started, in order: its id and the line shown for it (`None` when
    /// the events hold no more calls).
    pub fn next_started(&mut self) -> (Option<String>, Option<String>) {
        let id = self.order.pop_front();
        let title = id.as_ref().and_then(|id| self.titles.get(id).cloned());
        (id, title)
    }

    /// How call `id` finished: the line shown for it and the files it changed.
    pub fn take_finished(&mut self, id: &str) -> Option<(String, Vec<FileChange>)> {
        self.finished.remove(id)
    }
}

/// The stored history of `session`, as messages (rows that do not read back are skipped with a
/// warning: a newer Lathe may have written them).
///
/// Messages a compaction replaced ([`Event::ContextCompacted`]) are read as its summary.
/// Messages a rewind cut ([`Event::ConversationRewound`]) are left out: a resumed session goes
/// on from where the rewind left it.
pub fn stored_history(store: &Store, session: &SessionId) -> lathe_store::Result<Vec<Message>> {
    Ok(stored_history_seqs(store, session)?
        .into_iter()
        .map(|(message, _)| message)
        .collect())
}

/// [`stored_history`] with the seq of the newest stored message each one stands for (a
/// summary: the last message it replaced), for
/// [`Executor::resume_stored`](crate::executor::Executor::resume_stored): a compaction of the
/// resumed part is then recorded with the messages it replaced.
pub fn stored_history_seqs(
    store: &Store,
    session: &SessionId,
) -> lathe_store::Result<Vec<(Message, u64)>> {
    let rows = store.messages(session)?;
    let mut cut: Vec<(u64, u64)> = Vec::new();
    // Compactions: (first, last, summary), a later one covering the earlier ones it summarised.
    let mut compacted: Vec<(u64, u64, String)> = Vec::new();
    for event in store.events(session)? {
        if event.kind != "conversation_rewound" && event.kind != "context_compacted" {
            continue;
        }
        match serde_json::from_value::<Event>(event.payload) {
            Ok(Event::ConversationRewound {
                first_message,
                last_message,
                ..
            }) => cut.push((first_message, last_message)),
            Ok(Event::ContextCompacted {
                first_message,
                last_message,
                summary,
                ..
            }) if first_message > 0 && last_message >= first_message => {
                compacted.retain(|(from, to, _)| !(first_message <= *from && *to <= last_message));
                compacted.push((first_message, last_message, summary));
            }
            _ => {}
        }
    }
    let mut history = Vec::new();
    let mut told = vec![false; compacted.len()];
    for row in rows {
        if cut.iter().any(|&(from, to)| (from..=to).contains(&row.seq)) {
            continue;
        }
        // A summary goes where the first message after what it replaced is.
        for (i, (_, to, summary)) in compacted.iter().enumerate() {
            if !told[i] && row.seq > *to {
                told[i] = true;
                history.push((Message::user(summary.clone()), *to));
            }
        }
        if compacted
            .iter()
            .any(|(from, to, _)| (*from..=*to).contains(&row.seq))
        {
            continue;
        }
        match serde_json::from_value::<Message>(row.body) {
            Ok(message) => history.push((message, row.seq)),
            Err(err) => {
                tracing::warn!("skipping message {} of session {session}: {err}", row.seq);
            }
        }
    }
    for (i, (_, to, summary)) in compacted.iter().enumerate() {
        if !told[i] {
            history.push((Message::user(summary.clone()), *to));
        }
    }
    Ok(history)
}

#[cfg(test)]
mod tests {
    use lathe_runtime::checklist::StepStatus;
    use lathe_store::{NewSession, Store};

    use super::*;

    fn steps(text: &str) -> Vec<ChecklistStep> {
        vec![ChecklistStep {
            step: text.into(),
            status: StepStatus::InProgress,
        }]
    }

    #[test]
    fn the_newest_plan_is_read_back_and_a_rewind_takes_its_turns_plans_with_it() {
        let store = Store::open_in_memory().unwrap();
        let session = store
            .create_session(NewSession {
                workspace: "/w".into(),
                provider: "ollama".into(),
                model: "m".into(),
                approval: "ask".into(),
                title: None,
                parent: None,
                extra: serde_json::Value::Null,
            })
            .unwrap();
        let append = |event: Event| {
            let payload = serde_json::to_value(&event).unwrap();
            let kind = payload["type"].as_str().unwrap().to_owned();
            store.append_event(&session, &kind, &payload).unwrap();
        };
        let turn = |turn| Event::TurnStarted {
            turn,
            model: "m".into(),
        };
        assert_eq!(last_plan(&store.events(&session).unwrap()), None);
        append(turn(1));
        append(Event::PlanUpdated {
            steps: steps("first"),
        });
        append(turn(2));
        append(Event::PlanUpdated {
            steps: steps("second"),
        });
        let events = store.events(&session).unwrap();
        assert_eq!(last_plan(&events), Some(steps("second")));
        // `/rewind 2`: the second turn is cut, and the plan it made with it.
        append(Event::ConversationRewound {
            turn: 2,
            first_message: 3,
            last_message: 4,
        });
        assert_eq!(
            last_plan(&store.events(&session).unwrap()),
            Some(steps("first"))
        );
        // Turns go on being numbered across the session: the third turn's plan counts.
        append(turn(1));
        append(Event::PlanUpdated {
            steps: steps("third"),
        });
        assert_eq!(
            last_plan(&store.events(&session).unwrap()),
            Some(steps("third"))
        );
    }
}
