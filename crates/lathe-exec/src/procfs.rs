//! The few facts about processes the supervisor reads from `/proc`.

use std::fs;

/// One line of `/proc/<pid>/stat`, the fields the supervisor uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcStat {
    pub(crate) pid: i32,
    pub(crate) ppid: i32,
    pub(crate) pgrp: i32,
    pub(crate) session: i32,
    pub(crate) state: u8,
    /// Clock ticks after boot when the process started; with the pid it names a process
    /// uniquely even when pids are reused.
    pub(crate) starttime: u64,
}

impl ProcStat {
    /// Whether the process still runs (is not a zombie waiting to be reaped, nor dead).
    pub(crate) fn is_alive(&self) -> bool {
        !matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Parses the content of `/proc/<pid>/stat`. The command name may hold spaces and parentheses,
/// so fields are counted from the last `)`.
pub(crate) fn parse_stat(pid: i32, content: &str) -> Option<ProcStat> {
    let rest = &content[content.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    // `fields[0]` is field 3 of proc(5) (state); starttime is field 22.
    Some(ProcStat {
        pid,
        state: *fields.first()?.as_bytes().first()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        starttime: fields.get(19)?.parse().ok()?,
    })
}

/// The stat line of `pid`, or `None` when it is gone.
pub(crate) fn read_stat(pid: i32) -> Option<ProcStat> {
    let content = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &content)
}

/// Every process visible in `/proc` (processes that vanish during the scan are skipped).
pub(crate) fn scan() -> Vec<ProcStat> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

/// Which environment entry marks a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TagMatch {
    /// Exactly this `NAME=VALUE` entry.
    Entry(Vec<u8>),
    /// Any entry starting with this `NAME=`.
    Name(Vec<u8>),
}

impl TagMatch {
    fn matches(&self, entry: &[u8]) -> bool {
        match self {
            TagMatch::Entry(wanted) => entry == wanted.as_slice(),
            TagMatch::Name(prefix) => entry.starts_with(prefix),
        }
    }
}

/// Whether `pid` was started with an environment holding `tag`. A process of another user, or
/// one that is gone, does not match.
pub(crate) fn environ_has(pid: i32, tag: &TagMatch) -> bool {
    fs::read(format!("/proc/{pid}/environ"))
        .map(|environ| environ.split(|&b| b == 0).any(|entry| tag.matches(entry)))
        .unwrap_or(false)
}

/// When this process started, in clock ticks after boot.
pub(crate) fn self_starttime() -> u64 {
    read_stat(std::process::id() as i32).map_or(0, |stat| stat.starttime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parentheses() {
        let line =
            "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3";
        let stat = parse_stat(4242, line).unwrap();
        assert_eq!(
            stat,
            ProcStat {
                pid: 4242,
                ppid: 1,
                pgrp: 4242,
                session: 4242,
                state: b'S',
                starttime: 987654,
            }
        );
        assert!(stat.is_alive());
        assert!(parse_stat(1, "1 (x) Z 0").is_none());
        assert!(
            !parse_stat(5, &line.replace(" S ", " Z "))
                .unwrap()
                .is_alive()
        );
    }

    #[test]
    fn sees_itself_and_its_environment() {
        let me = std::process::id() as i32;
        let stat = read_stat(me).unwrap();
        assert!(stat.is_alive());
        assert_eq!(stat.starttime, self_starttime());
        assert!(scan().iter().any(|p| p.pid == me));
        let path = std::env::var("PATH").unwrap_or_default();
        assert!(environ_has(me, &TagMatch::Name(b"PATH=".to_vec())));
        let entry = format!("PATH={path}").into_bytes();
        assert!(environ_has(me, &TagMatch::Entry(entry)));
        assert!(!environ_has(
            me,
            &TagMatch::Name(b"LATHE_NO_SUCH_VARIABLE_X=".to_vec())
        ));
    }
}
