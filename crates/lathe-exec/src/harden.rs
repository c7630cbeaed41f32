//! Hardening of Lathe's own process against the commands it runs.

/// Makes this process unreadable to the commands it runs: turns off `PR_SET_DUMPABLE`, so that
/// `/proc/<lathe pid>/environ` (which still holds the API keys Lathe removes from commands'
/// environments), `/proc/<pid>/mem` and `ptrace` need `CAP_SYS_PTRACE`, which sandboxed commands
/// do not have (they run with no capabilities at all), and core dumps are not written.
///
/// Call it once, early in `main`, before any thread or command starts: the setting covers the
/// whole process and all its threads, and lasts until this process `exec`s (a program Lathe
/// starts is dumpable again, so the guard gets only the commands' environment, without
/// secrets). Unsandboxed commands running as root keep `CAP_SYS_PTRACE` and can still read it.
pub fn harden_process() -> std::io::Result<()> {
    let zero: libc::c_ulong = 0;
    // SAFETY: integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, zero, zero, zero, zero) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether this process is dumpable (readable by same-user processes through `/proc`).
pub fn is_dumpable() -> bool {
    // SAFETY: PR_GET_DUMPABLE takes no pointers.
    unsafe { libc::prctl(libc::PR_GET_DUMPABLE) == 1 }
}
