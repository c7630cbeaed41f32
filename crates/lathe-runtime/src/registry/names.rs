//! Tool names: how long they may be, how they are quoted back, which are too alike to share a
//! registry, and which come closest to a name that matches none.

use crate::args::fold_name;

/// Tool names longer than this are not looked up (none is near it): an unknown name is echoed
/// in the error only as its start and its length.
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// `name` as an error message may quote it: whole when short, else its start and its length.
pub fn shown_name(name: &str) -> String {
    if name.len() <= MAX_TOOL_NAME_BYTES {
        return name.to_owned();
    }
    let mut end = 40;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}...` ({} bytes; tool names are at most {MAX_TOOL_NAME_BYTES} bytes)`",
        &name[..end],
        name.len()
    )
}

pub(super) fn quote_list(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The names most like `name`: by edit distance after folding, and names sharing a word.
pub fn closest<'a>(name: &str, names: &[&'a str]) -> Vec<&'a str> {
    let folded = fold_name(name);
    let words = |s: &str| {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    let mut scored: Vec<(f64, &'a str)> = names
        .iter()
        .map(|candidate| {
            let other = fold_name(candidate);
            let mut score = strsim::jaro_winkler(&folded, &other);
            if !folded.is_empty() && (other.contains(&folded) || folded.contains(&other)) {
                score += 0.2;
            }
            let shared = words(name).iter().any(|w| words(candidate).contains(w));
            if shared {
                score += 0.15;
            }
            (score, *candidate)
        })
        .filter(|(score, _)| *score >= 0.7)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.into_iter().take(3).map(|(_, n)| n).collect()
}

/// True when no two of `names` (the names and aliases of a tool list, one slice per tool) are
/// the same, as given or after folding ASCII case, `_`, `-`, `.` and spaces (as
/// [`Registry::resolve_name`](crate::Registry::resolve_name) and
/// [`Registry::add`](crate::Registry::add) compare them): the built-in list checks
/// this when it compiles, so `read_file` and an alias `Read-File` cannot both be listed.
pub const fn names_are_unique(names: &[&[&str]]) -> bool {
    let mut a = 0;
    while a < names.len() {
        let mut i = 0;
        while i < names[a].len() {
            let mut b = a;
            while b < names.len() {
                let mut j = if b == a { i + 1 } else { 0 };
                while j < names[b].len() {
                    if same_folded(names[a][i], names[b][j]) {
                        return false;
                    }
                    j += 1;
                }
                b += 1;
            }
            i += 1;
        }
        a += 1;
    }
    true
}

/// [`fold_name`]`(a) == fold_name(b)` for ASCII names, in a `const fn` (bytes outside ASCII
/// are compared as they are).
const fn same_folded(a: &str, b: &str) -> bool {
    const fn ignored(byte: u8) -> bool {
        matches!(byte, b'_' | b'-' | b'.' | b' ')
    }
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    loop {
        while i < a.len() && ignored(a[i]) {
            i += 1;
        }
        while j < b.len() && ignored(b[j]) {
            j += 1;
        }
        if i == a.len() || j == b.len() {
            return i == a.len() && j == b.len();
        }
        if !a[i].eq_ignore_ascii_case(&b[j]) {
            return false;
        }
        i += 1;
        j += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_accepts_distinct_lists() {
        assert!(names_are_unique(&[]));
        assert!(names_are_unique(&[&[]]));
        assert!(names_are_unique(&[
            &["read_file", "cat"],
            &["write_file", "write"]
        ]));
        // A prefix is not the same name.
        assert!(names_are_unique(&[&["read"], &["read_file"]]));
        assert!(names_are_unique(&[&["edit_file"], &["edit_files"]]));
    }

    #[test]
    fn names_are_unique_rejects_a_name_twice() {
        // Two tools, one name.
        assert!(!names_are_unique(&[&["grep"], &["grep"]]));
        // A tool's alias is another tool's name, in either order.
        assert!(!names_are_unique(&[&["shell", "bash"], &["bash"]]));
        assert!(!names_are_unique(&[&["bash"], &["shell", "bash"]]));
        // Two tools share an alias.
        assert!(!names_are_unique(&[&["a", "x"], &["b", "y"], &["c", "x"]]));
        // One tool lists a name twice.
        assert!(!names_are_unique(&[&["read_file", "cat", "cat"]]));
    }

    #[test]
    fn names_are_unique_compares_folded_names() {
        assert!(!names_are_unique(&[&["read_file"], &["Read-File"]]));
        assert!(!names_are_unique(&[
            &["list_files"],
            &["other", "listfiles"]
        ]));
        assert!(!names_are_unique(&[&["run_cmd"], &["run.cmd"]]));
        assert!(!names_are_unique(&[&["x_"], &["X"]]));
        assert!(names_are_unique(&[&["run_cmd"], &["run_cmds"]]));
    }

    #[test]
    fn same_folded_agrees_with_fold_name() {
        let names = [
            "read_file",
            "ReadFile",
            "read-file",
            "read.file",
            "read file",
            "readfile",
            "read_files",
            "_read_file_",
            "",
            "_",
            "edit",
            "EDIT",
            "é",
            "É",
        ];
        for a in names {
            for b in names {
                if a.is_ascii() && b.is_ascii() {
                    assert_eq!(
                        same_folded(a, b),
                        fold_name(a) == fold_name(b),
                        "{a:?} {b:?}"
                    );
                }
            }
        }
        // Outside ASCII, bytes are compared as they are: never a false "same".
        assert!(!same_folded("é", "É"));
        assert!(same_folded("é", "é"));
    }
}
