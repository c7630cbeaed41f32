//! The checkpoints of a session whose changing calls are each a turn (`lathe mcp`'s clients,
//! `lathe tool`): the [`Opener`] that creates the session's stored record the first time a call
//! changes something, owns it for this process, and opens its checkpoints in the data
//! directory.

use std::sync::Arc;

use lathe_checkpoint::Checkpoints;
use lathe_checkpoint::session::{Opener, SessionCheckpoints};
use lathe_policy::ApprovalMode;
use lathe_store::{NewSession, SessionStatus};

/// What the stored session of such a front end says about itself.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The front end, in place of a model server (`mcp`, `tool`).
    pub provider: String,
    /// Who drives it, in place of a model (the MCP client's name, `lathe tool`).
    pub model: String,
    /// The approval mode it runs in.
    pub approval: ApprovalMode,
    /// The session's title in `lathe sessions`.
    pub title: String,
}

/// The checkpoints of `session`, whose changing calls are each a turn: opened when a call
/// first changes something, under a stored session `recorded` describes.
pub fn session_checkpoints(
    session: &Arc<lathe_runtime::Session>,
    recorded: Recorded,
) -> Arc<SessionCheckpoints> {
    SessionCheckpoints::of(session, opener(recorded))
}

/// The host of such a session: the tools, its gate, the configured `hooks`, and its
/// `checkpoints` as the recorder (none: checkpoints turned off). Built once: a session that has
/// a host gets the same one again.
pub fn per_call_host(
    session: &Arc<lathe_runtime::Session>,
    registry: Arc<lathe_runtime::Registry>,
    gate: Arc<lathe_runtime::Gate>,
    hooks: Option<Arc<dyn lathe_runtime::Hook>>,
    checkpoints: Option<&Arc<SessionCheckpoints>>,
) -> lathe_runtime::Host {
    let host =
        session.extension(|| SessionHost {
            host: lathe_runtime::Host::builder(registry, gate)
                .checkpoints(checkpoints.map(|checkpoints| {
                    Arc::clone(checkpoints) as Arc<dyn lathe_runtime::TurnRecorder>
                }))
                .hooks(hooks)
                .build(),
        });
    host.host.clone()
}

/// A session's host, kept in its tool session.
struct SessionHost {
    host: lathe_runtime::Host,
}

/// Opens the checkpoints of the session `recorded` describes, when first needed: its stored
/// record is created (and held, so `lathe sessions` shows it running until the session ends),
/// and the checkpoints are kept under its id. Without the sessions database the checkpoints are
/// kept under an id of this process's.
pub fn opener(recorded: Recorded) -> Opener {
    Box::new(move |session| open(&recorded, session))
}

fn open(
    recorded: &Recorded,
    session: &lathe_runtime::Session,
) -> Result<(Arc<Checkpoints>, String), String> {
    let root = session.workspace().root().to_path_buf();
    let root = root.canonicalize().unwrap_or(root);
    let store = crate::state::open_store()
        .inspect_err(|err| tracing::warn!("checkpoints without the sessions database: {err:#}"))
        .ok();
    let stored = store.as_ref().and_then(|store| {
        store
            .create_session(NewSession {
                workspace: root.clone(),
                provider: recorded.provider.clone(),
                model: recorded.model.clone(),
                approval: recorded.approval.as_str().to_owned(),
                title: Some(recorded.title.clone()),
                ..NewSession::default()
            })
            .inspect_err(|err| {
                tracing::warn!("cannot record the {} session: {err}", recorded.provider)
            })
            .ok()
    });
    let id = match &stored {
        Some(id) => id.as_str().to_owned(),
        None => format!(
            "{}-{}-{}",
            recorded.provider,
            std::process::id(),
            lathe_store::Timestamp::now().as_millis()
        ),
    };
    if let (Some(store), Some(stored)) = (&store, &stored) {
        // Held while this process serves the session: `lathe sessions` shows it running.
        let owner = crate::agent_setup::own_session(stored).ok();
        let (store, stored) = (store.clone(), stored.clone());
        session.on_shutdown(move || {
            let _ = store.update_session_status(&stored, SessionStatus::Completed);
            drop(owner);
        });
    }
    let mut builder = Checkpoints::builder(crate::state::data_dir(), &root, id.as_str());
    if let Some(store) = store {
        builder = builder.store(store);
    }
    let checkpoints = builder
        .build()
        .map_err(|err| format!("this session keeps no checkpoints: {err}"))?;
    Ok((Arc::new(checkpoints), id))
}
