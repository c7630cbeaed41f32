//! The sandbox tests' fixture: directories outside every default write path, the sandbox
//! prepared (or the test skipped where Landlock is missing), and bash run with or without it.

use std::path::{Path, PathBuf};
use std::process::Output;

use lathe_exec::sandbox::{PreparedSandbox, SandboxPolicy, path_is_writable_resolved, probe};
use tempfile::TempDir;

/// A workspace, a session temporary directory and an "outside" directory, all NOT under /tmp,
/// /var/tmp or /dev/shm (which the sandbox allows), so that every allowed write is allowed by
/// the rule under test.
pub struct Fixture {
    _base: TempDir,
    pub workspace: PathBuf,
    pub outside: PathBuf,
    pub policy: SandboxPolicy,
}

pub fn fixture() -> Fixture {
    // Outside /tmp, /var/tmp and /dev/shm (all writable in the sandbox) and outside any cargo
    // workspace (see the `cargo new` test).
    let base = lathe_testkit::outside_scratch_dir(env!("CARGO_TARGET_TMPDIR"));
    let root = base.path().canonicalize().expect("canonical base");
    let workspace = root.join("workspace");
    let session_tmp = root.join("session-tmp");
    let outside = root.join("outside");
    for dir in [&workspace, &session_tmp, &outside] {
        std::fs::create_dir(dir).expect("create fixture directory");
    }
    let policy = SandboxPolicy::new(&workspace, &session_tmp);
    assert!(
        !path_is_writable_resolved(&policy, &outside.join("x")),
        "the outside directory {} must not be allowed by the policy, or these tests prove nothing",
        outside.display()
    );
    Fixture {
        _base: base,
        workspace,
        outside,
        policy,
    }
}

/// Prepares the sandbox, or returns `None` (after saying so) where Landlock is unavailable.
pub fn prepare_or_skip(policy: &SandboxPolicy) -> Option<PreparedSandbox> {
    let support = probe();
    if !support.is_available() {
        let why = support.message().unwrap_or_default();
        if std::env::var_os("LATHE_REQUIRE_SANDBOX").is_some() {
            panic!("LATHE_REQUIRE_SANDBOX is set but {why}");
        }
        eprintln!("SKIPPED: landlock sandbox test not run: {why}");
        return None;
    }
    Some(PreparedSandbox::prepare(policy).expect("prepare the sandbox"))
}

pub async fn bash_env(
    sandbox: Option<&PreparedSandbox>,
    cwd: &Path,
    script: &str,
    env: &[(&str, &Path)],
) -> Output {
    let mut cmd = tokio::process::Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .current_dir(cwd)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for (key, value) in env {
        cmd.env(key, value);
    }
    if let Some(sandbox) = sandbox {
        sandbox.install(&mut cmd);
    }
    cmd.output().await.expect("spawn bash")
}

pub fn describe(output: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Runs `script` with bash in `cwd`, inside `sandbox` when given.
pub async fn bash(sandbox: Option<&PreparedSandbox>, cwd: &Path, script: &str) -> Output {
    bash_env(sandbox, cwd, script, &[]).await
}

/// Whether the tests run as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}
