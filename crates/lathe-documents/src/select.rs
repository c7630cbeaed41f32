//! Unit selections: `"1-3,7"`, normalised (sorted, merged) so that equal selections written
//! differently share a cache entry.

use std::fmt;
use std::str::FromStr;

/// Which units to read: all of them, or sorted, disjoint, non-adjacent inclusive ranges from 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Selection {
    ranges: Vec<(u32, u32)>,
}

/// A selection that could not be parsed or does not fit the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectionError(pub String);

impl Selection {
    /// Every unit.
    pub fn all() -> Self {
        Selection::default()
    }

    /// Whether this selects every unit.
    pub fn is_all(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The units selected out of `total`, in order; an error names the part past the end.
    pub fn resolve(&self, total: u32, noun: &str) -> Result<Vec<u32>, SelectionError> {
        if self.ranges.is_empty() {
            return Ok((1..=total).collect());
        }
        if let Some(&(a, b)) = self.ranges.iter().find(|&&(_, b)| b > total) {
            let asked = if a == b {
                format!("{noun} {a} is")
            } else {
                format!("{noun}s {a}-{b} are")
            };
            return Err(SelectionError(if total == 0 {
                format!("{asked} past the end: the document has no {noun}s")
            } else {
                format!(
                    "{asked} past the end: the document has {total} {noun}{}; use pages from 1 to {total}",
                    if total == 1 { "" } else { "s" }
                )
            }));
        }
        Ok(self.ranges.iter().flat_map(|&(a, b)| a..=b).collect())
    }
}

impl FromStr for Selection {
    type Err = SelectionError;

    fn from_str(text: &str) -> Result<Self, SelectionError> {
        let text = text.trim();
        if text.is_empty() || text.eq_ignore_ascii_case("all") {
            return Ok(Selection::all());
        }
        let bad = |part: &str, why: &str| {
            SelectionError(format!(
                "pages \"{text}\" is not a page list ({why} in \"{part}\"); \
                 write numbers and ranges from 1, like \"1-3,7\""
            ))
        };
        let number = |part: &str, s: &str| -> Result<u32, SelectionError> {
            match s.trim().parse::<u32>() {
                Ok(0) => Err(bad(part, "pages count from 1")),
                Ok(n) => Ok(n),
                Err(_) => Err(bad(part, "not a number")),
            }
        };
        let mut ranges = Vec::new();
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (number(part, a)?, number(part, b)?),
                None => {
                    let n = number(part, part)?;
                    (n, n)
                }
            };
            if a > b {
                return Err(bad(part, "the range runs backwards"));
            }
            ranges.push((a, b));
        }
        ranges.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
        for (a, b) in ranges {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Ok(Selection { ranges: merged })
    }
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranges.is_empty() {
            return f.write_str("all");
        }
        for (i, &(a, b)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            if a == b {
                write!(f, "{a}")?;
            } else {
                write!(f, "{a}-{b}")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_sorts_and_merges() {
        let rows = [
            ("1-3,7", "1-3,7"),
            (" 7, 1-3 ", "1-3,7"),
            ("3,1,2", "1-3"),
            ("1-4,2-6,8", "1-6,8"),
            ("", "all"),
            ("all", "all"),
            ("5", "5"),
        ];
        for (given, normal) in rows {
            let selection: Selection = given.parse().unwrap();
            assert_eq!(selection.to_string(), normal, "{given:?}");
        }
    }

    #[test]
    fn bad_lists_say_how_to_write_one() {
        for given in ["0", "a-3", "5-2", "1;2"] {
            let err = given.parse::<Selection>().unwrap_err();
            assert!(err.0.contains("like \"1-3,7\""), "{given}: {err}");
        }
    }

    #[test]
    fn past_the_end_names_the_count() {
        let selection: Selection = "2-9".parse().unwrap();
        let err = selection.resolve(4, "page").unwrap_err();
        assert!(err.0.contains("pages 2-9 are past the end"), "{err}");
        assert!(err.0.contains("has 4 pages"), "{err}");
        assert_eq!(
            "2,4".parse::<Selection>().unwrap().resolve(4, "page"),
            Ok(vec![2, 4])
        );
    }
}
