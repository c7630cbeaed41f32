//! Several real OS processes writing to one database at once.
//!
//! The writers are copies of this test binary running only the ignored `writer` test, which
//! with `WRITER_ENV` set runs one writer.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use lathe_store::{NewSession, SessionFilter, SessionId, Store};
use serde_json::json;

/// Present in a writer process; its value is the database path.
const WRITER_ENV: &str = "LATHE_STORE_TEST_WRITER_DB";
/// Generous: two cores, a noisy machine, and every process taking turns at the write lock.
const DEADLINE: Duration = Duration::from_secs(180);

/// One writer process, started by the tests below (in an ordinary run it has no database and
/// does nothing).
#[test]
#[ignore = "a writer process of the tests in this file, which start it"]
fn writer() {
    if let Ok(db) = std::env::var(WRITER_ENV)
        && let Err(err) = write(Path::new(&db))
    {
        panic!("writer failed: {err}");
    }
}

/// One writer: opens the database, waits for the start signal (so all writers contend), then
/// appends `COUNT` events tagged with its number to each session in `SESSIONS`, and messages to
/// the first; with `SESSIONS=own` it creates its own session first and prints
/// `session <id>`.
fn write(db: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let var = |name: &str| std::env::var(name).map_err(|e| format!("{name}: {e}"));
    let number: u64 = var("WRITER")?.parse()?;
    let count: u64 = var("COUNT")?.parse()?;
    let start = PathBuf::from(var("START")?);
    // Opened as soon as spawned: writers starting a moment apart is what races the creation of
    // a new database (one switching it to WAL or migrating while another opens).
    let store = Store::open(db)?;
    let deadline = Instant::now() + DEADLINE;
    while !start.exists() {
        if Instant::now() > deadline {
            return Err("no start signal".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let sessions: Vec<SessionId> = match var("SESSIONS")?.as_str() {
        "own" => {
            let id = store.create_session(NewSession {
                workspace: "/ws".into(),
                provider: "test".into(),
                model: format!("writer-{number}"),
                approval: "full".into(),
                ..NewSession::default()
            })?;
            println!("session {id}");
            vec![id]
        }
        list => list.split(',').map(SessionId::from).collect(),
    };
    for i in 0..count {
        for session in &sessions {
            store.append_event(session, "write", &json!({"writer": number, "i": i}))?;
        }
        store.append_message(&sessions[0], "user", &json!({"writer": number, "i": i}))?;
    }
    Ok(())
}

fn spawn_writer(db: &Path, start: &Path, number: usize, sessions: &str, count: u64) -> Child {
    let exe = std::env::current_exe().expect("test executable path");
    Command::new(exe)
        .args([
            "concurrent::writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--quiet",
        ])
        .env(WRITER_ENV, db)
        .env("WRITER", number.to_string())
        .env("COUNT", count.to_string())
        .env("START", start)
        .env("SESSIONS", sessions)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn writer")
}

/// Starts the writers together and returns what each printed, failing if any fails or hangs.
fn run_writers(db: &Path, writers: usize, sessions: &str, count: u64) -> Vec<String> {
    let dir = db.parent().expect("db has a parent");
    let start = dir.join("start");
    let mut children: Vec<Child> = (0..writers)
        .map(|n| spawn_writer(db, &start, n, sessions, count))
        .collect();
    std::fs::write(&start, "go").expect("start signal");
    let deadline = Instant::now() + DEADLINE;
    let mut outputs = Vec::new();
    for (n, child) in children.iter_mut().enumerate() {
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait writer") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("writer {n} did not finish within {DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = String::new();
        let mut stderr = String::new();
        child
            .stdout
            .take()
            .map(|mut s| s.read_to_string(&mut stdout));
        child
            .stderr
            .take()
            .map(|mut s| s.read_to_string(&mut stderr));
        assert!(
            status.success(),
            "writer {n} failed ({status}): {stderr}\n{stdout}"
        );
        outputs.push(stdout);
    }
    std::fs::remove_file(&start).expect("remove start signal");
    outputs
}

/// Checks that `items` (writer, i) pairs, in seq order, hold every writer's `0..count` exactly
/// once and in the order that writer wrote them.
fn assert_complete(what: &str, items: &[(u64, u64)], writers: usize, count: u64) {
    let mut next: HashMap<u64, u64> = HashMap::new();
    for &(writer, i) in items {
        let expected = next.entry(writer).or_insert(0);
        assert_eq!(i, *expected, "{what}: writer {writer} out of order");
        *expected += 1;
    }
    assert_eq!(next.len(), writers, "{what}: writers seen");
    assert!(next.values().all(|&n| n == count), "{what}: {next:?}");
}

fn pair(value: &serde_json::Value) -> (u64, u64) {
    (
        value["writer"].as_u64().expect("writer"),
        value["i"].as_u64().expect("i"),
    )
}

fn check_events(store: &Store, id: &SessionId, writers: usize, count: u64) {
    let events = store.events(id).expect("events");
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = (1..=writers as u64 * count).collect();
    assert_eq!(
        seqs, expected,
        "event seqs of {id} are not dense and unique"
    );
    let items: Vec<(u64, u64)> = events.iter().map(|e| pair(&e.payload)).collect();
    assert_complete(&format!("events of {id}"), &items, writers, count);
}

fn check_messages(store: &Store, id: &SessionId, writers: usize, count: u64) {
    let messages = store.messages(id).expect("messages");
    let seqs: Vec<u64> = messages.iter().map(|m| m.seq).collect();
    let expected: Vec<u64> = (1..=writers as u64 * count).collect();
    assert_eq!(
        seqs, expected,
        "message seqs of {id} are not dense and unique"
    );
    let items: Vec<(u64, u64)> = messages.iter().map(|m| pair(&m.body)).collect();
    assert_complete(&format!("messages of {id}"), &items, writers, count);
}

#[test]
fn writers_share_sessions() {
    const WRITERS: usize = 4;
    const COUNT: u64 = 150;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("sessions.sqlite3");
    let store = Store::open(&db).expect("open");
    let new = || NewSession {
        workspace: "/ws".into(),
        provider: "test".into(),
        model: "m".into(),
        approval: "full".into(),
        ..NewSession::default()
    };
    let a = store.create_session(new()).expect("session a");
    let b = store.create_session(new()).expect("session b");

    run_writers(&db, WRITERS, &format!("{a},{b}"), COUNT);

    for id in [&a, &b] {
        check_events(&store, id, WRITERS, COUNT);
    }
    check_messages(&store, &a, WRITERS, COUNT);
    assert!(store.messages(&b).expect("messages of b").is_empty());
}

#[test]
fn writers_race_to_create_the_database() {
    const WRITERS: usize = 8;
    const COUNT: u64 = 25;
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("new/sessions.sqlite3");
    std::fs::create_dir(dir.path().join("new")).expect("mkdir");

    let outputs = run_writers(&db, WRITERS, "own", COUNT);

    let store = Store::open(&db).expect("open");
    let ids: Vec<SessionId> = outputs
        .iter()
        .map(|out| {
            let id = out.lines().find_map(|line| line.strip_prefix("session "));
            SessionId::from(id.unwrap_or_else(|| panic!("no session id printed: {out}")))
        })
        .collect();
    let listed = store
        .list_sessions(&SessionFilter::default())
        .expect("list");
    assert_eq!(listed.len(), WRITERS, "{listed:?}");
    for id in &ids {
        assert!(listed.iter().any(|s| &s.id == id), "{id} not listed");
        check_events(&store, id, 1, COUNT);
        check_messages(&store, id, 1, COUNT);
    }
}
