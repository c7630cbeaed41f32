//! The shadow repository's refs read and moved in-process, as git's files backend keeps them
//! (`Documentation/gitrepository-layout.txt`): a loose ref is a file under the git directory
//! holding forty hex digits, `packed-refs` holds the refs `git gc` packed (a loose one wins
//! over its packed line), and a ref is moved by creating `<ref>.lock` exclusively, writing the
//! new id into it and renaming it over the ref, the lock git's own commands take, so an
//! in-process move and a `git gc` packing refs at the same time never lose either's work.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How long a move waits for another holder of the ref's lock (git waits 100 ms by default).
const LOCK_WAIT: Duration = Duration::from_secs(1);

/// The id `name` points at, if it exists.
pub(crate) fn read(git_dir: &Path, name: &str) -> Result<Option<String>> {
    let path = git_dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let id = text.trim();
            if is_id(id) {
                return Ok(Some(id.to_owned()));
            }
            Err(Error::io(
                &path,
                std::io::Error::other("not a ref this reader knows (a symbolic one?)"),
            ))
        }
        Err(e) if matches!(e.kind(), std::io::ErrorKind::NotFound) => Ok(packed(git_dir)?
            .into_iter()
            .find_map(|(id, n)| (n == name).then_some(id))),
        // A directory where the ref would be: no such ref.
        Err(_) if path.is_dir() => Ok(None),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Every ref whose name starts with `prefix` (which ends with `/`), loose or packed, sorted.
pub(crate) fn list(git_dir: &Path, prefix: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> = packed(git_dir)?
        .into_iter()
        .map(|(_, name)| name)
        .filter(|name| name.starts_with(prefix))
        .collect();
    let mut dirs = vec![git_dir.join(prefix)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() => {
                    let Ok(relative) = path.strip_prefix(git_dir) else {
                        continue;
                    };
                    let Some(name) = relative.to_str() else {
                        continue;
                    };
                    if !name.ends_with(".lock") {
                        names.push(name.to_owned());
                    }
                }
                _ => {}
            }
        }
    }
    names.sort();
    names.dedup();
    Ok(names)
}

/// Points `name` at `new`; when `old` is given, only if it points there now (as `git
/// update-ref NAME NEW OLD`).
#[expect(
    clippy::disallowed_methods,
    reason = "a short back-off while another process holds the ref lock, on the snapshot's blocking thread"
)]
pub(crate) fn update(git_dir: &Path, name: &str, new: &str, old: Option<&str>) -> Result<()> {
    let path = git_dir.join(name);
    let lock = lock_path(&path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    let started = Instant::now();
    let mut file = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)
        {
            Ok(file) => break file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if started.elapsed() > LOCK_WAIT {
                    return Err(Error::io(
                        &lock,
                        std::io::Error::other(
                            "the ref is locked by another process (a stale lock file can be \
                             removed)",
                        ),
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(Error::io(&lock, e)),
        }
    };
    let done = (|| {
        let now = read(git_dir, name)?;
        if let Some(old) = old
            && now.as_deref() != Some(old)
        {
            return Err(Error::Git {
                command: format!("update-ref {name}"),
                message: format!(
                    "it moved: it points at {} now, not at {old}",
                    now.as_deref().unwrap_or("nothing")
                ),
            });
        }
        file.write_all(format!("{new}\n").as_bytes())
            .map_err(|e| Error::io(&lock, e))?;
        drop(file);
        std::fs::rename(&lock, &path).map_err(|e| Error::io(&path, e))
    })();
    if done.is_err() {
        let _ = std::fs::remove_file(&lock);
    }
    done
}

fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// The lines of `packed-refs`: id and name (peeled lines and the header left out).
fn packed(git_dir: &Path) -> Result<Vec<(String, String)>> {
    let path = git_dir.join("packed-refs");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&path, e)),
    };
    Ok(text
        .lines()
        .filter_map(|line| {
            let (id, name) = line.split_once(' ')?;
            is_id(id).then(|| (id.to_owned(), name.to_owned()))
        })
        .collect())
}

fn is_id(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}
