//! What the user types, shared by the chat prompt and approval prompts.
//!
//! On a terminal, a line editor (rustyline) reads each line on a thread of its own (a blocking
//! read must not hold an async worker): editing keys, history kept across sessions, multi-line
//! input (Alt-Enter, or a line ending in `\`), a bracketed paste as one message, and Ctrl-C at
//! the prompt as a key: it clears a draft, and on an empty prompt it is reported as
//! [`Read::Interrupted`]. The editor holds the terminal only while a prompt is shown; between
//! prompts the terminal is as the chat found it, so Ctrl-C during a turn is a SIGINT.
//!
//! When standard input or output is not a terminal, lines are read plainly (pipes, tests).
//! Either way, no escape sequence or other control character reaches the caller: a terminal
//! the editor does not support sends arrow keys as raw bytes, and they are dropped.

use std::borrow::Cow;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::{ValidationContext, ValidationResult, Validator};
use rustyline::{
    Cmd, ConditionalEventHandler, Config, Editor, Event, EventContext, EventHandler, KeyCode,
    KeyEvent, Modifiers, Movement, RepeatCount,
};
use tokio::sync::Mutex;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use tokio::sync::oneshot;

/// The most entries the history file keeps (older ones are dropped).
pub const HISTORY_ENTRIES: usize = 1000;

/// Entries longer than this (in bytes) are not kept in the history: a large paste is a one-off,
/// and the history file must stay small.
pub const HISTORY_ENTRY_MAX: usize = 8 * 1024;

/// The history file's name in Lathe's data directory (beside the sessions database).
pub const HISTORY_FILE: &str = "chat_history";

/// One read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Read {
    /// A line (or several, for multi-line input), without control characters.
    Line(String),
    /// Ctrl-C at an empty prompt. `typed` says whether anything was typed at this prompt
    /// before it (a draft typed and deleted again).
    Interrupted {
        /// Keys were pressed at this prompt before the Ctrl-C.
        typed: bool,
    },
    /// Input has ended (Ctrl-D on an empty line, or the end of a pipe).
    Eof,
}

/// What a line is for: a message (kept in the history, may span lines) or an answer to a
/// question (neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A message or a slash command at the chat prompt.
    Message,
    /// An answer to an approval question.
    Answer,
}

struct Request {
    prompt: String,
    purpose: Purpose,
    reply: oneshot::Sender<Read>,
}

enum Source {
    /// Plain lines from a reader thread; `true` once they have ended.
    Plain(UnboundedReceiver<String>, bool),
    /// The line editor's thread, and the answer to a read a dropped caller left behind.
    Editor {
        requests: std::sync::mpsc::Sender<Request>,
        pending: Option<oneshot::Receiver<Read>>,
    },
}

/// Standard input as a queue of lines.
pub struct Input {
    source: Mutex<Source>,
}

impl Input {
    /// Starts reading standard input: with the line editor (and no history) when both
    /// standard input and output are terminals, plainly otherwise.
    pub fn start() -> Self {
        Input::with_history(None)
    }

    /// As [`start`](Input::start), with the editor's history kept in `history`.
    pub fn with_history(history: Option<PathBuf>) -> Self {
        let terminal = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
        let source = if terminal {
            match start_editor(history) {
                Ok(requests) => Source::Editor {
                    requests,
                    pending: None,
                },
                Err(err) => {
                    tracing::warn!("no line editor ({err}); reading lines plainly");
                    start_plain()
                }
            }
        } else {
            start_plain()
        };
        Input {
            source: Mutex::new(source),
        }
    }

    /// Shows `prompt` and waits for the next read.
    pub async fn read(&self, prompt: &str, purpose: Purpose) -> Read {
        let mut guard = self.source.lock().await;
        match &mut *guard {
            Source::Plain(lines, ended) => {
                if *ended {
                    return Read::Eof;
                }
                {
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(prompt.as_bytes());
                    let _ = out.flush();
                }
                match lines.recv().await {
                    Some(line) => Read::Line(clean(&line)),
                    None => {
                        *ended = true;
                        Read::Eof
                    }
                }
            }
            Source::Editor { requests, pending } => {
                // A read whose caller went away (a select that took another branch) is still
                // on the screen: its answer is this one.
                let receiver = match pending.take() {
                    Some(receiver) => receiver,
                    None => {
                        let (reply, receiver) = oneshot::channel();
                        let request = Request {
                            prompt: prompt.to_owned(),
                            purpose,
                            reply,
                        };
                        if requests.send(request).is_err() {
                            return Read::Eof;
                        }
                        receiver
                    }
                };
                // Kept until answered, should this caller go away meanwhile.
                let read = pending.insert(receiver).await.unwrap_or(Read::Eof);
                *pending = None;
                read
            }
        }
    }

    /// Writes `prompt` and waits for an answer; `None` once input has ended or the user
    /// pressed Ctrl-C instead.
    pub async fn line(&self, prompt: &str) -> Option<String> {
        match self.read(prompt, Purpose::Answer).await {
            Read::Line(line) => Some(line),
            Read::Eof | Read::Interrupted { .. } => None,
        }
    }

    /// Drops what was typed ahead (while the agent worked), so that it cannot answer a prompt
    /// it was not meant for.
    pub async fn discard_typed_ahead(&self) {
        let mut guard = self.source.lock().await;
        match &mut *guard {
            Source::Plain(lines, _) => while lines.try_recv().is_ok() {},
            Source::Editor { .. } => {
                // Typed ahead on a terminal is still in the terminal's input queue.
                // SAFETY: tcflush on standard input, a valid descriptor.
                unsafe {
                    libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
                }
            }
        }
    }
}

fn start_plain() -> Source {
    let (tx, rx) = unbounded_channel();
    std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let stdin = std::io::stdin();
            let mut lock = stdin.lock();
            loop {
                let mut line = Vec::new();
                match lock.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&line);
                        let line = line.trim_end_matches(['\n', '\r']).to_owned();
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        })
        .expect("cannot start the stdin thread");
    Source::Plain(rx, false)
}

/// What the editor knows beyond its keys: whether a line ending in `\` continues (messages
/// only).
struct Helper {
    multiline: bool,
}

impl Completer for Helper {
    type Candidate = String;
}

impl Hinter for Helper {
    type Hint = String;
}

impl Highlighter for Helper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        default: bool,
    ) -> Cow<'b, str> {
        let _ = default;
        Cow::Borrowed(prompt)
    }
}

impl Validator for Helper {
    fn validate(&self, ctx: &mut ValidationContext<'_>) -> rustyline::Result<ValidationResult> {
        if self.multiline && ctx.input().ends_with('\\') {
            return Ok(ValidationResult::Incomplete);
        }
        Ok(ValidationResult::Valid(None))
    }
}

impl rustyline::Helper for Helper {}

/// Ctrl-C at the prompt: clears a draft; on an empty prompt, ends the read as an interrupt.
struct CtrlC;

impl ConditionalEventHandler for CtrlC {
    fn handle(
        &self,
        _event: &Event,
        _n: RepeatCount,
        _positive: bool,
        ctx: &EventContext<'_>,
    ) -> Option<Cmd> {
        if ctx.line().is_empty() {
            Some(Cmd::Interrupt)
        } else {
            Some(Cmd::Kill(Movement::WholeBuffer))
        }
    }
}

/// Notes that a key other than the bound ones was pressed (the fallback binding, which lets the
/// key do what it does).
struct Typed(Arc<AtomicBool>);

impl ConditionalEventHandler for Typed {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, _: &EventContext<'_>) -> Option<Cmd> {
        self.0.store(true, Ordering::Relaxed);
        None
    }
}

/// The terminal's settings before the line editor first changed them.
static TERMINAL: OnceLock<libc::termios> = OnceLock::new();

/// Puts the terminal back as the chat found it, for an exit while the line editor may hold it
/// (a signal at the prompt): echo, line input and no bracketed paste, not the editor's raw mode.
pub fn restore_terminal() {
    let Some(saved) = TERMINAL.get() else {
        return;
    };
    // SAFETY: tcsetattr on standard input with settings read from it.
    unsafe {
        libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, saved);
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(b"\x1b[?2004l");
    let _ = out.flush();
}

fn start_editor(history: Option<PathBuf>) -> rustyline::Result<std::sync::mpsc::Sender<Request>> {
    // SAFETY: tcgetattr on standard input, into a zeroed termios it fills.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) == 0 {
            let _ = TERMINAL.set(saved);
        }
    }
    let config = Config::builder()
        .max_history_size(HISTORY_ENTRIES)?
        .history_ignore_dups(true)?
        .history_ignore_space(true)
        .auto_add_history(false)
        .bracketed_paste(true)
        // The cursor position query waits for an answer that a typed key could be taken for.
        .check_cursor_position(false)
        .build();
    let history_config = FileHistory::with_config(&config);
    let mut editor: Editor<Helper, FileHistory> = Editor::with_history(config, history_config)?;
    editor.set_helper(Some(Helper { multiline: true }));
    editor.bind_sequence(KeyEvent(KeyCode::Enter, Modifiers::ALT), Cmd::Newline);
    editor.bind_sequence(
        KeyEvent::ctrl('C'),
        EventHandler::Conditional(Box::new(CtrlC)),
    );
    let typed = Arc::new(AtomicBool::new(false));
    editor.bind_sequence(
        Event::Any,
        EventHandler::Conditional(Box::new(Typed(Arc::clone(&typed)))),
    );
    if let Some(path) = &history
        && path.exists()
        && let Err(err) = editor.load_history(path)
    {
        tracing::warn!("cannot read the chat history {}: {err}", path.display());
    }
    let (tx, rx) = std::sync::mpsc::channel::<Request>();
    std::thread::Builder::new()
        .name("line-editor".into())
        .spawn(move || {
            for request in rx {
                if let Some(helper) = editor.helper_mut() {
                    helper.multiline = request.purpose == Purpose::Message;
                }
                typed.store(false, Ordering::Relaxed);
                let raw = clean(&request.prompt);
                let read = match editor.readline(&(raw.as_str(), request.prompt.as_str())) {
                    Ok(text) => {
                        let text = message_text(&text);
                        if request.purpose == Purpose::Message {
                            remember(&mut editor, history.as_deref(), &text);
                        }
                        Read::Line(text)
                    }
                    Err(rustyline::error::ReadlineError::Interrupted) => Read::Interrupted {
                        typed: typed.load(Ordering::Relaxed),
                    },
                    Err(rustyline::error::ReadlineError::Eof) => Read::Eof,
                    Err(err) => {
                        tracing::warn!("the line editor failed: {err}");
                        Read::Eof
                    }
                };
                let _ = request.reply.send(read);
            }
        })
        .map_err(rustyline::error::ReadlineError::Io)?;
    Ok(tx)
}

/// Adds `text` to the history and appends it to the file (other chats running meanwhile keep
/// theirs: the file is merged, not overwritten).
fn remember(editor: &mut Editor<Helper, FileHistory>, file: Option<&Path>, text: &str) {
    if text.trim().is_empty() || text.len() > HISTORY_ENTRY_MAX {
        return;
    }
    if !matches!(editor.add_history_entry(text), Ok(true)) {
        return;
    }
    let Some(file) = file else {
        return;
    };
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(err) = editor.append_history(file) {
        tracing::warn!("cannot save the chat history {}: {err}", file.display());
    }
}

/// The text of what the editor returned: a `\` that continued a line is dropped, and control
/// characters are removed.
fn message_text(text: &str) -> String {
    clean(&text.replace("\\\n", "\n"))
}

/// `text` without terminal escape sequences (CSI, OSC, SS3 and the like) or other control
/// characters; newlines and tabs stay.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' | '\u{9b}' | '\u{9d}' | '\u{90}' => {
                // The sequence's kind: after ESC, its next character.
                let kind = if c == '\x1b' { chars.next() } else { Some(c) };
                match kind {
                    // CSI: parameters and intermediates up to a final byte in @..~.
                    Some('[' | '\u{9b}') => {
                        for c in chars.by_ref() {
                            if ('@'..='~').contains(&c) {
                                break;
                            }
                        }
                    }
                    // OSC, DCS and the like: up to BEL or ST.
                    Some(']' | 'P' | '_' | '^' | 'X' | '\u{9d}' | '\u{90}') => {
                        while let Some(c) = chars.next() {
                            if c == '\x07' || c == '\u{9c}' {
                                break;
                            }
                            if c == '\x1b' {
                                chars.next_if_eq(&'\\');
                                break;
                            }
                        }
                    }
                    // SS3 (F1-F4, arrows in application mode): one more character.
                    Some('O') => {
                        chars.next();
                    }
                    // Any other escape: ESC and its one character.
                    _ => {}
                }
            }
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Where the chat history is kept: beside the sessions database.
pub fn history_path() -> PathBuf {
    lathe_config::state::data_dir().join(HISTORY_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_bytes_never_pass() {
        assert_eq!(clean("fix\x1b[Dthe\x1b[A bug"), "fixthe bug");
        assert_eq!(clean("a\x1bOAb"), "ab");
        assert_eq!(clean("x\x1b]0;title\x07y\x1b]52;c;aGk=\x1b\\z"), "xyz");
        assert_eq!(clean("bell\x07 nul\0 del\x7f"), "bell nul del");
        assert_eq!(clean("two\nlines\tand tab"), "two\nlines\tand tab");
        assert_eq!(clean("ünïcödé → ok"), "ünïcödé → ok");
        assert_eq!(clean("\u{9b}31mred"), "red");
    }

    #[test]
    fn a_continued_line_loses_its_backslash_only() {
        assert_eq!(message_text("first \\\nsecond"), "first \nsecond");
        assert_eq!(message_text("C:\\new\\table"), "C:\\new\\table");
    }
}
