//! Test helpers about the machine: scratch directories that are really "outside" (not under any
//! place the sandbox or the policy lets commands write), and the processes still running.

use std::path::Path;

/// Places commands may write to anyway (`/tmp` and friends): an "outside" directory under one of
/// them proves nothing about the sandbox or the policy.
const WRITABLE_ANYWAY: &[&str] = &["/tmp", "/var/tmp", "/dev/shm"];

/// A temporary directory outside `/tmp`, `/var/tmp` and `/dev/shm`, for tests that need a place a
/// sandboxed command must not write to or that the policy must judge "outside the workspace".
///
/// Cargo's target directory is not enough: a checkout (and so its target directory) may itself
/// live under `/tmp`. `$HOME/.cache/lathe-tests` is tried first, then the target directory.
///
/// # Panics
/// When no such directory can be created.
pub fn outside_scratch_dir(target_tmpdir: &str) -> tempfile::TempDir {
    let home = std::env::var("HOME").unwrap_or_default();
    let candidates = [
        (!home.is_empty()).then(|| format!("{home}/.cache/lathe-tests")),
        Some(target_tmpdir.to_owned()),
    ];
    for base in candidates.into_iter().flatten() {
        let path = Path::new(&base);
        let canonical_parent = path
            .ancestors()
            .find_map(|a| a.canonicalize().ok())
            .unwrap_or_else(|| path.to_path_buf());
        if WRITABLE_ANYWAY
            .iter()
            .any(|w| canonical_parent.starts_with(w))
        {
            continue;
        }
        if std::fs::create_dir_all(path).is_ok()
            && let Ok(dir) = tempfile::tempdir_in(path)
        {
            return dir;
        }
    }
    panic!(
        "no scratch directory outside /tmp, /var/tmp and /dev/shm could be created (tried $HOME/.cache and {target_tmpdir})"
    );
}

/// Live processes (not this one) whose command line contains `marker`, as `(pid, command line
/// with spaces for the NULs)`. Zombies have an empty command line, so only processes that still
/// run are found: tests use this to show nothing a command started was left behind.
pub fn processes_with(marker: &str) -> Vec<(i32, String)> {
    let me = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid = entry.file_name().to_str()?.parse::<i32>().ok()?;
            let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (pid != me && cmdline.contains(marker)).then_some((pid, cmdline))
        })
        .collect()
}
