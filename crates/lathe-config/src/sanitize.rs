//! Text that came from the model or a tool, made safe to write to a terminal.
//!
//! A model (or the output of a command it ran) can contain escape sequences: an OSC 0 that
//! retitles the window, an OSC 52 that writes the user's clipboard, CSI sequences that move the
//! cursor and overwrite what was shown. Only the renderer's own styling may reach the terminal,
//! so every C0 and C1 control character except `\n` and `\t` is shown in caret notation (`^[`
//! for ESC, `^G` for BEL) or as `<U+009B>` for C1, and what followed it is plain text. Each
//! control character is neutralised on its own, without parsing sequences, so a sequence split
//! across two streamed chunks is as harmless as a whole one.
//!
//! `\r` is dropped: a bare one would return to the start of the line and overwrite what was
//! shown, and in `\r\n` it adds nothing.

use std::borrow::Cow;

/// `text` with every control character except `\n` and `\t` made visible, and `\r` dropped.
pub fn sanitize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\r' => {}
            c if !is_unsafe(c) => out.push(c),
            // C0 and DEL: `^@` .. `^_`, `^?`.
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push('^');
                out.push(char::from((c as u8) ^ 0x40));
            }
            c => out.push_str(&format!("<U+{:04X}>", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// Whether `c` must not reach a terminal as it is: C0 controls but `\n` and `\t`, DEL, C1.
fn is_unsafe(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_are_made_visible_one_control_at_a_time() {
        let cases = [
            ("plain text\n\tindented", "plain text\n\tindented"),
            ("\x1b]0;owned\x07", "^[]0;owned^G"),
            ("\x1b]52;c;aGVsbG8=\x1b\\", "^[]52;c;aGVsbG8=^[\\"),
            ("\x1b[2J\x1b[31mred", "^[[2J^[[31mred"),
            ("progress 10%\rdone", "progress 10%done"),
            ("windows\r\nline", "windows\nline"),
            ("\u{9b}31m\u{9d}0;t\u{9c}", "<U+009B>31m<U+009D>0;t<U+009C>"),
            ("nul\0 del\x7f bs\x08", "nul^@ del^? bs^H"),
            ("ünïcödé ✓", "ünïcödé ✓"),
        ];
        for (raw, shown) in cases {
            assert_eq!(sanitize(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn a_sequence_split_across_chunks_is_still_neutralised() {
        let whole = "before \x1b]0;title\x07 after";
        for cut in 0..whole.len() {
            let (a, b) = whole.split_at(cut);
            let shown = format!("{}{}", sanitize(a), sanitize(b));
            assert_eq!(shown, sanitize(whole), "cut at {cut}");
            assert!(!shown.contains('\x1b') && !shown.contains('\x07'));
        }
    }

    #[test]
    fn clean_text_is_not_copied() {
        assert!(matches!(sanitize("fine\n"), Cow::Borrowed(_)));
    }
}
