//! `alone!` runs the body in a child process of this test binary.

use std::path::PathBuf;

#[tokio::test]
async fn the_body_runs_in_a_child_process_of_the_test_binary() {
    if !lathe_testkit::alone!().await {
        return;
    }
    let parent = std::os::unix::process::parent_id();
    let parent_exe = std::fs::read_link(format!("/proc/{parent}/exe")).unwrap();
    let exe: PathBuf = std::env::current_exe().unwrap();
    assert_eq!(parent_exe, exe, "the parent is the test binary");
}
