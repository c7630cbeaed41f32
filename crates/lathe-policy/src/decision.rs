//! The decision: rules, sensitive paths and the approval mode applied to an action.

use crate::action::{Action, Sandbox};
use crate::analysis::{Access, CommandAnalysis, SimpleCommand};
use crate::context::AnalysisContext;
use crate::error::PolicyError;
use crate::mode::ApprovalMode;
use crate::paths::{Location, credential, locate, system_area};
use crate::report::{Decision, DecisionReport, PartReport};
use crate::resolved;
use crate::rules::{PermissionsConfig, Rule, RuleSet};
use crate::scope::remember_rule;
use crate::sensitive::{PathKey, SensitivePaths};
use crate::severity::Severity;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Command,
    Whole,
    Read,
    Change {
        inside: bool,
    },
    Tool,
    /// The network: never judged to only read.
    Network,
    /// A fetch from a host (the part's subject): `fetch(HOST)` rules name it.
    Fetch,
    /// An effect the tool could not describe: never judged to only read.
    Opaque,
    /// A change of the project's memory: always asks (read-only and deny rules refuse it).
    Memory,
}

/// One part of an action, judged before the rules and mode apply.
struct Part<'a> {
    subject: String,
    kind: Kind,
    severity: Severity,
    reasons: Vec<String>,
    command: Option<&'a SimpleCommand>,
    key: Option<PathKey>,
}

impl Part<'_> {
    fn reading(&self) -> bool {
        match self.kind {
            Kind::Read => true,
            Kind::Command | Kind::Whole | Kind::Tool => self.severity == Severity::Safe,
            Kind::Change { .. } | Kind::Network | Kind::Fetch | Kind::Opaque | Kind::Memory => {
                false
            }
        }
    }
}

/// Rules, sensitive paths and a mode: decides what Lathe may do.
///
/// For each part of an action (each simple command of a shell command line, the file of a
/// read or write, the tool), in this order:
///
/// 1. a matching `deny` rule denies;
/// 2. a `critical` part asks, whatever the rules and the mode;
/// 3. a matching `ask` rule asks;
/// 4. a sensitive path asks (for a file action, unless an allow rule names that file);
/// 5. a matching `allow` rule allows;
/// 6. the mode decides: `read-only` allows reading and denies the rest, `ask` allows reading
///    and asks for the rest, `auto` allows file changes inside the workspace and safe or
///    normal commands and asks for the rest (the network and effects a tool could not
///    describe included), `full` allows everything.
///
/// With `--dangerously-skip-approvals`, steps 2 to 4 do not ask and whatever the mode would
/// ask is allowed; deny rules and the read-only mode still deny. Running a command outside
/// the sandbox asks unless approvals are skipped. The action's decision is its worst part's:
/// a compound command is allowed only if every part is.
///
/// A fetch ([`Action::Fetch`]) is judged like the network: `fetch(HOST)` rules name its host,
/// `tool(NAME)` rules its tool.
///
/// A change of the project's memory ([`Action::Memory`]) is judged apart: after the deny
/// rules, the read-only mode refuses it and every other mode asks, whatever the allow rules
/// say and even when approvals are skipped.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: RuleSet,
    sensitive: SensitivePaths,
    mode: ApprovalMode,
    skip_approvals: bool,
    ctx: AnalysisContext,
}

impl Policy {
    /// A policy from the `[permissions]` configuration, an approval mode and the context
    /// (workspace root, home). Fails on a rule or pattern that does not parse.
    pub fn new(
        config: &PermissionsConfig,
        mode: ApprovalMode,
        ctx: AnalysisContext,
    ) -> Result<Self, PolicyError> {
        Ok(Policy {
            rules: RuleSet::new(config, &ctx)?,
            sensitive: SensitivePaths::new(&config.sensitive_paths, &ctx)?,
            mode,
            skip_approvals: false,
            ctx,
        })
    }

    /// Never asks: what would ask is allowed (`--dangerously-skip-approvals`). Deny rules and
    /// the read-only mode still deny. By default, this is disabled.
    pub fn dangerously_skip_approvals(mut self, skip: bool) -> Self {
        self.skip_approvals = skip;
        self
    }

    /// The approval mode.
    pub fn mode(&self) -> ApprovalMode {
        self.mode
    }

    /// The analysis context (workspace root, home).
    pub fn context(&self) -> &AnalysisContext {
        &self.ctx
    }

    /// The sensitive-path patterns.
    pub fn sensitive_paths(&self) -> &SensitivePaths {
        &self.sensitive
    }

    /// Analyses a command line in this policy's context.
    pub fn analyze(&self, command: &str) -> CommandAnalysis {
        crate::analyze(command, &self.ctx)
    }

    /// Analyses and decides a command line run in the sandbox (what `lathe policy check` does).
    pub fn check(&self, command: &str) -> DecisionReport {
        self.decide(&Action::Shell {
            analysis: self.analyze(command),
            sandbox: Sandbox::Enabled,
        })
    }

    /// Decides an action. Shell actions also answer to rules naming the `shell` tool.
    pub fn decide(&self, action: &Action) -> DecisionReport {
        let tool = match action {
            Action::Shell { .. } => Some("shell"),
            Action::Tool { name, .. } => Some(name.as_str()),
            Action::Network { tool, .. }
            | Action::Fetch { tool, .. }
            | Action::Unknown { tool, .. } => Some(tool.as_str()),
            _ => None,
        };
        self.decide_inner(tool, action)
    }

    /// Decides an action done by the named tool: `tool(NAME)` rules apply too (for example
    /// `deny = ["write_file"]` for a [`Action::Write`] from `write_file`).
    pub fn decide_for_tool(&self, tool: &str, action: &Action) -> DecisionReport {
        self.decide_inner(Some(tool), action)
    }

    fn decide_inner(&self, tool: Option<&str>, action: &Action) -> DecisionReport {
        let parts = self.parts(action);
        let mut commands = Vec::new();
        if let Action::Shell { analysis, .. } = action {
            commands = analysis.commands.iter().map(|c| c.text.clone()).collect();
        }
        let mut reports: Vec<PartReport> = parts
            .iter()
            .map(|p| {
                let (decision, mut why) = self.decide_part(p, tool);
                let mut reasons = p.reasons.clone();
                reasons.append(&mut why);
                PartReport {
                    subject: p.subject.clone(),
                    severity: p.severity,
                    decision,
                    reasons,
                }
            })
            .collect();
        let mut extra = Vec::new();
        if reports.is_empty() {
            extra.push("nothing runs".to_string());
        }
        if let Action::Shell {
            sandbox: Sandbox::Disabled,
            ..
        } = action
        {
            let worst = reports
                .iter()
                .map(|r| r.decision)
                .max()
                .unwrap_or(Decision::Allow);
            if worst == Decision::Allow && !self.skip_approvals {
                reports.push(PartReport {
                    subject: "sandbox".into(),
                    severity: Severity::Dangerous,
                    decision: Decision::Ask,
                    reasons: vec![
                        "running a command outside the sandbox always needs approval".into(),
                    ],
                });
            }
        }
        DecisionReport::from_parts(commands, reports, extra)
    }

    fn parts<'a>(&self, action: &'a Action) -> Vec<Part<'a>> {
        match action {
            Action::Shell { analysis, .. } => {
                let mut parts: Vec<Part<'a>> = analysis
                    .findings
                    .iter()
                    .map(|f| Part {
                        subject: "(the command line)".into(),
                        kind: Kind::Whole,
                        severity: f.severity,
                        reasons: vec![f.reason.clone()],
                        command: None,
                        key: None,
                    })
                    .collect();
                parts.extend(analysis.commands.iter().map(|c| {
                    let mut part = Part {
                        subject: c.text.clone(),
                        kind: Kind::Command,
                        severity: c.severity,
                        reasons: c.reasons.clone(),
                        command: Some(c),
                        key: None,
                    };
                    // Paths that lead through a symlink to a credential (the caller resolves).
                    for (severity, why) in resolved::command_findings(c, &self.ctx) {
                        part.severity = part.severity.max(severity);
                        part.reasons.push(why);
                    }
                    part
                }));
                parts
            }
            Action::Read { path: target } => target
                .judged(&self.ctx)
                .into_iter()
                .map(|(path, note)| {
                    let key = PathKey::from_text(&path, &self.ctx);
                    let mut part = self.file_part(
                        &path,
                        Kind::Read,
                        key,
                        Severity::Safe,
                        format!("reads `{path}`"),
                    );
                    part.reasons.extend(note);
                    if let Some(what) = part
                        .key
                        .as_ref()
                        .and_then(|k| k.absolute.as_deref())
                        .and_then(|a| credential(a, &self.ctx))
                    {
                        part.severity = Severity::Critical;
                        part.reasons.push(format!("reads {what}"));
                    }
                    part
                })
                .collect(),
            Action::Write {
                path: target,
                inside_workspace,
            }
            | Action::Edit {
                path: target,
                inside_workspace,
            } => target
                .judged(&self.ctx)
                .into_iter()
                .map(|(path, note)| {
                    let mut part = self.change_part(&path, *inside_workspace);
                    part.reasons.extend(note);
                    part
                })
                .collect(),
            Action::Tool { name, read_only } => vec![Part {
                subject: name.clone(),
                kind: Kind::Tool,
                severity: if *read_only {
                    Severity::Safe
                } else {
                    Severity::Normal
                },
                reasons: vec![if *read_only {
                    "the tool only reads".into()
                } else {
                    "the tool changes things".into()
                }],
                command: None,
                key: None,
            }],
            Action::Network { tool, host } => vec![Part {
                subject: tool.clone(),
                kind: Kind::Network,
                severity: Severity::Normal,
                reasons: vec![format!("reaches {host} over the network")],
                command: None,
                key: None,
            }],
            Action::Fetch { tool, host } => vec![Part {
                subject: host.clone(),
                kind: Kind::Fetch,
                severity: Severity::Normal,
                reasons: vec![format!("{tool} fetches from {host} over the network")],
                command: None,
                key: None,
            }],
            Action::Memory { path: target } => target
                .judged(&self.ctx)
                .into_iter()
                .map(|(path, note)| {
                    let key = PathKey::from_text(&path, &self.ctx);
                    let mut part = self.file_part(
                        &path,
                        Kind::Memory,
                        key,
                        Severity::Normal,
                        format!("changes the project's memory `{path}`"),
                    );
                    part.reasons.extend(note);
                    part
                })
                .collect(),
            Action::Unknown { tool, what } => vec![Part {
                subject: tool.clone(),
                kind: Kind::Opaque,
                severity: Severity::Normal,
                reasons: vec![format!("what it does is not known: {what}")],
                command: None,
                key: None,
            }],
        }
    }

    /// The part of a file change at `path`.
    fn change_part<'a>(&self, path: &str, inside_workspace: bool) -> Part<'a> {
        let key = PathKey::from_text(path, &self.ctx);
        let kind = Kind::Change {
            inside: inside_workspace,
        };
        let mut part = self.file_part(
            path,
            kind,
            key,
            Severity::Normal,
            format!("changes `{path}`"),
        );
        if !inside_workspace {
            part.severity = Severity::Dangerous;
            part.reasons
                .push("the file is outside the workspace".into());
        }
        if let Some(abs) = part.key.as_ref().and_then(|k| k.absolute.clone()) {
            if let Some(what) = credential(&abs, &self.ctx) {
                part.severity = Severity::Critical;
                part.reasons.push(format!("overwrites {what}"));
            } else if !inside_workspace
                && (system_area(&abs) || locate(&abs, &self.ctx) == Location::Device)
            {
                part.severity = Severity::Critical;
                part.reasons
                    .push("writes a system location or device".into());
            }
        }
        part
    }

    fn file_part<'a>(
        &self,
        path: &str,
        kind: Kind,
        key: PathKey,
        severity: Severity,
        reason: String,
    ) -> Part<'a> {
        Part {
            subject: path.to_string(),
            kind,
            severity,
            reasons: vec![reason],
            command: None,
            key: Some(key),
        }
    }

    /// The first rule of `list` that covers the part.
    fn hit<'r>(
        &self,
        list: &'r [Rule],
        part: &Part<'_>,
        tool: Option<&str>,
        for_allow: bool,
    ) -> Option<&'r Rule> {
        list.iter().find(|rule| {
            if tool.is_some_and(|t| rule.matches_tool(t)) {
                return true;
            }
            match (part.kind, part.command, &part.key) {
                (Kind::Command, Some(c), _) => {
                    rule.matches_command(&c.text)
                        || (!for_allow && c.wrapped_by.iter().any(|w| rule.matches_command(w)))
                }
                (Kind::Read, _, Some(k)) => rule.matches_read(k),
                (Kind::Change { .. } | Kind::Memory, _, Some(k)) => rule.matches_edit(k),
                (Kind::Tool | Kind::Network | Kind::Opaque, _, _) => {
                    rule.matches_tool(&part.subject)
                }
                (Kind::Fetch, _, _) => rule.matches_fetch(&part.subject),
                _ => false,
            }
        })
    }

    /// Why touching this part's paths asks, unless an allow rule names the path.
    fn sensitive_reasons(&self, part: &Part<'_>) -> Vec<String> {
        let allowed = |key: &PathKey, write: bool| {
            self.rules.allow.iter().any(|r| {
                if write {
                    r.matches_edit(key)
                } else {
                    r.matches_read(key)
                }
            })
        };
        let mut out = Vec::new();
        let mut expanded: Vec<String> = Vec::new();
        let mut check = |shown: &str, key: &PathKey, write: bool| {
            if let Some(pattern) = self.sensitive.matching_key(key)
                && !allowed(key, write)
            {
                let line = format!(
                    "`{shown}` is a sensitive path (pattern `{pattern}`), so touching it asks"
                );
                if !out.contains(&line) {
                    out.push(line);
                }
            }
        };
        match (part.kind, part.command, &part.key) {
            (Kind::Command, Some(c), _) => {
                for p in c.paths.iter().filter(|p| p.access != Access::Metadata) {
                    // a glob names whatever it can expand to (issue 12.7)
                    let expansion = p
                        .path
                        .as_deref()
                        .filter(|_| p.glob)
                        .and_then(|abs| self.sensitive.matching_glob(abs, &self.ctx));
                    if let Some((pattern, name)) = expansion {
                        let key = PathKey::from_text(&name, &self.ctx);
                        if !allowed(&key, p.access == Access::Write) {
                            let line = format!(
                                "`{}` can expand to the sensitive path `{}` (pattern `{pattern}`), so touching it asks",
                                p.text,
                                key.relative.clone().unwrap_or(name),
                            );
                            if !expanded.contains(&line) {
                                expanded.push(line);
                            }
                        }
                        continue;
                    }
                    let key = PathKey {
                        relative: p.relative.clone(),
                        absolute: p.path.clone(),
                    };
                    check(&p.text, &key, p.access == Access::Write);
                }
                for r in resolved::command_paths(c, &self.ctx) {
                    check(&r.shown, &r.key, r.write);
                }
            }
            (Kind::Read, _, Some(k)) => check(&part.subject, k, false),
            (Kind::Change { .. }, _, Some(k)) => check(&part.subject, k, true),
            _ => {}
        }
        out.extend(expanded);
        out
    }

    /// The allow rule that would lift a refusal of this part; none for a finding about the
    /// whole command line, which no single rule names.
    fn suggestion(&self, part: &Part<'_>) -> Option<String> {
        Some(match (part.kind, part.command, &part.key) {
            (Kind::Command, Some(c), _) => format!("`{}`", remember_rule(c)),
            (Kind::Read, _, Some(k)) => format!(
                "`read({})`",
                k.relative
                    .clone()
                    .or(k.absolute.clone())
                    .unwrap_or_default()
            ),
            (Kind::Change { .. }, _, Some(k)) => format!(
                "`edit({})`",
                k.relative
                    .clone()
                    .or(k.absolute.clone())
                    .unwrap_or_default()
            ),
            (Kind::Tool | Kind::Network | Kind::Opaque, _, _) => {
                format!("`tool({})`", part.subject)
            }
            (Kind::Fetch, _, _) => format!("`fetch({})`", part.subject),
            _ => return None,
        })
    }

    fn decide_part(&self, part: &Part<'_>, tool: Option<&str>) -> (Decision, Vec<String>) {
        if let Some(rule) = self.hit(&self.rules.deny, part, tool, false) {
            return (
                Decision::Deny,
                vec![format!("denied by the rule `{}`", rule.text())],
            );
        }
        if part.kind == Kind::Memory {
            return self.memory_decision();
        }
        // Read-only mode refuses whatever is not a read before anything can ask: "critical
        // always asks" is a floor for modes that would run a command, never a way past a
        // refusal. Only an allow rule lifts read-only, and not for a critical command.
        if self.mode == ApprovalMode::ReadOnly
            && !part.reading()
            && (part.severity == Severity::Critical
                || self.hit(&self.rules.allow, part, tool, true).is_none())
        {
            let (decision, why) = self.by_mode(part);
            return (decision, vec![why]);
        }
        let mut asks = Vec::new();
        if part.severity == Severity::Critical {
            asks.push(
                "critical: always asks, whatever the rules and mode (unless approvals are skipped)"
                    .to_string(),
            );
        }
        if let Some(rule) = self.hit(&self.rules.ask, part, tool, false) {
            asks.push(format!("the rule `{}` asks", rule.text()));
        }
        let allow_rule = self.hit(&self.rules.allow, part, tool, true);
        let file_allowed =
            matches!(part.kind, Kind::Read | Kind::Change { .. }) && allow_rule.is_some();
        if !file_allowed {
            asks.extend(self.sensitive_reasons(part));
        }
        let skipped = "approvals are skipped (--dangerously-skip-approvals)".to_string();
        if !asks.is_empty() {
            if !self.skip_approvals {
                return (Decision::Ask, asks);
            }
            asks.push(skipped.clone());
        }
        if let Some(rule) = allow_rule {
            asks.push(format!("allowed by the rule `{}`", rule.text()));
            return (Decision::Allow, asks);
        }
        let (decision, why) = self.by_mode(part);
        asks.push(why);
        if decision == Decision::Ask && self.skip_approvals {
            asks.push(skipped);
            return (Decision::Allow, asks);
        }
        (decision, asks)
    }

    /// A memory change that no deny rule refused: read-only refuses it, every other mode asks.
    /// No allow rule, mode or skipping of approvals lets it run unasked.
    fn memory_decision(&self) -> (Decision, Vec<String>) {
        if self.mode == ApprovalMode::ReadOnly {
            return (
                Decision::Deny,
                vec![
                    "read-only mode never changes the project's memory; with --approval ask, \
                     auto or full each memory change is asked about with its diff, or the user \
                     can edit the memory with `lathe memory edit`"
                        .into(),
                ],
            );
        }
        (
            Decision::Ask,
            vec![
                "memory changes always ask, in every mode (no rule, mode or \
                 --dangerously-skip-approvals lets them run unasked)"
                    .into(),
            ],
        )
    }

    fn by_mode(&self, part: &Part<'_>) -> (Decision, String) {
        let reading = part.reading();
        match self.mode {
            ApprovalMode::ReadOnly if reading => {
                (Decision::Allow, "read-only mode allows reading".into())
            }
            ApprovalMode::ReadOnly if part.severity == Severity::Critical => (
                Decision::Deny,
                "read-only mode allows only reading, and this is critical; no rule lifts that \
                 (with --approval ask, auto or full it would be asked about)"
                    .to_string(),
            ),
            ApprovalMode::ReadOnly => (
                Decision::Deny,
                format!(
                    "read-only mode allows only reading, and this {}; to allow it, run with \
                     --approval ask or auto{}",
                    match part.kind {
                        Kind::Change { .. } => "changes a file".to_string(),
                        Kind::Tool => "tool changes things".to_string(),
                        Kind::Network => "tool reaches the network".to_string(),
                        Kind::Fetch => "fetches from the network".to_string(),
                        Kind::Opaque => "tool does what Lathe cannot judge".to_string(),
                        Kind::Memory => "changes the project's memory".to_string(),
                        _ => format!("is {}", part.severity),
                    },
                    self.suggestion(part)
                        .map(|rule| format!(", or add the allow rule {rule}"))
                        .unwrap_or_default()
                ),
            ),
            ApprovalMode::Ask if reading => (Decision::Allow, "ask mode allows reading".into()),
            ApprovalMode::Ask => (
                Decision::Ask,
                "ask mode asks before anything that is not read-only".into(),
            ),
            ApprovalMode::Auto => match part.kind {
                Kind::Read | Kind::Tool => (Decision::Allow, "auto mode allows this".into()),
                Kind::Network | Kind::Fetch => (
                    Decision::Ask,
                    "auto mode asks before reaching the network".into(),
                ),
                Kind::Opaque => (
                    Decision::Ask,
                    "auto mode asks before what it cannot judge".into(),
                ),
                Kind::Memory => (
                    Decision::Ask,
                    "memory changes always ask, in every mode".into(),
                ),
                Kind::Change { inside: true } if part.severity <= Severity::Normal => (
                    Decision::Allow,
                    "auto mode allows changing files inside the workspace".into(),
                ),
                Kind::Change { .. } => (
                    Decision::Ask,
                    "auto mode asks before changing files outside the workspace".into(),
                ),
                Kind::Command | Kind::Whole if part.severity <= Severity::Normal => (
                    Decision::Allow,
                    "auto mode allows safe and normal commands".into(),
                ),
                Kind::Command | Kind::Whole => (
                    Decision::Ask,
                    "auto mode asks before dangerous commands".into(),
                ),
            },
            ApprovalMode::Full => (
                Decision::Allow,
                "full mode allows everything except critical actions".into(),
            ),
        }
    }
}
