//! `lathe exec` on a real terminal while a native call is generated: the thinking line
//! collapses at once and the spinner names the file being written.

use std::time::Duration;

use lathe_testkit::{Script, openai};

use crate::agent_harness::*;
use crate::pty::exec_on_terminal;

#[test]
fn the_spinner_says_which_file_is_being_written_while_the_call_streams() {
    let first = openai::turn(MODEL)
        .reasoning("The notes go in notes.md.")
        .tool_call_start(0, "call_1", "write_file")
        .tool_call_arguments(0, "{\"path\": \"notes.md\", \"content\": \"# No")
        .unfinished()
        // The model is still writing the content: long enough for the spinner to be drawn.
        .delay(Duration::from_secs(2));
    let mut first = first;
    for event in openai::turn(MODEL)
        .tool_call_arguments(0, "tes\\n\"}")
        .finish("tool_calls")
        .done()
        .parts
    {
        first.parts.push(event);
    }
    let script = Script::new().openai_models(&[MODEL]).chat(first).chat(
        openai::turn(MODEL)
            .text("I wrote the notes file.")
            .finish("stop")
            .done(),
    );
    let h = Harness::new(script);
    let url = format!("{}/v1", h.server.url());
    let (screen, code) = exec_on_terminal(
        &h,
        &[
            "write the notes",
            "--provider",
            "openai",
            "--base-url",
            &url,
            "--model",
            MODEL,
            "--approval",
            "auto",
        ],
    );
    assert_eq!(code, 0, "{screen}");
    assert_eq!(h.read("notes.md"), "# Notes\n");
    let thought = screen.find("Thought for").expect(&screen);
    let writing = screen.find("Writing notes.md…").expect(&screen);
    let done = screen.find("I wrote the notes file.").expect(&screen);
    assert!(thought < writing && writing < done, "{screen}");
}
