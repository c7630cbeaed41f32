//! The memory file's format: Markdown a person can edit by hand. An entry is a top-level
//! bullet (`- ` or `* ` at the start of a line) with the indented lines that follow it; every
//! other line (headings, prose, blank lines) is kept as it is and is not an entry.

/// The longest entry, in characters: an entry is a fact or a convention in a sentence or two.
pub const MAX_ENTRY_CHARS: usize = 1000;

/// One entry of the memory file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its text, without the bullet; continuation lines joined with `\n`.
    pub text: String,
    /// The first line (0-based) of the file it takes.
    first: usize,
    /// The line after its last.
    end: usize,
}

/// The memory file's text as lines (each with its line ending) and its entries.
#[derive(Debug, Clone)]
pub struct MemoryText {
    lines: Vec<String>,
    entries: Vec<Entry>,
}

fn bullet(line: &str) -> Option<&str> {
    line.strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| (line.trim_end() == "-" || line.trim_end() == "*").then_some(""))
}

impl MemoryText {
    /// Reads the entries of `text`.
    pub fn parse(text: &str) -> MemoryText {
        let lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
        let mut entries: Vec<Entry> = Vec::new();
        let mut open: Option<Entry> = None;
        for (i, raw) in lines.iter().enumerate() {
            let line = raw.trim_end_matches(['\n', '\r']);
            if let Some(rest) = bullet(line) {
                entries.extend(open.take());
                open = Some(Entry {
                    text: rest.trim().to_owned(),
                    first: i,
                    end: i + 1,
                });
                continue;
            }
            let continues = line.starts_with([' ', '\t']) && !line.trim().is_empty();
            match open.as_mut() {
                Some(entry) if continues => {
                    entry.text.push('\n');
                    entry.text.push_str(line.trim());
                    entry.end = i + 1;
                }
                _ => entries.extend(open.take()),
            }
        }
        entries.extend(open);
        MemoryText { lines, entries }
    }

    /// The entries, in file order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The whole text.
    pub fn text(&self) -> String {
        self.lines.concat()
    }

    /// The text with `entry` added at the end.
    pub fn added(&self, entry: &str) -> String {
        let mut text = self.text();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&render(entry));
        text
    }

    /// The text with entry `index` replaced by `entry`, or removed (`None`).
    pub fn changed(&self, index: usize, entry: Option<&str>) -> String {
        let target = &self.entries[index];
        let mut out = String::new();
        for line in &self.lines[..target.first] {
            out.push_str(line);
        }
        if let Some(entry) = entry {
            out.push_str(&render(entry));
        }
        for line in &self.lines[target.end..] {
            out.push_str(line);
        }
        out
    }

    /// The entry `which` names: its number (`3`, `#3`), its whole text, or a piece of text
    /// found in it alone (as written, else ignoring case). `Err` says why none was taken.
    pub fn find(&self, which: &str) -> Result<usize, String> {
        let wanted = normalize(which);
        if wanted.is_empty() {
            return Err("say which entry: its number or a piece of its text".to_owned());
        }
        if let Ok(number) = wanted.trim_start_matches('#').parse::<usize>() {
            return match number.checked_sub(1).filter(|i| *i < self.entries.len()) {
                Some(index) => Ok(index),
                None => Err(format!(
                    "there is no entry {number}: the memory has {} entr{}",
                    self.entries.len(),
                    if self.entries.len() == 1 { "y" } else { "ies" }
                )),
            };
        }
        let texts: Vec<String> = self.entries.iter().map(|e| normalize(&e.text)).collect();
        if let Some(index) = texts.iter().position(|t| *t == wanted) {
            return Ok(index);
        }
        let lower = wanted.to_lowercase();
        let tries: [&dyn Fn(&String) -> bool; 2] =
            [&|t: &String| t.contains(&wanted), &|t: &String| {
                t.to_lowercase().contains(&lower)
            }];
        for matches in tries {
            let found: Vec<usize> = (0..texts.len()).filter(|i| matches(&texts[*i])).collect();
            match found.as_slice() {
                [] => continue,
                [index] => return Ok(*index),
                many => {
                    return Err(format!(
                        "'{}' is in {} entries; give the entry's number, or more of its text:\n{}",
                        one_line(which.trim(), 80),
                        many.len(),
                        self.listing(Some(many))
                    ));
                }
            }
        }
        Err(format!(
            "no entry contains '{}'; give the entry's number or a piece of its text. The \
             entries:\n{}",
            one_line(which.trim(), 80),
            self.listing(None)
        ))
    }

    /// The entry whose text is `text` (compared as [`MemoryText::find`] compares whole texts).
    pub fn position(&self, text: &str) -> Option<usize> {
        let wanted = normalize(text);
        self.entries
            .iter()
            .position(|e| normalize(&e.text) == wanted)
    }

    /// The entries as a numbered list (only `only`, when given), each cut to one short line.
    pub fn listing(&self, only: Option<&[usize]>) -> String {
        if self.entries.is_empty() {
            return "(none)".to_owned();
        }
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, _)| only.is_none_or(|only| only.contains(i)))
            .map(|(i, e)| format!("{}. {}", i + 1, one_line(&e.text, 100)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// An entry as the model gave it, made ready to be written: trimmed, without a bullet of its
/// own, without blank lines (which would end the entry); or why it cannot be one.
pub fn clean_entry(text: &str) -> Result<String, String> {
    if let Some(c) = text
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(format!(
            "the entry holds the control character {:?}; write it as plain text",
            c
        ));
    }
    let lines: Vec<String> = text
        .lines()
        .map(|l| l.replace('\t', " ").trim().to_owned())
        .filter(|l| !l.is_empty())
        .collect();
    let mut joined = lines.join("\n");
    if let Some(rest) = bullet(&joined) {
        joined = rest.trim_start().to_owned();
    }
    if joined.is_empty() {
        return Err("the entry is empty: give the text to remember in `entry`".to_owned());
    }
    let chars = joined.chars().count();
    if chars > MAX_ENTRY_CHARS {
        return Err(format!(
            "the entry is {chars} characters, more than the {MAX_ENTRY_CHARS} an entry may hold: \
             keep one fact or convention per entry, in a sentence or two"
        ));
    }
    Ok(joined)
}

/// An entry as the file holds it: a bullet, its further lines indented.
fn render(entry: &str) -> String {
    let mut out = String::new();
    for (i, line) in entry.lines().enumerate() {
        out.push_str(if i == 0 { "- " } else { "  " });
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Text compared as entries are: trimmed, a leading bullet dropped, whitespace runs as one
/// space.
fn normalize(text: &str) -> String {
    let text = text.trim();
    let text = bullet(text).unwrap_or(text);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn one_line(text: &str, max_chars: usize) -> String {
    crate::text::one_line(&text.replace('\n', " "), max_chars)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# Notes\n\nSome prose.\n- Use tabs.\n* Run `make check`\n  before pushing.\n\n- The API lives in api/.\n";

    #[test]
    fn entries_are_top_level_bullets_with_their_indented_lines() {
        let memory = MemoryText::parse(FILE);
        let texts: Vec<&str> = memory.entries().iter().map(|e| e.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "Use tabs.",
                "Run `make check`\nbefore pushing.",
                "The API lives in api/."
            ]
        );
        assert_eq!(memory.text(), FILE);
    }

    #[test]
    fn changes_keep_every_other_line() {
        let memory = MemoryText::parse(FILE);
        assert_eq!(
            memory.changed(1, None),
            "# Notes\n\nSome prose.\n- Use tabs.\n\n- The API lives in api/.\n"
        );
        assert_eq!(
            memory.changed(0, Some("Use spaces.\nFour of them.")),
            FILE.replace("- Use tabs.\n", "- Use spaces.\n  Four of them.\n")
        );
        assert_eq!(MemoryText::parse("- a").added("b"), "- a\n- b\n");
        assert_eq!(MemoryText::parse("").added("b"), "- b\n");
    }

    #[test]
    fn entries_are_found_by_number_whole_text_or_a_unique_piece() {
        let memory = MemoryText::parse(FILE);
        assert_eq!(memory.find("2"), Ok(1));
        assert_eq!(memory.find("#3"), Ok(2));
        assert_eq!(memory.find("- Use tabs."), Ok(0));
        assert_eq!(memory.find("make CHECK"), Ok(1));
        let err = memory.find("4").unwrap_err();
        assert!(
            err.contains("there is no entry 4: the memory has 3 entries"),
            "{err}"
        );
        let err = memory.find("nothing like it").unwrap_err();
        assert!(
            err.contains("1. Use tabs.\n2. Run `make check` before pushing."),
            "{err}"
        );
        let err = memory.find("s").unwrap_err();
        assert!(err.contains("is in 3 entries"), "{err}");
    }

    #[test]
    fn entries_are_cleaned_and_capped() {
        assert_eq!(
            clean_entry("  - Use tabs.  \n\n  really\n").unwrap(),
            "Use tabs.\nreally"
        );
        assert!(clean_entry(" \n ").unwrap_err().contains("empty"));
        assert!(
            clean_entry("a\u{1b}[31m")
                .unwrap_err()
                .contains("control character")
        );
        let long = "x".repeat(MAX_ENTRY_CHARS + 1);
        assert!(
            clean_entry(&long)
                .unwrap_err()
                .contains("more than the 1000")
        );
    }
}
