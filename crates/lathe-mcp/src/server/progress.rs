//! `notifications/progress` from a tool's [`ToolProgress`], for calls whose client gave a
//! progress token.
//!
//! Tools report progress through a synchronous sink; a task forwards it to the client,
//! coalescing what piled up while the previous notification was being written. `progress` counts
//! the characters of output seen so far (at least one per notification), so it increases with
//! every notification as MCP requires; the total is unknown.

use std::sync::{Arc, Mutex};

use lathe_runtime::{ProgressSink, ToolProgress};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RoleServer};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The most text one notification carries; a burst of output is cut to its tail (the full
/// output stays in the command's artifact).
pub const MAX_MESSAGE_CHARS: usize = 4_000;

/// Forwards one call's progress until [`Forwarder::finish`].
pub struct Forwarder {
    sender: Arc<Mutex<Option<mpsc::UnboundedSender<ToolProgress>>>>,
    task: JoinHandle<()>,
}

impl Forwarder {
    /// Starts forwarding to `peer` under `token`; hand the returned sink to the tool.
    pub fn start(peer: Peer<RoleServer>, token: ProgressToken) -> (Forwarder, ProgressSink) {
        let (tx, rx) = mpsc::unbounded_channel();
        let sender = Arc::new(Mutex::new(Some(tx)));
        let sink_sender = Arc::clone(&sender);
        let sink: ProgressSink = Arc::new(move |progress| {
            let guard = sink_sender.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(tx) = guard.as_ref() {
                let _ = tx.send(progress);
            }
        });
        let task = tokio::spawn(forward(peer, token, rx));
        (Forwarder { sender, task }, sink)
    }

    /// Stops accepting progress (a command moved to the background keeps its sink; what it
    /// reports after the call returned must not reach the client) and waits until what was
    /// reported before has been sent, so no notification follows the result.
    pub async fn finish(self) {
        drop(self.sender.lock().unwrap_or_else(|e| e.into_inner()).take());
        if let Err(err) = self.task.await {
            tracing::warn!("progress forwarding failed: {err}");
        }
    }
}

async fn forward(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    mut rx: mpsc::UnboundedReceiver<ToolProgress>,
) {
    let mut progress = 0.0_f64;
    let mut failed = false;
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        if failed {
            continue;
        }
        let (message, weight) = summarize(&batch);
        progress += weight.max(1) as f64;
        let mut param = ProgressNotificationParam::new(token.clone(), progress);
        param.message = Some(message);
        if let Err(err) = peer.notify_progress(param).await {
            tracing::debug!("cannot send progress, dropping the rest: {err}");
            failed = true;
        }
    }
}

/// The message for a batch (output joined, status lines last) and its weight in characters.
fn summarize(batch: &[ToolProgress]) -> (String, usize) {
    let mut output = String::new();
    let mut status = None;
    let mut weight = 0;
    for item in batch {
        match item {
            ToolProgress::Output { text } => {
                weight += text.chars().count();
                output.push_str(text);
            }
            ToolProgress::Status { message } => {
                weight += 1;
                status = Some(message.clone());
            }
        }
    }
    let mut message = tail(&output, MAX_MESSAGE_CHARS);
    if let Some(status) = status {
        if !message.is_empty() && !message.ends_with('\n') {
            message.push('\n');
        }
        message.push_str(&status);
    }
    (message, weight)
}

fn tail(text: &str, max_chars: usize) -> String {
    let count = text.chars().count();
    if count <= max_chars {
        return text.to_owned();
    }
    let skip = count - max_chars;
    let start = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
    format!("[...]{}", &text[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_join_output_and_keep_the_tail() {
        let (message, weight) = summarize(&[
            ToolProgress::Output { text: "ab".into() },
            ToolProgress::Output {
                text: "cd\n".into(),
            },
            ToolProgress::Status {
                message: "still running".into(),
            },
        ]);
        assert_eq!(message, "abcd\nstill running");
        assert_eq!(weight, 6);
        let long = "é".repeat(MAX_MESSAGE_CHARS + 10);
        let (message, _) = summarize(&[ToolProgress::Output { text: long }]);
        assert!(message.starts_with("[...]"));
        assert_eq!(message.chars().count(), MAX_MESSAGE_CHARS + 5);
    }
}
