//! A reply fallen into a loop: seen as it streams, and cut to one round in the history.

/// A reply caught in a loop: the piece it kept repeating.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repetition {
    /// One round of the loop, as written.
    pub piece: String,
    /// How many rounds had been seen when it was stopped.
    pub repeats: usize,
}

impl Repetition {
    /// The piece on one line, cut to a readable length.
    pub fn snippet(&self) -> String {
        let one_line = self.piece.split_whitespace().collect::<Vec<_>>().join(" ");
        let shown = if one_line.is_empty() {
            self.piece.escape_debug().to_string()
        } else {
            one_line
        };
        crate::text::cut(&shown, 60)
    }
}

/// A loop is the tail of the text made of one piece repeated: at least this many bytes of it...
const LOOP_MIN_BYTES: usize = 3_000;
/// ...and at least this many rounds of the piece...
const LOOP_MIN_REPEATS: usize = 8;
/// ...for a piece of at most this many bytes (a paragraph, a few lines of code).
const LOOP_MAX_PIECE: usize = 1_000;
/// The tail is checked again after this many new bytes.
const LOOP_CHECK_EVERY: usize = 128;

/// Sees a reply fall into a loop: the same piece of text (a token, a line, a sentence, a block
/// of lines) repeated back to back, over at least 3,000 bytes and at least 8 rounds. Small
/// models do this until the output limit, sometimes for minutes.
///
/// Legitimate repetitive text does not qualify: table rows, lists of similar names and code
/// with repeated lines differ from each other somewhere, or repeat a few times only; a loop
/// repeats the piece byte for byte, dozens of times.
#[derive(Debug, Default)]
pub struct RepetitionGuard {
    tail: Vec<u8>,
    unchecked: usize,
}

impl RepetitionGuard {
    /// Takes the next piece of the reply; returns the loop once there is one.
    pub fn push(&mut self, text: &str) -> Option<Repetition> {
        self.tail.extend_from_slice(text.as_bytes());
        self.unchecked += text.len();
        let keep = LOOP_MAX_PIECE * LOOP_MIN_REPEATS * 2;
        if self.tail.len() > keep * 2 {
            self.tail.drain(..self.tail.len() - keep);
        }
        if self.unchecked < LOOP_CHECK_EVERY {
            return None;
        }
        self.unchecked = 0;
        let (period, span) = periodic_tail(&self.tail)?;
        let piece = &self.tail[self.tail.len() - period..];
        // Any turn of the loop is one round; show the one that starts a line, a sentence or
        // a word.
        let start = [&b"\n"[..], b". ", b" "]
            .iter()
            .find_map(|sep| {
                piece
                    .windows(sep.len())
                    .rposition(|w| w == *sep)
                    .map(|at| (at + sep.len()) % period)
            })
            .unwrap_or(0);
        let round = [&piece[start..], &piece[..start]].concat();
        Some(Repetition {
            piece: String::from_utf8_lossy(&round).into_owned(),
            repeats: span / period,
        })
    }
}

/// The shortest period of a loop at the end of `bytes`, and how far back the loop goes.
fn periodic_tail(bytes: &[u8]) -> Option<(usize, usize)> {
    let n = bytes.len();
    for period in 1..=LOOP_MAX_PIECE {
        let span = LOOP_MIN_BYTES.max(period * LOOP_MIN_REPEATS);
        if span > n {
            break;
        }
        // From the end back: most periods fail at the first byte.
        let periodic = (n - span + period..n)
            .rev()
            .all(|i| bytes[i] == bytes[i - period]);
        if periodic {
            let mut start = n - span;
            while start > 0 && bytes[start - 1] == bytes[start - 1 + period] {
                start -= 1;
            }
            return Some((period, n - start));
        }
    }
    None
}

/// Cuts a loop at the end of `text` down to one round and a line saying how much was cut;
/// returns the bytes cut (0 when there is no loop).
pub(super) fn cut_repeats(text: &mut String) -> usize {
    let Some((period, span)) = periodic_tail(text.as_bytes()) else {
        return 0;
    };
    let mut keep = text.len() - span + period;
    // To the end of the line the round ends in, when it ends within one more round.
    if let Some(newline) = text.as_bytes()[keep..]
        .iter()
        .take(period)
        .position(|&b| b == b'\n')
    {
        keep += newline + 1;
    }
    while !text.is_char_boundary(keep) {
        keep += 1;
    }
    let cut = text.len() - keep;
    let rounds = cut.div_ceil(period);
    text.truncate(keep);
    text.push_str(&format!(
        "\n[... the same text {rounds} more times: the reply was stopped here for repeating itself]"
    ));
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `text` in pieces of `size` bytes (at char boundaries), as a stream would.
    fn loops(text: &str, size: usize) -> Option<Repetition> {
        let mut guard = RepetitionGuard::default();
        let mut rest = text;
        while !rest.is_empty() {
            let mut at = size.min(rest.len());
            while !rest.is_char_boundary(at) {
                at += 1;
            }
            let (piece, tail) = rest.split_at(at);
            if let Some(found) = guard.push(piece) {
                return Some(found);
            }
            rest = tail;
        }
        None
    }

    /// Repetitive text a model writes on purpose: none of it is a loop.
    fn legitimate() -> Vec<(&'static str, String)> {
        let table: String =
            std::iter::once("| name | size | kind |\n|------|------|------|\n".to_owned())
                .chain((0..200).map(|i| format!("| file_{i}.rs | {} | source |\n", 100 + i * 7)))
                .collect();
        let tests: String = (0..300)
            .map(|i| format!("test parser::tests::parses_case_{i} ... ok\n"))
            .collect();
        let code = format!(
            "fn main() {{\n{}{}}}\n",
            "    assert!(ready());\n".repeat(30),
            (0..120)
                .map(|i| format!("    let x{i} = compute({i});\n    println!(\"{{}}\", x{i});\n"))
                .collect::<String>()
        );
        let braces: String = (0..40)
            .map(|depth| format!("{}}}\n", "    ".repeat(40 - depth)))
            .collect();
        let numbers: String = (0..2_000)
            .map(|i| format!("{}, ", i * 7919 % 10_007))
            .collect();
        let prose = "The parser reads the file line by line. Each line is split into fields. \
            Fields that hold numbers are parsed; the others are kept as text. When a line has \
            fewer fields than the header, the missing ones are empty. "
            .repeat(3);
        let rule = format!("{}\n{}\n", "=".repeat(120), "-".repeat(120));
        vec![
            ("a markdown table", table),
            ("a list of similar test names", tests),
            ("code with repeated lines", code),
            ("closing braces", braces),
            ("a list of numbers", numbers),
            ("a paragraph said three times", prose),
            ("rules", rule),
        ]
    }

    /// Degenerate output of small models.
    fn degenerate() -> Vec<(&'static str, String)> {
        vec![
            ("one line over and over", "I will now read the file.\n".repeat(400)),
            (
                "one sentence without newlines",
                format!("Sure! {}", "Let me check that for you. ".repeat(300)),
            ),
            ("a run of one token", format!("The answer is {}", "!".repeat(5_000))),
            ("a run of newlines", format!("Done.{}", "\n".repeat(4_000))),
            (
                "a block of lines",
                format!(
                    "Plan:\n{}",
                    "1. read main.rs\n2. read lib.rs\n3. fix the bug\n".repeat(150)
                ),
            ),
            ("a word", "the ".repeat(2_000)),
            (
                "a long paragraph",
                "We need to update the function so that it handles the empty case, then run the tests again to confirm that everything passes and nothing else broke. ".repeat(40),
            ),
        ]
    }

    #[test]
    fn legitimate_repetition_is_not_a_loop() {
        for (what, text) in legitimate() {
            for size in [1, 7, 64, 4096] {
                assert_eq!(loops(&text, size), None, "{what} in pieces of {size}");
            }
        }
    }

    #[test]
    fn degenerate_repetition_is_a_loop_found_early() {
        for (what, text) in degenerate() {
            for size in [1, 5, 64] {
                let found = loops(&text, size).unwrap_or_else(|| panic!("{what} ({size})"));
                assert!(found.repeats >= LOOP_MIN_REPEATS, "{what}: {found:?}");
                assert!(!found.snippet().is_empty(), "{what}");
            }
        }
        let found = loops(&"I will now read the file.\n".repeat(400), 16).unwrap();
        assert_eq!(found.snippet(), "I will now read the file.");
    }

    #[test]
    fn a_loop_is_cut_to_one_round_in_the_history() {
        let mut text = format!("Reading.\n{}", "again and again\n".repeat(500));
        let cut = cut_repeats(&mut text);
        assert!(cut > 7_000, "{cut}");
        assert!(text.starts_with("Reading.\n"), "{text}");
        assert!(
            text.contains("the reply was stopped here for repeating itself"),
            "{text}"
        );
        assert!(text.len() < 200, "{text}");
        let mut plain = "no loop here".to_owned();
        assert_eq!(cut_repeats(&mut plain), 0);
        assert_eq!(plain, "no loop here");
    }
}
