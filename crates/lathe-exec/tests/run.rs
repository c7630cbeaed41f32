//! Running commands: environment, output capture, previews, timeouts, background commands and
//! limits, with real processes.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use lathe_exec::{
    CommandId, CommandSpec, CommandStatus, Detached, ExecError, KillOutcome, KillReason,
    OutputDelta, PreviewBudget,
};
use tokio_util::sync::CancellationToken;

use crate::common::{builder, marker, sleeps_with, supervisor, wait_until};

fn never() -> CancellationToken {
    CancellationToken::new()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_code_merged_order_and_sizes() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let spec = CommandSpec::new("echo a; echo b >&2; printf c; exit 7", "/");
    let report = sup.run(spec, &never()).await.unwrap();
    assert_eq!(report.status, CommandStatus::Exited { code: 7 });
    assert_eq!(report.preview.head, "a\nb\nc");
    assert_eq!(report.total_bytes, 5);
    assert_eq!(report.total_lines, 3);
    assert_eq!(report.status.to_string(), "exit code 7");
    assert!(!report.is_sandboxed());
    // The output fits: nothing is left out, and the artifact keeps all of it.
    assert!(!report.is_cut());
    assert_eq!(report.artifact.kept_bytes, report.total_bytes);
    assert_eq!(report.artifact.error, None);
    // The artifact exists anyway and holds the bytes.
    assert_eq!(std::fs::read(&report.artifact.path).unwrap(), b"a\nb\nc");
    assert_eq!(report.artifact.name, format!("cmd-{}", report.id));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signal_deaths_and_empty_output_are_reported() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let report = sup
        .run(CommandSpec::new("kill -9 $$", "/"), &never())
        .await
        .unwrap();
    assert_eq!(report.status, CommandStatus::Signaled { signal: 9 });
    assert_eq!(report.status.to_string(), "killed by signal 9 (SIGKILL)");
    assert_eq!(report.total_bytes, 0);
    assert_eq!(report.preview.head, "");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_session_null_stdin_cwd_and_agent_environment() {
    let state = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let sup = builder(state.path())
        .base_env(vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap_or_default()),
            ("OPENAI_API_KEY".into(), "sk-secret".into()),
            ("GH_TOKEN".into(), "ghp".into()),
            ("MY_PASSWORD".into(), "hunter2".into()),
            ("Some_Secret_Thing".into(), "x".into()),
            ("KEPT_TOKEN".into(), "kept".into()),
            ("PAGER".into(), "less".into()),
            ("HARMLESS".into(), "yes".into()),
        ])
        .keep_env(vec!["KEPT_TOKEN".into()])
        .build()
        .unwrap();
    let script = r#"
        read -r stat < /proc/$$/stat
        set -- $stat
        [ "$1" = "$5" ] && [ "$1" = "$6" ] && echo own-session
        cat; echo stdin-empty
        pwd
        env | sort
    "#;
    let report = sup
        .run(CommandSpec::new(script, work.path()), &never())
        .await
        .unwrap();
    let out = &report.preview.head;
    assert_eq!(report.status, CommandStatus::Exited { code: 0 }, "{out}");
    assert!(out.contains("own-session\n"), "{out}");
    assert!(out.contains("stdin-empty\n"), "{out}");
    let cwd = work.path().canonicalize().unwrap();
    assert!(out.contains(&format!("{}\n", cwd.display())), "{out}");
    for line in [
        "TERM=dumb",
        "PAGER=cat",
        "GIT_PAGER=cat",
        "GIT_TERMINAL_PROMPT=0",
        "DEBIAN_FRONTEND=noninteractive",
        "NO_COLOR=1",
        "KEPT_TOKEN=kept",
        "HARMLESS=yes",
    ] {
        assert!(out.lines().any(|l| l == line), "missing {line}:\n{out}");
    }
    for secret in [
        "OPENAI_API_KEY",
        "GH_TOKEN",
        "MY_PASSWORD",
        "Some_Secret_Thing",
        "PAGER=less",
    ] {
        assert!(!out.contains(secret), "{secret} leaked:\n{out}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_empty_commands_bad_cwd_and_unknown_ids() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    for empty in ["", "   ", "\n\t  \n"] {
        let err = sup
            .run(CommandSpec::new(empty, "/"), &never())
            .await
            .unwrap_err();
        assert!(matches!(err, ExecError::EmptyCommand), "{err}");
        assert!(err.to_string().contains("empty"));
    }
    let err = sup
        .run(CommandSpec::new("true", "/nonexistent/dir"), &never())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("/nonexistent/dir"), "{err}");
    let err = sup.read_output(CommandId(999), 0, None).await.unwrap_err();
    assert!(matches!(err, ExecError::UnknownCommand { .. }), "{err}");
    assert!(err.to_string().contains("999"));
    assert!(sup.kill(CommandId(5)).await.is_err());
    assert!(sup.search_output(CommandId(1), "x", 0, None).await.is_err());
    // An id that names a path cannot even be parsed.
    assert!("../../etc/passwd".parse::<CommandId>().is_err());
    assert!(sup.list().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sh_runs_commands_where_bash_is_missing() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path()).shell("/bin/sh").build().unwrap();
    let report = sup
        .run(CommandSpec::new("echo from-sh", "/"), &never())
        .await
        .unwrap();
    assert_eq!(report.preview.head, "from-sh\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_cuts_in_the_middle_and_names_the_artifact() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let report = sup
        .run(CommandSpec::new("seq 1 100000", "/"), &never())
        .await
        .unwrap();
    assert_eq!(report.total_lines, 100_000);
    let omitted = report.preview.omitted.expect("cut");
    assert!(report.preview.head.starts_with("1\n2\n3\n"));
    assert!(report.preview.tail.ends_with("99999\n100000\n"));
    let head_lines = report.preview.head.lines().count() as u64;
    let tail_lines = report.preview.tail.lines().count() as u64;
    assert_eq!(omitted.first_line, head_lines + 1);
    assert_eq!(omitted.last_line, 100_000 - tail_lines);
    let shown = report.preview.head.len() + report.preview.tail.len();
    assert!(shown <= PreviewBudget::Medium.bytes());
    assert_eq!(omitted.bytes() + shown as u64, report.total_bytes);
    assert!(report.is_cut());
    assert_eq!(report.artifact.name, format!("cmd-{}", report.id));
    assert_eq!(report.artifact.kept_bytes, report.total_bytes);
    // The omitted range read back is exactly the missing lines.
    let page = sup
        .read_output(report.id, omitted.start, Some(omitted.bytes() as usize))
        .await
        .unwrap();
    assert_eq!(page.first_line, omitted.first_line);
    assert_eq!(page.last_line(), omitted.last_line);
    let first = String::from_utf8(page.bytes.clone()).unwrap();
    assert!(first.starts_with(&format!("{}\n", omitted.first_line)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preview_strips_escapes_and_collapses_progress_but_artifact_is_raw() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let command = r"printf '\033[31mred\033[0m\n10%%\r50%%\r100%%\ndone\r\n'";
    let report = sup
        .run(CommandSpec::new(command, "/"), &never())
        .await
        .unwrap();
    assert_eq!(report.preview.head, "red\n100%\ndone\n");
    let raw = std::fs::read(&report.artifact.path).unwrap();
    assert_eq!(raw, b"\x1b[31mred\x1b[0m\n10%\r50%\r100%\ndone\r\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifact_cap_counts_but_does_not_keep() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path()).artifact_cap(1000).build().unwrap();
    let report = sup
        .run(CommandSpec::new("seq 1 20000", "/"), &never())
        .await
        .unwrap();
    let expected: String = (1..=20000).map(|i| format!("{i}\n")).collect();
    assert_eq!(report.total_bytes, expected.len() as u64);
    assert_eq!(report.artifact.kept_bytes, 1000);
    assert_eq!(
        std::fs::read(&report.artifact.path).unwrap(),
        &expected.as_bytes()[..1000]
    );
    assert!(
        report.preview.tail.ends_with("20000\n"),
        "the tail comes from memory"
    );
    assert_eq!(report.artifact.cap, 1000);
    let page = sup.read_output(report.id, 900, Some(500)).await.unwrap();
    assert_eq!(page.bytes.len(), 100);
    assert!(!page.more());
    assert!(page.complete);
    assert_eq!(page.available, 1000);
    assert_eq!(page.total_bytes, expected.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soft_timeout_moves_to_background_and_kill_still_works() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let spec = CommandSpec::new(format!("echo begin; sleep {m}"), "/")
        .soft_timeout(Duration::from_millis(500));
    let report = sup.run(spec, &never()).await.unwrap();
    assert_eq!(report.status, CommandStatus::Running);
    assert!(matches!(
        report.detached,
        Some(Detached::SoftTimeout { .. })
    ));
    assert_eq!(report.preview.head, "begin\n");
    let list = sup.list();
    assert_eq!(list.len(), 1);
    assert!(list[0].status.is_running() && list[0].background);
    assert_eq!(list[0].output_bytes, 6);
    assert!(wait_until(|| sleeps_with(&m) == 1).await);
    let outcome = sup.kill(report.id).await.unwrap();
    assert!(
        matches!(
            outcome,
            KillOutcome::Killed {
                status: CommandStatus::Killed {
                    reason: KillReason::Requested
                },
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(sleeps_with(&m), 0);
    assert_eq!(sup.list()[0].status.label(), "killed");
    // Killing it again says it had finished.
    let again = sup.kill(report.id).await.unwrap();
    assert!(
        matches!(
            again,
            KillOutcome::AlreadyFinished {
                leftovers_killed: 0,
                ..
            }
        ),
        "{again:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_commands_are_listed_read_while_running_and_limited() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path()).max_running(2).build().unwrap();
    let m = marker();
    let first = sup
        .run(
            CommandSpec::new(
                format!("for i in 1 2 3; do echo tick $i; done; sleep {m}"),
                "/",
            )
            .background(),
            &never(),
        )
        .await
        .unwrap();
    assert_eq!(first.detached, Some(Detached::Background));
    assert!(first.status.is_running());
    let second = sup
        .run(
            CommandSpec::new(format!("sleep {m}"), "/").background(),
            &never(),
        )
        .await
        .unwrap();
    let refused = sup
        .run(CommandSpec::new("echo third", "/"), &never())
        .await
        .unwrap_err();
    assert!(
        matches!(
            refused,
            ExecError::TooManyRunning {
                limit: 2,
                running: 2
            }
        ),
        "{refused}"
    );
    assert_eq!(
        refused.to_string(),
        "2 commands are already running, the most allowed at once is 2"
    );
    let id = first.id;
    assert!(wait_until(|| sup.list()[0].output_bytes == 21).await);
    let page = sup.read_output(id, 0, None).await.unwrap();
    assert_eq!(page.bytes, b"tick 1\ntick 2\ntick 3\n");
    assert!(page.status.is_running());
    assert!(!page.complete && !page.more());
    assert_eq!(page.end(), 21);
    sup.kill(second.id).await.unwrap();
    let third = sup
        .run(CommandSpec::new("echo third", "/"), &never())
        .await
        .unwrap();
    assert_eq!(third.preview.head, "third\n");
    let labels: Vec<String> = sup.list().iter().map(|c| c.status.label()).collect();
    assert_eq!(labels, ["running", "killed", "exited (0)"]);
    sup.shutdown().await;
    assert_eq!(sleeps_with(&m), 0);
    let err = sup
        .run(CommandSpec::new("true", "/"), &never())
        .await
        .unwrap_err();
    assert!(matches!(err, ExecError::ShutDown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hard_timeout_kills_unless_exempt() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path())
        .command_timeout(Some(Duration::from_millis(500)))
        .timeout_exempt(vec!["sleep 1.5".into()])
        .build()
        .unwrap();
    let m = marker();
    let report = sup
        .run(
            CommandSpec::new(format!("echo x; sleep {m}"), "/"),
            &never(),
        )
        .await
        .unwrap();
    assert!(
        matches!(report.status, CommandStatus::TimedOut { .. }),
        "{:?}",
        report.status
    );
    assert!(
        report.status.to_string().contains("hard limit"),
        "{}",
        report.status
    );
    assert_eq!(report.preview.head, "x\n");
    assert_eq!(sleeps_with(&m), 0);
    assert_eq!(sup.list()[0].status.label(), "timed out");
    let exempt = sup
        .run(
            CommandSpec::new("sleep 1.5 && echo survived", "/"),
            &never(),
        )
        .await
        .unwrap();
    assert_eq!(exempt.status, CommandStatus::Exited { code: 0 });
    assert_eq!(exempt.preview.head, "survived\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_returns_what_was_printed_as_aborted() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let m = marker();
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    let watched = m.clone();
    tokio::spawn(async move {
        wait_until(|| sleeps_with(&watched) == 1).await;
        trigger.cancel();
    });
    let report = sup
        .run(
            CommandSpec::new(format!("echo partial; sleep {m}"), "/"),
            &cancel,
        )
        .await
        .unwrap();
    assert_eq!(
        report.status,
        CommandStatus::Killed {
            reason: KillReason::Cancelled
        }
    );
    assert_eq!(report.status.to_string(), "aborted by user");
    assert_eq!(report.preview.head, "partial\n");
    assert_eq!(sleeps_with(&m), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_observer_sees_every_byte() {
    let state = tempfile::tempdir().unwrap();
    let sup = supervisor(state.path());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let last_total = Arc::new(Mutex::new(0u64));
    let (seen2, total2) = (Arc::clone(&seen), Arc::clone(&last_total));
    let observer = Arc::new(move |delta: OutputDelta<'_>| {
        seen2.lock().unwrap().extend_from_slice(delta.bytes);
        *total2.lock().unwrap() = delta.total_bytes;
    });
    let report = sup
        .run(
            CommandSpec::new("seq 1 50000; echo end >&2", "/").on_output(observer),
            &never(),
        )
        .await
        .unwrap();
    let artifact = std::fs::read(&report.artifact.path).unwrap();
    assert_eq!(*seen.lock().unwrap(), artifact);
    assert_eq!(*last_total.lock().unwrap(), report.total_bytes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ids_continue_after_artifacts_of_an_earlier_run() {
    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("cmd-41"), b"old").unwrap();
    let sup = supervisor(state.path());
    let report = sup
        .run(CommandSpec::new("echo new", "/"), &never())
        .await
        .unwrap();
    assert_eq!(report.id, CommandId(42));
    assert_eq!(std::fs::read(state.path().join("cmd-41")).unwrap(), b"old");
}

/// What lathe-exec hands its caller names none of the caller's tools or settings: the caller
/// words it (issue 13).
const CALLERS_WORDS: [&str; 4] = [
    "command_output",
    "kill_command",
    "list_commands",
    "command_timeout",
];

fn assert_names_no_tool(what: &str, rendered: &str) {
    for word in CALLERS_WORDS {
        assert!(!rendered.contains(word), "{what} names {word}: {rendered}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_13_reports_pages_searches_and_errors_name_no_tool() {
    let state = tempfile::tempdir().unwrap();
    let sup = builder(state.path())
        .max_running(2)
        .artifact_cap(100_000)
        .command_timeout(Some(Duration::from_millis(300)))
        .timeout_exempt(vec!["sleep".into()])
        .build()
        .unwrap();
    let m = marker();
    // Large output: cut preview, past the artifact cap.
    let large = sup
        .run(CommandSpec::new("seq 1 100000", "/"), &never())
        .await
        .unwrap();
    assert!(large.is_cut() && large.total_bytes > large.artifact.kept_bytes);
    assert_names_no_tool("a cut report", &format!("{large:?}"));
    let page = sup.read_output(large.id, 10, Some(100)).await.unwrap();
    assert!(page.more());
    assert_names_no_tool("a page", &format!("{page:?}"));
    let past = sup.read_output(large.id, 1 << 40, None).await.unwrap();
    assert_names_no_tool("a page past the end", &format!("{past:?}"));
    let search = sup.search_output(large.id, "^9", 0, Some(3)).await.unwrap();
    assert!(search.next_offset.is_some());
    assert_names_no_tool("a search", &format!("{search:?}"));
    let literal = sup.search_output(large.id, "(", 0, None).await.unwrap();
    assert!(literal.literal_because.is_some());
    assert_names_no_tool("a literal search", &format!("{literal:?}"));
    // Background, and moved to the background by a soft timeout (both exempt from the hard
    // limit, as they start with `sleep`).
    let background = sup
        .run(
            CommandSpec::new(format!("sleep {m}"), "/").background(),
            &never(),
        )
        .await
        .unwrap();
    assert_names_no_tool("a background report", &format!("{background:?}"));
    let moved = sup
        .run(
            CommandSpec::new(format!("sleep {m}"), "/").soft_timeout(Duration::from_millis(200)),
            &never(),
        )
        .await
        .unwrap();
    assert!(moved.detached.is_some());
    assert_names_no_tool("a moved report", &format!("{moved:?}"));
    let running = sup.read_output(moved.id, 0, None).await.unwrap();
    assert!(running.status.is_running());
    assert_names_no_tool("a page of a running command", &format!("{running:?}"));
    // Errors: too many running, unknown id, empty command.
    let refused = sup
        .run(CommandSpec::new("true", "/"), &never())
        .await
        .unwrap_err();
    assert!(matches!(refused, ExecError::TooManyRunning { .. }));
    let unknown = sup.read_output(CommandId(999), 0, None).await.unwrap_err();
    let empty = sup
        .run(CommandSpec::new(" ", "/"), &never())
        .await
        .unwrap_err();
    let unparsed = "cmd-x".parse::<CommandId>().unwrap_err();
    for error in [&refused, &unknown, &empty, &unparsed] {
        assert_names_no_tool("an error", &format!("{error} / {error:?}"));
    }
    // Kills, the list, and every status in words.
    let killed = sup.kill(background.id).await.unwrap();
    let again = sup.kill(background.id).await.unwrap();
    sup.kill(moved.id).await.unwrap();
    assert_names_no_tool("kill outcomes", &format!("{killed:?} {again:?}"));
    let timed_out = sup
        .run(
            CommandSpec::new(format!("echo x; sleep {m}"), "/"),
            &never(),
        )
        .await
        .unwrap();
    assert!(matches!(timed_out.status, CommandStatus::TimedOut { .. }));
    assert_names_no_tool("a timed-out report", &format!("{timed_out:?}"));
    let list = sup.list();
    assert_names_no_tool("the list", &format!("{list:?}"));
    for summary in &list {
        let status = summary.status;
        assert_names_no_tool("a status", &format!("{status} / {}", status.label()));
    }
    assert_eq!(
        sup.report(background.id).unwrap().status.to_string(),
        "killed on request"
    );
    sup.shutdown().await;
    assert_eq!(sleeps_with(&m), 0);
}
