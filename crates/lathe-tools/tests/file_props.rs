//! Properties of the file tools over generated files.
//!
//! - Paging through any file with read_file (following the `offset=` each note gives) shows every
//!   line once, in order: LF text comes back exactly, CRLF text comes back with `\r\n` read as
//!   `\n` (read_file documents that it hides the `\r`). Generated lines stay under read_file's
//!   2000-character cut and hold no `\r` of their own.
//! - edit_file followed by the reverse edit restores the file byte for byte, for LF and CRLF
//!   files, with or without a BOM and a final newline. The generated old and new strings hold no
//!   backslash (the argument layer repairs double escapes, by design) and agree on ending with a
//!   newline (at the end of a file edit_file keeps the final newline, or its absence).

use proptest::prelude::*;
use serde_json::json;

use crate::file_support::{Ws, next_offset, numbered};

/// Text for one line: letters, digits, spaces, tabs, punctuation and some non-ASCII.
fn line() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-9 \t{}();=_.,é日€-]{0,40}").unwrap()
}

fn lines(max: usize) -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(line(), 0..max)
}

fn join(lines: &[String], ending: &str, final_newline: bool) -> String {
    let mut text = lines.join(ending);
    if final_newline && !lines.is_empty() {
        text.push_str(ending);
    }
    text
}

/// Reads the whole file page by page; returns the lines seen and whether the last note said the
/// file has no final newline.
fn page_through(ws: &Ws, path: &str, limit: u64) -> (Vec<String>, bool) {
    let mut seen = Vec::new();
    let mut offset = 1;
    let mut open_end = false;
    for _ in 0..10_000 {
        let out = ws.ok(
            "read_file",
            json!({"path": path, "offset": offset, "limit": limit}),
        );
        if out.text.ends_with("is empty (0 bytes).") {
            break;
        }
        for (number, text) in numbered(&out.text) {
            assert_eq!(number, seen.len() as u64 + 1, "lines arrive in order, once");
            seen.push(text);
        }
        open_end = out.text.contains("(the file does not end with a newline)");
        match next_offset(&out.text) {
            Some(next) => offset = next,
            None => break,
        }
    }
    (seen, open_end)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn paging_reproduces_lf_files(content in lines(60), final_newline in any::<bool>(), limit in 1u64..25) {
        let ws = Ws::with_budget(10_000_000);
        let text = join(&content, "\n", final_newline);
        ws.write("f.txt", &text);
        let (seen, open_end) = page_through(&ws, "f.txt", limit);
        let mut rebuilt = seen.join("\n");
        if !seen.is_empty() && !open_end {
            rebuilt.push('\n');
        }
        prop_assert_eq!(rebuilt, text);
    }

    #[test]
    fn paging_reproduces_crlf_files_as_lf(content in lines(60), final_newline in any::<bool>(), limit in 1u64..25) {
        let ws = Ws::with_budget(10_000_000);
        let text = join(&content, "\r\n", final_newline);
        ws.write("f.txt", &text);
        let (seen, open_end) = page_through(&ws, "f.txt", limit);
        let mut rebuilt = seen.join("\n");
        if !seen.is_empty() && !open_end {
            rebuilt.push('\n');
        }
        prop_assert_eq!(rebuilt, text.replace("\r\n", "\n"));
    }
}

/// A file and an edit of it: the old string is a unique piece of the file's text (as the model
/// sees it, `\n` endings), the new string is different and unique in the result.
#[derive(Debug, Clone)]
struct Case {
    lines: Vec<String>,
    crlf: bool,
    bom: bool,
    final_newline: bool,
    /// Byte range of the old string in the LF text.
    start: usize,
    end: usize,
    new: String,
}

impl Case {
    fn lf_text(&self) -> String {
        join(&self.lines, "\n", self.final_newline)
    }

    fn bytes(&self) -> Vec<u8> {
        let ending = if self.crlf { "\r\n" } else { "\n" };
        let mut out = if self.bom {
            "\u{FEFF}".to_owned()
        } else {
            String::new()
        };
        out.push_str(&join(&self.lines, ending, self.final_newline));
        out.into_bytes()
    }
}

fn case() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec(line(), 1..12),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<(usize, usize)>(),
        proptest::collection::vec(line(), 1..4),
        any::<bool>(),
    )
        .prop_map(
            |(lines, crlf, bom, final_newline, (a, b), new_lines, new_newline)| {
                let lf = join(&lines, "\n", final_newline);
                let cuts: Vec<usize> = (0..=lf.len()).filter(|&i| lf.is_char_boundary(i)).collect();
                let (x, y) = (cuts[a % cuts.len()], cuts[b % cuts.len()]);
                let (start, end) = (x.min(y), x.max(y));
                let old = &lf[start..end];
                let mut new = new_lines.join("\n");
                // An empty last line would end `new` with a newline of its own, past the rule below.
                while new.ends_with('\n') {
                    new.pop();
                }
                // Agree with old_string on a trailing newline (see the module comment).
                if old.ends_with('\n') || (new_newline && end < lf.len()) {
                    new.push('\n');
                }
                Case {
                    lines,
                    crlf,
                    bom,
                    final_newline,
                    start,
                    end,
                    new,
                }
            },
        )
}

/// Occurrences of `needle` in `hay`, overlapping ones too: in `===`, `==` is found twice. The
/// generated edit names one place by its offset; when the old string also starts one character
/// later, edit_file (like every agent's edit tool) takes the first, which is not the case's.
fn count(hay: &str, needle: &str) -> usize {
    (0..hay.len())
        .filter(|&i| hay.is_char_boundary(i) && hay[i..].starts_with(needle))
        .count()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn edit_then_reverse_edit_restores_the_bytes(case in case()) {
        let lf = case.lf_text();
        let old = &lf[case.start..case.end];
        let edited = format!("{}{}{}", &lf[..case.start], case.new, &lf[case.end..]);
        prop_assume!(!old.trim().is_empty() && old != case.new);
        prop_assume!(!case.new.trim().is_empty());
        prop_assume!(!old.ends_with('\n') || case.new.ends_with('\n'));
        prop_assume!(count(&lf, old) == 1 && count(&edited, &case.new) == 1);
        // An edit that removes every line ending leaves no style to restore (new lines then get
        // `\n`): such files are out of this property.
        prop_assume!(edited.contains('\n') || !lf.contains('\n'));
        let ws = Ws::new();
        let original = case.bytes();
        ws.write("f.txt", &original);
        let forward = ws.ok("edit_file", json!({"path": "f.txt", "old_string": old, "new_string": case.new}));
        prop_assert_eq!(&forward.metadata.to_json()["strategies"], &json!(["exact"]));
        let after = ws.read("f.txt");
        prop_assert_eq!(after.starts_with("\u{FEFF}".as_bytes()), case.bom);
        let after_text = String::from_utf8(after.clone()).unwrap();
        let had_endings = case.lines.len() > 1 || case.final_newline;
        if case.crlf && had_endings {
            prop_assert_eq!(after_text.matches('\n').count(), after_text.matches("\r\n").count(), "a CRLF file stays CRLF");
        } else if !case.crlf {
            prop_assert!(!after_text.contains('\r'));
        }
        prop_assert_eq!(
            after_text.trim_start_matches('\u{FEFF}').replace("\r\n", "\n"),
            edited.clone()
        );
        ws.ok("edit_file", json!({"path": "f.txt", "old_string": case.new, "new_string": old}));
        prop_assert_eq!(ws.read("f.txt"), original);
    }
}
