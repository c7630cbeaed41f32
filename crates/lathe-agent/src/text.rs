//! Text shortened for a person to read: a summary line, a title, an error body.

/// `text` cut to at most `max_chars` characters, with `…` after the cut when anything was
/// dropped. Cuts between characters, never inside one.
pub fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// The first line of `text` that is not blank, trimmed; empty when every line is blank.
pub fn first_line(text: &str) -> &str {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut_between_characters() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc…");
        assert_eq!(cut("ééé", 2), "éé…");
        assert_eq!(cut("", 0), "");
    }

    #[test]
    fn first_line_skips_blank_lines() {
        assert_eq!(first_line("\n  \n  fix it  \nmore"), "fix it");
        assert_eq!(first_line(" \n\t\n"), "");
    }
}
