//! What a running call may use besides its input: the session, cancellation, progress.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::session::Session;

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
