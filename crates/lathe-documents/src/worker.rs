//! The worker side of the isolation: a process that reads one request on stdin, converts in
//! process and writes the answer on stdout. The parent sets its limits before it starts.
//!
//! A binary offers it behind a hidden subcommand and tells the library where it is:
//!
//! ```no_run
//! fn main() -> std::process::ExitCode {
//!     if std::env::args().nth(1).as_deref() == Some("__document-worker") {
//!         return lathe_documents::worker::serve();
//!     }
//!     if let Ok(me) = std::env::current_exe() {
//!         lathe_documents::set_default_worker(me, vec!["__document-worker".into()]);
//!     }
//!     // ... the program
//!     std::process::ExitCode::SUCCESS
//! }
//! ```

use std::io::{Read, Write};
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::isolate::panic_message;
use crate::{Document, Error, Format, Selection, convert_in_process};

/// The first line of the worker's stdin, before the document's bytes.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Request {
    pub(crate) format: Format,
    pub(crate) pages: String,
}

/// The worker's stdout.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Reply {
    Done(Document),
    Failed(Error),
}

/// Serves one request: reads the header line and the document from stdin, writes the reply
/// to stdout. A panic becomes a [`Error::Crashed`] reply; a crash the process cannot survive
/// (abort, out of memory, a signal) is read by the parent from how it ended.
pub fn serve() -> ExitCode {
    // The parent words failures; a panic's default report on stderr would only be noise.
    std::panic::set_hook(Box::new(|_| {}));
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().lock().read_to_end(&mut input) {
        eprintln!("lathe document worker: cannot read the request: {e}");
        return ExitCode::from(2);
    }
    let Some(newline) = input.iter().position(|&b| b == b'\n') else {
        eprintln!("lathe document worker: the request has no header line");
        return ExitCode::from(2);
    };
    let request: Request = match serde_json::from_slice(&input[..newline]) {
        Ok(request) => request,
        Err(e) => {
            eprintln!("lathe document worker: bad request header: {e}");
            return ExitCode::from(2);
        }
    };
    let bytes = &input[newline + 1..];
    let reply = match request.pages.parse::<Selection>() {
        Err(e) => Reply::Failed(Error::Selection(e.0)),
        Ok(selection) => {
            match std::panic::catch_unwind(|| convert_in_process(bytes, request.format, &selection))
            {
                Ok(Ok(document)) => Reply::Done(document),
                Ok(Err(error)) => Reply::Failed(error),
                Err(panic) => Reply::Failed(Error::Crashed {
                    format: request.format.name().into(),
                    detail: format!("it panicked: {}", panic_message(&*panic)),
                }),
            }
        }
    };
    let mut stdout = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut stdout, &reply)
        .map_err(std::io::Error::from)
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lathe document worker: cannot write the reply: {e}");
            ExitCode::from(2)
        }
    }
}
