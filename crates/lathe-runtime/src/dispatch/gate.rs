//! The gate: for each call, run it, refuse it, or ask — decided by `lathe_policy` from the
//! approval mode, the `[permissions]` rules, sensitive paths and command analysis, plus what the
//! user allowed for the rest of the session. The gate judges the effects the tool itself named
//! for this input ([`Tool::effects`](crate::Tool::effects)); it knows no tool by name.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use lathe_policy::{
    Action, AnalysisContext, ApprovalMode, Decision, DecisionReport, FileTarget, PermissionsConfig,
    Policy, PolicyError, Sandbox, Severity, remember_rule,
};

use crate::registry::PreparedCall;
use crate::session::Session;
use crate::tool::Effect;
use crate::workspace::Access;

/// What the gate says about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask the approver.
    Ask {
        /// Why it asks, for the person answering.
        reasons: Vec<String>,
        /// The permission rules "always" would remember for the session
        /// (`shell(npm run test *)`); empty when the call cannot be remembered (a critical
        /// command, a command outside the sandbox).
        rules: Vec<String>,
    },
    /// Do not run it; the model reads `reason`.
    Deny {
        /// What to tell the model, including how the user could allow it.
        reason: String,
    },
}

/// What the gate worked out about one call, once, right before deciding it
/// ([`Gate::judge`]): carried with the call to the hooks ([`CallInfo`](crate::CallInfo)), the
/// checkpoints, the runner and the run's report, so that none of them analyses the call again.
#[derive(Debug, Clone)]
pub struct Judgement {
    /// The call writes or edits a file (the memory file too), or runs a command the analysis
    /// does not find read-only.
    pub changes_files: bool,
    /// The call may change the workspace: it changes files, or an effect of it is not plainly a
    /// read (an unknown effect, another server's tool, a change of the session's state). A
    /// checkpoint is taken before such a call.
    pub may_change_workspace: bool,
    /// The call changes the project's memory ([`Effect::Memory`], or a write of the memory
    /// file): when nobody can be asked, the model reads how the user can change the memory.
    pub changes_memory: bool,
    /// The command lines the call runs ([`Effect::Command`]), in order.
    pub commands: Vec<String>,
    /// Each effect as the policy judges it: a command's analysis, a path as it resolved.
    actions: Arc<Vec<Action>>,
}

impl PartialEq for Judgement {
    fn eq(&self, other: &Self) -> bool {
        self.changes_files == other.changes_files
            && self.may_change_workspace == other.may_change_workspace
            && self.changes_memory == other.changes_memory
            && self.commands == other.commands
    }
}

struct State {
    permissions: PermissionsConfig,
    remembered: Vec<String>,
    mode: ApprovalMode,
    skip_approvals: bool,
    ctx: AnalysisContext,
    policy: Policy,
}

impl State {
    fn rebuild(&mut self) -> Result<(), PolicyError> {
        let mut permissions = self.permissions.clone();
        permissions.allow.extend(self.remembered.iter().cloned());
        self.policy = Policy::new(&permissions, self.mode, self.ctx.clone())?
            .dangerously_skip_approvals(self.skip_approvals);
        Ok(())
    }
}

/// Decides which calls run. Shared by the runner and whoever switches modes (`/approval`).
pub struct Gate {
    state: Mutex<State>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Gate")
            .field("mode", &state.mode)
            .field("remembered", &state.remembered)
            .finish_non_exhaustive()
    }
}

/// The home directory the command analysis compares paths with (`$HOME`, or `/` when it is
/// unset or empty). `lathe policy check` uses it too, so that it decides as the gate does.
pub fn analysis_home() -> PathBuf {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/"))
}

impl Gate {
    /// A gate in `mode` for the workspace at `root`, with no permission rules beyond the
    /// defaults (sensitive paths).
    pub fn new(mode: ApprovalMode, root: &Path) -> Self {
        Gate::with_permissions(&PermissionsConfig::default(), mode, root, false)
            .expect("the default permissions are valid")
    }

    /// A gate with the `[permissions]` rules of the configuration. With `skip_approvals`
    /// (`--dangerously-skip-approvals`), nothing asks; deny rules and read-only still deny.
    ///
    /// Fails on a rule or sensitive-path pattern that does not parse.
    pub fn with_permissions(
        permissions: &PermissionsConfig,
        mode: ApprovalMode,
        root: &Path,
        skip_approvals: bool,
    ) -> Result<Self, PolicyError> {
        let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        // Paths commands name are judged where they lead as well as by their text.
        let ctx = AnalysisContext::new(root, analysis_home())
            .with_resolver(crate::workspace::link_resolver());
        let policy =
            Policy::new(permissions, mode, ctx.clone())?.dangerously_skip_approvals(skip_approvals);
        Ok(Gate {
            state: Mutex::new(State {
                permissions: permissions.clone(),
                remembered: Vec::new(),
                mode,
                skip_approvals,
                ctx,
                policy,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current mode.
    pub fn mode(&self) -> ApprovalMode {
        self.lock().mode
    }

    /// Switches the mode (`/approval MODE` in chat). What was allowed for the session stays.
    pub fn set_mode(&self, mode: ApprovalMode) {
        let mut state = self.lock();
        let previous = state.mode;
        state.mode = mode;
        if let Err(err) = state.rebuild() {
            tracing::warn!("cannot switch to {mode}: {err}");
            state.mode = previous;
        }
    }

    /// A new gate with this one's permission rules and what was allowed for the session so
    /// far, in `mode` (a sub-agent's gate: read-only for one that only explores). Later
    /// changes to either gate do not reach the other.
    pub fn with_mode(&self, mode: ApprovalMode) -> Gate {
        let state = self.lock();
        let mut copy = State {
            permissions: state.permissions.clone(),
            remembered: state.remembered.clone(),
            mode,
            skip_approvals: state.skip_approvals,
            ctx: state.ctx.clone(),
            policy: state.policy.clone(),
        };
        if let Err(err) = copy.rebuild() {
            // The rules parsed once; a failure here keeps the copy in the original's mode.
            tracing::warn!("cannot make a gate in {mode}: {err}");
            copy.mode = state.mode;
        }
        Gate {
            state: Mutex::new(copy),
        }
    }

    /// Remembers "always" answers: `rules` are allowed for the rest of the session.
    pub fn allow_for_session(&self, rules: &[String]) {
        let mut state = self.lock();
        let before = state.remembered.len();
        for rule in rules {
            if !state.remembered.contains(rule) {
                state.remembered.push(rule.clone());
            }
        }
        if let Err(err) = state.rebuild() {
            tracing::warn!("cannot remember {rules:?}: {err}");
            state.remembered.truncate(before);
        }
    }

    /// The verdict on `call` in `session`: every effect is judged; any denial denies, else
    /// any question asks (with the rules "always" would remember for all of them), else the
    /// call runs. A call that names no effect is judged as unknown.
    ///
    /// "Always" is offered only when the rules it would remember cover no more than what was
    /// asked: never for a critical effect or a command outside the sandbox, and not for a
    /// `tool(NAME)` rule (the network, an unknown effect) of a call that also reads, writes or
    /// runs something, since that rule would allow all of the tool's reads, writes and commands
    /// from then on, sensitive paths included.
    pub fn check(&self, call: &PreparedCall, session: &Session) -> Verdict {
        match call.judgement() {
            Some(judgement) => self.decide(&call.name, judgement),
            None => self.decide(&call.name, &self.judge(call, session)),
        }
    }

    /// Works out what `call` does, once: each effect as the policy sees it (a command's
    /// analysis, a path as it resolves now) and what follows from that. Done right before the
    /// call is decided ([`Dispatcher::authorize`](crate::Dispatcher::authorize) does it when the
    /// front end has not): a path is judged as it resolves when the call is decided, after the
    /// calls before it ran.
    pub fn judge(&self, call: &PreparedCall, session: &Session) -> Judgement {
        let state = self.lock();
        let unknown = [Effect::Unknown {
            what: format!("`{}` named no effect", call.name),
        }];
        let effects = if call.effects.is_empty() {
            &unknown[..]
        } else {
            &call.effects[..]
        };
        let actions: Vec<Action> = effects
            .iter()
            .map(|effect| action(&call.name, effect, session, &state.ctx))
            .collect();
        let changes_files = actions.iter().any(|action| match action {
            Action::Write { .. } | Action::Edit { .. } | Action::Memory { .. } => true,
            Action::Shell { analysis, .. } => !analysis.is_safe(),
            _ => false,
        });
        // Anything that is not plainly a read may change the workspace: an unknown effect, a
        // tool of another server that reaches the network, a change of the session's state.
        let may_change_workspace = changes_files
            || effects.iter().zip(&actions).any(|(effect, action)| {
                !matches!(action, Action::Shell { .. }) && !effect.only_reads()
            });
        let changes_memory = actions
            .iter()
            .any(|action| matches!(action, Action::Memory { .. }));
        let commands = effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::Command { command, .. } => Some(command.clone()),
                _ => None,
            })
            .collect();
        Judgement {
            changes_files,
            may_change_workspace,
            changes_memory,
            commands,
            actions: Arc::new(actions),
        }
    }

    /// The verdict on a call by `tool` from what was worked out about it.
    fn decide(&self, tool: &str, judgement: &Judgement) -> Verdict {
        let state = self.lock();
        let concrete = judgement.actions.iter().any(|action| {
            matches!(
                action,
                Action::Read { .. }
                    | Action::Write { .. }
                    | Action::Edit { .. }
                    | Action::Shell { .. }
            )
        });
        let mut asks: Vec<String> = Vec::new();
        let mut rules: Vec<String> = Vec::new();
        let mut rememberable = true;
        for action in judgement.actions.iter() {
            let report = state.policy.decide_for_tool(tool, action);
            match report.decision {
                Decision::Allow => {}
                Decision::Deny => {
                    return Verdict::Deny {
                        reason: reasons(&report, Decision::Deny).join("; "),
                    };
                }
                Decision::Ask => {
                    for reason in reasons(&report, Decision::Ask) {
                        if !asks.contains(&reason) {
                            asks.push(reason);
                        }
                    }
                    if report.severity == Severity::Critical {
                        rememberable = false;
                    }
                    for rule in session_rules(tool, action, &state.ctx) {
                        if !rules.contains(&rule) {
                            rules.push(rule);
                        }
                    }
                    match action {
                        // Each memory change is asked about on its own.
                        Action::Memory { .. } => rememberable = false,
                        // A command outside the sandbox is never remembered.
                        Action::Shell {
                            sandbox: Sandbox::Disabled,
                            ..
                        } => rememberable = false,
                        // `tool(NAME)` would also allow the concrete effects it was not asked
                        // about.
                        Action::Tool { .. } | Action::Network { .. } | Action::Unknown { .. }
                            if concrete =>
                        {
                            rememberable = false;
                        }
                        _ => {}
                    }
                }
            }
        }
        if asks.is_empty() {
            return Verdict::Allow;
        }
        Verdict::Ask {
            reasons: asks,
            rules: if rememberable { rules } else { Vec::new() },
        }
    }

    /// Whether `call` changes the project's memory (`update_memory`, or a write of the memory
    /// file): when nobody can be asked, the model reads how the user can change the memory.
    pub fn changes_memory(&self, call: &PreparedCall, session: &Session) -> bool {
        match call.judgement() {
            Some(judgement) => judgement.changes_memory,
            None => self.judge(call, session).changes_memory,
        }
    }
}

/// The reasons of a report's parts that came to `wanted` (or the report's own reasons).
fn reasons(report: &DecisionReport, wanted: Decision) -> Vec<String> {
    let lines: Vec<String> = report
        .parts
        .iter()
        .filter(|p| p.decision == wanted)
        .flat_map(|p| p.reasons.iter().map(move |r| format!("{}: {r}", p.subject)))
        .collect();
    if lines.is_empty() {
        report.reasons.clone()
    } else {
        lines
    }
}

/// One effect of a call by `tool`, as the policy judges it.
fn action(tool: &str, effect: &Effect, session: &Session, ctx: &AnalysisContext) -> Action {
    // File paths reach the policy only through the workspace's resolution: judged as given
    // and as they resolve through symlinks (`cfg/config.toml` with `cfg -> .lathe`).
    let change = |path: &str| {
        (
            session.workspace().target(path),
            session.workspace().resolve(path, Access::Write).is_ok(),
        )
    };
    // The memory file changes only when the user says so, whichever tool writes it.
    if let Effect::Write { path } | Effect::Edit { path } = effect
        && is_memory_file(path, session)
    {
        return Action::Memory {
            path: session.workspace().target(path),
        };
    }
    match effect {
        Effect::Read { path } => Action::Read {
            path: session.workspace().target(path),
        },
        Effect::Write { path } => {
            let (path, inside_workspace) = change(path);
            Action::Write {
                path,
                inside_workspace,
            }
        }
        Effect::Edit { path } => {
            let (path, inside_workspace) = change(path);
            Action::Edit {
                path,
                inside_workspace,
            }
        }
        Effect::Command {
            command,
            cwd,
            outside_sandbox,
        } => {
            let mut ctx = ctx.clone().with_writable_root(session.state_dir());
            if let Some(cwd) = cwd.as_deref().filter(|c| !c.trim().is_empty()) {
                ctx = ctx.with_cwd(cwd);
            }
            // Outside the sandbox without the configuration having chosen it: always asks.
            Action::Shell {
                analysis: lathe_policy::analyze(command, &ctx),
                sandbox: if *outside_sandbox {
                    Sandbox::Disabled
                } else {
                    Sandbox::Enabled
                },
            }
        }
        Effect::Network { host } => Action::Network {
            tool: tool.to_owned(),
            host: host.clone(),
        },
        Effect::Fetch { host } => Action::Fetch {
            tool: tool.to_owned(),
            host: host.clone(),
        },
        // The session's own state (its commands, its plan): the tool said so for this input.
        Effect::OwnState { .. } => Action::Tool {
            name: tool.to_owned(),
            read_only: true,
        },
        Effect::Memory { path } => Action::Memory {
            path: session.workspace().target(path),
        },
        Effect::Unknown { what } => Action::Unknown {
            tool: tool.to_owned(),
            what: what.clone(),
        },
    }
}

/// Whether `path` is the session's memory file (where both resolve to).
fn is_memory_file(path: &str, session: &Session) -> bool {
    let workspace = session.workspace();
    let memory = crate::memory::memory_path(session);
    match (
        workspace.resolve(path, Access::Write),
        workspace.resolve(&memory, Access::Write),
    ) {
        (Ok(given), Ok(memory)) => given.abs() == memory.abs(),
        _ => false,
    }
}

/// The rules "always" remembers: program and subcommand of each command of a command line, the
/// file of a read or change (and the file a symlink leads to), the tool otherwise.
fn session_rules(tool: &str, action: &Action, ctx: &AnalysisContext) -> Vec<String> {
    let file = |verb: &str, target: &FileTarget| -> Vec<String> {
        std::iter::once(target.given().to_owned())
            .chain(target.redirected(ctx))
            .map(|path| format!("{verb}({path})"))
            .collect()
    };
    match action {
        Action::Shell { analysis, .. } => {
            let mut rules: Vec<String> = Vec::new();
            for rule in analysis.commands.iter().map(remember_rule) {
                if !rules.contains(&rule) {
                    rules.push(rule);
                }
            }
            rules
        }
        Action::Read { path } => file("read", path),
        Action::Write { path, .. } | Action::Edit { path, .. } => file("edit", path),
        Action::Tool { .. } | Action::Network { .. } | Action::Unknown { .. } => {
            vec![format!("tool({tool})")]
        }
        // "Always for this host".
        Action::Fetch { host, .. } => vec![format!("fetch({host})")],
        // Never remembered: every memory change asks.
        Action::Memory { .. } => Vec::new(),
    }
}
