//! Paths found by a walk: how they are shown, ordered and made relative, cheaply.

use std::path::Path;

use lathe_runtime::workspace::Workspace;

/// How a path found by a walk is shown: relative to the workspace root, with line breaks in a
/// name escaped so that every result stays on one line.
pub(crate) fn shown(workspace: &Workspace, path: &Path) -> String {
    let text = workspace.shown(path);
    if text.contains(['\n', '\r']) {
        text.replace('\n', "\\n").replace('\r', "\\r")
    } else {
        text
    }
}

/// Orders paths as [`Path`]'s `Ord` does (component by component) for the normalized paths a
/// walk yields, but on bytes: `/` sorts before every other byte. Several times faster than
/// comparing components, which matters when sorting tens of thousands of paths.
pub(crate) fn path_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    use std::os::unix::ffi::OsStrExt;
    let (a, b) = (a.as_os_str().as_bytes(), b.as_os_str().as_bytes());
    let key = |byte: u8| {
        if byte == b'/' {
            0u16
        } else {
            u16::from(byte) + 1
        }
    };
    match mismatch(a, b) {
        Some(i) => key(a[i]).cmp(&key(b[i])),
        None => a.len().cmp(&b.len()),
    }
}

/// The first index where `a` and `b` differ, comparing eight bytes at a time while they agree.
fn mismatch(a: &[u8], b: &[u8]) -> Option<usize> {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    (i..n).find(|&j| a[j] != b[j])
}

/// `path` relative to `root` when `path` lies under it (as every path a walk of `root` does),
/// by slicing bytes rather than comparing components.
pub(crate) fn relative_to<'a>(root: &Path, path: &'a Path) -> &'a Path {
    use std::os::unix::ffi::OsStrExt;
    let (r, p) = (root.as_os_str().as_bytes(), path.as_os_str().as_bytes());
    match p.strip_prefix(r) {
        Some(rest) if rest.first() == Some(&b'/') => {
            Path::new(std::ffi::OsStr::from_bytes(&rest[1..]))
        }
        Some([]) => Path::new(""),
        _ if r == b"/" => Path::new(std::ffi::OsStr::from_bytes(
            p.strip_prefix(b"/").unwrap_or(p),
        )),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn path_order_is_component_order() {
        let mut paths: Vec<PathBuf> = [
            "/r/a-b",
            "/r/a/b",
            "/r/a",
            "/r/a.txt",
            "/r/a/b/c",
            "/r/B",
            "/r/ab",
            "/r/a0123456789/x",
            "/r/a0123456789",
            "/r/a01234567-9",
            "/r/\u{e9}",
            "/r/z",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let mut by_components = paths.clone();
        by_components.sort();
        paths.sort_by(|a, b| path_order(a, b));
        assert_eq!(paths, by_components);
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_to(Path::new("/r/s"), Path::new("/r/s/a/b")),
            Path::new("a/b")
        );
        assert_eq!(
            relative_to(Path::new("/r/s"), Path::new("/r/s")),
            Path::new("")
        );
        assert_eq!(
            relative_to(Path::new("/r/s"), Path::new("/r/st/a")),
            Path::new("/r/st/a")
        );
        assert_eq!(
            relative_to(Path::new("/"), Path::new("/a/b")),
            Path::new("a/b")
        );
    }
}
