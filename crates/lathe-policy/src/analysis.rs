//! The result of analysing a shell command.

use serde::{Deserialize, Serialize};

use crate::paths::Location;
use crate::severity::Severity;

/// One program the command would run, with its arguments resolved and its severity judged.
///
/// Wrappers (`sudo`, `env`, `timeout`, `xargs`, `bash -c`, `eval`, ...) are looked through:
/// `timeout 60 cargo test` yields `cargo test`, with `timeout 60 cargo test` in
/// [`wrapped_by`](Self::wrapped_by).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimpleCommand {
    /// The program as written, after quote removal (`/usr/bin/git`, `rm`, `./build.sh`).
    pub program: String,
    /// The arguments after quote removal; parts not known until run time stay as written
    /// (`$HOME` is resolved, `$X` and `$(...)` are not).
    pub args: Vec<String>,
    /// Program and arguments joined by single spaces: what permission rules match.
    pub text: String,
    /// The source text of the command as written (wrappers, redirections included).
    pub source: String,
    /// The normalised text of each wrapper around this command, outermost first
    /// (`sudo rm -rf x`, `bash -c ...`, `xargs rm`).
    pub wrapped_by: Vec<String>,
    /// How much harm this command can do.
    pub severity: Severity,
    /// Why, in plain words.
    pub reasons: Vec<String>,
    /// Redirections attached to this command.
    pub redirects: Vec<Redirect>,
    /// Every argument or redirection target that names a path, judged.
    pub paths: Vec<PathRef>,
    /// This command deletes or overwrites data (used to judge `xargs rm`, `find -exec`).
    #[serde(default)]
    pub destructive: bool,
    /// This command downloads from the network (used to judge `curl ... | sh`).
    #[serde(default)]
    pub downloads: bool,
}

/// A redirection such as `> out.txt`, `2>&1` or `< input`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Redirect {
    /// The operator as written (`>`, `>>`, `&>`, `<`, `<<<`, `>&`, ...), with its descriptor.
    pub operator: String,
    /// The target after quote removal (a path, a descriptor number, or unknown text).
    pub target: String,
    /// Whether the redirection writes to the target.
    pub writes: bool,
    /// Where the target is, when it names a file.
    pub location: Option<Location>,
}

/// Whether a path is read or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Named as input (or just named: the analysis cannot always tell).
    Read,
    /// Written, created, moved or deleted.
    Write,
    /// Named without its contents being read (`ls`, `stat`, `test -f`).
    Metadata,
}

/// A path named by a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathRef {
    /// The argument as shown in [`SimpleCommand::args`].
    pub text: String,
    /// The absolute path, normalised lexically, when it can be known.
    pub path: Option<String>,
    /// The path relative to the workspace root, when it is inside.
    pub relative: Option<String>,
    /// Where it points.
    pub location: Location,
    /// Read or written.
    pub access: Access,
    /// The text has shell glob characters or braces (`.e*`, `{a,b}`): it stands for every
    /// name it can expand to.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub glob: bool,
}

/// A finding about the command as a whole rather than one program in it (a syntax error, a
/// fork bomb, a redirection of a whole block).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// How severe.
    pub severity: Severity,
    /// Why.
    pub reason: String,
}

/// Everything the analysis found in a command line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandAnalysis {
    /// The command line analysed.
    pub command: String,
    /// The worst severity of every part.
    pub severity: Severity,
    /// Every simple command it would run, in source order.
    pub commands: Vec<SimpleCommand>,
    /// Findings about the command as a whole.
    pub findings: Vec<Finding>,
    /// Every reason, each prefixed with the command it concerns.
    pub reasons: Vec<String>,
    /// Whether the shell grammar reported a syntax error (then the severity is at least
    /// [`Severity::Dangerous`]).
    pub parse_error: bool,
}

impl CommandAnalysis {
    /// Builds the summary fields from the parts.
    pub(crate) fn new(
        command: &str,
        commands: Vec<SimpleCommand>,
        findings: Vec<Finding>,
        parse_error: bool,
    ) -> Self {
        let severity = commands
            .iter()
            .map(|c| c.severity)
            .chain(findings.iter().map(|f| f.severity))
            .max()
            .unwrap_or(Severity::Safe);
        let mut reasons: Vec<String> = findings.iter().map(|f| f.reason.clone()).collect();
        for c in &commands {
            for r in &c.reasons {
                let line = format!("{}: {r}", c.text);
                if !reasons.contains(&line) {
                    reasons.push(line);
                }
            }
        }
        if commands.is_empty() && findings.is_empty() {
            reasons.push("nothing runs".to_string());
        }
        CommandAnalysis {
            command: command.to_string(),
            severity,
            commands,
            findings,
            reasons,
            parse_error,
        }
    }

    /// Whether every part only reads.
    pub fn is_safe(&self) -> bool {
        self.severity == Severity::Safe
    }

    /// The normalised text of each simple command.
    pub fn texts(&self) -> Vec<&str> {
        self.commands.iter().map(|c| c.text.as_str()).collect()
    }
}
