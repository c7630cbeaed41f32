//! The Landlock sandbox with real processes: writes outside the allowed paths fail by every route
//! we know, writes inside succeed, the network is off unless allowed, and everyday tools work.
//!
//! When Landlock is missing these tests print why and pass without checking anything; set
//! `LATHE_REQUIRE_SANDBOX=1` to make them fail instead (for CI machines known to have it).

use std::net::TcpListener;
use std::path::{Path, PathBuf};

use lathe_exec::sandbox::{NetworkEnforcement, PreparedSandbox, probe};

use crate::common::sandbox::{bash_env, describe, fixture, prepare_or_skip};

const ORIGINAL: &str = "original\n";

/// Whether the outside case directory still holds exactly `target` with its original content.
fn intact(dir: &Path) -> bool {
    let names: Vec<_> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name())
                .collect()
        })
        .unwrap_or_default();
    names == ["target"]
        && std::fs::read_to_string(dir.join("target")).ok().as_deref() == Some(ORIGINAL)
}

/// Each script tries to change `$T` (an existing file outside, holding `ORIGINAL`) or its
/// directory. It runs from a fresh directory inside the workspace.
const ESCAPES: &[(&str, &str)] = &[
    ("direct overwrite", r#"echo pwned > "$T""#),
    ("append", r#"echo pwned >> "$T""#),
    ("new file beside", r#"echo pwned > "$T.new""#),
    ("truncate", r#"truncate -s 0 "$T""#),
    ("rm", r#"rm -f "$T""#),
    ("mkdir beside", r#"mkdir "$(dirname "$T")/newdir""#),
    ("cp onto", r#"cp /etc/hostname "$T""#),
    (
        "dd onto",
        r#"dd if=/dev/zero of="$T" bs=1 count=4 status=none"#,
    ),
    ("sed -i", r#"sed -i s/original/pwned/ "$T""#),
    (
        "symlink to dir",
        r#"ln -s "$(dirname "$T")" link && echo pwned > link/target"#,
    ),
    ("symlink to file", r#"ln -s "$T" link && echo pwned > link"#),
    (
        "hard link then write",
        r#"ln "$T" hard && echo pwned >> hard"#,
    ),
    ("mv workspace file out", r#"echo pwned > f && mv -f f "$T""#),
    ("mv outside file in", r#"mv "$T" ./stolen"#),
    ("child process", r#"bash -c 'echo pwned > "$T"'"#),
    (
        "python child",
        r#"python3 -c 'import os; open(os.environ["T"], "w").write("pwned")'"#,
    ),
    (
        "background subshell",
        r#"( (echo pwned > "$T"; touch bg.done) & ); for i in $(seq 300); do [ -e bg.done ] && break; sleep 0.1; done; wait"#,
    ),
    ("background job", r#"(echo pwned > "$T") & wait"#),
    (
        "setsid nohup",
        r#"setsid nohup sh -c 'echo pwned > "$T"; touch bg.done' >/dev/null 2>&1 & for i in $(seq 300); do [ -e bg.done ] && break; sleep 0.1; done"#,
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_outside_the_allowed_paths_fail_by_every_route() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    for (index, (name, script)) in ESCAPES.iter().enumerate() {
        for sandboxed in [false, true] {
            let tag = format!(
                "{index}-{}",
                if sandboxed { "sandboxed" } else { "control" }
            );
            let cwd = fx.workspace.join(&tag);
            let out_dir = fx.outside.join(&tag);
            std::fs::create_dir(&cwd).unwrap();
            std::fs::create_dir(&out_dir).unwrap();
            let target = out_dir.join("target");
            std::fs::write(&target, ORIGINAL).unwrap();
            let output = bash_env(
                sandboxed.then_some(&sandbox),
                &cwd,
                script,
                &[("T", &target)],
            )
            .await;
            if sandboxed {
                assert!(
                    intact(&out_dir),
                    "{name}: escaped the sandbox\n{}",
                    describe(&output)
                );
            } else {
                // Without the sandbox the same script must do damage, or the check above is void.
                assert!(
                    !intact(&out_dir),
                    "{name}: control run did nothing\n{}",
                    describe(&output)
                );
            }
        }
    }
    // The restriction applied to the children only: this process can still write outside.
    std::fs::write(fx.outside.join("parent-still-free"), "ok").expect("parent stays unrestricted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_inside_the_allowed_paths_succeed() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    let session_tmp = &fx.policy.write_paths[1];
    let script = r#"set -e
        mkdir -p a/b && echo one > a/b/f && echo two >> a/b/f
        mv a/b/f a/g && ln a/g hard && ln -s a/g soft && echo three >> soft
        truncate -s 2 hard && cp a/g copy && rm hard && rmdir a/b && mkfifo fifo
        echo s > "$S/session-file"
        for d in /tmp /var/tmp /dev/shm; do
            [ -d "$d" ] || continue
            t=$(mktemp "$d/lathe-sandbox-test.XXXXXX") && echo t > "$t" && rm "$t"
        done
        echo null > /dev/null; echo to-stderr > /dev/stderr; echo to-stdout > /dev/stdout
        echo done"#;
    let output = bash_env(Some(&sandbox), &fx.workspace, script, &[("S", session_tmp)]).await;
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "to-stdout\ndone\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "to-stderr\n");
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("a/g")).unwrap(),
        "on"
    );
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("copy")).unwrap(),
        "on"
    );
    assert!(!fx.workspace.join("a/b").exists());
    assert_eq!(
        std::fs::read_to_string(session_tmp.join("session-file")).unwrap(),
        "s\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn loopback_tcp_is_blocked_with_network_off_and_allowed_with_it_on() {
    let fx = fixture();
    let Some(off) = prepare_or_skip(&fx.policy) else {
        return;
    };
    if off.enforcement().network == NetworkEnforcement::NotEnforced {
        eprintln!(
            "SKIPPED: kernel landlock ABI {} cannot restrict the network",
            off.enforcement().abi
        );
        return;
    }
    assert!(matches!(
        off.enforcement().network,
        NetworkEnforcement::TcpBlocked | NetworkEnforcement::TcpAndUdpBlocked
    ));
    let on = PreparedSandbox::prepare(&fx.policy.clone().allow_network()).unwrap();
    assert_eq!(on.enforcement().network, NetworkEnforcement::Allowed);

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo hello >&3");
    let bind =
        "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); s.listen()'";

    let blocked = bash_env(Some(&off), &fx.workspace, &connect, &[]).await;
    assert!(
        !blocked.status.success(),
        "connect with network off: {}",
        describe(&blocked)
    );
    assert!(
        listener.accept().is_err(),
        "the listener received a connection from a sandbox with the network off"
    );
    let blocked = bash_env(Some(&off), &fx.workspace, bind, &[]).await;
    assert!(
        !blocked.status.success(),
        "bind with network off: {}",
        describe(&blocked)
    );

    let allowed = bash_env(Some(&on), &fx.workspace, &connect, &[]).await;
    assert!(
        allowed.status.success(),
        "connect with network on: {}",
        describe(&allowed)
    );
    listener.set_nonblocking(false).unwrap();
    listener
        .accept()
        .expect("the connection made with the network on");
    let allowed = bash_env(Some(&on), &fx.workspace, bind, &[]).await;
    assert!(
        allowed.status.success(),
        "bind with network on: {}",
        describe(&allowed)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn git_python_and_cargo_work_inside_the_sandbox() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    // `cargo new` adds the package to an enclosing cargo workspace; where the fixture lives inside
    // one (this repository's target directory), give it a workspace of its own to stop there.
    if fx
        .workspace
        .ancestors()
        .skip(1)
        .any(|dir| dir.join("Cargo.toml").exists())
    {
        std::fs::write(fx.workspace.join("Cargo.toml"), "[workspace]\n").unwrap();
    }
    let home = PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/root".into()));
    let script = r#"set -e
        git init -q repo && cd repo
        echo hello > README && git add README
        git -c user.name=Lathe -c user.email=lathe@example.invalid commit -q -m first
        git log --oneline | grep -q first
        python3 -c 'open("py.txt", "w").write("from python")'
        cd .. && cargo new --vcs none --quiet hello-crate
        test -f hello-crate/Cargo.toml && test -f hello-crate/src/main.rs
        echo ok"#;
    let output = bash_env(Some(&sandbox), &fx.workspace, script, &[("HOME", &home)]).await;
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(
        std::fs::read_to_string(fx.workspace.join("repo/py.txt")).unwrap(),
        "from python"
    );
    assert!(fx.workspace.join("repo/.git/HEAD").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_concurrent_sandboxed_spawns_from_a_busy_runtime() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    // Other threads allocate while we fork, which is what would deadlock a child that allocates.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::black_box(vec![0u8; 4096]);
                }
            })
        })
        .collect();
    let mut tasks = Vec::new();
    for i in 0..32 {
        let sandbox = sandbox.clone();
        let ws = fx.workspace.clone();
        let outside = fx.outside.clone();
        tasks.push(tokio::spawn(async move {
            let script =
                format!(r#"echo in > inside-{i} && ! echo out 2>/dev/null > "$O/out-{i}""#);
            bash_env(Some(&sandbox), &ws, &script, &[("O", &outside)]).await
        }));
    }
    let deadline = std::time::Duration::from_secs(120);
    for task in tasks {
        let output = tokio::time::timeout(deadline, task)
            .await
            .expect("spawn finished")
            .unwrap();
        assert!(output.status.success(), "{}", describe(&output));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    churn.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(std::fs::read_dir(&fx.outside).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(&fx.workspace).unwrap().count(), 32);
}

#[test]
fn std_command_install_confines_writes() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    let target = fx.outside.join("std-target");
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"echo inside > ok && echo pwned > "$T""#)
        .env("T", &target);
    cmd.current_dir(&fx.workspace);
    sandbox.install_std(&mut cmd);
    let output = cmd.output().unwrap();
    assert!(!output.status.success(), "{}", describe(&output));
    assert!(fx.workspace.join("ok").exists());
    assert!(!target.exists());
}

#[test]
fn probe_reports_what_prepare_enforces() {
    let support = probe();
    let fx = fixture();
    match PreparedSandbox::prepare(&fx.policy) {
        Ok(prepared) => {
            assert_eq!(support.abi(), Some(prepared.enforcement().abi));
            assert!(
                prepared.skipped_paths().is_empty(),
                "{:?}",
                prepared.skipped_paths()
            );
            assert_eq!(
                prepared.enforcement().is_complete(),
                support.message().is_none()
            );
        }
        Err(error) => {
            assert!(!support.is_available());
            assert_eq!(Some(error.to_string()), support.message());
        }
    }
}
