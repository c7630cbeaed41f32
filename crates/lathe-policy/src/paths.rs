//! Lexical path judgments: inside the workspace or not, devices, system areas, credentials.
//!
//! Nothing here touches the filesystem. Symlinks can defeat a lexical judgment; the Landlock
//! sandbox is the fence for that case.

use serde::{Deserialize, Serialize};

use crate::context::AnalysisContext;

/// Where a path points, judged from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Location {
    /// Inside the workspace (the root included).
    Workspace,
    /// A temporary or configured writable directory (`/tmp`, `/var/tmp`, ...).
    Temp,
    /// `/dev/null`, the standard streams, the terminal, `/dev/fd/N`: harmless to write.
    Null,
    /// Any other device file (`/dev/sda`, `/dev/mem`, ...).
    Device,
    /// Anywhere else on the machine.
    Outside,
    /// Not known until the command runs (a variable, a substitution, an unknown directory).
    Unknown,
}

/// Collapses `//`, `.` and `..` without looking at the filesystem. `..` at the root stays at
/// the root, as the kernel does.
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Whether `path` is `root` or below it (both normalised).
pub(crate) fn is_within(path: &str, root: &str) -> bool {
    if root == "/" {
        return path.starts_with('/');
    }
    path == root || (path.starts_with(root) && path.as_bytes().get(root.len()) == Some(&b'/'))
}

/// The parent directory of a normalised absolute path (`/` for `/`).
pub(crate) fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// The last component of a path (the whole text when there is no `/`).
pub(crate) fn basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    match trimmed.rfind('/') {
        Some(i) => &trimmed[i + 1..],
        None => trimmed,
    }
}

/// Makes a literal path absolute: relative paths are joined to `cwd` (None when the current
/// directory is not known), `~user` goes beside the home directory. Tilde and `$HOME` have
/// already been expanded by word resolution.
pub(crate) fn resolve(raw: &str, cwd: Option<&str>, ctx: &AnalysisContext) -> Option<String> {
    if raw.is_empty() {
        return None;
    }
    if raw.starts_with('/') {
        return Some(normalize(raw));
    }
    if let Some(rest) = raw.strip_prefix('~') {
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let homes = parent(ctx.home());
        return Some(normalize(&format!("{homes}/{user}/{tail}")));
    }
    cwd.map(|c| normalize(&format!("{c}/{raw}")))
}

#[rustfmt::skip]
const NULL_FILES: &[&str] = &[
    "/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty",
];

/// Judges where a normalised absolute path points.
pub(crate) fn locate(abs: &str, ctx: &AnalysisContext) -> Location {
    if is_within(abs, ctx.workspace()) {
        return Location::Workspace;
    }
    if NULL_FILES.contains(&abs) || is_within(abs, "/dev/fd") || is_within(abs, "/proc/self/fd") {
        return Location::Null;
    }
    if ctx.writable_roots().iter().any(|r| is_within(abs, r)) {
        return Location::Temp;
    }
    if is_within(abs, "/dev") {
        return Location::Device;
    }
    Location::Outside
}

/// The path relative to the workspace root, when it is inside (`""` for the root itself).
pub(crate) fn workspace_relative(abs: &str, ctx: &AnalysisContext) -> Option<String> {
    let ws = ctx.workspace();
    if abs == ws {
        return Some(String::new());
    }
    if !is_within(abs, ws) {
        return None;
    }
    let start = if ws == "/" { 1 } else { ws.len() + 1 };
    Some(abs[start..].to_string())
}

/// Why deleting or rewriting this directory tree would be a disaster, if it would.
pub(crate) fn protected(abs: &str, ctx: &AnalysisContext) -> Option<String> {
    let trimmed = abs.trim_end_matches(['*', '/']);
    if abs == "/" || trimmed.is_empty() {
        return Some("the root directory".into());
    }
    if abs == ctx.workspace() {
        return Some("the whole workspace".into());
    }
    if abs == ctx.home() || is_within(ctx.home(), abs) {
        return Some("your home directory".into());
    }
    if is_within(ctx.workspace(), abs) {
        return Some("a directory that contains the workspace".into());
    }
    if abs.matches('/').count() == 1 {
        return Some(format!("the top-level directory {abs}"));
    }
    if system_area(abs) && abs.matches('/').count() == 2 {
        return Some(format!("the system directory {abs}"));
    }
    None
}

#[rustfmt::skip]
const SYSTEM_AREAS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/sys",
    "/proc", "/var", "/opt", "/root", "/snap", "/srv", "/nix", "/System", "/Library",
    "/Applications", "/private",
];

/// Whether the path is in a system area (configuration, binaries, kernel interfaces).
pub(crate) fn system_area(abs: &str) -> bool {
    SYSTEM_AREAS.iter().any(|a| is_within(abs, a)) && !is_within(abs, "/var/tmp")
}

/// Home-relative locations of credentials and secrets.
const HOME_CREDENTIALS: &[(&str, &str)] = &[
    (".config/gcloud", "Google Cloud credentials"),
    (".config/gh/hosts.yml", "GitHub CLI tokens"),
    (".config/hub", "GitHub tokens"),
    (".cargo/credentials", "crates.io token"),
    (".cargo/credentials.toml", "crates.io token"),
    (".npmrc", "npm token"),
    (".pypirc", "PyPI token"),
    (".gem/credentials", "RubyGems token"),
    (".terraform.d/credentials.tfrc.json", "Terraform token"),
    (".local/share/keyrings", "the desktop keyring"),
    (".mozilla", "browser profiles (cookies, passwords)"),
    (
        ".config/google-chrome",
        "browser profiles (cookies, passwords)",
    ),
    (".config/chromium", "browser profiles (cookies, passwords)"),
    (
        ".config/BraveSoftware",
        "browser profiles (cookies, passwords)",
    ),
    ("Library/Keychains", "the keychain"),
    (".bash_history", "shell history"),
    (".zsh_history", "shell history"),
    (".python_history", "Python history"),
];

/// What secret this path holds, if it is a known credential location.
pub(crate) fn credential(abs: &str, ctx: &AnalysisContext) -> Option<String> {
    let comps: Vec<&str> = abs.split('/').filter(|c| !c.is_empty()).collect();
    let last = comps.last().copied().unwrap_or("");
    for (i, c) in comps.iter().enumerate() {
        let next = comps.get(i + 1).copied();
        let found = match *c {
            ".ssh" if !last.ends_with(".pub") => Some("SSH keys"),
            ".aws" => Some("AWS credentials"),
            ".gnupg" => Some("GnuPG keys"),
            ".password-store" => Some("the password store"),
            ".azure" => Some("Azure credentials"),
            ".netrc" | "_netrc" => Some("network passwords (.netrc)"),
            ".git-credentials" => Some("git credentials"),
            ".pgpass" => Some("PostgreSQL passwords"),
            ".vault-token" => Some("a Vault token"),
            ".docker" if next == Some("config.json") => Some("Docker registry credentials"),
            ".kube" if next == Some("config") => Some("Kubernetes credentials"),
            _ => None,
        };
        if let Some(what) = found {
            return Some(what.to_string());
        }
    }
    if let Some(rel) = abs
        .strip_prefix(ctx.home())
        .and_then(|r| r.strip_prefix('/'))
    {
        for (prefix, what) in HOME_CREDENTIALS {
            if is_within(rel, prefix) {
                return Some((*what).to_string());
            }
        }
    }
    let system = [
        ("/etc/shadow", "system password hashes"),
        ("/etc/gshadow", "system password hashes"),
        ("/etc/sudoers", "sudo configuration"),
        ("/etc/sudoers.d", "sudo configuration"),
        ("/root", "the root account's files"),
    ];
    for (prefix, what) in system {
        // The root account's files are another account's secrets, not the workspace a root
        // user works in, nor the home of a user who is root (its credentials are listed above).
        let own_root = prefix == "/root"
            && (is_within(abs, ctx.workspace()) || is_within(ctx.home(), "/root"));
        if is_within(abs, prefix) && !own_root {
            return Some(what.to_string());
        }
    }
    if is_within(abs, "/etc/ssh") && last.starts_with("ssh_host_") && !last.ends_with(".pub") {
        return Some("SSH host keys".into());
    }
    proc_secret(&comps)
}

/// `/proc/<pid>/environ`, `/proc/<pid>/task/<tid>/environ`, `/proc/<pid>/mem` and the like:
/// another process's environment or memory, where Lathe's own API keys can be read.
fn proc_secret(comps: &[&str]) -> Option<String> {
    if comps.first() != Some(&"proc") {
        return None;
    }
    match comps.last().copied() {
        Some("environ") if comps.len() >= 3 => {
            Some("a process's environment (tokens, keys)".into())
        }
        Some("mem") if comps.len() >= 3 => Some("a process's memory (tokens, keys)".into()),
        Some("kcore") if comps.len() == 2 => Some("the kernel's memory".into()),
        _ => None,
    }
}

/// For a path whose text is only partly known (`/proc/$PPID/environ`): what secret it names
/// whatever the unknown parts turn out to be, judged from the text as written.
pub(crate) fn credential_text(shown: &str) -> Option<String> {
    if !shown.starts_with("/proc/") {
        return None;
    }
    // the unknown part may hold slashes (`$(pgrep x)/task/1`); only the ends are certain
    let comps: Vec<&str> = shown.split('/').filter(|c| !c.is_empty()).collect();
    let mut ends = vec!["proc", "x"];
    ends.extend(comps.last().copied());
    proc_secret(&ends)
}

/// For a path with glob characters: whether it could match a well-known credential file.
pub(crate) fn credential_glob(pattern_abs: &str, ctx: &AnalysisContext) -> Option<String> {
    use crate::glob::{Flavor, Glob, expand_braces};
    let Some(alternatives) = expand_braces(pattern_abs) else {
        return Some(format!("any of the many names `{pattern_abs}` expands to"));
    };
    let globs: Vec<Glob> = alternatives
        .iter()
        .filter_map(|a| Glob::new(a, Flavor::Shell))
        .collect();
    let home = ctx.home();
    let samples = [
        format!("{home}/.ssh/id_rsa"),
        format!("{home}/.ssh/id_ed25519"),
        format!("{home}/.ssh/id_ecdsa"),
        format!("{home}/.ssh/config"),
        format!("{home}/.gnupg/private-keys-v1.d/x.key"),
        format!("{home}/.npmrc"),
        format!("{home}/.pypirc"),
        format!("{home}/.cargo/credentials.toml"),
        format!("{home}/.config/gcloud/credentials.db"),
        format!("{home}/.password-store/x.gpg"),
        format!("{home}/.aws/credentials"),
        format!("{home}/.netrc"),
        format!("{home}/.git-credentials"),
        format!("{home}/.docker/config.json"),
        format!("{home}/.kube/config"),
        format!("{home}/.config/gh/hosts.yml"),
        format!("{home}/.bash_history"),
        "/etc/shadow".to_string(),
        "/proc/self/environ".to_string(),
        "/proc/1/environ".to_string(),
        "/proc/1/task/1/environ".to_string(),
        "/proc/1/mem".to_string(),
    ];
    samples
        .iter()
        .find(|s| globs.iter().any(|g| g.is_match(s)))
        .and_then(|s| credential(s, ctx))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> AnalysisContext {
        AnalysisContext::new("/home/u/proj", "/home/u")
    }

    #[test]
    fn a_workspace_under_root_is_not_the_root_accounts_secrets() {
        let root_user = AnalysisContext::new("/root/proj", "/root");
        assert_eq!(credential("/root/proj/src/main.rs", &root_user), None);
        assert_eq!(credential("/root/.bashrc", &root_user), None);
        assert!(credential("/root/.ssh/id_rsa", &root_user).is_some());
        let other = AnalysisContext::new("/root/proj", "/home/u");
        assert_eq!(credential("/root/proj/a.txt", &other), None);
        assert!(credential("/root/.bashrc", &other).is_some());
        assert!(credential("/root/.bashrc", &ctx()).is_some());
    }

    #[test]
    fn normalize_is_lexical() {
        assert_eq!(normalize("/a/./b//c/../d"), "/a/b/d");
        assert_eq!(normalize("/../.."), "/");
        assert_eq!(normalize("a/../../b"), "../b");
        assert_eq!(normalize("./"), ".");
    }

    #[test]
    fn locations() {
        let c = ctx();
        let at = |p: &str| locate(&resolve(p, Some(c.cwd()), &c).unwrap_or_default(), &c);
        assert_eq!(at("src/main.rs"), Location::Workspace);
        assert_eq!(at("."), Location::Workspace);
        assert_eq!(at("../other"), Location::Outside);
        assert_eq!(at("/tmp/x"), Location::Temp);
        assert_eq!(at("/dev/null"), Location::Null);
        assert_eq!(at("/dev/sda"), Location::Device);
        assert_eq!(at("/dev/fd/3"), Location::Null);
        assert_eq!(at("~bob/x"), Location::Outside);
        assert_eq!(resolve("x", None, &c), None);
    }

    #[test]
    fn protected_roots() {
        let c = ctx();
        for p in [
            "/",
            "/*",
            "/home/u",
            "/home",
            "/etc",
            "/home/u/proj",
            "/usr/lib",
        ] {
            assert!(protected(p, &c).is_some(), "{p}");
        }
        for p in ["/home/u/proj/src", "/tmp/build", "/home/u/other/x"] {
            assert!(protected(p, &c).is_none(), "{p}");
        }
    }

    #[test]
    fn credentials() {
        let c = ctx();
        assert!(credential("/home/u/.ssh/id_rsa", &c).is_some());
        assert!(credential("/home/u/.ssh/id_rsa.pub", &c).is_none());
        assert!(credential("/home/u/.aws/credentials", &c).is_some());
        assert!(credential("/home/u/.config/gh/hosts.yml", &c).is_some());
        assert!(credential("/etc/shadow", &c).is_some());
        assert!(credential("/proc/self/environ", &c).is_some());
        assert!(credential("/proc/1234/task/1235/environ", &c).is_some());
        assert!(credential("/proc/thread-self/environ", &c).is_some());
        assert!(credential("/proc/self/mem", &c).is_some());
        assert!(credential("/proc/self/status", &c).is_none());
        assert!(credential_text("/proc/$PPID/environ").is_some());
        assert!(credential_text("/proc/$(pgrep lathe)/task/1/environ").is_some());
        assert!(credential_text("/proc/$PPID/status").is_none());
        assert!(credential_text("$DIR/environ").is_none());
        assert!(credential("/home/u/proj/src/main.rs", &c).is_none());
        assert!(credential_glob("/home/u/.s*/id_*", &c).is_some());
        assert!(credential_glob("/home/u/proj/*.rs", &c).is_none());
    }
}
