//! The wording of every hint, byte for byte, from constructed data; and the text of real
//! commands run through a `lathe-exec` supervisor (these assertions were `lathe-exec`'s until
//! its reports stopped carrying text).

use std::path::PathBuf;
use std::time::Duration;

use lathe_exec::{
    ArtifactInfo, CommandId, CommandReport, CommandSpec, CommandStatus, CommandSummary, Detached,
    ExecError, KillOutcome, KillReason, Omission, OutputPage, Preview, SearchMatch, SearchResult,
    Supervisor,
};
use tokio_util::sync::CancellationToken;

use super::*;

fn report_with(detached: Option<Detached>, total_bytes: u64, preview: Preview) -> CommandReport {
    CommandReport {
        id: CommandId(7),
        command: "make".into(),
        status: if detached.is_some() {
            CommandStatus::Running
        } else {
            CommandStatus::Exited { code: 0 }
        },
        detached,
        wall_time: Duration::from_millis(1500),
        total_bytes,
        total_lines: 2,
        preview,
        artifact: ArtifactInfo {
            name: "cmd-7".into(),
            path: PathBuf::from("/state/cmd-7"),
            kept_bytes: total_bytes,
            cap: 1 << 30,
            error: None,
        },
        sandbox: None,
    }
}

fn whole(text: &str) -> Preview {
    Preview {
        head: text.into(),
        omitted: None,
        tail: String::new(),
    }
}

fn cut() -> Preview {
    Preview {
        head: "1\n2\n".into(),
        omitted: Some(Omission {
            start: 4,
            end: 1000,
            first_line: 3,
            last_line: 300,
        }),
        tail: "301\n".into(),
    }
}

fn empty_page(offset: u64, available: u64, status: CommandStatus) -> OutputPage {
    OutputPage {
        id: CommandId(4),
        offset,
        bytes: Vec::new(),
        first_line: 1,
        available,
        total_bytes: available,
        status,
        complete: !status.is_running(),
    }
}

fn search_result(status: CommandStatus) -> SearchResult {
    SearchResult {
        id: CommandId(4),
        pattern: "fail\"ed".into(),
        literal_because: None,
        start: 0,
        end: 1000,
        total_bytes: 1000,
        matches: vec![SearchMatch {
            line: 12,
            offset: 300,
            text: "test a failed".into(),
        }],
        total_matches: 1,
        next_offset: None,
        status,
    }
}

#[test]
fn statuses_name_the_tool_and_the_setting_that_killed() {
    for (given, phrase) in [
        (CommandStatus::Running, "still running"),
        (CommandStatus::Exited { code: 2 }, "exit code 2"),
        (
            CommandStatus::Signaled { signal: 9 },
            "killed by signal 9 (SIGKILL)",
        ),
        (
            CommandStatus::Killed {
                reason: KillReason::Requested,
            },
            "killed by kill_command",
        ),
        (
            CommandStatus::Killed {
                reason: KillReason::Cancelled,
            },
            "aborted by user",
        ),
        (
            CommandStatus::Killed {
                reason: KillReason::Shutdown,
            },
            "killed at the end of the session",
        ),
        (
            CommandStatus::TimedOut {
                limit: Duration::from_secs(30),
            },
            "killed: ran past the hard limit of 30.0 s (command_timeout)",
        ),
    ] {
        assert_eq!(status(given), phrase);
    }
}

#[test]
fn a_background_command_says_how_to_follow_it() {
    let started = report_with(Some(Detached::Background), 0, whole(""));
    assert_eq!(
        report(&started, None),
        "started in the background as command 7\n\
         [command_output {\"id\": 7} reads its output, kill_command {\"id\": 7} stops it, \
         list_commands shows it]"
    );
    let moved = report_with(
        Some(Detached::SoftTimeout {
            after: Duration::from_secs(5),
        }),
        6,
        whole("begin\n"),
    );
    assert_eq!(
        report(&moved, Some("not sandboxed (sandbox: false)")),
        "still running after the 5.00 s timeout, moved to the background as command 7 | \
         6 bytes, 2 lines so far | not sandboxed (sandbox: false)\n\
         begin\n\
         [command 7 keeps running: command_output {\"id\": 7} reads its output, \
         kill_command {\"id\": 7} stops it, list_commands shows it]"
    );
}

#[test]
fn a_cut_preview_says_where_the_rest_is() {
    let mut sandboxed = report_with(None, 1004, cut());
    sandboxed.sandbox = Some("sandboxed (landlock abi 7, seccomp): writes confined".into());
    assert_eq!(
        report(&sandboxed, None),
        "exit code 0 | 1.50 s | 1004 bytes, 2 lines | command 7 | \
         sandboxed (landlock abi 7, seccomp): writes confined\n\
         1\n2\n\
         [... 996 bytes omitted (lines 3-300); command_output {\"id\": 7, \"offset\": 4} reads them ...]\n\
         301\n\
         [full output: 1004 bytes kept as artifact cmd-7; read it with \
         command_output {\"id\": 7, \"offset\": 0} or search it with \
         command_output {\"id\": 7, \"search\": \"REGEX\"}]"
    );
    let mut one_line = report_with(None, 1004, cut());
    one_line.preview.omitted = Some(Omission {
        start: 4,
        end: 1000,
        first_line: 3,
        last_line: 3,
    });
    assert!(report(&one_line, None).contains("[... 996 bytes omitted (part of line 3); "));
}

#[test]
fn artifact_notes_say_what_was_not_kept() {
    let mut capped = report_with(None, 3000, cut());
    capped.artifact.kept_bytes = 1000;
    capped.artifact.cap = 1000;
    let text = report(&capped, None);
    assert!(
        text.contains(
            "[the output passed the artifact cap of 1000 bytes: the first 1000 bytes are kept, \
             the other 2000 were counted but not kept]\n"
        ),
        "{text}"
    );
    // Moved from lathe-exec's memory test (2 GiB printed, the default cap of 1 GiB kept).
    capped.total_bytes = 2 << 30;
    capped.artifact.kept_bytes = 1 << 30;
    capped.artifact.cap = 1 << 30;
    assert!(report(&capped, None).contains("artifact cap of 1 GiB"));
    let mut failed = report_with(None, 5, whole("hello"));
    failed.artifact.kept_bytes = 0;
    failed.artifact.error = Some("Is a directory (os error 21)".into());
    assert_eq!(
        report(&failed, None),
        "exit code 0 | 1.50 s | 5 bytes, 2 lines | command 7\n\
         hello\n\
         [the artifact cmd-7 could not be written (Is a directory (os error 21)): only its \
         first 0 bytes are kept]"
    );
    let silent = report_with(None, 0, whole(""));
    assert!(report(&silent, None).ends_with("\n(no output)"));
}

#[test]
fn ends_of_output_say_what_to_do() {
    // Running, read up to its end: nothing new yet, read on from there (not "use an offset
    // below 42", which would contradict the hint).
    let text = page(&empty_page(42, 42, CommandStatus::Running));
    assert_eq!(
        text,
        "[command 4 (running): no output past byte 42 yet]\n\
         [command 4 is still running: read again later with command_output {\"id\": 4, \"offset\": 42}]"
    );
    assert!(!text.contains("below"), "{text}");
    let text = page(&empty_page(50, 42, CommandStatus::Exited { code: 0 }));
    assert_eq!(
        text,
        "[command 4 (exit code 0): offset 50 is at or past the end of the output (42 bytes); \
         use an offset below 42]"
    );
    assert_eq!(
        page(&empty_page(0, 0, CommandStatus::Running)),
        "[command 4 (running): no output yet]\n\
         [command 4 is still running: read again later with command_output {\"id\": 4, \"offset\": 0}]"
    );
    // A search that stopped at the artifact cap says the rest was not searched.
    let mut capped = search_result(CommandStatus::Exited { code: 0 });
    capped.total_bytes = 1500;
    let text = search(&capped);
    assert!(
        text.contains("the other 500 bytes passed the artifact cap")
            && text.contains("not searched"),
        "{text}"
    );
}

#[test]
fn pages_say_where_to_read_next() {
    let mut page_of = OutputPage {
        id: CommandId(4),
        offset: 10,
        bytes: b"tick 1\ntick 2".to_vec(),
        first_line: 3,
        available: 100,
        total_bytes: 100,
        status: CommandStatus::Running,
        complete: false,
    };
    assert_eq!(
        page(&page_of),
        "[command 4 (running): bytes 10-23 of 100, lines 3-4]\n\
         tick 1\ntick 2\n\
         [77 more bytes: command_output {\"id\": 4, \"offset\": 23}]"
    );
    page_of.available = 23;
    page_of.total_bytes = 23;
    assert!(page(&page_of).ends_with(
        "[end of the output so far; command 4 is still writing: read what comes next with \
         command_output {\"id\": 4, \"offset\": 23}]"
    ));
    page_of.status = CommandStatus::Exited { code: 0 };
    page_of.complete = true;
    assert!(page(&page_of).ends_with("tick 2\n[end of output]"));
    page_of.total_bytes = 50;
    assert!(page(&page_of).ends_with(
        "[end of the artifact: the other 27 bytes passed the artifact cap and were not kept]"
    ));
    assert_eq!(
        page_limited(1024),
        "\n[the page was limited to 1024 bytes to fit the result budget]"
    );
}

#[test]
fn searches_say_where_to_search_next() {
    let mut result = search_result(CommandStatus::Running);
    result.literal_because = Some("unclosed group".into());
    result.total_matches = 5;
    result.next_offset = Some(400);
    assert_eq!(
        search(&result),
        "[command 4 (running): 5 lines matching /fail\"ed/ (case-insensitive) in bytes 0-1000, \
         showing the first 1]\n\
         [the pattern is not a valid regex (unclosed group); it was searched as literal text]\n\
         12:test a failed\n\
         [more matches: command_output {\"id\": 4, \"search\": \"fail\\\"ed\", \"offset\": 400}]\n\
         [command 4 is still running: its output may grow; search again later]"
    );
    let one = search_result(CommandStatus::Exited { code: 1 });
    assert_eq!(
        search(&one),
        "[command 4 (exit code 1): 1 line matching /fail\"ed/ (case-insensitive) in bytes 0-1000]\n\
         12:test a failed"
    );
    assert_eq!(json_string("a\\b\n\u{1}"), "\"a\\\\b\\n\\u0001\"");
    assert_eq!(plural(1, "line", "lines"), "1 line");
    assert_eq!(plural(0, "line", "lines"), "0 lines");
    assert_eq!(plural(12345, "line", "lines"), "12345 lines");
}

#[test]
fn search_results_fit_a_budget_and_point_at_the_rest() {
    let mut result = SearchResult {
        id: CommandId(1),
        pattern: "x".into(),
        literal_because: None,
        start: 0,
        end: 10_000,
        total_bytes: 10_000,
        matches: (0..50)
            .map(|i| SearchMatch {
                line: i + 1,
                offset: i * 100,
                text: "x".repeat(90),
            })
            .collect(),
        total_matches: 50,
        next_offset: None,
        status: CommandStatus::Exited { code: 0 },
    };
    let full = search(&result).chars().count();
    fit_search(&mut result, full);
    assert_eq!(result.matches.len(), 50);
    assert_eq!(result.next_offset, None);
    fit_search(&mut result, 1000);
    assert!(search(&result).chars().count() <= 1000);
    let kept = result.matches.len() as u64;
    assert!((1..50).contains(&kept));
    assert_eq!(result.next_offset, Some(kept * 100));
    assert!(search(&result).contains(&format!("\"offset\": {}", kept * 100)));
}

#[test]
fn the_list_is_a_table() {
    assert_eq!(list(&[]), "no commands have run in this session");
    let summary = |id, status, command: &str| CommandSummary {
        id: CommandId(id),
        command: command.into(),
        status,
        runtime: Duration::from_millis(20),
        output_bytes: 6,
        output_lines: 1,
        background: false,
    };
    let long = format!("echo {}", "y".repeat(300));
    let table = list(&[
        summary(1, CommandStatus::Running, "npm run\n  dev"),
        summary(2, CommandStatus::Exited { code: 0 }, &long),
    ]);
    let expected_long: String = long.chars().take(200).collect();
    assert_eq!(
        table,
        format!(
            "2 commands in this session, 1 running\n\
             id | status | runtime | output | command\n\
             1 | running | 0.02 s | 6 bytes, 1 line | npm run dev\n\
             2 | exited (0) | 0.02 s | 6 bytes, 1 line | {expected_long}..."
        )
    );
}

#[test]
fn kill_outcomes_read_as_sentences() {
    let id = CommandId(3);
    for (outcome, sentence) in [
        (
            KillOutcome::Killed {
                id,
                status: CommandStatus::Killed {
                    reason: KillReason::Requested,
                },
                runtime: Duration::from_secs(2),
            },
            "killed command 3 and all its processes after 2.00 s",
        ),
        (
            KillOutcome::Killed {
                id,
                status: CommandStatus::Exited { code: 0 },
                runtime: Duration::from_secs(2),
            },
            "command 3 finished by itself before it could be killed: exit code 0",
        ),
        (
            KillOutcome::AlreadyFinished {
                id,
                status: CommandStatus::Killed {
                    reason: KillReason::Requested,
                },
                leftovers_killed: 0,
            },
            "command 3 had already finished (killed by kill_command); nothing to kill",
        ),
        (
            KillOutcome::AlreadyFinished {
                id,
                status: CommandStatus::Exited { code: 0 },
                leftovers_killed: 3,
            },
            "command 3 had already finished (exit code 0); killed 3 processes it had left \
             running in the background",
        ),
        (
            KillOutcome::AlreadyFinished {
                id,
                status: CommandStatus::Exited { code: 0 },
                leftovers_killed: 1,
            },
            "command 3 had already finished (exit code 0); killed 1 process it had left \
             running in the background",
        ),
    ] {
        assert_eq!(kill(&outcome), sentence);
    }
}

#[test]
fn errors_the_model_can_fix_say_how() {
    assert_eq!(
        error(&ExecError::EmptyCommand),
        "the command is empty: give a shell command to run, for example \"ls -la\""
    );
    assert_eq!(
        error(&ExecError::TooManyRunning {
            limit: 2,
            running: 2
        }),
        "2 commands are already running, the most allowed at once: stop one with kill_command \
         or wait for one to finish (list_commands shows them)"
    );
    assert_eq!(
        error(&ExecError::UnknownCommand { id: "9".into() }),
        "there is no command '9' in this session: list_commands shows the commands and their ids"
    );
    assert_eq!(
        error(&ExecError::ShutDown),
        ExecError::ShutDown.to_string(),
        "the rest are lathe-exec's words"
    );
    assert_eq!(
        negative_id("-1"),
        "parameter `id` cannot be -1: command ids are positive numbers such as 3, as `shell` or \
         `list_commands` gave them"
    );
    assert_eq!(
        not_shown_live(70000),
        "70000 bytes of output not shown live (the result and command_output have them)"
    );
}

// Real commands through a supervisor: the text of what `lathe-exec` reported.

fn supervisor(dir: &std::path::Path) -> Supervisor {
    Supervisor::builder(dir)
        .kill_grace(Duration::from_millis(500))
        .build()
        .expect("supervisor")
}

fn never() -> CancellationToken {
    CancellationToken::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_of_real_commands() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let spec = CommandSpec::new("echo a; echo b >&2; printf c; exit 7", "/");
    let done = sup.run(spec, &never()).await.unwrap();
    let first_line = header(&done, None);
    assert!(first_line.starts_with("exit code 7 | "), "{first_line}");
    assert!(first_line.contains("5 bytes, 3 lines"), "{first_line}");
    assert!(!first_line.contains("sandboxed"), "{first_line}");
    let text = report(&done, None);
    assert!(text.starts_with(&first_line), "{text}");
    assert!(
        !text.contains("artifact"),
        "output fits: no artifact note\n{text}"
    );
    let killed = sup
        .run(CommandSpec::new("kill -9 $$", "/"), &never())
        .await
        .unwrap();
    assert!(header(&killed, None).starts_with("killed by signal 9 (SIGKILL)"));
    assert!(report(&killed, None).contains("(no output)"));

    let limited = Supervisor::builder(state.path().join("limited"))
        .command_timeout(Some(Duration::from_millis(300)))
        .build()
        .unwrap();
    let timed_out = limited
        .run(CommandSpec::new("echo x; sleep 30", "/"), &never())
        .await
        .unwrap();
    let first_line = header(&timed_out, None);
    assert!(first_line.contains("hard limit"), "{first_line}");
    assert!(first_line.contains("(command_timeout)"), "{first_line}");
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let aborted = sup
        .run(CommandSpec::new("echo partial; sleep 30", "/"), &cancel)
        .await
        .unwrap();
    let first_line = header(&aborted, None);
    assert!(first_line.starts_with("aborted by user"), "{first_line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_output_points_at_its_artifact() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let done = sup
        .run(CommandSpec::new("seq 1 100000", "/"), &never())
        .await
        .unwrap();
    let omitted = done.preview.omitted.expect("cut");
    let text = report(&done, None);
    let marker_line = format!(
        "[... {} bytes omitted (lines {}-{}); command_output {{\"id\": {}, \"offset\": {}}} reads them ...]",
        omitted.bytes(),
        omitted.first_line,
        omitted.last_line,
        done.id,
        omitted.start
    );
    assert!(text.contains(&marker_line), "{text}");
    assert!(
        text.contains(&format!("artifact cmd-{}", done.id)),
        "{text}"
    );
    assert!(text.contains("command_output"), "{text}");
    // Paging on says where the next page starts, and the last one says it is the end.
    let mut offset = 0;
    loop {
        let read = sup
            .read_output(done.id, offset, Some(100_000))
            .await
            .unwrap();
        offset = read.end();
        if !read.more() {
            assert!(page(&read).ends_with("[end of output]"));
            break;
        }
        assert!(page(&read).contains(&format!("\"offset\": {offset}")));
    }
    let past = sup.read_output(done.id, offset + 10, None).await.unwrap();
    assert!(page(&past).contains("past the end"), "{}", page(&past));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capped_and_unwritable_artifacts_say_so() {
    let state = tempfile::tempdir().unwrap();
    let sup = Supervisor::builder(state.path())
        .artifact_cap(1000)
        .build()
        .unwrap();
    // The first command is number 1; a directory in the way makes its artifact unwritable.
    std::fs::create_dir(state.path().join("cmd-1")).unwrap();
    let unwritable = sup
        .run(CommandSpec::new("seq 1 5000", "/"), &never())
        .await
        .unwrap();
    let text = report(&unwritable, None);
    assert!(text.contains("could not be written"), "{text}");
    let capped = sup
        .run(CommandSpec::new("seq 1 20000", "/"), &never())
        .await
        .unwrap();
    let text = report(&capped, None);
    assert!(text.contains("artifact cap of 1000 bytes"), "{text}");
    let tail = sup.read_output(capped.id, 900, Some(500)).await.unwrap();
    assert!(page(&tail).contains("passed the artifact cap"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_commands_are_followed_limited_and_listed() {
    let state = tempfile::tempdir().unwrap();
    let sup = Supervisor::builder(state.path())
        .kill_grace(Duration::from_millis(500))
        .max_running(2)
        .build()
        .unwrap();
    let first = sup
        .run(
            CommandSpec::new("for i in 1 2 3; do echo tick $i; done; sleep 30", "/").background(),
            &never(),
        )
        .await
        .unwrap();
    assert!(header(&first, None).contains("started in the background as command"));
    let moved = sup
        .run(
            CommandSpec::new("echo begin; sleep 30", "/").soft_timeout(Duration::from_millis(300)),
            &never(),
        )
        .await
        .unwrap();
    let text = report(&moved, None);
    assert!(
        text.contains("moved to the background as command"),
        "{text}"
    );
    assert!(text.contains("kill_command"), "{text}");
    let refused = sup
        .run(CommandSpec::new("echo third", "/"), &never())
        .await
        .unwrap_err();
    assert!(error(&refused).contains("kill_command"), "{refused}");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while sup.list()[0].output_bytes < 21 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let read = sup.read_output(first.id, 0, None).await.unwrap();
    let text = page(&read);
    assert!(
        text.contains("still writing") || text.contains("still running"),
        "{text}"
    );
    assert!(text.contains("\"offset\": 21"), "{text}");
    sup.kill(moved.id).await.unwrap();
    let again = sup.kill(moved.id).await.unwrap();
    assert!(
        kill(&again).contains("already finished"),
        "{}",
        kill(&again)
    );
    let third = sup
        .run(CommandSpec::new("echo third", "/"), &never())
        .await
        .unwrap();
    assert_eq!(third.preview.head, "third\n");
    let listing = list(&sup.list());
    assert!(listing.contains("running"), "{listing}");
    assert!(listing.contains("exited (0)"), "{listing}");
    assert!(listing.contains("killed"), "{listing}");
    sup.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn searches_of_real_output() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let done = sup
        .run(
            CommandSpec::new(
                "echo 'call f(x'; echo other; echo 'F(X again'; seq 1 30 | sed 's/^/needle /'",
                "/",
            ),
            &never(),
        )
        .await
        .unwrap();
    let result = sup.search_output(done.id, "f(x", 0, None).await.unwrap();
    let text = search(&result);
    assert!(text.contains("not a valid regex"), "{text}");
    assert!(text.contains("1:call f(x\n3:F(X again"), "{text}");
    let none = sup.search_output(done.id, "absent", 0, None).await.unwrap();
    assert!(
        search(&none).contains("0 lines matching"),
        "{}",
        search(&none)
    );
    let first = sup
        .search_output(done.id, "NEEDLE", 0, Some(10))
        .await
        .unwrap();
    let text = search(&first);
    assert!(text.contains("30 lines matching"), "{text}");
    assert!(text.contains("4:needle 1"), "{text}");
    let next = first.next_offset.expect("more matches");
    assert!(text.contains(&format!("\"offset\": {next}")), "{text}");
}
