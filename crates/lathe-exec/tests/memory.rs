//! A command printing 2 GiB keeps the supervising process under 64 MiB. Run alone in a child
//! process of the test binary (`alone!`) so no other test's memory counts against it.

use lathe_exec::{CommandSpec, CommandStatus, Supervisor};
use tokio_util::sync::CancellationToken;

const TWO_GIB: u64 = 2 << 30;
const LIMIT_KIB: u64 = 64 * 1024;

/// A field of `/proc/self/status` in KiB (`VmHWM` is the peak resident set).
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_gib_of_output_keeps_memory_bounded() {
    if !lathe_testkit::alone!().await {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let sup = Supervisor::builder(state.path()).build().unwrap();
    let line = "lathe memory test: bounded head, tail and artifact\n";
    let command = format!("yes '{}' | head -c {TWO_GIB}", line.trim_end());
    let report = sup
        .run(CommandSpec::new(command, "/"), &CancellationToken::new())
        .await
        .unwrap();
    let peak = status_kib("VmHWM");
    let now = status_kib("VmRSS");
    assert_eq!(report.status, CommandStatus::Exited { code: 0 });
    assert_eq!(report.total_bytes, TWO_GIB);
    let full_lines = TWO_GIB / line.len() as u64;
    let partial = u64::from(!TWO_GIB.is_multiple_of(line.len() as u64));
    assert_eq!(report.total_lines, full_lines + partial);
    assert_eq!(
        report.artifact.kept_bytes,
        1 << 30,
        "the default cap is 1 GiB"
    );
    let meta = std::fs::metadata(&report.artifact.path).unwrap();
    assert_eq!(meta.len(), 1 << 30);
    assert_eq!(report.artifact.cap, 1 << 30);
    assert!(
        peak < LIMIT_KIB,
        "peak resident memory {peak} KiB (now {now} KiB) is over {LIMIT_KIB} KiB"
    );
    eprintln!("peak resident memory while reading 2 GiB: {peak} KiB (now {now} KiB)");
}
