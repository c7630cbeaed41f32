//! A custom tool that takes part in preview/apply: `batch_rename` previews renaming every file
//! of a directory whose name contains `find`, and leaves the renames as a pending action that
//! the built-in `resolve` tool applies or discards.
//!
//! Run it on a directory of your own (it renames files there only on `apply`):
//!
//! ```text
//! cargo run -p lathe-tools --example batch_rename -- DIR FIND REPLACE apply|discard
//! ```
//!
//! It prints the preview the model would read, then what `resolve` answered, then the
//! directory's files.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lathe_runtime::tool::ResultExt;
use lathe_runtime::{
    ApprovalMode, Dispatcher, Effect, Gate, NonInteractive, PendingAction, Session, Tool,
    ToolConfig, ToolContext, ToolError, ToolKind, ToolOutput, ToolResult, Workspace,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

/// Rename every file in `dir` whose name contains `find`, replacing it with `replace`. Shows
/// the renames first; nothing is renamed until `resolve` applies them.
#[derive(Debug, Deserialize, JsonSchema)]
struct BatchRenameInput {
    /// The directory, relative to the workspace.
    dir: String,
    /// The text to find in file names.
    find: String,
    /// What replaces it.
    replace: String,
}

struct BatchRename;

/// One rename, as previewed: workspace-relative names.
#[derive(Debug, Clone)]
struct Rename {
    from: String,
    to: String,
}

impl Tool for BatchRename {
    const NAME: &'static str = "batch_rename";
    type Input = BatchRenameInput;

    fn kind(&self) -> ToolKind {
        // The preview only lists a directory; the renames happen in `resolve`.
        ToolKind::Read
    }

    fn effects(&self, input: &Self::Input, _session: &Session) -> Vec<Effect> {
        vec![
            Effect::Read {
                path: input.dir.clone(),
            },
            Effect::OwnState { changes: true },
        ]
    }

    fn title(&self, input: &Self::Input) -> String {
        format!(
            "batch_rename {} ({} -> {})",
            input.dir, input.find, input.replace
        )
    }

    async fn run(&self, input: BatchRenameInput, ctx: ToolContext) -> ToolResult {
        if input.find.is_empty() || input.replace.contains('/') {
            return Err(ToolError::new(
                "`find` must not be empty and `replace` must not contain `/`",
            ));
        }
        let root = ctx.session.workspace().root().to_path_buf();
        // A mistake the model can fix is an `Err(ToolError)`: `or_model` words it, `?` returns it.
        let dir = ctx
            .session
            .workspace()
            .resolve(&input.dir, lathe_runtime::Access::Write)
            .or_model(|err| err.to_string())?;
        let mut renames = Vec::new();
        let mut names: Vec<String> = std::fs::read_dir(dir.abs())
            .or_model(|err| format!("cannot list {}: {err}", input.dir))?
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        names.sort();
        for name in names {
            if !name.contains(&input.find) {
                continue;
            }
            let to = name.replace(&input.find, &input.replace);
            let shown = |n: &str| relative(&root, &dir.abs().join(n));
            if dir.abs().join(&to).exists() {
                return Err(ToolError::new(format!(
                    "{} would replace the existing {}; choose another `replace`",
                    shown(&name),
                    shown(&to)
                )));
            }
            renames.push(Rename {
                from: shown(&name),
                to: shown(&to),
            });
        }
        if renames.is_empty() {
            return Ok(ToolOutput::ok(format!(
                "No file name in {} contains {:?}.",
                input.dir, input.find
            )));
        }
        let preview: Vec<String> = renames
            .iter()
            .map(|r| format!("{} -> {}", r.from, r.to))
            .collect();
        let label = format!("rename {} file(s) in {}", renames.len(), input.dir);
        let effects = renames
            .iter()
            .flat_map(|r| {
                [
                    Effect::Write {
                        path: r.from.clone(),
                    },
                    Effect::Write { path: r.to.clone() },
                ]
            })
            .collect();
        let planned = renames.clone();
        let action =
            PendingAction::custom(&label, Self::NAME, effects, move |reason, ctx| async move {
                apply(&planned, ctx.session.workspace().root(), &reason)
            })
            .with_details(preview.join("\n"))
            .with_reject(|reason| {
                ToolOutput::ok(format!("Discarded the batch rename. Reason: {reason}"))
            });
        let notice = ctx.session.push_pending(action).map_err(ToolError::new)?;
        Ok(ToolOutput::ok(format!("{}\n{notice}", preview.join("\n"))))
    }
}

/// Renames for real, checking first that each source is still there and each target still
/// free; a failure part way renames the done ones back.
fn apply(renames: &[Rename], root: &Path, reason: &str) -> ToolOutput {
    for r in renames {
        if !root.join(&r.from).is_file() || root.join(&r.to).exists() {
            return ToolOutput::error(format!(
                "{} -> {} no longer fits the preview (the source is gone or the target exists); \
                 nothing was renamed: preview again",
                r.from, r.to
            ));
        }
    }
    let mut done: Vec<&Rename> = Vec::new();
    for r in renames {
        if let Err(err) = std::fs::rename(root.join(&r.from), root.join(&r.to)) {
            for d in done.iter().rev() {
                let _ = std::fs::rename(root.join(&d.to), root.join(&d.from));
            }
            return ToolOutput::error(format!(
                "renaming {} failed: {err}; nothing was renamed",
                r.from
            ));
        }
        done.push(r);
    }
    let why = if reason.is_empty() {
        String::new()
    } else {
        format!(" ({reason})")
    };
    ToolOutput::ok(format!("Renamed {} file(s){why}.", renames.len()))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, find, replace, decision] = args.as_slice() else {
        eprintln!("usage: batch_rename DIR FIND REPLACE apply|discard");
        std::process::exit(2);
    };
    let dir = PathBuf::from(dir).canonicalize()?;
    let state = tempfile::tempdir()?;
    let session = Session::new(
        Workspace::new(&dir)?,
        ToolConfig::default(),
        state.path().into(),
    )?;
    let mut registry = lathe_tools::builtin();
    registry.register(BatchRename);
    let registry = Arc::new(registry);
    // `full`: nobody is asked here. In `ask`, resolve's apply would ask, judged as the writes
    // the action declared.
    let dispatcher = Dispatcher::new(
        Arc::clone(&registry),
        Arc::new(Gate::new(ApprovalMode::Full, &dir)),
    );
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let ctx = || ToolContext::new(Arc::clone(&session));
        let preview = dispatcher
            .call(
                "batch_rename",
                json!({"dir": ".", "find": find, "replace": replace}),
                &NonInteractive,
                ctx(),
            )
            .await;
        println!("preview: {}", preview.output.text);
        println!(
            "resolve offered: {}",
            registry.is_offered("resolve", &session)
        );
        let resolved = dispatcher
            .call(
                "resolve",
                json!({"action": decision, "reason": "from the example"}),
                &NonInteractive,
                ctx(),
            )
            .await;
        println!("resolve: {}", resolved.output.text);
    });
    let mut files: Vec<String> = std::fs::read_dir(&dir)?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    files.sort();
    println!("files: {}", files.join(" "));
    Ok(())
}
