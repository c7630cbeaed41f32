//! Keeping a conversation inside the model's context window.
//!
//! Every request is estimated in tokens before it is sent. When the estimate nears the window,
//! every tool result the model has seen is shortened first, each to a one-line summary that
//! keeps any artifact id so the model can read the output again (all of them in one pass, so
//! that passes are rare and the requests between them extend each other); only when that is
//! not enough are old thinking and then old long texts cut. Messages are never removed: each tool call keeps its
//! result, so the history stays well-formed for every server.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::message::Message;

/// Shortening starts when a request is estimated above this share of the window...
const TRIGGER_PERCENT: u64 = 75;
/// ...and goes on until it is under this share, so that the next requests share a long,
/// unchanged prefix (servers cache it) instead of shortening one result per turn.
pub(crate) const TARGET_PERCENT: u64 = 50;
/// Tokens counted for each message's framing (role, separators).
const MESSAGE_OVERHEAD_TOKENS: u64 = 4;
/// Tokens of one image, estimated: a vision encoder makes about one token per 28x28 patch, and
/// `read_file` sends at most 1568 pixels on the longest side (56x32 patches for 16:9).
const IMAGE_TOKENS: u64 = 1_800;
/// Old texts longer than this are cut in the last resort, keeping their head.
const LONG_TEXT_CHARS: usize = 2_000;
/// Longest one-line summary kept from a result's first line.
const SUMMARY_CHARS: usize = 160;
/// The estimate only ever grows from what the server reports, and at most by this factor.
const MAX_CALIBRATION: f64 = 3.0;

/// What the runner knew about a result when it was made: its one-line summary and the ids of
/// what it left behind (artifacts, saved results).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultNote {
    /// `shell cargo test -> exit 0, 3.2 s`.
    pub summary: String,
    /// Artifact ids and saved-result paths the model can use to read the output again.
    pub artifacts: Vec<String>,
}

impl ResultNote {
    /// A note from a call's summary and its result metadata: what it saved (a cut result's
    /// file, a command's output artifact) and the command whose output can be read again.
    pub fn new(summary: impl Into<String>, metadata: &lathe_runtime::Metadata) -> Self {
        let mut artifacts = Vec::new();
        // The shell names the artifact that keeps a command's whole output.
        if let Some(Value::String(artifact)) = metadata.extra("artifact")
            && !artifact.is_empty()
        {
            artifacts.push(artifact.clone());
        }
        artifacts.extend(metadata.full_result.clone());
        // A command's id is how command_output reads its output again.
        if let Some(command) = &metadata.command {
            artifacts.push(format!("command_output id={}", command.id));
        }
        ResultNote {
            summary: summary.into(),
            artifacts,
        }
    }
}

/// What one shortening pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shortening {
    /// The estimate before, in tokens.
    pub before: u64,
    /// The estimate after.
    pub after: u64,
    /// How many tool results were shortened.
    pub results: usize,
    /// How many other messages were cut (thinking dropped, long text cut).
    pub others: usize,
}

/// The model's window and what is known about the history's results.
#[derive(Debug, Clone)]
pub struct ContextWindow {
    window: u64,
    calibration: f64,
    notes: HashMap<usize, ResultNote>,
}

impl ContextWindow {
    /// A window of `window` tokens.
    pub fn new(window: u64) -> Self {
        ContextWindow {
            window: window.max(1),
            calibration: 1.0,
            notes: HashMap::new(),
        }
    }

    /// The window, in tokens.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Changes the window (the server turned out to serve a smaller one): the next requests
    /// are fitted to it.
    pub fn set_window(&mut self, window: u64) {
        self.window = window.max(1);
    }

    /// The estimated tokens of one message, as [`ContextWindow::estimate`] counts it.
    pub fn message_estimate(&self, message: &Message) -> u64 {
        (message_tokens(message) as f64 * self.calibration).ceil() as u64
    }

    /// The messages from `start` to before `end` were replaced by `inserted` others (a
    /// compaction): their notes go, and the notes after them move.
    pub fn replace_notes(&mut self, start: usize, end: usize, inserted: usize) {
        let notes = std::mem::take(&mut self.notes);
        self.notes = notes
            .into_iter()
            .filter(|(i, _)| *i < start || *i >= end)
            .map(|(i, note)| {
                if i >= end {
                    (i - (end - start) + inserted, note)
                } else {
                    (i, note)
                }
            })
            .collect();
    }

    /// Remembers what the tool result at `index` in the history was about.
    pub fn note(&mut self, index: usize, note: ResultNote) {
        self.notes.insert(index, note);
    }

    /// Forgets the notes of messages from `index` on (the history was cut there).
    pub fn forget_from(&mut self, index: usize) {
        self.notes.retain(|&i, _| i < index);
    }

    /// Learns from the server's own count of a prompt the estimate put at `estimated` tokens.
    /// Only ever raises the estimate: a server that under-reports must not make Lathe overflow.
    pub fn calibrate(&mut self, estimated: u64, actual: u64) {
        if estimated == 0 {
            return;
        }
        let ratio = actual as f64 / estimated as f64;
        if ratio > self.calibration {
            self.calibration = ratio.min(MAX_CALIBRATION);
        }
    }

    /// The estimated tokens of a request with `messages` and `tools`.
    pub fn estimate(&self, messages: &[Message], tools: &[Value]) -> u64 {
        let raw: u64 = messages.iter().map(message_tokens).sum::<u64>()
            + tools
                .iter()
                .map(|t| text_tokens(&t.to_string()))
                .sum::<u64>();
        (raw as f64 * self.calibration).ceil() as u64
    }

    /// Shortens `messages` when a request with them and `tools` nears the window. Tool results
    /// after the last assistant message (the ones the model has not seen yet) are kept whole.
    pub fn fit(&self, messages: &mut [Message], tools: &[Value]) -> Option<Shortening> {
        let before = self.estimate(messages, tools);
        if before * 100 <= self.window * TRIGGER_PERCENT {
            return None;
        }
        self.shorten(messages, tools, self.window * TARGET_PERCENT / 100, false)
    }

    /// Shortens `messages` until a request with them and `tools` is estimated at `target`
    /// tokens or less, or nothing more can be cut: every result the model has seen first (all
    /// of them, past the target too), then old thinking, then old long texts, oldest first. With `unseen`, the results the model has not seen yet
    /// are shortened too (the last resort before a request that would not fit).
    pub fn shorten(
        &self,
        messages: &mut [Message],
        tools: &[Value],
        target: u64,
        unseen: bool,
    ) -> Option<Shortening> {
        let before = self.estimate(messages, tools);
        if before <= target {
            return None;
        }
        let fixed = self.estimate(&[], tools);
        let mut sizes: Vec<u64> = messages
            .iter()
            .map(|m| (message_tokens(m) as f64 * self.calibration).ceil() as u64)
            .collect();
        let mut total = fixed + sizes.iter().sum::<u64>();
        // The results after the last assistant message are the ones the model has not seen.
        let unseen_from = messages
            .iter()
            .rposition(|m| matches!(m, Message::Assistant(_)))
            .unwrap_or(messages.len());
        let protected_from = if unseen { messages.len() } else { unseen_from };
        let mut results = 0;
        let mut others = 0;
        // The model's current plan (the newest pinned result: `update_plan`'s) is kept whole:
        // it is short, and it is what keeps a long task on track once the turns around it are
        // shortened.
        let plan = messages
            .iter()
            .rposition(|m| matches!(m, Message::Tool(t) if t.pinned));

        // First: old tool results, oldest first; every one the model has seen, even past the
        // target, so that passes are few: each rewrites the history from the oldest result it
        // shortens on, which the server's prompt cache then no longer has. (Stopping at the
        // target made one pass every few turns; at 32k the requests kept 87.9% of the previous
        // one's bytes, 90.4% with this.) The unseen ones, in the last resort, only as needed.
        for (index, message) in messages[..protected_from].iter_mut().enumerate() {
            if total <= target && index >= unseen_from {
                break;
            }
            if Some(index) == plan {
                continue;
            }
            let Message::Tool(result) = message else {
                continue;
            };
            if is_shortened(&result.content) {
                continue;
            }
            let short =
                shortened_result(&result.tool_name, &result.content, self.notes.get(&index));
            if short.len() >= result.content.len() {
                continue;
            }
            result.content = short;
            results += 1;
            total = resize(&mut sizes, index, message, total, self.calibration);
        }
        // Then: old thinking, then old long texts (never the first user message: the task).
        let first_user = messages
            .iter()
            .position(|m| matches!(m, Message::User { .. }));
        for pass in [Pass::Thinking, Pass::LongText] {
            for (index, message) in messages[..protected_from].iter_mut().enumerate() {
                if total <= target {
                    break;
                }
                if Some(index) == first_user || Some(index) == plan {
                    continue;
                }
                if cut_message(message, pass) {
                    others += 1;
                    total = resize(&mut sizes, index, message, total, self.calibration);
                }
            }
        }
        (results + others > 0).then_some(Shortening {
            before,
            after: total,
            results,
            others,
        })
    }
}

/// The output cap sent when none is configured is this share of the window...
const OUTPUT_CAP_DIVISOR: u64 = 4;
/// ...at most this many tokens...
const OUTPUT_CAP_MAX: u64 = 16_384;
/// ...and at least this many.
const OUTPUT_CAP_MIN: u64 = 256;

/// The per-turn output cap (`num_predict`, `max_tokens`) sent when none is configured, for a
/// `window`-token window and a prompt estimated at `prompt` tokens: a quarter of the window,
/// at most 16,384 tokens and at most what the window has left after the prompt, but never
/// under 256. A quarter leaves room for the prompt, the tools and the reply itself in the next
/// request; 16,384 tokens (about 55 KB of code) is more than any one reply of a local model
/// should take, and stops a model that never ends its reply after minutes, not hours.
pub fn default_output_cap(window: u64, prompt: u64) -> u32 {
    let cap = (window / OUTPUT_CAP_DIVISOR)
        .min(OUTPUT_CAP_MAX)
        .min(window.saturating_sub(prompt))
        .max(OUTPUT_CAP_MIN);
    u32::try_from(cap).unwrap_or(u32::MAX)
}

/// The most tokens of its text and thinking one assistant turn keeps in the history: half of
/// a `window`-token window (a turn as long as the window could never be sent again).
pub fn turn_budget(window: u64) -> u64 {
    (window / 2).max(64)
}

/// Shortens an assistant turn whose text and thinking together are estimated above `budget`
/// tokens: its thinking goes first, then the middle of its text, keeping the head and the tail
/// and saying how much was cut. Calls are kept whole. Returns the characters cut, or `None`
/// when the turn fits.
pub fn shorten_turn(message: &mut Message, budget: u64) -> Option<usize> {
    let Message::Assistant(turn) = message else {
        return None;
    };
    let size = |t: &crate::message::AssistantMessage| {
        text_tokens(&t.content) + t.thinking.as_deref().map_or(0, text_tokens)
    };
    if size(turn) <= budget {
        return None;
    }
    let mut cut = 0;
    if let Some(thinking) = turn.thinking.take() {
        cut += thinking.chars().count();
    }
    if text_tokens(&turn.content) > budget {
        // About 3.5 bytes a token; half of what fits before the cut, half after.
        let keep_chars = (budget * 7 / 2 / 2) as usize;
        let chars: Vec<char> = turn.content.chars().collect();
        if chars.len() > keep_chars * 2 {
            let head: String = chars[..keep_chars].iter().collect();
            let tail: String = chars[chars.len() - keep_chars..].iter().collect();
            let removed = chars.len() - keep_chars * 2;
            cut += removed;
            turn.content = format!(
                "{head}\n[... {removed} characters cut here: this reply was too long to keep whole in the context ...]\n{tail}"
            );
        }
    }
    Some(cut)
}

#[derive(Clone, Copy)]
enum Pass {
    Thinking,
    LongText,
}

fn resize(sizes: &mut [u64], index: usize, message: &Message, total: u64, calibration: f64) -> u64 {
    let new = (message_tokens(message) as f64 * calibration).ceil() as u64;
    let old = std::mem::replace(&mut sizes[index], new);
    total - old + new
}

fn cut_message(message: &mut Message, pass: Pass) -> bool {
    match (message, pass) {
        (Message::Assistant(a), Pass::Thinking) => {
            let long = a.thinking.as_ref().is_some_and(|t| t.len() > 200);
            if long {
                a.thinking = Some("[earlier thinking removed to save context]".to_owned());
            }
            long
        }
        (Message::Assistant(a), Pass::LongText) => cut_text(&mut a.content),
        (Message::User { content, images }, Pass::LongText) => {
            cut_text(content) | drop_images(images, content)
        }
        (Message::Tool(t), Pass::LongText) if !is_shortened(&t.content) => {
            cut_text(&mut t.content) | drop_images(&mut t.images, &mut t.content)
        }
        _ => false,
    }
}

/// Drops the images of an old message, saying so in its text.
fn drop_images(images: &mut Vec<crate::message::Image>, text: &mut String) -> bool {
    if images.is_empty() {
        return false;
    }
    let n = images.len();
    images.clear();
    text.push_str(&format!(
        "\n[{n} image{} removed to save context]",
        if n == 1 { "" } else { "s" }
    ));
    true
}

fn cut_text(text: &mut String) -> bool {
    if text.chars().count() <= LONG_TEXT_CHARS {
        return false;
    }
    let head: String = text.chars().take(LONG_TEXT_CHARS / 2).collect();
    let cut = text.chars().count() - LONG_TEXT_CHARS / 2;
    *text = format!("{head}\n[... {cut} more characters removed to save context ...]");
    true
}

const SHORTENED_PREFIX: &str = "[shortened to save context:";

fn is_shortened(content: &str) -> bool {
    content.starts_with(SHORTENED_PREFIX)
}

/// The one-line form of an old result: what it was, where its output can be read again, and
/// how big it was.
pub fn shortened_result(tool: &str, content: &str, note: Option<&ResultNote>) -> String {
    let summary = match note.map(|n| n.summary.trim()).filter(|s| !s.is_empty()) {
        Some(summary) => summary.to_owned(),
        None => {
            let first = content
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("");
            let first: String = first.chars().take(SUMMARY_CHARS).collect();
            format!("{tool}: {first}")
        }
    };
    let mut artifacts: Vec<String> = note.map(|n| n.artifacts.clone()).unwrap_or_default();
    for found in artifact_mentions(content) {
        if !artifacts.contains(&found) {
            artifacts.push(found);
        }
    }
    let mut text = format!("{SHORTENED_PREFIX} {summary}");
    if !artifacts.is_empty() {
        text.push_str(&format!("; output kept as {}", artifacts.join(", ")));
    }
    text.push_str(&format!(
        "; it was {} characters. Call the tool again if you need it.]",
        content.chars().count()
    ));
    text
}

/// Artifact ids and saved-result paths named in a result's text.
fn artifact_mentions(content: &str) -> Vec<String> {
    static PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r#"(?i)\bartifact(?:\s+id)?\s*[:=]?\s*[`'"]?([A-Za-z0-9][A-Za-z0-9_.:/-]{1,80})|\bcommand_output\b[^\n]*?\bid\s*[:=]\s*[`'"]?([A-Za-z0-9_.:-]{1,80})|\bsaved at (/\S+?)[:,]?(?:\s|$)|\b(cmd-[0-9]+)\b"#,
        )
        .expect("the artifact pattern is valid")
    });
    let mut found = Vec::new();
    for captures in PATTERNS.captures_iter(content) {
        if let Some(m) = (1..=4).find_map(|group| captures.get(group)) {
            let id = m.as_str().trim_end_matches(['.', ',', ':', ')']).to_owned();
            if !found.contains(&id) {
                found.push(id);
            }
        }
        if found.len() >= 4 {
            break;
        }
    }
    found
}

fn message_tokens(message: &Message) -> u64 {
    let body = match message {
        Message::System { content } => text_tokens(content),
        Message::User { content, images } => {
            text_tokens(content) + images.len() as u64 * IMAGE_TOKENS
        }
        Message::Assistant(a) => {
            text_tokens(&a.content)
                + a.thinking.as_deref().map_or(0, text_tokens)
                + a.tool_calls
                    .iter()
                    .map(|c| text_tokens(&c.name) + text_tokens(&c.arguments.to_string()) + 3)
                    .sum::<u64>()
        }
        Message::Tool(t) => {
            text_tokens(&t.content)
                + text_tokens(&t.tool_name)
                + t.images.len() as u64 * IMAGE_TOKENS
        }
    };
    body + MESSAGE_OVERHEAD_TOKENS
}

/// Tokens of `text`, estimated: about 3.5 bytes a token, which is near what code and prose
/// average in current tokenizers and errs toward more tokens for code.
pub fn text_tokens(text: &str) -> u64 {
    (text.len() as u64 * 2).div_ceil(7)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{AssistantMessage, ToolCall};
    use serde_json::json;

    fn turn(i: usize, size: usize) -> Vec<Message> {
        let call = ToolCall::new("read_file", json!({"path": format!("f{i}.rs")}));
        vec![
            Message::Assistant(AssistantMessage {
                tool_calls: vec![call.clone()],
                ..AssistantMessage::default()
            }),
            Message::tool_result(&call, format!("line one of f{i}\n{}", "x".repeat(size))),
        ]
    }

    fn history(turns: usize, size: usize) -> Vec<Message> {
        let mut messages = vec![Message::system("sys"), Message::user("do the task")];
        for i in 0..turns {
            messages.extend(turn(i, size));
        }
        messages
    }

    #[test]
    fn small_requests_are_left_alone() {
        let window = ContextWindow::new(100_000);
        let mut messages = history(3, 100);
        let before = messages.clone();
        assert_eq!(window.fit(&mut messages, &[]), None);
        assert_eq!(messages, before);
    }

    #[test]
    fn old_tool_results_are_shortened_first_oldest_first() {
        let mut window = ContextWindow::new(4_000);
        let mut messages = history(6, 3_500);
        window.note(
            3,
            ResultNote {
                summary: "read_file f0.rs (lines 1-2)".into(),
                artifacts: vec![],
            },
        );
        let done = window.fit(&mut messages, &[]).unwrap();
        assert!(
            done.after < done.before && done.results > 0 && done.others == 0,
            "{done:?}"
        );
        assert!(done.after <= 2_000, "{done:?}");
        assert_eq!(
            messages[3].content(),
            "[shortened to save context: read_file f0.rs (lines 1-2); it was 3515 characters. Call the tool again if you need it.]"
        );
        assert!(
            messages[5]
                .content()
                .starts_with("[shortened to save context: read_file: line one of f1")
        );
        // The newest result (after the last assistant message) is whole.
        assert!(messages.last().unwrap().content().len() > 3_500);
        // Every call still has its result.
        assert_eq!(
            messages
                .iter()
                .filter(|m| matches!(m, Message::Tool(_)))
                .count(),
            6
        );
        // A second pass finds nothing more to do.
        assert_eq!(window.fit(&mut messages, &[]), None);
    }

    #[test]
    fn artifact_ids_survive_shortening() {
        let metadata = json!({"artifact": "cmd-7", "command_id": 7,
            "status": {"state": "exited", "exit_code": 0}});
        let metadata = lathe_runtime::Metadata::from_json(metadata.as_object().unwrap().clone());
        let note = ResultNote::new("shell cargo test -> exit 0, 3.2 s", &metadata);
        let text = shortened_result("shell", "lots of output", Some(&note));
        assert!(
            text.contains(
                "shell cargo test -> exit 0, 3.2 s; output kept as cmd-7, command_output id=7;"
            ),
            "{text}"
        );
        let mentioned = shortened_result(
            "shell",
            "exit 1\n[... 1,000 of 9,000 characters cut; the full result is saved at /s/results/result-3.txt: read ...]\nartifact: a-12",
            None,
        );
        assert!(mentioned.contains("/s/results/result-3.txt"), "{mentioned}");
        assert!(mentioned.contains("a-12"), "{mentioned}");
    }

    #[test]
    fn long_texts_are_cut_when_results_are_not_enough() {
        let window = ContextWindow::new(2_000);
        let mut messages = vec![
            Message::system("sys"),
            Message::user("task ".repeat(400)),
            Message::assistant("y".repeat(6_000)),
            Message::user("z".repeat(6_000)),
            Message::assistant("ok"),
        ];
        let done = window.fit(&mut messages, &[]).unwrap();
        assert_eq!(done.others, 2, "{done:?}");
        assert!(messages[1].content().starts_with("task task"));
        assert_eq!(
            messages[1].content().len(),
            2_000,
            "the task itself is never cut"
        );
        assert!(
            messages[2]
                .content()
                .contains("more characters removed to save context")
        );
    }

    #[test]
    fn calibration_only_raises_the_estimate() {
        let mut window = ContextWindow::new(10_000);
        let messages = history(1, 700);
        let estimate = window.estimate(&messages, &[]);
        window.calibrate(estimate, 10);
        assert_eq!(window.estimate(&messages, &[]), estimate);
        window.calibrate(estimate, estimate * 2);
        assert!(window.estimate(&messages, &[]) >= estimate * 2 - 1);
        window.calibrate(estimate, estimate * 100);
        assert!(window.estimate(&messages, &[]) <= estimate * 3 + 1);
    }

    #[test]
    fn token_estimate_grows_with_text() {
        assert_eq!(text_tokens(""), 0);
        assert_eq!(text_tokens("abcdefg"), 2);
        assert!(text_tokens(&"x".repeat(3_500)) == 1_000);
    }

    #[test]
    fn the_default_output_cap_is_a_quarter_of_the_window_within_bounds() {
        assert_eq!(default_output_cap(32_768, 3_000), 8_192);
        assert_eq!(default_output_cap(8_192, 1_000), 2_048);
        assert_eq!(default_output_cap(262_144, 3_000), 16_384);
        assert_eq!(default_output_cap(512, 100), 256);
        // Never more than the window has left after the prompt, and never under 256.
        assert_eq!(default_output_cap(32_768, 30_000), 2_768);
        assert_eq!(default_output_cap(32_768, 40_000), 256);
    }

    #[test]
    fn a_turn_longer_than_its_budget_keeps_its_head_and_tail() {
        let call = ToolCall::new("read_file", json!({"path": "a"}));
        let text = format!("HEAD {} TAIL", "word ".repeat(20_000));
        let mut message = Message::Assistant(AssistantMessage {
            content: text.clone(),
            thinking: Some("t".repeat(5_000)),
            tool_calls: vec![call.clone()],
        });
        let cut = shorten_turn(&mut message, 1_000).unwrap();
        let Message::Assistant(kept) = &message else {
            unreachable!()
        };
        assert!(kept.content.starts_with("HEAD "), "{}", kept.content);
        assert!(kept.content.ends_with(" TAIL"));
        assert!(kept.content.contains("characters cut here"));
        assert!(
            text_tokens(&kept.content) <= 1_100,
            "{}",
            kept.content.len()
        );
        assert!(cut > 90_000, "{cut}");
        assert_eq!(kept.thinking, None);
        assert_eq!(kept.tool_calls, [call]);
        let mut short = Message::assistant("fits");
        assert_eq!(shorten_turn(&mut short, 1_000), None);
        assert_eq!(short, Message::assistant("fits"));
    }
}
