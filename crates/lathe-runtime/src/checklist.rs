//! The session's checklist: the short list of steps the model keeps for a task with the
//! `update_plan` tool, stored in the session so that front ends can show it ([`current`]), the
//! prompt can carry it through compaction, and a resumed session can restore it ([`restore`]).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::{Session, lock};

/// The most steps a plan holds: a plan is a short list to steer by, not a task tracker.
pub const MAX_STEPS: usize = 50;

/// The longest step, in characters: a step says what it does in a few words.
pub const MAX_STEP_CHARS: usize = 200;

/// One step of the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ChecklistStep {
    /// What the step does, in a few words.
    pub step: String,
    /// Where the step stands.
    pub status: StepStatus,
}

/// Where a step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// not started
    Pending,
    /// being worked on now (at most one step)
    InProgress,
    /// done
    Completed,
}

impl StepStatus {
    /// The step's mark in a checklist: `[x]` completed, `[>]` in progress, `[ ]` pending.
    pub fn mark(self) -> &'static str {
        match self {
            StepStatus::Completed => "[x]",
            StepStatus::InProgress => "[>]",
            StepStatus::Pending => "[ ]",
        }
    }
}

/// The plan the model last sent in `session` (empty when it sent none, or cleared it).
pub fn current(session: &Session) -> Vec<ChecklistStep> {
    session
        .existing_extension::<PlanState>()
        .map(|state| lock(&state.steps).clone())
        .unwrap_or_default()
}

/// The steps of the session's plan that are not completed, in order.
pub fn open_steps(session: &Session) -> Vec<ChecklistStep> {
    current(session)
        .into_iter()
        .filter(|s| s.status != StepStatus::Completed)
        .collect()
}

/// Sets the session's plan to `steps` as given (a resumed session's last plan), checked as a
/// call's would be; a plan that would not pass the checks is left out (`false`).
pub fn restore(session: &Session, steps: Vec<ChecklistStep>) -> bool {
    match checked(steps) {
        Ok(plan) => {
            session.extension(PlanState::default).replace(plan);
            true
        }
        Err(_) => false,
    }
}

/// The plan a result of this tool holds (the checklist it answered with), for a resumed
/// session: `None` when `text` is not such a result (an error, or shortened).
pub fn parse_checklist(text: &str) -> Option<Vec<ChecklistStep>> {
    if text == "The plan is cleared." {
        return Some(Vec::new());
    }
    let mut lines = text.lines();
    if !lines.next()?.starts_with("Plan updated (") {
        return None;
    }
    lines
        .map(|line| {
            let (mark, step) = line.split_at_checked(4)?;
            let status = [
                StepStatus::Completed,
                StepStatus::InProgress,
                StepStatus::Pending,
            ]
            .into_iter()
            .find(|s| mark.strip_suffix(' ') == Some(s.mark()))?;
            Some(ChecklistStep {
                step: step.to_owned(),
                status,
            })
        })
        .collect()
}

/// The session's plan.
#[derive(Default)]
struct PlanState {
    steps: Mutex<Vec<ChecklistStep>>,
    /// How many times the plan was set: front ends compare it to see that it changed.
    revision: AtomicU64,
}

impl PlanState {
    fn replace(&self, plan: Vec<ChecklistStep>) {
        *lock(&self.steps) = plan;
        self.revision.fetch_add(1, Ordering::SeqCst);
    }
}

/// How many times the session's plan was set (by `update_plan`, or [`restore`]): the agent
/// compares it before and after a turn's calls to tell front ends the plan changed.
pub fn revision(session: &Session) -> u64 {
    session
        .existing_extension::<PlanState>()
        .map_or(0, |state| state.revision.load(Ordering::SeqCst))
}

/// How many steps of `plan` are completed.
pub fn completed(plan: &[ChecklistStep]) -> usize {
    plan.iter()
        .filter(|s| s.status == StepStatus::Completed)
        .count()
}

/// The plan with each step's text on one line, or what the model should fix.
pub fn checked(plan: Vec<ChecklistStep>) -> Result<Vec<ChecklistStep>, String> {
    if plan.len() > MAX_STEPS {
        return Err(format!(
            "the plan has {} steps; keep it to at most {MAX_STEPS}: merge small steps, or plan \
             only the next part of the work",
            plan.len()
        ));
    }
    let mut steps = Vec::with_capacity(plan.len());
    for (i, step) in plan.into_iter().enumerate() {
        let number = i + 1;
        let text = step.step.split_whitespace().collect::<Vec<_>>().join(" ");
        if text.is_empty() {
            return Err(format!(
                "step {number} (plan[{i}].step) has no text: say in a few words what the step \
                 does, or leave the step out"
            ));
        }
        let chars = text.chars().count();
        if chars > MAX_STEP_CHARS {
            return Err(format!(
                "step {number} (plan[{i}].step) is {chars} characters long; keep each step to \
                 at most {MAX_STEP_CHARS} (a few words), and split a long step into several"
            ));
        }
        steps.push(ChecklistStep {
            step: text,
            status: step.status,
        });
    }
    let in_progress: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| s.status == StepStatus::InProgress)
        .map(|(i, _)| i + 1)
        .collect();
    if let [.., last] = in_progress.as_slice()
        && in_progress.len() > 1
    {
        let others: Vec<String> = in_progress[..in_progress.len() - 1]
            .iter()
            .map(usize::to_string)
            .collect();
        let all = if in_progress.len() == 2 {
            "both"
        } else {
            "all"
        };
        return Err(format!(
            "steps {} and {last} are {all} in_progress, and at most one step is in progress at a \
             time: keep in_progress the one you are working on, and mark each other one \
             completed if it is done or pending if it is not",
            others.join(", ")
        ));
    }
    Ok(steps)
}

/// The plan as a checklist: `[x]` completed, `[>]` in progress, `[ ]` pending.
pub fn render(plan: &[ChecklistStep]) -> String {
    if plan.is_empty() {
        return "The plan is cleared.".to_owned();
    }
    let mut text = format!("Plan updated ({}/{} done):", completed(plan), plan.len());
    for step in plan {
        text.push('\n');
        text.push_str(step.status.mark());
        text.push(' ');
        text.push_str(&step.step);
    }
    text
}

/// Checks `steps` as a call's would be and makes them the session's checklist: the checklist as
/// the model reads it, or what the model should fix (the old checklist is kept).
pub fn set(session: &Session, steps: Vec<ChecklistStep>) -> Result<Vec<ChecklistStep>, String> {
    let plan = checked(steps)?;
    session.extension(PlanState::default).replace(plan.clone());
    Ok(plan)
}
