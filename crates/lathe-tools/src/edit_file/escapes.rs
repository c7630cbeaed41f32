//! The escaping strategy: text double-escaped by the model (`\\n` where the file has a
//! newline). `old_string` and `new_string` reach the tool as the model wrote them (the argument
//! layer's repair leaves them alone), so a `\n` the file really holds matches as it is first.

/// Unescapes `\n`, `\t`, `\r`, `\"`, `\'` and `\\`; `None` when there is nothing to unescape.
pub fn unescape(text: &str) -> Option<String> {
    let (out, changed) = lathe_runtime::args::unescape(text, true);
    changed.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_only_when_there_is_an_escape() {
        assert_eq!(unescape("plain"), None);
        assert_eq!(unescape(r"a\nb\\c").as_deref(), Some("a\nb\\c"));
        assert_eq!(unescape(r"C:\temp").as_deref(), Some("C:\temp"));
    }
}
