//! A [`Document`] as the Markdown the model reads: each unit under its own label, gaps said out
//! loud, and one line on what was covered.

use crate::{Document, UnitKind};

impl Document {
    /// The selected units as Markdown, each under a `## Page N` (`Slide N`, `Sheet N: name`,
    /// `Chunk N of M`) heading; a page without a text layer is a line that says so.
    pub fn to_markdown(&self) -> String {
        let mut out = String::new();
        for unit in &self.units {
            if !out.is_empty() {
                out.push('\n');
            }
            let n = unit.number;
            match (self.kind, &unit.name) {
                (UnitKind::Page, _) => out.push_str(&format!("## Page {n}\n\n")),
                (UnitKind::Slide, _) => out.push_str(&format!("## Slide {n}\n\n")),
                (UnitKind::Sheet, Some(name)) => out.push_str(&format!("## Sheet {n}: {name}\n\n")),
                (UnitKind::Sheet, None) => out.push_str(&format!("## Sheet {n}\n\n")),
                (UnitKind::Chunk, _) => {
                    out.push_str(&format!("## Chunk {n} of {}\n\n", self.total))
                }
            }
            match unit.text.as_deref().map(str::trim_end) {
                None => out.push_str(&format!(
                    "(page {n}: no text layer (scanned?); OCR is not available)\n"
                )),
                Some("") => out.push_str(&format!("({} {n} has no text)\n", self.kind.noun())),
                Some(text) => {
                    out.push_str(text);
                    out.push('\n');
                }
            }
        }
        out
    }

    /// The selection, as ranges of unit numbers (`2-3,7`).
    pub fn selected(&self) -> String {
        let numbers: Vec<u32> = self.units.iter().map(|u| u.number).collect();
        ranges(&numbers)
    }

    /// One sentence on what the result covers: which units of how many, how many had text,
    /// and for chunks that they are not printed pages.
    pub fn summary(&self) -> String {
        let noun = self.kind.noun();
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let shown = self.units.len();
        let which = if shown as u32 == self.total {
            format!("all {} {noun}{}", self.total, plural(self.total as usize))
        } else {
            format!(
                "{noun}{} {} of {}",
                plural(shown),
                self.selected(),
                self.total
            )
        };
        let format = self.format.name();
        match self.kind {
            UnitKind::Page => {
                let with_text = self.units_with_text();
                let mut line = format!(
                    "{format}, {which}; {with_text} of {shown} page{} had text",
                    plural(shown)
                );
                let gaps: Vec<u32> = self
                    .units
                    .iter()
                    .filter(|u| u.text.is_none())
                    .map(|u| u.number)
                    .collect();
                if !gaps.is_empty() {
                    line.push_str(&format!(
                        " (no text layer on page{} {}: scanned or images only; OCR is not available)",
                        plural(gaps.len()),
                        ranges(&gaps)
                    ));
                }
                line
            }
            UnitKind::Slide | UnitKind::Sheet => format!("{format}, {which}"),
            UnitKind::Chunk => format!(
                "{format}, {which}: a {format} has no fixed pages, so read_document cut its text \
                 into {} chunk{} (not printed pages); `pages` selects chunks",
                self.total,
                plural(self.total as usize)
            ),
        }
    }
}

/// `[1, 2, 3, 7]` as `1-3,7`.
pub(crate) fn ranges(numbers: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < numbers.len() {
        let start = numbers[i];
        let mut end = start;
        while i + 1 < numbers.len() && numbers[i + 1] == end + 1 {
            i += 1;
            end = numbers[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn ranges_compress_runs() {
        assert_eq!(ranges(&[1, 2, 3, 7]), "1-3,7");
        assert_eq!(ranges(&[4]), "4");
        assert_eq!(ranges(&[]), "");
    }
}
