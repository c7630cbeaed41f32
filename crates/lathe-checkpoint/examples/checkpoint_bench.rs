//! The steps `bench/checkpoint.sh` times, one per process, as the agent loop would call them.
//!
//!   checkpoint_bench session DATA WS            creates a session in DATA's database, prints its id
//!   checkpoint_bench begin DATA WS SESSION TURN  the snapshot before a turn's first change
//!   checkpoint_bench end DATA WS SESSION TURN    the snapshot after the turn
#![allow(
    clippy::disallowed_methods,
    reason = "tests and benches drive the blocking entry points from synchronous code"
)]

use std::path::PathBuf;
use std::process::ExitCode;

use lathe_checkpoint::Checkpoints;
use lathe_store::{NewSession, Store};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("checkpoint_bench: {err}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    match args {
        [cmd, data, ws] if cmd == "session" => {
            let store = Store::open(lathe_store::default_database_path(&PathBuf::from(data)))?;
            let id = store.create_session(NewSession {
                workspace: PathBuf::from(ws).canonicalize()?,
                provider: "bench".into(),
                model: "bench".into(),
                approval: "full".into(),
                ..NewSession::default()
            })?;
            println!("{}", id.as_str());
            Ok(())
        }
        [cmd, data, ws, session, turn] if cmd == "begin" || cmd == "end" => {
            let checkpoints = Checkpoints::builder(data, ws, session.as_str()).build()?;
            let turn: u32 = turn.parse()?;
            if cmd == "begin" {
                checkpoints.before_change(turn)?;
            } else {
                checkpoints.after_turn(turn)?;
            }
            Ok(())
        }
        _ => Err("usage: session DATA WS | begin|end DATA WS SESSION TURN".into()),
    }
}
