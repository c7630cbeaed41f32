//! When `old_string` is nowhere in the file: the region most like it, so the model can see what
//! the file really says there.
//!
//! Comparing every window of the file with the whole `old_string` would be quadratic; instead
//! candidate windows are picked cheaply (lines like the first line of `old_string`, and windows
//! holding many of its lines verbatim), and only those are scored in full.

use std::collections::HashMap;

use super::matching::line_spans;

/// Candidate windows kept from each cheap ranking.
const CANDIDATES: usize = 40;
/// Windows longer than this are scored on their first lines only.
const MAX_SCORED_LINES: usize = 400;
/// Texts up to this long are compared with edit distance; longer ones by line similarity.
const MAX_EDIT_DISTANCE_CHARS: usize = 4000;

/// The closest region: lines `first..=last` (1-based) and how similar they are (0 to 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Closest {
    /// First line.
    pub first: usize,
    /// Last line.
    pub last: usize,
    /// Similarity, 0 (nothing alike) to 1 (identical).
    pub similarity: f64,
}

/// The region of `text` most like `old` (both with `\n` line endings).
pub fn closest(text: &str, old: &str) -> Option<Closest> {
    let body = old.strip_suffix('\n').unwrap_or(old);
    let wanted: Vec<&str> = body.split('\n').map(str::trim).collect();
    let spans = line_spans(text);
    if spans.is_empty() || body.trim().is_empty() {
        return None;
    }
    let k = wanted.len().min(spans.len());
    let windows = spans.len() - k + 1;
    let line = |i: usize| text[spans[i].0..spans[i].1].trim();

    // Ranking 1: how much each window's first line looks like the first wanted line.
    let mut by_first: Vec<(f64, usize)> = (0..windows)
        .map(|i| (strsim::sorensen_dice(line(i), wanted[0]), i))
        .collect();
    by_first.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));

    // Ranking 2: how many wanted lines each window holds at the right offset.
    let mut where_wanted: HashMap<&str, Vec<usize>> = HashMap::new();
    for (j, w) in wanted.iter().enumerate().take(k) {
        if !w.is_empty() {
            where_wanted.entry(w).or_default().push(j);
        }
    }
    let mut votes: HashMap<usize, usize> = HashMap::new();
    for i in 0..spans.len() {
        if let Some(offsets) = where_wanted.get(line(i)) {
            for &j in offsets {
                if i >= j && i - j < windows {
                    *votes.entry(i - j).or_default() += 1;
                }
            }
        }
    }
    let mut by_votes: Vec<(usize, usize)> = votes.into_iter().map(|(i, n)| (n, i)).collect();
    by_votes.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));

    let mut candidates: Vec<usize> = by_first.iter().take(CANDIDATES).map(|&(_, i)| i).collect();
    candidates.extend(by_votes.iter().take(CANDIDATES).map(|&(_, i)| i));
    candidates.sort_unstable();
    candidates.dedup();

    let scored = k.min(MAX_SCORED_LINES);
    let (best, line_score) = candidates
        .into_iter()
        .map(|i| {
            let total: f64 = (0..scored)
                .map(|j| strsim::sorensen_dice(line(i + j), wanted[j]))
                .sum();
            (i, total / scored as f64)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    let region = &text[spans[best].0..spans[best + k - 1].1];
    let similarity =
        if region.len() <= MAX_EDIT_DISTANCE_CHARS && body.len() <= MAX_EDIT_DISTANCE_CHARS {
            strsim::normalized_levenshtein(region, body)
        } else {
            line_score
        };
    Some(Closest {
        first: best + 1,
        last: best + k,
        similarity,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_region_with_a_typo() {
        let text = "fn one() {}\nfn two() {\n    let a = 1;\n    a + 1\n}\nfn three() {}\n";
        let got = closest(text, "fn two() {\n    let a = 2;\n    a + 1\n").unwrap();
        assert_eq!((got.first, got.last), (2, 4));
        assert!(got.similarity > 0.9 && got.similarity < 1.0, "{got:?}");
    }

    #[test]
    fn a_longer_old_string_than_the_file_is_clamped() {
        let got = closest("only\n", "only\nmore\nlines\n").unwrap();
        assert_eq!((got.first, got.last), (1, 1));
    }

    #[test]
    fn nothing_for_empty_inputs() {
        assert_eq!(closest("", "x"), None);
        assert_eq!(closest("a\n", "  \n"), None);
    }

    #[test]
    fn many_lines_stay_cheap_and_right() {
        let mut text: String = (0..20_000)
            .map(|i| format!("value_{i} = compute({i});\n"))
            .collect();
        text.push_str("special = compute_special(42);\n");
        let got = closest(&text, "special = compute_special(41);").unwrap();
        assert_eq!(got.first, 20_001);
    }
}
