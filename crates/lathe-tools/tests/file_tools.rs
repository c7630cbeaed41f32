//! read_file, write_file and list_files through the registry, on real temporary workspaces.

use serde_json::json;

use crate::file_support::{Ws, next_offset, numbered};

// ---------------------------------------------------------------- read_file

#[test]
fn read_numbers_lines_like_cat_n() {
    let ws = Ws::new();
    ws.write("a.txt", "alpha\n\tbeta\n");
    let out = ws.ok("read_file", json!({"path": "a.txt"}));
    assert_eq!(out.text, "     1\talpha\n     2\t\tbeta\n");
    assert_eq!(out.metadata.to_json()["total_lines"], 2);
    assert_eq!(out.metadata.to_json()["complete"], true);
}

#[test]
fn read_range_says_where_it_is_and_how_to_go_on() {
    let ws = Ws::new();
    let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    ws.write("ten.txt", &content);
    let out = ws.ok(
        "read_file",
        json!({"path": "ten.txt", "offset": 3, "limit": 2}),
    );
    assert_eq!(
        numbered(&out.text),
        vec![(3, "line 3".into()), (4, "line 4".into())]
    );
    assert!(out.text.contains("showing lines 3-4 of 10"), "{}", out.text);
    assert_eq!(next_offset(&out.text), Some(5));
    // Offsets and limits given as strings are taken too.
    let out = ws.ok(
        "read_file",
        json!({"file_path": "ten.txt", "offset": "9", "limit": "5"}),
    );
    assert_eq!(numbered(&out.text).len(), 2);
    assert!(
        out.text
            .contains("showing lines 9-10 of 10; this is the end of the file"),
        "{}",
        out.text
    );
    assert_eq!(next_offset(&out.text), None);
}

#[test]
fn read_defaults_to_2000_lines() {
    let ws = Ws::with_budget(10_000_000);
    let content: String = (1..=2500).map(|i| format!("l{i}\n")).collect();
    ws.write("long.txt", &content);
    let out = ws.ok("read_file", json!({"path": "long.txt"}));
    let lines = numbered(&out.text);
    assert_eq!(lines.len(), 2000);
    assert_eq!(lines.last().unwrap(), &(2000, "l2000".to_owned()));
    assert!(
        out.text.contains("showing lines 1-2000 of 2500"),
        "{}",
        &out.text[out.text.len() - 200..]
    );
    assert_eq!(next_offset(&out.text), Some(2001));
    // Numbers wider than six digits still end in a tab.
    assert!(out.text.starts_with("     1\tl1\n"));
}

#[test]
fn read_cuts_long_lines_with_a_marker() {
    let ws = Ws::new();
    ws.write("wide.txt", format!("short\n{}\nafter\n", "x".repeat(5000)));
    let out = ws.ok("read_file", json!({"path": "wide.txt"}));
    let lines = numbered(&out.text);
    assert_eq!(
        lines[1].1,
        format!(
            "{} [... line cut: showing 2000 of 5,000 characters]",
            "x".repeat(2000)
        )
    );
    assert_eq!(lines[2], (3, "after".to_owned()));
    assert!(
        out.text
            .contains("1 line longer than 2000 characters was cut"),
        "{}",
        out.text
    );
    // The note says how to see the rest of the line, with a command that works as written.
    let hint = out
        .text
        .split('`')
        .nth(1)
        .unwrap_or_else(|| panic!("no command in the note: {}", out.text));
    assert_eq!(hint, "sed -n '2p' wide.txt | cut -c2001-4000");
    let rest = std::process::Command::new("sh")
        .arg("-c")
        .arg(hint)
        .current_dir(ws.root())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&rest.stdout),
        format!("{}\n", "x".repeat(2000))
    );
}

#[test]
fn read_a_single_line_of_megabytes() {
    let ws = Ws::new();
    ws.write("one.txt", "y".repeat(5 << 20));
    let out = ws.ok("read_file", json!({"path": "one.txt"}));
    assert_eq!(out.metadata.to_json()["total_lines"], 1);
    assert!(
        out.text.contains("showing 2000 of 5,242,880 characters"),
        "{}",
        &out.text[2000..]
    );
    assert!(out.text.contains("the file does not end with a newline"));
}

#[test]
fn read_past_the_end_says_how_many_lines_there_are() {
    let ws = Ws::new();
    ws.write("three.txt", "a\nb\nc\n");
    let out = ws.err("read_file", json!({"path": "three.txt", "offset": 10}));
    assert!(
        out.text
            .contains("offset 10 is past the end of three.txt, which has 3 lines"),
        "{}",
        out.text
    );
}

#[test]
fn read_bad_offsets_and_limits() {
    let ws = Ws::new();
    ws.write("f.txt", "a\nb\n");
    let out = ws.ok("read_file", json!({"path": "f.txt", "offset": 0}));
    assert_eq!(
        numbered(&out.text)[0].0,
        1,
        "offset 0 reads from the first line"
    );
    let out = ws.err("read_file", json!({"path": "f.txt", "offset": -3}));
    assert!(
        out.text
            .contains("offset must be a line number of 1 or more"),
        "{}",
        out.text
    );
    let out = ws.err("read_file", json!({"path": "f.txt", "limit": 0}));
    assert!(out.text.contains("limit must be 1 or more"), "{}", out.text);
}

#[test]
fn read_binary_gives_the_size_instead_of_bytes() {
    let ws = Ws::new();
    // Images have their own answer (read_image.rs).
    let mut elf = b"\x7FELF".to_vec();
    elf.extend(std::iter::repeat_n(0u8, 3004));
    ws.write("program", &elf);
    let out = ws.ok("read_file", json!({"path": "program"}));
    assert!(
        out.text
            .contains("program is a binary file (ELF executable, 2.9 KiB (3,008 bytes))"),
        "{}",
        out.text
    );
    assert!(!out.text.contains('\u{0}'));
    ws.write("controls.bin", vec![1u8; 100]);
    let out = ws.ok("read_file", json!({"path": "controls.bin"}));
    assert!(
        out.text.contains("binary file (binary data, 100 bytes)"),
        "{}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["binary"], true);
}

#[test]
fn read_directory_points_to_list_files() {
    let ws = Ws::new();
    ws.write("src/main.rs", "fn main() {}\n");
    let out = ws.err("read_file", json!({"path": "src"}));
    assert!(
        out.text.contains("src is a directory") && out.text.contains("list_files"),
        "{}",
        out.text
    );
}

#[test]
fn read_missing_suggests_similar_names() {
    let ws = Ws::new();
    ws.write("src/main.rs", "fn main() {}\n");
    ws.write("src/lib.rs", "\n");
    ws.write("docs/guide.md", "\n");
    let out = ws.err("read_file", json!({"path": "src/mian.rs"}));
    assert!(
        out.text.contains("src/mian.rs does not exist"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("Did you mean `src/main.rs`"),
        "{}",
        out.text
    );
    let out = ws.err("read_file", json!({"path": "guide.md"}));
    assert!(out.text.contains("`docs/guide.md`"), "{}", out.text);
    let out = ws.err("read_file", json!({"path": "nothing/like/it.zzz"}));
    assert!(!out.text.contains("Did you mean"), "{}", out.text);
    let suggestions = out.metadata.extra["suggestions"].as_array().unwrap();
    assert!(suggestions.len() <= 3);
}

#[test]
fn read_invalid_utf8_lossily_with_a_note() {
    let ws = Ws::new();
    ws.write("latin1.txt", b"caf\xe9\nok\n");
    let out = ws.ok("read_file", json!({"path": "latin1.txt"}));
    assert!(
        out.text.starts_with("     1\tcaf\u{FFFD}\n     2\tok\n"),
        "{}",
        out.text
    );
    assert!(out.text.contains("not valid UTF-8"), "{}", out.text);
}

#[test]
fn read_crlf_without_carriage_returns_and_bom_hidden() {
    let ws = Ws::new();
    ws.write("dos.txt", "\u{FEFF}one\r\ntwo\r\n");
    let out = ws.ok("read_file", json!({"path": "dos.txt"}));
    assert!(
        out.text.starts_with("     1\tone\n     2\ttwo\n"),
        "{:?}",
        out.text
    );
    assert!(!out.text.contains("\r\n") && !out.text.contains('\u{FEFF}'));
    assert!(
        out.text.contains("the file has CRLF line endings"),
        "{}",
        out.text
    );
    // One CRLF among LF lines is a mixed file, and the note says so.
    ws.write("mixed.txt", "a\r\nb\nc\n");
    let out = ws.ok("read_file", json!({"path": "mixed.txt"}));
    assert!(
        out.text.contains("mixes CRLF and LF line endings"),
        "{}",
        out.text
    );
}

#[test]
fn write_a_name_too_long_says_so() {
    let ws = Ws::new();
    let name = format!("{}.txt", "n".repeat(300));
    let out = ws.err("write_file", json!({"path": name, "content": "x"}));
    assert!(out.text.contains("at most 255 bytes"), "{}", out.text);
    assert!(out.text.starts_with("cannot write"), "{}", out.text);
}

#[test]
fn read_empty_file_and_missing_final_newline() {
    let ws = Ws::new();
    ws.write("empty.txt", "");
    let out = ws.ok("read_file", json!({"path": "empty.txt"}));
    assert_eq!(out.text, "empty.txt is empty (0 bytes).");
    ws.write("open.txt", "a\nb");
    let out = ws.ok("read_file", json!({"path": "open.txt"}));
    assert_eq!(
        out.text,
        "     1\ta\n     2\tb\n\n(the file does not end with a newline)\n"
    );
}

#[test]
fn read_fifo_does_not_hang() {
    let ws = Ws::new();
    nix::unistd::mkfifo(
        &ws.path("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    let out = ws.err("read_file", json!({"path": "pipe"}));
    assert!(out.text.contains("not a regular file"), "{}", out.text);
}

#[test]
fn read_through_absolute_path_inside_the_workspace() {
    let ws = Ws::new();
    ws.write("in.txt", "x\n");
    let out = ws.ok("read_file", json!({"path": ws.path("in.txt")}));
    assert_eq!(out.metadata.to_json()["path"], "in.txt");
}

// ---------------------------------------------------------------- write_file

#[test]
fn write_creates_parents_and_counts_lines() {
    let ws = Ws::new();
    let out = ws.ok(
        "write_file",
        json!({"path": "a/b/c.txt", "content": "one\ntwo\n"}),
    );
    assert_eq!(out.text, "Created a/b/c.txt (+2 -0).");
    assert_eq!(ws.text("a/b/c.txt"), "one\ntwo\n");
    assert_eq!(out.metadata.to_json()["created"], true);
    assert_eq!(out.metadata.to_json()["added"], 2);
}

#[test]
fn write_overwrites_with_counts_and_keeps_permissions() {
    let ws = Ws::new();
    ws.write("run.sh", "#!/bin/sh\necho a\n");
    ws.chmod("run.sh", 0o751);
    let out = ws.ok(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho b\necho c\n"}),
    );
    assert_eq!(out.text, "Overwrote run.sh (+2 -1).");
    assert_eq!(ws.mode("run.sh"), 0o751);
    assert_eq!(ws.text("run.sh"), "#!/bin/sh\necho b\necho c\n");
    assert_eq!(
        (
            out.metadata.to_json()["added"].clone(),
            out.metadata.to_json()["removed"].clone()
        ),
        (json!(2), json!(1))
    );
    let same = ws.ok(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho b\necho c\n"}),
    );
    assert_eq!(
        same.text,
        "Overwrote run.sh (+0 -0: the content was already the same)."
    );
}

#[test]
fn write_leaves_no_temporary_file() {
    let ws = Ws::new();
    ws.ok("write_file", json!({"path": "d/x.txt", "content": "1"}));
    ws.ok("write_file", json!({"path": "d/x.txt", "content": "2"}));
    assert_eq!(ws.names_in(&ws.path("d")), vec!["x.txt"]);
}

#[test]
fn write_refuses_a_stale_overwrite_until_read_again() {
    let ws = Ws::new();
    ws.write("f.txt", "v1\n");
    ws.ok("read_file", json!({"path": "f.txt"}));
    ws.write("f.txt", "v2 from someone else\n");
    let out = ws.err("write_file", json!({"path": "f.txt", "content": "mine\n"}));
    assert!(
        out.text
            .contains("changed on disk since this session last read or wrote it"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("read it again with read_file"),
        "{}",
        out.text
    );
    assert_eq!(ws.text("f.txt"), "v2 from someone else\n");
    ws.ok("read_file", json!({"path": "f.txt"}));
    ws.ok("write_file", json!({"path": "f.txt", "content": "mine\n"}));
    // Its own write counts as seen: writing again needs no read.
    ws.ok(
        "write_file",
        json!({"path": "f.txt", "content": "mine again\n"}),
    );
    assert_eq!(ws.text("f.txt"), "mine again\n");
}

#[test]
fn write_a_directory_or_under_a_file_is_refused() {
    let ws = Ws::new();
    ws.write("dir/x", "");
    let out = ws.err("write_file", json!({"path": "dir", "content": "x"}));
    assert!(out.text.contains("dir is a directory"), "{}", out.text);
    let out = ws.err("write_file", json!({"path": "newdir/", "content": "x"}));
    assert!(out.text.contains("names a directory"), "{}", out.text);
    assert!(!ws.path("newdir").exists());
    let out = ws.err("write_file", json!({"path": "dir/x/y.txt", "content": "x"}));
    assert!(
        out.text.contains("is a file, not a directory"),
        "{}",
        out.text
    );
}

// ---------------------------------------------------------------- list_files

fn tree_ws() -> Ws {
    let ws = Ws::new();
    ws.write("src/main.rs", "");
    ws.write("src/util/mod.rs", "");
    ws.write("src/util/deep/x.rs", "");
    ws.write("README.md", "");
    ws.write("build.log", "");
    ws.write("target/debug/app", "");
    ws.write("secret/key.pem", "");
    ws.write(".hidden/file", "");
    ws.write(".env", "");
    ws.write(".gitignore", "*.log\ntarget/\n");
    ws.write(".ignore", "secret/\n");
    std::fs::create_dir_all(ws.path("empty")).unwrap();
    ws
}

#[test]
fn list_shows_a_sorted_tree_two_levels_deep_respecting_ignores() {
    let ws = tree_ws();
    let out = ws.ok("list_files", json!({}));
    assert_eq!(
        out.text,
        "./\n  README.md\n  empty/\n  src/\n    main.rs\n    util/\n"
    );
    assert_eq!(out.metadata.to_json()["total"], 5);
}

#[test]
fn list_depth_and_subdirectory() {
    let ws = tree_ws();
    let out = ws.ok("list_files", json!({"path": "src", "depth": 1}));
    assert_eq!(out.text, "src/\n  main.rs\n  util/\n");
    let out = ws.ok("list_files", json!({"path": "src", "depth": 5}));
    assert_eq!(
        out.text,
        "src/\n  main.rs\n  util/\n    deep/\n      x.rs\n    mod.rs\n"
    );
}

#[test]
fn list_caps_entries_and_counts_the_rest() {
    let ws = Ws::new();
    for i in 0..30 {
        ws.write(&format!("many/f{i:02}.txt"), "");
    }
    ws.write("top.txt", "");
    let out = ws.ok("list_files", json!({"limit": 5}));
    assert!(
        out.text.starts_with("./\n  many/\n    f00.txt\n"),
        "{}",
        out.text
    );
    assert!(
        out.text.contains("  top.txt\n"),
        "shallow entries first: {}",
        out.text
    );
    assert!(
        out.text
            .contains("(showing 5 of 32 entries; 27 more not shown"),
        "{}",
        out.text
    );
    assert_eq!(out.metadata.to_json()["truncated"], true);
    let all = ws.ok("list_files", json!({"depth": 2}));
    assert!(all.text.contains("f29.txt") && !all.text.contains("more not shown"));
}

#[test]
fn list_default_cap_is_200() {
    let ws = Ws::new();
    for i in 0..250 {
        ws.write(&format!("f{i:03}"), "");
    }
    let out = ws.ok("list_files", json!({"path": "."}));
    assert_eq!(out.metadata.to_json()["entries"], 200);
    assert!(
        out.text
            .contains("(showing 200 of 250 entries; 50 more not shown"),
        "{}",
        out.text
    );
}

#[test]
fn list_a_file_or_a_missing_directory() {
    let ws = tree_ws();
    let out = ws.err("list_files", json!({"path": "README.md"}));
    assert!(
        out.text.contains("is a file") && out.text.contains("read_file"),
        "{}",
        out.text
    );
    let out = ws.err("list_files", json!({"path": "scr"}));
    assert!(
        out.text.contains("scr does not exist") && out.text.contains("`src/`"),
        "{}",
        out.text
    );
    let out = ws.ok("list_files", json!({"path": "empty"}));
    assert!(out.text.contains("empty/ is empty"), "{}", out.text);
}

#[test]
fn list_shows_symlinks_without_following_them() {
    let ws = Ws::new();
    ws.write("real/inner.txt", "");
    std::os::unix::fs::symlink(ws.outside(), ws.path("out")).unwrap();
    std::fs::write(ws.outside().join("secret.txt"), "s").unwrap();
    let out = ws.ok("list_files", json!({"depth": 3}));
    assert!(
        out.text
            .contains(&format!("  out -> {}\n", ws.outside().display())),
        "{}",
        out.text
    );
    assert!(!out.text.contains("secret.txt"), "{}", out.text);
}
