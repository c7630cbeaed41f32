//! The command corpora: no dangerous form is judged safe, no everyday read-only command asks.

use lathe_policy::{
    AnalysisContext, ApprovalMode, Decision, PermissionsConfig, Policy, Severity, analyze,
};

fn ctx() -> AnalysisContext {
    AnalysisContext::new("/home/u/proj", "/home/u")
}

/// The commands of a corpus file: one per line, blank lines and `# ` comments skipped.
fn corpus(name: &str) -> Vec<String> {
    let path = format!("{}/tests/corpus/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("# "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_corpora_are_big_enough() {
    assert!(
        corpus("dangerous.txt").len() >= 150,
        "{}",
        corpus("dangerous.txt").len()
    );
    assert!(
        corpus("safe.txt").len() >= 150,
        "{}",
        corpus("safe.txt").len()
    );
}

#[test]
fn no_dangerous_command_is_safe() {
    let ctx = ctx();
    let wrong: Vec<String> = corpus("dangerous.txt")
        .into_iter()
        .filter_map(|c| {
            let a = analyze(&c, &ctx);
            (a.severity < Severity::Dangerous)
                .then(|| format!("{c:?} is {}: {:?}", a.severity, a.reasons))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "judged below dangerous:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_dangerous_command_is_allowed_in_auto_mode() {
    let policy = Policy::new(&PermissionsConfig::default(), ApprovalMode::Auto, ctx())
        .unwrap_or_else(|e| panic!("{e}"));
    let wrong: Vec<String> = corpus("dangerous.txt")
        .into_iter()
        .filter_map(|c| {
            let r = policy.check(&c);
            (r.decision == Decision::Allow).then(|| format!("{c:?}: {:?}", r.reasons))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "allowed in auto mode:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn everyday_read_only_commands_are_safe_and_never_ask() {
    let config = PermissionsConfig::default();
    let auto = Policy::new(&config, ApprovalMode::Auto, ctx()).unwrap_or_else(|e| panic!("{e}"));
    let read_only =
        Policy::new(&config, ApprovalMode::ReadOnly, ctx()).unwrap_or_else(|e| panic!("{e}"));
    let wrong: Vec<String> = corpus("safe.txt")
        .into_iter()
        .filter_map(|c| {
            let a = auto.check(&c);
            let r = read_only.check(&c);
            let ok = a.severity == Severity::Safe
                && a.decision == Decision::Allow
                && r.decision == Decision::Allow;
            (!ok).then(|| {
                format!(
                    "{c:?}: {} / auto {} / read-only {}: {:?}",
                    a.severity, a.decision, r.decision, a.reasons
                )
            })
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "everyday commands that would ask:\n{}",
        wrong.join("\n")
    );
}
