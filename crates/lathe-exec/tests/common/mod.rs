//! Helpers shared by the integration tests: supervisors in temporary directories, unique
//! markers for the processes a test starts, and a `/proc` scan that finds them.

pub mod sandbox;

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lathe_exec::{Supervisor, SupervisorBuilder};

/// A builder over `dir` with a short kill grace, so tests with processes ignoring SIGTERM
/// stay quick.
pub fn builder(dir: &Path) -> SupervisorBuilder {
    Supervisor::builder(dir).kill_grace(Duration::from_millis(500))
}

pub fn supervisor(dir: &Path) -> Supervisor {
    builder(dir).build().expect("supervisor")
}

/// A number like `1000.<pid><n>`: valid for `sleep`, unique to this test process and call, so a
/// `/proc` scan finds exactly the processes this test started.
pub fn marker() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    format!(
        "1000.{}{:03}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

pub use lathe_testkit::processes_with;

/// Live `sleep` processes carrying `marker`.
pub fn sleeps_with(marker: &str) -> usize {
    processes_with(marker)
        .iter()
        .filter(|(_, cmdline)| cmdline.starts_with("sleep "))
        .count()
}

/// Polls `condition` every 20 ms for up to 30 s.
pub async fn wait_until(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    condition()
}

/// Newlines in `bytes`, the slow obvious way.
pub fn newlines(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&b| b == b'\n').count() as u64
}
