//! The sandbox's write boundary as a check on paths, for tools that write files themselves.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::SandboxPolicy;

/// Whether `path` lies beneath one of the policy's write paths, compared lexically (`.` and `..`
/// resolved without looking at the disk). A relative `path` is never writable.
///
/// This does not follow symlinks: a file tool must pass a path it has already resolved, or use
/// [`path_is_writable_resolved`], which checks what Landlock checks.
pub fn path_is_writable(policy: &SandboxPolicy, path: &Path) -> bool {
    let Some(target) = normalize(path) else {
        return false;
    };
    policy
        .write_paths
        .iter()
        .filter_map(|root| normalize(root))
        .any(|root| target.starts_with(root))
}

/// Whether a write to `path` would be allowed by the sandbox, following symlinks as the kernel
/// would: the longest existing prefix of `path` and each write path are resolved on disk.
///
/// Conservative where the answer cannot be known: a dangling symlink, a symlink loop or an
/// unreadable directory on the way make the path not writable, and a write path that does not
/// exist allows nothing (Landlock leaves it out too).
pub fn path_is_writable_resolved(policy: &SandboxPolicy, path: &Path) -> bool {
    let Some(target) = resolve_for_write(path) else {
        return false;
    };
    policy
        .write_paths
        .iter()
        .filter(|root| root.is_absolute())
        .filter_map(|root| fs::canonicalize(root).ok())
        .any(|root| target.starts_with(root))
}

/// Lexical normalisation of an absolute path; `None` for a relative one.
fn normalize(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    Some(out)
}

/// Resolves the longest existing prefix of `path` on disk and appends the rest lexically.
fn resolve_for_write(path: &Path) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let components: Vec<Component<'_>> = path.components().collect();
    for split in (1..=components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        match fs::canonicalize(&prefix) {
            Ok(real) => {
                let mut full = real;
                full.extend(&components[split..]);
                return normalize(&full);
            }
            // The prefix itself exists (a dangling symlink): where a write lands is unknowable
            // without following it, so refuse.
            Err(error)
                if error.kind() == io::ErrorKind::NotFound
                    && fs::symlink_metadata(&prefix).is_err() => {}
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(paths: &[&str]) -> SandboxPolicy {
        SandboxPolicy {
            write_paths: paths.iter().map(PathBuf::from).collect(),
            network: false,
            keep_env: Vec::new(),
        }
    }

    #[test]
    fn lexical_check_respects_component_boundaries_and_dot_dot() {
        let p = policy(&["/ws", "/tmp", "/dev/null"]);
        for (path, writable) in [
            ("/ws", true),
            ("/ws/a/b.txt", true),
            ("/ws/./a", true),
            ("/ws/a/../b", true),
            ("/ws/../etc/passwd", false),
            ("/ws/a/../../etc", false),
            ("/wsx/file", false),
            ("/tmpfile", false),
            ("/tmp/x", true),
            ("/dev/null", true),
            ("/dev/nullx", false),
            ("/dev/sda", false),
            ("/", false),
            ("/../ws/x", true),
            ("ws/x", false),
            ("", false),
        ] {
            assert_eq!(path_is_writable(&p, Path::new(path)), writable, "{path}");
        }
        assert!(!path_is_writable(
            &policy(&["relative"]),
            Path::new("/relative/x")
        ));
    }

    #[test]
    fn resolved_check_follows_symlinks_like_the_kernel() {
        let ws = tempfile::tempdir().unwrap();
        let out = tempfile::tempdir().unwrap();
        let ws_path = ws.path().to_path_buf();
        let p = SandboxPolicy {
            write_paths: vec![ws_path.clone()],
            network: false,
            keep_env: Vec::new(),
        };
        std::os::unix::fs::symlink(out.path(), ws_path.join("out")).unwrap();
        std::os::unix::fs::symlink(out.path().join("new"), ws_path.join("dangling")).unwrap();
        std::os::unix::fs::symlink(ws_path.join("loop"), ws_path.join("loop")).unwrap();
        fs::create_dir(ws_path.join("dir")).unwrap();
        for (rel, writable) in [
            ("file", true),
            ("dir/new/deeper/file", true),
            ("missing/../file", true),
            ("out", false),
            ("out/file", false),
            ("dangling", false),
            ("loop", false),
            ("dir/../../x", false),
        ] {
            let path = ws_path.join(rel);
            assert_eq!(path_is_writable_resolved(&p, &path), writable, "{rel}");
        }
        let missing_root = policy(&["/nonexistent-lathe-root"]);
        assert!(!path_is_writable_resolved(
            &missing_root,
            Path::new("/nonexistent-lathe-root/x")
        ));
    }
}
