//! The result budget: no tool result handed to a model is longer than the budget. What is cut is
//! counted, and the whole text is kept on disk where the model can read it.

use std::path::PathBuf;

use crate::session::Session;

/// Cuts `text` to about `budget` characters, keeping the head and the tail at line boundaries.
/// The full text is saved in the session's state directory, and the marker in the middle says
/// how much was cut, which lines, and how to read them.
pub fn fit(text: String, budget: usize, session: &Session) -> (String, Option<PathBuf>) {
    let total_chars = text.chars().count();
    if total_chars <= budget {
        return (text, None);
    }
    let saved = save(&text, session);
    // Room for the marker (measured with every count at its largest, so the real one is no
    // longer); the rest split between head and tail.
    let widest = marker(
        total_chars,
        total_chars,
        total_chars,
        total_chars,
        saved.as_deref(),
    );
    let room = budget.saturating_sub(widest.chars().count());
    let head_chars = room / 2;
    let tail_chars = room - head_chars;
    let head_end = cut_back_to_line(&text, byte_at_char(&text, head_chars));
    let tail_start =
        cut_forward_to_line(&text, byte_at_char(&text, total_chars - tail_chars)).max(head_end);
    let head = &text[..head_end];
    let tail = &text[tail_start..];
    let cut = &text[head_end..tail_start];
    let first_cut_line = head.matches('\n').count() + 1;
    let cut_lines = cut.matches('\n').count();
    let last_cut_line = first_cut_line + cut_lines.saturating_sub(1);
    let marker = marker(
        cut.chars().count(),
        total_chars,
        first_cut_line,
        last_cut_line.max(first_cut_line),
        saved.as_deref(),
    );
    (format!("{head}{marker}{tail}"), saved)
}

/// The line in the middle of a cut result: how much was cut, which lines, and how to read them.
fn marker(
    cut_chars: usize,
    total_chars: usize,
    first_cut_line: usize,
    last_cut_line: usize,
    saved: Option<&std::path::Path>,
) -> String {
    let where_ = match saved {
        Some(path) => format!(
            "the full result is saved at {}: read the cut part with read_file path=\"{}\" offset={first_cut_line}",
            path.display(),
            path.display()
        ),
        None => {
            "narrow the request (a smaller range or a more specific pattern) to see the cut part"
                .to_owned()
        }
    };
    format!(
        "\n[... {} of {} characters cut (lines {}-{}); {where_} ...]\n",
        group(cut_chars),
        group(total_chars),
        group(first_cut_line),
        group(last_cut_line),
    )
}

fn save(text: &str, session: &Session) -> Option<PathBuf> {
    let dir = session.state_dir().join("results");
    std::fs::create_dir_all(&dir).ok()?;
    let path = dir.join(format!("result-{}.txt", session.next_number()));
    std::fs::write(&path, text).ok()?;
    Some(path)
}

fn byte_at_char(text: &str, chars: usize) -> usize {
    text.char_indices()
        .nth(chars)
        .map_or(text.len(), |(i, _)| i)
}

/// The end of the last whole line before `at`, unless that throws away more than half.
fn cut_back_to_line(text: &str, at: usize) -> usize {
    match text[..at].rfind('\n') {
        Some(nl) if nl + 1 >= at / 2 => nl + 1,
        _ => at,
    }
}

/// The start of the first whole line after `at`, unless that throws away more than half.
fn cut_forward_to_line(text: &str, at: usize) -> usize {
    let rest = text.len() - at;
    match text[at..].find('\n') {
        Some(nl) if nl < rest / 2 => at + nl + 1,
        _ => at,
    }
}

/// `12345` -> `12,345`.
pub fn group(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolConfig, Workspace};

    fn session() -> (tempfile::TempDir, std::sync::Arc<Session>) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        let session = Session::new(ws, ToolConfig::default(), dir.path().join(".state")).unwrap();
        (dir, session)
    }

    #[test]
    fn short_text_is_untouched() {
        let (_dir, s) = session();
        let (out, saved) = fit("hello\n".into(), 100, &s);
        assert_eq!(out, "hello\n");
        assert!(saved.is_none());
    }

    #[test]
    fn long_text_keeps_head_and_tail_and_saves_everything() {
        let (_dir, s) = session();
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let (out, saved) = fit(text.clone(), 2000, &s);
        assert!(out.chars().count() <= 2000, "{}", out.len());
        assert!(out.starts_with("line 1\n"));
        assert!(out.ends_with("line 5000\n"));
        let saved = saved.unwrap();
        assert_eq!(std::fs::read_to_string(&saved).unwrap(), text);
        assert!(out.contains("characters cut (lines "), "{out}");
        assert!(out.contains(&saved.display().to_string()));
        // The marker names the first cut line, which is the line after the head.
        let head_last: usize = out
            .lines()
            .take_while(|l| l.starts_with("line "))
            .last()
            .unwrap()[5..]
            .parse()
            .unwrap();
        assert!(out.contains(&format!("(lines {}-", head_last + 1)), "{out}");
    }

    #[test]
    fn grouping() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }
}
