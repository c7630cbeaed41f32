//! Archives, compression and copies between machines.

use super::files::writes_all;
use super::{Cmd, Verdict};
use crate::severity::Severity;
use crate::word::Word;

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let v = match p {
        "tar" | "bsdtar" | "gtar" => tar(cmd),
        "unzip" => {
            if cmd.flag('l', &[])
                || cmd.flag('t', &[])
                || cmd.flag('v', &[])
                || cmd.flag('Z', &[])
                || cmd.flag('p', &[])
                || cmd.flag('c', &[])
            {
                Verdict::safe("unzip -l/-t/-p only lists, tests or prints")
            } else {
                let mut v = Verdict::normal("unzip extracts files");
                let dirs = cmd.option_values(&["-d"], &[]);
                v.writes = if dirs.is_empty() {
                    vec![Word::literal(".")]
                } else {
                    dirs
                };
                v
            }
        }
        "zip" => {
            let mut v = Verdict::normal("zip writes an archive");
            if cmd.has(&["-TT", "--unzip-command"]) {
                v.raise(Severity::Dangerous, "zip -TT runs a program");
            }
            if let Some(archive) = cmd
                .operands(&[
                    "-TT",
                    "-b",
                    "-n",
                    "-t",
                    "-tt",
                    "-x",
                    "-i",
                    "-P",
                    "--password",
                ])
                .first()
            {
                v.write(archive);
            }
            v
        }
        "gzip" | "gunzip" | "bzip2" | "bunzip2" | "xz" | "unxz" | "zstd" | "unzstd" | "lz4"
        | "unlz4" | "compress" | "uncompress" | "pigz" | "lzma" | "unlzma" | "brotli" => {
            if cmd.flag('c', &["--stdout", "--to-stdout"])
                || cmd.flag('l', &["--list"])
                || cmd.flag('t', &["--test"])
            {
                Verdict::safe(format!("{p} -c/-l/-t only prints or tests"))
            } else {
                writes_all(
                    cmd,
                    Verdict::normal(format!("{p} replaces files with (de)compressed ones"))
                        .destroys(),
                    &["-S", "--suffix", "-o", "-T", "--threads", "-b"],
                )
            }
        }
        "7z" | "7za" | "7zz" => match cmd.first_operand().map(|(_, v)| v) {
            Some("l" | "t") => Verdict::safe("7z l/t only lists or tests"),
            _ => Verdict::normal("7z writes archives or extracted files"),
        },
        "rsync" => rsync(cmd),
        "scp" | "sftp" => {
            let mut v = Verdict::dangerous(format!("{p} copies files over the network"));
            v.downloads = true;
            if let Some(dest) = cmd
                .operands(&["-P", "-i", "-o", "-F", "-c", "-l", "-S", "-J"])
                .last()
                && !is_remote(dest)
            {
                v.write(dest);
            }
            v
        }
        _ => return None,
    };
    Some(v)
}

fn is_remote(w: &Word) -> bool {
    let v = w.known().unwrap_or(&w.display);
    match v.find(':') {
        Some(i) => !v[..i].contains('/') && i > 0,
        None => false,
    }
}

fn tar(cmd: &Cmd<'_>) -> Verdict {
    let mut letters = String::new();
    for (i, value) in cmd.values().enumerate() {
        if i == 0 && !value.starts_with('-') {
            letters.push_str(value);
        } else if value.starts_with('-') && !value.starts_with("--") {
            letters.push_str(&value[1..]);
        }
    }
    let long = |names: &[&str]| cmd.has(names);
    let mut v = if letters.contains('t') || long(&["--list"]) {
        Verdict::safe("tar -t only lists an archive")
    } else if letters.contains('x') || long(&["--extract", "--get"]) {
        let mut v = Verdict::normal("tar -x extracts files");
        let dirs = cmd.option_values(&["-C"], &["--directory"]);
        v.writes = if dirs.is_empty() {
            vec![Word::literal(".")]
        } else {
            dirs
        };
        if letters.contains('P') || long(&["--absolute-names"]) {
            v.raise(
                Severity::Dangerous,
                "tar -P extracts absolute paths, which can land anywhere",
            );
        }
        v
    } else {
        let mut v = Verdict::normal("tar writes an archive");
        let files = cmd.option_values(&["-f"], &["--file"]);
        if files.is_empty()
            && cmd
                .arg(0)
                .is_some_and(|a| !a.starts_with('-') && a.contains('f'))
            && let Some(f) = cmd.args.get(1)
        {
            v.write(f);
        }
        for f in files.iter().filter(|f| f.known() != Some("-")) {
            v.write(f);
        }
        v
    };
    #[rustfmt::skip]
    let runs = [
        "--to-command", "--use-compress-program", "--checkpoint-action", "--info-script",
        "--new-volume-script", "--rsh-command", "-I", "-F",
    ];
    if cmd.has(&runs) {
        v.raise(
            Severity::Dangerous,
            "tar runs another program (--to-command, -I, --checkpoint-action)",
        );
    }
    v
}

fn rsync(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::normal("rsync copies files");
    #[rustfmt::skip]
    let valued = [
        "-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from",
        "--include-from", "--files-from", "--chmod", "--chown", "--rsync-path", "--port",
        "--password-file", "-T", "--temp-dir", "--backup-dir", "--suffix", "--log-file",
    ];
    let ops = cmd.operands(&valued);
    // the remote shell and the remote rsync are programs rsync runs (also for local copies)
    for program in cmd.option_values(&["-e"], &["--rsh", "--rsync-path"]) {
        v.raise(
            Severity::Dangerous,
            format!("rsync runs `{}` to make the connection", program.display),
        );
        if let Some(text) = program.known() {
            v.inner.push(super::Inner::Script(text.to_string()));
        }
    }
    if cmd
        .values()
        .any(|x| x.starts_with("--delete") || x == "--remove-source-files")
    {
        v.raise(
            Severity::Dangerous,
            "rsync --delete deletes files at the destination",
        );
        v.destructive = true;
    }
    if ops.iter().any(|w| is_remote(w)) {
        v.raise(
            Severity::Dangerous,
            "rsync copies files to or from another machine",
        );
        v.downloads = true;
    }
    if let Some(dest) = ops.last().filter(|d| ops.len() >= 2 && !is_remote(d)) {
        v.write(dest);
    }
    v
}
