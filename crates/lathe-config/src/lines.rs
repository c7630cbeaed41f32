//! Reading input by lines in bounded memory: `lathe tool`'s arguments on stdin and its
//! `--batch` lines. A line past the limit is read and dropped, and reported by its length.

use std::io::BufRead;

/// One line of input, or how long a line over the limit was.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The line, without its newline.
    Whole(Vec<u8>),
    /// A line longer than the limit: its length in bytes; its content was discarded.
    TooLong(usize),
}

/// Reads up to the next newline (`by_line`) or to the end of input, keeping at most `limit`
/// bytes: what goes past the limit is read and dropped, so memory stays bounded. `None` at the
/// end of input.
pub fn read_bounded_line(
    input: &mut impl BufRead,
    limit: usize,
    by_line: bool,
) -> std::io::Result<Option<Line>> {
    let mut line = Vec::new();
    let mut size = 0usize;
    let mut any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            break;
        }
        any = true;
        let (chunk, end) = match available.iter().position(|&b| by_line && b == b'\n') {
            Some(at) => (&available[..at], Some(at + 1)),
            None => (available, None),
        };
        size = size.saturating_add(chunk.len());
        if size <= limit {
            line.extend_from_slice(chunk);
        } else if !line.is_empty() {
            line = Vec::new();
        }
        let consumed = end.unwrap_or(available.len());
        input.consume(consumed);
        if end.is_some() {
            break;
        }
    }
    if !any {
        return Ok(None);
    }
    Ok(Some(if size > limit {
        Line::TooLong(size)
    } else {
        Line::Whole(line)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_over_the_limit_are_measured_and_dropped() {
        let mut input = std::io::BufReader::with_capacity(4, &b"abc\n0123456789\n\nxy"[..]);
        let mut next = || read_bounded_line(&mut input, 5, true).unwrap();
        assert_eq!(next(), Some(Line::Whole(b"abc".to_vec())));
        assert_eq!(next(), Some(Line::TooLong(10)));
        assert_eq!(next(), Some(Line::Whole(Vec::new())));
        assert_eq!(next(), Some(Line::Whole(b"xy".to_vec())));
        assert_eq!(next(), None);
    }

    #[test]
    fn whole_input_mode_reads_past_newlines_up_to_the_limit() {
        let mut input = &b"{\"a\":\n1}"[..];
        assert_eq!(
            read_bounded_line(&mut input, 64, false).unwrap(),
            Some(Line::Whole(b"{\"a\":\n1}".to_vec()))
        );
        let mut input = &b"0123456789"[..];
        assert_eq!(
            read_bounded_line(&mut input, 9, false).unwrap(),
            Some(Line::TooLong(10))
        );
    }
}
