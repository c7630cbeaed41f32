//! Approval prompts at the terminal: y (once), n (with an optional reason for the model), a
//! (always, for this session). Ctrl-C at the question denies the call and stops the turn.

use std::io::Write;
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use futures::future::BoxFuture;

use lathe_agent::approval::{ApprovalDecision, ApprovalRequest, Approver};
use lathe_agent::sink::EventSink;

use super::input::{Input, Purpose, Read};
use crate::render::Renderer;

/// The turn a Ctrl-C at an approval question stops: the front end sets each turn's token
/// before the turn runs.
pub type CurrentTurn = Arc<Mutex<Option<CancellationToken>>>;

/// Asks at the terminal.
pub struct TerminalApprover {
    input: Arc<Input>,
    renderer: Arc<Renderer>,
    sink: EventSink,
    turn: Option<CurrentTurn>,
}

impl TerminalApprover {
    /// An approver reading answers from `input`, pausing `renderer` while it asks. `sink` is
    /// the one `renderer` shows the events of: the question waits until the events before it
    /// (the call, its diff) are on the screen.
    pub fn new(input: Arc<Input>, renderer: Arc<Renderer>, sink: EventSink) -> Self {
        TerminalApprover {
            input,
            renderer,
            sink,
            turn: None,
        }
    }

    /// A Ctrl-C at the question cancels the token in `turn` before the call is denied, so the
    /// turn asks the model nothing more. Without one, the Ctrl-C is sent to this process as a
    /// SIGINT (the front end's own Ctrl-C handling stops the turn).
    pub fn stopping(mut self, turn: CurrentTurn) -> Self {
        self.turn = Some(turn);
        self
    }

    fn stop_turn(&self) {
        let token = self
            .turn
            .as_ref()
            .and_then(|turn| turn.lock().ok().and_then(|t| t.clone()));
        match token {
            Some(token) => {
                let style = *self.renderer.style();
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", style.yellow("stopping the turn…"));
                let _ = out.flush();
                token.cancel();
            }
            // SAFETY: kill on this process's own id.
            None => unsafe {
                libc::kill(libc::getpid(), libc::SIGINT);
            },
        }
    }
}

/// What an answer means; `None` for an answer that is not one.
pub fn parse_answer(answer: &str) -> Option<char> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some('y'),
        "n" | "no" => Some('n'),
        "a" | "always" => Some('a'),
        _ => None,
    }
}

impl Approver for TerminalApprover {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> BoxFuture<'a, ApprovalDecision> {
        Box::pin(async move {
            self.sink.flush().await;
            self.renderer.pause();
            self.input.discard_typed_ahead().await;
            let style = *self.renderer.style();
            {
                let mut out = std::io::stdout().lock();
                for reason in &request.reasons {
                    let _ = writeln!(out, "  {}", style.dim(&crate::render::sanitize(reason)));
                }
                let _ = out.flush();
            }
            let question = format!(
                "Allow? [y]es / [n]o / [a]lways for {} this session: ",
                crate::render::sanitize(&request.scope.to_string())
            );
            loop {
                let answer = match self.input.read(&question, Purpose::Answer).await {
                    Read::Line(answer) => answer,
                    Read::Interrupted { .. } => {
                        // The line editor read Ctrl-C as a key: it stops the turn as a Ctrl-C
                        // during the turn does.
                        self.stop_turn();
                        return ApprovalDecision::Deny {
                            message: Some("the user stopped the turn (Ctrl-C)".into()),
                        };
                    }
                    Read::Eof => {
                        return ApprovalDecision::Deny {
                            message: Some(
                                "nobody answered the approval prompt (input closed)".into(),
                            ),
                        };
                    }
                };
                match parse_answer(&answer) {
                    Some('y') => return ApprovalDecision::AllowOnce,
                    Some('a') => return ApprovalDecision::AllowSession,
                    Some(_) => {
                        let reason = self
                            .input
                            .line("Reason for the model (optional, Enter to skip): ")
                            .await
                            .map(|r| r.trim().to_owned())
                            .filter(|r| !r.is_empty());
                        return ApprovalDecision::Deny { message: reason };
                    }
                    None => {
                        let _ = writeln!(std::io::stdout(), "  answer y, n or a");
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        assert_eq!(parse_answer(" Y "), Some('y'));
        assert_eq!(parse_answer("always"), Some('a'));
        assert_eq!(parse_answer("no"), Some('n'));
        assert_eq!(parse_answer("maybe"), None);
        assert_eq!(parse_answer(""), None);
    }
}
