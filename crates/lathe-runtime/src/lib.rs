//! Lathe's tool runtime: the typed tool contract, the registry that erases it once, the one call
//! pipeline every front end uses, workspace containment, and the session services tools share
//! (the checklist, memory, vision, the command supervisor, paging, the document reader). No
//! model, no HTTP, no terminal, and no tool of its own but `more_tools`, which is part of
//! deferral: the built-in tools are `lathe-tools`, which depends on this crate, so this crate
//! cannot import a tool.
//!
//! # The pieces
//!
//! - A [`Tool`] is a typed tool (the built-ins: one file each in `lathe-tools`,
//!   `crates/lathe-tools/src/NAME.rs`). It answers for itself, from its input deserialised once:
//!   what the policy judges ([`Tool::effects`]), the line people see ([`Tool::title`]), what it
//!   would change ([`Tool::plan`]), and the call itself ([`Tool::run`]).
//! - The [`Registry`] holds every tool a session can call as a trait object ([`DynTool`]):
//!   typed tools ([`Registry::register`]; the built-ins are listed once, in the `builtin_tools!`
//!   macro of `crates/lathe-tools/src/lib.rs`, which refuses to compile when two share a name or
//!   an alias, and `lathe_tools::builtin()` is the registry with all of them), and tools added
//!   at run time ([`Registry::add`]: another MCP server's, an embedder's). It is the one name
//!   resolver: exact names, aliases, then names folded over case, `_`, `-` and `.`; a run-time
//!   tool can never take a name that is taken in any of those ways. In small windows it defers
//!   tools behind `more_tools` ([`profile`]).
//! - The [`Gate`] judges each effect of a call with `lathe_policy` (the approval mode, the
//!   `[permissions]` rules, sensitive paths, command analysis): allow, ask or deny; and it
//!   remembers what the user allowed for the session.
//! - An [`Approver`] answers when the gate asks: the terminal's prompt, an MCP client's
//!   elicitation, [`NonInteractive`] or [`Refuse`] where nobody can be asked.
//! - A [`Hook`] runs around every call (checkpoints, the project's `[hooks]` commands of
//!   [`hooks`], which run under a `lathe-exec` supervisor like any command, audit logs).
//! - The [`Dispatcher`] puts registry, gate and hooks together. The agent's runner, `lathe mcp`
//!   and `lathe tool` all call it, so the same call gets the same answer in each of them.
//! - The [`Host`] is one session's pipeline, built once: the dispatcher with the session's hooks
//!   and the recorder of its turns ([`TurnRecorder`], `lathe-checkpoint`'s checkpoints), from
//!   `Host::builder(registry, gate).checkpoints(recorder).hooks(...).build()`. A front end takes
//!   its dispatcher from it ([`Host::dispatcher`]) and brackets each turn's calls with
//!   [`Host::begin_turn`] and [`Host::end_turn`] (or [`Host::finish_turn`] from async code);
//!   [`Host::child`] gives a sub-agent the same hooks and recorder over its own registry and
//!   gate. The agent, its sub-agents, `lathe mcp` (one host per client session) and `lathe tool`
//!   (each changing call a turn) are all built through it.
//! - The session ([`Session`]) holds what calls share, and its services are modules here, so a
//!   crate of tools needs no other: [`checklist`] (`update_plan`'s plan), [`memory`] (the
//!   project's memory file), [`vision`] (what images the model can see), [`commands`] (the
//!   session's `lathe-exec` supervisor and sandbox), [`paging`] (`read_file`'s paging rules for
//!   any text), [`documents`] (the reader `web_fetch` hands a fetched PDF to, provided by
//!   `lathe-tools`) and [`text`] (line endings, sizes, diffs); [`budget`] fits every result to
//!   the session's budget, [`workspace`] is containment, [`watch`] reports planted hooks and
//!   configuration, [`pending`] holds previewed changes until `resolve`.
//!
//! # One call
//!
//! ```text
//!  front end: a tool name and JSON arguments, as the model or client wrote them
//!   │
//!   │ Dispatcher::prepare ─► Registry::prepare
//!   │     resolve the name · bring the arguments to the schema · bind them to the tool's typed
//!   │     input · ask the tool for its effects and title              ─► PreparedCall
//!   │     (unknown tool, bad argument: Refused, naming the parameter to fix)
//!   │
//!   │ Dispatcher::authorize
//!   │     stopped already?            Cancelled
//!   │     Hook::before, each          may refuse: Refused
//!   │     Hook::pre_tool_use, each    project hooks: refuse, skip an ask, add context
//!   │     Gate::check(effects)        deny: Denied ("denied by Lathe's policy: ...")
//!   │     Tool::plan                  on a blocking thread: the new content and its diffs
//!   │     the gate asked?             Approver::approve(request with the plan's diffs):
//!   │                                 once · for the session (the gate remembers) · deny
//!   │     the plan failed?            Error: the model reads why        ─► Authorized
//!   │
//!   │ Dispatcher::run
//!   │     stopped meanwhile?          Cancelled, nothing applied
//!   │     Hook::before_run(changes)   may stop it: Refused (checkpoints snapshot here)
//!   │     Plan::apply or Tool::run ─► Registry::run_prepared: the result fitted to the budget,
//!   │                                 changes to git hooks and `.lathe/` reported
//!   │     Hook::after, Hook::post_tool_use, each   may add to the outcome
//!   ▼
//!  Outcome { status, output: ToolOutput { text for the model, typed Metadata for the rest } }
//! ```
//!
//! [`Dispatcher::call`] does the three steps in a row. The agent calls them one by one, to emit
//! events in between and to run calls that only read concurrently
//! ([`PreparedCall::only_reads`]). Every way a call ends is an [`Outcome`] the model can read; a
//! tool that panics (in any of its methods) ends as one too, not as the end of the session.
//!
//! # What a plan guarantees
//!
//! A tool that changes files plans: [`Tool::plan`] works out the complete new content of each
//! file and the diff, with the stamp of the content it started from, and writes nothing. The
//! approver is shown that plan's diffs, and [`Plan::apply`] writes exactly that content after
//! checking that each file still has its stamp. So the diff approved, the diff in the result's
//! [`Metadata`] (and in the events stored from it) and the change made are the same bytes; a file
//! that changed in between stops the whole plan before anything is written, and the model reads
//! why. Plans are made only for calls the gate does not deny, since a plan reads files, and a
//! failed plan is reported only once the call is allowed.
//!
//! # Safe defaults
//!
//! A tool is judged to only read when it says so for the input at hand. A tool that does not
//! say what it does (the default of [`Tool::effects`] and [`BoundCall::effects`]) is
//! [`Effect::Unknown`]: asked about in `ask` and `auto`, refused in `read-only`, allowed in
//! `full`; so is the network ([`Effect::Network`]). "Always" is offered only when the rules it
//! would remember cover no more than what was asked.
//!
//! # Example
//!
//! The crate docs of `lathe-tools` show one front end's worth: the built-in tools, a gate in
//! `ask` mode and an approver of its own.
//!
//! Adding a tool, built-in or at run time: `CONTRIBUTING.md` at the repository root.
#![deny(missing_docs)]

// The common surface is the re-exports below; the modules are public for the crates of tools
// built on the runtime (`lathe-tools`, `lathe-web`, the MCP adapters), which need their finer
// parts (the budget's grouping, schema generation, the session's lock helper).
pub mod args;
pub mod budget;
pub mod checklist;
pub mod commands;
pub mod dispatch;
pub mod documents;
pub mod hooks;
pub mod host;
pub mod memory;
pub mod meta;
pub mod paging;
pub mod pending;
pub mod profile;
pub mod registry;
pub mod schema;
pub mod session;
pub mod text;
pub mod tool;
pub mod vision;
pub mod watch;
pub mod workspace;

pub use dispatch::{
    ApprovalDecision, ApprovalRequest, Approver, Authorized, CallInfo, CallStatus, Dispatcher,
    FixedAnswer, Gate, Hook, Judgement, NonInteractive, Outcome, PreToolAnswer, Refuse, Verdict,
};
pub use host::{Host, HostBuilder, TurnChange, TurnRecorder};
pub use lathe_policy::{ApprovalMode, PermissionsConfig};
pub use meta::{CommandMeta, CommandState, FileChange, LineRange, MAX_CHANGE_DIFF_LINES, Metadata};
pub use pending::{NOTHING_PENDING, PENDING_UNAVAILABLE, PendingAction, PendingSummary};
pub use profile::Profile;
pub use registry::{BoundCall, DynTool, PreparedCall, Registry, RegistryError, ToolDefinition};
pub use schema::portable_schema;
pub use session::{DEFAULT_RESULT_BUDGET, FileStamp, Session, StampBuilder, ToolConfig};
pub use tool::{
    Effect, Plan, PlannedWrite, ProgressSink, Tool, ToolContext, ToolError, ToolHints, ToolImage,
    ToolKind, ToolOutput, ToolProgress, ToolResult, current_stamp, hints_for, run_planned,
};
pub use workspace::{
    Access, Beneath, PathError, ResolvedPath, TEMP_FILE_PATTERN, Workspace, changed_under_walk,
    link_resolver,
};
