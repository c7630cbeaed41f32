//! `scripted-model-server SCRIPT.json [--record FILE]`: serves a script on a free loopback
//! port, prints the port on stdout, and runs until stdin reaches end of file. With `--record`,
//! the recorded requests are written to FILE as a JSON array when it stops; they can also be
//! read while it runs from `GET /__scripted/requests`.

use lathe_testkit::{Script, ScriptedServer};
use std::io::{Read, Write};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (script_path, record) = match args.as_slice() {
        [script] => (script.clone(), None),
        [script, flag, file] if flag == "--record" => (script.clone(), Some(file.clone())),
        _ => {
            eprintln!("usage: scripted-model-server SCRIPT.json [--record FILE]");
            return ExitCode::from(2);
        }
    };
    let script: Script = match std::fs::read_to_string(&script_path)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str(&text).map_err(|e| e.to_string()))
    {
        Ok(script) => script,
        Err(e) => {
            eprintln!("scripted-model-server: cannot read script '{script_path}': {e}");
            return ExitCode::from(2);
        }
    };
    let server = match ScriptedServer::start(script) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("scripted-model-server: cannot start: {e}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", server.port());
    let _ = std::io::stdout().flush();
    // Runs until the parent closes our stdin (or dies): no stray servers after a test.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    if let Some(file) = record {
        let json = serde_json::to_string_pretty(&server.requests()).unwrap_or_default();
        if let Err(e) = std::fs::write(&file, json) {
            eprintln!("scripted-model-server: cannot write '{file}': {e}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
