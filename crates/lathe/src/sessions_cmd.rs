//! `lathe sessions list` and `lathe sessions show ID`: every session, and its transcript.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use lathe_agent::message::Message;
use lathe_agent::sink::stored_history;
use lathe_agent::text::{cut, first_line};
use lathe_store::{Session, SessionFilter, Store};

use crate::render::Style;

/// `lathe sessions`.
#[derive(Debug, Args)]
pub struct SessionsArgs {
    /// What to do.
    #[command(subcommand)]
    pub action: SessionsAction,
}

/// `lathe sessions list|show`.
#[derive(Debug, Subcommand)]
pub enum SessionsAction {
    /// List sessions, the newest first.
    List {
        /// Print a JSON array of sessions.
        #[arg(long)]
        json: bool,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Only sessions of the workspace (the current directory, or --workspace).
        #[arg(long)]
        here: bool,
    },
    /// Show one session's transcript.
    Show {
        /// The session id, or a unique prefix of it.
        id: String,
        /// Print `{"session", "messages", "events"}` as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub use lathe_config::state::open_store;

/// Runs `lathe sessions ...`.
pub fn run(common: &crate::cli::CommonArgs, args: SessionsArgs) -> anyhow::Result<ExitCode> {
    let store = open_store()?;
    let mut out = std::io::stdout().lock();
    match args.action {
        SessionsAction::List { json, limit, here } => {
            let workspace = if here {
                Some(lathe_config::sessions::workspace_root(common)?)
            } else {
                None
            };
            let mut sessions = store.list_sessions(&SessionFilter {
                workspace,
                limit: Some(limit),
            })?;
            for session in &mut sessions {
                settle(&store, session);
            }
            if json {
                serde_json::to_writer_pretty(&mut out, &sessions)?;
                writeln!(out)?;
            } else if sessions.is_empty() {
                writeln!(
                    out,
                    "no sessions yet: start one with `lathe exec \"...\"` or `lathe chat`"
                )?;
            } else {
                let style = Style::for_stdout();
                for (depth, session) in lathe_config::sessions::as_tree(&sessions) {
                    let indent = if depth == 0 { "" } else { "  └ " };
                    writeln!(out, "{indent}{}", list_line(session, &style))?;
                }
            }
        }
        SessionsAction::Show { id, json } => {
            let mut session = store.session(&id)?;
            settle(&store, &mut session);
            let data_dir = lathe_config::state::data_dir();
            if json {
                let value = lathe_config::sessions::show_json(&store, &session, &data_dir)?;
                serde_json::to_writer_pretty(&mut out, &value)?;
                writeln!(out)?;
            } else {
                let history = stored_history(&store, &session.id)?;
                let events = store.events(&session.id)?;
                let calls = Calls::from_events(&events);
                let style = Style::for_stdout();
                if let Some(parent) = &session.parent {
                    writeln!(out, "sub-agent of session {parent}")?;
                }
                write!(out, "{}", transcript(&session, &history, calls, &style))?;
                let children = store.children(&session.id)?;
                if !children.is_empty() {
                    write!(out, "\n{}\n", style.bold("sub-agents"))?;
                    for child in &children {
                        writeln!(out, "  └ {}", list_line(child, &style))?;
                    }
                }
                if let Some(plan) =
                    lathe_agent::stored::last_plan(&events).filter(|p| !p.is_empty())
                {
                    write!(out, "\n{}\n", style.bold("plan"))?;
                    for row in crate::render::plan_lines(&plan).iter().skip(1) {
                        writeln!(out, "{}", crate::render::sanitize(row))?;
                    }
                }
                write!(out, "{}", tokens_section(&events, &style))?;
                write!(
                    out,
                    "\n{}",
                    checkpoints_section(&store, &session, &data_dir, &style)
                )?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The `tokens` section of `sessions show`: one line a turn, `turn 2 · 1,234 in · 56 out ·
/// 41.2 tokens/s`, and the totals; nothing when the server gave no counts.
fn tokens_section(events: &[lathe_store::Event], style: &Style) -> String {
    use lathe_agent::provider::window::thousands;
    let turns = lathe_agent::stored::turn_tokens(events);
    if turns.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{}\n", style.bold("tokens"));
    let count = |n: Option<u64>| n.map_or_else(|| "?".to_owned(), thousands);
    for (turn, usage) in &turns {
        out.push_str(&format!(
            "  turn {turn} · {} in · {} out",
            count(usage.prompt_tokens),
            count(usage.completion_tokens)
        ));
        if let Some(speed) = usage.tokens_per_second() {
            out.push_str(&format!(" · {speed:.1} tokens/s"));
        }
        out.push('\n');
    }
    let input: u64 = turns.iter().filter_map(|(_, u)| u.prompt_tokens).sum();
    let output: u64 = turns.iter().filter_map(|(_, u)| u.completion_tokens).sum();
    out.push_str(&format!(
        "  total · {} in · {} out\n",
        thousands(input),
        thousands(output)
    ));
    out
}

pub use lathe_config::agent_setup::settle;

fn list_line(session: &Session, style: &Style) -> String {
    let when = session.updated_at.to_string();
    let when = when.get(..16).unwrap_or(&when).replace('T', " ");
    let title = session.title.as_deref().unwrap_or("(untitled)");
    format!(
        "{}  {}  {:<11}  {:<20}  {}",
        style.bold(&short_id(session)),
        when,
        session.status.as_str(),
        cut(&session.model, 20),
        cut(title, 60)
    )
}

fn short_id(session: &Session) -> String {
    session.id.as_str().to_owned()
}

pub use lathe_agent::stored::Calls;

/// The last `lines` lines of a session's conversation (its transcript without the header), after a `…` line
/// when earlier ones were left out: what `lathe chat --resume` shows.
pub fn tail(history: &[Message], calls: Calls, style: &Style, lines: usize) -> String {
    let whole = conversation(history, calls, style);
    let body: Vec<&str> = whole.lines().filter(|l| !l.trim().is_empty()).collect();
    let start = body.len().saturating_sub(lines);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&style.dim("…"));
        out.push('\n');
    }
    for line in &body[start..] {
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_owned()
}

/// The transcript of a session, as text: its messages, with each call's line and the diffs
/// of what it changed replayed from its events.
pub fn transcript(session: &Session, history: &[Message], calls: Calls, style: &Style) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{} {}\n",
        style.bold("session"),
        style.bold(session.id.as_str())
    ));
    out.push_str(&format!(
        "{} · {} {} · approval {} · {}\n",
        session.status,
        session.provider,
        session.model,
        session.approval,
        session.workspace.display()
    ));
    out.push_str(&format!(
        "started {} · updated {}\n",
        session.created_at, session.updated_at
    ));
    out.push_str(&conversation(history, calls, style));
    out
}

/// A session's messages as text, each call with its line and the diffs of what it changed.
fn conversation(history: &[Message], mut calls: Calls, style: &Style) -> String {
    // Calls stored without events (a session of an older Lathe) get their tool's title.
    let registry = lathe_config::setup::registry();
    // Results answer the calls in order; the call ids of the events pair them up.
    let mut answering: std::collections::VecDeque<Option<String>> = Default::default();
    let mut out = String::new();
    for message in history {
        match message {
            Message::System { .. } => {}
            Message::User { content, .. } => {
                out.push('\n');
                out.push_str(&style.bold(&format!("> {}", content.trim())));
                out.push('\n');
            }
            Message::Assistant(turn) => {
                if let Some(thinking) = turn.thinking.as_deref().filter(|t| !t.trim().is_empty()) {
                    out.push_str(
                        &style.dim(&format!("(thought: {})", cut(&one_line(thinking), 100))),
                    );
                    out.push('\n');
                }
                if !turn.content.trim().is_empty() {
                    out.push_str(turn.content.trim());
                    out.push('\n');
                }
                for call in &turn.tool_calls {
                    let (id, title) = calls.next_started();
                    let title =
                        title.unwrap_or_else(|| registry.title(&call.name, &call.arguments));
                    out.push_str(&format!("{} {title}\n", style.cyan("→")));
                    answering.push_back(id);
                }
            }
            Message::Tool(result) => {
                let first = first_line(&result.content);
                let lines = result.content.lines().count();
                let more = if lines > 1 {
                    format!(" (+{} lines)", lines - 1)
                } else {
                    String::new()
                };
                out.push_str(&style.dim(&format!(
                    "  {}: {}{more}",
                    result.tool_name,
                    cut(first, 100)
                )));
                out.push('\n');
                let finished = answering
                    .pop_front()
                    .flatten()
                    .and_then(|id| calls.take_finished(&id));
                if let Some((summary, changes)) = finished {
                    out.push_str(&style.dim(&format!("  {summary}")));
                    out.push('\n');
                    for change in &changes {
                        for line in crate::render::diff_lines(style, &change.diff) {
                            out.push_str(&line);
                            out.push('\n');
                        }
                    }
                }
            }
        }
    }
    out
}

/// A session's checkpoints (kept under `data_dir`), opened read for `sessions show`.
fn open_checkpoints(
    store: &Store,
    session: &Session,
    data_dir: &std::path::Path,
) -> Result<lathe_checkpoint::Checkpoints, String> {
    lathe_checkpoint::Checkpoints::of_stored(data_dir, store.clone(), session)
        .map_err(|err| err.to_string())
}

/// The steps of a session's checkpoints with their files, as what `sessions show` prints: one
/// line per step (step, turn, what, files, `+/-`), its files below, and how to undo.
pub fn checkpoints_section(
    store: &Store,
    session: &Session,
    data_dir: &std::path::Path,
    style: &Style,
) -> String {
    let mut out = format!("{}\n", style.bold("checkpoints"));
    let checkpoints = match open_checkpoints(store, session, data_dir) {
        Ok(checkpoints) => checkpoints,
        Err(why) => {
            out.push_str(&format!("  cannot be read: {why}\n"));
            return out;
        }
    };
    let steps = match checkpoints.steps() {
        Ok(steps) => steps,
        Err(err) => {
            out.push_str(&format!("  cannot be read: {err}\n"));
            return out;
        }
    };
    if steps.is_empty() {
        out.push_str("  none: this session changed no files\n");
        return out;
    }
    for (n, step) in steps.iter().enumerate() {
        let files = checkpoints.files(step).unwrap_or_default();
        let added: u64 = files.iter().filter_map(|f| f.added).sum();
        let removed: u64 = files.iter().filter_map(|f| f.removed).sum();
        let what = match &step.kind {
            lathe_checkpoint::StepKind::Turn => "turn".to_owned(),
            lathe_checkpoint::StepKind::Undo { .. } => "undo".to_owned(),
            lathe_checkpoint::StepKind::Redo { .. } => "redo".to_owned(),
        };
        out.push_str(&format!(
            "  step {} · turn {} · {what} · {} file{} +{added} -{removed}\n",
            n + 1,
            step.turn,
            files.len(),
            if files.len() == 1 { "" } else { "s" },
        ));
        for file in &files {
            let counts = match (file.added, file.removed) {
                (Some(a), Some(r)) => format!("+{a} -{r}"),
                _ => "(binary)".to_owned(),
            };
            out.push_str(&style.dim(&format!("    {} {counts}", file.path.display())));
            out.push('\n');
        }
        if !step.left_alone.is_empty() {
            out.push_str(&format!(
                "    left alone (changed since): {}\n",
                step.left_alone
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    let id = session.id.as_str();
    out.push_str(&format!(
        "  undo the newest turn: lathe undo --session {id} (from turn N on: --turn N) · review: lathe diff --session {id}\n"
    ));
    if checkpoints.coverage() == lathe_checkpoint::Coverage::FileTools {
        out.push_str(&format!("  {}\n", checkpoints.coverage().note()));
    }
    out
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_agent::events::{Event, FileChange};
    use lathe_agent::message::{AssistantMessage, ToolCall};
    use lathe_store::{NewSession, SessionId};
    use serde_json::json;

    /// A store with one session, in `/w` with qwen3 in auto mode.
    fn store_with_session(title: Option<&str>) -> (Store, SessionId) {
        let store = Store::open_in_memory().unwrap();
        let id = store
            .create_session(NewSession {
                workspace: "/w".into(),
                provider: "ollama".into(),
                model: "qwen3".into(),
                approval: "auto".into(),
                title: title.map(str::to_owned),
                ..NewSession::default()
            })
            .unwrap();
        (store, id)
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a synchronous test")]
    fn show_lists_a_sessions_checkpoints_and_says_when_there_are_none() {
        let dirs = tempfile::tempdir().unwrap();
        let ws = dirs.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a.txt"), "one\n").unwrap();
        let store = Store::open_in_memory().unwrap();
        let new = |title: &str| NewSession {
            workspace: ws.canonicalize().unwrap(),
            provider: "ollama".into(),
            model: "qwen3".into(),
            approval: "auto".into(),
            title: Some(title.into()),
            ..NewSession::default()
        };
        let data = dirs.path().join("data");
        let idle = store.create_session(new("idle")).unwrap();
        let idle = store.session(idle.as_str()).unwrap();
        let text = checkpoints_section(&store, &idle, &data, &Style::plain());
        assert_eq!(text, "checkpoints\n  none: this session changed no files\n");

        let busy = store.create_session(new("busy")).unwrap();
        let checkpoints = lathe_checkpoint::Checkpoints::builder(&data, &ws, busy.as_str())
            .build()
            .unwrap();
        checkpoints.before_change(1).unwrap();
        std::fs::write(ws.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(ws.join("b.txt"), "b\n").unwrap();
        checkpoints.after_turn(1).unwrap().expect("a step");
        let busy = store.session(busy.as_str()).unwrap();
        let text = checkpoints_section(&store, &busy, &data, &Style::plain());
        assert!(
            text.contains("  step 1 · turn 1 · turn · 2 files +3 -0\n"),
            "{text}"
        );
        assert!(text.contains("    a.txt +2 -0\n"), "{text}");
        assert!(text.contains("    b.txt +1 -0\n"), "{text}");
        assert!(
            text.contains(&format!("lathe undo --session {}", busy.id)),
            "{text}"
        );
    }

    #[test]
    fn transcript_shows_prompts_text_calls_and_results() {
        let (store, id) = store_with_session(Some("fix it"));
        let session = store.session(id.as_str()).unwrap();
        let call = ToolCall::new("read_file", json!({"path": "src/main.rs"}));
        let history = vec![
            Message::system("secret system prompt"),
            Message::user("fix it"),
            Message::Assistant(AssistantMessage {
                content: "Looking.".into(),
                thinking: Some("hmm\nlet me see".into()),
                tool_calls: vec![call.clone()],
            }),
            Message::tool_result(&call, "1\tfn main() {}\n2\t"),
            Message::assistant("Fixed."),
        ];
        let text = transcript(&session, &history, Calls::default(), &Style::plain());
        assert!(text.contains("> fix it\n"), "{text}");
        assert!(text.contains("(thought: hmm let me see)"), "{text}");
        assert!(text.contains("→ read_file src/main.rs\n"), "{text}");
        assert!(
            text.contains("  read_file: 1\tfn main() {} (+1 lines)\n"),
            "{text}"
        );
        assert!(text.ends_with("Fixed.\n"), "{text}");
        assert!(!text.contains("secret system prompt"));
        assert!(
            text.contains("running · ollama qwen3 · approval auto · /w"),
            "{text}"
        );
    }

    #[test]
    fn transcript_replays_titles_and_diffs_from_the_events() {
        let (store, id) = store_with_session(None);
        let diff = "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-old\n+new\n";
        let events = [
            Event::ToolCallStarted {
                call_id: "c1".into(),
                name: "edit_file".into(),
                arguments: json!({"path": "a.rs"}),
                summary: "edit_file a.rs".into(),
            },
            Event::ToolCallFinished {
                call_id: "c1".into(),
                name: "edit_file".into(),
                status: lathe_agent::events::ToolStatus::Ok,
                summary: "edit_file a.rs (+1 -1)".into(),
                stats: None,
                changes: vec![FileChange {
                    path: "a.rs".into(),
                    created: false,
                    deleted: false,
                    added: 1,
                    removed: 1,
                    diff: diff.into(),
                }],
                command: None,
                duration_ms: 3,
            },
        ];
        for event in &events {
            let payload = serde_json::to_value(event).unwrap();
            let kind = payload["type"].as_str().unwrap().to_owned();
            store.append_event(&id, &kind, &payload).unwrap();
        }
        // A call without an id (as Ollama sends them): paired with its events by order.
        let call = ToolCall::new("edit_file", json!({"path": "a.rs", "old_string": "old"}));
        let history = vec![
            Message::user("fix it"),
            Message::Assistant(AssistantMessage {
                content: String::new(),
                thinking: None,
                tool_calls: vec![call.clone()],
            }),
            Message::tool_result(&call, "Edited a.rs (+1 -1)."),
        ];
        let session = store.session(id.as_str()).unwrap();
        let calls = Calls::from_events(&store.events(&id).unwrap());
        let text = transcript(&session, &history, calls, &Style::plain());
        assert!(text.contains("→ edit_file a.rs\n"), "{text}");
        assert!(text.contains("  edit_file a.rs (+1 -1)\n"), "{text}");
        let replayed: String = diff.lines().map(|l| format!("    {l}\n")).collect();
        assert!(text.contains(&replayed), "{text}");
    }
}
