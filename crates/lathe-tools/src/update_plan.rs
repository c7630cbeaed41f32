//! `update_plan`: the short plan of steps the model keeps for a task. The checklist itself (its
//! steps, their checks, where the session keeps it) is the runtime's
//! `checklist` service ([`lathe_runtime::checklist`]).

use lathe_runtime::checklist::{self, ChecklistStep, completed, render};
use schemars::JsonSchema;
use serde::Deserialize;

use lathe_runtime::session::Session;
use lathe_runtime::tool::{
    Effect, Tool, ToolContext, ToolError, ToolHints, ToolKind, ToolOutput, ToolResult, hints_for,
};

/// Keep a short plan of the steps of the task, and update it as you go: send the whole plan
/// each time, every step with its status.
///
/// Use it for work of several steps: make the plan before you start, mark a step
/// `in_progress` when you start it and `completed` when it is done. At most one step is
/// `in_progress` at a time. Skip it for a task of one or two steps.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct UpdatePlanInput {
    /// Why the plan changed, in one sentence (optional).
    pub explanation: Option<String>,
    /// The whole plan, in order (at most 50 steps; an empty list clears it).
    pub plan: Vec<ChecklistStep>,
}

/// The `update_plan` tool.
#[derive(Debug, Default, Clone, Copy)]
pub struct UpdatePlanTool;

impl Tool for UpdatePlanTool {
    const NAME: &'static str = "update_plan";
    const COMPACT_DESCRIPTION: Option<&'static str> = Some(
        r#"A plan for a task of several steps: send the whole plan each time, one step `in_progress` at a time."#,
    );
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> =
        Some(&[("plan", "")]);
    type Input = UpdatePlanInput;

    fn kind(&self) -> ToolKind {
        ToolKind::Session
    }

    fn hints(&self) -> ToolHints {
        // Sending the same plan twice leaves the same plan.
        ToolHints {
            idempotent: true,
            ..hints_for(ToolKind::Session)
        }
    }

    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = (input, session);
        // Replaces the session's own plan: no file, no program, nothing outside the session.
        vec![Effect::OwnState { changes: true }]
    }

    fn title(&self, input: &Self::Input) -> String {
        if input.plan.is_empty() {
            return format!("{} (cleared)", Self::NAME);
        }
        format!(
            "{} ({}/{} done)",
            Self::NAME,
            completed(&input.plan),
            input.plan.len()
        )
    }

    async fn run(&self, input: UpdatePlanInput, ctx: ToolContext) -> ToolResult {
        let plan = checklist::set(&ctx.session, input.plan).map_err(ToolError::new)?;
        let text = render(&plan);
        let rows = serde_json::to_value(&plan).unwrap_or_default();
        Ok(ToolOutput::ok(text).with_meta("plan", rows).pinned())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::{Value, json};

    use super::*;
    use lathe_runtime::checklist::{StepStatus, current, parse_checklist};
    use lathe_runtime::{ToolConfig, Workspace};

    fn session() -> (tempfile::TempDir, Arc<Session>) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("ws")).unwrap();
        let workspace = Workspace::new(dir.path().join("ws")).unwrap();
        let session =
            Session::new(workspace, ToolConfig::default(), dir.path().join("state")).unwrap();
        (dir, session)
    }

    fn steps(rows: &[(&str, &str)]) -> Value {
        Value::Array(
            rows.iter()
                .map(|(step, status)| json!({"step": step, "status": status}))
                .collect(),
        )
    }

    async fn call(session: &Arc<Session>, arguments: Value) -> ToolOutput {
        crate::builtin()
            .call(
                "update_plan",
                arguments,
                ToolContext::new(Arc::clone(session)),
            )
            .await
    }

    #[test]
    fn a_checklist_reads_back_as_the_plan_it_shows() {
        let plan = vec![
            ChecklistStep {
                step: "Read [x] the parser".into(),
                status: StepStatus::Completed,
            },
            ChecklistStep {
                step: "Fix it".into(),
                status: StepStatus::InProgress,
            },
            ChecklistStep {
                step: "Test".into(),
                status: StepStatus::Pending,
            },
        ];
        assert_eq!(parse_checklist(&render(&plan)), Some(plan));
        assert_eq!(parse_checklist(&render(&[])), Some(Vec::new()));
        assert_eq!(parse_checklist("step 1 (plan[0].step) has no text"), None);
        assert_eq!(parse_checklist("Plan updated (1/2 done):\n[?] odd"), None);
    }

    #[tokio::test]
    async fn stores_the_plan_and_renders_a_checklist() {
        let (_dir, session) = session();
        let plan = steps(&[
            ("Read the parser", "completed"),
            ("Write a failing test", "completed"),
            ("Fix the   bug\n", "in_progress"),
            ("Run the suite", "pending"),
            ("Update the docs", "pending"),
        ]);
        let out = call(
            &session,
            json!({"explanation": "the bug is in the parser", "plan": plan}),
        )
        .await;
        assert!(!out.is_error, "{}", out.text);
        assert_eq!(
            out.text,
            "Plan updated (2/5 done):\n[x] Read the parser\n[x] Write a failing test\n\
             [>] Fix the bug\n[ ] Run the suite\n[ ] Update the docs"
        );
        let stored = current(&session);
        assert_eq!(stored.len(), 5);
        assert_eq!(
            stored[2],
            ChecklistStep {
                step: "Fix the bug".into(),
                status: StepStatus::InProgress
            }
        );
        // The metadata is the stored plan, as JSON.
        assert_eq!(
            out.metadata.extra("plan"),
            Some(&serde_json::to_value(&stored).unwrap())
        );
        assert_eq!(
            out.metadata.extra("plan").unwrap()[2]["status"],
            "in_progress"
        );
        // The next call replaces the plan.
        let out = call(&session, json!({"plan": steps(&[("Ship", "completed")])})).await;
        assert_eq!(out.text, "Plan updated (1/1 done):\n[x] Ship");
        assert_eq!(current(&session).len(), 1);
        // An empty plan clears it.
        let out = call(&session, json!({"plan": []})).await;
        assert!(!out.is_error, "{}", out.text);
        assert!(current(&session).is_empty());
    }

    #[test]
    fn the_title_counts_completed_steps() {
        let input = |plan: Value| -> UpdatePlanInput {
            serde_json::from_value(json!({ "plan": plan })).unwrap()
        };
        let five = input(steps(&[
            ("a", "completed"),
            ("b", "completed"),
            ("c", "in_progress"),
            ("d", "pending"),
            ("e", "pending"),
        ]));
        assert_eq!(UpdatePlanTool.title(&five), "update_plan (2/5 done)");
        assert_eq!(
            UpdatePlanTool.title(&input(json!([]))),
            "update_plan (cleared)"
        );
    }

    #[tokio::test]
    async fn mistakes_say_what_to_fix_and_keep_the_old_plan() {
        let (_dir, session) = session();
        let first = steps(&[("Start", "in_progress")]);
        assert!(!call(&session, json!({ "plan": first })).await.is_error);
        let cases = [
            (
                steps(&[("a", "in_progress"), ("b", "pending"), ("c", "in_progress")]),
                "steps 1 and 3 are both in_progress",
            ),
            (
                steps(&[
                    ("a", "in_progress"),
                    ("b", "in_progress"),
                    ("c", "in_progress"),
                ]),
                "steps 1, 2 and 3 are all in_progress",
            ),
            (
                steps(&[("a", "completed"), ("  \n ", "pending")]),
                "step 2 (plan[1].step) has no text",
            ),
            (
                steps(&[("a", "completed"), (&"x".repeat(201), "pending")]),
                "step 2 (plan[1].step) is 201 characters long",
            ),
            (
                Value::Array(vec![json!({"step": "s", "status": "pending"}); 51]),
                "the plan has 51 steps; keep it to at most 50",
            ),
        ];
        for (plan, expected) in cases {
            let out = call(&session, json!({ "plan": plan })).await;
            assert!(out.is_error, "{expected}: {}", out.text);
            assert!(out.text.contains(expected), "{expected}: {}", out.text);
            assert_eq!(current(&session)[0].step, "Start", "{expected}");
        }
        // Exactly at the limits is fine.
        let fifty = Value::Array(vec![
            json!({"step": "x".repeat(200), "status": "pending"});
            50
        ]);
        let out = call(&session, json!({ "plan": fifty })).await;
        assert!(!out.is_error, "{}", out.text);
        // A status that is not one of the three names the parameter and the choices.
        let out = call(&session, json!({"plan": steps(&[("a", "done")])})).await;
        assert!(out.is_error);
        assert!(
            out.text.contains("plan[0].status") && out.text.contains("\"in_progress\""),
            "{}",
            out.text
        );
        // Case and separators are forgiven, as for every enum.
        let out = call(&session, json!({"plan": steps(&[("a", "In-Progress")])})).await;
        assert!(!out.is_error, "{}", out.text);
    }

    #[test]
    fn the_schema_lists_the_statuses() {
        let registry = crate::builtin();
        let definition = registry.definition("update_plan").unwrap();
        let step = &definition.parameters["properties"]["plan"]["items"];
        assert_eq!(
            step["properties"]["status"]["enum"],
            json!(["pending", "in_progress", "completed"])
        );
        assert_eq!(definition.parameters["required"], json!(["plan"]));
        // Strict MCP validators refuse a `null` type or default.
        assert!(!definition.parameters.to_string().contains("null"));
        assert!(definition.hints.idempotent && !definition.hints.read_only);
    }
}
