//! Arbitrary input never panics the analysis, and input that does not parse is never safe.

use lathe_policy::{AnalysisContext, ApprovalMode, PermissionsConfig, Policy, Severity, analyze};
use proptest::prelude::*;

fn ctx() -> AnalysisContext {
    AnalysisContext::new("/home/u/proj", "/home/u")
}

fn check(input: &str) -> Result<(), TestCaseError> {
    let a = analyze(input, &ctx());
    if a.parse_error {
        prop_assert!(
            a.severity >= Severity::Dangerous,
            "{input:?} does not parse but is {}",
            a.severity
        );
    }
    for c in &a.commands {
        prop_assert!(c.severity <= a.severity);
    }
    let policy = Policy::new(&PermissionsConfig::default(), ApprovalMode::Auto, ctx())
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let _ = policy.check(input).to_string();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text(input in any::<String>()) {
        check(&input)?;
    }

    #[test]
    fn shell_shaped_text(input in "[a-z0-9 $'\"`(){}\\[\\]|&;<>\\\\*?~=\n#!./:-]{0,120}") {
        check(&input)?;
    }

    #[test]
    fn commands_glued_with_operators(
        parts in proptest::collection::vec("(rm|ls|cat|bash -c|eval|sudo|xargs|find \\.|echo|git push|curl x) ?[-a-z~/.$\"']{0,12}", 1..6),
        ops in proptest::collection::vec("( \\| | && | \\|\\| | ; | \\$\\(| `|<\\(| > | < |\n)", 0..6),
    ) {
        let mut text = String::new();
        for (i, p) in parts.iter().enumerate() {
            text.push_str(p);
            if let Some(op) = ops.get(i) {
                text.push_str(op);
            }
        }
        check(&text)?;
    }
}

#[test]
fn deep_nesting_does_not_overflow() {
    let ctx = ctx();
    for open in ["(", "$(", "{ ", "`", "<(", "\"$(", "if true; then "] {
        let text = open.repeat(3000) + "rm -rf /";
        let a = analyze(&text, &ctx);
        assert!(a.severity >= Severity::Dangerous, "{open}: {}", a.severity);
    }
    // each level of quoting multiplies the quotes: ten levels pass the depth limit of eight
    let mut nested = "rm -rf /".to_string();
    for _ in 0..10 {
        nested = format!("bash -c {}", shell_quote(&nested));
    }
    let a = analyze(&nested, &ctx);
    assert!(a.severity >= Severity::Dangerous, "{}", a.severity);
}

#[test]
fn doubling_variables_stay_bounded() {
    let text = "x=ab; ".to_string() + &"x=$x$x; ".repeat(80) + "$x; rm -rf ~";
    let a = analyze(&text, &ctx());
    assert_eq!(a.severity, Severity::Critical);
}

#[test]
fn long_input_is_analysed() {
    let text = "ls -la src; ".repeat(5000) + "rm -rf ~";
    let a = analyze(&text, &ctx());
    assert_eq!(a.severity, Severity::Critical);
    assert_eq!(a.commands.len(), 5001);
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Callers run on small stacks (async workers have 2 MiB, some threads less): the deepest
/// nesting the analysis follows must not overflow the caller's stack.
#[test]
fn deep_nesting_is_safe_on_a_small_caller_stack() {
    let worker = std::thread::Builder::new()
        .stack_size(128 * 1024)
        .spawn(|| {
            let ctx = ctx();
            for open in [
                "(",
                "$(",
                "{ ",
                "`",
                "<(",
                "\"$(",
                "if true; then ",
                "$((",
                "[[ ",
            ] {
                let text = open.repeat(5000) + "rm -rf /";
                let a = analyze(&text, &ctx);
                assert!(a.severity >= Severity::Dangerous, "{open}: {}", a.severity);
            }
        })
        .unwrap();
    worker.join().unwrap();
}

/// tree-sitter-bash's scanner passes the lookahead character to C's `isdigit` and friends,
/// which index a 256-entry table: a code point far above 255 read far outside it and crashed
/// the process (found by the arbitrary-text property above).
#[test]
fn characters_far_above_latin1_do_not_crash_the_parser() {
    let ctx = ctx();
    for c in [
        '\u{10FFFF}',
        '\u{FFFFF}',
        '\u{E0000}',
        '\u{1F600}',
        '\u{7FFF}',
        'é',
    ] {
        for shape in [
            "${C",
            "$C",
            "{C",
            "echo {C..C}",
            "x{C",
            "echo a{C",
            "${x:C",
            "echo C$((C",
            "cat <<C\nC\nC",
            "[[ C",
            "a=C; $C",
            "`C",
        ] {
            let text = shape.replace('C', &c.to_string().repeat(3));
            let _ = analyze(&text, &ctx);
        }
    }
}
