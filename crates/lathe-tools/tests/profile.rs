//! Issue 20: the compact profile of small windows, through the registry's real definitions
//! and the call pipeline: short definitions, tools on demand behind `more_tools` (run-time
//! tools too, whenever they are added), and everything back in the full profile.

use std::sync::Arc;
use std::time::Duration;

use lathe_policy::ApprovalMode::ReadOnly;
use lathe_runtime::{CallStatus, NonInteractive, Profile, Registry, Session};
use serde_json::json;

use crate::dispatch_support::{Fixture, Remote};

fn offered(registry: &Registry, session: &Session) -> Vec<String> {
    registry.offered(session).map(|d| d.name.clone()).collect()
}

#[test]
fn the_compact_profile_defers_the_optional_tools_and_shortens_the_rest() {
    let f = Fixture::new();
    let full = lathe_tools::builtin();
    let mut compact = lathe_tools::builtin();
    compact.use_profile(Profile::Compact);
    assert_eq!(compact.profile(), Profile::Compact);
    let listed = offered(&compact, &f.session);
    for optional in [
        "apply_patch",
        "ast_edit",
        "command_output",
        "update_memory",
        "read_document",
    ] {
        assert!(!listed.contains(&optional.to_owned()), "{listed:?}");
        assert!(compact.is_deferred(optional), "{optional}");
        // Still registered, still callable by name.
        assert!(compact.definition(optional).is_some());
    }
    assert!(listed.contains(&"more_tools".to_owned()), "{listed:?}");
    for core in [
        "read_file",
        "edit_file",
        "write_file",
        "shell",
        "grep",
        "glob",
    ] {
        assert!(listed.contains(&core.to_owned()), "{listed:?}");
        let (short, long) = (
            compact.definition(core).unwrap(),
            full.definition(core).unwrap(),
        );
        assert!(
            short.description.len() < long.description.len(),
            "{core}: {}",
            short.description
        );
    }
    // Rarely used parameters are not listed (grep's `multiline`), the common ones are.
    let grep = &compact.definition("grep").unwrap().parameters["properties"];
    assert!(grep.get("multiline").is_none() && grep.get("pattern").is_some());
}

#[test]
fn a_tool_added_at_run_time_waits_behind_more_tools_in_the_compact_profile() {
    let f = Fixture::new();
    let mut registry = lathe_tools::builtin();
    registry.use_profile(Profile::Compact);
    registry.add(Arc::new(Remote::weather())).unwrap();
    let name = "weather".to_owned();
    assert!(registry.is_deferred(&name));
    assert!(!offered(&registry, &f.session).contains(&name));
    // In the full profile it is offered up front, as are the built-ins, and more_tools goes.
    registry.use_profile(Profile::Full);
    let listed = offered(&registry, &f.session);
    assert!(listed.contains(&name), "{listed:?}");
    assert!(listed.contains(&"apply_patch".to_owned()), "{listed:?}");
    assert!(!listed.contains(&"more_tools".to_owned()), "{listed:?}");
    assert_eq!(
        registry.definition("grep"),
        lathe_tools::builtin().definition("grep")
    );
}

#[tokio::test]
async fn a_tool_on_demand_enabled_through_more_tools_is_offered_from_then_on() {
    let f = Fixture::new();
    let mut registry = lathe_tools::builtin();
    registry.use_profile(Profile::Compact);
    let dispatcher = f.dispatcher_with(ReadOnly, registry.clone());
    let enabled = tokio::time::timeout(
        Duration::from_secs(20),
        dispatcher.call(
            "more_tools",
            json!({"enable": ["command_output"]}),
            &NonInteractive,
            f.ctx(),
        ),
    )
    .await
    .expect("the call did not end");
    assert_eq!(enabled.status, CallStatus::Ok, "{}", enabled.output.text);
    assert!(offered(&registry, &f.session).contains(&"command_output".to_owned()));
}
