//! Classifies one program invocation into a severity with reasons.
//!
//! Families live in their own files: read-only tools, git, file changes, system and network,
//! interpreters and shells, package managers. A program no family knows is `normal`: it runs
//! something, presumably inside the workspace, and is never assumed to be read-only.

mod archives;
mod daemons;
mod exec;
mod files;
mod git;
mod git_sub;
mod interp;
mod multiplexers;
mod packages;
mod readonly;
mod remote;
mod runners;
mod sed_awk;
mod selects;
mod system;

use crate::context::AnalysisContext;
use crate::severity::{Assessment, Severity};
use crate::walk::Stdin;
use crate::word::Word;

/// One program invocation, wrappers removed.
pub(crate) struct Cmd<'a> {
    /// The program as written (after quote removal).
    pub name: &'a str,
    /// Its lowercase basename, which is what is classified.
    pub program: &'a str,
    /// The arguments.
    pub args: &'a [Word],
    /// The current directory, if known.
    pub cwd: Option<&'a str>,
    pub ctx: &'a AnalysisContext,
    pub stdin: &'a Stdin,
}

/// Something a command runs in turn.
pub(crate) enum Inner {
    /// A script text (`bash -c '...'`, `eval ...`, a here-document fed to a shell).
    Script(String),
    /// A command line (`find -exec rm {} ;`), with the name of the per-item runner.
    Argv {
        argv: Vec<Word>,
        per_item: Option<String>,
    },
}

/// The classification of one invocation.
#[derive(Default)]
pub(crate) struct Verdict {
    pub a: Assessment,
    /// Paths it writes, creates or deletes.
    pub writes: Vec<Word>,
    /// Paths it reads that do not appear as plain arguments (`if=...`).
    pub reads: Vec<Word>,
    /// Deletes or overwrites data.
    pub destructive: bool,
    /// Downloads from the network.
    pub downloads: bool,
    /// Names paths without reading their contents (`ls`, `stat`): credentials named are fine.
    pub metadata_only: bool,
    /// Paths it prints without reading them (the matches of `find -name .env`), which a
    /// later `| xargs cmd` receives.
    pub names: Vec<Word>,
    /// Only runs `inner` (`bash -c`, `eval`): not listed as a command of its own.
    pub transparent: bool,
    pub inner: Vec<Inner>,
}

impl Verdict {
    pub fn new(severity: Severity, reason: impl Into<String>) -> Self {
        let mut v = Verdict::default();
        v.a.raise(severity, reason);
        v
    }

    pub fn safe(reason: impl Into<String>) -> Self {
        Verdict::new(Severity::Safe, reason)
    }

    pub fn normal(reason: impl Into<String>) -> Self {
        Verdict::new(Severity::Normal, reason)
    }

    pub fn dangerous(reason: impl Into<String>) -> Self {
        Verdict::new(Severity::Dangerous, reason)
    }

    pub fn critical(reason: impl Into<String>) -> Self {
        Verdict::new(Severity::Critical, reason)
    }

    pub fn raise(&mut self, severity: Severity, reason: impl Into<String>) {
        self.a.raise(severity, reason);
    }

    pub fn severity(&self) -> Severity {
        self.a.severity
    }

    pub fn write(&mut self, word: &Word) {
        self.writes.push(word.clone());
    }

    pub fn destroys(mut self) -> Self {
        self.destructive = true;
        self
    }
}

impl Cmd<'_> {
    /// The known values of the arguments (unknown ones as written).
    pub fn values(&self) -> impl Iterator<Item = &str> {
        self.args
            .iter()
            .map(|w| w.known().unwrap_or(w.display.as_str()))
    }

    /// The argument at `i`, if its value is known.
    pub fn arg(&self, i: usize) -> Option<&str> {
        self.args.get(i).and_then(Word::known)
    }

    /// The first argument that is not an option (a subcommand, usually).
    pub fn first_operand(&self) -> Option<(usize, &str)> {
        self.args
            .iter()
            .enumerate()
            .find_map(|(i, w)| match w.known() {
                Some(v) if !v.starts_with('-') => Some((i, v)),
                _ => None,
            })
    }

    /// Whether any argument is exactly one of `flags`, or starts with `flag=` for a long one.
    pub fn has(&self, flags: &[&str]) -> bool {
        self.values().any(|v| {
            flags.iter().any(|f| {
                v == *f
                    || (f.starts_with("--") && v.starts_with(f) && v[f.len()..].starts_with('='))
            })
        })
    }

    /// Whether the short flag letter appears in a short option cluster (`-rf` has `r`), or a
    /// long spelling is present. Clusters are taken before the first `--`.
    pub fn flag(&self, short: char, long: &[&str]) -> bool {
        for v in self.values() {
            if v == "--" {
                break;
            }
            if v.starts_with("--") {
                if long
                    .iter()
                    .any(|l| v == *l || (v.starts_with(l) && v[l.len()..].starts_with('=')))
                {
                    return true;
                }
            } else if v.starts_with('-') && v.len() > 1 && v[1..].contains(short) {
                return true;
            }
        }
        false
    }

    /// The values of a short option also inside a cluster (`-qc CMD`, `-qcCMD`, `install
    /// -Dm4755`) and of its long spellings (`--command CMD`, `--command=CMD`).
    pub fn cluster_values(&self, short: char, long: &[&str]) -> Vec<Word> {
        let mut out = self.option_values(&[], long);
        for (i, w) in self.args.iter().enumerate() {
            let Some(v) = w.known() else { continue };
            if v == "--" {
                break;
            }
            if v.starts_with("--") || !v.starts_with('-') {
                continue;
            }
            if let Some(at) = v.find(short) {
                let rest = &v[at + short.len_utf8()..];
                match (rest.is_empty(), self.args.get(i + 1)) {
                    (false, _) => out.push(Word::literal(rest)),
                    (true, Some(next)) => out.push(next.clone()),
                    (true, None) => {}
                }
            }
        }
        out
    }

    /// The value of an option given as `-o VALUE`, `-oVALUE`, `--out VALUE` or `--out=VALUE`.
    pub fn option_values(&self, short: &[&str], long: &[&str]) -> Vec<Word> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.args.len() {
            let Some(v) = self.arg(i) else {
                i += 1;
                continue;
            };
            if v == "--" {
                break;
            }
            if short.contains(&v) || long.contains(&v) {
                if let Some(next) = self.args.get(i + 1) {
                    out.push(next.clone());
                }
                i += 2;
                continue;
            }
            if let Some(l) = long
                .iter()
                .find(|l| v.starts_with(**l) && v[l.len()..].starts_with('='))
            {
                out.push(Word::literal(&v[l.len() + 1..]));
            } else if let Some(s) = short
                .iter()
                .find(|s| v.starts_with(**s) && v.len() > s.len() && !v.starts_with("--"))
            {
                out.push(Word::literal(&v[s.len()..]));
            }
            i += 1;
        }
        out
    }

    /// Arguments that are not options, after skipping the values of `valued` options.
    pub fn operands(&self, valued: &[&str]) -> Vec<&Word> {
        let mut out = Vec::new();
        let mut i = 0;
        let mut only_operands = false;
        while let Some(w) = self.args.get(i) {
            i += 1;
            match w.known() {
                Some("--") if !only_operands => only_operands = true,
                Some(v) if !only_operands && v.starts_with('-') && v.len() > 1 => {
                    if valued.contains(&v) {
                        i += 1;
                    }
                }
                _ => out.push(w),
            }
        }
        out
    }
}

/// Whether the program runs code it is given (a shell or an interpreter).
pub(crate) fn runs_code(program: &str) -> bool {
    exec::runs_code(program)
}

/// Classifies an invocation.
pub(crate) fn classify(cmd: &Cmd<'_>) -> Verdict {
    let families: [fn(&Cmd<'_>) -> Option<Verdict>; 9] = [
        readonly::classify,
        sed_awk::classify,
        git::classify,
        files::classify,
        runners::classify,
        daemons::classify,
        exec::classify,
        packages::classify,
        system::classify,
    ];
    for family in families {
        if let Some(v) = family(cmd) {
            if matches!(cmd.args, [only] if matches!(only.known(), Some("--version" | "--help"))) {
                return Verdict::safe(format!("{} only prints its version or help", cmd.program));
            }
            return v;
        }
    }
    let mut v = Verdict::normal(format!(
        "runs `{}`, which Lathe does not know; assumed to change files only inside the workspace",
        cmd.name
    ));
    v.writes = output_options(cmd);
    v
}

/// The values of the usual output options (`-o FILE`, `--output=FILE`): for programs whose
/// options are not known otherwise, these are taken as files written.
pub(crate) fn output_options(cmd: &Cmd<'_>) -> Vec<Word> {
    cmd.option_values(
        &["-o"],
        &[
            "--output",
            "--out",
            "--outfile",
            "--output-file",
            "--out-file",
            "--out-dir",
            "--outdir",
            "--output-dir",
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::test_support::expect;
    use crate::severity::Severity::*;

    #[test]
    fn fallbacks() {
        expect(&[
            ("curl --version", Safe),
            ("sudo --version", Safe),
            ("./tool --version", Normal),
            ("frobnicate --all", Normal),
            ("frobnicate -o /usr/local/bin/x", Critical),
            ("pandoc -o ~/x.pdf in.md", Dangerous),
            ("gcc -o build/app main.c", Normal),
            ("gcc -o /usr/bin/app main.c", Critical),
            ("vim ~/.ssh/id_rsa", Critical),
            ("./tools/ls", Normal),
            ("/usr/bin/ls -la", Safe),
            ("pip config set global.index-url http://x", Dangerous),
        ]);
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::analysis::CommandAnalysis;
    use crate::context::AnalysisContext;
    use crate::severity::Severity;

    pub fn ctx() -> AnalysisContext {
        AnalysisContext::new("/home/u/proj", "/home/u")
    }

    pub fn run(command: &str) -> CommandAnalysis {
        crate::analyze(command, &ctx())
    }

    /// Asserts each command has the expected severity, listing every mismatch.
    pub fn expect(cases: &[(&str, Severity)]) {
        let wrong: Vec<String> = cases
            .iter()
            .filter_map(|(c, s)| {
                let got = run(c);
                (got.severity != *s).then(|| {
                    format!(
                        "{c:?}: expected {s}, got {} {:?}",
                        got.severity, got.reasons
                    )
                })
            })
            .collect();
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }
}
