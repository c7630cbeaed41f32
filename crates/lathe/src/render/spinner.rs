//! A spinner on standard error: one line, redrawn in place, cleared when stopped.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
/// Redraw interval: fast enough to look alive, slow enough to cost nothing.
const TICK: Duration = Duration::from_millis(100);
/// Longest line drawn; a wider one would wrap and break the redraw.
const MAX_WIDTH: usize = 76;

#[derive(Default)]
struct Line {
    label: Option<String>,
    detail: Option<String>,
    since: Option<Instant>,
    drawn: bool,
}

struct Shared {
    line: Mutex<Line>,
    wake: Condvar,
    quit: AtomicBool,
}

/// A spinner drawn by its own thread.
pub struct Spinner {
    shared: Arc<Shared>,
}

impl Spinner {
    /// Starts the drawing thread (idle until [`Spinner::show`]).
    pub fn start() -> Self {
        let shared = Arc::new(Shared {
            line: Mutex::new(Line::default()),
            wake: Condvar::new(),
            quit: AtomicBool::new(false),
        });
        let drawer = Arc::clone(&shared);
        let _ = std::thread::Builder::new()
            .name("spinner".into())
            .spawn(move || draw_loop(&drawer));
        Spinner { shared }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Line> {
        self.shared
            .line
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Shows `label` (keeps the clock running when the label is unchanged). The label and the
    /// detail may come from the model (a call's title) or a command's output: sanitized here.
    pub fn show(&self, label: &str) {
        let label = &*super::sanitize(label);
        let mut line = self.lock();
        if line.label.as_deref() != Some(label) {
            line.label = Some(label.to_owned());
            line.detail = None;
            line.since = Some(Instant::now());
        }
        self.shared.wake.notify_one();
    }

    /// Shows `detail` after the label (a running command's last output line).
    pub fn detail(&self, detail: &str) {
        let mut line = self.lock();
        if line.label.is_some() {
            line.detail = Some(super::sanitize(detail).into_owned());
        }
    }

    /// Hides the spinner and clears its line.
    pub fn stop(&self) {
        let mut line = self.lock();
        line.label = None;
        line.detail = None;
        line.since = None;
        if line.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            line.drawn = false;
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop();
        self.shared.quit.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
    }
}

fn draw_loop(shared: &Shared) {
    let mut frame = 0usize;
    let mut line = shared.line.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        if shared.quit.load(Ordering::SeqCst) {
            return;
        }
        if let Some(label) = line.label.clone() {
            let secs = line.since.map_or(0, |s| s.elapsed().as_secs());
            let mut text = format!("{} {label}", FRAMES[frame % FRAMES.len()]);
            if secs > 0 {
                text.push_str(&format!(" ({secs}s)"));
            }
            if let Some(detail) = &line.detail {
                text.push_str(&format!(" · {detail}"));
            }
            let text: String = text.chars().take(MAX_WIDTH).collect();
            {
                // Released before waiting: `stop` takes this lock while holding `line`.
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r\x1b[2K\x1b[2m{text}\x1b[0m");
                let _ = err.flush();
            }
            line.drawn = true;
            frame += 1;
            line = shared
                .wake
                .wait_timeout(line, TICK)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        } else {
            line = shared
                .wake
                .wait(line)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}
