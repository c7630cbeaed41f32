//! The typed tool contract.
//!
//! A tool is a struct implementing [`Tool`]: a fixed name, an input type whose JSON Schema (and
//! its doc comments) is what the model reads, and an async `run`. The [`Registry`](crate::Registry)
//! erases tools once, so the agent and the MCP server serve the very same definitions.

use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::meta::{CommandMeta, CommandState, FileChange, LineRange, Metadata};
use crate::session::{FileStamp, Session, StampBuilder};
use crate::workspace::ResolvedPath;

/// What a tool does to the world, as the approval policy, the tool runner and MCP annotations
/// need to know it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// Only reads: safe to run concurrently with other reads and without approval in `ask` mode.
    Read,
    /// Changes files inside the workspace.
    Edit,
    /// Runs programs (their effect is judged by command analysis).
    Execute,
    /// Manages the session's own state (background commands, pending previews, sub-agents).
    Session,
}

impl ToolKind {
    /// True for tools that never change anything, so they may run concurrently.
    pub fn is_read_only(self) -> bool {
        matches!(self, ToolKind::Read)
    }
}

/// Hints for clients (MCP annotations), stated truthfully per tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolHints {
    /// The tool does not modify its environment.
    pub read_only: bool,
    /// The tool may destroy or overwrite data (only meaningful when not read-only).
    pub destructive: bool,
    /// Calling it twice with the same arguments has no additional effect.
    pub idempotent: bool,
    /// The tool may reach outside the workspace (network, other processes).
    pub open_world: bool,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The model-facing text.
    pub text: String,
    /// True when the call failed in a way the model should read and fix.
    pub is_error: bool,
    /// What the call did, for user interfaces and programs: files changed, lines shown, the
    /// command it ran, where a cut result was saved, and the tool's own fields.
    pub metadata: Metadata,
    /// Images for a model that can see (a screenshot `read_file` read, an MCP server's image
    /// result), in the order they were made. A front end that cannot pass them on says so in
    /// the text it sends instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ToolImage>,
}

/// One image in a tool result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolImage {
    /// The media type: `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: String,
    /// The encoded image bytes, base64 (standard alphabet, padded): the form both Ollama's
    /// `images` and OpenAI's `data:` URLs take, and MCP's image content.
    pub data: String,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
            metadata: Metadata::default(),
            images: Vec::new(),
        }
    }

    /// A result the model should read as a mistake to fix: say what to do next in `text`.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
            metadata: Metadata::default(),
            images: Vec::new(),
        }
    }

    /// Adds an image for the model to see ([`ToolOutput::images`]).
    pub fn with_image(mut self, image: ToolImage) -> Self {
        self.images.push(image);
        self
    }

    /// Adds one of the tool's own metadata entries ([`Metadata::extra`]). The typed fields
    /// have their own setters: [`ToolOutput::with_path`], [`ToolOutput::with_change`],
    /// [`ToolOutput::with_lines`], [`ToolOutput::with_command`].
    pub fn with_meta(mut self, key: &str, value: impl Into<Value>) -> Self {
        debug_assert!(
            !Metadata::is_typed_key(key),
            "`{key}` is a typed metadata field; use its setter"
        );
        self.metadata.extra.insert(key.to_owned(), value.into());
        self
    }

    /// Names the file or directory the call worked on.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.metadata.path = Some(path.into());
        self
    }

    /// Records a file the call changed.
    pub fn with_change(mut self, change: FileChange) -> Self {
        self.metadata.changes.push(change);
        self
    }

    /// Records the lines of a file the call showed.
    pub fn with_lines(mut self, lines: LineRange) -> Self {
        self.metadata.lines = Some(lines);
        self
    }

    /// Says what a search or listing found, for people (`12 matches`).
    pub fn with_found(mut self, found: impl Into<String>) -> Self {
        self.metadata.found = Some(found.into());
        self
    }

    /// Records the command the call ran or touched.
    pub fn with_command(mut self, command: CommandMeta) -> Self {
        self.metadata.command = Some(command);
        self
    }

    /// Marks the result as state the model keeps ([`Metadata::pinned`]).
    pub fn pinned(mut self) -> Self {
        self.metadata.pinned = true;
        self
    }
}

/// One thing a call would do, as the approval policy judges it. A tool lists these for each
/// input ([`Tool::effects`]); the policy decides on all of them together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Reads a file or a directory tree (the path as the call gave it: relative to the
    /// workspace root, or absolute).
    Read {
        /// The path as given.
        path: String,
    },
    /// Creates a file or replaces all of its content.
    Write {
        /// The path as given.
        path: String,
    },
    /// Changes part of a file.
    Edit {
        /// The path as given.
        path: String,
    },
    /// Runs a shell command line.
    Command {
        /// The command line.
        command: String,
        /// The directory it runs in, as given (`None`: the workspace root).
        cwd: Option<String>,
        /// True when it would run outside the sandbox without the configuration having chosen
        /// that: such a call always asks.
        outside_sandbox: bool,
    },
    /// Reaches a host over the network.
    Network {
        /// The host name (or address).
        host: String,
    },
    /// Fetches a URL from a host (a GET: reads from the network, changes nothing here). Judged
    /// by `fetch(HOST)` rules; asked about in `ask` and `auto`, refused in `read-only` unless a
    /// rule allows the host, and "always" remembers the host.
    Fetch {
        /// The host as the URL names it (a name or an address).
        host: String,
    },
    /// Reads or changes only the session's own state (its background commands, its plan,
    /// pending previews): nothing outside the session, no files, no programs.
    OwnState {
        /// True when it changes that state (for people; the policy allows both).
        changes: bool,
    },
    /// Changes the project's memory file (`update_memory`): asked about in every mode, with
    /// the plan's diff, and refused in `read-only`; no allow rule or "always" lets it run
    /// unasked. A write or edit of the memory file by another tool is judged the same way.
    Memory {
        /// The memory file, relative to the workspace root.
        path: String,
    },
    /// Something the tool cannot describe in the terms above (a tool from another MCP server,
    /// an embedder's tool that did not say). Asked about in `ask` and `auto`, refused in
    /// `read-only`.
    Unknown {
        /// What is known of it, for the person asked.
        what: String,
    },
}

impl Effect {
    /// True when the effect only reads (a fetch reads from the network and changes nothing
    /// here: such calls run concurrently and need no checkpoint).
    pub fn only_reads(&self) -> bool {
        matches!(
            self,
            Effect::Read { .. } | Effect::Fetch { .. } | Effect::OwnState { changes: false }
        )
    }
}

/// What a call would change, worked out without changing anything ([`Tool::plan`]).
///
/// The plan is computed once, before the call is authorized: the approval prompt shows its
/// diffs, and applying it writes exactly the content it holds, after checking that each file
/// is still what the plan was computed against. The diff shown, the diff stored with the
/// call's events and the change made are therefore the same. A plan kept as a pending action
/// ([`PendingAction::from_plan`](crate::PendingAction::from_plan)) keeps the same guarantee
/// until `resolve` applies it.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The files to write (or remove), in order.
    pub writes: Vec<PlannedWrite>,
    /// The result once the plan is applied (without the changes: applying adds them).
    pub output: ToolOutput,
    /// The pending action this plan applies (set by `resolve`): the action leaves the session's
    /// stack when the plan is applied, or found stale. `None` for a call's own plan.
    pub from_pending: Option<u64>,
}

/// One file a plan writes (or removes).
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedWrite {
    /// Where, after containment.
    pub target: ResolvedPath,
    /// The file's stamp when the plan was made; `None` when it did not exist.
    pub before: Option<FileStamp>,
    /// The complete new content (empty for a removal).
    pub content: Vec<u8>,
    /// Permission bits for a file the write creates (an existing file keeps its own).
    pub new_mode: u32,
    /// What the write changes, with its diff.
    pub change: FileChange,
    /// True: the file is removed (`content` is ignored).
    pub remove: bool,
}

impl PlannedWrite {
    /// A planned removal of the file at `target`, which had the stamp `before`.
    pub fn removal(target: ResolvedPath, before: FileStamp, change: FileChange) -> Self {
        PlannedWrite {
            target,
            before: Some(before),
            content: Vec::new(),
            new_mode: 0o644,
            change,
            remove: true,
        }
    }
}

/// A file as it was before a plan touched it, to put back when a later file of the plan fails.
struct Original {
    target: ResolvedPath,
    /// Content and permission bits; `None` when the file did not exist.
    before: Option<(Vec<u8>, u32)>,
}

impl Plan {
    /// A plan that writes nothing and returns `output`.
    pub fn nothing(output: ToolOutput) -> Self {
        Plan {
            writes: Vec::new(),
            output,
            from_pending: None,
        }
    }

    /// A plan that makes `writes` and then returns `output`.
    pub fn new(writes: Vec<PlannedWrite>, output: ToolOutput) -> Self {
        Plan {
            writes,
            output,
            from_pending: None,
        }
    }

    /// The changes the plan would make.
    pub fn changes(&self) -> impl Iterator<Item = &FileChange> {
        self.writes.iter().map(|w| &w.change)
    }

    /// The files a plan's own stamps say changed since it was made, as shown to the model; or
    /// why one of them cannot be read.
    pub fn stale_files(&self, session: &Session) -> Result<Vec<String>, ToolOutput> {
        let workspace = session.workspace();
        let mut stale = Vec::new();
        for write in &self.writes {
            match current_stamp(workspace, &write.target) {
                Ok(now) if now == write.before => {}
                Ok(_) => stale.push(write.change.path.clone()),
                Err(err) => {
                    return Err(ToolOutput::error(format!(
                        "cannot write {}: reading what it holds now failed: {err}",
                        write.change.path
                    ))
                    .with_path(write.change.path.clone()));
                }
            }
        }
        Ok(stale)
    }

    /// Applies the plan: checks that every file is still as planned, then writes (or removes)
    /// each one atomically, and returns the planned result with the changes recorded.
    ///
    /// All or nothing: a file that changed since the plan was made stops everything before
    /// anything is written, and a write that fails puts back every file the plan had already
    /// written or removed; the model reads why in both cases.
    pub fn apply(self, session: &Session) -> ToolOutput {
        let Some(id) = self.from_pending else {
            return self.apply_now(session);
        };
        // Applied or not, the action is done with: a stale preview can never apply.
        session.drop_pending(id);
        let mut output = self.apply_now(session);
        if output.is_error && !output.text.contains("pending action was dropped") {
            output
                .text
                .push_str(" The pending action was dropped; make a new preview to try again.");
        }
        output
    }

    fn apply_now(self, session: &Session) -> ToolOutput {
        let stale = match self.stale_files(session) {
            Ok(stale) => stale,
            Err(output) => return output,
        };
        if !stale.is_empty() {
            let (what, again) = if self.from_pending.is_some() {
                (
                    "since it was previewed",
                    "the pending action was dropped: read them again and make a new preview",
                )
            } else {
                (
                    "after this change was worked out (and shown for approval)",
                    "read it again and redo the change",
                )
            };
            let names = stale.join(", ");
            return ToolOutput::error(format!(
                "{names} changed on disk {what}, so nothing was written; {again}"
            ))
            .with_path(stale[0].clone());
        }
        let workspace = session.workspace();
        let mut output = self.output;
        let mut done: Vec<Original> = Vec::new();
        let mut changes = Vec::new();
        for write in &self.writes {
            let original = match original_of(workspace, &write.target) {
                Ok(original) => original,
                Err(err) => {
                    return failed_apply(
                        session,
                        &done,
                        &write.change.path,
                        &err,
                        self.writes.len(),
                    );
                }
            };
            let result = if write.remove {
                workspace.remove_file(&write.target)
            } else {
                workspace.write_atomic(&write.target, &write.content, write.new_mode)
            };
            if let Err(err) = result {
                return failed_apply(session, &done, &write.change.path, &err, self.writes.len());
            }
            done.push(Original {
                target: write.target.clone(),
                before: original,
            });
            changes.push(write.change.clone());
        }
        for write in self.writes {
            if write.remove {
                session.forget_file(write.target.abs());
            } else {
                session.record_file(write.target.abs(), &write.content);
            }
        }
        output.metadata.changes.extend(changes);
        if self.from_pending.is_some() {
            crate::pending::add_still_pending(&mut output, session);
        }
        output
    }
}

fn original_of(
    workspace: &crate::Workspace,
    target: &ResolvedPath,
) -> std::io::Result<Option<(Vec<u8>, u32)>> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
    let mut file = match workspace.open(target, flags, 0) {
        Ok(file) => file,
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let mode = file.metadata()?.permissions().mode() & 0o7777;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some((bytes, mode)))
}

/// The result of a plan whose write of `path` failed with `err`: the files written before it
/// are put back first, and the model reads whether that worked.
fn failed_apply(
    session: &Session,
    done: &[Original],
    path: &str,
    err: &std::io::Error,
    total: usize,
) -> ToolOutput {
    let reason = match err.raw_os_error() {
        Some(libc::ENOTDIR) => "a part of its directory path is a file, not a directory".to_owned(),
        _ => err.to_string(),
    };
    let workspace = session.workspace();
    let mut not_restored = Vec::new();
    for original in done.iter().rev() {
        let result = match &original.before {
            Some((bytes, mode)) => workspace.write_atomic(&original.target, bytes, *mode),
            None => workspace.remove_file(&original.target),
        };
        if result.is_err() {
            not_restored.push(original.target.shown().to_owned());
        }
    }
    let text = if done.is_empty() {
        format!("cannot write {path}: {reason}; nothing was changed")
    } else if not_restored.is_empty() {
        format!(
            "cannot write {path}: {reason}; the {} file(s) already written were put back as \
             they were, so nothing was changed (of {total})",
            done.len()
        )
    } else {
        format!(
            "cannot write {path}: {reason}; putting back the files already written failed \
             for {}: check them",
            not_restored.join(", ")
        )
    };
    ToolOutput::error(text).with_path(path.to_owned())
}

/// The stamp of the file at `target` now; `None` when it does not exist.
pub fn current_stamp(
    workspace: &crate::Workspace,
    target: &ResolvedPath,
) -> std::io::Result<Option<FileStamp>> {
    use std::io::Read;
    // O_NONBLOCK: if a FIFO took the file's place since the plan, opening it must not wait for
    // a writer; regular files ignore the flag.
    let flags = nix::fcntl::OFlag::O_RDONLY | nix::fcntl::OFlag::O_NONBLOCK;
    let mut file = match workspace.open(target, flags, 0) {
        Ok(file) => file,
        Err(err)
            if err.kind() == std::io::ErrorKind::NotFound
                || err.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            return Ok(None);
        }
        Err(err) => return Err(err),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("it is no longer a regular file"));
    }
    let len = meta.len();
    let mut stamp = StampBuilder::new(len);
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        stamp.update(&buf[..n]);
    }
    stamp
        .finish()
        .map(Some)
        .ok_or_else(|| std::io::Error::other("the file is changing on disk right now"))
}

/// Progress reported by a running tool (command output as it arrives, status lines).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToolProgress {
    /// A piece of a running command's output (lossy UTF-8).
    Output {
        /// The text that arrived.
        text: String,
    },
    /// A human-readable status line.
    Status {
        /// The status message.
        message: String,
    },
}

/// Where a tool sends [`ToolProgress`].
pub type ProgressSink = Arc<dyn Fn(ToolProgress) + Send + Sync>;

/// Everything a tool call may use besides its input.
#[derive(Clone)]
pub struct ToolContext {
    /// The session: workspace, configuration and per-session state.
    pub session: Arc<Session>,
    /// Cancelled when the caller stops the call; long-running tools select on it.
    pub cancel: CancellationToken,
    /// Receives progress, when somebody listens.
    pub progress: Option<ProgressSink>,
    /// The id of the call, when the model gave one.
    pub call_id: Option<String>,
}

impl ToolContext {
    /// A context for `session` with a fresh cancellation token and no progress listener.
    pub fn new(session: Arc<Session>) -> Self {
        ToolContext {
            session,
            cancel: CancellationToken::new(),
            progress: None,
            call_id: None,
        }
    }

    /// Sends progress to the listener, if any.
    pub fn report(&self, progress: ToolProgress) {
        if let Some(sink) = &self.progress {
            sink(progress);
        }
    }
}

/// A typed tool. Implement this; the registry does the rest.
///
/// Everything a caller needs to know about a call is answered by the tool from its typed input,
/// deserialised once: what the policy judges ([`Tool::effects`]), the line people see
/// ([`Tool::title`]), what it would change ([`Tool::plan`]). Adding a built-in tool is one file
/// in `lathe-tools` and one line in its `builtin_tools!` list (`crates/lathe-tools/src/lib.rs`);
/// an embedder's tool is added with [`Registry::register`](crate::Registry::register). See
/// `CONTRIBUTING.md`.
pub trait Tool: Send + Sync + 'static {
    /// The model-facing name (snake_case, unique in a registry).
    const NAME: &'static str;
    /// Other names a model may call the tool by (`bash` for `shell`): resolved to this tool.
    /// Unique across a registry, like names.
    const ALIASES: &'static [&'static str] = &[];
    /// The input: its doc comment is the tool's description, its fields' doc comments describe
    /// the parameters.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;

    /// String parameters (by name, at any depth) the argument layer passes through as given,
    /// without the double-escape repair: the tool interprets their escapes itself (`edit_file`
    /// matches `old_string` literally first, so a `\n` the file really holds is found).
    const RAW_STRINGS: &'static [&'static str] = &[];

    /// The description the compact profile ([`Profile::Compact`](crate::Profile), for small
    /// windows) sends instead of the input's doc comment: shorter, keeping every rule the model
    /// needs to call the tool right. By default, `None`: the full description.
    const COMPACT_DESCRIPTION: Option<&'static str> = None;

    /// The parameters the compact profile advertises, each with its short description (`""`
    /// for none), in the schema's order. Parameters left out are rarely needed: they stay
    /// accepted, exactly as in the full profile, they are only not listed. By default, `None`:
    /// every parameter, with its full description.
    const COMPACT_PARAMETERS: Option<&'static [(&'static str, &'static str)]> = None;

    /// Whether the compact profile offers the tool on demand only (behind `more_tools`, see
    /// [`Registry::defer`](crate::Registry::defer)): a tool few tasks need. By default, false.
    const ON_DEMAND: bool = false;

    /// What the tool does to the world, in general (scheduling: reads run concurrently).
    fn kind(&self) -> ToolKind;

    /// Hints for MCP clients; derived from [`Tool::kind`] unless a tool knows better.
    fn hints(&self) -> ToolHints {
        hints_for(self.kind())
    }

    /// Whether the tool is offered to the model in `session` now (listed in the definitions a
    /// request sends). By default, always; `resolve` only while an action is pending. A tool
    /// that is not offered can still be called by name.
    fn offered(&self, session: &Session) -> bool {
        let _ = session;
        true
    }

    /// What a call with `input` would do, as the approval policy judges it. The default is
    /// [`Effect::Unknown`], which asks (and is refused in `read-only`): a tool is judged to only
    /// read when it says so for this input.
    fn effects(&self, input: &Self::Input, session: &Session) -> Vec<Effect> {
        let _ = (input, session);
        vec![Effect::Unknown {
            what: format!("`{}` did not say what it does", Self::NAME),
        }]
    }

    /// One line for people: the tool and what it works on (`read_file src/main.rs`).
    fn title(&self, input: &Self::Input) -> String {
        let _ = input;
        Self::NAME.to_owned()
    }

    /// For tools that change files: works out what the call would change, without changing
    /// anything. `None` (the default) for tools that do not plan; `Some(Err)` is the result the
    /// model reads when the call cannot be done (the text to replace is not in the file).
    ///
    /// Called on a blocking thread. A tool that plans gets its [`Plan`] applied by the caller
    /// instead of [`Tool::run`]; its `run` should plan and apply too ([`run_planned`]), for
    /// callers that run tools directly.
    fn plan(&self, input: &Self::Input, session: &Session) -> Option<Result<Plan, ToolOutput>> {
        let _ = (input, session);
        None
    }

    /// Runs one call. Mistakes the model can fix are returned as [`ToolOutput::error`].
    fn run(&self, input: Self::Input, ctx: ToolContext) -> impl Future<Output = ToolOutput> + Send;
}

/// [`Tool::run`] for a tool that plans: plans on a blocking thread and applies the plan.
pub async fn run_planned<T: Tool + Clone>(
    tool: &T,
    input: T::Input,
    ctx: ToolContext,
) -> ToolOutput {
    let tool = tool.clone();
    let session = Arc::clone(&ctx.session);
    tokio::task::spawn_blocking(move || match tool.plan(&input, &session) {
        Some(Ok(plan)) => plan.apply(&session),
        Some(Err(output)) => output,
        None => ToolOutput::error(format!("internal error: `{}` made no plan", T::NAME)),
    })
    .await
    .unwrap_or_else(|err| ToolOutput::error(format!("{} stopped unexpectedly: {err}", T::NAME)))
}

/// Default hints for a kind of tool.
pub fn hints_for(kind: ToolKind) -> ToolHints {
    match kind {
        ToolKind::Read => ToolHints {
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        },
        ToolKind::Edit => ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        },
        ToolKind::Execute => ToolHints {
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: true,
        },
        ToolKind::Session => ToolHints {
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
        },
    }
}
