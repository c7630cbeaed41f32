//! The official MCP conformance suite (`@modelcontextprotocol/conformance`) against
//! `lathe mcp --listen`. `.ci/run` installs it, with Node 22, into `target/mcp-conformance`
//! and names that directory in `LATHE_CONFORMANCE_DIR`; without it this test prints a loud
//! SKIPPED line and passes.
//!
//! Every server scenario of the suite is in one of two tables: those that apply to Lathe must
//! pass; each other one says why it does not apply. A scenario in neither (a newer suite) fails
//! the test, so it gets looked at.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::mcp_support::Fixture;

/// Scenarios that apply, and must pass.
const APPLY: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "logging-set-level",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

const FIXTURE_TOOL: &str = "calls a fixture tool of the suite's reference server (test_*); \
                            Lathe serves its own coding tools only";
const FIXTURE_RESOURCE: &str = "reads a fixture resource of the suite (test://...); Lathe's \
                                resources are command outputs (mcp_sessions covers reading them)";

/// Scenarios that do not apply, and why.
const DO_NOT_APPLY: &[(&str, &str)] = &[
    (
        "completion-complete",
        "Lathe declares no `completions` capability",
    ),
    ("tools-call-simple-text", FIXTURE_TOOL),
    ("tools-call-image", FIXTURE_TOOL),
    ("tools-call-audio", FIXTURE_TOOL),
    ("tools-call-embedded-resource", FIXTURE_TOOL),
    ("tools-call-mixed-content", FIXTURE_TOOL),
    ("tools-call-with-logging", FIXTURE_TOOL),
    ("tools-call-error", FIXTURE_TOOL),
    ("tools-call-with-progress", FIXTURE_TOOL),
    (
        "tools-call-sampling",
        "a fixture tool that asks the client to sample; Lathe never samples",
    ),
    ("tools-call-elicitation", FIXTURE_TOOL),
    ("elicitation-sep1034-defaults", FIXTURE_TOOL),
    ("elicitation-sep1330-enums", FIXTURE_TOOL),
    ("resources-read-text", FIXTURE_RESOURCE),
    ("resources-read-binary", FIXTURE_RESOURCE),
    ("resources-templates-read", FIXTURE_RESOURCE),
    (
        "resources-subscribe",
        "Lathe does not declare `resources.subscribe`",
    ),
    (
        "resources-unsubscribe",
        "Lathe does not declare `resources.subscribe`",
    ),
    (
        "prompts-list",
        "Lathe declares no prompts (project commands as prompts come later)",
    ),
    ("prompts-get-simple", "Lathe declares no prompts"),
    ("prompts-get-with-args", "Lathe declares no prompts"),
    ("prompts-get-embedded-resource", "Lathe declares no prompts"),
    ("prompts-get-with-image", "Lathe declares no prompts"),
];

fn loud(message: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(message.as_bytes());
}

/// The installed suite: (node, the CLI's script).
fn suite() -> Option<(PathBuf, PathBuf)> {
    let dir = std::env::var_os("LATHE_CONFORMANCE_DIR").map(PathBuf::from)?;
    let node = dir.join("node_modules/.bin/node");
    let cli = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    // Whoever set the variable (.ci/run) meant the suite to run: a broken install fails the
    // test instead of skipping it.
    assert!(
        node.exists() && cli.exists(),
        "LATHE_CONFORMANCE_DIR={} holds no conformance suite ({} or {} is missing)",
        dir.display(),
        node.display(),
        cli.display()
    );
    Some((node, cli))
}

/// The scenario a result directory is for: `server-NAME-<timestamp>`.
fn scenario_of(dir: &Path) -> Option<String> {
    let name = dir.file_name()?.to_str()?.strip_prefix("server-")?;
    // The timestamp starts with the year: `-2026-12-01T...`.
    let bytes = name.as_bytes();
    let at = (0..bytes.len().saturating_sub(6)).rev().find(|&i| {
        bytes[i] == b'-'
            && bytes[i + 1..i + 5].iter().all(u8::is_ascii_digit)
            && bytes[i + 5] == b'-'
    })?;
    Some(name[..at].to_owned())
}

#[test]
fn the_official_conformance_suite_passes_where_it_applies() {
    let Some((node, cli)) = suite() else {
        loud(
            "\n!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n\
             SKIPPED: the MCP conformance suite is not installed (.ci/run installs it and sets\n\
             LATHE_CONFORMANCE_DIR). The conformance test of `lathe mcp` did not run.\n\
             !!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!\n",
        );
        return;
    };
    let fixture = Fixture::new();
    let mut server = fixture
        .command(&["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("lathe runs");
    let stderr = server.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some(rest) = line.split("listening on ").nth(1) {
                let _ = tx.send(rest.trim().to_owned());
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the listening address");

    let out = tempfile::tempdir().expect("results dir");
    let run = Command::new(&node)
        .arg(&cli)
        .args(["server", "--url", &url, "-o"])
        .arg(out.path())
        .output()
        .expect("the conformance suite runs");
    let _ = server.kill();
    let _ = server.wait();
    let log = String::from_utf8_lossy(&run.stdout).into_owned();

    let mut failed = Vec::new();
    let mut unknown = Vec::new();
    let mut passed = Vec::new();
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(out.path()).expect("results").flatten() {
        let Some(scenario) = scenario_of(&entry.path()) else {
            continue;
        };
        let checks: Vec<Value> = std::fs::read_to_string(entry.path().join("checks.json"))
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        let failures: Vec<String> = checks
            .iter()
            .filter(|c| c["status"] == "FAILURE")
            .map(|c| format!("{}: {}", c["id"], c["errorMessage"]))
            .collect();
        seen.push(scenario.clone());
        if APPLY.contains(&scenario.as_str()) {
            if failures.is_empty() && !checks.is_empty() {
                passed.push(scenario);
            } else {
                failed.push(format!("{scenario}: {failures:?}"));
            }
        } else if !DO_NOT_APPLY.iter().any(|(name, _)| *name == scenario) {
            unknown.push(scenario);
        }
    }
    let missing: Vec<&&str> = APPLY
        .iter()
        .filter(|s| !seen.iter().any(|x| x == *s))
        .collect();
    assert!(
        failed.is_empty() && missing.is_empty(),
        "scenarios that apply failed: {failed:#?}; did not run: {missing:?}\n{log}"
    );
    assert!(
        unknown.is_empty(),
        "scenarios in neither table (decide whether they apply): {unknown:?}"
    );
    loud(&format!(
        "MCP conformance: passed {passed:?}; not applicable: {}\n",
        DO_NOT_APPLY.len()
    ));
}

#[test]
fn result_directories_name_their_scenario() {
    let dir = Path::new("/x/server-tools-call-simple-text-2026-12-01T15-59-36-709Z");
    assert_eq!(scenario_of(dir).as_deref(), Some("tools-call-simple-text"));
    let dir = Path::new("/x/server-ping-2026-12-01T15-59-36-366Z");
    assert_eq!(scenario_of(dir).as_deref(), Some("ping"));
}
