//! Tests about the whole process, run alone in a child process of their test binary.
//!
//! Each crate's integration tests are one binary, so a test shares its process with every other
//! test of the crate. Most tests do not care; a few are about the process itself: its peak
//! memory, the orphans re-parented to it, a `prctl` it applies to itself, or what its commands
//! do while no other supervisor is alive. Such a test starts with `if !alone!().await { return; }`:
//! in the test binary it runs itself again in a child process with only itself selected, and
//! passes or fails with it; in that child the body runs, alone in its process.

use std::process::Stdio;

/// Present in the child process; its value is the name of the one test it runs.
const CHILD_ENV: &str = "LATHE_TEST_ALONE";

/// Runs the calling test alone, in a child process of this test binary in which no other test
/// runs. Evaluates to a future of `bool`: `true` in the child, where the caller goes on with its
/// body, and `false` in the test binary once the child passed (the caller returns). A failure
/// in the child fails the calling test, with the child's output.
///
/// Call it first in an async test (its name is found from where it is called, so a renamed test
/// needs no change):
///
/// ```no_run
/// #[tokio::test]
/// async fn peak_memory_stays_low() {
///     if !lathe_testkit::alone!().await {
///         return;
///     }
///     // ... reads /proc/self/status, with no other test's memory in it
/// }
/// ```
#[macro_export]
macro_rules! alone {
    () => {
        $crate::alone::run($crate::alone::test_name({
            fn here() {}
            ::std::any::type_name_of_val(&here)
        }))
    };
}

/// The libtest name of the test that holds `here`, the type name of a function item declared in
/// its body (`integration::memory::peak::{{closure}}::here` names `memory::peak`). Used by
/// [`alone!`](crate::alone!).
pub fn test_name(here: &str) -> String {
    let path = here.strip_suffix("::here").unwrap_or(here);
    let segments: Vec<&str> = path
        .split("::")
        .filter(|segment| *segment != "{{closure}}")
        .skip(1) // the crate: libtest names start below it
        .collect();
    segments.join("::")
}

/// Runs `test` alone in a child process, or returns `true` when this is that child. See
/// [`alone!`](crate::alone!), which finds the name.
///
/// # Panics
/// When the child fails, or when no test of that name ran in it.
pub async fn run(test: String) -> bool {
    if std::env::var_os(CHILD_ENV).is_some_and(|name| name == test.as_str()) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let output = tokio::process::Command::new(exe)
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, &test)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("start the test binary again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Shown with this test's own output (on failure, or with --nocapture).
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "{test} failed, run alone in a child process ({})",
        output.status
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the child process ran no test named {test}"
    );
    false
}

#[cfg(test)]
mod tests {
    use super::test_name;

    #[test]
    fn names_are_found_below_the_crate_and_outside_async_blocks() {
        for (here, name) in [
            ("integration::memory::peak::here", "memory::peak"),
            (
                "integration::memory::peak::{{closure}}::here",
                "memory::peak",
            ),
            ("integration::a::b::{{closure}}::{{closure}}::here", "a::b"),
        ] {
            assert_eq!(test_name(here), name, "{here}");
        }
    }
}
