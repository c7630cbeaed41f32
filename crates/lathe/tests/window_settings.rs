//! Issue 20 through the binary, the settings side: `--context-window N` (over
//! `LATHE_CONTEXT_WINDOW`, over `[model] context_window`), refused with a plain message when it
//! cannot be a window; and chat's `/model NAME`, which asks the server for the new model's
//! window and fits the next requests to it, in the profile for it.

use serde_json::{Value, json};

use lathe_testkit::{PathMatch, Route, Script, ollama};

use crate::agent_harness::*;
use crate::pty::Terminal;

/// The bytes a token is estimated at (the agent's own estimate): a request fits `window`
/// tokens when its messages and tools are under `window * 3.5` bytes.
fn fits(body: &Value, window: u64) -> bool {
    let bytes = body["messages"].to_string().len() + body["tools"].to_string().len();
    (bytes as u64) * 2 < window * 7
}

/// The names of the tools a request offered.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The compact profile: optional tools behind `more_tools`, `apply_patch` among them.
fn is_compact(body: &Value) -> bool {
    let names = tool_names(body);
    names.iter().any(|n| n == "more_tools") && !names.iter().any(|n| n == "apply_patch")
}

fn is_full(body: &Value) -> bool {
    let names = tool_names(body);
    !names.iter().any(|n| n == "more_tools") && names.iter().any(|n| n == "apply_patch")
}

#[test]
fn the_flag_fits_every_request_to_its_window_in_the_compact_profile() {
    // A 30,000-character file read in a 4k window: its result cannot enter whole.
    let h = Harness::new(
        Script::new()
            .chat(
                reply()
                    .tool_call("read_file", json!({"path": "big.txt"}))
                    .done(),
            )
            .chat(reply().text("Read it.").done()),
    );
    let text: String = (0..900)
        .map(|i| format!("line {i:04} of a long file, words\n"))
        .collect();
    assert!(text.len() > 20_000);
    h.write("big.txt", &text);
    let output = h.exec(
        "read big.txt",
        &["--json", "--approval", "auto", "--context-window", "4096"],
    );
    assert_exit(&output, 0);
    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    for body in &bodies {
        // Ollama is sent the window, the request fits it, with the compact definitions.
        assert_eq!(body["options"]["num_ctx"], 4_096);
        assert!(fits(body, 4_096), "{} bytes", body.to_string().len());
        assert!(is_compact(body), "{:?}", tool_names(body));
    }
    let events = json_lines(&output);
    assert_eq!(of_type(&events, "run_result")[0]["context_window"], 4_096);
}

#[test]
fn the_flag_beats_the_environment_which_beats_the_file() {
    let run = |args: &[&str], env: Option<&str>| {
        let h = Harness::new(Script::new().chat(reply().text("Done.").done()));
        h.write(".lathe/config.toml", "[model]\ncontext_window = 8192\n");
        let mut cmd = h.lathe();
        cmd.args([
            "exec",
            "hi",
            "--model",
            MODEL,
            "--base-url",
            &h.server.url(),
        ])
        .args(args)
        .stdin(std::process::Stdio::null());
        if let Some(env) = env {
            cmd.env("LATHE_CONTEXT_WINDOW", env);
        }
        let output = cmd.output().unwrap();
        assert_exit(&output, 0);
        h.bodies().remove(0)
    };
    let file = run(&[], None);
    assert_eq!(file["options"]["num_ctx"], 8_192);
    assert!(is_compact(&file));
    let env = run(&[], Some("12000"));
    assert_eq!(env["options"]["num_ctx"], 12_000);
    // Over 16k: the full definitions.
    let flag = run(&["--context-window", "20000"], Some("12000"));
    assert_eq!(flag["options"]["num_ctx"], 20_000);
    assert!(is_full(&flag), "{:?}", tool_names(&flag));
}

#[test]
fn a_window_that_cannot_be_one_is_refused_with_what_to_give() {
    let h = Harness::new(Script::new());
    for (value, said) in [
        ("0", "a window of 0 tokens holds no request"),
        ("lots", "'lots' is not a number of tokens"),
        ("1000", "a window of 1000 tokens is too small"),
    ] {
        let output = h.exec("hi", &["--context-window", value]);
        assert_exit(&output, 2);
        let err = stderr(&output);
        assert!(
            err.contains("--context-window") && err.contains(said),
            "{err}"
        );
        assert!(err.contains("at least 2,048") || value == "lots", "{err}");
    }
    // In the file or the environment, the same rule, naming where the value came from.
    h.write(".lathe/config.toml", "[model]\ncontext_window = 512\n");
    let output = h.exec("hi", &[]);
    assert_exit(&output, 2);
    let err = stderr(&output);
    assert!(
        err.contains(
            "[model] context_window = 512 in the configuration: a window of 512 tokens is too small"
        ) && err.contains("--context-window TOKENS"),
        "{err}"
    );
    let output = h
        .lathe()
        .args([
            "exec",
            "hi",
            "--model",
            MODEL,
            "--base-url",
            &h.server.url(),
        ])
        .env("LATHE_CONTEXT_WINDOW", "8k")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_exit(&output, 2);
    assert!(
        stderr(&output).contains("LATHE_CONTEXT_WINDOW=8k: '8k' is not a number of tokens"),
        "{}",
        stderr(&output)
    );
    // Nothing was asked of the model.
    assert!(h.bodies().is_empty());
}

/// A server with two models: `small`, served with 8,192 tokens, and the harness's, with
/// 32,768.
fn two_models() -> Script {
    Script::new()
        .always("/api/tags", ollama::tags(&[MODEL, "small"]))
        .route(
            Route::always(
                PathMatch::Exact("/api/show".into()),
                ollama::show(&["completion", "tools"], Some(8_192)),
            )
            .when_body_contains("\"small\""),
        )
}

#[test]
fn model_in_chat_asks_the_new_models_window_and_fits_the_next_request_to_it() {
    let script = two_models()
        .chat(reply().text("First.").done())
        .chat(reply().text("Second.").done())
        .chat(reply().text("Third.").done());
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("hi");
    term.wait_for("First.");
    term.wait_for("context 38/32,768 tokens");
    term.type_line("/model small");
    term.wait_for("model is now small");
    term.wait_for("window now 8,192 tokens (the server's); compact tool profile");
    term.type_line("again");
    term.wait_for("Second.");
    term.wait_for("context 38/8,192 tokens");
    term.type_line("/status");
    term.wait_for(
        "window     8,192 tokens: configured 32,768 (the default), the server's 8,192; compact prompt profile",
    );
    // And back: the configured window, the full definitions.
    term.type_line(&format!("/model {MODEL}"));
    term.wait_for("window now 32,768 tokens (the default); full tool profile");
    term.type_line("once more");
    term.wait_for("Third.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);

    let bodies = h.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(bodies[0]["model"], MODEL);
    assert_eq!(bodies[0]["options"]["num_ctx"], 32_768);
    assert!(is_full(&bodies[0]), "{:?}", tool_names(&bodies[0]));
    // The request after /model small: its window, its profile, and the conversation so far.
    assert_eq!(bodies[1]["model"], "small");
    assert_eq!(bodies[1]["options"]["num_ctx"], 8_192);
    assert!(is_compact(&bodies[1]), "{:?}", tool_names(&bodies[1]));
    assert!(fits(&bodies[1], 8_192));
    let said: Vec<&str> = messages(&bodies[1])
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(said.contains(&"hi") && said.contains(&"First."), "{said:?}");
    // The system prompt is the compact one too: shorter than the first request's.
    let system = |body: &Value| messages(body)[0]["content"].as_str().unwrap().len();
    assert!(system(&bodies[1]) < system(&bodies[0]));
    assert_eq!(bodies[2]["options"]["num_ctx"], 32_768);
    assert!(is_full(&bodies[2]), "{:?}", tool_names(&bodies[2]));
    assert_eq!(system(&bodies[2]), system(&bodies[0]));
}

#[test]
fn a_project_commands_model_is_asked_its_window_for_its_turn_and_the_session_goes_back() {
    // The command's turn runs on `small`, fitted to its window in its profile; the turn after
    // it is the session's again.
    let script = two_models()
        .chat(reply().text("Reviewed.").done())
        .chat(reply().text("Back.").done());
    let h = Harness::new(script);
    h.write(
        ".lathe/commands/review.md",
        "---\nmodel: small\n---\nReview $ARGUMENTS.\n",
    );
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("/review the parser");
    term.wait_for("/review: using model small for this turn");
    term.wait_for("window now 8,192 tokens (the server's); compact tool profile");
    term.wait_for("Reviewed.");
    term.wait_for("window now 32,768 tokens (the default); full tool profile");
    term.type_line("and now?");
    term.wait_for("Back.");
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);

    let bodies = h.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["model"], "small");
    assert_eq!(bodies[0]["options"]["num_ctx"], 8_192);
    assert!(is_compact(&bodies[0]), "{:?}", tool_names(&bodies[0]));
    assert!(fits(&bodies[0], 8_192));
    assert_eq!(bodies[1]["model"], MODEL);
    assert_eq!(bodies[1]["options"]["num_ctx"], 32_768);
    assert!(is_full(&bodies[1]), "{:?}", tool_names(&bodies[1]));
}

#[test]
fn status_shows_the_window_the_requests_are_fitted_to_after_the_server_cut_a_prompt() {
    // The server counts 2,000 of the about 6,000 prompt tokens sent: it cut the prompt, and
    // the next requests are fitted to the 2,048 it kept and wrote, whatever was configured.
    let script = Script::new().chat(reply().text("Hello.").done_with("stop", Some((2_000, 48))));
    let h = Harness::new(script);
    let mut term = Terminal::start(&h, &[]);
    term.wait_for("> ");
    term.type_line("hi");
    term.wait_for("until then, requests are fitted to 2,048 tokens");
    term.wait_for("context 2,048/2,048 tokens (100%)");
    term.type_line("/status");
    term.wait_for(
        "window     2,048 tokens: configured 32,768 (the default), the server's 32,768; full prompt profile",
    );
    term.type_line("/exit");
    assert_eq!(term.wait_exit(), 0);
}
