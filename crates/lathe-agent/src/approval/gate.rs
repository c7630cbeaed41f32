//! The gate: for each call, run it, refuse it, or ask.

use std::collections::HashSet;
use std::sync::Mutex;

use lathe_tools::{PreparedCall, ToolDefinition, ToolKind};

use super::ApprovalMode;

/// What the gate says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the approver.
    Ask {
        /// Why it asks, for the person answering.
        reasons: Vec<String>,
        /// The key "always" remembers, also shown to the person: `shell(npm run test *)`.
        scope: String,
    },
    /// Do not run it; the model reads `reason`.
    Deny {
        /// What to tell the model.
        reason: String,
    },
}

/// Decides which calls run, following the approval mode and what the user allowed for the
/// session.
#[derive(Debug)]
pub struct Gate {
    mode: Mutex<ApprovalMode>,
    allowed: Mutex<HashSet<String>>,
}

impl Gate {
    /// A gate in `mode`, with nothing allowed for the session yet.
    pub fn new(mode: ApprovalMode) -> Self {
        Gate {
            mode: Mutex::new(mode),
            allowed: Mutex::new(HashSet::new()),
        }
    }

    /// The current mode.
    pub fn mode(&self) -> ApprovalMode {
        *lock(&self.mode)
    }

    /// Switches the mode (`/approval MODE` in chat). What was allowed for the session stays.
    pub fn set_mode(&self, mode: ApprovalMode) {
        *lock(&self.mode) = mode;
    }

    /// Remembers "always" for `scope` (as given in [`Verdict::Ask`]).
    pub fn allow_for_session(&self, scope: &str) {
        lock(&self.allowed).insert(scope.to_owned());
    }

    /// The verdict on `call`, whose tool is described by `definition`.
    pub fn check(&self, call: &PreparedCall, definition: &ToolDefinition) -> Verdict {
        let mode = self.mode();
        let scope = scope_of(call);
        let hints = definition.hints;
        let changes_things = match call.kind {
            ToolKind::Read => false,
            ToolKind::Session => !hints.read_only,
            ToolKind::Edit | ToolKind::Execute => true,
        };
        if !changes_things {
            return Verdict::Allow;
        }
        if mode == ApprovalMode::ReadOnly {
            return Verdict::Deny {
                reason: format!(
                    "this session is read-only: `{}` changes things, so it was not run. \
                     Use the reading tools, and tell the user what you would change \
                     (they can switch with --approval ask or /approval ask)",
                    call.name
                ),
            };
        }
        if lock(&self.allowed).contains(&scope) {
            return Verdict::Allow;
        }
        let asks = match (mode, call.kind) {
            (ApprovalMode::Full | ApprovalMode::Auto, _) => false,
            // Session tools that destroy nothing (listing or stopping the session's own
            // background commands) run in ask mode too.
            (ApprovalMode::Ask, ToolKind::Session) => hints.destructive,
            (ApprovalMode::Ask, _) => true,
            (ApprovalMode::ReadOnly, _) => true,
        };
        if asks {
            Verdict::Ask {
                reasons: vec![format!("{} mode asks before `{}`", mode, call.name)],
                scope,
            }
        } else {
            Verdict::Allow
        }
    }
}

/// What "always allow" covers for a call: every edit of the session for edit tools, the
/// program and its subcommand for a command, the tool otherwise.
pub(crate) fn scope_of(call: &PreparedCall) -> String {
    match call.kind {
        ToolKind::Edit => "edit(*)".to_owned(),
        ToolKind::Execute => match call.arguments.get("command").and_then(|c| c.as_str()) {
            Some(command) => format!("{}({})", call.name, command_scope(command)),
            None => format!("tool({})", call.name),
        },
        _ => format!("tool({})", call.name),
    }
}

/// The program and its subcommand words (`npm run test *`, `cargo test *`), or the exact
/// command when it is compound or hides what runs: "always" must never cover more than the
/// user saw.
fn command_scope(command: &str) -> String {
    let command = command.trim();
    let plain = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ':' | '.' | '/'))
    };
    let compound = command.contains(|c: char| {
        matches!(
            c,
            ';' | '&' | '|' | '`' | '$' | '<' | '>' | '(' | ')' | '\n'
        )
    });
    let words: Vec<&str> = command.split_whitespace().collect();
    if compound || words.is_empty() || !plain(words[0]) {
        return command.to_owned();
    }
    let mut scope = vec![words[0]];
    for word in words.iter().skip(1).take(2) {
        if word.starts_with('-') || word.contains('/') || word.contains('.') || !plain(word) {
            break;
        }
        scope.push(word);
    }
    if words.len() > scope.len() {
        format!("{} *", scope.join(" "))
    } else {
        scope.join(" ")
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_tools::tool::hints_for;
    use serde_json::{Value, json};

    fn call(
        name: &'static str,
        kind: ToolKind,
        arguments: Value,
    ) -> (PreparedCall, ToolDefinition) {
        let definition = ToolDefinition {
            name,
            description: String::new(),
            parameters: json!({}),
            kind,
            hints: hints_for(kind),
        };
        (
            PreparedCall {
                name,
                arguments,
                kind,
            },
            definition,
        )
    }

    #[test]
    fn modes_against_kinds() {
        use ApprovalMode::*;
        use ToolKind::*;
        // (mode, kind, expected: 'a'llow, 'q'uestion, 'd'eny)
        let table = [
            (ReadOnly, Read, 'a'),
            (ReadOnly, Edit, 'd'),
            (ReadOnly, Execute, 'd'),
            (ReadOnly, Session, 'd'),
            (Ask, Read, 'a'),
            (Ask, Edit, 'q'),
            (Ask, Execute, 'q'),
            (Ask, Session, 'a'),
            (Auto, Read, 'a'),
            (Auto, Edit, 'a'),
            (Auto, Execute, 'a'),
            (Full, Edit, 'a'),
            (Full, Execute, 'a'),
        ];
        for (mode, kind, expected) in table {
            let gate = Gate::new(mode);
            let (call, def) = call("t", kind, json!({"command": "make"}));
            let got = match gate.check(&call, &def) {
                Verdict::Allow => 'a',
                Verdict::Ask { .. } => 'q',
                Verdict::Deny { .. } => 'd',
            };
            assert_eq!(got, expected, "{mode} {kind:?}");
        }
    }

    #[test]
    fn always_covers_the_scope_only() {
        let gate = Gate::new(ApprovalMode::Ask);
        let (test, def) = call(
            "shell",
            ToolKind::Execute,
            json!({"command": "npm run test -- --watch"}),
        );
        let Verdict::Ask { scope, .. } = gate.check(&test, &def) else {
            panic!()
        };
        assert_eq!(scope, "shell(npm run test *)");
        gate.allow_for_session(&scope);
        assert_eq!(gate.check(&test, &def), Verdict::Allow);
        let (other, def) = call(
            "shell",
            ToolKind::Execute,
            json!({"command": "npm publish"}),
        );
        assert!(matches!(gate.check(&other, &def), Verdict::Ask { .. }));
    }

    #[test]
    fn command_scopes() {
        assert_eq!(command_scope("cargo test -p x"), "cargo test *");
        assert_eq!(command_scope("make"), "make");
        assert_eq!(command_scope("ls src/"), "ls *");
        assert_eq!(command_scope("rm -rf build && ls"), "rm -rf build && ls");
        assert_eq!(command_scope("$(echo rm) x"), "$(echo rm) x");
        assert_eq!(command_scope("git commit -m x"), "git commit *");
    }

    #[test]
    fn read_only_refusal_says_how_to_switch() {
        let gate = Gate::new(ApprovalMode::ReadOnly);
        let (call, def) = call("write_file", ToolKind::Edit, json!({"path": "a"}));
        let Verdict::Deny { reason } = gate.check(&call, &def) else {
            panic!()
        };
        assert!(
            reason.contains("read-only") && reason.contains("write_file"),
            "{reason}"
        );
    }
}
