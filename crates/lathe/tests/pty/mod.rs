//! The real `lathe` on a pseudo-terminal, for every test of what a terminal shows: [`Terminal`]
//! spawns it with its output on a new pty and keeps what the screen received; the test types
//! into the other end, waits for text, and reads the screen.
//!
//! Three ways to attach ([`Attach`]): the chat's (the pty is stdin too and the controlling
//! terminal of a session of its own, so that Ctrl-C typed is a real SIGINT), and `lathe exec`'s
//! with stdin closed (nobody to ask), in the test's session or in one of its own. A question
//! asked on a terminal with the answer piped back is [`with_terminal_stdin`].

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::agent_harness::*;

/// Generous: the machine is slow and shared. Nothing here asserts a duration.
pub(crate) const DEADLINE: Duration = Duration::from_secs(60);

/// How the process meets the terminal.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attach {
    /// stdin, stdout and stderr on the terminal, which is the controlling terminal of the
    /// process's own session.
    Controlling,
    /// stdout and stderr on the terminal, stdin closed.
    OutputOnly,
    /// As [`Attach::OutputOnly`], in a session of its own.
    OutputOnlyOwnSession,
}

/// `lathe` on a pseudo-terminal, and what it showed.
pub(crate) struct Terminal {
    pub(crate) child: Child,
    master: std::fs::File,
    screen: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
}

impl Terminal {
    /// `lathe chat` with the model flags and `args`.
    pub(crate) fn start(h: &Harness, args: &[&str]) -> Terminal {
        Terminal::start_with_env(h, args, &[])
    }

    /// As [`Terminal::start`], with `env` set for the chat.
    pub(crate) fn start_with_env(h: &Harness, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let url = h.server.url();
        let mut all = vec!["chat", "--model", MODEL, "--base-url", &url];
        all.extend_from_slice(args);
        Terminal::run(h, &all, env)
    }

    /// `lathe exec PROMPT` with the model flags and `args`, the terminal its stdin too.
    pub(crate) fn exec(h: &Harness, prompt: &str, args: &[&str]) -> Terminal {
        let url = h.server.url();
        let mut all = vec!["exec", prompt, "--model", MODEL, "--base-url", &url];
        all.extend_from_slice(args);
        Terminal::run(h, &all, &[])
    }

    /// `lathe ARGS` on a terminal that is its controlling terminal.
    fn run(h: &Harness, args: &[&str], env: &[(&str, &str)]) -> Terminal {
        let mut cmd = h.lathe();
        cmd.args(args);
        for (name, value) in env {
            cmd.env(name, value);
        }
        Terminal::spawn(cmd, Attach::Controlling)
    }

    /// `cmd` on a new pseudo-terminal, attached as `attach` says (with `NO_COLOR` and
    /// `TERM=xterm`).
    pub(crate) fn spawn(mut cmd: Command, attach: Attach) -> Terminal {
        let pty = nix::pty::openpty(None, None).expect("openpty");
        let slave: OwnedFd = pty.slave;
        cmd.env("NO_COLOR", "1").env("TERM", "xterm");
        let stdin = match attach {
            Attach::Controlling => Stdio::from(slave.try_clone().unwrap()),
            Attach::OutputOnly | Attach::OutputOnlyOwnSession => Stdio::null(),
        };
        cmd.stdin(stdin)
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        if attach != Attach::OutputOnly {
            let controlling = attach == Attach::Controlling;
            // SAFETY: only async-signal-safe calls between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    if libc::setsid() < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    if controlling && libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let child = cmd.spawn().expect("spawn lathe");
        // The slave's last copies go with the command: the reader sees the end once the
        // child's are closed.
        drop(cmd);
        let master = std::fs::File::from(pty.master);
        let screen = Arc::new(Mutex::new(String::new()));
        let mut reader = master.try_clone().unwrap();
        let shown = Arc::clone(&screen);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match reader.read(&mut buf) {
                    // EIO once the last writer (the child) is gone.
                    Ok(0) | Err(_) => break,
                    Ok(n) => shown
                        .lock()
                        .unwrap()
                        .push_str(&String::from_utf8_lossy(&buf[..n])),
                }
            }
        });
        Terminal {
            child,
            master,
            screen,
            reader: Some(reader),
        }
    }

    pub(crate) fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until `text` has appeared `count` times on the screen.
    pub(crate) fn wait_for_n(&self, text: &str, count: usize) {
        self.wait_within(text, count, DEADLINE);
    }

    /// Waits until `text` has appeared on the screen, for at most `deadline`.
    pub(crate) fn wait_for_within(&self, text: &str, deadline: Duration) {
        self.wait_within(text, 1, deadline);
    }

    fn wait_within(&self, text: &str, count: usize, deadline: Duration) {
        let start = Instant::now();
        while self.screen().matches(text).count() < count {
            assert!(
                start.elapsed() < deadline,
                "waited for {text:?} x{count}; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until `text` has appeared after the last `marker` on the screen (a prompt after
    /// an answer, say).
    pub(crate) fn wait_for_after(&self, marker: &str, text: &str) {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if let Some(at) = screen.rfind(marker)
                && screen[at + marker.len()..].contains(text)
            {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "waited for {text:?} after {marker:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn wait_for(&self, text: &str) {
        self.wait_for_n(text, 1);
    }

    /// Types `bytes` as they are (keys, escape sequences), without Enter.
    pub(crate) fn type_raw(&mut self, bytes: &str) {
        self.master.write_all(bytes.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    pub(crate) fn type_line(&mut self, line: &str) {
        self.master.write_all(line.as_bytes()).unwrap();
        self.master.write_all(b"\r").unwrap();
        self.master.flush().unwrap();
    }

    /// The terminal's line settings now (the master shares them with the chat's side).
    pub(crate) fn local_flags(&self) -> nix::sys::termios::LocalFlags {
        nix::sys::termios::tcgetattr(&self.master)
            .expect("tcgetattr")
            .local_flags
    }

    pub(crate) fn ctrl_c(&mut self) {
        self.master.write_all(b"\x03").unwrap();
        self.master.flush().unwrap();
    }

    pub(crate) fn wait_exit(&mut self) -> i32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                start.elapsed() < DEADLINE,
                "lathe chat did not exit; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to end by itself, however long, then for the rest of what it
    /// wrote: everything the terminal received, and the exit code.
    pub(crate) fn finish(mut self) -> (String, i32) {
        let code = self.child.wait().unwrap().code().unwrap_or(-1);
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        (self.screen(), code)
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `cmd` with a terminal on stdin only (its output piped), `typed` typed into it first (the
/// terminal keeps the line until the process reads it): what it wrote, and how it exited.
pub(crate) fn with_terminal_stdin(mut cmd: Command, typed: &str) -> Output {
    let pty = nix::pty::openpty(None, None).expect("openpty");
    let mut master = std::fs::File::from(pty.master);
    let child = cmd
        .stdin(Stdio::from(pty.slave))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The slave's last copy goes with the command.
    drop(cmd);
    master.write_all(typed.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// `lathe exec ARGS` with its output on a terminal and stdin closed (nobody to ask), run to
/// its end: everything the terminal received, and the exit code.
pub(crate) fn exec_on_terminal(h: &Harness, args: &[&str]) -> (String, i32) {
    let mut cmd = h.lathe();
    cmd.arg("exec").args(args);
    Terminal::spawn(cmd, Attach::OutputOnly).finish()
}

/// Waits until the server has received `count` chat requests.
pub(crate) fn wait_for_requests(h: &Harness, term: &Terminal, count: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let bodies = h.bodies();
        if bodies.len() >= count {
            return bodies;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{} of {count} requests; the screen:\n{}",
            bodies.len(),
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the newest session's events hold `runs` finished runs, and returns them.
pub(crate) fn wait_for_run_end(h: &Harness, runs: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let events = h.stored_events();
        if of_type(&events, "run_finished").len() >= runs {
            return events;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the run did not end: {events:#?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
