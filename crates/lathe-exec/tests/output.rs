//! The artifact holds the exact bytes a command printed; paging reproduces it byte for byte
//! with correct line numbers; search agrees with `grep -n`.

use std::path::Path;

use lathe_exec::{CommandReport, CommandSpec, Supervisor};
use tokio_util::sync::CancellationToken;

use crate::common::{newlines, supervisor};

/// A deterministic pattern with every byte value, invalid UTF-8, lone `\r`, CRLF, long and
/// empty lines, and the word "needle" in varying case on some lines.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut x = seed;
    let mut line = 0u64;
    while out.len() < len {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let width = (x >> 33) % 300;
        match line % 11 {
            0 => out.extend_from_slice(b"\xff\xfe invalid \xc3("),
            1 => out.extend_from_slice(b"progress 10%\rprogress 90%\r"),
            2 => out.extend_from_slice(b"NeEdLe in a haystack"),
            3 => out.extend_from_slice(b"crlf line\r"),
            4 => {}
            5 => out.extend((0..=255u8).filter(|&b| b != b'\n')),
            _ => out.extend((0..width).map(|i| b'a' + ((x >> (i % 29)) % 26) as u8)),
        }
        if line.is_multiple_of(17) {
            out.extend_from_slice(b" needle");
        }
        out.push(b'\n');
        line += 1;
    }
    out.truncate(len);
    out
}

async fn run_cat(sup: &Supervisor, dir: &Path, parts: &[&[u8]]) -> CommandReport {
    let mut script = String::new();
    for (i, part) in parts.iter().enumerate() {
        let file = dir.join(format!("part{i}"));
        std::fs::write(&file, part).unwrap();
        // Alternate stdout and stderr: both land in the artifact, in order.
        let redirect = if i % 2 == 1 { " >&2" } else { "" };
        script.push_str(&format!("cat '{}'{redirect}\n", file.display()));
    }
    sup.run(CommandSpec::new(script, dir), &CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifact_holds_the_exact_bytes_and_paging_reproduces_them() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let parts = [
        pattern(3_500_000, 1),
        pattern(12_345, 2),
        pattern(2_000_001, 3),
    ];
    let expected: Vec<u8> = parts.concat();
    let refs: Vec<&[u8]> = parts.iter().map(Vec::as_slice).collect();
    let report = run_cat(&sup, work.path(), &refs).await;
    assert_eq!(report.status, lathe_exec::CommandStatus::Exited { code: 0 });
    assert_eq!(report.total_bytes, expected.len() as u64);
    let artifact = std::fs::read(&report.artifact.path).unwrap();
    assert!(
        artifact == expected,
        "artifact differs from what was printed"
    );
    assert_eq!(
        report.total_lines,
        newlines(&expected) + u64::from(!expected.ends_with(b"\n"))
    );

    for limit in [40 * 1024, 99_991, 1 << 20] {
        let mut rebuilt = Vec::new();
        let mut offset = 0u64;
        loop {
            let page = sup
                .read_output(report.id, offset, Some(limit))
                .await
                .unwrap();
            assert_eq!(page.offset, offset);
            assert_eq!(
                page.first_line,
                newlines(&expected[..offset as usize]) + 1,
                "offset {offset}"
            );
            assert!(page.bytes.len() <= limit);
            rebuilt.extend_from_slice(&page.bytes);
            offset = page.end();
            if !page.more() {
                assert!(page.complete && !page.status.is_running());
                assert_eq!(page.end(), page.total_bytes);
                break;
            }
            assert!(page.end() < page.available);
        }
        assert!(
            rebuilt == expected,
            "paging with limit {limit} did not reproduce the artifact"
        );
    }
    // The default limit is 40 KiB.
    let page = sup.read_output(report.id, 5, None).await.unwrap();
    assert_eq!(page.bytes.len(), 40 * 1024);
    // Past the end: empty, and says so.
    let page = sup
        .read_output(report.id, expected.len() as u64 + 10, None)
        .await
        .unwrap();
    assert!(page.bytes.is_empty());
    assert_eq!(page.offset, expected.len() as u64 + 10);
    assert!(page.offset > page.available);
}

fn grep_n(path: &Path, pattern: &str) -> Vec<u64> {
    let out = std::process::Command::new("grep")
        .args(["-n", "-a", "-i", "-E", pattern])
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_line_numbers_match_grep_n() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let parts = [pattern(4_200_000, 7)];
    let report = run_cat(&sup, work.path(), &[&parts[0]]).await;
    let artifact = report.artifact.path.clone();
    for regex in ["needle", "^needle", "needle$", "hay.*stack", "progress 9"] {
        let expected = grep_n(&artifact, regex);
        assert!(!expected.is_empty(), "{regex}");
        let result = sup
            .search_output(report.id, regex, 0, Some(usize::MAX))
            .await
            .unwrap();
        let lines: Vec<u64> = result.matches.iter().map(|m| m.line).collect();
        assert_eq!(lines, expected, "{regex}");
        assert_eq!(result.total_matches, expected.len() as u64);
        assert!(result.literal_because.is_none());
    }
    // Limited results, the total, and continuing from the offset given.
    let expected = grep_n(&artifact, "needle");
    let first = sup
        .search_output(report.id, "NEEDLE", 0, Some(10))
        .await
        .unwrap();
    assert_eq!(first.matches.len(), 10);
    assert_eq!(first.total_matches, expected.len() as u64);
    assert_eq!(first.matches[0].line, expected[0]);
    let next = first.next_offset.expect("more matches");
    assert!(next > first.matches[9].offset);
    let rest = sup
        .search_output(report.id, "needle", next, Some(usize::MAX))
        .await
        .unwrap();
    let lines: Vec<u64> = rest.matches.iter().map(|m| m.line).collect();
    assert_eq!(lines, expected[10..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_regex_is_searched_literally_and_says_so() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let report = sup
        .run(
            CommandSpec::new("echo 'call f(x'; echo other; echo 'F(X again'", "/"),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let result = sup.search_output(report.id, "f(x", 0, None).await.unwrap();
    assert!(result.literal_because.is_some());
    assert_eq!(
        result
            .matches
            .iter()
            .map(|m| (m.line, m.text.as_str()))
            .collect::<Vec<_>>(),
        [(1, "call f(x"), (3, "F(X again")]
    );
    let none = sup
        .search_output(report.id, "absent", 0, None)
        .await
        .unwrap();
    assert_eq!(none.total_matches, 0);
    assert!(none.matches.is_empty());
}
