//! The sandbox beyond writes, with real processes, as root where that is the point: no device
//! nodes, no setuid or setgid bits, no capabilities, no signals to processes outside, no UDP or
//! other non-TCP sockets with the network off, no abstract UNIX sockets outside, no io_uring, no
//! daemon-control variables, and Lathe's own environment unreadable. Each refusal is checked
//! against the same action unsandboxed, which must succeed, so a check cannot pass by accident.
//!
//! When Landlock is missing these tests print why and pass without checking anything; set
//! `LATHE_REQUIRE_SANDBOX=1` to make them fail instead.

use std::ffi::OsString;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Output;

use lathe_exec::sandbox::{NetworkEnforcement, PreparedSandbox};
use lathe_exec::{CommandSpec, Supervisor};
use tokio_util::sync::CancellationToken;

use crate::common;
use crate::common::sandbox::{bash, describe, fixture, is_root, prepare_or_skip};

/// Entries beneath `dir` that are device nodes or carry a setuid or setgid bit.
fn privileged_entries(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            let kind = meta.file_type();
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_char_device()
                || kind.is_block_device()
                || (!kind.is_symlink() && meta.mode() & 0o6000 != 0)
            {
                found.push(format!("{} {:o}", entry.path().display(), meta.mode()));
            }
        }
    }
    found
}

/// Each script tries to leave a device node or a set-id file in its working directory; the
/// flag says whether the unsandboxed control run needs root to do it.
const PRIVILEGED: &[(&str, bool, &str)] = &[
    ("mknod char (kmsg)", true, "mknod kmsg c 1 11"),
    ("mknod block (loop)", true, "mknod loop b 7 0"),
    (
        "python mknod char",
        true,
        "python3 -c 'import os, stat; os.mknod(\"null\", stat.S_IFCHR | 0o666, os.makedev(1, 3))'",
    ),
    ("chmod u+s", false, "touch f && chmod u+s f"),
    ("chmod g+s", false, "touch f && chmod g+s f"),
    ("chmod 6755", false, "touch f && chmod 6755 f"),
    ("install -m 4755", false, "install -m 4755 /bin/true suid"),
    (
        "python fchmod",
        false,
        "python3 -c 'import os; fd = os.open(\"f\", os.O_CREAT | os.O_WRONLY, 0o755); os.fchmod(fd, 0o4755)'",
    ),
    (
        "fchmodat2 syscall",
        false,
        "touch f && python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); r = libc.syscall(452, -100, b\"f\", 0o4755, 0); assert r == 0, os.strerror(ctypes.get_errno())'",
    ),
    (
        "open O_CREAT with 04755",
        false,
        "python3 -c 'import os; os.umask(0); os.close(os.open(\"o\", os.O_CREAT | os.O_WRONLY, 0o4755))'",
    ),
    (
        "mknod regular with setuid",
        false,
        "python3 -c 'import os, stat; os.umask(0); os.mknod(\"r\", stat.S_IFREG | 0o4755)'",
    ),
    (
        "O_TMPFILE with 02755 then link",
        false,
        "python3 -c 'import ctypes, os; os.umask(0); fd = os.open(\".\", os.O_TMPFILE | os.O_WRONLY, 0o2755); r = ctypes.CDLL(None, use_errno=True).linkat(-100, f\"/proc/self/fd/{fd}\".encode(), -100, b\"t\", 0x400); assert r == 0, os.strerror(ctypes.get_errno())'",
    ),
    (
        "tar extracting a setuid file",
        true,
        "tar -xpf \"$ARCHIVE\"",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn device_nodes_and_setid_bits_are_refused_even_as_root() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    // An archive holding a setuid file, made unsandboxed, for the tar case.
    let archive_src = fx.outside.join("archive-src");
    std::fs::create_dir(&archive_src).unwrap();
    std::fs::write(archive_src.join("s"), "x").unwrap();
    std::fs::set_permissions(
        archive_src.join("s"),
        std::fs::Permissions::from_mode(0o4755),
    )
    .unwrap();
    let archive = fx.outside.join("setuid.tar");
    let made = std::process::Command::new("tar")
        .arg("-C")
        .arg(&archive_src)
        .arg("-cf")
        .arg(&archive)
        .arg("s")
        .status()
        .unwrap();
    assert!(made.success());
    for (index, (name, needs_root, script)) in PRIVILEGED.iter().enumerate() {
        let script = format!("export ARCHIVE='{}'; {script}", archive.display());
        for sandboxed in [false, true] {
            if !sandboxed && *needs_root && !is_root() {
                continue;
            }
            let cwd = fx
                .workspace
                .join(format!("{index}-{}", if sandboxed { "s" } else { "c" }));
            std::fs::create_dir(&cwd).unwrap();
            let output = bash(sandboxed.then_some(&sandbox), &cwd, &script).await;
            let found = privileged_entries(&cwd);
            if sandboxed {
                assert!(
                    found.is_empty(),
                    "{name}: the sandbox let it through: {found:?}\n{}",
                    describe(&output)
                );
            } else {
                assert!(
                    !found.is_empty(),
                    "{name}: the control run made nothing\n{}",
                    describe(&output)
                );
            }
        }
    }
    // Ordinary modes still work, and so do the device nodes already there.
    let ordinary = fx.workspace.join("ordinary");
    std::fs::create_dir(&ordinary).unwrap();
    let output = bash(
        Some(&sandbox),
        &ordinary,
        "set -e; touch plain && chmod 755 plain && chmod u-x,g+w plain && chmod -R u+rwX . \
         && mkdir -p d/e && chmod 700 d && mkfifo fifo && echo x > /dev/null && cat /dev/null \
         && head -c 4 /dev/zero | wc -c && head -c 4 /dev/urandom > /dev/null \
         && python3 -c 'import os; print(os.isatty(0))' < /dev/null && stat -c %a plain",
    )
    .await;
    assert!(output.status.success(), "{}", describe(&output));
    assert_eq!(String::from_utf8_lossy(&output.stdout), "4\nFalse\n775\n");
}

fn cap_lines(status: &str) -> Vec<(String, u64)> {
    status
        .lines()
        .filter_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.starts_with("Cap")
                .then(|| (name.to_owned(), u64::from_str_radix(value.trim(), 16).ok()))
                .and_then(|(n, v)| Some((n, v?)))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandboxed_commands_run_with_no_capabilities() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    // The status is read by a program started after the drop, through a second exec, so an
    // exec as root regaining capabilities would show.
    let script = "bash -c 'grep ^Cap /proc/self/status'";
    let sandboxed = bash(Some(&sandbox), &fx.workspace, script).await;
    assert!(sandboxed.status.success(), "{}", describe(&sandboxed));
    let caps = cap_lines(&String::from_utf8_lossy(&sandboxed.stdout));
    assert_eq!(caps.len(), 5, "{}", describe(&sandboxed));
    let own = cap_lines(&std::fs::read_to_string("/proc/self/status").unwrap());
    let had_setpcap = own
        .iter()
        .any(|(name, value)| name == "CapEff" && value & (1 << 8) != 0);
    for (name, value) in &caps {
        if name == "CapBnd" && !had_setpcap {
            continue; // only CAP_SETPCAP may empty the bounding set
        }
        assert_eq!(*value, 0, "{name} in the sandbox: {caps:?}");
    }
    if is_root() {
        let control = bash(None, &fx.workspace, script).await;
        let caps = cap_lines(&String::from_utf8_lossy(&control.stdout));
        assert!(
            caps.iter().any(|(n, v)| n == "CapEff" && *v != 0),
            "a root control run should have capabilities: {caps:?}"
        );

        // A file only CAP_DAC_OVERRIDE lets root read, and a chown only CAP_CHOWN allows.
        let private = fx.outside.join("private");
        std::fs::write(&private, "private\n").unwrap();
        std::os::unix::fs::chown(&private, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o600)).unwrap();
        let read = format!("cat '{}'", private.display());
        let control = bash(None, &fx.workspace, &read).await;
        assert_eq!(String::from_utf8_lossy(&control.stdout), "private\n");
        let sandboxed = bash(Some(&sandbox), &fx.workspace, &read).await;
        assert!(
            !sandboxed.status.success() && sandboxed.stdout.is_empty(),
            "root without CAP_DAC_OVERRIDE read a mode-600 file of another user\n{}",
            describe(&sandboxed)
        );
        let chown = "touch mine && chown 65534 mine";
        let sandboxed = bash(Some(&sandbox), &fx.workspace, chown).await;
        assert!(!sandboxed.status.success(), "{}", describe(&sandboxed));
        assert_eq!(
            std::fs::metadata(fx.workspace.join("mine")).unwrap().uid(),
            0
        );
    }
}

/// `python3 -c` code that tries one socket call per line and prints `name errno` for each
/// (0 when it worked).
const SOCKET_PROBES: &str = r#"
import errno, os, socket, sys
udp_port, tcp_port = int(sys.argv[1]), int(sys.argv[2])
def attempt(name, f):
    try:
        f()
        print(name, 0)
    except OSError as e:
        print(name, e.errno)
def udp_send():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"udp", ("127.0.0.1", udp_port))
def udp6():
    socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
def ping():
    socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP)
def sctp():
    socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)
def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
def fastopen():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.sendto(b"tfo", socket.MSG_FASTOPEN, ("127.0.0.1", tcp_port))
def tcp_socket():
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
def unix_pair():
    a, b = socket.socketpair()
    a.send(b"x"); assert b.recv(1) == b"x"
attempt("udp_send", udp_send)
attempt("udp6", udp6)
attempt("raw", raw)
attempt("ping", ping)
attempt("sctp", sctp)
attempt("packet", packet)
attempt("fastopen", fastopen)
attempt("tcp_socket", tcp_socket)
attempt("unix_pair", unix_pair)
"#;

fn probe_results(output: &Output) -> Vec<(String, i32)> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let (name, errno) = line.split_once(' ')?;
            Some((name.to_owned(), errno.parse().ok()?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_raw_and_other_sockets_are_refused_with_the_network_off() {
    let fx = fixture();
    let Some(off) = prepare_or_skip(&fx.policy) else {
        return;
    };
    if !off.enforcement().seccomp {
        eprintln!("SKIPPED: no seccomp filter here: {}", off.enforcement());
        return;
    }
    assert_eq!(
        off.enforcement().network,
        NetworkEnforcement::TcpAndUdpBlocked
    );
    let on = PreparedSandbox::prepare(&fx.policy.clone().allow_network()).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let script = format!(
        "python3 -c '{}' {} {}",
        SOCKET_PROBES.replace('\'', "'\\''"),
        udp.local_addr().unwrap().port(),
        tcp.local_addr().unwrap().port()
    );

    let blocked = bash(Some(&off), &fx.workspace, &script).await;
    let results = probe_results(&blocked);
    assert_eq!(results.len(), 9, "{}", describe(&blocked));
    for (name, errno) in &results {
        let expected = match name.as_str() {
            "tcp_socket" | "unix_pair" => 0,
            _ => libc::EPERM,
        };
        assert_eq!(*errno, expected, "{name} with the network off: {results:?}");
    }
    let mut buf = [0u8; 16];
    assert!(
        udp.recv_from(&mut buf).is_err(),
        "a datagram left a sandbox with the network off"
    );
    assert!(
        tcp.accept().is_err(),
        "a TCP fast-open connection left a sandbox with the network off"
    );

    // The same probes with the network on: UDP is delivered.
    let allowed = bash(Some(&on), &fx.workspace, &script).await;
    let results = probe_results(&allowed);
    assert!(
        results.contains(&("udp_send".to_owned(), 0)),
        "{}",
        describe(&allowed)
    );
    udp.set_nonblocking(false).unwrap();
    udp.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let (n, _) = udp
        .recv_from(&mut buf)
        .expect("the datagram sent with the network on");
    assert_eq!(&buf[..n], b"udp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abstract_sockets_and_signals_outside_the_sandbox_are_refused() {
    use std::os::linux::net::SocketAddrExt;
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    if !sandbox.enforcement().scoped {
        eprintln!(
            "SKIPPED: landlock ABI {} cannot scope signals and abstract sockets",
            sandbox.enforcement().abi
        );
        return;
    }
    let name = format!("lathe-test-{}", common::marker());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\"); s.send(b\"hi\")'"
    );
    let sandboxed = bash(Some(&sandbox), &fx.workspace, &connect).await;
    assert!(!sandboxed.status.success(), "{}", describe(&sandboxed));
    assert!(
        listener.accept().is_err(),
        "a sandboxed command reached an abstract socket made outside"
    );
    // Abstract sockets made inside the sandbox still work.
    let inside = "python3 -c 'import socket, os
l = socket.socket(socket.AF_UNIX); l.bind(\"\\0lathe-inside-%d\" % os.getpid()); l.listen()
c = socket.socket(socket.AF_UNIX); c.connect(l.getsockname()); c.send(b\"ok\")
print(l.accept()[0].recv(2).decode())'";
    let output = bash(Some(&sandbox), &fx.workspace, inside).await;
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "ok\n",
        "{}",
        describe(&output)
    );
    let control = bash(None, &fx.workspace, &connect).await;
    assert!(control.status.success(), "{}", describe(&control));
    listener.set_nonblocking(false).unwrap();
    listener.accept().expect("the control connection");

    // A process outside the sandbox survives a sandboxed kill -9; a child of the command dies.
    let marker = common::marker();
    let mut outside = std::process::Command::new("sleep")
        .arg(&marker)
        .spawn()
        .unwrap();
    let kill = format!(
        "kill -9 {} ; sleep 1000 & kill -9 $! && wait $!; echo child=$?",
        outside.id()
    );
    let output = bash(Some(&sandbox), &fx.workspace, &kill).await;
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("child=137"),
        "{}",
        describe(&output)
    );
    assert!(
        outside.try_wait().unwrap().is_none(),
        "a sandboxed kill -9 ended a process outside the sandbox\n{}",
        describe(&output)
    );
    let control = bash(None, &fx.workspace, &format!("kill -9 {}", outside.id())).await;
    assert!(control.status.success(), "{}", describe(&control));
    assert!(outside.wait().unwrap().code().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_uring_is_refused_and_openat2_reports_enosys() {
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    if !sandbox.enforcement().seccomp {
        eprintln!("SKIPPED: no seccomp filter here");
        return;
    }
    let script = r#"python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
params = ctypes.create_string_buffer(120)
fd = libc.syscall(425, 4, params)
print("io_uring", 0 if fd >= 0 else ctypes.get_errno())
how = ctypes.create_string_buffer(24)
fd = libc.syscall(437, -100, b"/etc/hostname", how, 24)
print("openat2", 0 if fd >= 0 else ctypes.get_errno())
with open("/etc/hostname") as f: f.read()
print("open", 0)
'"#;
    let sandboxed = bash(Some(&sandbox), &fx.workspace, script).await;
    assert_eq!(
        probe_results(&sandboxed),
        [
            ("io_uring".to_owned(), libc::EPERM),
            ("openat2".to_owned(), libc::ENOSYS),
            ("open".to_owned(), 0)
        ],
        "{}",
        describe(&sandboxed)
    );
    let control = probe_results(&bash(None, &fx.workspace, script).await);
    assert_eq!(control[1], ("openat2".to_owned(), 0), "{control:?}");
    let io_uring_enabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .map(|v| v.trim() == "0")
        .unwrap_or(false);
    if io_uring_enabled {
        assert_eq!(control[0], ("io_uring".to_owned(), 0), "{control:?}");
    }
}

fn env_of(output: &[u8]) -> Vec<(String, String)> {
    String::from_utf8_lossy(output)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn daemon_control_variables_are_removed_from_sandboxed_commands_unless_kept() {
    let fx = fixture();
    let Some(_) = prepare_or_skip(&fx.policy) else {
        return;
    };
    let sandbox =
        PreparedSandbox::prepare(&fx.policy.clone().keep_env(vec!["DOCKER_HOST".into()])).unwrap();
    let state = tempfile::tempdir().unwrap();
    let daemon = [
        ("TMUX", "/tmp/tmux-0/default,123,0"),
        ("TMUX_PANE", "%1"),
        ("STY", "123.pts-0.host"),
        ("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-x/agent.1"),
        ("DISPLAY", ":0"),
        ("WAYLAND_DISPLAY", "wayland-0"),
        ("ZELLIJ_SESSION_NAME", "main"),
        ("VSCODE_IPC_HOOK_CLI", "/tmp/vscode-ipc.sock"),
        ("XDG_RUNTIME_DIR", "/run/user/0"),
    ];
    let secrets = [
        ("DATABASE_URL", "postgres://app:hunter2@db.internal/app"),
        ("NPM_CONFIG__AUTH", "dXNlcjpwYXNz"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/root/key.json"),
        ("MIRROR", "https://example.invalid/x?access_token=abc"),
    ];
    let plain = [
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("HOME", "/root"),
        ("GIT_AUTHOR_NAME", "Ann"),
        ("REPO_URL", "ssh://git@example.invalid/repo"),
    ];
    let mut base: Vec<(OsString, OsString)> = daemon
        .iter()
        .chain(&secrets)
        .chain(&plain)
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    base.push(("DOCKER_HOST".into(), "unix:///var/run/docker.sock".into()));
    let supervisor: Supervisor = common::builder(state.path())
        .base_env(base)
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let run = |spec: CommandSpec| {
        let supervisor = &supervisor;
        let token = &token;
        async move {
            let report = supervisor.run(spec, token).await.unwrap();
            let page = supervisor.read_output(report.id, 0, None).await.unwrap();
            env_of(&page.bytes)
        }
    };
    let sandboxed = run(CommandSpec::new("env", &fx.workspace).sandbox(sandbox)).await;
    let unsandboxed = run(CommandSpec::new("env", &fx.workspace)).await;
    supervisor.shutdown().await;
    let has = |env: &[(String, String)], name: &str| env.iter().any(|(k, _)| k == name);
    for (name, _) in daemon {
        assert!(!has(&sandboxed, name), "{name} reached a sandboxed command");
        assert!(has(&unsandboxed, name), "{name} missing unsandboxed");
    }
    assert!(
        has(&sandboxed, "DOCKER_HOST"),
        "kept by name: {sandboxed:?}"
    );
    for (name, _) in secrets {
        assert!(!has(&sandboxed, name) && !has(&unsandboxed, name), "{name}");
    }
    for (name, value) in plain {
        for env in [&sandboxed, &unsandboxed] {
            assert!(
                env.contains(&(name.to_owned(), value.to_owned())),
                "{name}: {env:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lathe_and_its_guard_are_out_of_a_sandboxed_commands_reach() {
    // Hardening is for the whole process and lasts: alone in a child process, so the other tests
    // keep a dumpable process and this one hardens before any guard is forked, as `lathe` does.
    if !lathe_testkit::alone!().await {
        return;
    }
    let fx = fixture();
    let Some(sandbox) = prepare_or_skip(&fx.policy) else {
        return;
    };
    // What `lathe` does first in main; this child process stands in for it.
    lathe_exec::harden_process().unwrap();
    assert!(!lathe_exec::is_dumpable());
    let state = tempfile::tempdir().unwrap();
    let supervisor = common::supervisor(state.path());
    let token = CancellationToken::new();
    let me = std::process::id();
    // The guard is a fork of this process named lathe-guard (started with the first command).
    let find_guard = "for d in /proc/[0-9]*; do \
         [ \"$(cat $d/comm 2>/dev/null)\" = lathe-guard ] && \
         [ \"$(awk '{print $4}' $d/stat 2>/dev/null)\" = \"$ME\" ] && echo ${d#/proc/}; \
         done | head -n1";
    let script = format!(
        "export ME={me}; guard=$({find_guard}); echo guard=$guard; \
         cat /proc/{me}/environ > /dev/null 2>&1 && echo read-lathe; \
         head -c 1 /proc/{me}/mem > /dev/null 2>&1 && echo read-mem; \
         [ -n \"$guard\" ] && cat /proc/$guard/environ > /dev/null 2>&1 && echo read-guard; \
         [ -n \"$guard\" ] && kill -9 $guard 2>/dev/null && echo killed-guard; \
         kill -0 $guard 2>/dev/null && echo signalled-guard; \
         true"
    );
    let run = |spec: CommandSpec| {
        let supervisor = &supervisor;
        let token = &token;
        async move {
            let report = supervisor.run(spec, token).await.unwrap();
            let page = supervisor.read_output(report.id, 0, None).await.unwrap();
            String::from_utf8_lossy(&page.bytes).into_owned()
        }
    };
    let sandboxed = run(CommandSpec::new(script.clone(), &fx.workspace).sandbox(sandbox)).await;
    let guard: Option<i32> = sandboxed
        .lines()
        .find_map(|l| l.strip_prefix("guard="))
        .and_then(|p| p.trim().parse().ok());
    for forbidden in [
        "read-lathe",
        "read-mem",
        "read-guard",
        "killed-guard",
        "signalled-guard",
    ] {
        assert!(
            !sandboxed.contains(forbidden),
            "{forbidden} from the sandbox:\n{sandboxed}"
        );
    }
    let guard = guard.unwrap_or_else(|| panic!("no guard found:\n{sandboxed}"));
    assert!(
        Path::new(&format!("/proc/{guard}")).exists(),
        "the guard is gone"
    );
    if is_root() {
        // Unsandboxed root commands are unchanged: CAP_SYS_PTRACE still reads a non-dumpable
        // process (only the unsandboxed probe, not the kill, is run).
        let control = run(CommandSpec::new(
            format!("cat /proc/{me}/environ > /dev/null && echo read-lathe"),
            &fx.workspace,
        ))
        .await;
        assert!(control.contains("read-lathe"), "{control}");
    }
    supervisor.shutdown().await;
}
