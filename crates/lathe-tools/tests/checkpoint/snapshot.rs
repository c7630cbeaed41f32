//! The snapshot's in-process walk, index reading and writing: that no git runs, the index
//! formats it reads, the index it does not (git reads it), and the tree it records.
//! Git runs through a logging wrapper around the real git: the wrapper is a real program on
//! the checkpoints' search path, and every command and its `--stdin` input land in a log.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use lathe_checkpoint::{Checkpoints, Force, Uncovered, UndoTarget};

use crate::support::Fixture;

/// A `git` that logs each command line (and its stdin, NULs as newlines) and runs the real one.
pub struct Logged {
    _dir: tempfile::TempDir,
    path: std::ffi::OsString,
    log: PathBuf,
}

impl Logged {
    pub fn new() -> Logged {
        let dir = tempfile::tempdir().unwrap();
        let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
            .map(|d| d.join("git"))
            .find(|p| p.is_file())
            .expect("git on PATH");
        let log = dir.path().join("log");
        let script = format!(
            "#!/bin/sh\n\
             printf 'git %s\\n' \"$*\" >> '{log}'\n\
             case \" $* \" in *' --stdin '*)\n\
               cat > '{log}.in'\n\
               tr '\\000' '\\n' < '{log}.in' | sed 's/^/  < /' >> '{log}'\n\
               exec '{real}' \"$@\" < '{log}.in' ;;\n\
             esac\n\
             exec '{real}' \"$@\"\n",
            log = log.display(),
            real = real.display(),
        );
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("git"), script).unwrap();
        std::fs::set_permissions(bin.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut dirs = vec![bin];
        dirs.extend(std::env::split_paths(&std::env::var_os("PATH").unwrap()));
        Logged {
            path: std::env::join_paths(dirs).unwrap(),
            log,
            _dir: dir,
        }
    }

    /// The log since the last call, emptied.
    pub fn take(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let _ = std::fs::remove_file(&self.log);
        text
    }

    /// The git commands (not their input) since the last call.
    pub fn commands(&self) -> Vec<String> {
        self.take()
            .lines()
            .filter(|l| l.starts_with("git "))
            .map(|l| {
                // The subcommand: the first word after the `-c` settings.
                let mut words = l.split(' ').skip(1);
                let mut name = String::new();
                while let Some(w) = words.next() {
                    if w == "-c" {
                        words.next();
                        continue;
                    }
                    name = w.to_owned();
                    break;
                }
                name
            })
            .collect()
    }
}

pub fn checkpoints(f: &Fixture, git: &Logged) -> Checkpoints {
    Checkpoints::builder(&f.data, &f.root, "s1")
        .search_path(&git.path)
        .build()
        .unwrap()
}

/// Sets a file's modification time `seconds` from now (negative: in the past), so that no
/// file is written in the same clock tick as the index (a racy entry, which git hashes again).
fn age(path: &Path, seconds: i64) {
    let now = SystemTime::now();
    let when = if seconds < 0 {
        now - Duration::from_secs(seconds.unsigned_abs())
    } else {
        now + Duration::from_secs(seconds as u64)
    };
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .or_else(|_| std::fs::File::open(path))
        .unwrap();
    file.set_modified(when).unwrap();
}

/// Writes `content` to a workspace file, dated a minute ago.
pub fn write(f: &Fixture, path: &str, content: &str) {
    let full = f.path(path);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    std::fs::write(&full, content).unwrap();
    age(&full, -60);
}

/// Ages every file of the fixture.
fn age_all(f: &Fixture) {
    for path in f.tree().keys() {
        age(&f.root.join(path), -60);
    }
}

/// The shadow repository's git directory and the session's index file.
pub fn shadow(f: &Fixture, session: &str) -> (PathBuf, PathBuf) {
    let dir = std::fs::read_dir(f.data.join("checkpoints"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a shadow repository");
    (dir.join("git"), dir.join(format!("index-{session}")))
}

/// Runs the real git on the session's index.
pub fn git_on_index(f: &Fixture, session: &str, args: &[&str]) {
    let (git_dir, index) = shadow(f, session);
    let out = Command::new("git")
        .args(args)
        .env("GIT_DIR", git_dir)
        .env("GIT_INDEX_FILE", index)
        .env("GIT_WORK_TREE", &f.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .current_dir(&f.root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
}

pub fn fixture(files: &[(&str, &str)]) -> Fixture {
    let f = Fixture::new(files);
    age_all(&f);
    f
}

/// The git commands that write the index or objects: a snapshot runs none of them.
pub const WRITERS: [&str; 4] = ["update-index", "write-tree", "hash-object", "read-tree"];

pub fn writers(commands: &[String]) -> Vec<&String> {
    commands
        .iter()
        .filter(|c| WRITERS.contains(&c.as_str()))
        .collect()
}

#[test]
fn a_snapshot_runs_no_git_unchanged_or_changed() {
    let f = fixture(&[("a.txt", "a\n"), ("src/b.rs", "b\n"), ("src/c.rs", "c\n")]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    assert_eq!(git.commands(), ["init"], "the shadow repository, once");
    checkpoints.before_change(1).unwrap();
    assert_eq!(checkpoints.after_turn(1).unwrap(), None);
    assert_eq!(git.commands(), Vec::<String>::new(), "the first snapshot");

    checkpoints.before_change(2).unwrap();
    assert_eq!(git.commands(), Vec::<String>::new(), "nothing changed");
    write(&f, "src/b.rs", "changed\n");
    write(&f, "src/new/d.rs", "new\n");
    std::fs::remove_file(f.path("a.txt")).unwrap();
    let stat = checkpoints.after_turn(2).unwrap().expect("files changed");
    assert_eq!(stat.files, 3);
    // Recording the step runs git (its commits, its numbers); the snapshot did not.
    let commands = git.commands();
    assert_eq!(writers(&commands), Vec::<&String>::new(), "{commands:?}");

    // A snapshot before a turn, of a tree changed since the last one: no git at all.
    write(&f, "src/c.rs", "changed too\n");
    checkpoints.before_change(3).unwrap();
    assert_eq!(git.commands(), Vec::<String>::new(), "one changed file");
    checkpoints.before_change(4).unwrap();
    assert_eq!(
        git.commands(),
        Vec::<String>::new(),
        "nothing changed since"
    );
    let diff = checkpoints.diff(Some(2)).unwrap().unwrap();
    assert!(diff.contains("+changed") && diff.contains("+new"), "{diff}");
}

/// A file modified no earlier than the index was written can have the stat data git recorded
/// and other bytes (changed again within the clock tick it was hashed in): it is hashed again
/// at every snapshot until it is older than the index.
#[test]
fn a_racy_file_is_hashed_again_at_every_snapshot() {
    let f = fixture(&[("a.txt", "a\n"), ("racy.txt", "1111\n")]);
    age(&f.path("racy.txt"), 3600);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    git.take();
    checkpoints.before_change(1).unwrap();
    assert_eq!(checkpoints.after_turn(1).unwrap(), None);
    assert_eq!(git.commands(), Vec::<String>::new());

    // Same size, same modification time: only the hash can tell.
    checkpoints.before_change(2).unwrap();
    std::fs::write(f.path("racy.txt"), "2222\n").unwrap();
    age(&f.path("racy.txt"), 3600);
    let stat = checkpoints
        .after_turn(2)
        .unwrap()
        .expect("racy.txt changed");
    assert_eq!(stat.files, 1);
}

#[test]
fn index_versions_two_three_and_four_are_read_in_process() {
    // Long shared prefixes, for version 4's compression; a name of over eight bytes and one of
    // exactly eight, for the padding of versions 2 and 3.
    let f = fixture(&[
        ("a.txt", "a\n"),
        ("src/deeply/nested/module/one.rs", "1\n"),
        ("src/deeply/nested/module/two.rs", "2\n"),
        ("src/deeply/nested/other.rs", "o\n"),
        ("src/deeply/x", "x\n"),
        ("12345678", "8\n"),
        ("zz/last-one-with-a-long-name.txt", "z\n"),
    ]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    let mut turn = 0;
    for version in ["2", "3", "4"] {
        turn += 1;
        checkpoints.before_change(turn).unwrap();
        git_on_index(&f, "s1", &["update-index", "--index-version", version]);
        git.take();
        write(
            &f,
            "src/deeply/nested/module/two.rs",
            // A size of its own each time: only the index's reading is under test here.
            &format!("two, {}\n", "v".repeat(turn as usize)),
        );
        let stat = checkpoints.after_turn(turn).unwrap();
        let commands = git.commands();
        assert!(stat.is_some(), "version {version}: {commands:?}");
        assert!(
            !commands.contains(&"ls-files".to_owned()),
            "version {version} read by git: {commands:?}"
        );
        assert_eq!(
            writers(&commands),
            Vec::<&String>::new(),
            "version {version}: {commands:?}"
        );
        let files = checkpoints
            .files(checkpoints.steps().unwrap().last().unwrap())
            .unwrap();
        assert_eq!(files.len(), 1, "version {version}: {files:?}");
    }
}

/// A split index (its `link` extension) is not read in-process: git reads it, the snapshot is
/// the same, and the index is written again in the format read in-process.
#[test]
fn an_index_not_read_in_process_is_left_to_git_and_rewritten() {
    let f = fixture(&[("a.txt", "a\n"), ("b.txt", "b\n"), ("gone.txt", "g\n")]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    checkpoints.before_change(1).unwrap();
    git_on_index(&f, "s1", &["update-index", "--split-index"]);
    git.take();
    write(&f, "a.txt", "changed\n");
    std::fs::remove_file(f.path("gone.txt")).unwrap();
    write(&f, "new.txt", "new\n");
    checkpoints.after_turn(1).unwrap().expect("files changed");
    assert!(git.commands().contains(&"ls-files".to_owned()));
    let diff = checkpoints.diff_stat(Some(1)).unwrap().unwrap();
    for path in ["a.txt", "gone.txt", "new.txt"] {
        assert!(diff.contains(path), "{path}: {diff}");
    }
    assert!(!diff.contains("b.txt"), "{diff}");
    git.take();
    checkpoints.before_change(2).unwrap();
    assert_eq!(
        git.commands(),
        Vec::<String>::new(),
        "read in-process again"
    );

    // An index git cannot read either is started afresh: the same tree.
    let (_, index) = shadow(&f, "s1");
    std::fs::write(&index, b"DIRC\0\0\0\x09garbage").unwrap();
    write(&f, "b.txt", "changed\n");
    checkpoints.after_turn(2).unwrap().expect("b.txt changed");
    let files = checkpoints
        .files(checkpoints.steps().unwrap().last().unwrap())
        .unwrap();
    let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(paths, [Path::new("b.txt")]);
}

/// `.ignore` wins over `.gitignore`, as in ripgrep (and the other tools): a file `.gitignore`
/// ignores and `.ignore` takes back is snapshotted, and `uncovered` says the same.
#[test]
fn ignore_rules_are_ripgreps_and_uncovered_agrees_with_the_snapshot() {
    let f = fixture(&[
        (".gitignore", "*.log\nbuild/\n"),
        (".ignore", "!keep.log\n"),
        ("a.txt", "a\n"),
        ("keep.log", "kept\n"),
        ("drop.log", "dropped\n"),
        ("build/out.o", "o\n"),
        ("sub/.gitignore", "local.txt\n"),
        ("sub/local.txt", "l\n"),
        ("local.txt", "root's\n"),
    ]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    checkpoints.before_change(1).unwrap();
    for path in [
        "keep.log",
        "drop.log",
        "build/out.o",
        "sub/local.txt",
        "local.txt",
    ] {
        write(&f, path, "changed\n");
    }
    checkpoints.after_turn(1).unwrap().unwrap();
    let diff = checkpoints.diff_stat(Some(1)).unwrap().unwrap();
    assert!(
        diff.contains("keep.log") && diff.contains(" local.txt"),
        "{diff}"
    );
    for absent in ["drop.log", "build", "sub/local.txt"] {
        assert!(!diff.contains(absent), "{absent}: {diff}");
    }
    let uncovered = checkpoints.uncovered().unwrap();
    let ignored: Vec<Uncovered> = ["build", "drop.log", "sub/local.txt"]
        .iter()
        .map(|p| Uncovered::Ignored(PathBuf::from(p)))
        .collect();
    assert_eq!(uncovered, ignored);
}

#[test]
fn a_file_that_becomes_ignored_leaves_the_snapshot_and_a_nested_repository_is_not_entered() {
    let f = fixture(&[("a.txt", "a\n"), ("later.txt", "l\n")]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    checkpoints.before_change(1).unwrap();
    write(&f, ".gitignore", "later.txt\n");
    write(&f, "vendor/lib/x.c", "x\n");
    let out = Command::new("git")
        .args(["init", "-q", "vendor/lib"])
        .current_dir(&f.root)
        .output()
        .unwrap();
    assert!(out.status.success());
    checkpoints.after_turn(1).unwrap().unwrap();
    let files = checkpoints
        .files(checkpoints.steps().unwrap().last().unwrap())
        .unwrap();
    let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(paths, [Path::new(".gitignore"), Path::new("later.txt")]);
    let uncovered = checkpoints.uncovered().unwrap();
    assert!(
        uncovered.contains(&Uncovered::NestedRepository(PathBuf::from("vendor/lib"))),
        "{uncovered:?}"
    );
    assert!(
        uncovered.contains(&Uncovered::Ignored(PathBuf::from("later.txt"))),
        "{uncovered:?}"
    );
    // The undo puts back only what the snapshot covers: later.txt is the user's now.
    checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert!(!f.path(".gitignore").exists());
    assert_eq!(f.read("later.txt"), b"l\n");
    assert_eq!(f.read("vendor/lib/x.c"), b"x\n");
}

#[test]
fn links_modes_and_a_file_turned_directory_are_recorded() {
    let f = fixture(&[
        ("a.txt", "a\n"),
        ("run.sh", "#!/bin/sh\n"),
        ("x", "a file\n"),
    ]);
    let git = Logged::new();
    let checkpoints = checkpoints(&f, &git);
    checkpoints.before_change(1).unwrap();
    std::os::unix::fs::symlink("a.txt", f.path("link")).unwrap();
    std::fs::set_permissions(f.path("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::remove_file(f.path("x")).unwrap();
    write(&f, "x/inside.txt", "now a directory\n");
    checkpoints.after_turn(1).unwrap().unwrap();
    let files = checkpoints
        .files(checkpoints.steps().unwrap().last().unwrap())
        .unwrap();
    let paths: Vec<&Path> = files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(
        paths,
        ["link", "run.sh", "x", "x/inside.txt"].map(Path::new),
        "{files:?}"
    );
    let undone = checkpoints
        .undo(UndoTarget::Last, Force::No)
        .unwrap()
        .unwrap();
    assert!(undone.failed.is_empty(), "{undone:?}");
    assert!(!f.path("link").exists(), "{undone:?}");
    assert!(f.path("x").is_file(), "{undone:?}");
    assert_eq!(
        std::fs::metadata(f.path("run.sh"))
            .unwrap()
            .permissions()
            .mode()
            & 0o111,
        0
    );
    checkpoints.redo(Force::No).unwrap().unwrap();
    assert_eq!(
        std::fs::read_link(f.path("link")).unwrap(),
        Path::new("a.txt")
    );
    assert_eq!(f.read("x/inside.txt"), b"now a directory\n");
}

/// A change git does not see: same size, same whole seconds of both times, the nanoseconds
/// differ (git as Debian builds it compares whole seconds). The walk sees it, and the entry
/// is taken out before `update-index`, which then hashes the file anew.
#[test]
fn a_change_within_the_same_second_and_size_is_captured() {
    use std::os::unix::fs::MetadataExt;
    for attempt in 0.. {
        let f = fixture(&[("a.txt", "aaaa\n")]);
        let git = Logged::new();
        let checkpoints = checkpoints(&f, &git);
        checkpoints.before_change(1).unwrap();
        let old = std::fs::metadata(f.path("a.txt")).unwrap();
        std::fs::write(f.path("a.txt"), "bbbb\n").unwrap();
        let nanos = if old.mtime_nsec() > 0 { -1 } else { 1 };
        let when = std::time::UNIX_EPOCH
            + Duration::new(old.mtime() as u64, (old.mtime_nsec() + nanos) as u32);
        std::fs::File::options()
            .write(true)
            .open(f.path("a.txt"))
            .unwrap()
            .set_modified(when)
            .unwrap();
        let new = std::fs::metadata(f.path("a.txt")).unwrap();
        if new.ctime() != old.ctime() {
            // A second passed between the two writes: git would see that. Again.
            assert!(
                attempt < 10,
                "ten seconds passed between two writes, ten times"
            );
            continue;
        }
        assert_eq!(
            (new.mtime(), new.size(), new.ino()),
            (old.mtime(), old.size(), old.ino())
        );
        let stat = checkpoints.after_turn(1).unwrap();
        assert!(
            stat.is_some(),
            "the change was not captured: {}",
            git.take()
        );
        let diff = checkpoints.diff(Some(1)).unwrap().unwrap();
        assert!(diff.contains("+bbbb"), "{diff}");
        break;
    }
}
