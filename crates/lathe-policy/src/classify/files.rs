//! Programs that change files: delete, move, copy, permissions, disks, archives.

use super::{Cmd, Verdict};
use crate::paths::{Location, locate, protected, resolve};
use crate::severity::Severity;
use crate::word::Word;

pub(super) fn classify(cmd: &Cmd<'_>) -> Option<Verdict> {
    let p = cmd.program;
    let v = match p {
        "rm" => rm(cmd),
        "rmdir" => writes_all(
            cmd,
            Verdict::normal("rmdir removes empty directories"),
            &["--ignore-fail-on-non-empty"],
        ),
        "unlink" => writes_all(
            cmd,
            Verdict::normal("unlink deletes a file").destroys(),
            &[],
        ),
        "shred" | "wipe" | "srm" => writes_all(
            cmd,
            Verdict::dangerous(format!("{p} overwrites files so they cannot be recovered"))
                .destroys(),
            &["-n", "-s", "--iterations", "--size", "--random-source"],
        ),
        "mv" => copy_like(
            cmd,
            Verdict::normal("mv moves or renames files").destroys(),
            true,
        ),
        "cp" | "install" => {
            let mut v = if p == "install" && cmd.flag('d', &["--directory"]) {
                writes_all(
                    cmd,
                    Verdict::normal("install -d creates directories"),
                    &["-m", "-o", "-g", "--mode", "--owner", "--group"],
                )
            } else {
                copy_like(cmd, Verdict::normal(format!("{p} copies files")), false)
            };
            for mode in cmd.cluster_values('m', &["--mode"]) {
                if p == "install" && mode.known().is_none_or(sets_setid) {
                    v.raise(
                        Severity::Dangerous,
                        format!(
                            "install -m {} sets the setuid/setgid bit: a program that runs with its owner's rights, in one step",
                            mode.display
                        ),
                    );
                }
            }
            v
        }
        "ln" => copy_like(cmd, Verdict::normal("ln creates links"), false),
        "touch" => writes_all(
            cmd,
            Verdict::normal("touch creates or updates files"),
            &["-r", "-d", "-t", "--reference", "--date"],
        ),
        "mkdir" => writes_all(
            cmd,
            Verdict::normal("mkdir creates directories"),
            &["-m", "--mode", "--context"],
        ),
        "mkfifo" => writes_all(
            cmd,
            Verdict::normal("mkfifo creates pipes"),
            &["-m", "--mode"],
        ),
        "truncate" => writes_all(
            cmd,
            Verdict::normal("truncate cuts files to a size").destroys(),
            &["-s", "-r", "--size", "--reference", "-o"],
        ),
        "mknod" => Verdict::dangerous("mknod creates device files"),
        "chmod" | "chown" | "chgrp" | "setfacl" => permissions(cmd),
        "chattr" => Verdict::dangerous("chattr changes file attributes such as immutability"),
        "dd" => dd(cmd),
        "tee" => {
            let files = cmd.operands(&[]);
            if files.is_empty() {
                Verdict::safe("tee without files only passes data through")
            } else {
                writes_all(cmd, Verdict::normal("tee writes its input to files"), &[])
            }
        }
        "patch" => {
            if cmd.has(&["--dry-run", "-C", "--check"]) {
                Verdict::safe("patch --dry-run only tests")
            } else {
                let mut v = Verdict::normal("patch changes files");
                v.writes = cmd.option_values(&["-o"], &["--output"]);
                v
            }
        }
        "split" | "csplit" => Verdict::normal(format!("{p} writes pieces of a file")),
        "dos2unix" | "unix2dos" => writes_all(
            cmd,
            Verdict::normal(format!("{p} converts files in place")),
            &[],
        ),
        _ if is_disk_tool(p) => {
            Verdict::critical(format!("{p} formats, partitions or wipes disks")).destroys()
        }
        _ => return super::archives::classify(cmd),
    };
    Some(v)
}

fn is_disk_tool(p: &str) -> bool {
    p.starts_with("mkfs")
        || p.starts_with("mke2fs")
        || matches!(
            p,
            "mkswap"
                | "mkdosfs"
                | "mkntfs"
                | "fdisk"
                | "sfdisk"
                | "cfdisk"
                | "gdisk"
                | "sgdisk"
                | "parted"
                | "wipefs"
                | "blkdiscard"
                | "cryptsetup"
                | "badblocks"
                | "e2fsck"
                | "fsck"
                | "resize2fs"
                | "lvremove"
                | "vgremove"
                | "pvremove"
                | "mdadm"
                | "zpool"
                | "hdparm"
                | "nvme"
                | "diskutil"
                | "format"
                | "dmsetup"
                | "losetup"
                | "tune2fs"
                | "debugfs"
                | "partprobe"
                | "sfill"
                | "zerofree"
        )
}

pub(super) fn writes_all(cmd: &Cmd<'_>, mut v: Verdict, valued: &[&str]) -> Verdict {
    for w in cmd.operands(valued) {
        v.write(w);
    }
    v
}

fn rm(cmd: &Cmd<'_>) -> Verdict {
    let recursive = cmd.flag('r', &["--recursive"]) || cmd.flag('R', &[]);
    let mut v = Verdict::normal("rm deletes files").destroys();
    if recursive {
        v.raise(Severity::Dangerous, "rm -r deletes whole directory trees");
    }
    if cmd.has(&["--no-preserve-root"]) {
        v.raise(Severity::Critical, "--no-preserve-root lets rm delete /");
    }
    for t in cmd.operands(&[]) {
        v.write(t);
        let Some(value) = t.known() else {
            let worst = resolve(&t.worst, cmd.cwd, cmd.ctx);
            match worst
                .as_deref()
                .and_then(|p| protected(p, cmd.ctx).map(|w| (p.to_string(), w)))
            {
                Some((p, what)) if recursive && t.worst.starts_with('/') => v.raise(
                    Severity::Critical,
                    format!(
                        "`rm -r {}` deletes {what} (`{p}`) if its variables are empty",
                        t.display
                    ),
                ),
                _ => v.raise(
                    Severity::Dangerous,
                    format!("deletes `{}`, a path not known until run time", t.display),
                ),
            }
            continue;
        };
        let Some(abs) = resolve(value, cmd.cwd, cmd.ctx) else {
            v.raise(
                Severity::Dangerous,
                format!(
                    "deletes `{}` in a directory not known until run time",
                    t.display
                ),
            );
            continue;
        };
        if !recursive {
            continue;
        }
        if let Some(what) = protected(&abs, cmd.ctx) {
            v.raise(
                Severity::Critical,
                format!("rm -r deletes {what} (`{}`)", t.display),
            );
        }
        match locate(&abs, cmd.ctx) {
            Location::Outside | Location::Device => v.raise(
                Severity::Critical,
                format!("rm -r deletes `{}` outside the workspace", t.display),
            ),
            Location::Unknown => v.raise(
                Severity::Dangerous,
                format!("deletes `{}`, a path not known until run time", t.display),
            ),
            _ => {}
        }
    }
    v
}

/// `cp`/`mv`/`ln`/`install`: the destination is written; for `mv` the sources too.
fn copy_like(cmd: &Cmd<'_>, mut v: Verdict, moves: bool) -> Verdict {
    #[rustfmt::skip]
    let valued = [
        "-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g",
        "--group", "-Z", "--context",
    ];
    let targets = cmd.option_values(&["-t"], &["--target-directory"]);
    let ops = cmd.operands(&valued);
    let (sources, dest): (Vec<&Word>, Option<Word>) = match targets.first() {
        Some(t) => (ops.clone(), Some(t.clone())),
        None if ops.len() >= 2 => (
            ops[..ops.len() - 1].to_vec(),
            ops.last().map(|w| (*w).clone()),
        ),
        None if cmd.program == "ln" => (ops.clone(), Some(Word::literal("."))),
        None => (ops.clone(), None),
    };
    if let Some(d) = dest {
        v.write(&d);
    }
    if moves {
        for s in sources {
            v.write(s);
            if let Some(abs) = s.known().and_then(|x| resolve(x, cmd.cwd, cmd.ctx))
                && let Some(what) = protected(&abs, cmd.ctx)
            {
                v.raise(
                    Severity::Critical,
                    format!("mv moves {what} (`{}`) away", s.display),
                );
            }
        }
    }
    v
}

fn permissions(cmd: &Cmd<'_>) -> Verdict {
    let p = cmd.program;
    let recursive = cmd.flag('R', &["--recursive"]);
    let mode_as_option = p == "chmod"
        && cmd.values().any(|v| {
            v.len() > 1 && v.starts_with('-') && v[1..].chars().all(|c| "rwxXst".contains(c))
        });
    #[rustfmt::skip]
    let valued = [
        "--reference", "-m", "-M", "-x", "-X", "--modify", "--remove", "--set", "--set-file",
        "--from",
    ];
    let ops = cmd.operands(&valued);
    let skip = usize::from(!(mode_as_option || cmd.has(&["--reference"]) || p == "setfacl"));
    let mode = if skip == 1 {
        ops.first().map(|w| w.display.clone()).unwrap_or_default()
    } else {
        String::new()
    };
    let mut v = Verdict::normal(format!("{p} changes file permissions or owners"));
    if recursive {
        v.raise(
            Severity::Dangerous,
            format!("{p} -R changes whole directory trees"),
        );
    }
    if p == "chmod" && skip == 1 && sets_setid(&mode)
        || mode_as_option
            && cmd
                .values()
                .any(|v| v.starts_with('-') && !v.starts_with("--") && v.contains('s'))
    {
        v.raise(
            Severity::Dangerous,
            format!("chmod {mode} sets the setuid/setgid bit: a program that runs with its owner's rights"),
        );
    }
    for t in ops.iter().skip(skip) {
        v.write(t);
        let Some(abs) = t.known().and_then(|x| resolve(x, cmd.cwd, cmd.ctx)) else {
            v.raise(
                Severity::Dangerous,
                format!(
                    "{p} changes `{}`, a path not known until run time",
                    t.display
                ),
            );
            continue;
        };
        let outside = matches!(locate(&abs, cmd.ctx), Location::Outside | Location::Device);
        if let Some(what) = protected(&abs, cmd.ctx) {
            let sev = if recursive || abs == "/" {
                Severity::Critical
            } else {
                Severity::Dangerous
            };
            v.raise(sev, format!("{p} changes {what} (`{}`)", t.display));
        } else if recursive && outside {
            v.raise(
                Severity::Critical,
                format!("{p} -R changes `{}` outside the workspace", t.display),
            );
        }
    }
    v
}

/// Whether a mode (`4755`, `02775`, `u+s`, `a=rwxs`, `g+s,o-w`) sets setuid or setgid.
/// A mode not understood counts as setting them.
pub(super) fn sets_setid(mode: &str) -> bool {
    if !mode.is_empty() && mode.chars().all(|c| c.is_ascii_digit()) {
        return u32::from_str_radix(mode, 8).map_or(true, |m| m & 0o6000 != 0);
    }
    mode.split(',').any(|clause| {
        clause
            .find(['+', '='])
            .is_some_and(|at| clause[at..].contains('s'))
    })
}

fn dd(cmd: &Cmd<'_>) -> Verdict {
    let mut v = Verdict::normal("dd copies raw data");
    for w in cmd.args {
        let Some(value) = w.known() else { continue };
        if let Some(out) = value.strip_prefix("of=") {
            let mut target = Word::literal(out);
            target.display = out.to_string();
            v.write(&target);
            v.destructive = true;
        } else if let Some(input) = value.strip_prefix("if=") {
            v.reads.push(Word::literal(input));
            let abs = resolve(input, cmd.cwd, cmd.ctx).unwrap_or_default();
            if locate(&abs, cmd.ctx) == Location::Device
                && !matches!(abs.as_str(), "/dev/urandom" | "/dev/random")
            {
                v.raise(
                    Severity::Dangerous,
                    format!("dd reads the raw device `{input}`"),
                );
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use crate::classify::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn deleting() {
        expect(&[
            ("rm target/debug/foo", Normal),
            ("rm -rf target", Dangerous),
            ("rm -rf /", Critical),
            ("rm -fr /*", Critical),
            ("rm -r -f ~", Critical),
            ("rm -rf ~/", Critical),
            ("rm -rf $HOME", Critical),
            ("rm -rf \"${HOME}\"", Critical),
            ("rm -rf ..", Critical),
            ("rm -rf ../other", Critical),
            ("rm -rf .", Critical),
            ("rm -rf /tmp/build", Dangerous),
            ("rm -rf \"$DIR\"/", Critical),
            ("rm -rf \"$DIR\"", Dangerous),
            ("rm ../notes.txt", Dangerous),
            ("rm /etc/passwd", Critical),
            ("rm --recursive --force /", Critical),
            ("cd / && rm -rf *", Critical),
            ("cd src && rm -rf ../..", Critical),
            ("rm -rf --no-preserve-root /", Critical),
            ("shred -u secrets.txt", Dangerous),
        ]);
    }

    #[test]
    fn moving_copying_permissions() {
        expect(&[
            ("mv a.txt b.txt", Normal),
            ("mv a.txt /tmp/", Normal),
            ("mv ~ /dev/null", Critical),
            ("mv src ../elsewhere", Dangerous),
            ("cp -r src /tmp/backup", Normal),
            ("cp .env /tmp/x", Normal),
            ("cp ~/.ssh/id_rsa .", Critical),
            ("cp x /etc/hosts", Critical),
            ("cp /dev/zero /dev/sda", Critical),
            ("mkdir -p build/out", Normal),
            ("touch ~/.bashrc", Dangerous),
            ("chmod +x script.sh", Normal),
            ("chmod -R 755 src", Dangerous),
            ("chmod -R 777 /", Critical),
            ("chmod 777 /etc", Critical),
            ("chown -R me /home", Critical),
            ("chmod u+s ./bin", Dangerous),
            ("chmod 4755 ./sh", Dangerous),
            ("chmod 2755 ./sh", Dangerous),
            ("chmod 6711 ./sh", Dangerous),
            ("chmod 04755 ./sh", Dangerous),
            ("chmod 3775 dir", Dangerous),
            ("chmod g+rws dir", Dangerous),
            ("chmod 0755 script.sh", Normal),
            ("chmod 1777 tmpdir", Normal),
            ("chmod u=rwx,g=rx,o= script.sh", Normal),
            ("install -m 4755 /bin/sh ./sh", Dangerous),
            ("install -m u+s,a+rx /bin/bash ./b", Dangerous),
            ("install --mode=6755 x ./y", Dangerous),
            ("install -m 755 target/release/app ./bin/app", Normal),
            ("install -Dm644 README.md build/doc/README.md", Normal),
            ("install -Dm4755 /bin/sh build/sh", Dangerous),
            ("dd if=/dev/zero of=/dev/sda bs=1M", Critical),
            ("dd if=/dev/urandom of=test.bin bs=1k count=1", Normal),
            ("mkfs.ext4 /dev/sdb1", Critical),
            ("echo hi | tee out.txt", Normal),
            ("echo hi | tee -a ~/.bashrc", Dangerous),
            ("tar -tzf a.tgz", Safe),
            ("tar xzf a.tgz", Normal),
            ("tar -xf a.tar -C /", Dangerous),
            ("tar czf out.tgz src", Normal),
            ("tar -xf a.tar --to-command='sh'", Dangerous),
            ("unzip -l a.zip", Safe),
            ("rsync -a --delete src/ backup/", Dangerous),
            ("rsync -a src host:dst", Dangerous),
            ("scp file host:/tmp", Dangerous),
        ]);
    }
}
