//! Workspace containment: every escape is refused, every path inside is accepted.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use lathe_runtime::{Access, PathError, Workspace};

struct Fixture {
    _outer: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("ws");
    let outside = outer.path().join("outside");
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("src/lib.rs"), "lib\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    Fixture {
        root: root.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        _outer: outer,
    }
}

fn refused(ws: &Workspace, input: &str, access: Access) -> String {
    match ws.resolve(input, access) {
        Ok(p) => panic!(
            "{input} resolved to {} but should be refused",
            p.abs().display()
        ),
        Err(err) => err.to_string(),
    }
}

#[test]
fn relative_and_absolute_paths_inside_are_accepted() {
    let f = fixture();
    let ws = Workspace::new(&f.root).unwrap();
    let absolute = format!("{}/src/lib.rs", f.root.display());
    for input in [
        "src/lib.rs",
        "./src/lib.rs",
        "src/deep/../lib.rs",
        absolute.as_str(),
    ] {
        let p = ws.resolve(input, Access::Read).unwrap();
        assert_eq!(p.abs(), f.root.join("src/lib.rs"), "{input}");
        assert_eq!(p.shown(), "src/lib.rs");
    }
    let new = ws.resolve("src/new/dir/file.txt", Access::Write).unwrap();
    assert_eq!(new.abs(), f.root.join("src/new/dir/file.txt"));
    assert_eq!(ws.resolve(".", Access::Read).unwrap().shown(), ".");
}

#[test]
fn dot_dot_and_absolute_elsewhere_are_refused() {
    let f = fixture();
    let ws = Workspace::new(&f.root).unwrap();
    let msg = refused(&ws, "../outside/secret.txt", Access::Read);
    assert!(msg.contains("outside the workspace"), "{msg}");
    refused(&ws, "src/../../outside/secret.txt", Access::Write);
    refused(&ws, "/etc/passwd", Access::Read);
    refused(
        &ws,
        &f.outside.join("secret.txt").display().to_string(),
        Access::Read,
    );
    refused(&ws, "src/deep/../../../outside/new.txt", Access::Write);
    refused(&ws, "missing/../../outside/new.txt", Access::Write);
    assert!(matches!(
        ws.resolve("  ", Access::Read),
        Err(PathError::Empty)
    ));
}

#[test]
fn symlinks_out_anywhere_along_the_path_are_refused() {
    let f = fixture();
    symlink(f.outside.join("secret.txt"), f.root.join("link.txt")).unwrap();
    symlink(&f.outside, f.root.join("src/out")).unwrap();
    symlink("../../outside", f.root.join("src/rel_out")).unwrap();
    symlink(f.outside.join("not-yet"), f.root.join("dangling")).unwrap();
    let ws = Workspace::new(&f.root).unwrap();
    let msg = refused(&ws, "link.txt", Access::Read);
    assert!(msg.contains("symlink"), "{msg}");
    // The message names what the link points to, and where the whole path leads.
    let msg = refused(&ws, "src/out/secret.txt", Access::Read);
    let want = format!(
        "through the symlink src/out, which points to {}; the path resolves to {}",
        f.outside.display(),
        f.outside.join("secret.txt").display()
    );
    assert!(msg.contains(&want), "{msg}");
    refused(&ws, "src/out/new.txt", Access::Write);
    refused(&ws, "src/rel_out/secret.txt", Access::Read);
    refused(&ws, "dangling", Access::Write);
    refused(&ws, "src/out/../../outside/secret.txt", Access::Read);
}

#[test]
fn symlinks_inside_are_followed() {
    let f = fixture();
    symlink(f.root.join("src"), f.root.join("alias")).unwrap();
    symlink("lib.rs", f.root.join("src/lib_link.rs")).unwrap();
    let ws = Workspace::new(&f.root).unwrap();
    assert_eq!(
        ws.resolve("alias/lib.rs", Access::Read).unwrap().abs(),
        f.root.join("src/lib.rs")
    );
    assert_eq!(
        ws.resolve("src/lib_link.rs", Access::Write).unwrap().abs(),
        f.root.join("src/lib.rs")
    );
}

#[test]
fn symlink_loops_are_refused() {
    let f = fixture();
    symlink("b", f.root.join("a")).unwrap();
    symlink("a", f.root.join("b")).unwrap();
    let ws = Workspace::new(&f.root).unwrap();
    let msg = refused(&ws, "a/x", Access::Read);
    assert!(msg.contains("loop"), "{msg}");
}

#[test]
fn proc_tricks_are_refused() {
    let f = fixture();
    let ws = Workspace::new(&f.root).unwrap();
    refused(&ws, "/proc/self/root/etc/passwd", Access::Read);
    refused(
        &ws,
        &format!("/proc/self/root{}/src/lib.rs", f.root.display()),
        Access::Read,
    );
    refused(&ws, "/proc/self/cwd/x", Access::Write);
    refused(&ws, "/dev/fd/0", Access::Read);
    symlink("/proc/self/root/etc", f.root.join("etc")).unwrap();
    refused(&ws, "etc/passwd", Access::Read);
}

#[test]
fn a_nul_in_the_path_is_named() {
    let f = fixture();
    let ws = Workspace::new(&f.root).unwrap();
    for access in [Access::Read, Access::Write] {
        let msg = refused(&ws, "src/lib.rs\0.txt", access);
        assert!(msg.contains("contains a NUL character"), "{msg}");
    }
}

#[test]
fn read_roots_are_readable_not_writable() {
    let f = fixture();
    let mut ws = Workspace::new(&f.root).unwrap();
    ws.add_read_root(&f.outside).unwrap();
    let secret = f.outside.join("secret.txt").display().to_string();
    assert!(ws.resolve(&secret, Access::Read).is_ok());
    refused(&ws, &secret, Access::Write);
}

#[test]
fn open_refuses_a_symlink_swapped_in_after_resolution() {
    let f = fixture();
    let ws = Workspace::new(&f.root).unwrap();
    let resolved = ws.resolve("src/swap.txt", Access::Write).unwrap();
    // Between the check and the use, somebody plants a symlink to the outside.
    symlink(f.outside.join("secret.txt"), f.root.join("src/swap.txt")).unwrap();
    let err = ws.open_read(&resolved).unwrap_err();
    assert!(err.to_string().contains("symlink appeared"), "{err}");
    // Writing replaces the link itself (rename over it), never the file it points to.
    ws.write_atomic(&resolved, b"mine\n", 0o644).unwrap();
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        "secret\n"
    );
    let meta = std::fs::symlink_metadata(f.root.join("src/swap.txt")).unwrap();
    assert!(!meta.file_type().is_symlink());

    // A directory swapped for a symlink between check and use is not followed either.
    let resolved = ws.resolve("src/later/file.txt", Access::Write).unwrap();
    symlink(&f.outside, f.root.join("src/later")).unwrap();
    assert!(ws.write_atomic(&resolved, b"x", 0o644).is_err());
    assert!(!f.outside.join("file.txt").exists());
}

#[test]
fn write_atomic_creates_parents_and_keeps_mode() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    let ws = Workspace::new(&f.root).unwrap();
    let p = ws.resolve("a/b/c.txt", Access::Write).unwrap();
    ws.write_atomic(&p, b"one\n", 0o644).unwrap();
    assert_eq!(std::fs::read(f.root.join("a/b/c.txt")).unwrap(), b"one\n");
    std::fs::set_permissions(
        f.root.join("a/b/c.txt"),
        std::fs::Permissions::from_mode(0o751),
    )
    .unwrap();
    ws.write_atomic(&p, b"two\n", 0o644).unwrap();
    let meta = std::fs::metadata(f.root.join("a/b/c.txt")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o751);
    assert_eq!(std::fs::read(f.root.join("a/b/c.txt")).unwrap(), b"two\n");
    // No temporary files are left behind.
    let names: Vec<_> = std::fs::read_dir(f.root.join("a/b"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
    let dir = ws.resolve("a", Access::Write).unwrap();
    assert!(ws.write_atomic(&dir, b"x", 0o644).is_err());
    let root = ws.resolve(".", Access::Write).unwrap();
    assert!(ws.write_atomic(&root, b"x", 0o644).is_err());
    let root_name = f.root.file_name().unwrap();
    assert!(!f.root.join(root_name).exists());
}
