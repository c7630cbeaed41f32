//! Placing a replacement at the file's indentation: when `old_string` matched with its lines'
//! leading whitespace ignored, `new_string` is shifted by the same consistent amount, and the
//! lines the model left unchanged are written as the file has them.

#[derive(Debug, Clone, PartialEq, Eq)]
enum Shift {
    Add(String),
    Remove(String),
}

pub(super) fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// The indentation change from `old` to `file`, when one is a prefix-extension of the other.
fn shift_of(old: &str, file: &str) -> Option<Shift> {
    let (oi, fi) = (indent(old), indent(file));
    if let Some(prefix) = fi.strip_suffix(oi) {
        Some(Shift::Add(prefix.to_owned()))
    } else {
        oi.strip_suffix(fi)
            .map(|prefix| Shift::Remove(prefix.to_owned()))
    }
}

fn apply_shift(line: &str, shift: &Shift) -> String {
    if line.trim().is_empty() {
        return line.to_owned();
    }
    match shift {
        Shift::Add(prefix) => format!("{prefix}{line}"),
        Shift::Remove(prefix) => line
            .strip_prefix(prefix.as_str())
            .unwrap_or(line)
            .to_owned(),
    }
}

/// The lines of `new` that the model left as they were in `old` (the common leading and
/// trailing lines of the two) are written as the file has them, trailing whitespace and all;
/// the others as `reindented`.
pub(super) fn keep_unchanged_lines(
    new: &str,
    reindented: &str,
    old_lines: &[&str],
    file_lines: &[&str],
) -> String {
    let new_lines: Vec<&str> = new.split('\n').collect();
    let placed: Vec<&str> = reindented.split('\n').collect();
    if placed.len() != new_lines.len() {
        return reindented.to_owned();
    }
    let prefix = new_lines
        .iter()
        .zip(old_lines)
        .take_while(|(n, o)| n == o)
        .count();
    let room = new_lines.len().min(old_lines.len()) - prefix;
    let suffix = new_lines
        .iter()
        .rev()
        .zip(old_lines.iter().rev())
        .take(room)
        .take_while(|(n, o)| n == o)
        .count();
    (0..new_lines.len())
        .map(|j| {
            if j < prefix {
                file_lines[j]
            } else if j >= new_lines.len() - suffix {
                file_lines[file_lines.len() - (new_lines.len() - j)]
            } else {
                placed[j]
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// When the model's lines were indented differently from the file's by one consistent amount,
/// shifts `new` by the same amount so the replacement lands at the file's indentation. The
/// first line is judged on its own (a copied fragment often starts mid-line). `None` when the
/// other lines do not differ by one consistent amount.
pub(super) fn reindent(new: &str, old_lines: &[&str], file_lines: &[&str]) -> Option<String> {
    if let Some(swap) = indent_swap(old_lines, file_lines) {
        return Some(
            new.split('\n')
                .map(|line| swap.apply(line))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    if already_at_file_indent(new, old_lines, file_lines) {
        return Some(new.to_owned());
    }
    let first = shift_of(old_lines[0], file_lines[0]);
    let mut rest: Option<Option<Shift>> = None;
    for (o, f) in old_lines.iter().zip(file_lines).skip(1) {
        if o.trim().is_empty() {
            continue;
        }
        let shift = shift_of(o, f);
        match &rest {
            None => rest = Some(shift),
            Some(seen) if *seen == shift => {}
            Some(_) => rest = Some(None),
        }
    }
    let rest = match rest {
        Some(Some(shift)) => Some(shift),
        // The lines after the first need different shifts: no one placement is right.
        Some(None) => return None,
        // One line (or only blank lines after the first): the first line's shift is all we know.
        None if old_lines.len() == 1 => first.clone(),
        None => None,
    };
    Some(
        new.split('\n')
            .enumerate()
            .map(|(i, line)| {
                let shift = if i == 0 { &first } else { &rest };
                match shift {
                    Some(shift) => apply_shift(line, shift),
                    None => line.to_owned(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// The smallest indentation of the non-blank lines, in characters.
fn min_indent<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    lines
        .into_iter()
        .filter(|line| !line.trim().is_empty())
        .map(|line| indent(line).chars().count())
        .min()
}

/// The model dedented `old_string` but wrote `new_string` at the file's own indentation: shifting
/// `new` as well would indent it twice.
fn already_at_file_indent(new: &str, old_lines: &[&str], file_lines: &[&str]) -> bool {
    let (Some(old), Some(file), Some(new)) = (
        min_indent(old_lines.iter().copied()),
        min_indent(file_lines.iter().copied()),
        min_indent(new.split('\n')),
    ) else {
        return false;
    };
    old < file && new == file
}

/// The model indented with spaces where the file uses tabs (or the reverse), one tab for
/// `width` spaces on every line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct IndentSwap {
    to_tabs: bool,
    width: usize,
}

impl IndentSwap {
    fn apply(self, line: &str) -> String {
        let lead = indent(line);
        let body = &line[lead.len()..];
        if self.to_tabs && lead.bytes().all(|b| b == b' ') {
            let tabs = "\t".repeat(lead.len() / self.width);
            let spaces = " ".repeat(lead.len() % self.width);
            format!("{tabs}{spaces}{body}")
        } else if !self.to_tabs && lead.bytes().all(|b| b == b'\t') {
            format!("{}{body}", " ".repeat(lead.len() * self.width))
        } else {
            line.to_owned()
        }
    }
}

/// Finds a consistent tabs-for-spaces swap between the model's lines and the file's.
fn indent_swap(old_lines: &[&str], file_lines: &[&str]) -> Option<IndentSwap> {
    let mut found: Option<IndentSwap> = None;
    for (o, f) in old_lines.iter().zip(file_lines) {
        if o.trim().is_empty() {
            continue;
        }
        let (oi, fi) = (indent(o), indent(f));
        if oi.is_empty() && fi.is_empty() {
            continue;
        }
        let spaces = |s: &str| !s.is_empty() && s.bytes().all(|b| b == b' ');
        let tabs = |s: &str| !s.is_empty() && s.bytes().all(|b| b == b'\t');
        let swap = if spaces(oi) && tabs(fi) && oi.len() % fi.len() == 0 {
            IndentSwap {
                to_tabs: true,
                width: oi.len() / fi.len(),
            }
        } else if tabs(oi) && spaces(fi) && fi.len() % oi.len() == 0 {
            IndentSwap {
                to_tabs: false,
                width: fi.len() / oi.len(),
            }
        } else {
            return None;
        };
        match found {
            None => found = Some(swap),
            Some(seen) if seen == swap => {}
            Some(_) => return None,
        }
    }
    found
}
