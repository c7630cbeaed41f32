//! When streamed model text reaches the terminal (seed 000, "First-Chunk Gate"): the first text
//! of a turn replaces the spinner only once it holds [`FIRST_WORD_CHARS`] word characters, so a
//! bare `**What` never flashes on screen; later text goes out once it holds a word character;
//! and writes are batched to one per [`BATCH`], so a fast model does not cost a write (and a
//! redraw) per token. Nothing is lost or reordered: what is held goes out with the next batch,
//! and all of it before anything else is written (a tool line, a prompt, the end of the turn).

use std::time::{Duration, Instant};

/// Word characters the first text of a turn needs before it is shown.
pub const FIRST_WORD_CHARS: usize = 8;

/// The shortest time between two writes of streamed text.
pub const BATCH: Duration = Duration::from_millis(32);

/// Holds streamed text until it may be written.
#[derive(Debug, Default)]
pub struct TextBatch {
    held: String,
    /// Whether text of this turn has been written (the first-chunk gate is open).
    open: bool,
    last_write: Option<Instant>,
}

impl TextBatch {
    /// Adds `text` that arrived at `now`; returns what to write now, if anything.
    pub fn push(&mut self, text: &str, now: Instant) -> Option<String> {
        self.held.push_str(text);
        self.due(now)
    }

    /// What to write at `now`, if anything: the held text once it passes the gate and the
    /// last write is at least [`BATCH`] old.
    pub fn due(&mut self, now: Instant) -> Option<String> {
        let words = word_chars(&self.held);
        let passes = if self.open {
            words >= 1
        } else {
            words >= FIRST_WORD_CHARS
        };
        let waited = self
            .last_write
            .is_none_or(|last| now.saturating_duration_since(last) >= BATCH);
        // The first text is not held for the batch: it ends the spinner's wait.
        if !passes || (self.open && !waited) {
            return None;
        }
        self.open = true;
        self.last_write = Some(now);
        Some(std::mem::take(&mut self.held))
    }

    /// When held text may next be written, if it is waiting only for the batch.
    pub fn next_due(&self) -> Option<Instant> {
        let last = self.last_write?;
        (self.open && word_chars(&self.held) >= 1).then(|| last + BATCH)
    }

    /// Everything held, gate or not: before other output, and at the end of a turn.
    pub fn flush(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// A new turn: its first text passes the gate again.
    pub fn end_turn(&mut self) -> String {
        self.open = false;
        self.last_write = None;
        self.flush()
    }
}

/// Letters, digits and `_`, as a regex's `\w` counts them.
fn word_chars(text: &str) -> usize {
    text.chars()
        .filter(|c| c.is_alphanumeric() || *c == '_')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_text_waits_for_eight_word_characters() {
        let t0 = Instant::now();
        let mut batch = TextBatch::default();
        assert_eq!(batch.push("**What", t0), None, "a fragment does not flash");
        assert_eq!(batch.push(" is", t0), None);
        assert_eq!(
            batch.push(" this**", t0).as_deref(),
            Some("**What is this**"),
            "eight word characters: shown at once, without waiting for a batch"
        );
    }

    #[test]
    fn later_text_needs_one_word_character_and_is_batched() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut batch = TextBatch::default();
        assert!(batch.push("Hello there, ", t0).is_some());
        assert_eq!(batch.push("**", ms(40)), None, "no word character yet");
        assert_eq!(batch.push("you", ms(41)).as_deref(), Some("**you"));
        assert_eq!(batch.push(" and", ms(50)), None, "within the batch");
        assert_eq!(batch.push(" me", ms(60)), None);
        assert_eq!(batch.next_due(), Some(ms(41) + BATCH));
        assert_eq!(batch.due(ms(70)), None);
        assert_eq!(batch.due(ms(73)).as_deref(), Some(" and me"));
        assert_eq!(batch.next_due(), None, "nothing held");
    }

    #[test]
    fn nothing_is_lost_or_reordered() {
        let t0 = Instant::now();
        let pieces = [
            "**Wh", "at", " is", " 2+2", "?**", " ", "It", " is", " 4", ".\n",
        ];
        for step in [0u64, 1, 20, 40] {
            let mut batch = TextBatch::default();
            let mut written = String::new();
            for (i, piece) in pieces.iter().enumerate() {
                let now = t0 + Duration::from_millis(step * i as u64);
                written.extend(batch.push(piece, now));
            }
            written.push_str(&batch.end_turn());
            assert_eq!(written, pieces.concat(), "one piece every {step} ms");
        }
    }

    #[test]
    fn a_short_answer_is_written_at_the_end_of_the_turn_and_the_gate_closes_again() {
        let t0 = Instant::now();
        let mut batch = TextBatch::default();
        assert_eq!(batch.push("Yes.", t0), None);
        assert_eq!(batch.end_turn(), "Yes.");
        assert_eq!(batch.push("No", t0), None, "a new turn, a closed gate");
    }
}
