//! Stored sessions as the front ends read them back: the one a command names when it names
//! none (the newest of the workspace), a list with each sub-agent under its parent, a session's
//! whole record as `lathe sessions show --json` prints it, its token totals, and what a resumed
//! session was started with. No terminal: the binary words and styles what these return.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{Value, json};

use lathe_agent::events::Event;
use lathe_agent::provider::ProviderKind;
use lathe_store::{Session, SessionFilter, SessionId, Store};

use crate::CommonArgs;
use crate::agent_setup::{ModelArgs, parse_provider};

/// The name a session records for its provider, the one `--provider` takes.
pub fn provider_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Ollama => "ollama",
        ProviderKind::OpenAi => "openai",
    }
}

/// The workspace a command means: `--workspace`, else the default one (see
/// [`crate::setup::default_workspace`]), canonical where it can be made so, as sessions
/// record it.
pub fn workspace_root(common: &CommonArgs) -> anyhow::Result<PathBuf> {
    let root = match &common.workspace {
        Some(dir) => dir.clone(),
        None => crate::setup::default_workspace()?,
    };
    Ok(root.canonicalize().unwrap_or(root))
}

/// The newest session that ran in `root`: what `lathe undo`, `redo` and `diff` take without
/// `--session`.
pub fn newest_in(store: &Store, root: &Path) -> anyhow::Result<Session> {
    store
        .list_sessions(&SessionFilter {
            workspace: Some(root.to_owned()),
            limit: Some(1),
        })?
        .into_iter()
        .next()
        .with_context(|| {
            format!(
                "no session has run in {}: name one with --session ID (see `lathe sessions list`)",
                root.display()
            )
        })
}

/// `sessions` in their order, each followed by those of its sub-agents that are listed too
/// (depth 1); a sub-agent whose parent is not listed stands on its own (depth 0).
pub fn as_tree(sessions: &[Session]) -> Vec<(usize, &Session)> {
    let listed = |id: &SessionId| sessions.iter().any(|s| &s.id == id);
    let mut rows = Vec::new();
    for session in sessions {
        if session.parent.as_ref().is_some_and(listed) {
            continue;
        }
        rows.push((0, session));
        let mut children: Vec<&Session> = sessions
            .iter()
            .filter(|s| s.parent.as_ref() == Some(&session.id))
            .collect();
        children.sort_by(|a, b| a.id.as_str().cmp(b.id.as_str()));
        rows.extend(children.into_iter().map(|c| (1, c)));
    }
    rows
}

/// What a resumed session was started with, where no flag says otherwise: the model, the
/// provider, its server and the approval mode (the configuration and environment apply only
/// to what the session did not record).
pub fn restore_model_args(args: &mut ModelArgs, session: &Session) {
    args.model = args.model.take().or_else(|| Some(session.model.clone()));
    if args.provider.is_none() {
        args.provider = parse_provider(&session.provider).ok();
    }
    if args.base_url.is_none() {
        args.base_url = session.extra["base_url"].as_str().map(str::to_owned);
    }
    if args.approval.is_none() {
        args.approval = session.approval.parse().ok();
    }
}

/// Token counts of a session, from its stored turns.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Tokens {
    /// Prompt tokens, summed over the turns.
    pub input: u64,
    /// Generated tokens, summed over the turns.
    pub output: u64,
    /// The last turn's prompt and output, when the server counted them: what the window holds.
    pub last: Option<u64>,
    /// The last turn's generated tokens per second, when the server timed it.
    pub speed: Option<f64>,
}

impl Tokens {
    /// Adds up the turns among `events` (events that do not read back are skipped).
    pub fn from_events(events: &[lathe_store::Event]) -> Tokens {
        let mut tokens = Tokens::default();
        for stored in events {
            if let Ok(Event::TurnFinished {
                usage: Some(usage), ..
            }) = serde_json::from_value::<Event>(stored.payload.clone())
            {
                let input = usage.prompt_tokens.unwrap_or(0);
                let output = usage.completion_tokens.unwrap_or(0);
                tokens.input += input;
                tokens.output += output;
                if usage.prompt_tokens.is_some() {
                    tokens.last = Some(input + output);
                }
                if let Some(speed) = usage.tokens_per_second() {
                    tokens.speed = Some(speed);
                }
            }
        }
        tokens
    }
}

/// A session's whole record, as `lathe sessions show --json` prints it: `{"session",
/// "sub_agents", "messages", "events", "checkpoints", "plan", "tokens"}`. Its checkpoints are
/// kept under `data_dir`.
pub fn show_json(store: &Store, session: &Session, data_dir: &Path) -> anyhow::Result<Value> {
    let messages = store.messages(&session.id)?;
    let events = store.events(&session.id)?;
    let checkpoints = checkpoints_json(store, session, data_dir);
    let plan = lathe_agent::stored::last_plan(&events);
    let tokens: Vec<Value> = lathe_agent::stored::turn_tokens(&events)
        .into_iter()
        .map(|(turn, usage)| {
            let mut row = json!({"turn": turn});
            if let (Some(row), Value::Object(counts)) = (row.as_object_mut(), json!(usage)) {
                row.extend(counts);
            }
            row
        })
        .collect();
    let children: Vec<String> = store
        .children(&session.id)?
        .into_iter()
        .map(|c| c.id.as_str().to_owned())
        .collect();
    Ok(json!({
        "session": session,
        "sub_agents": children,
        "messages": messages,
        "events": events,
        "checkpoints": checkpoints,
        "plan": plan,
        "tokens": tokens,
    }))
}

/// The steps of a session's checkpoints (kept under `data_dir`) with their files; `null` when
/// they cannot be opened or read.
fn checkpoints_json(store: &Store, session: &Session, data_dir: &Path) -> Value {
    lathe_checkpoint::Checkpoints::of_stored(data_dir, store.clone(), session)
        .map_or(Value::Null, |checkpoints| {
            lathe_checkpoint::report::steps_json(&checkpoints)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use lathe_store::NewSession;

    #[test]
    fn list_puts_sub_agents_under_their_parent() {
        let store = Store::open_in_memory().unwrap();
        let parent = store
            .create_session(NewSession {
                workspace: "/w".into(),
                provider: "ollama".into(),
                model: "qwen3".into(),
                approval: "auto".into(),
                title: Some("parent".into()),
                ..NewSession::default()
            })
            .unwrap();
        let child = |title: &str| {
            store
                .create_session(NewSession {
                    workspace: "/w".into(),
                    title: Some(title.into()),
                    parent: Some(parent.clone()),
                    ..NewSession::default()
                })
                .unwrap()
        };
        let (first, second) = (child("first"), child("second"));
        // Newest first, as `list` gives them.
        let sessions = store.list_sessions(&SessionFilter::default()).unwrap();
        let rows: Vec<(usize, String)> = as_tree(&sessions)
            .into_iter()
            .map(|(depth, s)| (depth, s.id.as_str().to_owned()))
            .collect();
        assert_eq!(
            rows,
            [
                (0, parent.as_str().to_owned()),
                (1, first.as_str().to_owned()),
                (1, second.as_str().to_owned()),
            ]
        );
        // A sub-agent whose parent is not listed stands on its own.
        let only_child: Vec<Session> = sessions.into_iter().filter(|s| s.id == second).collect();
        assert_eq!(as_tree(&only_child)[0].0, 0);
    }

    #[test]
    #[expect(clippy::disallowed_methods, reason = "a synchronous test")]
    fn the_json_lists_a_sessions_checkpoint_steps_with_their_files() {
        let dirs = tempfile::tempdir().unwrap();
        let ws = dirs.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("a.txt"), "one\n").unwrap();
        let store = Store::open_in_memory().unwrap();
        let data = dirs.path().join("data");
        let busy = store
            .create_session(NewSession {
                workspace: ws.canonicalize().unwrap(),
                provider: "ollama".into(),
                model: "qwen3".into(),
                approval: "auto".into(),
                title: Some("busy".into()),
                ..NewSession::default()
            })
            .unwrap();
        let checkpoints = lathe_checkpoint::Checkpoints::builder(&data, &ws, busy.as_str())
            .build()
            .unwrap();
        checkpoints.before_change(1).unwrap();
        std::fs::write(ws.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::write(ws.join("b.txt"), "b\n").unwrap();
        checkpoints.after_turn(1).unwrap().expect("a step");
        let busy = store.session(busy.as_str()).unwrap();
        let json = checkpoints_json(&store, &busy, &data);
        assert_eq!(json[0]["files"][0]["path"], "a.txt", "{json}");
        assert_eq!(json[0]["turn"], 1, "{json}");
        let shown = show_json(&store, &busy, &data).unwrap();
        assert_eq!(shown["checkpoints"], json, "{shown}");
    }
}
