//! Running the `git` binary against a shadow repository, with nothing of the user's git
//! set-up: no `GIT_*` variables from the environment, no system or global configuration, no
//! hooks, no signing, no filters or attributes that could change a file's bytes.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::{Error, Result};

/// Settings passed as `-c` to every command: they win over any configuration file.
const SETTINGS: &[&str] = &[
    "core.hooksPath=/dev/null",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "core.fsmonitor=false",
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.symlinks=true",
    "core.fileMode=true",
    "core.quotePath=false",
    "core.untrackedCache=false",
    // Snapshots walk the work tree in-process with their own ignore rules; nothing of the
    // user's global git set-up applies to what git itself might consult.
    "core.excludesFile=/dev/null",
    // The session's index is read in-process too: never split (a `link` extension).
    "core.splitIndex=false",
    // The session's index is private and rebuilt at will: no checksum over it on every write
    // (megabytes on a large tree), and the compact format.
    "index.skipHash=true",
    "index.version=4",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    "user.name=lathe",
    "user.email=lathe@localhost",
];

/// How git is run for one shadow repository and one session's index.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    pub(crate) git_dir: PathBuf,
    pub(crate) work_tree: PathBuf,
    pub(crate) index: PathBuf,
    /// The `git` program.
    pub(crate) program: PathBuf,
    /// The `PATH` git runs with (its own helpers are found through it).
    pub(crate) search_path: OsString,
}

/// The `git` program on `search_path` (a `PATH` value), found as `execvp` would find it but
/// without starting anything: a snapshot must not pay for a `git --version`.
pub(crate) fn find(search_path: &OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(search_path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("git"))
        .find(|path| {
            std::fs::metadata(path)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

impl Git {
    /// A command with the scrubbed environment and the fixed settings.
    pub(crate) fn command<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(&self.program);
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("GIT_") {
                command.env_remove(&key);
            }
        }
        command
            .env("PATH", &self.search_path)
            .env("GIT_DIR", &self.git_dir)
            .env("GIT_WORK_TREE", &self.work_tree)
            .env("GIT_INDEX_FILE", &self.index)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_AUTHOR_NAME", "lathe")
            .env("GIT_AUTHOR_EMAIL", "lathe@localhost")
            .env("GIT_COMMITTER_NAME", "lathe")
            .env("GIT_COMMITTER_EMAIL", "lathe@localhost")
            .env("LC_ALL", "C")
            .current_dir(&self.work_tree)
            .stdin(Stdio::null());
        for setting in SETTINGS {
            command.arg("-c").arg(setting);
        }
        command.args(args);
        command
    }

    /// Runs `git ARGS` and returns its stdout; a failure carries its stderr.
    pub(crate) fn run<I, S>(&self, args: I) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.run_with_input(args, None)
    }

    /// Runs `git ARGS` with `input` on stdin.
    pub(crate) fn run_with_input<I, S>(&self, args: I, input: Option<&[u8]>) -> Result<Vec<u8>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = self.command(args);
        let shown = format!("{:?}", command.get_args().collect::<Vec<_>>());
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        if input.is_some() {
            command.stdin(Stdio::piped());
        }
        let mut child = command.spawn().map_err(|source| Error::Git {
            command: shown.clone(),
            message: source.to_string(),
        })?;
        if let Some(input) = input {
            let mut stdin = child.stdin.take().expect("stdin was piped");
            // A writer thread: git may fill its stdout pipe before it has read all of stdin.
            let input = input.to_vec();
            let writer = std::thread::spawn(move || stdin.write_all(&input));
            let output = child.wait_with_output();
            let _ = writer.join();
            return finish(shown, output);
        }
        finish(shown, child.wait_with_output())
    }

    /// `git init` of the shadow repository, once.
    pub(crate) fn init(&self) -> Result<()> {
        if self.git_dir.join("HEAD").exists() {
            return Ok(());
        }
        // Made aside and moved into place: sessions starting at once on one workspace would
        // otherwise `git init` the same directory together, and one of them fails.
        let parent = self.git_dir.parent().unwrap_or(&self.git_dir);
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let aside = tempfile::Builder::new()
            .prefix(".init-")
            .tempdir_in(parent)
            .map_err(|e| Error::io(parent, e))?;
        let mut command = self.command(["init", "-q", "--bare"]);
        command.arg(aside.path());
        // `init` refuses a work tree in the environment.
        command.env_remove("GIT_WORK_TREE").env_remove("GIT_DIR");
        let shown = "git init --bare".to_owned();
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        finish(shown, command.output())?;
        // An empty directory in the way is replaced; a repository made meanwhile wins.
        match std::fs::rename(aside.path(), &self.git_dir) {
            Ok(()) => {
                let _ = aside.keep();
                Ok(())
            }
            Err(_) if self.git_dir.join("HEAD").exists() => Ok(()),
            Err(e) => Err(Error::io(&self.git_dir, e)),
        }
    }
}

fn finish(shown: String, output: std::io::Result<std::process::Output>) -> Result<Vec<u8>> {
    let output = output.map_err(|source| Error::Git {
        command: shown.clone(),
        message: source.to_string(),
    })?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(Error::Git {
            command: shown,
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

/// Splits NUL-terminated output.
pub(crate) fn split_nul(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    bytes.split(|b| *b == 0).filter(|s| !s.is_empty())
}

/// A path from git's output (bytes, relative to the work tree).
#[cfg(unix)]
pub(crate) fn path_of(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(OsStr::from_bytes(bytes))
}

/// A path's bytes, as git takes them.
#[cfg(unix)]
pub(crate) fn bytes_of(path: &Path) -> &[u8] {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes()
}
