//! Judging the paths a command reads and writes.

use crate::analysis::{Access, PathRef};
use crate::context::AnalysisContext;
use crate::paths::{
    Location, credential, credential_glob, locate, resolve, system_area, workspace_relative,
};
use crate::severity::{Assessment, Severity};
use crate::word::Word;

/// Resolves a word that names a path.
pub(crate) fn path_ref(
    word: &Word,
    cwd: Option<&str>,
    ctx: &AnalysisContext,
    access: Access,
) -> PathRef {
    let path = word.known().and_then(|v| resolve(v, cwd, ctx));
    let location = path
        .as_deref()
        .map_or(Location::Unknown, |p| locate(p, ctx));
    PathRef {
        text: word.display.clone(),
        relative: path.as_deref().and_then(|p| workspace_relative(p, ctx)),
        path,
        location,
        access,
        glob: word.glob || word.brace,
    }
}

/// What secret a path names, if any (globs are tried against well-known credential files).
pub(crate) fn secret_in(r: &PathRef, word: &Word, ctx: &AnalysisContext) -> Option<String> {
    let Some(abs) = r.path.as_deref() else {
        return crate::paths::credential_text(&word.display);
    };
    credential(abs, ctx).or_else(|| {
        if word.glob || word.brace {
            credential_glob(abs, ctx)
        } else {
            None
        }
    })
}

/// Bash opens a network connection for `/dev/tcp/HOST/PORT` and `/dev/udp/HOST/PORT`.
pub(crate) fn network_device(r: &PathRef) -> Option<String> {
    let abs = r.path.as_deref()?;
    (abs.starts_with("/dev/tcp/") || abs.starts_with("/dev/udp/"))
        .then(|| format!("connects to the network through `{}`", r.text))
}

/// Judges a write to the path a word names.
pub(crate) fn judge_write(
    word: &Word,
    cwd: Option<&str>,
    ctx: &AnalysisContext,
) -> (PathRef, Assessment) {
    let r = path_ref(word, cwd, ctx, Access::Write);
    let mut a = Assessment::default();
    let shown = &r.text;
    if let Some(net) = network_device(&r) {
        a.raise(Severity::Dangerous, net);
        return (r, a);
    }
    match r.location {
        Location::Null => {}
        Location::Workspace => a.raise(
            Severity::Normal,
            format!("writes `{shown}` in the workspace"),
        ),
        Location::Temp => a.raise(
            Severity::Normal,
            format!("writes `{shown}` in a temporary directory"),
        ),
        Location::Device => a.raise(
            Severity::Critical,
            format!(
                "writes to the device `{shown}`, which can destroy a disk or crash the machine"
            ),
        ),
        Location::Outside => {
            let abs = r.path.as_deref().unwrap_or("");
            if let Some(what) = secret_in(&r, word, ctx) {
                a.raise(Severity::Critical, format!("overwrites {what} (`{shown}`)"));
            } else if system_area(abs) {
                a.raise(
                    Severity::Critical,
                    format!("writes `{shown}` in a system location outside the workspace"),
                );
            } else {
                a.raise(
                    Severity::Dangerous,
                    format!("writes `{shown}` outside the workspace"),
                );
            }
        }
        Location::Unknown => {
            let worst = resolve(&word.worst, cwd, ctx).map(|p| (locate(&p, ctx), p));
            match worst {
                Some((Location::Outside | Location::Device, p)) if !word.is_known() => a.raise(
                    Severity::Dangerous,
                    format!("writes `{shown}`, which is `{p}` outside the workspace if its variables are empty"),
                ),
                _ => a.raise(
                    Severity::Normal,
                    format!("writes `{shown}`, a path not known until run time"),
                ),
            }
        }
    }
    (r, a)
}

/// Judges a read of the path a word names: reading credentials is critical.
pub(crate) fn judge_read(
    word: &Word,
    cwd: Option<&str>,
    ctx: &AnalysisContext,
) -> (PathRef, Assessment) {
    let r = path_ref(word, cwd, ctx, Access::Read);
    let mut a = Assessment::default();
    if let Some(net) = network_device(&r) {
        a.raise(Severity::Dangerous, net);
    }
    if let Some(what) = secret_in(&r, word, ctx) {
        a.raise(Severity::Critical, format!("reads {what} (`{}`)", r.text));
    }
    (r, a)
}
