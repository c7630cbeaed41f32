//! Lines typed at the terminal, read on a thread of their own (a blocking read must not hold an
//! async worker) and shared by the chat prompt and approval prompts.

use std::io::{BufRead, Write};

use tokio::sync::Mutex;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

/// Standard input as a queue of lines.
pub struct Input {
    lines: Mutex<(UnboundedReceiver<String>, bool)>,
}

impl Input {
    /// Starts reading standard input.
    pub fn start() -> Self {
        let (tx, rx) = unbounded_channel();
        std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let stdin = std::io::stdin();
                let mut lock = stdin.lock();
                loop {
                    let mut line = String::new();
                    match lock.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let line = line.trim_end_matches(['\n', '\r']).to_owned();
                            if tx.send(line).is_err() {
                                break;
                            }
                        }
                    }
                }
            })
            .expect("cannot start the stdin thread");
        Input {
            lines: Mutex::new((rx, false)),
        }
    }

    /// Writes `prompt` and waits for the next line; `None` once input has ended.
    pub async fn line(&self, prompt: &str) -> Option<String> {
        let mut guard = self.lines.lock().await;
        if guard.1 {
            return None;
        }
        {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(prompt.as_bytes());
            let _ = out.flush();
        }
        match guard.0.recv().await {
            Some(line) => Some(line),
            None => {
                guard.1 = true;
                None
            }
        }
    }

    /// Drops lines typed ahead (while the agent worked), so they cannot answer a prompt they
    /// were not meant for.
    pub async fn discard_typed_ahead(&self) {
        let mut guard = self.lines.lock().await;
        while guard.0.try_recv().is_ok() {}
    }
}
